# shellcheck shell=dash
# vbus-ipc in the guest (the vbus_ipc suite's host.sh runs it): vbus_ipc.ko
# next to the vbus bridge, then guest process <-> host process sessions
# with /test/ipc-peer (libioq, static). The host side serves one host
# process per session, in this order (host.sh checks their exit codes),
# one group of sessions per check group: exchange (echo), host_killed
# (die-after 2000), reopen (echo), garbage, guest_killed (echo), own_loop
# (echo-check in a poll loop of its own), cycles (echo for every
# open/close cycle).
# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
. /test/config.sh

dev=/dev/vbus-ipc0
peer() { /test/ipc-peer guest "$dev" "$@" --timeout 120000; }
log() { echo "vbus-ipc-tests: $*"; }

vt_check bridge-loads vt_kmod_load vbus_pcibridge
vt_check ipc-loads vt_kmod_load vbus_ipc
vt_check ipc-device-node test -c "$dev"
vt_check ipc-service-named sh -c 'dmesg | grep -q "vbus-ipc service \"echo\""'
# the bridge kept its own ivshmem and left ours alone, and the other way round
vt_check bridge-bound-its-own sh -c 'ls /sys/bus/pci/drivers/vbus-pcibridge | grep -q ":"'
# shellcheck disable=SC2016 # for the guest's sh
vt_check drivers-do-not-fight sh -c '[ "$(ls /sys/bus/pci/drivers/vbus_ipc | grep -c :)" = 1 ]'

# bench: echo for each of the host's measurements, nothing else
if [ "${VIPC_BENCH:-0}" -gt 0 ]; then
	i=0
	while [ $i -lt "$VIPC_BENCH" ]; do
		peer echo >/tmp/x.out 2>&1 || { cat /tmp/x.out; vt_fail "bench-echo-$i" "exit=$?"; }
		i=$((i + 1))
	done
	vt_pass bench-echo-sessions
	vt_done
	exit 0
fi

# 1. messages both ways, sequence numbers and checksums, up to the buffer size
check_exchange() {
	local t0 t1
	t0=$(cut -d' ' -f1 /proc/uptime)
	if peer send "$VIPC_MSGS" 32 >/tmp/x.out 2>&1; then
		vt_pass "exchange-$VIPC_MSGS"
	else
		vt_fail "exchange-$VIPC_MSGS" "exit=$?: $(tail -n 1 /tmp/x.out)"
	fi
	cat /tmp/x.out
	t1=$(cut -d' ' -f1 /proc/uptime)
	log "EXCHANGE $(grep -o 'sent.*' /tmp/x.out | head -n 1) (wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
}

# 2. the host process is killed mid-stream: -EPIPE, no oops
check_host_killed() {
	local rc
	peer send 1000000 >/tmp/x.out 2>&1
	rc=$?
	cat /tmp/x.out
	if [ "$rc" = 3 ]; then vt_pass host-killed-gives-epipe; else vt_fail host-killed-gives-epipe "exit=$rc"; fi
}

# 3. reopen works with the next host process
check_reopen() {
	vt_check reopen-after-host-death peer send 1000
}

# 4. the host process posts a descriptor outside the area: the guest's
#    libioq faults the channel (-EIO); the kernel never reads it
check_garbage() {
	local rc
	peer send 10 >/tmp/x.out 2>&1
	rc=$?
	cat /tmp/x.out
	if [ "$rc" = 4 ]; then vt_pass host-garbage-faults-channel; else vt_fail host-garbage-faults-channel "exit=$rc"; fi
}

# 5. a guest process with the region mapped is killed mid-stream; while it
#    runs, vbus_ipc cannot be unloaded
check_guest_killed() {
	local bg
	/test/ipc-peer guest "$dev" send 100000000 --timeout 120000 >/tmp/bg.out 2>&1 &
	bg=$!
	vt_wait 30 grep -q attached /tmp/bg.out
	sleep 1
	if rmmod vbus_ipc 2>/dev/null; then
		vt_fail unload-refused-while-mapped "rmmod succeeded"
	else
		vt_pass unload-refused-while-mapped
	fi
	kill -9 "$bg"
	wait "$bg" 2>/dev/null
	vt_check device-still-there-after-kill test -c "$dev"
}

# 5b. both ends sleep in a poll loop of their own (ioq_ipc_arm +
#     ioq_ipc_pollfd, ipc-peer guest-poll/host-poll): every message checked
#     both ways, and the host process ends when this one closes
check_own_loop() {
	vt_check own-loop-exchange /test/ipc-peer guest-poll "$dev" send 5000 --timeout 120000
}

# 6. open/close cycles: no slab growth once the file is closed
check_cycles() {
	local i bad
	peer send 10 >/dev/null 2>&1	# warm-up cycle
	# (a figure: what 20 runs of the program cost without opening the device)
	vt_slab_snapshot /tmp/slabx
	i=0
	while [ $i -lt 20 ]; do /test/ipc-peer >/dev/null 2>&1; i=$((i + 1)); done
	vt_slab_snapshot /tmp/slaby
	log "EXEC-ONLY 20 runs; slab growth: $(vt_slab_growth /tmp/slabx /tmp/slaby)"
	vt_slab_snapshot /tmp/slabz
	log "NOTHING between two snapshots; slab growth: $(vt_slab_growth /tmp/slaby /tmp/slabz)"
	vt_slab_snapshot /tmp/slab0
	i=0
	bad=0
	while [ $i -lt "$VIPC_CYCLES" ]; do
		peer send 10 >/tmp/x.out 2>&1 || { bad=$((bad + 1)); cat /tmp/x.out; }
		i=$((i + 1))
	done
	vt_slab_snapshot /tmp/slab1
	if [ "$bad" = 0 ]; then vt_pass "open-close-$VIPC_CYCLES-cycles"; else vt_fail "open-close-$VIPC_CYCLES-cycles" "$bad failed"; fi
	log "CYCLES $VIPC_CYCLES; slab growth: $(vt_slab_growth /tmp/slab0 /tmp/slab1)"
	# dentry, inode_cache and lsm_inode_cache were seen to grow by 0, +20 and
	# +99 over these cycles in three runs of the same code; the driver
	# allocates none of them (suspected: the kernfs inodes the snapshot's own
	# writes to /sys/kernel/slab/*/shrink instantiate, freed after an RCU
	# grace period a TCG guest may not finish within the helper's pause; not
	# proven). They are skipped; every other cache (filp, kmalloc-*, ...) is
	# compared, and the NOTHING figure above shows the helper's noise.
	VT_SLAB_IGNORE='^(vmap_area|dentry|inode_cache|lsm_inode_cache)$' \
		vt_slab_check "slab-stable-after-$VIPC_CYCLES-cycles" /tmp/slab0 /tmp/slab1 16
}

if [ "$VIPC_DEMO" = 1 ]; then
	vt_run_checks exchange
	vt_done
	exit 0
fi
vt_run_checks exchange host_killed reopen garbage guest_killed own_loop cycles

# 7. with nothing open, the module unloads and no oops was logged
vt_check ipc-unloads rmmod vbus_ipc
vt_check no-device-after-unload sh -c "! test -e $dev"
vt_done
