# shellcheck shell=dash
# Guest side of the restart suite (host.sh next to it); runs
# as /test/run.sh under busybox sh. Loads the bus stack, venet and
# vbus_test, brings venet up, then for each kind in $VT_KINDS ("term":
# the host daemon is stopped gracefully, "kill": it crashes) while a
# download (/cgi-bin/slow, md5 $VT_DATA_MD5) and an upload (to
# /cgi-bin/md5) run:
#   - asks the host for the restart (vt_host restart KIND);
#   - both transfers complete with the right md5 at both ends;
#   - the bridge re-attached (vbus_stats reattach), graceful ones were
#     seen as "host down" first (host_down) and crashes were not;
#   - venet kept its netdev and address (reconnect, not re-probe), the
#     carrier is up, ping works; vbus-test's device was reconnected and
#     its ring carries verified traffic;
#   - prints "RESTART kind link_down_ms=.. max_rx_gap_ms=.. tcp_retrans=..":
#     how long the carrier was off, the longest time the download got no
#     byte, and the TCP segments retransmitted meanwhile;
# With a vbus-blk disk (serial $VT_BLK_SERIAL; vbus_blk loaded) the same
# restarts happen under disk I/O too: fio with verify=crc32c runs in a loop
# over the disk's first $VT_BLK_MB MiB (random 4k-64k writes, QD16, every
# block read back and checked) while a 4 MiB stamp written before the
# restart sits further on; after the restart fio has seen no I/O error or
# bad block, the stamp reads back the same, the disk is the same vbdN
# (reconnect, not re-probe), the kernel logged no I/O error, and "BLK kind
# parked=.. resent=.. fio_passes=.." says how many requests the driver
# took back from the dead host and sent again (the daemon is frozen
# first until requests sit unserved; after a crash some must be taken
# back). A second disk (serial
# $VT_FS_SERIAL) carries a mounted ext4 with a loop writing 256 KiB files
# (fsync each) through every restart: each file reads back with its md5,
# and at the end fsck finds the file system clean and a remount reads
# every file back intact.
# Then a hostile host flips host_epoch for 3 s under traffic: at most about
# one re-attach a second, then everything in service again (FLAP figures).
# With the disks the ext4 disk's file shrinks under a restart: the driver
# refuses the other disk, the bus probes it anew at the new size.
# With VT_STOP=1 (and the disk) the daemon then stops for good: a read
# waits until the host has been away io_timeout (1 s) x 5, then fails
# ("host away too long"), the next fails at once.
# After the restarts (vectors=4) the bridge still has per-queue vectors
# (qvec_on) and 32 direct reads of the disk complete on a queue vector,
# with no SHMSIGNAL event on the eventq.
# The host's result check fails on any kernel WARN/BUG/Oops.
# Check groups (VT_ONLY): term kill (the restart kinds), flap, resize, stop.

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VT_HOST_IP:=10.78.0.1}"
: "${VT_GUEST_IP:=10.78.0.2}"
: "${VT_PREFIX:=24}"
: "${VT_HTTP_PORT:=8080}"
: "${VT_DATA_MD5:=}"
: "${VT_DATA_MB:=8}"
: "${VT_KINDS:=term kill}"
: "${VT_BLK_SERIAL:=}"
: "${VT_BLK_MB:=16}"
: "${VT_FIO:=/usr/bin/fio}"
: "${VT_FS_SERIAL:=}"

URL="http://$VT_HOST_IP:$VT_HTTP_PORT"
BUS=/sys/bus/vbus-proxy/devices

log() { echo "restart-tests: $*"; }

bridge_stat() {
	local f
	for f in /sys/bus/pci/drivers/vbus-pcibridge/*/vbus_stats; do
		awk -v k="$1" '$1 == k { print $2 }' "$f"
		return 0
	done
	echo 0
}

venet_if() {
	local i d
	for i in /sys/class/net/*; do
		d=$(readlink "$i/device/driver" 2>/dev/null) || continue
		[ "${d##*/}" = venet ] && { echo "${i##*/}"; return 0; }
	done
	return 1
}

vtest_dev() {
	local d
	for d in "$BUS"/*; do
		[ "$(cat "$d/type" 2>/dev/null)" = vbus-test ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

retrans() {
	awk '$1 == "Tcp:" && !h { for (i = 1; i <= NF; i++) n[i] = $i; h = 1; next }
	     $1 == "Tcp:" { for (i = 1; i <= NF; i++) if (n[i] == "RetransSegs") print $i }' \
		/proc/net/snmp
}

# T = uptime in ms (10 ms resolution; no fork: the monitor loops on it)
now_ms() {
	local up
	read -r up _ </proc/uptime
	T=$((${up%.*}${up#*.} * 10))
}

# monitor IF: until /tmp/mon.stop exists, sample the carrier and rx_bytes
# every 20 ms; then write "link_down_ms max_rx_gap_ms" to /tmp/mon.out.
monitor() {
	local c rx last_rx=-1 t down_since=0 down=0 gap=0 since
	now_ms
	since=$T
	while [ ! -e /tmp/mon.stop ]; do
		now_ms
		t=$T
		read -r c <"/sys/class/net/$1/carrier" 2>/dev/null || c=0
		read -r rx <"/sys/class/net/$1/statistics/rx_bytes"
		if [ "$c" = 0 ]; then
			[ "$down_since" = 0 ] && down_since=$t
		elif [ "$down_since" != 0 ]; then
			down=$((down + t - down_since))
			down_since=0
		fi
		if [ "$rx" != "$last_rx" ]; then
			last_rx=$rx
			since=$t
		elif [ $((t - since)) -gt "$gap" ]; then
			gap=$((t - since))
		fi
		usleep 20000
	done
	now_ms
	[ "$down_since" != 0 ] && down=$((down + T - down_since))
	echo "$down $gap" >/tmp/mon.out
}

setup() {
	local m mods="vbus_core vbus_proxy vbus_pcibridge venet vbus_test"
	[ -n "$VT_BLK_SERIAL" ] && mods="$mods vbus_blk"
	# metadata_csum wants the crc32c shash; ext4's softdep is not followed
	[ -n "$VT_FS_SERIAL" ] && mods="$mods crc32c_generic ext4"
	for m in $mods; do
		vt_kmod_load "$m" || { echo "insmod $m failed"; return 1; }
	done
	n=0
	while [ "$n" -lt 50 ]; do
		IF=$(venet_if) && VDEV=$(vtest_dev) && break
		n=$((n + 1))
		usleep 200000
	done
	if [ -z "${IF:-}" ] || [ -z "${VDEV:-}" ]; then echo "no venet netdev or vbus-test device"; return 1; fi
	ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF" &&
		ip link set "$IF" up &&
		ping -c 2 -i 0.2 -W 5 "$VT_HOST_IP" >/dev/null
}

ring_ok() {
	local out
	echo "$1" >"$BUS/$VDEV/run_ring" || true
	out=$(cat "$BUS/$VDEV/result")
	echo "$out"
	case "$out" in "ok $1 msgs"*) return 0 ;; esac
	return 1
}

# wait_stat_above NAME N: the bridge counter NAME exceeds N (30 s)
wait_stat_above() {
	local n=0
	while [ "$n" -lt 300 ]; do
		[ "$(bridge_stat "$1")" -gt "$2" ] && return 0
		n=$((n + 1))
		usleep 100000
	done
	echo "$1 stayed at $(bridge_stat "$1") (wanted > $2)"
	return 1
}

wait_carrier_up() {
	local n=0
	while [ "$n" -lt 300 ]; do
		[ "$(cat "/sys/class/net/$IF/carrier" 2>/dev/null)" = 1 ] && return 0
		n=$((n + 1))
		usleep 100000
	done
	echo "carrier of $IF still off"
	return 1
}

check_md5_file() { [ "$(cut -d' ' -f1 "$1")" = "$2" ] || { echo "$1: $(cat "$1"), wanted $2"; return 1; }; }
check_up_md5() { [ "$(cat /tmp/up.host)" = "$(cat /tmp/up.want)" ] || { echo "host got $(cat /tmp/up.host), sent $(cat /tmp/up.want)"; return 1; }; }
same_if() { [ "$(venet_if)" = "$IF" ] && ip addr show dev "$IF" | grep -q "inet $VT_GUEST_IP/"; }

# qvec_on_is N: the bridge's vbus_stats qvec_on (per-queue vectors
# negotiated) reads N
qvec_on_is() {
	[ "$(bridge_stat qvec_on)" = "$1" ] && return 0
	echo "vbus_stats qvec_on is $(bridge_stat qvec_on), wanted $1"
	return 1
}

# qvec_irqs_all: interrupts of the bridge's queue vectors so far (vbus-q<i>@,
# all CPUs)
qvec_irqs_all() {
	awk 'NR == 1 { n = NF; next } $NF ~ /^vbus-q[0-9]+@/ {
			for (c = 2; c <= n + 1; c++) s += $c }
		END { print s + 0 }' /proc/interrupts
}

# blk_on_qvec: after the restarts, 32 direct reads of the disk complete
# through the queue vectors, and not one SHMSIGNAL event comes on the
# eventq (a daemon that declined the vectors signals every ring there)
blk_on_qvec() {
	local q s t0
	t0=$(vt_uptime_cs) q=$(qvec_irqs_all) s=$(bridge_stat shmsignal)
	dd if="/dev/$BLK" of=/dev/null bs=4k count=32 iflag=direct 2>/dev/null ||
		{ echo "reading /dev/$BLK failed"; return 1; }
	q=$(($(qvec_irqs_all) - q)) s=$(($(bridge_stat shmsignal) - s))
	log "QVEC after the restarts: 32 reads, $q queue vector interrupts, $s SHMSIGNAL events ($(($(vt_uptime_cs) - t0)) cs)" >/tmp/qvec.log
	[ "$q" -gt 0 ] ||
		{ echo "32 reads, no interrupt on a queue vector ($s SHMSIGNAL events on the eventq)"; return 1; }
	[ "$s" = 0 ] || { echo "$s SHMSIGNAL events on the eventq"; return 1; }
}

# ---- the disk ----------------------------------------------------------------
# blk_disk [SERIAL]: the vbdN whose serial is SERIAL (default
# VT_BLK_SERIAL; waits up to 10 s).
blk_disk() {
	local n=0 d serial=${1:-$VT_BLK_SERIAL}
	while [ "$n" -lt 50 ]; do
		for d in /sys/block/vbd*; do
			[ "$(cat "$d/serial" 2>/dev/null)" = "$serial" ] &&
				{ echo "${d##*/}"; return 0; }
		done
		n=$((n + 1))
		usleep 200000
	done
	echo "no disk with serial $serial"
	return 1
}

# ---- ext4 on the second disk ---------------------------------------------------
fs_setup() {
	mkdir -p /mnt/fs /tmp/fsmd5 &&
		/usr/sbin/mkfs.ext4 -q -F "/dev/$FS" &&
		mount -t ext4 "/dev/$FS" /mnt/fs
}

# fs_loop: until /tmp/fs.stop, 256 KiB files f0..f99 (round robin), each
# written and fsynced, its md5 kept in /tmp/fsmd5; a failed write to
# /tmp/fs.fail. The count written to /tmp/fs.count.
fs_loop() {
	local i=0 f
	while [ ! -e /tmp/fs.stop ]; do
		f=f$((i % 100))
		head -c 262144 /dev/urandom >/tmp/fs.data
		if ! dd if=/tmp/fs.data of="/mnt/fs/$f" bs=64k conv=fsync 2>/tmp/fs.err; then
			{ echo "writing $f:"; cat /tmp/fs.err; } >/tmp/fs.fail
			break
		fi
		md5sum </tmp/fs.data | cut -d' ' -f1 >"/tmp/fsmd5/$f"
		i=$((i + 1))
		echo "$i" >/tmp/fs.count
	done
}

# fs_files_ok: every file written reads back with its md5.
fs_files_ok() {
	local m f got
	[ -e /tmp/fs.fail ] && { cat /tmp/fs.fail; return 1; }
	for m in /tmp/fsmd5/*; do
		[ -e "$m" ] || continue
		f=${m##*/}
		got=$(md5sum <"/mnt/fs/$f" | cut -d' ' -f1)
		[ "$got" = "$(cat "$m")" ] || { echo "$f: md5 $got, wrote $(cat "$m")"; return 1; }
	done
}

same_fs() { [ "$(blk_disk "$VT_FS_SERIAL")" = "$FS" ] && grep -q "^/dev/$FS /mnt/fs ext4 rw" /proc/mounts; }

# sha of the 4 MiB stamp at 32 MiB (O_DIRECT: from the host, not the cache)
stamp_sha() {
	dd if="/dev/$BLK" bs=1M skip=32 count=4 iflag=direct 2>/dev/null |
		sha256sum | cut -d' ' -f1
}

stamp_write() {
	head -c 4194304 /dev/urandom >/tmp/stamp
	sha256sum </tmp/stamp | cut -d' ' -f1 >/tmp/stamp.want
	dd if=/tmp/stamp of="/dev/$BLK" bs=1M seek=32 oflag=direct conv=notrunc 2>/dev/null
}

stamp_same() {
	local got
	got=$(stamp_sha)
	[ "$got" = "$(cat /tmp/stamp.want)" ] || { echo "stamp reads $got, wrote $(cat /tmp/stamp.want)"; return 1; }
}

# blk_fio_loop: verified fio passes over the first VT_BLK_MB MiB until
# /tmp/blk.stop; the count of good passes to /tmp/blk.passes, a failed
# pass's output to /tmp/blk.fail.
blk_fio_loop() {
	local n=0
	while [ ! -e /tmp/blk.stop ]; do
		if ! "$VT_FIO" --name=rs --filename="/dev/$BLK" --rw=randwrite \
			--bs=4k-64k --iodepth=16 --ioengine=libaio --direct=1 \
			--size="${VT_BLK_MB}M" --verify=crc32c --do_verify=1 \
			--verify_fatal=1 --randseed=$((n + 1)) >/tmp/blk.out 2>&1; then
			cp /tmp/blk.out /tmp/blk.fail
			break
		fi
		n=$((n + 1))
		echo "$n" >/tmp/blk.passes
	done
}

# blk_log_count PATTERN: the sum of the numbers before PATTERN in the
# driver's "host gone: N request(s)" / "host back: N request(s)" lines.
blk_log_count() {
	dmesg | grep -o "$1: [0-9]* request" | awk '{ s += $(NF - 1) } END { print s + 0 }'
}

# blk_busy: until the disk has requests in flight (fio is under way), 30 s.
blk_busy() {
	local n=0 r w
	while [ "$n" -lt 300 ]; do
		read -r r w <"/sys/block/$BLK/inflight" 2>/dev/null && [ $((r + w)) -gt 0 ] && return 0
		n=$((n + 1))
		usleep 100000
	done
	echo "no fio request seen in flight on $BLK"
	return 1
}

# blk_stuck: until requests sit on the disk and none completes for 0.5 s
# (the daemon is frozen; under a live one fio's 16 complete all the time).
blk_stuck() {
	local n=0 same=0 r w now last=''

	while [ "$n" -lt 300 ]; do
		read -r r w <"/sys/block/$BLK/inflight" || return 1
		# fields 1 and 5: reads and writes completed
		now=$(awk '{ print $1, $5 }' "/sys/block/$BLK/stat")
		if [ $((r + w)) -gt 0 ] && [ "$now" = "$last" ]; then
			same=$((same + 1))
			[ "$same" -ge 5 ] && return 0
		else
			same=0
		fi
		last=$now
		n=$((n + 1))
		usleep 100000
	done
	echo "no request held on $BLK (in flight $r $w, completed $now)"
	return 1
}

blk_fio_ok() {
	[ -e /tmp/blk.fail ] && { tail -n 20 /tmp/blk.fail; return 1; }
	[ "$(cat /tmp/blk.passes 2>/dev/null || echo 0)" -ge 1 ] || { echo "no fio pass completed"; return 1; }
}

blk_no_io_error() {
	! dmesg | grep -E "I/O error, dev vbd|Buffer I/O error|device fault"
}

same_blk() { [ "$(blk_disk)" = "$BLK" ] || { echo "disk is now $(blk_disk), was $BLK"; return 1; }; }

# venet_pairs_back N: venet logged its reconnect with all its queue pairs
# (VT_QUEUE_PAIRS: the host's queues=, at most the 2 vCPUs) more than N
# times
venet_pairs_back() {
	local n
	n=$(dmesg | grep -c "host back: reconnected, ${VT_QUEUE_PAIRS:-1} queue pairs")
	echo "venet reconnects with ${VT_QUEUE_PAIRS:-1} queue pairs: $n (before: $1)"
	[ "$n" -gt "$1" ]
}

restart_case() {
	local k=$1 re0 down0 rc0 r0 dl up figs blk=0 gone0 back0 backs0 p n b0 vq0
	vq0=$(dmesg | grep -c "host back: reconnected, ${VT_QUEUE_PAIRS:-1} queue pairs")
	re0=$(bridge_stat reattach)
	down0=$(bridge_stat host_down)
	rc0=$(bridge_stat reconnect)
	r0=$(retrans)
	rm -f /tmp/mon.stop /tmp/mon.out /tmp/dl.md5 /tmp/up.host
	if [ -n "$BLK" ]; then
		blk=1
		gone0=$(blk_log_count "$BLK: host gone")
		back0=$(blk_log_count "$BLK: host back")
		backs0=$(dmesg | grep -c "$BLK: host back: [0-9]* request")
		rm -f /tmp/blk.stop /tmp/blk.fail /tmp/blk.passes
		vt_check "$k-blk-stamp-written" stamp_write
		blk_fio_loop &
	fi
	if [ -n "$FS" ]; then
		rm -f /tmp/fs.stop /tmp/fs.fail /tmp/fs.count
		fs_loop &
	fi
	monitor "$IF" &
	b0=$(vt_net_bytes "$IF")
	(timeout 300 wget -q -O - "$URL/cgi-bin/slow" | md5sum >/tmp/dl.md5) &
	dl=$!
	(timeout 300 wget -q -O - --post-file /tmp/up "$URL/cgi-bin/md5" >/tmp/up.host) &
	up=$!
	vt_check "$k-traffic-under-way" vt_wait 30 vt_flowing "$IF" "$b0"
	if [ "$blk" = 1 ]; then
		# right before the request: not in the gap between two fio
		# passes; then the daemon frozen with requests on the ring
		vt_check "$k-blk-io-in-flight" blk_busy
		vt_host freeze >/dev/null
		vt_check "$k-blk-io-held" blk_stuck
	fi
	vt_host restart "$k" >/dev/null
	wait "$dl"
	wait "$up"
	vt_check "$k-reattached" wait_stat_above reattach "$re0"
	vt_check "$k-carrier-up" wait_carrier_up
	touch /tmp/mon.stop
	if [ "$blk" = 1 ]; then
		# at least one whole pass after the restart
		p=$(cat /tmp/blk.passes 2>/dev/null || echo 0)
		n=0
		while [ "$n" -lt 600 ] && [ ! -e /tmp/blk.fail ] &&
			[ "$(cat /tmp/blk.passes 2>/dev/null || echo 0)" -le "$p" ]; do
			n=$((n + 1))
			usleep 200000
		done
		touch /tmp/blk.stop
	fi
	touch /tmp/fs.stop
	wait
	figs=$(cat /tmp/mon.out 2>/dev/null || echo "? ?")
	vt_check "$k-download-md5" check_md5_file /tmp/dl.md5 "$VT_DATA_MD5"
	vt_check "$k-upload-md5" check_up_md5
	if [ "$k" = term ]; then
		vt_check "$k-host-down-seen" wait_stat_above host_down "$down0"
	else
		vt_check "$k-crash-not-announced" test "$(bridge_stat host_down)" = "$down0"
	fi
	vt_check "$k-devices-reconnected" wait_stat_above reconnect $((rc0 + NDEV - 1))
	vt_check "$k-netdev-kept" same_if
	vt_check "$k-venet-queue-pairs-again" venet_pairs_back "$vq0"
	vt_check "$k-ping" ping -c 3 -i 0.2 -W 5 "$VT_HOST_IP"
	vt_check "$k-vbus-test-ring" ring_ok 2000
	if [ "$blk" = 1 ]; then
		vt_check "$k-blk-fio-verified" blk_fio_ok
		vt_check "$k-blk-stamp-kept" stamp_same
		vt_check "$k-blk-same-disk" same_blk
		vt_check "$k-blk-reconnected" test "$(dmesg | grep -c "$BLK: host back: [0-9]* request")" -gt "$backs0"
		vt_check "$k-blk-no-io-error" blk_no_io_error
		p=$(($(blk_log_count "$BLK: host gone") - gone0))
		n=$(($(blk_log_count "$BLK: host back") - back0))
		# a crash leaves the held requests on the ring: all taken back.
		# A graceful stop lets the waking daemon race its own shutdown
		# (it may complete them first): counted, not required.
		[ "$k" = kill ] && vt_check "$k-blk-requests-taken-back" test "$p" -gt 0
		vt_check "$k-blk-all-resent" test "$n" = "$p"
		dmesg | grep -E "vbd[0-9]+: host (gone|back)" | tail -n 2 | sed 's/^/  dmesg: /'
		log "BLK $k parked=$p resent=$n fio_passes=$(cat /tmp/blk.passes 2>/dev/null || echo 0)"
	fi
	if [ -n "$FS" ]; then
		vt_check "$k-ext4-files-verified" fs_files_ok
		vt_check "$k-ext4-still-mounted-rw" same_fs
		log "EXT4 $k files_written=$(cat /tmp/fs.count 2>/dev/null || echo 0)"
	fi
	log "RESTART $k link_down_ms=${figs% *} max_rx_gap_ms=${figs#* } tcp_retrans=$(($(retrans) - r0)) hc_timeouts=$(bridge_stat hc_timeouts) reprobe=$(bridge_stat reprobe)"
}

# A hostile host flips host_epoch and fires our vectors for 3 s, then dies
# (lib/bar2-flap.py; the keeper starts a new daemon): at most a re-attach
# a second (+ slack for the new daemon and TCG), then service.
flap_case() {
	local re0 f0 rc0 dl n b0
	re0=$(bridge_stat reattach)
	rc0=$(($(bridge_stat reconnect) + 1))
	f0=$(bridge_stat reattach_fail)
	rm -f /tmp/dl.md5
	b0=$(vt_net_bytes "$IF")
	(timeout 300 wget -q -O - "$URL/cgi-bin/slow" | md5sum >/tmp/dl.md5) &
	dl=$!
	vt_check flap-download-under-way vt_wait 30 vt_flowing "$IF" "$b0" 65536 1
	vt_host flap >/dev/null
	wait "$dl"
	# the flap seen, then over (the new daemon's devices reconnected)
	vt_check flap-reattached wait_stat_above reattach "$re0"
	vt_check flap-devices-reconnected wait_stat_above reconnect "$rc0"
	sleep 2		# the last re-attach, rate-limited
	n=$(($(bridge_stat reattach) - re0))
	vt_check flap-reattach-bounded test "$n" -ge 1 -a "$n" -le 8
	vt_check flap-carrier-up wait_carrier_up
	vt_check flap-download-md5 check_md5_file /tmp/dl.md5 "$VT_DATA_MD5"
	vt_check flap-ping ping -c 3 -i 0.2 -W 5 "$VT_HOST_IP"
	vt_check flap-netdev-kept same_if
	vt_check flap-vbus-test-ring ring_ok 2000
	if [ -n "$BLK" ]; then
		vt_check flap-blk-same-disk same_blk
		vt_check flap-blk-stamp-kept stamp_same
		vt_check flap-blk-no-io-error blk_no_io_error
	fi
	log "FLAP reattach=$n reattach_fail=$(($(bridge_stat reattach_fail) - f0)) host_down=$(bridge_stat host_down)"
}

# fs_disk_size SECTORS: the disk with serial VT_FS_SERIAL has SECTORS (15 s).
fs_disk_size() {
	local n=0 d
	while [ "$n" -lt 75 ]; do
		d=$(blk_disk "$VT_FS_SERIAL") && [ "$(cat "/sys/block/$d/size")" = "$1" ] && return 0
		n=$((n + 1))
		usleep 200000
	done
	echo "disk with serial $VT_FS_SERIAL: ${d:-none}, $(cat "/sys/block/$d/size" 2>/dev/null) sectors, wanted $1"
	return 1
}

# The next daemon serves a smaller file under the ext4 disk's id (the host
# shrank it before a SIGTERM): the driver refuses the other disk (logged),
# the bus removes the device and probes it anew, at the new size; the fio
# disk is reconnected as before.
resize_case() {
	local rp0 backs0
	rp0=$(bridge_stat reprobe)
	backs0=$(dmesg | grep -c "$BLK: host back: [0-9]* request")
	vt_host resize >/dev/null
	vt_check resize-reprobed wait_stat_above reprobe "$rp0"
	vt_check resize-refused-logged sh -c "dmesg | grep -q '$FSDEV: the new host offers another disk (capacity'"
	vt_check resize-new-disk-size fs_disk_size 65536
	vt_check resize-blk-reconnected sh -c "[ \$(dmesg | grep -c '$BLK: host back: [0-9]* request') -gt $backs0 ]"
	vt_check resize-blk-same-disk same_blk
	vt_check resize-blk-stamp-kept stamp_same
}

# The daemon stops for good (the host SIGTERMs the keeper): a request on
# the disk waits (quiesced) until the host has been away io_timeout (1 s
# here) x 5, then the device faults and it fails; the next fails at once.
stop_read_fails() {
	local t0 secs
	t0=$(date +%s)
	if dd if="/dev/$BLK" of=/dev/null bs=4096 skip=300 count=1 iflag=direct 2>/dev/null; then
		echo "a read with the host gone succeeded"
		return 1
	fi
	secs=$(($(date +%s) - t0))
	echo "$secs" >/tmp/stop.secs
	dmesg | grep -q 'device fault (host away too long)' ||
		{ echo "no 'device fault (host away too long)' in dmesg"; return 1; }
	[ "$secs" -le 60 ] || { echo "took $secs s"; return 1; }
}

stop_case() {
	local down0
	down0=$(bridge_stat host_down)
	echo 1000 >"/sys/block/$BLK/queue/io_timeout"
	vt_host stop >/dev/null
	vt_check stop-host-down-seen wait_stat_above host_down "$down0" &&
		vt_check stop-blk-read-times-out stop_read_fails &&
		vt_check stop-blk-faulted-fails-fast vt_blk_fails_fast "$BLK" 400
	log "STOP a read with the host gone for good failed after $(cat /tmp/stop.secs 2>/dev/null || echo '?') s (io_timeout 1 s), the next after $(cat /tmp/fast.secs 2>/dev/null || echo '?') s"
}

vt_check setup setup || { vt_done; exit 0; }
vt_check ring-before ring_ok 2000
BLK='' FS='' FSDEV='' NDEV=2
if [ -n "$VT_FS_SERIAL" ]; then
	NDEV=$((NDEV + 1))
	if FS=$(blk_disk "$VT_FS_SERIAL"); then
		FSDEV=$FS
		vt_check "ext4-on-$FS" fs_setup || FS=''
	else
		vt_fail fs-disk "$FS"
		FS=''
	fi
fi
if [ -n "$VT_BLK_SERIAL" ]; then
	NDEV=$((NDEV + 1))
	if BLK=$(blk_disk); then
		vt_pass "blk-disk-$BLK"
	else
		vt_fail blk-disk "$BLK"
		BLK=''
	fi
fi
dd if=/dev/urandom bs=3k count=$((VT_DATA_MB * 256)) 2>/dev/null | base64 >/tmp/up
md5sum /tmp/up | cut -d' ' -f1 >/tmp/up.want
check_term() { restart_case term; }
check_kill() { restart_case kill; }
# host.sh: vectors=4; a restarted daemon takes every vector over
vt_check qvec-first-host qvec_on_is 1
# shellcheck disable=SC2086 # the kinds, in order
vt_run_checks $VT_KINDS
vt_check no-reprobe test "$(bridge_stat reprobe)" = 0
if [ "$(bridge_stat reattach)" -gt 0 ]; then
	vt_check qvec-restarted-host-kept qvec_on_is 1
	if [ -n "$BLK" ]; then
		vt_check qvec-restarted-blk-irqs blk_on_qvec
		cat /tmp/qvec.log 2>/dev/null
	fi
fi
if [ -n "$FS" ]; then
	vt_check ext4-umount umount /mnt/fs
	vt_check ext4-fsck-clean /usr/sbin/fsck.ext4 -n -f "/dev/$FS"
	vt_check ext4-remount mount -t ext4 "/dev/$FS" /mnt/fs &&
		vt_check ext4-files-after-remount fs_files_ok
	umount /mnt/fs
	FS=''
fi
check_flap() { [ "${VT_FLAP:-1}" = 1 ] && flap_case; }
check_resize() { [ -n "$FSDEV" ] && [ -n "$BLK" ] && resize_case; }
check_stop() { [ -n "$BLK" ] && [ "${VT_STOP:-0}" = 1 ] && stop_case; }
vt_run_checks flap resize stop
vt_check unload sh -c "rmmod ${BLK:+vbus_blk }${VT_FS_SERIAL:+ext4 }vbus_test venet vbus_pcibridge vbus_proxy vbus_core"
vt_done
