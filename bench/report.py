#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Report of bench/venet-vs-virtio.sh: reads the raw measurements and
prints the venet | virtio | venet/virtio table, writes results.json and
results.png (gnuplot, else matplotlib, else no plot).

    report.py RAWDIR OUTDIR

RAWDIR holds meta.env, NIC/status ("up IFNAME" | "unavailable REASON") and
NIC/rK/{ping.txt, rr.txt, iperf-h2g.json, iperf-g2h.json, cpu-h2g.txt,
cpu-g2h.txt, guest-{h2g,g2h}-{0,1}.txt} per round K (cpu-*.txt:
"qemu_ticks hostd_ticks wall_s clk_tck"; guest-*.txt: the guest's counters
before/after the run, bench/guest/counters.sh). Figures over several rounds:
the median of the rounds for throughput, CPU and notifications; latency
percentiles over all samples pooled; the spread (min..max of the rounds)
of every figure is kept too. Only the Python standard library is used.
Never judges a speed.

Notifications (what a hardware KVM exit or interrupt would cost; they do
not depend on the accelerator):
  doorbells   guest->host. virtio-net: its queues' `kicks` (ethtool -S,
              counted only when the kick was not suppressed); venet: the
              vbus bridge's `doorbells` (every DB_SIGNAL/HC register
              write; venet is the only device on the bench's bus).
  interrupts  host->guest: the NIC's MSI-X lines in /proc/interrupts
              (virtio-net: virtioN-input/output/config; venet: the bridge's
              vbus-eventq and vbus-hc).
Per GB of the run's payload (iperf3's received bytes) and per data frame
(the guest's tx frames for guest->host, rx frames for host->guest).

With --compare-queues (meta.env compare_queues=1, queues N >= 2): NIC/rK/q1/
holds the round's throughput runs at 1 active pair (the same files as rK/);
a second table and results.json's "queue_compare" give per NIC the TCP
throughput, 64-byte frame rate, notifications and host CPU per GB at 1
and at N pairs ("at_1", "at_N": the median of the rounds) and "ratio" N/1
(taken within each round, then the median), each with min..max over rounds.

With --queues N (meta.env queues > 0), per direction of the TCP runs:
  irq_DIR_cpuC_pct  the NIC's interrupts that arrived on guest CPU C, % of
                    the run's (its vectors' per-CPU columns of /proc/interrupts)
  rxqI_h2g_pct      host->guest frames received on queue (pair) I, % of
  txqI_g2h_pct      guest->host frames sent on queue I, % (ethtool -S
                    rx_queue_I_packets / tx_queue_I_packets: venet and
                    virtio-net use the same names)
  pps64_DIR_kpps    64-byte frames (iperf3 -u -l 18 -b 0) the receiver got
                    per second, thousands
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

NICS = ("venet", "virtio")

# key, label, unit, better
FIGURES = [
    ("tcp_g2h_gbps", "TCP guest->host", "Gbit/s", "higher"),
    ("tcp_h2g_gbps", "TCP host->guest", "Gbit/s", "higher"),
    ("rr_p50_us", "TCP RR latency p50", "us", "lower"),
    ("rr_p99_us", "TCP RR latency p99", "us", "lower"),
    ("rrbp_p50_us", "TCP RR p50, busy poll", "us", "lower"),
    ("rrbp_p99_us", "TCP RR p99, busy poll", "us", "lower"),
    ("wk_main_per_rtt", "wakeups/RR: QEMU main loop", "1/RTT", "lower"),
    ("wk_qemu_per_rtt", "wakeups/RR: QEMU others", "1/RTT", "lower"),
    ("wk_hostd_per_rtt", "wakeups/RR: vbus-hostd", "1/RTT", "lower"),
    ("wk_total_per_rtt", "wakeups/RR: all threads", "1/RTT", "lower"),
    ("icmp_p50_us", "ICMP RTT p50", "us", "lower"),
    ("icmp_p99_us", "ICMP RTT p99", "us", "lower"),
    ("cpu_g2h_s_per_gb", "host CPU guest->host", "s/GB", "lower"),
    ("cpu_h2g_s_per_gb", "host CPU host->guest", "s/GB", "lower"),
    ("cpu_g2h_qemu_s_per_gb", "  g->h: QEMU", "s/GB", "lower"),
    ("cpu_g2h_hostd_s_per_gb", "  g->h: vbus-hostd", "s/GB", "lower"),
    ("cpu_h2g_qemu_s_per_gb", "  h->g: QEMU", "s/GB", "lower"),
    ("cpu_h2g_hostd_s_per_gb", "  h->g: vbus-hostd", "s/GB", "lower"),
    ("busy_g2h_pct", "host CPUs busy g->h", "%", "-"),
    ("busy_h2g_pct", "host CPUs busy h->g", "%", "-"),
    ("notif_per_gb", "notifications per GB", "1/GB", "lower"),
    ("notif_g2h_per_gb", "  g->h: total", "1/GB", "lower"),
    ("db_g2h_per_gb", "  g->h: doorbells", "1/GB", "lower"),
    ("irq_g2h_per_gb", "  g->h: interrupts", "1/GB", "lower"),
    ("notif_h2g_per_gb", "  h->g: total", "1/GB", "lower"),
    ("db_h2g_per_gb", "  h->g: doorbells", "1/GB", "lower"),
    ("irq_h2g_per_gb", "  h->g: interrupts", "1/GB", "lower"),
    ("db_g2h_per_frame", "doorbells/frame g->h", "1/frame", "lower"),
    ("irq_g2h_per_frame", "interrupts/frame g->h", "1/frame", "lower"),
    ("db_h2g_per_frame", "doorbells/frame h->g", "1/frame", "lower"),
    ("irq_h2g_per_frame", "interrupts/frame h->g", "1/frame", "lower"),
]

# per-round figures whose median (and min..max) the report gives
ROUND_KEYS = ("tcp_g2h_gbps", "tcp_h2g_gbps", "cpu_g2h_s_per_gb", "cpu_h2g_s_per_gb",
              "cpu_g2h_qemu_s_per_gb", "cpu_g2h_hostd_s_per_gb",
              "cpu_h2g_qemu_s_per_gb", "cpu_h2g_hostd_s_per_gb",
              "busy_g2h_pct", "busy_h2g_pct",
              "wk_main_per_rtt", "wk_qemu_per_rtt", "wk_hostd_per_rtt", "wk_total_per_rtt",
              "notif_per_gb", "notif_g2h_per_gb", "db_g2h_per_gb", "irq_g2h_per_gb",
              "notif_h2g_per_gb", "db_h2g_per_gb", "irq_h2g_per_gb",
              "db_g2h_per_frame", "irq_g2h_per_frame",
              "db_h2g_per_frame", "irq_h2g_per_frame")


# --queues figures (nic_results keeps what the rounds have; main() lists them)
MQ_KEY = r"pps64_(g2h|h2g)_kpps|irq_(g2h|h2g)_cpu\d+_pct|rxq\d+_h2g_pct|txq\d+_g2h_pct"


def mq_figures(res):
    """FIGURES rows for the --queues keys any NIC has, in a stable order"""
    keys = {k for n in NICS for k in res[n] if re.fullmatch(MQ_KEY, k)}
    rows = []
    for d in ("g2h", "h2g"):
        if f"pps64_{d}_kpps" in keys:
            rows.append((f"pps64_{d}_kpps", f"64-byte frames {d[0]}->{d[2]}", "kpps", "higher"))
    for d in ("g2h", "h2g"):
        for k in sorted((k for k in keys if k.startswith(f"irq_{d}_cpu")),
                        key=lambda k: int(re.search(r"cpu(\d+)", k).group(1))):
            c = re.search(r"cpu(\d+)", k).group(1)
            rows.append((k, f"  {d[0]}->{d[2]} interrupts on CPU{c}", "%", "-"))
    for kind, d in (("txq", "g2h"), ("rxq", "h2g")):
        for k in sorted((k for k in keys if k.startswith(kind) and k.endswith(f"_{d}_pct")),
                        key=lambda k: int(re.search(r"q(\d+)_", k).group(1))):
            i = re.search(r"q(\d+)_", k).group(1)
            rows.append((k, f"  {d[0]}->{d[2]} frames on queue {i}", "%", "-"))
    return rows


def pct(sorted_v, p):
    """nearest-rank percentile of a sorted list"""
    if not sorted_v:
        return None
    k = max(1, min(len(sorted_v), int(p / 100.0 * len(sorted_v) + 0.999999)))
    return sorted_v[k - 1]


def median(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_meta(raw):
    meta = {}
    for line in (read(os.path.join(raw, "meta.env")) or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            meta[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return meta


def iperf_files(d, name):
    """iperf-NAME.json, then iperf-NAME.K.json of the processes run with it"""
    first = os.path.join(d, f"iperf-{name}.json")
    more = sorted(f for f in os.listdir(d) if re.fullmatch(rf"iperf-{re.escape(name)}\.\d+\.json", f)) \
        if os.path.isdir(d) else []
    return [first] + [os.path.join(d, f) for f in more]


def iperf_json(path):
    """(parsed iperf3 -J output, error) of one process"""
    txt = read(path)
    if not txt:
        return None, (read(path[:-len(".json")] + ".err") or "no output").strip()
    try:
        j = json.loads(txt)
    except ValueError:
        return None, "unparsable iperf3 output"
    if j.get("error"):
        return None, j["error"]
    return j, None


def iperf_round(d, name):
    """(Gbit/s, bytes, error) of one run: its iperf3 -J processes summed"""
    gbps = nbytes = 0
    for path in iperf_files(d, name):
        j, err = iperf_json(path)
        if err:
            return None, None, err
        try:
            s = j["end"]["sum_received"]
            gbps += s["bits_per_second"] / 1e9
            nbytes += s["bytes"]
        except (KeyError, TypeError):
            return None, None, "no end.sum_received in iperf3 output"
    return gbps, nbytes, None


def pps_round(d, name):
    """(frames/s the receivers got, error) of one run of iperf3 -u -J processes"""
    pps = 0
    for path in iperf_files(d, name):
        j, err = iperf_json(path)
        if err:
            return None, err
        e = j.get("end", {})
        # the receiver's view; its "packets" counts the lost ones too
        s = e.get("sum_received") or e.get("sum") or {}
        try:
            pps += (s["packets"] - s.get("lost_packets", 0)) / s["seconds"]
        except (KeyError, TypeError, ZeroDivisionError):
            return None, "no end.sum packets in iperf3 -u output"
    return pps, None


def cpu_round(d, name, nbytes):
    """{qemu, hostd} CPU seconds per GB (1e9 bytes) of one transfer"""
    txt = read(os.path.join(d, f"cpu-{name}.txt"))
    if not txt or not nbytes:
        return None
    f = txt.split()
    q, h, _wall, tck = f[:4]
    gb = nbytes / 1e9
    res = {"qemu": int(q) / int(tck) / gb, "hostd": int(h) / int(tck) / gb}
    if len(f) >= 6 and int(f[5]) > 0:
        res["busy_pct"] = 100.0 * int(f[4]) / int(f[5])
    return res


def parse_counters(txt):
    """one guest/counters.sh snapshot: {stat: {(nic, name): v}, irq: {name: v},
    irqcpu: {name: [per-CPU v]}, bridge: {name: v}}"""
    snap = {"stat": {}, "irq": {}, "irqcpu": {}, "bridge": {}, "nic": {}}
    for line in (txt or "").splitlines():
        f = line.split()
        if len(f) == 4 and f[0] == "NIC":
            snap["nic"][f[1]] = f[3]
        elif len(f) == 4 and f[0] == "STAT" and re.fullmatch(r"\d+", f[3]):
            snap["stat"][(f[1], f[2])] = int(f[3])
        elif len(f) == 3 and f[0] == "BRIDGE" and re.fullmatch(r"\d+", f[2]):
            snap["bridge"][f[1]] = int(f[2])
        elif len(f) >= 3 and f[0] == "IRQ" and f[1].endswith(":"):
            # " 24:  N0  N1 ... chip ... name": the per-CPU counts, then text
            counts = []
            for x in f[2:]:
                if not re.fullmatch(r"\d+", x):
                    break
                counts.append(int(x))
            snap["irq"][f"{f[1]}{f[-1]}"] = sum(counts)
            snap["irqcpu"][f"{f[1]}{f[-1]}"] = counts
    return snap


def spread_round(nic, s0, s1, name, one):
    """--queues: the run's interrupts per guest CPU and frames per queue, in
    % of the run's, into @one"""
    if not s1["nic"] or nic not in s1["nic"]:
        return
    prefix = s1["nic"][nic]
    cpus = []
    for k, v in s1["irqcpu"].items():
        if not k.split(":", 1)[1].startswith(prefix):
            continue
        old = s0["irqcpu"].get(k, [0] * len(v))
        for c, x in enumerate(v):
            if c >= len(cpus):
                cpus.append(0)
            cpus[c] += x - (old[c] if c < len(old) else 0)
    if sum(cpus) > 0:
        for c, x in enumerate(cpus):
            one[f"irq_{name}_cpu{c}_pct"] = 100.0 * x / sum(cpus)
    kind = "rx" if name == "h2g" else "tx"
    per_q = {}
    for (n, stat), v in s1["stat"].items():
        m = re.fullmatch(kind + r"_queue_(\d+)_packets", stat)
        if n == nic and m:
            per_q[int(m.group(1))] = v - s0["stat"].get((n, stat), 0)
    total = sum(per_q.values())
    if total > 0:
        for i, v in per_q.items():
            one[f"{kind}q{i}_{name}_pct"] = 100.0 * v / total


def notifications(nic, s0, s1):
    """(doorbells, interrupts, data frames tx, data frames rx) between two
    snapshots, or None when a snapshot is missing"""
    if not s0["nic"] or not s1["nic"] or nic not in s1["nic"]:
        return None
    prefix = s1["nic"][nic]

    def dstat(pred):
        return sum(v - s0["stat"].get(k, 0) for k, v in s1["stat"].items()
                   if k[0] == nic and pred(k[1]))

    irqs = sum(v - s0["irq"].get(k, 0) for k, v in s1["irq"].items()
               if k.split(":", 1)[1].startswith(prefix))
    if nic == "virtio":
        db = dstat(lambda n: re.fullmatch(r"[rt]x_queue_\d+_kicks", n) is not None)
        tx = dstat(lambda n: re.fullmatch(r"tx_queue_\d+_packets", n) is not None)
        rx = dstat(lambda n: re.fullmatch(r"rx_queue_\d+_packets", n) is not None)
    else:
        if "doorbells" not in s0["bridge"] or "doorbells" not in s1["bridge"]:
            return None
        db = s1["bridge"]["doorbells"] - s0["bridge"]["doorbells"]
        tx = dstat(lambda n: n == "tx_packets")
        rx = dstat(lambda n: n == "rx_packets")
    return db, irqs, tx, rx


def notif_round(d, nic, name, nbytes, one):
    """doorbells/interrupts per GB and per frame of one iperf3 run into @one"""
    s0 = parse_counters(read(os.path.join(d, f"guest-{name}-0.txt")))
    s1 = parse_counters(read(os.path.join(d, f"guest-{name}-1.txt")))
    n = notifications(nic, s0, s1)
    if n is None or not nbytes:
        return None
    db, irq, tx, rx = n
    spread_round(nic, s0, s1, name, one)
    gb = nbytes / 1e9
    frames = tx if name == "g2h" else rx
    one[f"db_{name}"], one[f"irq_{name}"] = db, irq
    one[f"frames_{name}"] = frames
    one[f"db_{name}_per_gb"] = db / gb
    one[f"irq_{name}_per_gb"] = irq / gb
    one[f"notif_{name}_per_gb"] = (db + irq) / gb
    if frames:
        one[f"db_{name}_per_frame"] = db / frames
        one[f"irq_{name}_per_frame"] = irq / frames
    if nic == "venet":
        # where they come from: the rings' own crossings (before the
        # bridge merges them) and the host's signals per ring
        keys = ("tx_signals_sent", "rx_signals_sent", "tx_signals_recv",
                "rx_signals_recv", "tx_kicks", "rx_refill_kicks", "rx_polls",
                "tx_packets", "rx_packets")
        one[f"venet_{name}"] = {k: s1["stat"].get(("venet", k), 0) - s0["stat"].get(("venet", k), 0)
                                for k in keys}
        one[f"venet_{name}"]["bridge"] = {k: v - s0["bridge"].get(k, 0)
                                          for k, v in s1["bridge"].items()}
        hd = hostd_counters(d, name)
        if hd:
            one[f"venet_{name}"]["hostd"] = hd
    return True


def find_key(j, key):
    """the first dict in @j (depth-first) holding @key"""
    if isinstance(j, dict):
        if key in j:
            return j
        j = list(j.values())
    if isinstance(j, list):
        for x in j:
            r = find_key(x, key)
            if r is not None:
                return r
    return None


def hostd_counters(d, name):
    """the venet device's host-side signal counters over one run"""
    snaps = []
    for k in (0, 1):
        txt = read(os.path.join(d, f"stats-{name}-{k}.json")) or ""
        try:
            j = json.loads(txt[txt.index("{"):])
        except ValueError:
            return None
        snaps.append(find_key(j, "rx_signals_sent"))
    if None in snaps:
        return None
    keys = ("rx_notify_in", "tx_notify_in", "rx_notify_out", "tx_notify_out",
            "rx_signals_sent", "tx_signals_sent", "kicks", "rx_starved")
    return {k: snaps[1].get(k, 0) - snaps[0].get(k, 0) for k in keys if k in snaps[1]}


def ping_samples(d):
    txt = read(os.path.join(d, "ping.txt")) or ""
    sent = re.search(r"(\d+) packets transmitted, (\d+) (?:packets )?received", txt)
    return ([float(m) * 1000.0 for m in re.findall(r"time=([\d.]+) ms", txt)],
            (int(sent.group(1)), int(sent.group(2))) if sent else None)


def rr_samples(d, name="rr"):
    txt = read(os.path.join(d, f"{name}.txt")) or ""
    return [float(x) for x in txt.split()]


def wakeups_round(d, rtts):
    """host thread wakeups per round trip, by thread, of one RR run
    (wake.txt: "qemu_pid PID", then "N comm=NAME pid=TID" lines)"""
    txt = read(os.path.join(d, "wake.txt"))
    if not txt or not rtts:
        return {}
    qemu_pid, n = None, {"main": 0, "qemu": 0, "hostd": 0, "total": 0}
    for line in txt.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "qemu_pid":
            qemu_pid = f[1]
        elif len(f) == 3 and f[0].isdigit():
            c, comm, tid = int(f[0]), f[1][5:], f[2][4:]
            n["total"] += c
            if tid == qemu_pid:
                n["main"] += c
            elif comm.startswith("qemu-system"):
                n["qemu"] += c
            elif comm == "vbus-hostd":
                n["hostd"] += c
    return {f"wk_{k}_per_rtt": v / rtts for k, v in n.items()}


def throughput_round(d, nic, where, one, errors):
    """the throughput runs in @d (TCP with its CPU and notifications, the
    64-byte frames) into @one; what failed into @errors, said @where"""
    for name in ("g2h", "h2g"):
        gbps, nbytes, err = iperf_round(d, name)
        one[f"tcp_{name}_gbps"] = gbps
        one[f"tcp_{name}_bytes"] = nbytes
        if err:
            errors.append(f"{where} iperf3 {name}: {err}")
        notif_round(d, nic, name, nbytes, one)
        cpu = cpu_round(d, name, nbytes)
        if cpu:
            one[f"cpu_{name}_qemu_s_per_gb"] = cpu["qemu"]
            one[f"cpu_{name}_hostd_s_per_gb"] = cpu["hostd"]
            # the host cost of the NIC: QEMU, plus vbus-hostd for venet
            # (for virtio-net the daemon is not in the path; its figure
            # is reported apart as idle overhead)
            one[f"cpu_{name}_s_per_gb"] = cpu["qemu"] + (cpu["hostd"] if nic == "venet" else 0)
            if "busy_pct" in cpu:
                one[f"busy_{name}_pct"] = cpu["busy_pct"]
    for name in ("p64g2h", "p64h2g"):
        if not os.path.exists(os.path.join(d, f"iperf-{name}.json")):
            continue
        pps, err = pps_round(d, name)
        if err:
            errors.append(f"{where} iperf3 -u {name}: {err}")
        elif pps is not None:
            one[f"pps64_{name[3:]}_kpps"] = pps / 1e3
    if "db_g2h" in one and "db_h2g" in one:
        gb = (one["tcp_g2h_bytes"] + one["tcp_h2g_bytes"]) / 1e9
        one["notif_per_gb"] = (one["db_g2h"] + one["irq_g2h"] +
                               one["db_h2g"] + one["irq_h2g"]) / gb


def nic_results(raw, nic, rounds):
    st = (read(os.path.join(raw, nic, "status")) or "unavailable not measured").strip()
    res = {"available": st.startswith("up")}
    if not res["available"]:
        res["reason"] = st[len("unavailable"):].strip() or "unknown"
        return res
    res["iface"] = st.split()[1] if len(st.split()) > 1 else None
    per_round, icmp, rr, rrbp, errors = [], [], [], [], []
    for r in range(1, rounds + 1):
        d = os.path.join(raw, nic, f"r{r}")
        if not os.path.isdir(d):
            continue
        one = {"round": r}
        throughput_round(d, nic, f"round {r}", one, errors)
        s, counts = ping_samples(d)
        icmp += s
        if counts:
            one["icmp_sent"], one["icmp_received"] = counts
        rs = rr_samples(d)
        if not rs:
            errors.append(f"round {r} tcprr: {(read(os.path.join(d, 'rr.out')) or '').strip()}")
        rr += rs
        # tcprr adds 50 warm-up round trips to the ones it reports
        one.update(wakeups_round(d, len(rs) + 50 if rs else 0))
        # the busy-polled run: only when the bench asked for one
        bs = rr_samples(d, "rr-busy")
        if not bs and os.path.exists(os.path.join(d, "rr-busy.out")):
            errors.append(f"round {r} tcprr -B: {(read(os.path.join(d, 'rr-busy.out')) or '').strip()}")
        rrbp += bs
        # per-round percentiles: only for the spread (the figure pools)
        for tag, v in (("icmp", sorted(s)), ("rr", sorted(rs)), ("rrbp", sorted(bs))):
            one[f"{tag}_p50_us"], one[f"{tag}_p99_us"] = pct(v, 50), pct(v, 99)
        per_round.append(one)
    spread = {}
    extra = sorted({k for o in per_round for k in o if re.fullmatch(MQ_KEY, k)})
    for key in ROUND_KEYS + tuple(extra) + ("rr_p50_us", "rr_p99_us", "rrbp_p50_us", "rrbp_p99_us",
                             "icmp_p50_us", "icmp_p99_us"):
        v = [o.get(key) for o in per_round if o.get(key) is not None]
        if key in ROUND_KEYS or key in extra:
            res[key] = median(v)
        if v:
            spread[key] = [min(v), max(v)]
    res["spread"] = spread
    icmp.sort()
    rr.sort()
    rrbp.sort()
    res.update({
        "icmp_p50_us": pct(icmp, 50), "icmp_p99_us": pct(icmp, 99),
        "icmp_samples": len(icmp),
        "rr_p50_us": pct(rr, 50), "rr_p99_us": pct(rr, 99),
        "rr_min_us": rr[0] if rr else None, "rr_max_us": rr[-1] if rr else None,
        "rr_samples": len(rr),
        "rrbp_p50_us": pct(rrbp, 50), "rrbp_p99_us": pct(rrbp, 99),
        "rrbp_samples": len(rrbp),
        "rounds": per_round,
    })
    if errors:
        res["errors"] = errors
    return res


# --compare-queues: the figures given per NIC at 1 and at N active pairs
QCMP_KEYS = ("tcp_g2h_gbps", "tcp_h2g_gbps", "pps64_g2h_kpps", "pps64_h2g_kpps",
             "notif_per_gb", "cpu_g2h_s_per_gb", "cpu_h2g_s_per_gb")


def queue_compare(raw, nic, res, rounds, n):
    """--compare-queues: @nic's QCMP_KEYS at 1 active pair (NIC/rR/q1) and
    at @n (the round's own runs, @res["rounds"]) per round, the ratio n/1
    within each round, then the median and min..max of each over rounds"""
    if not res["available"]:
        return None
    hi = f"at_{n}"
    per_round, errors = [], []
    at_n = {o["round"]: o for o in res["rounds"]}
    for r in range(1, rounds + 1):
        d = os.path.join(raw, nic, f"r{r}", "q1")
        if not os.path.isdir(d):
            errors.append(f"round {r}: no runs at 1 pair (ethtool -L failed?)")
            continue
        if r not in at_n:
            errors.append(f"round {r}: no runs at {n} pairs")
        one = {}
        throughput_round(d, nic, f"round {r}, 1 pair", one, errors)
        row = {"round": r, "at_1": {}, hi: {}, "ratio": {}}
        # the shares (interrupts per CPU, frames per queue) show the counts
        # took effect: side by side, no ratio
        shares = {k for o in (one, at_n.get(r, {})) for k in o
                  if re.fullmatch(MQ_KEY, k) and not k.startswith("pps")}
        for key in QCMP_KEYS + tuple(sorted(shares)):
            a, b = one.get(key), at_n.get(r, {}).get(key)
            row["at_1"][key], row[hi][key] = a, b
            if key in QCMP_KEYS:
                row["ratio"][key] = b / a if a and b is not None else None
        per_round.append(row)
    out = {"pairs": [1, n], "spread": {}, "rounds": per_round}
    for col in ("at_1", hi, "ratio"):
        out[col], out["spread"][col] = {}, {}
        for key in sorted({k for row in per_round for k in row[col]},
                          key=lambda k: (k not in QCMP_KEYS, k)):
            v = [row[col].get(key) for row in per_round if row[col].get(key) is not None]
            out[col][key] = median(v)
            if v:
                out["spread"][col][key] = [min(v), max(v)]
    if errors:
        out["errors"] = errors
    return out


def print_queue_compare(meta, qc, figures):
    """the --compare-queues table: per figure and NIC, 1 pair | N pairs | N/1"""
    n = int(meta["queues"])
    hi = f"at_{n}"
    label = {k: (lbl, u) for k, lbl, u, _ in figures}
    label.setdefault("pps64_g2h_kpps", ("64-byte frames g->h", "kpps"))
    label.setdefault("pps64_h2g_kpps", ("64-byte frames h->g", "kpps"))
    print(f"\n1 vs {n} active queue pairs, same run and boot (ethtool -L on both NICs in "
          f"the guest; iperf3 -P {meta.get('streams')} over {meta.get('procs', 1)} "
          "process(es) at both counts): median of the rounds; "
          f"{n}/1 per round, then its median")
    for nic in NICS:
        for e in (qc.get(nic) or {}).get("errors", []):
            print(f"{nic}: {e}")
    print(f"{'figure':<28} {'unit':>7} {'NIC':>7} {'1 pair':>10} {f'{n} pairs':>10} "
          f"{f'{n}/1':>7}  rounds: 1 pair; {n} pairs; {n}/1 min..max")
    shares = [k for k, *_ in figures if re.fullmatch(MQ_KEY, k) and not k.startswith("pps")]
    for key in list(QCMP_KEYS) + shares:
        lbl, unit = label[key]
        for nic in NICS:
            c = qc.get(nic)
            if not c or all(c[col].get(key) is None for col in ("at_1", hi)):
                continue
            spread = "; ".join("..".join(fmt(x) for x in c["spread"][col].get(key, [])) or "-"
                               for col in ("at_1", hi, "ratio"))
            r = c["ratio"].get(key)
            print(f"{lbl.strip():<28} {unit:>7} {nic:>7} {fmt(c['at_1'].get(key)):>10} "
                  f"{fmt(c[hi].get(key)):>10} {('-' if r is None else f'{r:.2f}'):>7}  {spread}")


def fmt(v):
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


PANELS = [
    ("TCP throughput, Gbit/s (higher is better)",
     [("guest->host", "tcp_g2h_gbps"), ("host->guest", "tcp_h2g_gbps")]),
    ("latency p50, us (lower is better)",
     [("TCP RR", "rr_p50_us"), ("RR busy poll", "rrbp_p50_us"), ("ICMP", "icmp_p50_us")]),
    ("latency p99, us (lower is better)",
     [("TCP RR", "rr_p99_us"), ("RR busy poll", "rrbp_p99_us"), ("ICMP", "icmp_p99_us")]),
    ("notifications per GB (lower is better)",
     [("g->h doorbells", "db_g2h_per_gb"), ("g->h irqs", "irq_g2h_per_gb"),
      ("h->g doorbells", "db_h2g_per_gb"), ("h->g irqs", "irq_h2g_per_gb"),
      ("all", "notif_per_gb")]),
    ("host CPU s per GB (lower is better)",
     [("guest->host", "cpu_g2h_s_per_gb"), ("host->guest", "cpu_h2g_s_per_gb")]),
    ("notifications per data frame (lower is better)",
     [("g->h doorbells", "db_g2h_per_frame"), ("g->h irqs", "irq_g2h_per_frame"),
      ("h->g doorbells", "db_h2g_per_frame"), ("h->g irqs", "irq_h2g_per_frame")]),
]


def gp_str(t):
    return '"' + str(t).replace("\\", "\\\\").replace('"', '\\"') + '"'


COLORS = {"venet": "#1f77b4", "virtio": "#ff7f0e", "ipc": "#2ca02c"}
GREY = "#7f7f7f"


def plot_gnuplot(out, meta, res, ratio, png, series=NICS, panels=None,
                 title="vbus venet vs virtio-net", ratio_name="venet/virtio",
                 bars="median of the rounds (latency: all samples)"):
    """one panel per PANELS entry (or @panels): a bar per NIC (@series)
    with its value on top, whiskers from the lowest to the highest round,
    the @ratio (venet/virtio) above each group; bench/ipc_report.py
    passes its own series, panels and title"""
    panels = PANELS if panels is None else panels
    avail = [n for n in series if res[n]["available"]]
    pdir = os.path.join(out, "plot")
    os.makedirs(pdir, exist_ok=True)
    k = len(avail)
    w = 0.8 / max(1, k)
    head = (f"{title} (accel={meta.get('accel')}, {meta.get('smp')} vCPUs, "
            f"{meta.get('rounds')} round(s), {meta.get('date')}); bars: {bars}, "
            "whiskers: lowest..highest round, "
            f"above a group: {ratio_name}")
    lines = [
        'set terminal pngcairo size 1800,1000 font ",10"',
        f"set output '{png}'",
        "set style fill solid 0.85 border -1",
        "set grid ytics",
        "set key top right",
        "set xtics scale 0",
        "set offsets 0, 0, 0, 0",
        f"set multiplot layout 2,3 title {gp_str(head)}",
    ]
    for pi, (ptitle, rows) in enumerate(panels):
        dat = os.path.join(pdir, f"panel{pi}.dat")
        top = 0.0
        with open(dat, "w", encoding="utf-8") as f:
            for i, n in enumerate(avail):
                f.write(f"# {n}\n")
                for j, (_label, key) in enumerate(rows):
                    v = res[n].get(key)
                    if v is None:
                        continue
                    lo, hi = res[n].get("spread", {}).get(key, [v, v])
                    x = j + (i - (k - 1) / 2) * w
                    top = max(top, v, hi)
                    f.write(f"{x} {v} {min(lo, v)} {max(hi, v)} {w * 0.95} {gp_str(fmt(v))}\n")
                f.write("\n\n")
            f.write("# ratios\n")
            nratio = 0
            for j, (_label, key) in enumerate(rows):
                r = ratio.get(key)
                if r is None or k < 2:
                    continue
                hi = max(max(res[n].get("spread", {}).get(key, [0, res[n].get(key) or 0]))
                         for n in avail)
                hi = max(hi, *(res[n].get(key) or 0 for n in avail))
                f.write(f"{j} {hi} {gp_str(f'{r:.2f}x')}\n")
                nratio += 1
            if not nratio:
                f.write("-10 0 \"\"\n")
        xt = ", ".join(f"{gp_str(label)} {j}" for j, (label, _) in enumerate(rows))
        lines += [
            f"set title {gp_str(ptitle)}",
            f"set xtics ({xt})",
            f"set xrange [-0.6:{len(rows) - 0.4}]",
            f"set yrange [0:{top * 1.3 if top > 0 else 1}]",
        ]
        plots = []
        for i, n in enumerate(avail):
            plots += [
                f"'{dat}' index {i} using 1:2:5 with boxes lc rgb '{COLORS.get(n, GREY)}' title '{n}'",
                f"'' index {i} using 1:2:3:4 with yerrorbars lc rgb 'black' pt -1 notitle",
                f"'' index {i} using 1:4:6 with labels offset 0,0.8 font ',9' notitle",
            ]
        plots.append(f"'' index {len(avail)} using 1:2:3 with labels offset 0,2.5 "
                     "font ',10,Bold' tc rgb '#006400' notitle")
        lines.append("plot " + ", \\\n    ".join(plots))
    lines.append("unset multiplot")
    gp = os.path.join(pdir, "results.gp")
    with open(gp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        print(f"report: gnuplot failed: {r.stderr.strip()}", file=sys.stderr)
        return False
    return True


def plot_matplotlib(meta, res, png):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    avail = [n for n in NICS if res[n]["available"]]
    panels = PANELS
    fig, axes = plt.subplots(2, 3, figsize=(18, 10))
    w = 0.8 / max(1, len(avail))
    for ax, (title, rows) in zip(axes.flat, panels):
        for i, n in enumerate(avail):
            vals = [res[n].get(k) for _, k in rows]
            bars = ax.bar([j + i * w for j in range(len(rows))],
                          [v or 0 for v in vals], w, label=n)
            ax.bar_label(bars, labels=[fmt(v) for v in vals], fontsize=8)
        ax.set_xticks([j + w * (len(avail) - 1) / 2 for j in range(len(rows))])
        ax.set_xticklabels([lbl for lbl, _ in rows])
        ax.set_title(title)
        ax.legend()
    fig.suptitle(f"vbus venet vs virtio-net (accel={meta.get('accel')})")
    fig.savefig(png, dpi=100)
    return True


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    raw, out = sys.argv[1], sys.argv[2]
    meta = read_meta(raw)
    rounds = int(meta.get("rounds", 1))
    res = {n: nic_results(raw, n, rounds) for n in NICS}
    hs = read(os.path.join(raw, "hostd-stats.json"))
    if hs and res["venet"]["available"]:
        try:
            res["venet"]["hostd_stats"] = json.loads(hs)
        except ValueError:
            res["venet"]["hostd_stats_text"] = hs
    figures = FIGURES + mq_figures(res)
    ratio = {}
    for key, *_ in figures:
        a, b = res["venet"].get(key), res["virtio"].get(key)
        # vbus-hostd is not in virtio-net's path: its figure there is idle noise
        ratio[key] = a / b if a is not None and b and "hostd" not in key else None
        if re.fullmatch(MQ_KEY, key) and "pps" not in key:
            ratio[key] = None  # shares: side by side, no ratio

    doc = {
        "meta": meta,
        "figures": {k: {"label": lbl.strip(), "unit": u, "better": b} for k, lbl, u, b in figures},
        "venet": res["venet"],
        "virtio": res["virtio"],
        "ratio_venet_over_virtio": ratio,
    }
    qc = None
    if int(meta.get("compare_queues", 0) or 0) and int(meta.get("queues", 0) or 0) >= 2:
        qc = {n: queue_compare(raw, n, res[n], rounds, int(meta["queues"])) for n in NICS}
        doc["queue_compare"] = qc
    os.makedirs(out, exist_ok=True)
    jpath = os.path.join(out, "results.json")
    with open(jpath, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    print(f"\nvenet vs virtio-net: accel={meta.get('accel')} cpu={meta.get('cpu')} "
          f"vCPUs={meta.get('smp')} RAM={meta.get('mem')} kernel={meta.get('kernel')}; "
          f"iperf3 -P {meta.get('streams')} -t {meta.get('time_s')} over "
          f"{meta.get('procs', 1)} process(es), {meta.get('rounds')} round(s); "
          f"host {meta.get('host_cpus')} CPUs, before the run: load "
          f"{meta.get('host_loadavg_before', meta.get('host_loadavg'))}, "
          f"{meta.get('host_busy_before_pct', '?')}% busy; RR busy poll "
          f"{meta.get('rr_busy_poll_us', 0)} us (SO_BUSY_POLL on the guest's socket, both NICs)"
          + (f"; {meta.get('queues')} queue pair(s) per NIC, {meta.get('vectors')} MSI-X vectors"
             if int(meta.get("queues", 0) or 0) else ""))
    for n in NICS:
        if not res[n]["available"] and res[n]["reason"] != "not requested":
            print(f"{n}: unavailable ({res[n]['reason']})")
        for e in res[n].get("errors", []):
            print(f"{n}: {e}")
    # columns: the NICs that were asked for (a one-NIC run shows one column)
    cols = [n for n in NICS if res[n].get("reason") != "not requested"] or list(NICS)
    both = len(cols) == 2
    print(f"{'figure':<28} {'unit':>7} " + " ".join(f"{n:>10}" for n in cols)
          + (f" {'venet/virtio':>13}" if both else "") + "  better  rounds: "
          + "; ".join(f"{n} min..max" for n in cols))
    for key, label, unit, better in figures:
        if "hostd" in key and cols == ["virtio"]:
            continue
        if key.startswith("rrbp_") and not meta.get("rr_busy_poll_us"):
            continue
        if key.startswith("wk_") and not meta.get("wakeups"):
            continue
        r = ratio[key]
        spread = "; ".join("..".join(fmt(x) for x in res[n].get("spread", {}).get(key, []))
                           or "-" for n in cols)
        print(f"{label:<28} {unit:>7} " + " ".join(f"{fmt(res[n].get(key)):>10}" for n in cols)
              + (f" {('-' if r is None else f'{r:.2f}'):>13}" if both else "")
              + f"  {better:<6}  {spread}")
    if both and str(meta.get("accel", "")).startswith("tcg"):
        print("(TCG: only the venet/virtio ratios mean something; absolute figures need hardware KVM)")
    if qc:
        print_queue_compare(meta, qc, figures)
        if str(meta.get("accel", "")).startswith("tcg"):
            print("(TCG, 2 vCPUs: only the ratios mean something; absolute figures need hardware KVM)")
    print(f"results: {jpath}")

    png = os.path.join(out, "results.png")
    done = False
    if not any(res[n]["available"] for n in NICS):
        print("report: no plot (no NIC was measured)", file=sys.stderr)
        done = None
    elif shutil.which("gnuplot"):
        done = plot_gnuplot(out, meta, res, ratio, png)
    if done is False:
        try:
            done = plot_matplotlib(meta, res, png)
        except ImportError:
            print("report: no plot (install gnuplot-nox or python3-matplotlib)", file=sys.stderr)
    if done:
        print(f"plot:    {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
