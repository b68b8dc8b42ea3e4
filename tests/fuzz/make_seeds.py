#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Write the fuzz seeds (tests/fuzz/seeds/NAME/, one directory per target):
well-formed guest sessions in the op language of fuzz_guest.h (opcodes 6
and 11 are each target's own, see its file), so the fuzzer starts deep
and corrupts from there. Re-run after changing an encoding."""
import os, sys

def lo(addr):            # gpa(): sel&3 in {0,1} -> low block, u16 aligned
    return [0, addr & 0xff, (addr >> 8) & 0xff]

FORMAT, POST, REAP, SIGNAL, HC, RESTART, CTL, PUMP, BLK = 1, 2, 3, 4, 9, 8, 6, 7, 11
A, B = 6, 11             # each target's own two opcodes
neg = [HC, 0, 1]
def fmt(k, cexp, addr): return [FORMAT, k, cexp] + lo(addr)
def post_evq(i): return [POST, 0, 4, i * 3, 0]            # ptr 0x8000+i*192, len 144
def post(k, i, ln): return [POST, k, 0, i, ln]             # ptr 0x8000+i*64, len ln+1
busreg = [HC, 1, 0, 1]                                     # eventq = ring 0
devopen = lambda dev, slot: [HC, 2, dev, slot, 1]
devshm = lambda slot, k, cookie, qid=0: [HC, 5, slot, k, qid, cookie, 1]
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

hostd = seeds

# blkpoll: the same vbus-blk (id 3) with polling on
blkpoll = {k: v for k, v in seeds.items() if k.startswith("blk")}

# venet (id 1; id 2 strict): rings rx = ring 1 (queue 0), tx = ring 2
# (queue 1); A = data (tx, rx buffer, tap frame, tap side), B = calls
negcap = lambda bits: [B, 3, 0, bits, 1]
linkup = [B, 0, 0, 1]
vrings = fmt(1, 4, 0x2000) + devshm(0, 1, 7, 0) + fmt(2, 4, 0x3000) + devshm(0, 2, 8, 1)
tx_flat = lambda i: [A, 0, 2, i, 20, 4, 0xaa, 0xbb, 0x08, 0x00]
rx_flat = lambda i: [A, 1, 1, i * 24, 23]
tap_frame = lambda n: [A, 2, n, 4, 0x11, 0x22, 0x08, 0x00]
tap_gso = [A, 10, 200, 3, 1, 0x36, 0, 0x40, 0x05, 0x22, 0, 0x10, 0, 4, 1, 2, 3, 4]
rx_sg = lambda i: [A, 5, 1, 0, i, 1, 0, 0, 63, i * 16, 0, 63, i * 16 + 8]
tx_sg = lambda i: ([A, 4, 2, 0, 16 + i, 1, 0, 0, 10, i * 4, 4, 1, 2, 3, 4,
                    0, 60, i * 4 + 2, 2, 5, 6, 0, 0x100 & 0xff, 0]
                   + [1, 34, 0, 16, 0, 0, 54, 0, 0x40, 0x05])
drain = [A, 3]
vbase = base       # NEGCAP comes before the rings (then -EBUSY)
# queue pairs: QUEUES(n) / SETACTIVE(n) on slot 0; pair 1's rings are
# ring 3 (rx, DEVSHM id 2) and ring 4 (tx, id 3); a frame from tap queue q
queues = lambda n: [B, 5, 0, n, 1]
setactive = lambda n: [B, 6, 0, n, 1]
vrings1 = fmt(3, 4, 0x5000) + devshm(0, 3, 9, 2) + fmt(4, 4, 0x5400) + devshm(0, 4, 10, 3)
tx_flat1 = lambda i: [A, 0, 4, i, 20, 4, 0xaa, 0xbb, 0x08, 0x00]
rx_flat1 = lambda i: [A, 1, 3, i * 24, 23]
tap_frame_q = lambda q, n: [A, 2 | (q << 4), n, 4, 0x11, 0x22, 0x08, 0x00]
venet = {
    "plain": vbase + negcap(0) + vrings + linkup + sum((rx_flat(i) for i in range(4)), [])
             + sig(1) + tx_flat(0) + tx_flat(1) + sig(2) + tap_frame(10)
             + tap_frame(200) + [PUMP, REAP, 1, REAP, 2] + drain + [B, 4, 0, 1],
    "rxsg": vbase + negcap(0x2f) + vrings + linkup + sum((rx_sg(i) for i in range(4)), [])
            + sig(1) + tx_sg(0) + tx_sg(1) + sig(2) + tap_gso + tap_frame(20)
            + [PUMP, REAP, 1, REAP, 2] + drain,
    "backend-lost": vbase + negcap(0x21) + vrings + linkup + rx_flat(0) + sig(1)
                    + [A, 0x1f] + [PUMP] + tx_flat(0) + sig(2) + linkup
                    + tap_frame(10) + [B, 1, 0, 1] + linkup,
    "tap-full": vbase + negcap(0) + vrings + linkup
                + sum((tx_flat(i) + sig(2) + [A, 7] for i in range(24)), []),
    "pairs": vbase + negcap(0) + queues(2) + vrings + vrings1 + linkup
             + sum((rx_flat(i) + rx_flat1(i) for i in range(4)), []) + sig(1) + sig(3)
             + tx_flat(0) + tx_flat1(1) + sig(2) + sig(4) + tap_frame_q(0, 10)
             + tap_frame_q(1, 20) + [PUMP, REAP, 1, REAP, 3, REAP, 2, REAP, 4] + drain
             + setactive(1) + tx_flat1(2) + sig(4) + tap_frame_q(1, 30) + [PUMP]
             + setactive(2) + tap_frame_q(1, 40) + [PUMP, REAP, 3] + drain
             + queues(1) + [B, 4, 0, 1],
}

# ipc (id 1): A = a peer (QEMU, host process, guest open/close), B = a
# guest write into the region
ipc_sess = [A, 0, A, 1, A, 2, A, 13, A, 2]
ipc = {
    "session": ipc_sess + [B, 1, 8] + list(b"fuzz.svc") + [A, 5, A, 2, A, 13, A, 2],
    "service-unterminated": ipc_sess + [B, 6, 0, 0] + [B, 1, 64] + [0x41] * 64,
    "getconfig": base + devcall(0, 0, 72) + ipc_sess + [A, 4, A, 12, A, 2],
    "region-garbage": ipc_sess + [B, 2, 40, 16] + [0xff] * 16 + [B, 8 | 16, 0, 1, 7],
}

# ivshmem: A = a client's action (bits 3..4: which), B = a doorbell
ivshmem = {
    "connect": [A, 0, A, 1] + base + ring + post(1, 0, 5) + [B, 0, B, 4] + sig(1),
    "second-refused": [A, 0, A, 1, A, 8, A, 9, A, 1],
    "garbage-and-fd": [A, 0, A, 1, A, 3, 8] + [1] * 9 + [A, 0x23, 4, 1, 2, 3, 4, 5],
    "reconnect": [A, 0, A, 1] + base + [A, 4, A, 1, A, 5, A, 0, A, 1] + base,
    "no-read": [A, 0, A, 5, A, 0, PUMP, A, 1],
}

# adopt: A = a restart with a stored set, B = QEMU exits / going down
def restore(names, pre=0, bar2=None):
    ops = [A, pre, len(names) - 1]
    for sel in names:
        ops.append(sel)
        if (sel % 6 == 1 and not sel & 0x20):
            ops += bar2 if bar2 else [0]
    return ops
full = [0, 1, 2, 3, 4, 5]
adopt = {
    "restart": restore(full) + base + ring + post(1, 0, 5) + sig(1),
    "restart-epoch": restore(full, bar2=[2, 5, 0, 0, 0]) + base + [B, 0],
    "restart-mailbox": restore(full, bar2=[0x40 | 0x20, 7, 0, 0, 0, 0, 0, 0, 0, 0x10, 0]) + [7],
    "incomplete": restore([1, 2, 3, 4, 5]) + restore(full),
    "twice": restore(full + [2]),
    "other-guest": restore([0x40 | k for k in full]) + restore(full),
    "wrong-kind": restore([0x20, 5, 1, 2, 3, 4, 5]),
    "exit": restore(full) + base + [B, 1, PUMP] + restore(full) + base,
}

# ctl: A = a request (how, tokens-1, words by index), B = vbus-blk
W = {w: i for i, w in enumerate([
    "list", "add", "drop", "stats", "fuzz", "--json", "nosuch", "0", "1",
    "2", "3", "4", "5", "4294967296", "-1", "add-test", "add-venet",
    "add-blk", "add-ipc", "add-ram", "add-nosuch"])}
req = lambda *ws: [A, 0, len(ws) - 1] + [W[w] for w in ws]
ctl = {
    "list-stats": base + ring + post(1, 0, 5) + sig(1) + req("list")
                  + req("stats", "fuzz") + req("stats", "fuzz", "--json")
                  + req("stats", "fuzz", "2"),
    "add-drop": req("add", "fuzz", "add-test") + req("add", "fuzz", "add-venet")
                + req("add", "fuzz", "add-blk") + req("add", "fuzz", "add-ipc")
                + req("stats", "fuzz") + req("drop", "fuzz", "5")
                + req("drop", "fuzz", "4294967296") + req("list"),
    "bad": req("nosuch") + req("add", "fuzz", "add-ram") + req("add", "fuzz", "add-nosuch")
           + req("stats", "nosuch") + req("drop", "fuzz", "-1") + [A, 2, 0, 0x80, 3, 0x41, 0x42, 0x43],
}

# config: byte 0 even: a whole file; odd: one spec both ways (2: --device)
conf = lambda text: bytes([0]) + text.encode()
one = lambda dev, spec: bytes([3 if dev else 1]) + spec.encode()
config = {
    "file": conf("# a guest\n--guest g1:sock=g1.sock,mem=g1.ram,size=64M\n"
                 "guest=g2:sock=g2.sock,mem=g2.ram,size=1G,machine=q35\n"
                 "--device g1:type=vbus-test,id=1\n"
                 "device g1:type=vbus-blk,id=2,file=disk.img,queues=2\n"
                 "--device g2:type=venet,id=1,tap=t0,mac=02:00:00:00:00:01\n"
                 "--device g2:type=vbus-ipc,id=2,service=s,sock=s.sock,qsock=q.sock\n"),
    "same-file": conf("--guest g1:sock=a.sock,mem=a.ram,size=64M\n"
                      "--guest g2:sock=./a.sock,mem=b.ram,size=64M\n"),
    "guest": one(False, "g1:sock=a.sock,mem=a.ram,size=1G"),
    "guest-bad": one(False, "g1:sock=a.sock,size=0x"),
    "device": one(True, "g1:type=vbus-blk,id=2,file=disk.img,ro=1"),
    "device-bad": one(True, "g1:type=venet,id=x,tap="),
}

targets = {"hostd": hostd, "blkpoll": blkpoll, "venet": venet, "ipc": ipc,
           "ivshmem": ivshmem, "adopt": adopt, "ctl": ctl, "config": config}
top = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "seeds")
for target, seeds in targets.items():
    out = os.path.join(top, target)
    os.makedirs(out, exist_ok=True)
    for name, ops in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(ops if isinstance(ops, bytes) else bytes(b & 0xff for b in ops))
    print("wrote", len(seeds), "seeds to", out)
