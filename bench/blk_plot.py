#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Plot of bench/blk-vs-virtio.sh: blk-results.json to blk-results.png
with gnuplot (no gnuplot: no plot, and it says so).

    blk_plot.py OUTDIR

Two panels, one group of bars per fio job:
  notifications per I/O, vbus and virtio (the guest's count: doorbells +
      interrupts), median of the rounds, whiskers min..max, the
      vbus/virtio ratio above each pair (the issue's goal: <= 0.50);
  vbus/virtio ratios of IOPS, latency p50 and notifications per I/O,
      with lines at 1 and at 0.5.
Only the Python standard library. Never judges a speed.
"""
import json
import os
import shutil
import subprocess
import sys

DISKS = (("vbus", "#1f77b4"), ("virtio", "#ff7f0e"))
RATIOS = (("IOPS", "iops", "#2ca02c"), ("latency p50", "p50_us", "#9467bd"),
          ("notif/IO", "notif_per_io", "#d62728"))


def gp_str(t):
    return '"' + str(t).replace("\\", "\\\\").replace('"', '\\"') + '"'


def notif_panel(pdir, jobs):
    """data and plot command of the notifications-per-I/O panel"""
    dat = os.path.join(pdir, "notif.dat")
    top = 0.0
    with open(dat, "w", encoding="utf-8") as f:
        for i, (disk, _) in enumerate(DISKS):
            f.write("# %s\n" % disk)
            for j, (_, res) in enumerate(jobs):
                s = res[disk].get("notif_per_io")
                if not s:
                    continue
                x = j + (i - 0.5) * 0.4
                top = max(top, s["max"])
                f.write("%g %g %g %g %s\n" % (x, s["median"], s["min"], s["max"],
                                              gp_str("%.2f" % s["median"])))
            f.write("\n\n")
        f.write("# ratios\n")
        for j, (_, res) in enumerate(jobs):
            r = res["ratio_vbus_over_virtio"].get("notif_per_io")
            hi = max((res[d].get("notif_per_io") or {"max": 0})["max"]
                     for d, _ in DISKS)
            if r is not None:
                f.write("%d %g %s\n" % (j, hi, gp_str("%.2fx" % r)))
        f.write("-10 0 \"\"\n")
    plots = []
    for i, (disk, color) in enumerate(DISKS):
        src = "'%s'" % dat if i == 0 else "''"
        plots += [
            "%s index %d using 1:2:(0.38) with boxes lc rgb '%s' title '%s'"
            % (src, i, color, disk),
            "'' index %d using 1:2:3:4 with yerrorbars lc rgb 'black' pt -1 notitle" % i,
            "'' index %d using 1:4:5 with labels offset 0,0.8 font ',8' notitle" % i,
        ]
    plots.append("'' index 2 using 1:2:3 with labels offset 0,2.2 "
                 "font ',10,Bold' tc rgb '#006400' notitle")
    return top, plots


def ratio_panel(pdir, jobs):
    dat = os.path.join(pdir, "ratio.dat")
    top = 1.0
    with open(dat, "w", encoding="utf-8") as f:
        for i, (_, key, _) in enumerate(RATIOS):
            f.write("# %s\n" % key)
            for j, (_, res) in enumerate(jobs):
                r = res["ratio_vbus_over_virtio"].get(key)
                if r is None:
                    continue
                top = max(top, r)
                f.write("%g %g %s\n" % (j + (i - 1) * 0.27, r, gp_str("%.2f" % r)))
            f.write("-10 0 \"\"\n\n\n")
    plots = []
    for i, (label, _, color) in enumerate(RATIOS):
        src = "'%s'" % dat if i == 0 else "''"
        plots += [
            "%s index %d using 1:2:(0.25) with boxes lc rgb '%s' title '%s'"
            % (src, i, color, label),
            "'' index %d using 1:2:3 with labels offset 0,0.7 font ',8' notitle" % i,
        ]
    plots += ["1 with lines lc rgb 'black' dt 2 title 'vbus = virtio'",
              "0.5 with lines lc rgb '#d62728' dt 3 title 'notif/IO goal 0.5'"]
    return top, plots


def main():
    out = sys.argv[1]
    with open(os.path.join(out, "blk-results.json"), encoding="utf-8") as f:
        res = json.load(f)
    if not shutil.which("gnuplot"):
        print("blk_plot: no gnuplot, no plot")
        return 0
    meta = res.get("meta", {})
    jobs = list(res.get("jobs", {}).items())
    pdir = os.path.join(out, "plot-blk")
    os.makedirs(pdir, exist_ok=True)
    png = os.path.join(out, "blk-results.png")
    xt = ", ".join("%s %d" % (gp_str(j), i) for i, (j, _) in enumerate(jobs))
    head = ("vbus-blk vs virtio-blk (accel=%s, %s vCPUs, %s round(s) of %s s, %s); "
            "notification counts are per event, as on hardware KVM"
            % (meta.get("accel"), meta.get("smp"), meta.get("rounds"),
               meta.get("time_s"), meta.get("date")))
    lines = ['set terminal pngcairo size 1600,1000 font ",10"',
             "set output '%s'" % png,
             "set style fill solid 0.85 border -1", "set grid ytics",
             "set key top right", "set xtics scale 0",
             "set xtics (%s)" % xt,
             "set xrange [-0.6:%g]" % (len(jobs) - 0.4),
             "set multiplot layout 2,1 title %s" % gp_str(head)]
    top, plots = notif_panel(pdir, jobs)
    lines += ["set title 'notifications per I/O, guest count: doorbells + "
              "interrupts (lower is better; above a pair: vbus/virtio)'",
              "set yrange [0:%g]" % (top * 1.35 if top > 0 else 1),
              "plot " + ", \\\n    ".join(plots)]
    top, plots = ratio_panel(pdir, jobs)
    lines += ["set title 'vbus/virtio (IOPS: higher is better; latency, "
              "notifications: lower is better)'",
              "set yrange [0:%g]" % (top * 1.2),
              "plot " + ", \\\n    ".join(plots),
              "unset multiplot"]
    gp = os.path.join(pdir, "blk-results.gp")
    with open(gp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        print("blk_plot: gnuplot failed: %s" % r.stderr.strip(),
              file=sys.stderr)
        return 1
    print("plot: %s" % png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
