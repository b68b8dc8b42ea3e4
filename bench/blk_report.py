#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Report of bench/blk-vs-virtio.sh: reads the raw measurements, prints
the vbus | virtio | vbus/virtio table per fio job and writes
blk-results.json. With --format qcow2 (meta disks= lists vbusq and
virtioq) also the vbusq | virtioq table per job (the same image format
on both: vbus-hostd's qemu-storage-daemon over NBD against QEMU's own
qcow2 driver) and what the NBD hop costs per request: vbusq | vbus (the
raw-file fast path) for host CPU per I/O and latency p50/p99.

    blk_report.py RAWDIR OUTDIR

RAWDIR holds meta.env, status.txt and DISK/rK/JOB.{json,begin,end} per
round K: the fio JSON of the run, and the host's marks around it
("qemu_ticks hostd_ticks notify_in notify_out wall_s clk_tck kicks irqs
qsd_ticks"; kicks and irqs are the guest's counts, qsd_ticks the CPU
time of vbusq's qemu-storage-daemon, "-" when unknown or not vbusq).
Host CPU per I/O is QEMU + vbus-hostd (+ the storage daemon for vbusq). Figures are the
median over rounds, with min..max. Host CPU and notifications per I/O:
the counters' change between the guest's begin and end marks (the fio
process's start-up and exit included; no ramp, so fio's I/O count covers
the whole run) over fio's I/O count, the same way for both disks.

Notifications per I/O are counted in the guest, the same way for both
disks (bench/guest/blk-bench-guest.sh): guest->host doorbells are the hits
of a kprobe on the function that writes the doorbell register (virtio:
vp_notify, vbus: vbus_pci_doorbell), host->guest interrupts are the disk's
MSI-X lines in /proc/interrupts (virtio: virtioN-req.M/config, vbus: the
bridge's vbus-eventq). Each would be a VM exit or an injected interrupt on
hardware KVM too, so the counts carry over from TCG (the times do not).
vbus-hostd's own counters (notify_in: doorbells it took, notify_out:
signals it raised, before the eventq's coalescing) are printed for vbus as
a cross-check. Only the Python standard library. Never judges a speed.
"""
import json
import os
import statistics
import sys
import textwrap

# the pairs compared: (a, b, the JSON key of their per-job results)
PAIRS = [("vbus", "virtio", "jobs"), ("vbusq", "virtioq", "qcow2_jobs")]
# the NBD hop: image= through the storage daemon against the raw file
HOP = ("vbusq", "vbus")
HOP_FIGURES = ["iops", "p50_us", "p99_us", "cpu_us_per_io",
               "cpu_qemu_us_per_io", "cpu_hostd_us_per_io",
               "cpu_qsd_us_per_io", "notif_per_io"]

# key, label, unit
FIGURES = [
    ("iops", "IOPS", ""),
    ("mb_s", "MB/s", ""),
    ("p50_us", "latency p50", "us"),
    ("p99_us", "latency p99", "us"),
    ("cpu_us_per_io", "host CPU per I/O", "us"),
    ("cpu_qemu_us_per_io", "  QEMU", "us"),
    ("cpu_hostd_us_per_io", "  vbus-hostd", "us"),
    ("cpu_qsd_us_per_io", "  qemu-storage-daemon", "us"),
    ("notif_per_io", "notif/IO (guest count)", ""),
    ("kicks_per_io", "  guest->host doorbells", ""),
    ("irqs_per_io", "  host->guest irqs", ""),
    ("hostd_notify_per_io", "notif/IO (vbus-hostd)", ""),
    ("hostd_notify_in_per_io", "  notify_in", ""),
    ("hostd_notify_out_per_io", "  notify_out", ""),
]

# the ratios the goals are about, summarized after the tables
GOALS = [
    ("notif_per_io", "notif/IO vbus/virtio", "<= 0.50"),
    ("p50_us", "latency p50 vbus/virtio", ""),
    ("iops", "IOPS vbus/virtio", ""),
]


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def marks(path):
    text = read(path)
    if not text:
        return None
    f = text.split()
    try:
        m = [float(x) for x in f[:6]]
    except ValueError:
        return None
    if len(m) < 6:
        return None
    # the guest's kicks and irqs, the storage daemon's ticks: older marks
    # lack them, "-" is unknown
    for x in (f[6:9] + ["-", "-", "-"])[:3]:
        try:
            m.append(float(x))
        except ValueError:
            m.append(None)
    return tuple(m)


def per_io(b, e, i, ios):
    """counter i's change between the marks over the I/O count, or None"""
    if b[i] is None or e[i] is None or e[i] < b[i]:
        return None
    return (e[i] - b[i]) / ios


def one_run(rdir, job, disk):
    """the figures of one fio run, or None"""
    text = read(os.path.join(rdir, job + ".json"))
    if not text:
        return None
    try:
        fio = json.loads(text[text.index("{"):])
        j = fio["jobs"][0]
    except (ValueError, KeyError, IndexError):
        return None
    side = j["read"] if "read" in job.split("-")[0] else j["write"]
    ios = side.get("total_ios", 0)
    if not ios:
        return None
    pct = side.get("clat_ns", {}).get("percentile", {})
    fig = {
        "iops": side.get("iops"),
        "mb_s": side.get("bw_bytes", 0) / 1e6,
        "p50_us": pct.get("50.000000", 0) / 1e3 if pct else None,
        "p99_us": pct.get("99.000000", 0) / 1e3 if pct else None,
    }
    b = marks(os.path.join(rdir, job + ".begin"))
    e = marks(os.path.join(rdir, job + ".end"))
    if b and e and e[5] > 0:
        q = (e[0] - b[0]) / e[5] * 1e6 / ios
        h = (e[1] - b[1]) / e[5] * 1e6 / ios
        fig["cpu_qemu_us_per_io"] = q
        fig["cpu_hostd_us_per_io"] = h
        fig["cpu_us_per_io"] = q + h
        if b[8] is not None and e[8] is not None and e[8] >= b[8]:
            s = (e[8] - b[8]) / e[5] * 1e6 / ios
            fig["cpu_qsd_us_per_io"] = s
            fig["cpu_us_per_io"] += s
        fig["kicks_per_io"] = per_io(b, e, 6, ios)
        fig["irqs_per_io"] = per_io(b, e, 7, ios)
        if fig["kicks_per_io"] is not None and fig["irqs_per_io"] is not None:
            fig["notif_per_io"] = fig["kicks_per_io"] + fig["irqs_per_io"]
        if disk.startswith("vbus"):  # vbus-hostd counts its own device's
            fig["hostd_notify_in_per_io"] = per_io(b, e, 2, ios)
            fig["hostd_notify_out_per_io"] = per_io(b, e, 3, ios)
            fig["hostd_notify_per_io"] = (fig["hostd_notify_in_per_io"] +
                                          fig["hostd_notify_out_per_io"])
    return fig


def summary(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v),
            "n": len(v)}


def fmt(s):
    if not s:
        return "-"
    m = s["median"]
    p = "%.0f" if abs(m) >= 100 else "%.2f"
    if s["n"] > 1:
        return (p + " (" + p + ".." + p + ")") % (m, s["min"], s["max"])
    return p % m


NOTIF_NOTE = ("notif/IO (guest count): guest->host doorbells (kprobe hits "
              "on vp_notify / vbus_pci_doorbell) + host->guest interrupts "
              "(the disk's MSI-X lines in /proc/interrupts), over fio's I/O "
              "count. Guests run under TCG; each of these is a VM exit or "
              "an injected interrupt on hardware KVM as well, so the counts "
              "carry over (the times and CPU figures do not).")


def print_summary(jobs, meta, a="vbus", b="virtio"):
    """the goal ratios per job, printed and returned for the JSON"""
    summ = {}
    print("\n%s/%s per job (median of the rounds; guests under %s)"
          % (a, b, meta.get("accel")))
    print("%-24s" % "" + "".join("%26s" % g[1].replace("vbus/virtio",
                                                        a + "/" + b)
                                 for g in GOALS))
    for job, res in jobs.items():
        r = res["ratio_%s_over_%s" % (a, b)]
        summ[job] = {k: r.get(k) for k, _, _ in GOALS}
        cells = []
        for k, _, goal in GOALS:
            v = r.get(k)
            txt = "-" if v is None else "%.2f" % v
            cells.append("%26s" % (txt + (" (goal %s)" % goal if goal else "")))
        print("%-24s" % job + "".join(cells))
    return summ


def disk_figures(raw, rounds, job, d):
    """{figure: summary} of disk d's runs of job"""
    runs = [one_run(os.path.join(raw, d, "r%d" % r), job, d)
            for r in range(1, rounds + 1)]
    runs = [x for x in runs if x]
    return {k: summary([x.get(k) for x in runs]) for k, _, _ in FIGURES}


def ratios(pa, pb, keys):
    out = {}
    for k in keys:
        x, y = pa.get(k), pb.get(k)
        if x and y and y["median"]:
            out[k] = x["median"] / y["median"]
    return out


def pair_table(job, a, b, per):
    """one job's table, a | b | a/b; returns the job's JSON entry"""
    ratio = ratios(per[a], per[b], [k for k, _, _ in FIGURES])
    print("\n%-24s %24s %24s %12s" % (job, a, b, a + "/" + b))
    for k, label, unit in FIGURES:
        lab = label + (" (%s)" % unit if unit else "")
        r = ratio.get(k)
        print("%-24s %24s %24s %12s" % (lab, fmt(per[a].get(k)),
                                        fmt(per[b].get(k)),
                                        "%.2f" % r if r else "-"))
    return {a: per[a], b: per[b], "ratio_%s_over_%s" % (a, b): ratio}


def print_hop(per_job, meta):
    """the NBD hop per job: vbusq against vbus; returned for the JSON"""
    a, b = HOP
    labels = {k: lab + (" (%s)" % u if u else "") for k, lab, u in FIGURES}
    res = {}
    print("\nThe NBD hop: %s (image= through qemu-storage-daemon) against "
          "%s (raw file, io_uring), median (min..max); guests under %s"
          % (a, b, meta.get("accel")))
    for job, per in per_job.items():
        r = ratios(per[a], per[b], HOP_FIGURES)
        res[job] = {"ratio_%s_over_%s" % (a, b): r}
        print("\n%-24s %24s %24s %12s" % (job, a, b, a + "/" + b))
        for k in HOP_FIGURES:
            print("%-24s %24s %24s %12s" % (
                labels[k].strip(), fmt(per[a].get(k)), fmt(per[b].get(k)),
                "%.2f" % r[k] if r.get(k) else "-"))
    return res


def main():
    raw, out = sys.argv[1], sys.argv[2]
    meta = {}
    for line in (read(os.path.join(raw, "meta.env")) or "").splitlines():
        k, _, v = line.partition("=")
        meta[k] = v
    jobs = meta.get("jobs", "").split()
    rounds = int(meta.get("rounds", "1"))
    result = {"meta": meta, "jobs": {}}
    print("\nvbus-blk vs virtio-blk (%s, %s vCPUs, %s s per run, %d round(s);"
          " median (min..max))" % (meta.get("accel"), meta.get("smp"),
                                   meta.get("time_s"), rounds))
    if meta.get("vbus_params"):
        print("vbus-blk device params: %s" % meta["vbus_params"])
    disks = meta.get("disks", "vbus virtio").split()
    per_job = {}
    for job in jobs:
        per_job[job] = {d: disk_figures(raw, rounds, job, d) for d in disks}
    for a, b, key in PAIRS:
        if a not in disks or b not in disks:
            continue
        if key != "jobs":
            print("\n%s vs %s: the same qcow2 image on both" % (a, b))
        result[key] = {job: pair_table(job, a, b, per_job[job])
                       for job in jobs}
        summ = print_summary(result[key], meta, a, b)
        result["summary" if key == "jobs" else key + "_summary"] = summ
    if all(d in disks for d in HOP):
        result["nbd_hop"] = print_hop(per_job, meta)
    print("\n" + textwrap.fill(NOTIF_NOTE, 79))
    result["notifications"] = NOTIF_NOTE
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "blk-results.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("\nJSON: %s" % path)


if __name__ == "__main__":
    main()
