#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Fairness between guests of one vbus-hostd, host only (no QEMU, no root).
#
#   bench/hostd-fairness.sh [--rounds N] [--time SEC] [--quick]
#                           [--hostd PATH] [--guest PATH]
#
# A real vbus-hostd serves guests A and B, each played by
# hostd-fairness-guest (bench/fairness_guest.c: QEMU's ivshmem side and the
# guest's bridge). Per round: B's vbus-test FUNC_ECHO round trips alone
# (baseline), then while A storms doorbells, then while A storms its ring's
# signal (pending, dirty, sigpending, DB_SIGNAL). It prints per case B's
# round trips/s and ratio to the baseline of the same run, the CPU of B's
# and A's loop threads in the daemon (one guest = one thread: at most
# ~100 % each), guest A's own process (the storm's cost, on the same
# cores), and `vbus-hostd ctl list` latency during the storm; medians with
# min..max over the rounds. Prints numbers, never judges them; --quick (the
# ctest smoke) runs 1 short round and checks only that the table is whole.
set -u
ROUNDS=5
SEC=2
B=$(cd "$(dirname "$0")/.." && pwd)/build
HOSTD=$B/userspace/hostd/daemon/vbus-hostd
GUEST=$B/bench/hostd-fairness-guest

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift ;;
	--time) SEC=$2; shift ;;
	--quick) ROUNDS=1; SEC=0.3 ;;
	--hostd) HOSTD=$2; shift ;;
	--guest) GUEST=$2; shift ;;
	-h|--help) sed -n '3,18p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
for f in "$HOSTD" "$GUEST"; do
	[ -x "$f" ] || { echo "not built: $f" >&2; exit 1; }
done

T=$(mktemp -d /tmp/vbus-fairness.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "${GA_PID:-}" ] && kill "$GA_PID" 2>/dev/null
	[ -n "${GB_PID:-}" ] && kill "$GB_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
C=(--ctl "$T/ctl.sock")
HZ=$(getconf CLK_TCK)

cat >"$T/conf" <<EOF
--guest gA:sock=$T/a.sock,mem=$T/a.ram,size=16M
--guest gB:sock=$T/b.sock,mem=$T/b.ram,size=16M
--device gA:type=vbus-test,id=1
--device gB:type=vbus-test,id=1
EOF
ready=$("$HOSTD" "${C[@]}" --config "$T/conf" 2>"$T/daemon.err") ||
	{ echo "daemon did not start: $ready $(cat "$T/daemon.err")" >&2; exit 1; }
pid=$(echo "$ready" | sed -n 's/.*ready pid \([0-9]*\).*/\1/p')
[ -n "$pid" ] || { echo "no pid in: $ready" >&2; exit 1; }

# start_guest NAME SOCK RAM: a coprocess on fds GNAME_IN/GNAME_OUT
start_guest() {
	mkfifo "$T/$1.in" "$T/$1.out"
	"$GUEST" "$2" "$3" <"$T/$1.in" >"$T/$1.out" 2>"$T/$1.err" &
	eval "$1_PID=$!"
	eval "exec {$1_IN}>\"$T/$1.in\" {$1_OUT}<\"$T/$1.out\""
	ask "$1" "" >/dev/null
}
# ask NAME LINE: send LINE (none if empty), print the one-line answer
ask() {
	local in out ans
	in=$1_IN out=$1_OUT
	[ -n "$2" ] && echo "$2" >&"${!in}"
	if ! read -r -t 60 ans <&"${!out}"; then
		echo "guest $1 gave no answer: $(cat "$T/$1.err")" >&2
		exit 1
	fi
	echo "$ans"
}
start_guest GA "$T/a.sock" "$T/a.ram"
start_guest GB "$T/b.sock" "$T/b.ram"

# per-thread ticks of the daemon: "tid ticks" lines
ticks() {
	local f
	for f in /proc/"$pid"/task/*/stat; do
		awk '{ sub(/^.*\) /, ""); print FILENAME, $12 + $13 }' "$f" 2>/dev/null
	done | sed 's|/proc/[0-9]*/task/\([0-9]*\)/stat|\1|'
}

# tid_of GUEST: the daemon's loop thread of GUEST (vbus-hostd names it
# g:GUEST)
tid_of() {
	grep -lx "g:$1" /proc/"$pid"/task/*/comm 2>/dev/null |
		sed -n 's|^/proc/[0-9]*/task/\([0-9]*\)/comm$|\1|p' | head -n 1
}

# ticks of a whole process (guest A's fake guest: its storm's own cost)
proc_ticks() {
	sed 's/^.*) //' /proc/"$1"/stat | awk '{ print $12 + $13 }'
}

# ctl list latencies (ms), one a line, until $T/stop exists
ctl_probe() {
	local t0 t1
	while [ ! -e "$T/stop" ]; do
		t0=$(date +%s%N)
		"$HOSTD" ctl "${C[@]}" list >/dev/null 2>&1 || echo "ctl-error" >&2
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) | awk '{ printf "%.2f\n", $1 / 1000 }'
		sleep 0.05
	done
}

# case MODE ROUND: B's echo rate; CPU of each guest's loop thread and ctl figures
# of this round appended to $T/MODE.{rate,cpu,ctlmed,ctlmax}
run_case() {
	local mode=$1 r e0 e1 wall a0 a1
	[ "$mode" = baseline ] || ask GA "$mode" >/dev/null
	rm -f "$T/stop"
	ctl_probe >"$T/ctl.ms" &
	local probe=$!
	ticks >"$T/t0"
	a0=$(proc_ticks "$GA_PID")
	e0=$(date +%s%N)
	r=$(ask GB "echo $SEC")
	e1=$(date +%s%N)
	ticks >"$T/t1"
	a1=$(proc_ticks "$GA_PID")
	touch "$T/stop"
	wait "$probe"
	[ "$mode" = baseline ] || ask GA idle >/dev/null
	wall=$(((e1 - e0) / 1000000))
	echo "$r" | awk '{ print $3 }' >>"$T/$mode.rate"
	# daemon threads, % of one core over the round: "tid %", busiest first
	awk -v hz="$HZ" -v ms="$wall" 'NR == FNR { a[$1] = $2; next }
		($1 in a) { print $1, ($2 - a[$1]) * 100000 / hz / ms }' \
		"$T/t0" "$T/t1" | sort -k2 -gr >"$T/cpu"
	# each guest's loop thread, by its name (g:NAME)
	awk -v b="$(tid_of gB)" '$1 == b { print $2; f = 1 }
		END { if (!f) print 0 }' "$T/cpu" >>"$T/$mode.bthr"
	awk -v a="$(tid_of gA)" '$1 == a { print $2; f = 1 }
		END { if (!f) print 0 }' "$T/cpu" >>"$T/$mode.athr"
	echo "$(((a1 - a0) * 100000 / HZ / wall))" >>"$T/$mode.acpu"
	sort -n "$T/ctl.ms" | awk '{ v[NR] = $1 } END {
		printf "%s\n", NR ? v[int((NR + 1) / 2)] : "nan" }' >>"$T/$mode.ctlmed"
	sort -n "$T/ctl.ms" | tail -1 >>"$T/$mode.ctlmax"
}

MODES=(baseline doorbell pending)
for ((i = 0; i < ROUNDS; i++)); do
	for m in "${MODES[@]}"; do
		run_case "$m"
	done
done

# stat FILE: "median min max"
stat3() {
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.17g %.17g %.17g\n", m, v[1], v[NR] }'
}
base=$(stat3 "$T/baseline.rate" | awk '{ print $1 }')
for m in "${MODES[@]}"; do
	awk -v b="$base" '{ print $1 / b }' "$T/$m.rate" >"$T/$m.ratio"
done

echo "vbus-hostd fairness: guest B's vbus-test ECHO while guest A storms"
echo "($ROUNDS round(s) of $SEC s; median [min..max]; $(nproc) CPU(s)," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf "%-9s %-24s %-20s %-14s %-14s %-14s %-18s %-18s\n" case \
	"B echo/s" "B/baseline" "B thread %CPU" "A thread %CPU" "A proc %CPU" \
	"ctl list p50 ms" "ctl list max ms"
for m in "${MODES[@]}"; do
	line="$m"
	for k in rate:%.0f ratio:%.3f bthr:%.0f athr:%.0f acpu:%.0f ctlmed:%.1f \
		ctlmax:%.1f; do
		line="$line|$(stat3 "$T/$m.${k%:*}" |
			awk -v f="${k#*:}" '{ printf f " [" f ".." f "]", $1, $2, $3 }')"
	done
	echo "$line" | awk -F'|' '{ printf "%-9s %-24s %-20s %-14s %-14s %-14s %-18s %-18s\n",
		$1, $2, $3, $4, $5, $6, $7, $8 }'
done >"$T/table"
cat "$T/table"

if grep -q "Sanitizer" "$T/daemon.err"; then
	echo "sanitizer report from the daemon:" >&2
	cat "$T/daemon.err" >&2
	exit 1
fi
# the table is whole: three cases, every figure a number
if [ "$(grep -cE '^(baseline|doorbell|pending) +[0-9.e+]+ \[' "$T/table")" -ne 3 ] ||
   grep -qiE 'nan|inf' "$T/table"; then
	echo "incomplete table" >&2
	exit 1
fi
