# shellcheck shell=dash
# Guest side of the bus suite (host.sh next to it); runs as
# /test/run.sh under busybox sh. Loads vbus_core, vbus_proxy,
# vbus_pcibridge and vbus_test and checks the bus end to end against
# vbus-hostd's "vbus-test" devices.
#
# Knobs from /test/config.sh (written by the host script):
#   VBT_ROLE      main   : the full test (below)
#                 victim : load, check its own devices, run a little traffic,
#                          then ask the host to kill this QEMU
#                 rejoin : load, check its devices, traffic, done
#   VBT_DEVS      ids this guest's bus has at boot, e.g. "1 2"
#   VBT_FOREIGN   ids of another guest's bus: must never appear here
#   VBT_MSGS      descriptors of the big ring run (default 100000)
#   VBT_CYCLES    rmmod/insmod cycles of all modules (default 10)
#   VBT_LAT_N     samples of each latency figure (default 1000)
#   VBT_FLOOD     DEVADDs of the flood check (default 520; 0: skipped)
#   VBT_CMP_MSGS  descriptors of each run of the bulk-vs-iterator
#                 comparison (default 20000)
#   VBT_CMP_REPS  runs of each in that comparison, alternating (default 5)
#
# Host requests (vt_host): add ID, drop ID (`vbus-hostd ctl`), stop 0 /
# cont 0 (SIGSTOP/SIGCONT to vbus-hostd), kill 0 (the host kills this
# QEMU). Check groups of the main role (VT_ONLY): hotplug ring latency
# reopen devdrop garbage flood hc_timeout rebind cycles; each starts and
# ends with the modules loaded and VBT_DEVS bound.

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VBT_ROLE:=main}"
: "${VBT_DEVS:=1 2}"
: "${VBT_FOREIGN:=}"
: "${VBT_MSGS:=100000}"
: "${VBT_CYCLES:=10}"
: "${VBT_LAT_N:=1000}"
: "${VBT_FLOOD:=520}"
: "${VBT_CMP_MSGS:=20000}"
: "${VBT_CMP_REPS:=5}"

BUS=/sys/bus/vbus-proxy/devices
PCIDRV=/sys/bus/pci/drivers/vbus-pcibridge
MODS="vbus_core vbus_proxy vbus_pcibridge vbus_test"

log() { echo "vbus-bus-tests: $*"; }

load_all() {
	local m
	for m in $MODS; do
		vt_kmod_load "$m" || { echo "insmod $m failed"; return 1; }
	done
}

unload_all() {
	local m
	for m in vbus_test vbus_pcibridge vbus_proxy vbus_core; do
		[ -d "/sys/module/$m" ] || continue
		rmmod "$m" || { echo "rmmod $m failed"; return 1; }
	done
}

# wait_dev ID [SECS]: the device is on the bus and bound to vbus-test.
wait_dev() {
	vt_wait "${2:-20}" test -e "$BUS/$1/driver" && return 0
	# shellcheck disable=SC2012 # device ids are numbers
	echo "device $1 not bound after ${2:-20} s (present: $(ls $BUS 2>/dev/null | tr '\n' ' '))"
	return 1
}

# wait_gone ID [SECS]
wait_gone() {
	vt_wait "${2:-20}" test ! -e "$BUS/$1" && return 0
	echo "device $1 still present after ${2:-20} s"
	return 1
}

# hostreq CMD ID COND...: ask the host, then wait (up to 30 s) until COND
# holds (the host answers once it asked vbus-hostd; the bus acts later).
hostreq() {
	local cmd=$1 id=$2
	shift 2
	vt_host "$cmd" "$id" || return 1
	"$@" 30
}

# hostreq_call CMD ID WANT: ask the host to stop/cont vbus-hostd, then
# make one-echo calls until one gives WANT ("ok" or "-110"), up to 30 s.
# A call that gives the other answer came before the signal took effect;
# any other answer fails. Prints the last.
hostreq_call() {
	local end out
	vt_host "$1" "$2" || return 1
	end=$(($(vt_uptime_cs) + 3000))
	while :; do
		out=$(run "$first" run_call 1)
		case "$out" in
		"ok "*) [ "$3" = ok ] && { echo "$out"; return 0; } ;;
		*"-110"*) [ "$3" = -110 ] && { echo "$out"; return 0; } ;;
		*) echo "want ok or -ETIMEDOUT: $out"; return 1 ;;
		esac
		[ "$(vt_uptime_cs)" -lt "$end" ] || break
		usleep 200000
	done
	echo "calls still gave '$out' 30 s after asking the host to $1 (want $3)"
	return 1
}

# run DEV ATTR ARG: write ARG to the device's trigger, print the result.
run() {
	local rc=0
	echo "$3" >"$BUS/$1/$2" || rc=1
	cat "$BUS/$1/result"
	return $rc
}

check_type() {
	local t i
	t=$(cat "$BUS/$1/type") || return 1
	i=$(cat "$BUS/$1/id") || return 1
	[ "$t" = vbus-test ] || { echo "device $1 type '$t'"; return 1; }
	[ "$i" = "$1" ] || { echo "device $1 id '$i'"; return 1; }
	[ "$(basename "$(readlink "$BUS/$1/driver")")" = vbus-test ] ||
		{ echo "device $1 not bound to vbus-test"; return 1; }
}

# only_devs "IDS": exactly these devices are on the bus.
only_devs() {
	local want have
	want=$(echo "$1" | tr ' ' '\n' | grep . | sort | tr '\n' ' ')
	# shellcheck disable=SC2012 # device ids are numbers
	have=$(ls "$BUS" | sort | tr '\n' ' ')
	[ "$want" = "$have" ] || { echo "devices: want '$want' have '$have'"; return 1; }
}

no_foreign() {
	local f
	for f in $VBT_FOREIGN; do
		[ -e "$BUS/$f" ] && { echo "device $f of another bus is visible"; return 1; }
	done
	return 0
}

# ring_ok DEV N [ATTR]: N verified messages through run_ring (or ATTR).
ring_ok() {
	local out
	out=$(run "$1" "${3:-run_ring}" "$2") || { echo "$out"; return 1; }
	echo "$out"
	case "$out" in "ok $2 msgs"*) return 0 ;; esac
	return 1
}

bridge_bound() {
	local d
	for d in "$PCIDRV"/0000:*; do
		[ -e "$d/vbus_stats" ] && return 0
	done
	echo "no device bound to vbus-pcibridge"
	return 1
}

# ---- common start ----
vt_check load-modules load_all || { vt_done; exit 0; }
vt_check bridge-bound bridge_bound
for d in $VBT_DEVS; do
	vt_check "dev$d-appears" wait_dev "$d" 20 && vt_check "dev$d-type-id-bound" check_type "$d"
done
vt_check only-configured-devices only_devs "$VBT_DEVS"
vt_check foreign-devices-absent no_foreign
first=${VBT_DEVS%% *}

if [ "$VBT_ROLE" != main ]; then
	vt_check "ring-1000-dev$first" ring_ok "$first" 1000
	if [ "$VBT_ROLE" = victim ]; then
		# The host kills QEMU now; we never get past this.
		vt_host kill 0
		sleep 600
	fi
	vt_done
	exit 0
fi

# ---- main ----
check_hotplug() {
	vt_check call-echo run "$first" run_call 100

	# hot add / hot drop (the host holds the add until the other guest of
	# this run is gone: the figures below are then measured alone)
	vt_check hot-add-3 hostreq add 3 wait_dev 3
	vt_check hot-added-3-type check_type 3
	vt_check hot-added-3-ring ring_ok 3 1000
	vt_check hot-drop-3 hostreq drop 3 wait_gone 3
}

check_ring() {
	local out
	if out=$(ring_ok "$first" "$VBT_MSGS"); then
		log "RING $out"
		vt_pass "ring-$VBT_MSGS-verified"
	else
		vt_fail "ring-$VBT_MSGS-verified" "$out"
	fi
	cat "$PCIDRV"/*/vbus_stats | sed 's/^/  bridge: /'
	vt_check ring-eventq-without-host-vectors eventq_fallback
	cmp_ring
}

# QEMU has 4 vectors, vbus-hostd wired 2 (host.sh): the bridge asks for no
# per-queue vectors and the ring's signals came as SHMSIGNAL events
eventq_fallback() {
	[ "$(bstat qvecs)" = 0 ] || { echo "qvecs $(bstat qvecs)"; return 1; }
	[ "$(bstat qvec_on)" = 0 ] || { echo "qvec_on $(bstat qvec_on)"; return 1; }
	if grep -q 'vbus-q[0-9]*@' /proc/interrupts; then
		echo "queue vectors requested"
		return 1
	fi
	[ "$(bstat shmsignal)" -gt 0 ] || { echo "no SHMSIGNAL event"; return 1; }
}

# field NAME RESULT: the number after "NAME=" (or before " ns/msg").
ring_field() {
	case "$1" in
	ns) echo "$2" | sed -n 's/.* \([0-9]*\) ns\/msg.*/\1/p' ;;
	*) echo "$2" | sed -n "s/.* $1=\([0-9]*\).*/\1/p" ;;
	esac
}

# stat3 < numbers: "median [min..max]"
stat3() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%s [%s..%s]", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

# The ring through the bulk calls (run_ring) against the 2009 iterator
# (run_ring_iter), alternating in this boot: ns per message, the
# notifications per run each way (guest doorbells, host notifies) and the
# guest's counter publications per run (tail and inuse-head stores: the
# cache-line hand-offs to the host that do not depend on TCG).
# Prints numbers; asserts only that both runs are verified.
cmp_ring() {
	local i out mode f
	rm -f /tmp/cmp.*
	for i in $(seq "$VBT_CMP_REPS"); do
		for mode in run_ring_iter run_ring; do
			out=$(ring_ok "$first" "$VBT_CMP_MSGS" "$mode") ||
				{ vt_fail ring-bulk-vs-iterator "$mode: $out"; return; }
			for f in ns notifies doorbells publishes; do
				ring_field "$f" "$out" >>"/tmp/cmp.$mode.$f"
			done
		done
	done
	for mode in run_ring_iter run_ring; do
		log "RING-CMP $mode msgs=$VBT_CMP_MSGS x$VBT_CMP_REPS:" \
			"ns/msg $(stat3 <"/tmp/cmp.$mode.ns")," \
			"doorbells/run $(stat3 <"/tmp/cmp.$mode.doorbells")," \
			"publishes/run $(stat3 <"/tmp/cmp.$mode.publishes")," \
			"notifies/run $(stat3 <"/tmp/cmp.$mode.notifies")"
	done
	log "RING-CMP bulk/iterator ns/msg (median):" "$(paste /tmp/cmp.run_ring.ns /tmp/cmp.run_ring_iter.ns |
		awk '{ print $1 / $2 }' | stat3)"
	vt_pass ring-bulk-vs-iterator
}

check_latency() {
	local out
	if out=$(run "$first" run_hc_lat "$VBT_LAT_N"); then
		log "HC-LATENCY $out"
		vt_pass hypercall-latency
	else
		vt_fail hypercall-latency "$out"
	fi
	if out=$(run "$first" run_irq_lat "$VBT_LAT_N"); then
		log "EVENT-LATENCY $out"
		vt_pass event-latency
	else
		vt_fail event-latency "$out"
	fi
}

# close + reopen: unbinding the driver closes the device, binding opens it
check_reopen() {
	local d
	vt_check close-reopen sh -c "rmmod vbus_test && insmod $VT_KMOD_DIR/vbus_test.ko"
	for d in $VBT_DEVS; do
		vt_check "dev$d-rebound" wait_dev "$d" 20
	done
	vt_check ring-after-reopen ring_ok "$first" 1000
}

# DEVDROP while traffic flows on that device
check_devdrop() {
	local second bg
	second=$(echo "$VBT_DEVS" | awk '{ print $2 }')
	if [ -n "$second" ]; then
		( echo 5000000 >"$BUS/$second/run_ring" ) 2>/dev/null &
		bg=$!
		sleep 1
		vt_check "drop-dev$second-under-traffic" hostreq drop "$second" wait_gone "$second"
		wait "$bg" && log "busy run_ring ended with success (?)"
		vt_check "other-dev-survives" ring_ok "$first" 1000
		vt_check "re-add-dev$second" hostreq add "$second" wait_dev "$second"
		vt_check "re-added-dev$second-ring" ring_ok "$second" 1000
	fi
	cat "$PCIDRV"/*/vbus_stats | sed 's/^/  bridge: /'
}

# ---- what a broken host could send (bridge fault injection) ----
bstat() { awk -v k="$1" '$1 == k { print $2 }' "$PCIDRV"/*/vbus_stats; }
inject() { echo "$*" >"$(echo /sys/kernel/debug/vbus-pcibridge/*/inject_event)"; }
# ev_bad_above N0 D: ev_bad grew by at least D from N0
ev_bad_above() {
	local n
	n=$(bstat ev_bad)
	[ $((n - $1)) -ge "$2" ] || { echo "ev_bad $1 -> $n (want +$2)"; return 1; }
}
# added_above ID N0: dmesg has more than N0 "device ID (...) added" lines
added_count() { dmesg | grep -c "device $1 (.*) added"; }
added_above() {
	[ "$(added_count "$1")" -gt "$2" ] || { echo "no new 'device $1 added' in dmesg"; return 1; }
}
garbage() {
	local bad0 bad1 t add0
	bad0=$(bstat ev_bad)
	add0=$(added_count 51)
	inject raw 99 || return 1
	inject raw 4294967295 || return 1
	inject shmsignal 123456789 || return 1
	inject shmsignal 0 || return 1
	inject shmclose 987654321 || return 1
	inject devdrop 4242 || return 1
	# the injection queue (8 events) drained: each of those is a bad
	# event but the SHMCLOSE (a stale cookie is normal), and the DEVDROP,
	# counted in its work item, went last
	vt_wait 20 ev_bad_above "$bad0" 5 || return 1
	inject devadd "$first" vbus-test || return 1	# duplicate id
	inject devadd 60 - || return 1			# empty type
	inject devadd-unterm 50 || return 1		# 128 bytes, no NUL
	inject devadd 51 vbus-test || return 1		# host does not know it
	# DEVADDs and DEVDROPs run in order on the bridge's ordered
	# workqueue, each probe inside its DEVADD: 51 logged as added (its
	# probe has failed) means all of the above are done
	vt_wait 20 added_above 51 "$add0" || return 1
	bad1=$(bstat ev_bad)
	[ $((bad1 - bad0)) -ge 6 ] || { echo "ev_bad $bad0 -> $bad1"; return 1; }
	[ ! -e "$BUS/60" ] || { echo "device with empty type registered"; return 1; }
	t=$(cat "$BUS/50/type") || { echo "unterminated DEVADD not registered"; return 1; }
	[ "${#t}" = 127 ] || { echo "type of 50 has ${#t} bytes"; return 1; }
	[ ! -e "$BUS/50/driver" ] || { echo "50 bound"; return 1; }
	if [ ! -e "$BUS/51" ] || [ -e "$BUS/51/driver" ]; then
		echo "51: want present and unbound (its open must fail)"
		return 1
	fi
	inject devdrop 50 || return 1
	inject devdrop 51 || return 1
	wait_gone 50 10 && wait_gone 51 10 || return 1
	only_devs "$VBT_DEVS" || return 1
	ring_ok "$first" 1000
}
check_garbage() { vt_check host-garbage-survived garbage; }

# A DEVADD flood (issue 20.6): a host that announces more devices than a
# bridge takes (VBUS_PCI_MAX_DEVICES, 512 proxies) gets the rest refused,
# counted (ev_bad) and logged, not registered. Type vbus-flood has no
# driver: no probe, so the flood is cheap. The injection queue holds 8
# events: a full one (-EBUSY) is retried.
FLOOD_MAX=512
inject_retry() {
	local n=0
	until inject "$@" 2>/dev/null; do
		n=$((n + 1))
		[ "$n" -lt 1000 ] || { echo "inject $* kept failing"; return 1; }
		usleep 5000
	done
}
# shellcheck disable=SC2012 # device ids are numbers
ndevs() { ls "$BUS" | wc -l; }
flood() {
	local i n bad0 said0 extra
	bad0=$(bstat ev_bad)
	said0=$(said_count 'devices already')
	extra=$((VBT_FLOOD + $(ndevs) - FLOOD_MAX))
	i=0
	while [ "$i" -lt "$VBT_FLOOD" ]; do
		inject_retry devadd $((10000 + i)) vbus-flood || return 1
		i=$((i + 1))
	done
	# each DEVADD past the cap counts one ev_bad; the last is the last
	vt_wait 120 ev_bad_above "$bad0" "$extra" || return 1
	n=$(ndevs)
	[ "$n" = "$FLOOD_MAX" ] || { echo "$n devices on the bus after $VBT_FLOOD DEVADDs, the cap is $FLOOD_MAX"; return 1; }
	[ $(($(said_count 'devices already') - said0)) -ge 1 ] || { echo "the refusal was not logged"; return 1; }
	i=0
	while [ "$i" -lt "$VBT_FLOOD" ]; do
		inject_retry devdrop $((10000 + i)) || return 1
		i=$((i + 1))
	done
	vt_wait 120 only_devs "$VBT_DEVS" || return 1
	ring_ok "$first" 1000
}
check_flood() { if [ "$VBT_FLOOD" -gt 0 ]; then vt_check devadd-flood-capped flood; fi; }

# a hypercall that never completes: vbus-hostd is stopped (SIGSTOP)
P=/sys/module/vbus_pcibridge/parameters/hc_timeout_ms
# said_count TEXT: lines of the guest's log that say TEXT
said_count() { dmesg | grep -c "$1"; }
hc_timeout() {
	local r0 out
	r0=$(bstat hc_timeouts)
	echo 1000 >$P
	hostreq_call stop 0 -110 || return 1
	# a second call while the host is still stopped: counted, not logged
	out=$(run "$first" run_call 1)
	case "$out" in *-110*) ;; *) echo "second call gave '$out', not -ETIMEDOUT"; return 1 ;; esac
	[ "$(bstat hc_timeouts)" -gt $((r0 + 1)) ] || { echo "not two timeouts counted"; return 1; }
	# the unanswered calls' buffers are kept from the allocator ...
	[ "$(bstat hc_leaked_bytes)" -gt 0 ] || { echo "hc_leaked_bytes '$(bstat hc_leaked_bytes)' after two timeouts"; return 1; }
	hostreq_call cont 0 ok || return 1
	echo 5000 >$P
	run "$first" run_call 10 || return 1
	# ... until the host answers again: then they go back (issue 20.6)
	[ "$(bstat hc_leaked_bytes)" = 0 ] || { echo "hc_leaked_bytes still $(bstat hc_leaked_bytes) after answers"; return 1; }
	ring_ok "$first" 1000
}
# The guest says once, in plain words, that the host stopped answering
# (not a line per timed-out hypercall), and when it answers again.
check_hc_timeout() {
	local gone0 back0
	gone0=$(said_count 'the host side (vbus-hostd) stopped answering')
	back0=$(said_count 'the host side answers hypercalls again')
	vt_check hypercall-timeout-survived hc_timeout
	echo 5000 >$P
	vt_check hc-timeout-said-once test \
		"$(($(said_count 'the host side (vbus-hostd) stopped answering') - gone0))" = 1
	vt_check hc-timeout-no-line-per-call test "$(said_count 'hypercall [0-9]* (seq [0-9]*) timed out')" = 0
	vt_check hc-answers-again-said test \
		"$(($(said_count 'the host side answers hypercalls again') - back0))" = 1
}

# unbind/bind the bridge with devices present and a driver bound
rebind() {
	local pci
	pci=$(basename "$(echo "$PCIDRV"/0000:*)")
	echo "$pci" >"$PCIDRV/unbind" || return 1
	[ -z "$(ls "$BUS")" ] || { echo "devices left after unbind: $(ls "$BUS")"; return 1; }
	echo "$pci" >"$PCIDRV/bind" || return 1
	for d in $VBT_DEVS; do
		wait_dev "$d" 20 || return 1
	done
	ring_ok "$first" 1000
}
check_rebind() { vt_check bridge-unbind-bind rebind; }

# the bridge goes first, its devices still bound to vbus-test
check_cycles() {
	local i bad t0 t1 out
	vt_check rmmod-bridge-first sh -c "rmmod vbus_pcibridge && [ -z \"\$(ls $BUS)\" ] && rmmod vbus_test"

	# unload/reload everything; slab must not grow
	cycle() {
		unload_all || return 1
		[ ! -d /sys/bus/vbus-proxy ] || { echo "vbus-proxy bus still there"; return 1; }
		load_all || return 1
		for d in $VBT_DEVS; do
			wait_dev "$d" 20 || return 1
		done
		ring_ok "$first" 200 >/dev/null || { echo "ring after reload failed"; return 1; }
	}
	vt_check reload-warmup cycle
	vt_slab_snapshot /tmp/slab0
	i=0
	bad=
	t0=$(cut -d' ' -f1 /proc/uptime)
	while [ "$i" -lt "$VBT_CYCLES" ]; do
		out=$(cycle 2>&1) || { bad="cycle $i: $out"; break; }
		i=$((i + 1))
	done
	t1=$(cut -d' ' -f1 /proc/uptime)
	if [ -z "$bad" ]; then vt_pass "rmmod-insmod-x$VBT_CYCLES"; else vt_fail "rmmod-insmod-x$VBT_CYCLES" "$bad"; fi
	vt_slab_snapshot /tmp/slab1
	log "CYCLES $i rmmod/insmod cycles with $(echo "$VBT_DEVS" | wc -w) devices in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; slab growth: $(vt_slab_growth /tmp/slab0 /tmp/slab1)"
	vt_slab_check "slab-stable-after-$VBT_CYCLES-cycles" /tmp/slab0 /tmp/slab1 16
	# every unload got BUSREG detach answered: no eventq memory was leaked
	vt_check eventq-detached-on-unload sh -c '! dmesg | grep "did not detach"'
}

vt_run_checks hotplug ring latency reopen devdrop garbage flood hc_timeout rebind cycles
vt_check final-unload unload_all
vt_done
