# shellcheck shell=dash
# vbus-ipc between two guests (the ipc_link suite's host.sh runs it in
# both). LINK_ROLE=south: serve LINK_SESSIONS ("ACTION:NAME" ...), one
# ipc-peer session each, in order. LINK_ROLE=north: the checks, in the
# order the south serves them (host.sh lists them).
# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
. /test/config.sh

dev=/dev/vbus-ipc0
log() { echo "ipc-link-tests: $*"; }
peer() { /test/ipc-peer guest "$dev" "$@" --timeout 600000; }

vt_check ipc-loads vt_kmod_load vbus_ipc
vt_check ipc-device-node test -c "$dev"

# The south's reboot: echo in the background (the north streams into it)
# until the north asks the host to reboot us (vt_host reboot_wait returns
# then), then reboot(2) from inside the running QEMU: the kernel's
# shutdown ends the session (vbus_ipc_chardev_quiesce) and QEMU resets.
reboot_mid_stream() {
	peer echo >/tmp/echo.out 2>&1 &
	vt_host reboot_wait || return 1
	log "rebooting"
	reboot -f
	sleep 60	# the reset comes first
}

# one session of the south: ACTION, "vchan" (echo-check through the
# vchan-style calls, the device found by service name) or "reboot"
serve() {
	if [ "$1" = vchan ]; then
		/test/ipc-peer vchan-server chat echo-check --timeout 600000
	elif [ "$1" = reboot ]; then
		reboot_mid_stream
	else
		peer "$1"
	fi
}

if [ "$LINK_ROLE" = south ]; then
	vt_check south-side sh -c 'dmesg | grep -q "south end of a link"'
	# after a reboot (the host counts our boots) the rest of the sessions
	if boots=$(vt_host south_boot) && [ "$boots" -gt 1 ]; then
		log "boot $boots of this south guest: serving the sessions after the reboot"
		LINK_SESSIONS=$LINK_AFTER_REBOOT
	fi
	ncyc=0
	for s in $LINK_SESSIONS; do
		if serve "${s%%:*}" >/tmp/x.out 2>&1; then
			vt_pass "south-${s#*:}"
		else
			vt_fail "south-${s#*:}" "exit=$?: $(tail -n 1 /tmp/x.out)"
		fi
		cat /tmp/x.out
		# the first cycle warms up, as in the north's check_cycles
		[ "${s#*:}" = cycle ] || continue
		ncyc=$((ncyc + 1))
		[ "$ncyc" = 1 ] && vt_slab_snapshot /tmp/slab0
	done
	if [ "$ncyc" -gt 1 ]; then
		vt_slab_snapshot /tmp/slab1
		log "SOUTH CYCLES $((ncyc - 1)); slab growth: $(vt_slab_growth /tmp/slab0 /tmp/slab1)"
		VT_SLAB_IGNORE='^(vmap_area|dentry|inode_cache|lsm_inode_cache)$' \
			vt_slab_check "south-slab-stable-after-$((ncyc - 1))-cycles" /tmp/slab0 /tmp/slab1 16
	fi
	vt_done
	exit 0
fi

# shellcheck disable=SC2016 # for the guest's sh
vt_check north-side sh -c 'dmesg | grep "vbus-ipc service \"chat\"" | grep -vq "south end"'

# 1. checked messages both ways (the south checks them on the way)
check_exchange() {
	local t0 t1
	t0=$(vt_uptime_cs)
	if peer send "$LINK_MSGS" 32 >/tmp/x.out 2>&1; then
		vt_pass "exchange-$LINK_MSGS"
	else
		vt_fail "exchange-$LINK_MSGS" "exit=$?: $(tail -n 1 /tmp/x.out)"
	fi
	cat /tmp/x.out
	t1=$(vt_uptime_cs)
	log "EXCHANGE $(grep -o 'sent.*' /tmp/x.out | head -n 1) (wall $(((t1 - t0) / 100)) s)"
}

# 1b. the same through the vchan-style calls, the device found by name
check_vchan() {
	local t0 t1
	vt_check sysfs-names-the-channel sh -c 'grep -qx chat /sys/class/misc/vbus-ipc0/service && grep -qx north /sys/class/misc/vbus-ipc0/side'
	t0=$(vt_uptime_cs)
	if /test/ipc-peer vchan-client chat send "$LINK_MSGS" 32 --timeout 600000 >/tmp/x.out 2>&1; then
		vt_pass "vchan-exchange-$LINK_MSGS"
	else
		vt_fail "vchan-exchange-$LINK_MSGS" "exit=$?: $(tail -n 1 /tmp/x.out)"
	fi
	cat /tmp/x.out
	t1=$(vt_uptime_cs)
	log "VCHAN $(grep -o 'sent.*' /tmp/x.out | head -n 1) (wall $(((t1 - t0) / 100)) s)"
}

# 2. a guest the link does not name cannot attach; ours goes on
check_third_guest() {
	vt_check third-guest-refused vt_host third
	vt_check link-unharmed-by-third peer send 1000
}

# peer_ends NAME REQUEST SECS: stream into the south's echo, then the
# host's REQUEST ends the south guest mid-stream (its QEMU killed, or the
# guest rebooted inside it): -EPIPE (a clear error) within SECS
peer_ends() {
	local bg rc t0 t1
	/test/ipc-peer guest "$dev" send 100000000 --timeout 600000 >/tmp/bg.out 2>&1 &
	bg=$!
	vt_wait 60 grep -q attached /tmp/bg.out
	t0=$(vt_uptime_cs)
	vt_host "$2"
	wait "$bg"
	rc=$?
	t1=$(vt_uptime_cs)
	cat /tmp/bg.out
	if [ "$rc" = 3 ] && grep -q "Broken pipe" /tmp/bg.out; then
		vt_pass "$1-gives-epipe"
	else
		vt_fail "$1-gives-epipe" "exit=$rc"
	fi
	log "$(echo "$1" | tr '[:lower:]' '[:upper:]') seen after $(((t1 - t0) / 100)).$(((t1 - t0) % 100 / 10)) s"
	if [ $((t1 - t0)) -le $(($3 * 100)) ]; then
		vt_pass "$1-seen-within-${3}s"
	else
		vt_fail "$1-seen-within-${3}s" "$(((t1 - t0) / 100)) s"
	fi
}

# 3. the south guest's QEMU is killed mid-stream; then the channel
#    reconnects once a new one is up
check_peer_killed() {
	peer_ends peer-killed kill_peer 30
	vt_check boot-new-peer vt_host boot_peer
	vt_check reconnect-after-peer-back peer send 1000
}

# 4. the south posts a descriptor outside the area: this end faults
check_garbage() {
	local rc
	peer send 10 >/tmp/x.out 2>&1
	rc=$?
	cat /tmp/x.out
	if [ "$rc" = 4 ]; then vt_pass peer-garbage-faults-channel; else vt_fail peer-garbage-faults-channel "exit=$rc"; fi
}

check_after_garbage() {
	vt_check works-after-garbage peer send 1000
}

# 5. open/close cycles: no slab growth in this guest (the south checks its own)
check_cycles() {
	local i bad
	peer send 10 >/dev/null 2>&1	# warm-up cycle
	vt_slab_snapshot /tmp/slab0
	i=0
	bad=0
	while [ $i -lt "$LINK_CYCLES" ]; do
		peer send 10 >/tmp/x.out 2>&1 || { bad=$((bad + 1)); cat /tmp/x.out; }
		i=$((i + 1))
	done
	vt_slab_snapshot /tmp/slab1
	if [ "$bad" = 0 ]; then vt_pass "open-close-$LINK_CYCLES-cycles"; else vt_fail "open-close-$LINK_CYCLES-cycles" "$bad failed"; fi
	log "CYCLES $LINK_CYCLES; slab growth: $(vt_slab_growth /tmp/slab0 /tmp/slab1)"
	# as in the vbus_ipc suite: caches the driver never allocates from
	VT_SLAB_IGNORE='^(vmap_area|dentry|inode_cache|lsm_inode_cache)$' \
		vt_slab_check "slab-stable-after-$LINK_CYCLES-cycles" /tmp/slab0 /tmp/slab1 16
}

# 6. the south guest reboots inside its running QEMU mid-stream: its
#    kernel's shutdown ends the session at once (5 s: without it the end
#    comes only with the rebooted driver, 17 s in one TCG run); the
#    channel reconnects once its driver is back (same QEMU, same region)
check_reboot() {
	peer_ends peer-reboot reboot_peer 5
	vt_check reconnect-after-peer-reboot peer send 1000
}

vt_run_checks exchange vchan third_guest peer_killed garbage after_garbage cycles reboot
vt_done
