# shellcheck shell=dash
# Guest-side helpers, sourced by a guest test script (/test/run.sh, which
# lab_stage copies next to this file as /test/lib.sh):  . /test/lib.sh
# Runs under busybox sh (ash: POSIX sh plus `local`). Emits the protocol that lib/results.sh reads:
#   VBUS-TEST PASS <name> | VBUS-TEST FAIL <name> <reason> | VBUS-TEST DONE
# Test names must not contain spaces.

VT_KMOD_DIR=/lib/modules/vbus
VT_FAILED=0

vt_pass() { echo "VBUS-TEST PASS $1"; }

vt_fail() {
	_vt_name=$1
	shift
	VT_FAILED=$((VT_FAILED + 1))
	echo "VBUS-TEST FAIL $_vt_name ${*:-failed}"
}

# vt_check NAME CMD...: PASS iff CMD succeeds; on failure the reason is the
# exit status and the last line of CMD's output (the output is also shown).
vt_check() {
	_vt_name=$1
	shift
	if "$@" >/tmp/.vt_check.out 2>&1; then
		vt_pass "$_vt_name"
		return 0
	else
		_vt_rc=$?
		sed 's/^/  | /' /tmp/.vt_check.out
		vt_fail "$_vt_name" "exit=$_vt_rc: $(tail -n 1 /tmp/.vt_check.out)"
		return "$_vt_rc"
	fi
}

vt_done() { echo "VBUS-TEST DONE"; }

# vt_want NAME: NAME matches $VT_ONLY (an ERE from `run.sh SUITE:REGEX`,
# in /test/config.sh); always true without one.
vt_want() { [ -z "${VT_ONLY:-}" ] || echo "$1" | grep -qE -e "$VT_ONLY"; }

# vt_run_checks NAME...: check_NAME for each NAME that vt_want, in order.
# A check group must stand alone: it sets up what it needs and leaves the
# guest as it found it, so that any one of them can run by itself.
# Each group's guest time goes to the log ("vt: check NAME took N.NN s"), so
# a slow group shows without rerunning with timestamps.
vt_run_checks() {
	local c t0 cs
	for c in "$@"; do
		if vt_want "$c"; then
			echo "vt: check $c"
			t0=$(vt_uptime_cs)
			"check_$c"
			cs=$(($(vt_uptime_cs) - t0))
			printf 'vt: check %s took %d.%02d s\n' "$c" $((cs / 100)) $((cs % 100))
		else
			echo "vt: skip $c (VT_ONLY=$VT_ONLY)"
		fi
	done
}

# The request channel to the host: the second serial port (lab.sh's
# lab_serve, one line each way, no kernel messages on it). Opened once,
# here: a request from a subshell then uses the same descriptor.
VT_CHAN=/dev/ttyS1
# A guest without the port (libvirt's, the harness's) gets an error on
# open, and a failed `exec` redirection would end the script: try first.
if (exec 9<>"$VT_CHAN") 2>/dev/null; then
	stty -F "$VT_CHAN" raw -echo 2>/dev/null
	exec 9<>"$VT_CHAN"
fi

# vt_host CMD ARGS...: ask the host (its req_CMD); prints the reply's
# value; non-zero unless the reply is "ok [value]".
vt_host() {
	local reply
	echo "$*" >&9
	# shellcheck disable=SC3045 # busybox ash has read -t
	if ! read -r -t 300 reply <&9; then
		echo "no reply from the host to '$*'"
		return 1
	fi
	reply=$(echo "$reply" | tr -d '\r')
	case "$reply" in
	ok) return 0 ;;
	"ok "*) echo "${reply#ok }"; return 0 ;;
	*) echo "host: $reply"; return 1 ;;
	esac
}

# vt_uptime_cs: centiseconds since boot (/proc/uptime; no fork). A clock
# for deadlines and durations: it counts what the guest sees, stalls of a
# busy host's vCPUs included.
vt_uptime_cs() {
	local up
	read -r up _ </proc/uptime
	up=${up%.*}${up#*.}
	while [ "${up#0}" != "$up" ] && [ "${#up}" -gt 1 ]; do up=${up#0}; done
	echo "$up"
}

# vt_wait SECS CMD...: run CMD (quietly) until it succeeds, every 0.2 s for
# up to SECS s of uptime; then once more with its output shown. For a
# condition that holds once something asynchronous (the host, a work item,
# an interrupt) has happened: a stalled vCPU or host delays it, a bug never
# makes it hold.
vt_wait() {
	local _vt_end
	_vt_end=$(($(vt_uptime_cs) + $1 * 100))
	shift
	while [ "$(vt_uptime_cs)" -lt "$_vt_end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		usleep 200000
	done
	"$@"
}

# vt_swiotlb_range: "START END" of this guest's bounce buffers (swiotlb,
# END exclusive), as the vbus bridge says at probe ("DMA bounces through
# swiotlb [mem START-END)"); fails unless the guest was booted with
# swiotlb=...force (the suites' --swiotlb), where every DMA mapping is one.
vt_swiotlb_range() {
	grep -qE '(^| )swiotlb=[^ ]*force' /proc/cmdline ||
		{ echo "not booted with swiotlb=...,force: $(cat /proc/cmdline)"; return 1; }
	dmesg | sed -n 's/.*DMA bounces through swiotlb \[mem \(0x[0-9a-f]*\)-\(0x[0-9a-f]*\)).*/\1 \2/p' |
		head -n 1 | grep . || { echo "no 'DMA bounces through swiotlb' line in dmesg"; return 1; }
}

# vt_modref MODULE: print the module's reference count; fails if not loaded.
vt_modref() {
	if [ -r "/sys/module/$1/refcnt" ]; then
		cat "/sys/module/$1/refcnt"
	else
		echo "absent"
		return 1
	fi
}

# vt_kmod_load NAME [PARAMS...]: insmod a module staged by the host's
# vbus_initramfs_add_kmods, after its dependencies (NAME.deps); modules
# already loaded are skipped (dependencies only; NAME itself must load).
vt_kmod_load() {
	local m=$1 d deps=""
	shift
	[ -f "$VT_KMOD_DIR/$m.deps" ] && read -r deps <"$VT_KMOD_DIR/$m.deps"
	for d in $deps; do
		[ -d "/sys/module/$d" ] && continue
		vt_kmod_load "$d" || return 1
	done
	insmod "$VT_KMOD_DIR/$m.ko" "$@"
}

# Slab caches vt_slab_compare skips (ERE on the cache name). vmap_area is
# freed lazily (vfree purges in batches), so it grows with any module load.
: "${VT_SLAB_IGNORE:=^vmap_area$}"

# vt_slab_snapshot FILE: "cache active_objects" per slab cache. Drops the
# page/dentry/inode caches, flushes the per-CPU slabs (shrink) and lets RCU
# run, so that snapshots taken at quiet points are comparable. (The shrink
# loop's own open files are freed by RCU after it: shrink filp once more.)
vt_slab_snapshot() {
	local s
	sync
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
	for s in /sys/kernel/slab/*/shrink; do
		echo 1 >"$s" 2>/dev/null
	done
	# Each of those opens freed its kernfs open-node with kfree_rcu(), and
	# 6.1 batches those for up to 5 s: ~200 kmalloc-96 objects that the
	# second of sleep below may not see freed. Reclaim runs the kfree_rcu
	# shrinker, which hands the batch to RCU now.
	echo 2 >/proc/sys/vm/drop_caches 2>/dev/null
	sleep 1
	echo 1 >/sys/kernel/slab/filp/shrink 2>/dev/null
	if [ -r /proc/slabinfo ]; then
		awk 'NR > 2 { print $1, $2 }' /proc/slabinfo | sort >"$1"
	else
		for s in /sys/kernel/slab/*; do
			[ -L "$s" ] && continue
			echo "${s##*/} $(cut -d' ' -f1 "$s/objects")"
		done | sort >"$1"
	fi
}

# vt_slab_growth A B [N]: the N (default 5) caches that grew most from
# snapshot A to B, as "cache:+delta" words, or "none" (a figure, no verdict).
vt_slab_growth() {
	awk 'NR == FNR { a[$1] = $2; next } { d = $2 - a[$1]; if (d > 0) print d, $1 }' "$1" "$2" |
		sort -rn | head -n "${3:-5}" |
		awk '{ printf "%s%s:+%d", (NR > 1 ? " " : ""), $2, $1 } END { if (!NR) printf "none" }'
}

# vt_slab_compare A B TOLERANCE: fail (and list them) if any cache grew by
# more than TOLERANCE objects from snapshot A to snapshot B. Caches matching
# $VT_SLAB_IGNORE are skipped.
vt_slab_compare() {
	awk -v tol="$3" -v ign="$VT_SLAB_IGNORE" '
		NR == FNR { a[$1] = $2; next }
		ign != "" && $1 ~ ign { next }
		{ d = $2 - a[$1]; if (d > tol) { printf "  slab %s grew by %d (%d -> %d)\n", $1, d, a[$1], $2; bad = 1 } }
		END { exit bad }' "$1" "$2"
}

# vt_slab_check NAME A B TOLERANCE [SETTLE...]: vt_check NAME on
# vt_slab_compare A B TOLERANCE. A leak stays; deferred frees (RCU batches,
# workqueues, per-CPU caches a busy vCPU has not drained) go away: while B
# shows growth, wait 10 s, run SETTLE (a command, e.g. one that flushes
# deferred frees) and take B again, up to $VT_SLAB_RETRIES (3) times.
: "${VT_SLAB_RETRIES:=3}"
vt_slab_check() {
	local _vt_name=$1 _vt_a=$2 _vt_b=$3 _vt_tol=$4 _vt_try=0
	shift 4
	while [ "$_vt_try" -lt "$VT_SLAB_RETRIES" ] &&
		! vt_slab_compare "$_vt_a" "$_vt_b" "$_vt_tol" >/tmp/.vt_slab.diff; do
		_vt_try=$((_vt_try + 1))
		echo "slab growth, re-checking in 10 s ($_vt_try of $VT_SLAB_RETRIES):"
		sed 's/^/  /' /tmp/.vt_slab.diff
		sleep 10
		[ $# -gt 0 ] && "$@"
		vt_slab_snapshot "$_vt_b"
	done
	vt_check "$_vt_name" vt_slab_compare "$_vt_a" "$_vt_b" "$_vt_tol"
}

# vt_blk_fails_fast DEV SKIP: a faulted vbus-blk disk fails a 4 KiB direct
# read at block SKIP at once, not through the timeout handler: no new
# "request timed out" while it ran, and in less time than that path takes
# (io_timeout 1 s in the suites x (VBUS_BLK_TIMEOUT_RESETS 4 + 1) = 5 s).
# Writes the seconds it took to /tmp/fast.secs.
vt_blk_fails_fast() {
	local t0 cs n0
	n0=$(dmesg | grep -c 'request timed out')
	t0=$(vt_uptime_cs)
	if dd if="/dev/$1" of=/dev/null bs=4096 skip="$2" count=1 iflag=direct 2>/dev/null; then
		echo "a read from the faulted disk succeeded"
		return 1
	fi
	cs=$(($(vt_uptime_cs) - t0))
	echo "$((cs / 100)).$((cs / 10 % 10))" >/tmp/fast.secs
	[ "$(dmesg | grep -c 'request timed out')" = "$n0" ] ||
		{ echo "it went through the timeout handler"; return 1; }
	[ "$cs" -lt 400 ] || { echo "took $cs cs (the slow path takes >= 500)"; return 1; }
}

# vt_console_mark: how many lines the kernel log has now (for
# vt_console_clean). vt_console_clean MARK: no kernel problem (an Oops,
# WARNING, BUG, KASAN/slub report, hung task, soft lockup: the ERE
# $VT_KERNEL_PROBLEMS, which a host script passes from results.sh's
# VBUS_KERNEL_PROBLEMS) in the lines logged since MARK; prints them if any.
# results.sh scans the whole log at the end as well: this says which
# check it was.
vt_console_mark() { dmesg | wc -l; }
vt_console_clean() {
	local bad
	[ -n "${VT_KERNEL_PROBLEMS:-}" ] || { echo "no VT_KERNEL_PROBLEMS in /test/config.sh"; return 1; }
	bad=$(dmesg | tail -n +"$(($1 + 1))" | grep -E -e "$VT_KERNEL_PROBLEMS")
	[ -z "$bad" ] && return 0
	echo "$bad" | head -n 20
	# last: the first of them (vt_check's reason is the last line)
	echo "$(echo "$bad" | wc -l) problem line(s), the first: $(echo "$bad" | head -n 1)"
	return 1
}

# vt_net_bytes IF: "RX TX", IF's byte counters.
vt_net_bytes() {
	echo "$(cat "/sys/class/net/$1/statistics/rx_bytes") $(cat "/sys/class/net/$1/statistics/tx_bytes")"
}

# vt_flowing IF "RX TX" [RXMIN TXMIN]: IF's byte counters moved RXMIN and
# TXMIN bytes (default 64 KiB each) past a vt_net_bytes snapshot: traffic
# started in the background is under way (for vt_wait, in place of a sleep
# that hopes it is).
vt_flowing() {
	local now
	now=$(vt_net_bytes "$1") || return 1
	[ "${now% *}" -ge $((${2% *} + ${3:-65536})) ] &&
		[ "${now#* }" -ge $((${2#* } + ${4:-65536})) ]
}
