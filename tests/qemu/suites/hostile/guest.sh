# shellcheck shell=dash
# Guest side of the hostile suite (host.sh next to it); runs as
# /test/run.sh under busybox sh, at every boot (the reboot group reboots).
# Each group makes vbus-hostd misbehave (vt_host fault VERB ...: `ctl
# fault g1 VERB ...`, docs/fault-injection.md) and ends with
# group_end: no kernel problem on the console since it started, the
# bystander vbus-test device 2 carries a verified ring, the shell runs
# (and every debugged slab cache validated and most free pages allocated
# first: writes into freed objects and pages show).
#   rx_race         (20.1) an honest host floods venet with pings while the
#                   MTU flips (rx drains) and NAPI runs on both vCPUs: no
#                   ring fault, no corruption
#   storm_close     (issue 20.3) the host holds dirty (and enabled) on
#                   device 1's ring (a signal storm), sends SHMCLOSE under
#                   it and storms on while the guest closes the device
#                   (DEVCLOSE, SHMCLOSE, the ring freed), five times
#   devshm_version  (20.4) the host rewrites the ring's version right
#                   after accepting DEVSHM, and signals it
#   reattach        (20.6) the host announces VT_PHANTOMS (> 64) phantom
#                   devices ahead of the real ones and restarts (the new
#                   daemon's DEVADDs come without an interrupt, and a
#                   test-only knob holds the eventq tasklet off through
#                   the re-attach): the live devices are reconnected, not
#                   torn down and probed anew
#   devadd_flood    (20.6) the host announces 600 phantoms: past the
#                   bridge's 512 devices each DEVADD is refused, counted
#                   and logged; then it drops them again
#   reboot          (20.7, 20.13) venet traffic, disk I/O and the ring
#                   running, then reboot -f (QEMU resets, this kernel boots
#                   again): before vbus loads, the host writes nothing into
#                   guest memory while it pings us; then vbus comes up again
#   own_fields      (20.5) the host holds the guest's own enabled at 1 under
#                   venet traffic, then completes reaped tx slots again
#                   (moves the guest's own tail) and writes garbage into
#                   its inuse_head: no WARN (panic_on_warn),
#                   no lockup; venet faults its channel and reloads clean
#   disconnect_timeout (20.2) reads on the disk, the host frozen then killed:
#                   a blk-mq timeout fires while the disconnect has freed
#                   the rings and not yet taken the requests back (a
#                   test-only knob holds that window open 3 s); the disk
#                   reconnects and reads
#   sleep           (20.7) s2idle (and with --sleep-disk hibernation's
#                   freeze/thaw) at pm_test=devices with venet, the disk
#                   and the rings up:
#                   while asleep the host pings and writes nothing into
#                   the guest; after waking, the bus re-attaches and
#                   traffic, rings and the disk's data are back
# Groups after reboot run in the second boot (devshm_version and
# own_fields: a guest they break does not take the reboot check with it).

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
. /test/config.sh
# shellcheck source=tests/qemu/suites/venet/net.sh
. /test/net.sh

BUS=/sys/bus/vbus-proxy/devices
PCIDRV=/sys/bus/pci/drivers/vbus-pcibridge
VTDRV=/sys/bus/vbus-proxy/drivers/vbus-test
PHANTOM_LAST=$((900000 + VT_PHANTOMS - 1))

bstat() { awk -v k="$1" '$1 == k { print $2 }' "$PCIDRV"/*/vbus_stats; }
bound() { test -e "$BUS/$1/driver"; }
wait_bound() { vt_wait 30 bound "$1"; }
# ring_ok ID [N]: N verified descriptors through device ID's ring
ring_ok() {
	echo "${2:-1000}" >"$BUS/$1/run_ring" && grep -q "^ok ${2:-1000} msgs" "$BUS/$1/result" && return 0
	cat "$BUS/$1/result"
	return 1
}
shell_ok() { [ "$(echo alive | tr '[:lower:]' '[:upper:]')" = ALIVE ] && ls /proc/self/ >/dev/null; }
# Every debugged slab cache checked now, free objects' poison included:
# a write into freed memory is reported (on the console) here, not only
# when the object is allocated again.
slab_validate() {
	local f
	for f in /sys/kernel/slab/*/validate; do echo 1 >"$f"; done
}
# The same for freed pages (rings are dma_alloc_coherent pages): the
# guest boots with page_poison=1, and a page written after its free says
# so when it is allocated again. 160 MiB of tmpfs allocates most of the
# free pages, then goes.
page_sweep() {
	dd if=/dev/zero of=/tmp/sweep bs=1M count=160 2>/dev/null
	rm -f /tmp/sweep
}
# group_end NAME MARK
group_end() {
	slab_validate
	page_sweep
	vt_check "$1/console-clean" vt_console_clean "$2"
	vt_check "$1/bystander-ring" ring_ok 2 1000
	vt_check "$1/shell" shell_ok
}
said() { dmesg | grep -c "$1"; }

load_bus() {
	local m
	for m in vbus_core vbus_proxy vbus_pcibridge vbus_test "$@"; do
		[ -d "/sys/module/$m" ] && continue
		# test rings of 64 slots (2.5 KiB): slab objects, poisoned when
		# freed (a 256-slot ring is a page allocation: no poison)
		if [ "$m" = vbus_test ]; then
			vt_kmod_load vbus_test ring_count=64
		else
			vt_kmod_load "$m"
		fi || { echo "insmod $m failed"; return 1; }
	done
	wait_bound 1 && wait_bound 2
}

# ---- 20.3: SHMCLOSE under a signal storm ----
notified_more() { [ "$(cat "$BUS/1/notifies")" -ge $(($2 + $3)) ]; }
storm_close_once() {
	local n0
	wait_bound 1 || return 1
	n0=$(cat "$BUS/1/notifies")
	# dirty held, and enabled: the close's notify_disable does not end
	# the wakeup loop, the deferred notify keeps re-arming
	vt_host fault storm 1 enable || return 1
	# the notifier keeps running
	vt_wait 20 notified_more 1 "$n0" 200 || return 1
	# SHMCLOSE under the storm, which goes on: a deferred notify that
	# re-arms (dirty held) runs on a signal the bridge no longer has in
	# its table, unless the SHMCLOSE stopped it
	vt_host fault shmclose 1 >/dev/null || return 1
	# then the guest closes the device: the host acts on the close 300 ms
	# late, storming meanwhile, and its storm ends at the close (it never
	# writes a closed ring); the ring is freed right after the answer
	vt_host fault hc-delay 300 1 >/dev/null || return 1
	echo 1 >"$VTDRV/unbind" || return 1
	echo 1 >"$VTDRV/bind" || return 1
	wait_bound 1 && ring_ok 1 100
}
check_storm_close() {
	local m i
	m=$(vt_console_mark)
	for i in 1 2 3 4 5; do
		vt_check "storm_close/close-under-storm-$i" storm_close_once || break
	done
	vt_host fault storm off >/dev/null
	group_end storm_close "$m"
}

# ---- 20.4: the version rewritten after DEVSHM ----
rebind_1() {
	bound 1 && { echo 1 >"$VTDRV/unbind" || return 1; }
	echo 1 >"$VTDRV/bind"
	wait_bound 1 && ring_ok 1 100
}
devshm_version() {
	wait_bound 1 || return 1
	# and storms the ring until the device closes: a ring freed early
	# is then written through the signal still in the cookie table
	vt_host fault on-devshm 1 4 0x77 storm || return 1
	echo 1 >"$VTDRV/unbind" || return 1
	# the probe sees its ring's version changed under it: refusing the
	# ring is right, anything worse is not
	echo 1 >"$VTDRV/bind" 2>/dev/null || echo "probe refused the ring (ok)"
	# then a clean probe works
	rebind_1
}
check_devshm_version() {
	local m
	m=$(vt_console_mark)
	vt_check devshm_version/rewritten-then-rebound devshm_version
	group_end devshm_version "$m"
}

# ---- 20.6: more than 64 devices across a restart ----
reattached() { [ "$(bstat reattach)" -gt "$1" ]; }
reconnected() { [ "$(said "vbus-test $1: reconnected")" -gt "$2" ]; }
reattach() {
	local r0 p1 p2 c1 c2
	vt_wait 30 test -e "$BUS/$PHANTOM_LAST" || { echo "phantom $PHANTOM_LAST never announced"; return 1; }
	r0=$(bstat reattach)
	p1=$(said "vbus-test 1: echo ok") p2=$(said "vbus-test 2: echo ok")
	c1=$(said "vbus-test 1: reconnected") c2=$(said "vbus-test 2: reconnected")
	# the tasklet held off through the re-attach (test-only knob): what
	# one pass leaves waits until after the stale devices are dropped
	echo 1 >"$HOLD" || return 1
	vt_host restart || return 1
	vt_wait 60 reattached "$r0" || return 1
	if ! vt_wait 30 reconnected 1 "$c1" || ! vt_wait 30 reconnected 2 "$c2"; then
		dmesg | grep -E "not announced again" | tail -n 3
		echo "a live vbus-test device was not reconnected at the re-attach"
		return 1
	fi
	# torn down and probed anew would say "echo ok" again
	if [ "$(said "vbus-test 1: echo ok")" != "$p1" ] || [ "$(said "vbus-test 2: echo ok")" != "$p2" ]; then
		echo "a live device was torn down and probed again at the re-attach"
		dmesg | grep -E "vbus-test [12]: |stale|re-attach" | tail -n 8
		return 1
	fi
	if ! test -e "$BUS/$PHANTOM_LAST"; then
		dmesg | grep -E "not announced again|re-attach" | tail -n 4
		echo "device $PHANTOM_LAST (announced after the first 64 events) was dropped as stale"
		return 1
	fi
	ring_ok 1 100
}
HOLD=/sys/module/vbus_pcibridge/parameters/test_reattach_hold_tasklet
check_reattach() {
	local m
	m=$(vt_console_mark)
	vt_check "reattach/$VT_PHANTOMS-phantoms-live-devices-kept" reattach
	echo 0 >"$HOLD"
	group_end reattach "$m"
}

# ---- 20.6: a DEVADD flood from the host ----
# shellcheck disable=SC2012 # device ids are numbers
ndevs() { ls "$BUS" 2>/dev/null | wc -l; }
ndevs_is() { [ "$(ndevs)" = "$1" ] || { echo "$(ndevs) devices, want $1"; return 1; }; }
ev_bad_above() {
	[ $(($(bstat ev_bad) - $1)) -ge "$2" ] && return 0
	echo "ev_bad $1 -> $(bstat ev_bad) (want +$2), $(ndevs) devices on the bus"
	return 1
}
FLOOD=600
CAP=512
devadd_flood() {
	local bad0 said0 n0 n
	bad0=$(bstat ev_bad)
	said0=$(said 'devices already')
	n0=$(ndevs)
	vt_host fault phantoms "$FLOOD" >/dev/null || return 1
	# each DEVADD past the bridge's cap is refused and counted
	vt_wait 120 ev_bad_above "$bad0" $((n0 + FLOOD - VT_PHANTOMS - CAP)) || return 1
	n=$(ndevs)
	[ "$n" = "$CAP" ] || { echo "$n devices on the bus after the host announced $((n0 + FLOOD - VT_PHANTOMS)), the cap is $CAP"; return 1; }
	[ $(($(said 'devices already') - said0)) -ge 1 ] || { echo "the refusal was not logged"; return 1; }
	vt_host fault phantoms "$VT_PHANTOMS" >/dev/null || return 1
	vt_wait 120 ndevs_is "$n0"
}
check_devadd_flood() {
	local m
	m=$(vt_console_mark)
	vt_check "devadd_flood/$FLOOD-devadds-capped-at-$CAP" devadd_flood
	group_end devadd_flood "$m"
}

# ---- 20.13: a warm reboot under traffic ----
blk_disk() {
	local d
	for d in /sys/block/vbd*; do
		[ "$(cat "$d/serial" 2>/dev/null)" = hb-blk ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}
net_up() {
	IF=$(venet_if) || { echo "no venet netdev"; return 1; }
	ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF" 2>/dev/null
	ip link set dev "$IF" up || return 1
	vt_wait 30 test "$(cat "/sys/class/net/$IF/carrier")" = 1 || return 1
	ping -c 2 -i 0.2 -W 5 "$VT_HOST_IP" >/dev/null
}
rx_more() { [ "$(cat "/sys/class/net/$IF/statistics/rx_packets")" -ge "$1" ]; }
reboot_go() {
	local disk
	load_bus venet vbus_blk || return 1
	net_up || return 1
	vt_wait 30 blk_disk >/dev/null || return 1
	disk=$(blk_disk)
	# disk writes and reads, the vbus-test ring and the host's pings
	# (its writes into our rx buffers) all running at the reboot
	(while :; do
		dd if=/dev/urandom of="/dev/$disk" bs=64k count=32 oflag=direct 2>/dev/null
		dd if="/dev/$disk" of=/dev/null bs=64k count=32 iflag=direct 2>/dev/null
	done) &
	(while :; do echo 1000 >"$BUS/1/run_ring"; done) 2>/dev/null &
	vt_host ping_flood || return 1
	vt_wait 30 rx_more $(($(cat "/sys/class/net/$IF/statistics/rx_packets") + 20))
}
check_reboot() {
	vt_check reboot/traffic-running reboot_go || return
	vt_host rebooting >/dev/null
	echo "hostile: rebooting under traffic"
	reboot -f
	sleep 600	# the reboot ends this
}
vbus_up_again() {
	load_bus venet vbus_blk || return 1
	ring_ok 1 1000 && ring_ok 2 1000 || return 1
	net_up || return 1
	vt_wait 30 blk_disk >/dev/null || return 1
	dd if="/dev/$(blk_disk)" of=/dev/null bs=64k count=64 iflag=direct 2>/dev/null
}
after_reboot() {
	local m
	m=$(vt_console_mark)
	# before anything of vbus is loaded: the host pings, and must not write
	vt_check reboot/host-wrote-nothing-after-shutdown vt_host quiet
	vt_check reboot/vbus-up-again vbus_up_again
	group_end reboot "$m"
}

# ---- 20.2: a blk-mq timeout inside a disconnect ----
# A disconnect frees the rings (vq->ioq NULL) before it takes their
# requests back; a timeout in between found its request on a slot and
# signalled a NULL ring (an oops in kblockd). The window is microseconds:
# vbus_blk's test-only test_disconnect_window_ms holds it open for
# DC_WINDOW ms, and a 1.5 s io_timeout makes blk-mq's timer (whole
# seconds) fire inside it. The host is frozen (SIGSTOP) so that a read
# stays on the ring, then killed: the keeper's new daemon takes over.
DC_WINDOW=3000
blk_inflight() { [ "$(awk '{ print $1 + $2 }' "/sys/block/$1/inflight")" -gt 0 ]; }
# a "request timed out" between the window's two lines
timed_out_in_window() {
	dmesg | awk '/test: disconnect window open/ { w = 1; next }
		/test: disconnect window closed/ { w = 0 }
		w && /request timed out/ { n++ }
		END { exit !n }'
}
reconnected_blk() { dmesg | grep -q "test: disconnect window closed" && [ "$(said "$1: host back")" -gt "$2" ]; }
disconnect_timeout() {
	local disk pid rc=0 tmo c0
	load_bus vbus_blk || return 1
	vt_wait 30 blk_disk >/dev/null || return 1
	disk=$(blk_disk)
	tmo=$(cat "/sys/block/$disk/queue/io_timeout")
	echo 1500 >"/sys/block/$disk/queue/io_timeout" || return 1
	echo "$DC_WINDOW" >/sys/module/vbus_blk/parameters/test_disconnect_window_ms || return 1
	c0=$(said "$disk: host back")
	(while :; do dd if="/dev/$disk" of=/dev/null bs=64k count=16 iflag=direct 2>/dev/null; done) &
	pid=$!
	vt_host freeze || rc=1
	[ "$rc" = 0 ] && { vt_wait 30 blk_inflight "$disk" || rc=1; }
	[ "$rc" = 0 ] && { vt_host restart kill || rc=1; }
	[ "$rc" = 0 ] && { vt_wait 60 reconnected_blk "$disk" "$c0" || rc=1; }
	kill "$pid"
	wait "$pid" 2>/dev/null
	echo 0 >/sys/module/vbus_blk/parameters/test_disconnect_window_ms
	echo "$tmo" >"/sys/block/$disk/queue/io_timeout"
	[ "$rc" = 0 ] || { dmesg | grep -E "vbd|vbus-blk|window" | tail -n 8; return 1; }
	timed_out_in_window || { echo "no request timed out inside the window: the check proved nothing"; return 1; }
	dd if="/dev/$disk" of=/dev/null bs=64k count=64 iflag=direct 2>/dev/null
}
check_disconnect_timeout() {
	local m
	m=$(vt_console_mark)
	vt_check disconnect_timeout/timeout-inside-disconnect disconnect_timeout
	group_end disconnect_timeout "$m"
}

# ---- 20.7: system sleep ----
# /sys/power/pm_test=devices: the devices' suspend (s2idle: freeze) or
# freeze (hibernation: disk) callbacks, pm_test_delay seconds asleep, then
# resume or thaw; no firmware, no image. Meanwhile the host waits until
# the bridge detached its eventq, pings us and checks that it wrote
# nothing into our memory (vt_host asleep_watch / asleep_result).
PM_DELAY=/sys/module/suspend/parameters/pm_test_delay
pm_cycle() {
	local rc=0
	echo devices >/sys/power/pm_test || return 1
	echo "$1" >/sys/power/state || rc=1
	echo none >/sys/power/pm_test
	[ "$rc" = 0 ] || echo "echo $1 >/sys/power/state failed"
	return "$rc"
}
sleep_cycle() {
	local disk r0 sum a0
	load_bus venet vbus_blk || return 1
	net_up || { echo "venet does not answer before sleeping"; return 1; }
	vt_wait 30 blk_disk >/dev/null || return 1
	disk=$(blk_disk)
	r0=$(bstat reattach)
	dd if=/dev/urandom of=/tmp/sleep.in bs=64k count=16 2>/dev/null
	sum=$(md5sum </tmp/sleep.in)
	dd if=/tmp/sleep.in of="/dev/$disk" bs=64k oflag=direct 2>/dev/null ||
		{ echo "cannot write the disk before sleeping"; return 1; }
	a0=$(said "vbus bridge asleep")
	# the host's watch only around s2idle: the 5 s hibernation test
	# sleep was seen asleep for 42 ms by the host in one run (TCG)
	if [ "$1" = freeze ]; then
		vt_host asleep_watch || return 1
	fi
	echo 3 >"$PM_DELAY" || return 1
	pm_cycle "$1" || return 1
	if [ "$1" = freeze ]; then
		vt_host asleep_result || return 1
	fi
	[ "$(said "vbus bridge asleep")" -gt "$a0" ] || { echo "the bridge's sleep callback did not run"; return 1; }
	vt_wait 30 reattached "$r0" || { echo "no re-attach after waking up"; return 1; }
	wait_bound 1 && ring_ok 1 100 && ring_ok 2 100 || return 1
	vt_wait 30 test "$(cat "/sys/class/net/$IF/carrier")" = 1 || { echo "venet carrier off after waking up"; return 1; }
	ping -c 3 -i 0.1 -W 5 "$VT_HOST_IP" >/dev/null || { echo "no ping after waking up"; return 1; }
	[ "$(dd if="/dev/$disk" bs=64k count=16 iflag=direct 2>/dev/null | md5sum)" = "$sum" ] ||
		{ echo "the disk reads back other data after waking up"; return 1; }
}
check_sleep() {
	local m
	m=$(vt_console_mark)
	vt_check sleep/s2idle-devices sleep_cycle freeze
	# hibernation (disk: freeze, thaw) calls the same two callbacks
	# (SYSTEM_SLEEP_PM_OPS); the suite's --sleep-disk adds its cycle (11 s)
	[ "${VT_SLEEP_DISK:-0}" = 0 ] ||
		vt_check sleep/hibernate-freeze-thaw sleep_cycle disk
	group_end sleep "$m"
}

# ---- 20.1: an honest host, rx under load ----
# The host floods pings at us, and spurious signals, while the MTU changes
# back and forth (a drain of the rx ring each time) and NAPI polls on both
# vCPUs: a NAPI
# poll racing the "look again" after napi_complete_done() corrupts the
# reaper's state (a spurious ring fault, or buffers handed out early).
mtu_flip() {
	while [ ! -e /tmp/rx.stop ]; do
		ip link set dev "$IF" mtu 1400 2>/dev/null
		ip link set dev "$IF" mtu 1500 2>/dev/null
	done
}
rx_race() {
	local pid
	load_bus venet || return 1
	net_up || return 1
	rm -f /tmp/rx.stop
	mtu_flip &
	pid=$!
	# spurious signals (allowed: a signal only says "look"): NAPI is
	# scheduled from the eventq and from the tx path at once
	vt_host fault storm 3 >/dev/null
	vt_host rx_flood "${VT_RX_FLOOD:-6000}"
	vt_host fault storm off >/dev/null
	touch /tmp/rx.stop
	wait "$pid"
	if dmesg | grep -E "ring fault|out of range"; then
		echo "venet faulted its ring under an honest host"
		return 1
	fi
	pinging
}
check_rx_race() {
	local m
	m=$(vt_console_mark)
	vt_check rx_race/honest-flood-mtu-flips rx_race
	group_end rx_race "$m"
}

# ---- 20.5: the guest's own fields in shared memory ----
pinging() { ping -c 20 -i 0.1 -W 5 "$VT_HOST_IP" >/dev/null; }
own_enabled() {
	load_bus venet || return 1
	net_up || return 1
	vt_host fault storm 3 enable || return 1
	pinging
	local rc=$?
	vt_host fault storm off >/dev/null
	[ "$rc" = 0 ] && pinging
}
# venet's tx ring is DEVSHM 1. The host writes the guest's own v6
# counters: "complete" moves the tail (north's) and valid_head on by 4,
# completing slots the guest reaped already; "poke" puts garbage in
# inuse_head (byte 384, north's). The next xmit reaps first.
# own_counters ACTION...: the fault, traffic, then venet reloaded (a
# faulted channel comes back with a fresh netdev)
own_counters() {
	vt_host fault "$@" || return 1
	ping -c 5 -i 0.1 -W 1 "$VT_HOST_IP" >/dev/null 2>&1
	rmmod venet || return 1
	vt_kmod_load venet || return 1
	net_up
}
check_own_fields() {
	local m
	m=$(vt_console_mark)
	vt_check own_fields/enabled-held-under-traffic own_enabled
	vt_check own_fields/slots-completed-twice own_counters complete 3 1 4
	vt_check own_fields/inuse-head-garbage own_counters poke 3 1 384 0x7fff1234
	group_end own_fields "$m"
}

BOOT=$(vt_host boot) || BOOT=0
case "$BOOT" in
1)
	vt_check load load_bus
	vt_run_checks rx_race storm_close reattach devadd_flood reboot
	# without the reboot group: the rest in this boot
	vt_run_checks sleep devshm_version own_fields disconnect_timeout
	;;
2)
	after_reboot
	vt_run_checks sleep devshm_version own_fields disconnect_timeout
	;;
*)
	vt_fail "boot-$BOOT" "an unplanned reboot (a panic?): see the log above"
	;;
esac
vt_done
