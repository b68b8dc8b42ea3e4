#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""libvbus-hostd keeps to its layers: no circle between its files.

From `nm` of the static library: file A depends on file B when A uses a
symbol B defines. Fails (exit 1) on any cycle, and on a file that calls a
file listed above it in ORDER (docs/design.md, "The library's files").
usage: check_layers.py NM libvbus-hostd.a"""
import subprocess
import sys

# bottom first: each file may use only files before it (docs/design.md)
ORDER = ["log", "poll_window", "buf", "stat", "eventfd", "sock", "claim", "devtype",
         "loop", "devthread", "mem", "ivshmem", "qvec", "evq", "dma_window", "dev", "param", "timer", "kick", "devq",
         "bus", "sig", "hc", "guest", "fault"]


def symbols(nm, lib):
    out = subprocess.run([nm, "-A", lib], check=True, capture_output=True,
                         text=True).stdout
    defs, uses = {}, {}
    for line in out.splitlines():
        parts = line.split()
        member = line.split(":")[1].replace(".c.o", "")
        kind, name = parts[-2], parts[-1]
        if kind == "U":
            uses.setdefault(member, set()).add(name)
        elif kind in "TDBR" and kind.isupper():
            defs[name] = member
        uses.setdefault(member, set())
    return defs, uses


def main():
    nm, lib = sys.argv[1], sys.argv[2]
    defs, uses = symbols(nm, lib)
    deps = {m: {defs[s] for s in u if s in defs and defs[s] != m}
            for m, u in uses.items()}
    bad = 0
    for m in sorted(deps):
        if m not in ORDER:
            print(f"FAIL: {m}.c is not in the layer order of check_layers.py"
                  " and docs/design.md")
            bad += 1
            continue
        for d in sorted(deps[m]):
            if ORDER.index(d) > ORDER.index(m):
                print(f"FAIL: {m}.c calls up into {d}.c")
                bad += 1
    print(" < ".join(ORDER))
    for m in ORDER:
        print(f"  {m}: {' '.join(sorted(deps.get(m, ()))) or '-'}")
    print(f"{bad} layering violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
