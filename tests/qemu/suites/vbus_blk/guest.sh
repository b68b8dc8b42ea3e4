# shellcheck shell=dash
# Guest side of the vbus_blk suite (host.sh next to it); runs as
# /test/run.sh under busybox sh. Loads the bus stack and vbus_blk.ko
# against vbus-hostd's two vbus-blk devices (serial $VT_RW_SERIAL: a
# read-write disk; serial $VT_RO_SERIAL: ro=1, filled by the host) and
# checks: the disks and their sysfs (serial, size, ro, write cache,
# discard); data written in the guest is what the host's backing file
# holds, and the other way round; fio with verify=crc32c (sequential and
# random, QD1 and QD32, direct I/O); ext4 (mkfs, files, fsck -n, remount,
# checksums); discard makes the backing file sparse; the read-only disk
# rejects writes and keeps its data; hot drop under fio and re-add; driver
# unbind under fio; udev names the disks with dist/udev/60-vbus-blk.rules
# (by-id, by-uuid, by-label); per-queue MSI-X vectors: completions of
# reads from either CPU interrupt the disk's queue vectors on both CPUs,
# none through the eventq, and a bridge loaded with queue_vectors=0 (an
# older guest) still moves data through the eventq; load/unload cycles (every 4th with a hot drop + add of
# the rw disk) without slab growth; flush: data fsynced in the guest is in
# the backing file after the host kills vbus-hostd (SIGKILL) right after
# the fsync returned; qcow2: a qcow2 overlay through image= and an
# nbd= disk (two more disks the host adds and drops: see host.sh); last,
# with the host dead, a request times out, the device faults and fails
# what comes next at once.
#
# Host requests (vt_host, lib/guest.sh; host.sh's req_ functions):
#   sha  rw|ro OFF LEN    sha256 of that byte range of the backing file
#   blocks rw|ro          bytes the backing file has allocated (st_blocks*512)
#   drop rw | add rw      `vbus-hostd ctl drop/add` of the rw disk
#   killcheck rw OFF LEN SHA   SIGKILL vbus-hostd at once, then compare
#   topo rw               "PBS IO_MIN IO_OPT NONROT" of the rw disk (ctl stats)
#   resize rw BYTES       `vbus-hostd ctl resize` of the rw disk
#   addold | dropold      a compat=v1 disk (serial vbt-old) added / dropped
#   addthr | dropthr      a queues=2 threads=2 disk (serial vbt-thr)
#   thrcheck              both of its host queue threads served requests
#   qadd | qdrop          add (drop) the qcow2 disk (id 3) and the nbd= disk (id 4)
#   qsha q|n|base OFF LEN sha256 of a range of the overlay / nbd overlay / base
#   qstat ID KEY MIN      ctl stats KEY of device ID >= MIN (not yet: fails)
#   qkill OFF LEN SHA     SIGKILL the image's storage daemon, then compare
#   nstop | nstart        kill (start) the nbd= disk's server
#   qlock hostd|qemu      a second vbus-hostd / QEMU on the image is refused
#   qcheck                qemu-img check of both overlays, base unchanged
#
# Knobs from /test/config.sh (written by the host script):
#   VT_RW_SERIAL VT_RO_SERIAL VT_RW_BYTES VT_RO_BYTES
#   VT_FIO_MB     MiB each fio job covers (the 4 jobs move >= 1 GiB)
#   VT_CYCLES     load/unload cycles for the slab check (default 20)

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VT_RW_SERIAL:=vbt-rw}"
: "${VT_RO_SERIAL:=vbt-ro}"
: "${VT_RW_BYTES:=134217728}"
: "${VT_RO_BYTES:=16777216}"
: "${VT_FIO_MB:=128}"
: "${VT_CYCLES:=20}"
: "${VT_Q_BYTES:=67108864}"

MODS="vbus_core vbus_proxy vbus_pcibridge vbus_blk"

log() { echo "blk-tests: $*"; }

# ---- disks -----------------------------------------------------------------
# disk SERIAL [SECS]: the vbdN whose serial is SERIAL (waits for it).
disk() {
	local n=0 max=$((${2:-20} * 5)) d
	while [ "$n" -lt "$max" ]; do
		for d in /sys/block/vbd*; do
			[ -r "$d/serial" ] || continue
			if [ "$(cat "$d/serial")" = "$1" ]; then
				echo "${d##*/}"
				return 0
			fi
		done
		n=$((n + 1))
		usleep 200000
	done
	echo "no disk with serial $1"
	return 1
}

# gone NAME [SECS]: /sys/block/NAME disappears.
gone() {
	vt_wait "${2:-20}" test ! -e "/sys/block/$1" && return 0
	echo "$1 still there"
	return 1
}

load_all() {
	local m
	for m in $MODS; do
		vt_kmod_load "$m" || { echo "insmod $m failed"; return 1; }
	done
}

# attr DISK FILE WANT: /sys/block/DISK/FILE reads WANT.
attr() {
	local v
	v=$(cat "/sys/block/$1/$2") || return 1
	[ "$v" = "$3" ] && return 0
	echo "$1/$2 is '$v', wanted '$3'"
	return 1
}

attr_nonzero() {
	local v
	v=$(cat "/sys/block/$1/$2") || return 1
	[ "$v" != 0 ] && return 0
	echo "$1/$2 is 0"
	return 1
}

# sha_dev DEV OFF LEN: sha256 of a byte range of /dev/DEV (O_DIRECT, 1 MiB units).
sha_dev() {
	dd if="/dev/$1" bs=1M skip=$(($2 / 1048576)) count=$(($3 / 1048576)) \
		iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1
}

# same_as_host DEV rw|ro OFF LEN: guest and host see the same bytes.
same_as_host() {
	local g h
	g=$(sha_dev "$1" "$3" "$4")
	h=$(vt_host sha "$2" "$3" "$4") || { echo "$h"; return 1; }
	[ "$g" = "$h" ] && return 0
	echo "guest sha $g, vt_host sha $h"
	return 1
}

# write_pattern DEV OFF LEN: random data at OFF, O_DIRECT; prints its sha.
write_pattern() {
	head -c "$3" /dev/urandom >/tmp/pattern
	dd if=/tmp/pattern of="/dev/$1" bs=1M seek=$(($2 / 1048576)) \
		oflag=direct conv=notrunc 2>/dev/null || return 1
	sha256sum </tmp/pattern | cut -d' ' -f1
}

guest_to_host() {
	local want got
	want=$(write_pattern "$1" "$2" "$3") || { echo "write failed"; return 1; }
	got=$(vt_host sha rw "$2" "$3") || { echo "$got"; return 1; }
	[ "$want" = "$got" ] && return 0
	echo "wrote sha $want, host file has $got"
	return 1
}

# ---- fio -------------------------------------------------------------------
# fio_verify NAME DEV RW BS QD [LOOPS [MB]]: one job over MB (VT_FIO_MB)
# MiB with crc32c verification of everything written (LOOPS times,
# default 1).
fio_verify() {
	local out=/tmp/fio-$1.out
	if ! /usr/bin/fio --name="$1" --filename="/dev/$2" --rw="$3" --bs="$4" \
		--iodepth="$5" --loops="${6:-1}" --ioengine=libaio --direct=1 \
		--size="${7:-$VT_FIO_MB}M" --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --group_reporting >"$out" 2>&1; then
		tail -n 20 "$out"
		return 1
	fi
}

# ---- ext4 ------------------------------------------------------------------
mk_tree() {
	local d f
	for d in 0 1 2 3 4 5 6 7; do
		mkdir -p "/mnt/t/d$d/sub" || return 1
		for f in 0 1 2 3 4 5 6 7 8 9; do
			head -c $((f * 37000 + d * 1000 + 1)) /dev/urandom >"/mnt/t/d$d/f$f" || return 1
		done
		head -c 1048576 /dev/urandom >"/mnt/t/d$d/sub/big" || return 1
	done
	(cd /mnt/t && find . -type f | sort | xargs md5sum) >/tmp/tree.md5
}

# metadata_csum wants the crc32c shash; ext4's softdep is not followed.
# Each once: an earlier group may have loaded them.
ext4_load() {
	local m
	for m in crc32c_generic ext4; do
		grep -q "^$m " /proc/modules || vt_kmod_load "$m" || return 1
	done
}

# ext4_cycle DEV [PREFIX]: checks named PREFIX-... (default ext4)
ext4_cycle() {
	local dev=$1 p=${2:-ext4}
	mkdir -p /mnt/t
	vt_check "$p-load" ext4_load || return 1
	vt_check "$p-mkfs" /usr/sbin/mkfs.ext4 -q -F "/dev/$dev" || return 1
	vt_check "$p-mount" mount -t ext4 "/dev/$dev" /mnt/t || return 1
	vt_check "$p-write-tree" mk_tree
	sync
	vt_check "$p-umount" umount /mnt/t
	vt_check "$p-fsck" /usr/sbin/fsck.ext4 -n -f "/dev/$dev"
	vt_check "$p-remount" mount -t ext4 "/dev/$dev" /mnt/t || return 1
	vt_check "$p-checksums" sh -c 'cd /mnt/t && md5sum -c -s /tmp/tree.md5'
	# fstrim: free space is handed back to the host
	rm -rf /mnt/t/d0 /mnt/t/d1 /mnt/t/d2 /mnt/t/d3
	vt_check "$p-fstrim" /usr/sbin/fstrim -v /mnt/t
	vt_check "$p-umount-2" umount /mnt/t
}

# ---- discard ---------------------------------------------------------------
discard_sparse() {
	local dev=$1 before after
	before=$(vt_host blocks rw) || { echo "$before"; return 1; }
	/usr/sbin/blkdiscard "/dev/$dev" || return 1
	after=$(vt_host blocks rw) || { echo "$after"; return 1; }
	log "DISCARD backing file allocated: $before -> $after bytes"
	# fio left most of the file allocated; discard hands nearly all back
	[ "$before" -ge $((VT_FIO_MB * 1048576 / 2)) ] ||
		{ echo "backing file only had $before bytes allocated before"; return 1; }
	[ "$after" -le $((before / 8)) ] && return 0
	echo "still $after of $before bytes allocated after blkdiscard"
	return 1
}

zeroout() {
	local dev=$1 z
	/usr/sbin/blkdiscard -z -o 1048576 -l 1048576 "/dev/$dev" || return 1
	z=$(head -c 1048576 /dev/zero | sha256sum | cut -d' ' -f1)
	[ "$(sha_dev "$dev" 1048576 1048576)" = "$z" ] || { echo "guest does not read zeroes"; return 1; }
	[ "$(vt_host sha rw 1048576 1048576)" = "$z" ] || { echo "host file not zero"; return 1; }
}

# ---- read-only disk --------------------------------------------------------
ro_write_fails() {
	if dd if=/dev/zero of="/dev/$1" bs=4096 count=1 oflag=direct 2>/tmp/ro.err; then
		echo "write to the read-only disk succeeded"
		return 1
	fi
	log "ro write refused: $(tail -n 1 /tmp/ro.err)"
}

# ---- hot drop / unbind under fio -------------------------------------------
FIO_BG=
# fio_bg_start DEV: fio in the background, returning once DEV has
# requests in flight (/sys/block/DEV/inflight), so that what follows
# removes the disk under I/O.
fio_bg_start() {
	local n=0 r w
	/usr/bin/fio --name=bg --filename="/dev/$1" --rw=randrw --bs=4k --iodepth=32 \
		--ioengine=libaio --direct=1 --time_based --runtime=120 \
		--size=64M >/tmp/fio-bg.out 2>&1 &
	FIO_BG=$!
	while [ "$n" -lt 300 ]; do
		read -r r w <"/sys/block/$1/inflight" 2>/dev/null && [ $((r + w)) -gt 0 ] && return 0
		n=$((n + 1))
		usleep 100000
	done
	log "no request of the background fio seen in flight on $1"
}

# fio_bg_ends: the background fio ends (with I/O errors) within 60 s.
fio_bg_ends() {
	local n=0
	while [ "$n" -lt 300 ]; do
		kill -0 "$FIO_BG" 2>/dev/null || break
		n=$((n + 1))
		usleep 200000
	done
	if kill -0 "$FIO_BG" 2>/dev/null; then
		kill -9 "$FIO_BG"
		echo "fio still running 60 s after the disk went"
		return 1
	fi
	if wait "$FIO_BG"; then
		tail -n 5 /tmp/fio-bg.out
		echo "fio saw no error although its disk went away under it"
		return 1
	fi
	log "fio after the removal: $(grep -m 1 -i 'error' /tmp/fio-bg.out)"
}

hot_drop() {
	local dev=$1 name
	fio_bg_start "$dev"
	vt_check hotdrop-drop vt_host drop rw
	vt_check hotdrop-disk-gone gone "$dev" 30
	vt_check hotdrop-fio-ends fio_bg_ends
	vt_check hotdrop-readd vt_host add rw
	if name=$(disk "$VT_RW_SERIAL" 30); then
		vt_pass hotdrop-disk-back
		vt_check hotdrop-data-after-readd guest_to_host "$name" 8388608 1048576
	else
		vt_fail hotdrop-disk-back "$name"
	fi
}

unbind_under_io() {
	local dev=$1 vdev drv=/sys/bus/vbus-proxy/drivers/vbus-blk name
	vdev=$(basename "$(readlink -f "/sys/block/$dev/device")")
	[ -d "$drv" ] || drv=$(dirname "$(readlink -f "/sys/block/$dev/device/driver")")
	fio_bg_start "$dev"
	vt_check unbind-under-fio sh -c "echo $vdev >$drv/unbind"
	vt_check unbind-disk-gone gone "$dev" 30
	vt_check unbind-fio-ends fio_bg_ends
	vt_check rebind sh -c "echo $vdev >$drv/bind"
	if name=$(disk "$VT_RW_SERIAL" 30); then
		vt_pass rebind-disk-back
		vt_check rebind-data guest_to_host "$name" 8388608 1048576
	else
		vt_fail rebind-disk-back "$name"
	fi
}

# ---- load/unload cycles ----------------------------------------------------
# cycle [drop]: load, I/O on both disks, unload; with "drop", the host also
# drops the rw disk and adds it back in between (the DEVDROP remove path).
cycle() {
	local d
	vt_kmod_load vbus_blk || return 1
	d=$(disk "$VT_RW_SERIAL") || { rmmod vbus_blk; return 1; }
	disk "$VT_RO_SERIAL" >/dev/null || { rmmod vbus_blk; return 1; }
	sha_dev "$d" 0 1048576 >/dev/null || { rmmod vbus_blk; return 1; }
	write_pattern "$d" 2097152 1048576 >/dev/null || { rmmod vbus_blk; return 1; }
	if [ "${1:-}" = drop ]; then
		# shellcheck disable=SC2015 # whichever step fails, the same
		vt_host drop rw >/dev/null && gone "$d" >/dev/null &&
			vt_host add rw >/dev/null && d=$(disk "$VT_RW_SERIAL") &&
			sha_dev "$d" 0 1048576 >/dev/null || { rmmod vbus_blk; return 1; }
	fi
	rmmod vbus_blk
}

cycles() {
	local i=0 bad=0
	rmmod vbus_blk || { vt_fail cycles-rmmod "rmmod vbus_blk failed"; return; }
	if ! cycle drop; then
		vt_fail cycles-warmup "first load/I/O/drop/add/unload round failed"
		return
	fi
	vt_slab_snapshot /tmp/slab0
	# every 4th cycle with a hot drop + add of the rw disk
	while [ "$i" -lt "$VT_CYCLES" ]; do
		if [ $((i % 4)) = 0 ]; then cycle drop; else cycle; fi || { bad=1; break; }
		i=$((i + 1))
	done
	if [ "$bad" = 0 ]; then
		vt_pass "cycles-$VT_CYCLES"
	else
		vt_fail "cycles-$VT_CYCLES" "cycle $i failed"
	fi
	vt_slab_snapshot /tmp/slab1
	log "CYCLES slab growth: $(vt_slab_growth /tmp/slab0 /tmp/slab1)"
	vt_slab_check cycles-no-slab-growth /tmp/slab0 /tmp/slab1 16
	vt_check cycles-reload vt_kmod_load vbus_blk
}

# ---- per-queue MSI-X vectors (host.sh: vectors=4 on both sides) -------------
PCIDRV=/sys/bus/pci/drivers/vbus-pcibridge
bstat() { awk -v k="$1" '$1 == k { print $2 }' "$PCIDRV"/*/vbus_stats; }

# vbus_irqs [CPU]: the bridge's device-signal interrupts so far, through
# the eventq and the queue vectors (vbus-q<N>@<pci>), on CPU or on all
vbus_irqs() {
	awk -v cpu="${1:--1}" 'NR == 1 { n = NF; next }
		$NF == "vbus-eventq" || $NF ~ /^vbus-q[0-9]+@/ {
			for (c = 0; c < n; c++) if (cpu < 0 || c == cpu) s += $(c + 2) }
		END { print s + 0 }' /proc/interrupts
}

# qvec_irqs N: interrupts of queue vector N so far (all CPUs)
qvec_irqs() {
	awk -v q="vbus-q$1@" 'NR == 1 { n = NF; next } index($NF, q) == 1 {
			for (c = 2; c <= n + 1; c++) s += $c }
		END { print s + 0 }' /proc/interrupts
}

# bridge_stat KEY WANT: the bridge's vbus_stats KEY reads WANT
bridge_stat() {
	[ "$(bstat "$1")" = "$2" ] && return 0
	echo "vbus_stats $1 is '$(bstat "$1")', wanted '$2'"
	return 1
}

# read_on CPU DEV: 512 direct 4 KiB reads of DEV issued from CPU
read_on() {
	taskset -c "$1" dd if="/dev/$2" of=/dev/null bs=4k count=512 iflag=direct 2>/dev/null ||
		{ echo "dd on CPU $1 failed"; return 1; }
}

# qvec_spread DEV: reads from CPU 0 and from CPU 1 complete through the
# queue vectors, on both CPUs, each vector busy, and not one SHMSIGNAL
# event (the eventq carries none of it)
qvec_spread() {
	local c0 c1 q0 q1 sig e0 e1
	c0=$(vbus_irqs 0) c1=$(vbus_irqs 1) q0=$(qvec_irqs 0) q1=$(qvec_irqs 1)
	sig=$(bstat shmsignal) e0=$(eventq_only)
	read_on 0 "$1" || return 1
	read_on 1 "$1" || return 1
	c0=$(($(vbus_irqs 0) - c0)) c1=$(($(vbus_irqs 1) - c1))
	q0=$(($(qvec_irqs 0) - q0)) q1=$(($(qvec_irqs 1) - q1))
	e1=$(($(eventq_only) - e0))
	log "QVEC 1024 reads: interrupts CPU0 $c0 CPU1 $c1; vbus-q0 $q0 vbus-q1 $q1; eventq $e1; SHMSIGNAL events $(($(bstat shmsignal) - sig))" >/tmp/qvec.log
	if [ "$c0" -eq 0 ] || [ "$c1" -eq 0 ]; then
		echo "interrupts on CPU0 $c0, CPU1 $c1: not on both"
		return 1
	fi
	if [ "$q0" -eq 0 ] || [ "$q1" -eq 0 ]; then
		echo "vbus-q0 $q0, vbus-q1 $q1: a queue vector stayed idle"
		return 1
	fi
	[ "$(bstat shmsignal)" = "$sig" ] ||
		{ echo "$(($(bstat shmsignal) - sig)) SHMSIGNAL events on the eventq"; return 1; }
}
eventq_only() {
	awk 'NR == 1 { n = NF; next } $NF == "vbus-eventq" { for (c = 2; c <= n + 1; c++) s += $c }
		END { print s + 0 }' /proc/interrupts
}

# reload_bridge [PARAM]: the bus stack's bridge and vbus_blk again
reload_bridge() {
	rmmod vbus_blk || { echo "rmmod vbus_blk failed"; return 1; }
	rmmod vbus_pcibridge || { echo "rmmod vbus_pcibridge failed"; return 1; }
	vt_kmod_load vbus_pcibridge "$@" || { echo "insmod vbus_pcibridge $* failed"; return 1; }
	vt_kmod_load vbus_blk || { echo "insmod vbus_blk failed"; return 1; }
	RW=$(disk "$VT_RW_SERIAL") || { echo "$RW"; return 1; }
}

# old_guest: a bridge that offers no per-queue vectors (as one before them)
# to a host that has them: the disk's signals come as SHMSIGNAL events on
# the eventq, and data still goes both ways
old_guest() {
	local sig
	reload_bridge queue_vectors=0 || return 1
	bridge_stat qvec_on 0 || return 1
	bridge_stat qvecs 0 || return 1
	grep -q 'vbus-q[0-9]*@' /proc/interrupts && { echo "queue vectors still requested"; return 1; }
	sig=$(bstat shmsignal)
	guest_to_host "$RW" 8388608 1048576 || return 1
	[ "$(bstat shmsignal)" -gt "$sig" ] || { echo "no SHMSIGNAL event for the I/O"; return 1; }
}

# ---- polled I/O: poll_queues=1, io_uring IOPOLL ------------------------------
# eventq_irqs: the bridge's interrupts so far (all CPUs), through which the
# host signals every vbus ring of this guest (the eventq and the queue
# vectors)
eventq_irqs() { vbus_irqs; }

# polled_io: vbus_blk with a poll queue; verified random writes through
# io_uring with IORING_SETUP_IOPOLL (fio --hipri, which fails on a queue
# that cannot poll) move 8192 I/Os with (almost) no interrupt: the poll
# queue's ring never enables its signal. Reloads the plain module after.
polled_io() {
	local d i0 i1 out=/tmp/fio-poll.out rc=0
	rmmod vbus_blk || return 1
	vt_kmod_load vbus_blk poll_queues=1 || { echo "insmod poll_queues=1 failed"; return 1; }
	if d=$(disk "$VT_RW_SERIAL") && attr "$d" queue/io_poll 1; then
		i0=$(eventq_irqs)
		/usr/bin/fio --name=poll --filename="/dev/$d" --rw=randwrite --bs=4k \
			--iodepth=4 --ioengine=io_uring --hipri=1 --direct=1 --size=16M \
			--verify=crc32c --do_verify=1 --verify_fatal=1 >"$out" 2>&1 ||
			{ tail -n 20 "$out"; rc=1; }
		i1=$(eventq_irqs)
		log "POLL 8192 polled I/Os, $((i1 - i0)) eventq interrupts" >/tmp/poll.log
		[ "$rc" = 0 ] && [ $((i1 - i0)) -ge 1000 ] &&
			{ echo "$((i1 - i0)) interrupts for 8192 polled I/Os"; rc=1; }
	else
		echo "${d:-no disk}"
		rc=1
	fi
	# shellcheck disable=SC2015 # whichever step fails, the same
	rmmod vbus_blk && vt_kmod_load vbus_blk || { echo "plain reload failed"; return 1; }
	return "$rc"
}

# a bad poll_queues= is refused at load, with the reason in dmesg
poll_queues_refused() {
	rmmod vbus_blk || return 1
	if vt_kmod_load vbus_blk poll_queues=16 2>/dev/null; then
		echo "poll_queues=16 loaded"
		return 1
	fi
	dmesg | grep -q "poll_queues=16: must be 0..15" ||
		{ echo "no reason in dmesg"; vt_kmod_load vbus_blk; return 1; }
	vt_kmod_load vbus_blk
}

# ---- flush: fsynced data survives SIGKILL of vbus-hostd -----------------------
flush_kill() {
	local dev=$1 sum
	head -c 4194304 /dev/urandom >/tmp/flush
	sum=$(sha256sum </tmp/flush | cut -d' ' -f1)
	# buffered write, then fsync (a FLUSH after the writes reach the host)
	dd if=/tmp/flush of="/dev/$dev" bs=1M seek=64 conv=fsync,notrunc 2>/dev/null ||
		{ echo "write+fsync failed"; return 1; }
	vt_host killcheck rw 67108864 4194304 "$sum"
}

# ---- qcow2 through image=, and an NBD server that goes away ---------------------
# flush_dev DEV: a FLUSH (fsync of the device): the storage daemon
# writes the qcow2 metadata it caches, so the host's qemu-img sees it
flush_dev() { dd if=/dev/null of="/dev/$1" conv=fsync,notrunc 2>/dev/null; }

# same_as_image DEV q|n|base OFF LEN: the guest reads what the host reads
# from the image (qemu-img, the backing chain resolved)
same_as_image() {
	local g h
	flush_dev "$1" || { echo "flush failed"; return 1; }
	g=$(sha_dev "$1" "$3" "$4")
	h=$(vt_host qsha "$2" "$3" "$4") || { echo "$h"; return 1; }
	[ "$g" = "$h" ] && return 0
	echo "guest sha $g, image sha $h"
	return 1
}

# image_kill DEV: 4 MiB written and fsynced at 48 MiB; the host SIGKILLs
# the image's storage daemon at once and finds them in the image
image_kill() {
	local sum
	head -c 4194304 /dev/urandom >/tmp/qkill
	sum=$(sha256sum </tmp/qkill | cut -d' ' -f1)
	echo "$sum" >/tmp/qkill.sha
	dd if=/tmp/qkill of="/dev/$1" bs=1M seek=48 conv=fsync,notrunc 2>/dev/null ||
		{ echo "write+fsync failed"; return 1; }
	vt_host qkill 50331648 4194304 "$sum"
}

# reads_back DEV OFF LEN SHA: a direct read of the range gives SHA
reads_back() {
	local g
	g=$(sha_dev "$1" "$2" "$3")
	[ "$g" = "$4" ] && return 0
	echo "read $g, wanted $4"
	return 1
}

# write_to_image DEV q|n OFF LEN: a new pattern, O_DIRECT + fsync, is in the image
write_to_image() {
	local want got
	head -c "$4" /dev/urandom >/tmp/pattern
	dd if=/tmp/pattern of="/dev/$1" bs=1M seek=$(($3 / 1048576)) \
		oflag=direct conv=fsync,notrunc 2>/dev/null || { echo "write failed"; return 1; }
	want=$(sha256sum </tmp/pattern | cut -d' ' -f1)
	got=$(vt_host qsha "$2" "$3" "$4") || { echo "$got"; return 1; }
	[ "$want" = "$got" ] && return 0
	echo "wrote sha $want, image has $got"
	return 1
}

NBG=
# nbd_gone DEV: our NBD server killed; a direct write + fsync of 1 MiB at
# 16 MiB waits (parked) while the device's reconnects fail 3 times, the
# server comes back, the write completes and is in the image
nbd_gone() {
	local dev=$1
	head -c 1048576 /dev/urandom >/tmp/nbdw
	sha256sum </tmp/nbdw | cut -d' ' -f1 >/tmp/nbdw.sha
	vt_host nstop || return 1
	dd if=/tmp/nbdw of="/dev/$dev" bs=1M seek=16 oflag=direct conv=fsync,notrunc 2>/tmp/nbdw.err &
	NBG=$!
	vt_wait 30 vt_host qstat 4 nbd_parked_now 1 || { echo "no request parked"; return 1; }
	vt_wait 30 vt_host qstat 4 nbd_connect_failures 3 || return 1
	kill -0 "$NBG" 2>/dev/null || { echo "the write ended while the server was gone"; cat /tmp/nbdw.err; return 1; }
	vt_host nstart
}

nbd_write_done() {
	wait "$NBG" && return 0
	echo "the write failed after the server came back: $(cat /tmp/nbdw.err)"
	return 1
}

nbd_write_in_image() {
	local h
	h=$(vt_host qsha n 16777216 1048576) || { echo "$h"; return 1; }
	[ "$h" = "$(cat /tmp/nbdw.sha)" ] && return 0
	echo "image has $h, the guest wrote $(cat /tmp/nbdw.sha)"
	return 1
}

qcow2_group() {
	local q n
	vt_check qcow2-add vt_host qadd || return
	if q=$(disk vbt-qcow2 30); then vt_pass "qcow2-disk-$q"; else vt_fail qcow2-disk "$q"; return; fi
	if n=$(disk vbt-nbd 30); then vt_pass "qcow2-nbd-disk-$n"; else vt_fail qcow2-nbd-disk "$n"; return; fi
	vt_check qcow2-size attr "$q" size $((VT_Q_BYTES / 512))
	# the base's data at 56 MiB reaches the guest through the overlay
	vt_check qcow2-backing-data same_as_image "$q" base 58720256 1048576
	vt_check qcow2-fio-rand-4k-qd32 fio_verify qrand32 "$q" randwrite 4k 32 1 16
	vt_check qcow2-fio-rand-4k-64k-qd1 fio_verify qrand1 "$q" randwrite 4k-64k 1 1 16
	vt_check qcow2-image-has-fio-data same_as_image "$q" q 0 16777216
	# at 48 MiB, where nothing was written yet: new clusters, whose
	# mapping the storage daemon writes at the guest's flush
	vt_check qcow2-daemon-kill-after-fsync image_kill "$q"
	vt_check qcow2-daemon-restarted vt_wait 30 vt_host qstat 3 image_restarts 1
	vt_check qcow2-io-resumes reads_back "$q" 50331648 4194304 "$(cat /tmp/qkill.sha)"
	vt_check qcow2-write-after-restart write_to_image "$q" q 41943040 1048576
	ext4_cycle "$q" qcow2-ext4
	vt_check qcow2-second-hostd-refused vt_host qlock hostd
	vt_check qcow2-qemu-refused vt_host qlock qemu
	vt_check qcow2-nbd-data-before write_to_image "$n" n 8388608 1048576
	vt_check qcow2-nbd-server-gone nbd_gone "$n"
	vt_check qcow2-nbd-write-completes nbd_write_done
	vt_check qcow2-nbd-reconnected vt_host qstat 4 nbd_reconnects 1
	vt_check qcow2-nbd-nothing-lost same_as_image "$n" n 8388608 1048576
	vt_check qcow2-nbd-write-in-image nbd_write_in_image
	vt_check qcow2-drop vt_host qdrop
	vt_check qcow2-disk-gone gone "$q" 30
	vt_check qcow2-nbd-disk-gone gone "$n" 30
	vt_check qcow2-images-check-clean vt_host qcheck
}

# ---- a host that never answers: the timeout handler faults the device --------
# After flush_kill vbus-hostd is dead: a request waits io_timeout, is given
# VBUS_BLK_TIMEOUT_RESETS more, then the device faults, the close
# hypercall times out (5 s), and the request fails.
timeout_fault() {
	local dev=$1 t0 secs
	echo 1000 >"/sys/block/$dev/queue/io_timeout" || return 1
	t0=$(date +%s)
	if dd if="/dev/$dev" of=/dev/null bs=4096 skip=100 count=1 iflag=direct 2>/dev/null; then
		echo "a read from a dead host succeeded"
		return 1
	fi
	secs=$(($(date +%s) - t0))
	log "TIMEOUT a read from the dead host failed after $secs s"
	dmesg | grep -q 'device fault (request timed out)' ||
		{ echo "no 'device fault (request timed out)' in dmesg"; return 1; }
	[ "$secs" -le 60 ] || { echo "took $secs s"; return 1; }
}

# ============================================================================
log "$(grep -c ^processor /proc/cpuinfo) CPUs, kernel $(uname -r)"
mkdir -p /etc && ln -sf /proc/mounts /etc/mtab
vt_check host-channel vt_host hello || { vt_done; exit 1; }
vt_check load-modules load_all || { vt_done; exit 1; }
if RW=$(disk "$VT_RW_SERIAL"); then vt_pass "disk-rw-$RW"; else vt_fail disk-rw "$RW"; fi
if RO=$(disk "$VT_RO_SERIAL"); then vt_pass "disk-ro-$RO"; else vt_fail disk-ro "$RO"; fi
case "$RW$RO" in *" "*) vt_done; exit 1 ;; esac
log "rw disk $RW, ro disk $RO"

check_sysfs() {
	vt_check rw-size attr "$RW" size $((VT_RW_BYTES / 512))
	vt_check ro-size attr "$RO" size $((VT_RO_BYTES / 512))
	vt_check rw-not-ro attr "$RW" ro 0
	vt_check ro-is-ro attr "$RO" ro 1
	vt_check rw-write-cache attr "$RW" queue/write_cache "write back"
	vt_check rw-discard attr_nonzero "$RW" queue/discard_max_bytes
	vt_check rw-write-zeroes attr_nonzero "$RW" queue/write_zeroes_max_bytes
	# shellcheck disable=SC2012 # queue numbers
	log "rw disk: $(ls -d "/sys/block/$RW/mq/"* | wc -l) hardware queue(s), nr_requests $(cat "/sys/block/$RW/queue/nr_requests")"
}

check_data() {
	vt_check ro-data-matches-host same_as_host "$RO" ro 0 "$VT_RO_BYTES"
	vt_check guest-to-host guest_to_host "$RW" 4194304 4194304
	vt_check host-sees-same same_as_host "$RW" rw 0 16777216
}

# fio: 4 jobs, each writes VT_FIO_MB MiB (sequential QD32: 3 times) and
# reads it back verified: 1.4 GiB moved with the default 128 MiB
check_fio() {
	local j
	vt_check fio-seq-128k-qd1 fio_verify seq1 "$RW" write 128k 1
	vt_check fio-seq-128k-qd32 fio_verify seq32 "$RW" write 128k 32 3
	vt_check fio-rand-4k-qd32 fio_verify rand32 "$RW" randwrite 4k 32
	vt_check fio-rand-4k-64k-qd1 fio_verify rand1 "$RW" randwrite 4k-64k 1
	for j in seq1 seq32 rand32 rand1; do
		grep -E '^ *(read|write): IOPS' "/tmp/fio-$j.out" 2>/dev/null | sed "s/^ */blk-tests: FIO $j /"
	done
	vt_check host-sees-fio-data same_as_host "$RW" rw 0 "$VT_RW_BYTES"
}

# per-queue vectors (host.sh: vectors=4 for host and QEMU, 2 vCPUs); the
# groups before it ran with them, flush runs after it on a bridge loaded
# as an older guest
check_qvec() {
	local t0 cs
	t0=$(vt_uptime_cs)
	vt_check qvec-negotiated bridge_stat qvec_on 1
	vt_check qvec-two-vectors bridge_stat qvecs 2
	vt_check qvec-interrupts-spread qvec_spread "$RW"
	cat /tmp/qvec.log 2>/dev/null
	grep -E 'CPU|vbus-' /proc/interrupts | sed 's/^/blk-tests: /'
	# leaves the older guest's bridge loaded: flush comes next
	vt_check qvec-old-guest-eventq old_guest
	RW=$(disk "$VT_RW_SERIAL") || RW=
	cs=$(($(vt_uptime_cs) - t0))
	log "QVEC group took $((cs / 100)).$((cs / 10 % 10)) s (TCG)"
}

check_discard() {
	vt_check discard-makes-sparse discard_sparse "$RW"
	vt_check write-zeroes zeroout "$RW"
}
check_ext4() { ext4_cycle "$RW"; }
check_ro() {
	vt_check ro-write-refused ro_write_fails "$RO"
	vt_check ro-data-unchanged same_as_host "$RO" ro 0 "$VT_RO_BYTES"
}
# dist/udev/60-vbus-blk.rules (issue 20.14): the initramfs has no udev of
# its own, so the host stages its udevadm (also systemd-udevd, by name)
# and our rule alone; by-id from the serial, by-uuid and by-label from an
# ext4 made here with a UUID and label of ours, not read back from udev.
UDEV_UUID=5c3a1e2d-7b44-4f0e-9a6c-1d2e3f405162
same_dev() { [ "$(readlink -f "$1")" = "$2" ] || { echo "$1 -> $(readlink -f "$1"), not $2"; return 1; }; }
check_udev() {
	local udevadm
	if ! udevadm=$(command -v udevadm) || [ ! -f /test/60-vbus-blk.rules ]; then
		vt_fail udev-staged "no udevadm or rule in the initramfs"
		return
	fi
	vt_check udev-mkfs mkfs.ext4 -q -F -L vbt-label -U "$UDEV_UUID" "/dev/$RW" || return
	mkdir -p /etc/udev/rules.d /run/udev
	cp /test/60-vbus-blk.rules /etc/udev/rules.d/
	ln -sf "$udevadm" /tmp/systemd-udevd
	vt_check udev-daemon /tmp/systemd-udevd --daemon || return
	vt_check udev-trigger udevadm trigger --action=add --subsystem-match=block
	vt_check udev-settle udevadm settle --timeout=60
	vt_check udev-by-id same_dev "/dev/disk/by-id/vbus-$VT_RW_SERIAL" "/dev/$RW"
	vt_check udev-by-uuid same_dev "/dev/disk/by-uuid/$UDEV_UUID" "/dev/$RW"
	vt_check udev-by-label same_dev /dev/disk/by-label/vbt-label "/dev/$RW"
	vt_check udev-ro-by-id same_dev "/dev/disk/by-id/vbus-$VT_RO_SERIAL" "/dev/$RO"
	udevadm control --exit
	rm -rf /dev/disk
}
# each leaves the rw disk present, maybe under another name
check_hotdrop() {
	hot_drop "$RW"
	RW=$(disk "$VT_RW_SERIAL") || RW=
	[ -n "$RW" ] && unbind_under_io "$RW"
	RW=$(disk "$VT_RW_SERIAL") || RW=
}
check_cycles() { cycles; RW=$(disk "$VT_RW_SERIAL") || RW=; }
check_poll() {
	vt_check polled-io polled_io
	cat /tmp/poll.log 2>/dev/null
	vt_check poll-queues-refused poll_queues_refused
	RW=$(disk "$VT_RW_SERIAL") || RW=
}
check_qcow2() { qcow2_group; }
# last: it kills vbus-hostd
check_flush() {
	if [ -n "$RW" ]; then
		vt_check flush-survives-hostd-kill flush_kill "$RW" &&
			vt_check timeout-faults-device timeout_fault "$RW" &&
			vt_check faulted-fails-fast vt_blk_fails_fast "$RW" 200
		log "TIMEOUT a read from the faulted disk failed after $(cat /tmp/fast.secs 2>/dev/null || echo '?') s"
	else
		vt_fail flush-survives-hostd-kill "no rw disk"
	fi
}

# --swiotlb (VT_SWIOTLB=1): the rw disk comes back with dma_window= our
# bounce buffers (vt_swiotlb_range); the data checks run on it; then the
# host says it saw only bounce buffers (dma_in > 0, dma_out = 0)
check_swiotlb_window() {
	local r
	r=$(vt_swiotlb_range) || { vt_fail swiotlb-range "$r"; return; }
	log "swiotlb: bounce buffers at $r"
	vt_check swiotlb-drop-rw vt_host drop rw || return
	vt_check swiotlb-rw-gone gone "$RW" 30 || return
	# shellcheck disable=SC2086 # START END
	vt_check swiotlb-rw-back-with-window vt_host window $r || return
	if RW=$(disk "$VT_RW_SERIAL" 30); then vt_pass "swiotlb-rw-disk-$RW"; else vt_fail swiotlb-rw-disk "$RW"; fi
}
check_swiotlb_verdict() {
	vt_check swiotlb-host-saw-bounce-buffers-only vt_host dmacheck
	log "swiotlb: vbus-hostd counted $(vt_host dmacheck)"
}

# threads=2 (issue 22.4): a disk whose 2 queues vbus-hostd serves from 2
# threads of its own; fio verify from both vCPUs (a job pinned to each:
# blk-mq maps a CPU to a queue), then the host says both threads handed
# requests back and it has both
thr_fio() {
	local out=/tmp/fio-thr.out
	if ! /usr/bin/fio --name=thr --filename="/dev/$1" --rw=randwrite --bs=4k \
		--iodepth=16 --ioengine=libaio --direct=1 --size=8M --numjobs=2 \
		--offset_increment=8M --cpus_allowed=0-1 --cpus_allowed_policy=split \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting \
		>"$out" 2>&1; then
		tail -n 20 "$out"
		return 1
	fi
	grep -E '^ *(read|write): IOPS' "$out" | sed "s/^ */blk-tests: FIO thr /"
}
thr_served() {
	local r
	r=$(vt_host thrcheck) || { echo "$r"; return 1; }
	log "THREADS $r"
}
check_threads() {
	local d
	vt_check threads-add vt_host addthr || return
	if ! d=$(disk vbt-thr 30); then
		vt_fail threads-disk "$d"
		return
	fi
	vt_pass "threads-disk-$d"
	# shellcheck disable=SC2012 # queue numbers
	vt_check threads-two-hw-queues test "$(ls -d "/sys/block/$d/mq/"* | wc -l)" = 2
	vt_check threads-fio-verify-both-cpus thr_fio "$d"
	vt_check threads-two-host-threads thr_served
	vt_check threads-drop vt_host dropthr
	vt_check threads-disk-gone gone "$d" 30
}

# topology cache resize compat: issue 23's disk features
# shellcheck source=tests/qemu/suites/vbus_blk/features.sh
. /test/features.sh

if [ "${VT_SWIOTLB:-0}" = 1 ]; then
	vt_run_checks swiotlb_window data fio ext4 swiotlb_verdict
else
	vt_run_checks sysfs topology cache data fio discard discard_multi ext4 \
		resize compat threads \
		ro udev hotdrop cycles poll qvec qcow2 flush
fi
vt_done
