#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Report of bench/venet-vs-virtio.sh: reads the raw measurements and
prints the venet | virtio | venet/virtio table, writes results.json and
results.png (gnuplot, else matplotlib, else no plot).

    report.py RAWDIR OUTDIR

RAWDIR holds meta.env, NIC/status ("up IFNAME" | "unavailable REASON") and
NIC/rK/{ping.txt, rr.txt, iperf-h2g.json, iperf-g2h.json, cpu-h2g.txt,
cpu-g2h.txt} per round K (cpu-*.txt: "qemu_ticks hostd_ticks wall_s
clk_tck"). Figures over several rounds: the median of the rounds for
throughput and CPU; latency percentiles over all samples pooled. Only the
Python standard library is used. Never judges a speed.
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
    ("icmp_p50_us", "ICMP RTT p50", "us", "lower"),
    ("icmp_p99_us", "ICMP RTT p99", "us", "lower"),
    ("cpu_g2h_s_per_gb", "host CPU guest->host", "s/GB", "lower"),
    ("cpu_h2g_s_per_gb", "host CPU host->guest", "s/GB", "lower"),
    ("cpu_g2h_qemu_s_per_gb", "  g->h: QEMU", "s/GB", "lower"),
    ("cpu_g2h_hostd_s_per_gb", "  g->h: vbus-hostd", "s/GB", "lower"),
    ("cpu_h2g_qemu_s_per_gb", "  h->g: QEMU", "s/GB", "lower"),
    ("cpu_h2g_hostd_s_per_gb", "  h->g: vbus-hostd", "s/GB", "lower"),
]


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


def iperf_round(d, name):
    """(Gbit/s, bytes, error) of one iperf3 -J run"""
    txt = read(os.path.join(d, f"iperf-{name}.json"))
    if not txt:
        return None, None, (read(os.path.join(d, f"iperf-{name}.err")) or "no output").strip()
    try:
        j = json.loads(txt)
    except ValueError:
        return None, None, "unparsable iperf3 output"
    if j.get("error"):
        return None, None, j["error"]
    try:
        s = j["end"]["sum_received"]
        return s["bits_per_second"] / 1e9, s["bytes"], None
    except (KeyError, TypeError):
        return None, None, "no end.sum_received in iperf3 output"


def cpu_round(d, name, nbytes):
    """{qemu, hostd} CPU seconds per GB (1e9 bytes) of one transfer"""
    txt = read(os.path.join(d, f"cpu-{name}.txt"))
    if not txt or not nbytes:
        return None
    q, h, _wall, tck = txt.split()[:4]
    gb = nbytes / 1e9
    return {"qemu": int(q) / int(tck) / gb, "hostd": int(h) / int(tck) / gb}


def ping_samples(d):
    txt = read(os.path.join(d, "ping.txt")) or ""
    sent = re.search(r"(\d+) packets transmitted, (\d+) (?:packets )?received", txt)
    return ([float(m) * 1000.0 for m in re.findall(r"time=([\d.]+) ms", txt)],
            (int(sent.group(1)), int(sent.group(2))) if sent else None)


def rr_samples(d):
    txt = read(os.path.join(d, "rr.txt")) or ""
    return [float(x) for x in txt.split()]


def nic_results(raw, nic, rounds):
    st = (read(os.path.join(raw, nic, "status")) or "unavailable not measured").strip()
    res = {"available": st.startswith("up")}
    if not res["available"]:
        res["reason"] = st[len("unavailable"):].strip() or "unknown"
        return res
    res["iface"] = st.split()[1] if len(st.split()) > 1 else None
    per_round, icmp, rr, errors = [], [], [], []
    for r in range(1, rounds + 1):
        d = os.path.join(raw, nic, f"r{r}")
        if not os.path.isdir(d):
            continue
        one = {"round": r}
        for name in ("g2h", "h2g"):
            gbps, nbytes, err = iperf_round(d, name)
            one[f"tcp_{name}_gbps"] = gbps
            one[f"tcp_{name}_bytes"] = nbytes
            if err:
                errors.append(f"round {r} iperf3 {name}: {err}")
            cpu = cpu_round(d, name, nbytes)
            if cpu:
                one[f"cpu_{name}_qemu_s_per_gb"] = cpu["qemu"]
                one[f"cpu_{name}_hostd_s_per_gb"] = cpu["hostd"]
                # the host cost of the NIC: QEMU, plus vbus-hostd for venet
                # (for virtio-net the daemon is not in the path; its figure
                # is reported apart as idle overhead)
                one[f"cpu_{name}_s_per_gb"] = cpu["qemu"] + (cpu["hostd"] if nic == "venet" else 0)
        s, counts = ping_samples(d)
        icmp += s
        if counts:
            one["icmp_sent"], one["icmp_received"] = counts
        rs = rr_samples(d)
        if not rs:
            errors.append(f"round {r} tcprr: {(read(os.path.join(d, 'rr.out')) or '').strip()}")
        rr += rs
        per_round.append(one)
    for key in ("tcp_g2h_gbps", "tcp_h2g_gbps", "cpu_g2h_s_per_gb", "cpu_h2g_s_per_gb",
                "cpu_g2h_qemu_s_per_gb", "cpu_g2h_hostd_s_per_gb",
                "cpu_h2g_qemu_s_per_gb", "cpu_h2g_hostd_s_per_gb"):
        res[key] = median([o.get(key) for o in per_round])
    icmp.sort()
    rr.sort()
    res.update({
        "icmp_p50_us": pct(icmp, 50), "icmp_p99_us": pct(icmp, 99),
        "icmp_samples": len(icmp),
        "rr_p50_us": pct(rr, 50), "rr_p99_us": pct(rr, 99),
        "rr_min_us": rr[0] if rr else None, "rr_max_us": rr[-1] if rr else None,
        "rr_samples": len(rr),
        "rounds": per_round,
    })
    if errors:
        res["errors"] = errors
    return res


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


def plot_gnuplot(out, meta, res, png):
    avail = [n for n in NICS if res[n]["available"]]
    pdir = os.path.join(out, "plot")
    os.makedirs(pdir, exist_ok=True)
    panels = [
        ("tput", "TCP throughput, Gbit/s (higher is better)",
         [("guest->host", "tcp_g2h_gbps"), ("host->guest", "tcp_h2g_gbps")]),
        ("lat", "round-trip latency, us (lower is better)",
         [("TCP RR p50", "rr_p50_us"), ("TCP RR p99", "rr_p99_us"),
          ("ICMP p50", "icmp_p50_us"), ("ICMP p99", "icmp_p99_us")]),
        ("cpu", "host CPU s per GB (lower is better)",
         [("guest->host", "cpu_g2h_s_per_gb"), ("host->guest", "cpu_h2g_s_per_gb")]),
    ]
    lines = [
        'set terminal pngcairo size 1500,520 font ",10"',
        f"set output '{png}'",
        'set datafile missing "?"',
        "set style data histograms",
        "set style histogram clustered gap 1",
        "set style fill solid 0.85 border -1",
        "set boxwidth 0.9",
        "set yrange [0:*]",
        "set grid ytics",
        "set key top right",
        f'set multiplot layout 1,3 title "vbus venet vs virtio-net (accel={meta.get("accel")}, '
        f'{meta.get("smp")} vCPUs, {meta.get("rounds")} round(s), {meta.get("date")})"',
    ]
    colors = {"venet": "#1f77b4", "virtio": "#ff7f0e"}
    for name, title, rows in panels:
        dat = os.path.join(pdir, f"{name}.dat")
        with open(dat, "w", encoding="utf-8") as f:
            f.write("# label " + " ".join(avail) + "\n")
            for label, key in rows:
                vals = [res[n].get(key) for n in avail]
                f.write(f'"{label}" ' + " ".join("?" if v is None else repr(v) for v in vals) + "\n")
        lines.append(f'set title "{title}"')
        plots = []
        for i, n in enumerate(avail):
            col = f"{i + 2}:xtic(1)" if i == 0 else f"{i + 2}"
            src = f"'{dat}'" if i == 0 else "''"
            plots.append(f"{src} using {col} title '{n}' lc rgb '{colors[n]}'")
        lines.append("plot " + ", ".join(plots))
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
    panels = [
        ("TCP throughput, Gbit/s", [("g->h", "tcp_g2h_gbps"), ("h->g", "tcp_h2g_gbps")]),
        ("latency, us", [("RR p50", "rr_p50_us"), ("RR p99", "rr_p99_us"),
                         ("ICMP p50", "icmp_p50_us"), ("ICMP p99", "icmp_p99_us")]),
        ("host CPU s/GB", [("g->h", "cpu_g2h_s_per_gb"), ("h->g", "cpu_h2g_s_per_gb")]),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    w = 0.8 / max(1, len(avail))
    for ax, (title, rows) in zip(axes, panels):
        for i, n in enumerate(avail):
            ax.bar([j + i * w for j in range(len(rows))],
                   [res[n].get(k) or 0 for _, k in rows], w, label=n)
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
    ratio = {}
    for key, *_ in FIGURES:
        a, b = res["venet"].get(key), res["virtio"].get(key)
        ratio[key] = a / b if a is not None and b else None

    doc = {
        "meta": meta,
        "figures": {k: {"label": lbl.strip(), "unit": u, "better": b} for k, lbl, u, b in FIGURES},
        "venet": res["venet"],
        "virtio": res["virtio"],
        "ratio_venet_over_virtio": ratio,
    }
    os.makedirs(out, exist_ok=True)
    jpath = os.path.join(out, "results.json")
    with open(jpath, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    print(f"\nvenet vs virtio-net: accel={meta.get('accel')} cpu={meta.get('cpu')} "
          f"vCPUs={meta.get('smp')} RAM={meta.get('mem')} kernel={meta.get('kernel')}; "
          f"iperf3 -P {meta.get('streams')} -t {meta.get('time_s')}, {meta.get('rounds')} round(s); "
          f"host {meta.get('host_cpus')} CPUs, load {meta.get('host_loadavg')}")
    for n in NICS:
        if not res[n]["available"] and res[n]["reason"] != "not requested":
            print(f"{n}: unavailable ({res[n]['reason']})")
        for e in res[n].get("errors", []):
            print(f"{n}: {e}")
    # columns: the NICs that were asked for (a one-NIC run shows one column)
    cols = [n for n in NICS if res[n].get("reason") != "not requested"] or list(NICS)
    both = len(cols) == 2
    print(f"{'figure':<28} {'unit':>7} " + " ".join(f"{n:>10}" for n in cols)
          + (f" {'venet/virtio':>13}" if both else "") + "  better")
    for key, label, unit, better in FIGURES:
        if "hostd" in key and cols == ["virtio"]:
            continue
        r = ratio[key]
        print(f"{label:<28} {unit:>7} " + " ".join(f"{fmt(res[n].get(key)):>10}" for n in cols)
              + (f" {('-' if r is None else f'{r:.2f}'):>13}" if both else "") + f"  {better}")
    if both and str(meta.get("accel", "")).startswith("tcg"):
        print("(TCG: only the venet/virtio ratios mean something; absolute figures need hardware KVM)")
    print(f"results: {jpath}")

    png = os.path.join(out, "results.png")
    done = False
    if not any(res[n]["available"] for n in NICS):
        print("report: no plot (no NIC was measured)", file=sys.stderr)
        done = None
    elif shutil.which("gnuplot"):
        done = plot_gnuplot(out, meta, res, png)
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
