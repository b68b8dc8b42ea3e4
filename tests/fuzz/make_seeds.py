#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Write the fuzz seeds (tests/fuzz/seeds/): well-formed guest sessions in
the op language of fuzz_hostd.c, so the fuzzer starts deep in the bus and
corrupts from there. Re-run after changing the op encoding."""
import os, sys

def lo(addr):            # gpa(): sel&3 in {0,1} -> low block, u16 aligned
    return [0, addr & 0xff, (addr >> 8) & 0xff]

FORMAT, POST, REAP, SIGNAL, HC, RESTART, CTL, PUMP, BLK = 1, 2, 3, 4, 9, 8, 6, 7, 11
neg = [HC, 0, 1]
def fmt(k, cexp, addr): return [FORMAT, k, cexp] + lo(addr)
def post_evq(i): return [POST, 0, 4, i * 3, 0]            # ptr 0x8000+i*192, len 144
def post(k, i, ln): return [POST, k, 0, i, ln]             # ptr 0x8000+i*64, len ln+1
busreg = [HC, 1, 0, 1]                                     # eventq = ring 0
devopen = lambda dev, slot: [HC, 2, dev, slot, 1]
devshm = lambda slot, k, cookie: [HC, 5, slot, k, 0, cookie, 1]
devcall = lambda slot, func, ln: [HC, 4, slot, func, ln, 1]
devclose = lambda slot: [HC, 3, slot, 1]
sig = lambda h: [SIGNAL, 0, h % 64, h // 64]
sig_evq = [SIGNAL, 1]

evq = fmt(0, 3, 0x1000) + sum((post_evq(i) for i in range(8)), [])
base = neg + evq + busreg + devopen(0, 0)
ring = fmt(1, 3, 0x2000) + devshm(0, 1, 7)

# vbus-blk, device 3 (handle slot 2): NEGOTIATE/GETCONFIG through DEVCALL
# at the scratch buffer, requests at 0x6000 + i*256 on ring k
blk_neg = lambda k, feat, slot: [BLK, 0, k, feat, 0, slot, 1]
blk_cfg = lambda slot: [BLK, 1, slot, 1]
def blk_req(k, i, op, flags, sector, nsec, segs):
    r = [BLK, 2, k, i, op, flags, sector, nsec, len(segs)]
    for addr, ln in segs:           # addr in 512s (low RAM), len in 512s
        r += [0, addr, ln - 1]
    return r
blk_wait = [BLK, 3]
blk = (base + devopen(2, 2) + blk_cfg(2) + fmt(1, 4, 0x2000)
       + blk_neg(1, 0x1f, 2) + devshm(2, 1, 7))

seeds = {
    "blk-session": blk + blk_req(1, 0, 1, 0, 4, 0, [(40, 2)])
                   + blk_req(1, 1, 0, 0, 4, 0, [(40, 1), (44, 1)])
                   + blk_req(1, 2, 2, 0, 0, 0, [])
                   + blk_req(1, 3, 3, 0, 8, 8, [])
                   + blk_req(1, 4, 4, 2, 16, 8, [])
                   + blk_req(1, 5, 5, 0, 0, 0, [(46, 1)])
                   + blk_req(1, 6, 0, 0, 200, 0, [(40, 1)])
                   + sig(1) + blk_wait + [REAP, 1] + blk_wait + devclose(2)
                   + [PUMP],
    "blk-inflight-close": blk + sum((blk_req(1, i, i & 1, 1, i * 4, 0,
                                            [(40 + i, 8)]) for i in range(8)), [])
                          + sig(1) + devclose(2) + blk_wait,

    "session": base + ring + post(1, 0, 31) + post(1, 1, 7) + sig(1)
               + [REAP, 1] + devcall(0, 0, 16) + devcall(0, 1, 0)
               + [REAP, 0] + sig_evq + devclose(0) + [PUMP],
    "two-devices": base + devopen(1, 1) + ring + fmt(2, 2, 0x3000)
                   + devshm(1, 2, 9) + post(2, 0, 3) + sig(2) + post(1, 0, 3)
                   + sig(1) + [CTL, 3, CTL, 6] + devcall(1, 0, 200),
    "restart": base + ring + [RESTART] + neg + evq + busreg + devopen(0, 0)
               + ring + post(1, 0, 5) + sig(1),
    "detach": base + ring + [HC, 1 | 8, 0, 0, 1] + post(1, 0, 5) + sig(1)
              + busreg + [REAP, 0] + sig_evq,
    "evq-stuck": neg + fmt(0, 2, 0x1000) + busreg
                 + sum(([CTL, 2 * i + 1, CTL, 2 * i] for i in range(40)), [])
                 + post_evq(0) + post_evq(1) + sig_evq,
}

out = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "seeds")
os.makedirs(out, exist_ok=True)
for name, ops in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes(b & 0xff for b in ops))
print("wrote", len(seeds), "seeds to", out)
