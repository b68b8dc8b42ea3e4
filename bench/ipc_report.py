#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Report of bench/ipc-vs-tcp.sh: reads the raw measurements, prints the
ipc | venet | virtio table with the ratios to TCP over venet and the
issue's goals (reported, never asserted), writes ipc.json and ipc.png
(bench/report.py's gnuplot panels).

    ipc_report.py [--kind ipc|vm] RAWDIR OUTDIR

--kind vm: the same report for bench/vm-to-vm.sh (two guests: a VM<->VM
channel and TCP between two guests, timed by the measuring guest; writes
vm.json and vm.png). The raw files are the same.

RAWDIR holds meta.env, status-T ("up ..." | "unavailable REASON") per
transport T, sessions.txt ("SID ROUND T EXIT ACTION ARGS..." per host
session), sSID.out (ipc-peer's output: one "ipc-rr|tcp-rr|ipc-stream|
tcp-stream key=value..." line) and guest-lines.txt (the guest's console
protocol; "VBUS-IPCB SNAP SID 0|1 LINE" are bench/guest/counters.sh
snapshots around each TCP session). Figures are the median over rounds
with min..max. Notifications per message: vbus-ipc's doorbells rung and
handled by the host's end (doorbells_per_msg); for TCP the guest's NIC
doorbells and interrupts over the session (report.notifications) divided
by the messages both ways, warm-up included. Standard library only.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  pylint: disable=wrong-import-position

TRANSPORTS = ("ipc", "venet", "virtio")
BASE = "venet"
RR_WARMUP = 100  # ipc-peer's unmeasured round trips before each rr

# run (action, bytes, batch) -> short name
RUNS = {("rr", 1, 1): "rr1", ("rr", 4096, 1): "rr4k", ("stream", 4096, 1): "s4k_b1",
        ("stream", 4096, 32): "s4k_b32", ("stream", 65536, 32): "s64k_b32"}

# key, label, unit, better
FIGURES = [
    ("rr1_p50_us", "round trip 1 B p50", "us", "lower"),
    ("rr1_p99_us", "round trip 1 B p99", "us", "lower"),
    ("rr4k_p50_us", "round trip 4 KiB p50", "us", "lower"),
    ("rr4k_p99_us", "round trip 4 KiB p99", "us", "lower"),
    ("s4k_b1_msgs_s", "4 KiB batch 1", "msg/s", "higher"),
    ("s4k_b32_msgs_s", "4 KiB batch 32", "msg/s", "higher"),
    ("s64k_b32_msgs_s", "64 KiB batch 32", "msg/s", "higher"),
    ("s4k_b1_mb_s", "4 KiB batch 1", "MB/s", "higher"),
    ("s4k_b32_mb_s", "4 KiB batch 32", "MB/s", "higher"),
    ("s64k_b32_mb_s", "64 KiB batch 32", "MB/s", "higher"),
    ("rr1_notif", "notif/msg rr 1 B", "1/msg", "lower"),
    ("rr4k_notif", "notif/msg rr 4 KiB", "1/msg", "lower"),
    ("s4k_b1_notif", "notif/msg 4 KiB b1", "1/msg", "lower"),
    ("s4k_b32_notif", "notif/msg 4 KiB b32", "1/msg", "lower"),
    ("s64k_b32_notif", "notif/msg 64 KiB b32", "1/msg", "lower"),
]

PANELS = [
    ("round trip p50, us (lower is better)",
     [("1 B", "rr1_p50_us"), ("4 KiB", "rr4k_p50_us")]),
    ("round trip p99, us (lower is better)",
     [("1 B", "rr1_p99_us"), ("4 KiB", "rr4k_p99_us")]),
    ("messages/s (higher is better)",
     [("4 KiB b1", "s4k_b1_msgs_s"), ("4 KiB b32", "s4k_b32_msgs_s"),
      ("64 KiB b32", "s64k_b32_msgs_s")]),
    ("MB/s one way (higher is better)",
     [("4 KiB b1", "s4k_b1_mb_s"), ("4 KiB b32", "s4k_b32_mb_s"),
      ("64 KiB b32", "s64k_b32_mb_s")]),
    ("notifications per message, round trips (lower is better)",
     [("1 B", "rr1_notif"), ("4 KiB", "rr4k_notif")]),
    ("notifications per message, streams (lower is better)",
     [("4 KiB b1", "s4k_b1_notif"), ("4 KiB b32", "s4k_b32_notif"),
      ("64 KiB b32", "s64k_b32_notif")]),
]


def parse_figures(text):
    """the first "ipc-rr ..." / "tcp-stream ..." line of a session: {k: v}"""
    for line in (text or "").splitlines():
        f = line.split()
        if f and f[0].split("-", 1)[-1] in ("rr", "stream") and f[0][:4] in ("ipc-", "tcp-"):
            out = {}
            for kv in f[1:]:
                k, _, v = kv.partition("=")
                try:
                    out[k] = float(v)
                except ValueError:
                    pass
            return out
    return None


def guest_snapshots(raw):
    """{sid: {0: counters.sh text, 1: ...}} from the guest's console lines"""
    snaps = {}
    for line in (report.read(os.path.join(raw, "guest-lines.txt")) or "").splitlines():
        f = line.split(" ", 4)
        if len(f) == 5 and f[1] == "SNAP" and f[3] in ("0", "1"):
            snaps.setdefault(f[2], {}).setdefault(int(f[3]), []).append(f[4])
    return {sid: {k: "\n".join(v) for k, v in d.items()} for sid, d in snaps.items()}


def session_figures(t, run, fig, snap):
    """the figures of one session, keyed as FIGURES"""
    name = RUNS.get(run)
    if name is None or fig is None:
        return {}
    out = {}
    if run[0] == "rr":
        out[f"{name}_p50_us"] = fig.get("p50_us")
        out[f"{name}_p99_us"] = fig.get("p99_us")
        msgs = 2 * (fig.get("samples", 0) + RR_WARMUP)
    else:
        out[f"{name}_msgs_s"] = fig.get("msgs_per_s")
        out[f"{name}_mb_s"] = fig.get("mb_per_s")
        msgs = 2 * fig.get("msgs", 0)
    if t == "ipc":
        out[f"{name}_notif"] = fig.get("doorbells_per_msg")
    elif snap and 0 in snap and 1 in snap and msgs:
        n = report.notifications(t, report.parse_counters(snap[0]),
                                 report.parse_counters(snap[1]))
        if n is not None:
            out[f"{name}_notif"] = (n[0] + n[1]) / msgs
    return out


def collect(raw):
    """{t: {round: {key: value}}} and the failed sessions"""
    snaps = guest_snapshots(raw)
    per = {t: {} for t in TRANSPORTS}
    failed = []
    for line in (report.read(os.path.join(raw, "sessions.txt")) or "").splitlines():
        f = line.split()
        if len(f) < 7 or f[2] not in per:
            continue
        sid, rnd, t, rc, action = f[0], int(f[1]), f[2], f[3], f[4]
        run = (action, int(f[6]), int(f[7]) if len(f) > 7 else 1)
        if rc != "0":
            failed.append(f"session {sid} ({t} {' '.join(f[4:])}): exit {rc}")
            continue
        fig = parse_figures(report.read(os.path.join(raw, f"s{sid}.out")))
        per[t].setdefault(rnd, {}).update(session_figures(t, run, fig, snaps.get(sid)))
    return per, failed


def summarize(raw, per):
    res = {}
    for t in TRANSPORTS:
        status = (report.read(os.path.join(raw, f"status-{t}")) or "unavailable -").strip()
        rounds = per[t]
        r = {"status": status, "available": status.startswith("up") and bool(rounds),
             "spread": {}, "rounds": rounds}
        for key, *_ in FIGURES:
            vals = [d[key] for d in rounds.values() if d.get(key) is not None]
            if vals:
                r[key] = statistics.median(vals)
                r["spread"][key] = [min(vals), max(vals)]
        res[t] = r
    return res


def ratios(res, t):
    out = {}
    if not (res[t]["available"] and res[BASE]["available"]):
        return out
    for key, *_ in FIGURES:
        a, b = res[t].get(key), res[BASE].get(key)
        if a is not None and b:
            out[key] = a / b
    return out


def goals(ratio):
    """the issue's goals for vbus-ipc against TCP over venet"""
    g = []
    for key, what in (("rr1_p50_us", "round trip 1 B p50"), ("rr4k_p50_us", "round trip 4 KiB p50")):
        r = ratio.get(key)
        g.append({"goal": f"vbus-ipc {what} <= 0.3x TCP/venet", "ratio": r,
                  "met": None if r is None else r <= 0.3})
    for key, what in (("s4k_b1_mb_s", "4 KiB batch 1"), ("s4k_b32_mb_s", "4 KiB batch 32")):
        r = ratio.get(key)
        g.append({"goal": f"vbus-ipc throughput {what} >= 5x TCP/venet", "ratio": r,
                  "met": None if r is None else r >= 5})
    return g


# what differs between the benches: (title, who talks, clock, file stem)
KINDS = {
    "ipc": ("vbus-ipc vs TCP over venet and virtio-net",
            "guest process <-> host process", "host clock", "ipc"),
    "vm": ("VM<->VM: a vbus-ipc link vs TCP between two venet / two virtio-net guests",
           "guest process <-> guest process, one Linux bridge", "the measuring guest's clock",
           "vm"),
}
KIND = "ipc"


def session_spread(res, t="ipc"):
    """the issue's "no longer bimodal": per rr run, every session's p50
    within 2x of the median session's (sessions = rounds)"""
    g = []
    for key, what in (("rr1_p50_us", "round trip 1 B p50"), ("rr4k_p50_us", "round trip 4 KiB p50")):
        vals = [d[key] for _, d in sorted(res[t]["rounds"].items()) if d.get(key) is not None]
        if not vals:
            continue
        med = statistics.median(vals)
        worst = max(max(v / med, med / v) for v in vals) if med and min(vals) > 0 else None
        g.append({"goal": f"{t} {what}: every session within 2x of the median session",
                  "ratio": worst, "met": None if worst is None else worst <= 2,
                  "sessions": vals})
    return g


def print_table(meta, res, rat):
    cols = [t for t in TRANSPORTS if res[t]["available"]]
    rcols = [t for t in cols if t != BASE and rat[t]]
    accel = meta.get("accel", "?")
    title, who, clock, _ = KINDS[KIND]
    print(f"\n{title}, {who} "
          f"(accel={accel}, {meta.get('smp')} vCPUs, {meta.get('rounds')} round(s), {clock})")
    if accel.startswith("tcg"):
        print("NOTE: the guest runs under TCG (emulated CPU, no KVM): absolute figures are "
              "TCG's; compare the ratios, measured in the same run")
    for t in TRANSPORTS:
        if not res[t]["available"]:
            print(f"{t}: {res[t]['status']}")
    hdr = f"{'figure':<24} {'unit':>6} " + " ".join(f"{t:>10}" for t in cols)
    hdr += "".join(f" {t + '/' + BASE:>13}" for t in rcols)
    print(hdr + "  min..max per round (" + "; ".join(cols) + ")")
    for key, label, unit, _better in FIGURES:
        spread = "; ".join("..".join(report.fmt(x) for x in res[t]["spread"].get(key, [])) or "-"
                           for t in cols)
        line = f"{label:<24} {unit:>6} " + " ".join(f"{report.fmt(res[t].get(key)):>10}" for t in cols)
        line += "".join(f" {report.fmt(rat[t].get(key)) + 'x':>13}" if rat[t].get(key) is not None
                        else f" {'-':>13}" for t in rcols)
        print(line + "  " + spread)


def main():
    global KIND  # pylint: disable=global-statement
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--kind" and args[1] in KINDS:
        KIND, args = args[1], args[2:]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    raw, out = args
    title, _, _, stem = KINDS[KIND]
    meta = report.read_meta(raw)
    per, failed = collect(raw)
    res = summarize(raw, per)
    rat = {t: ratios(res, t) for t in TRANSPORTS}
    g = goals(rat["ipc"])
    if res["ipc"]["available"]:
        g += session_spread(res)
    print_table(meta, res, rat)
    print("\ngoals of the issue (reported, not asserted):")
    for x in g:
        verdict = "n/a" if x["met"] is None else ("met" if x["met"] else "NOT met")
        r = "-" if x["ratio"] is None else f"{x['ratio']:.3g}x"
        print(f"  {x['goal']:<52} {r:>9}  {verdict}")
        if "sessions" in x:
            print("    p50 per session (us): " + " ".join(report.fmt(v) for v in x["sessions"]))
    for f in failed:
        print(f"failed: {f}")
    jpath = os.path.join(out, stem + ".json")
    with open(jpath, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "baseline": BASE, "transports": res,
                   "ratio_vs_" + BASE: rat, "goals": g, "failed_sessions": failed},
                  f, indent=1, sort_keys=True)
    print(f"results: {jpath}")
    png = os.path.join(out, stem + ".png")
    if not any(res[t]["available"] for t in TRANSPORTS):
        print("report: no plot (nothing was measured)", file=sys.stderr)
    elif not report.shutil.which("gnuplot"):
        print("report: no plot (install gnuplot-nox)", file=sys.stderr)
    elif report.plot_gnuplot(raw, meta, res, rat["ipc"], png, series=TRANSPORTS, panels=PANELS,
                             title=title,
                             ratio_name="ipc/venet", bars="median of the rounds"):
        print(f"plot:    {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
