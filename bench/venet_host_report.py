#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Table of bench/venet-host-vs-dpdk.sh.

    venet_host_report.py RAW

RAW has one line per measurement: "KIND SIZE ROUND MPPS", or
"KIND SIZE ROUND - WHY" when it could not be had. Per size and kind:
Mpps and ns per frame, median [min..max] over the rounds, and the ratio
to memif's figure of the same round (median [min..max] of those per-round
ratios). Standard library only.
"""
import statistics
import sys

KINDS = (
    ("vbus-poll", "venet host path, both polling"),
    ("vbus-sleep", "venet host path, both sleeping"),
    ("memif", "DPDK memif (testpmd txonly -> rxonly), polling"),
    ("vhost", "DPDK virtio-user -> vhost (testpmd), polling"),
)
BASE = "memif"


def spread(vals, fmt):
    """median [min..max] of vals, in fmt"""
    return (fmt % statistics.median(vals)) + \
        " [" + (fmt % min(vals)) + ".." + (fmt % max(vals)) + "]"


def load(path):
    """{(kind, size): {round: mpps}} and {(kind, size): why}"""
    got, why = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = line.split(None, 4)
            if len(p) < 4:
                continue
            key = (p[0], int(p[1]))
            if p[3] == "-":
                why[key] = p[4].strip() if len(p) > 4 else "?"
            else:
                got.setdefault(key, {})[int(p[2])] = float(p[3])
    return got, why


def main():
    got, why = load(sys.argv[1])
    sizes = sorted({k[1] for k in list(got) + list(why)})
    print()
    print("| frame | what | Mpps | ns/frame | / memif (same round) |")
    print("|---|---|---|---|---|")
    for size in sizes:
        base = got.get((BASE, size), {})
        for kind, what in KINDS:
            runs = got.get((kind, size))
            if not runs:
                print("| %d B | %s | - | - | %s |" %
                      (size, what, why.get((kind, size), "not run")))
                continue
            mpps = list(runs.values())
            ns = [1000.0 / m for m in mpps if m > 0]
            ratios = [runs[r] / base[r] for r in runs if base.get(r)]
            print("| %d B | %s | %s | %s | %s |" % (
                size, what, spread(mpps, "%.2f"),
                spread(ns, "%.0f") if ns else "-",
                spread(ratios, "%.2f") if ratios else "-"))
    print()
    print("rounds: %d; the ratio is this row's Mpps over memif's in the "
          "same round" % max((len(v) for v in got.values()), default=0))
    for (kind, size), w in sorted(why.items()):
        if got.get((kind, size)):
            print("note: %s at %d B failed in some rounds: %s" %
                  (kind, size, w))


if __name__ == "__main__":
    main()
