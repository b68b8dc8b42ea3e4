# shellcheck shell=dash
# Guest side of bench/blk-vs-virtio.sh; runs as /test/run.sh under busybox
# sh. Finds the disks by serial (vbus-blk: $VB_VBUS_SERIAL, virtio-blk:
# $VB_VIRTIO_SERIAL; any other disk D of VB_DISKS, e.g. the qcow2 ones
# vbusq and virtioq: bench-D), then for each round (disk order alternating) runs
# every fio job on each disk. Around each run it tells the host (vt_host
# begin|end DISK JOB ROUND, the lab's request channel) so that the host
# reads its CPU counters right at the edges; the fio JSON goes to the console between
#   VBUS-BENCH-JSON-BEGIN DISK JOB ROUND  and  VBUS-BENCH-JSON-END
# lines. "VBUS-BENCH DISK up NAME | unavailable REASON" says what is there.
#
# Notifications, counted here in the guest the same way for both disks and
# sent with each mark ("begin DISK JOB ROUND KICKS IRQS"):
#   KICKS  guest->host: hits of a kprobe on the function that does the
#          MMIO doorbell write (virtio-blk: virtio_pci's vp_notify, the
#          guest's only virtio-pci device; vbus: vbus_pcibridge's
#          vbus_pci_doorbell, this guest's only vbus device), read from
#          tracefs' kprobe_profile. tracing_on stays 0: the probe counts
#          its hits, nothing is recorded.
#   IRQS   host->guest: the /proc/interrupts lines of the disk's MSI-X
#          vectors, all CPUs (virtio-blk: "virtioN-req.M" and
#          "virtioN-config" of the disk's virtioN; vbus: the bridge's
#          "vbus-eventq", through which the host signals the disk's rings)
# Both counts are of every disk of the kind (vbus*, virtio*), but only
# the disk under test is busy while they are taken.
# "-" when a count is not available (no tracefs, a probe refused).
#
# With VB_DEMO=1, afterwards: ext4 on the vbus disk (and on vbusq, the
# qcow2 one, when VB_DISKS has it), mounted, a few files
# written, listed, checksummed after a remount (scripts/main.sh shows it).
#
# Knobs (/test/config.sh): VB_DISKS ("vbus virtio"), VB_VBUS_SERIAL,
# VB_VIRTIO_SERIAL, VB_JOBS, VB_ROUNDS, VB_SECS, VB_SIZE_MB, VB_DEMO,
# VB_POLL_QUEUES (poll_queues= of both block drivers; jobs named ...-poll
# run io_uring with --hipri: polled, no completion interrupts).

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VB_DISKS:=vbus virtio}"
: "${VB_VBUS_SERIAL:=bench-vbus}"
: "${VB_VIRTIO_SERIAL:=bench-virtio}"
: "${VB_JOBS:=randread-4k-qd1 randread-4k-qd32 randwrite-4k-qd1 randwrite-4k-qd32 read-128k-qd8 write-128k-qd8}"
: "${VB_ROUNDS:=1}"
: "${VB_SECS:=5}"
: "${VB_SIZE_MB:=256}"
: "${VB_DEMO:=0}"
: "${VB_POLL_QUEUES:=0}"

# disk_by_serial SERIAL: the block device whose serial is SERIAL.
disk_by_serial() {
	local n=0 d
	while [ "$n" -lt 100 ]; do
		for d in /sys/block/*; do
			[ -r "$d/serial" ] || continue
			[ "$(cat "$d/serial")" = "$1" ] && { echo "${d##*/}"; return 0; }
		done
		n=$((n + 1))
		usleep 200000
	done
	return 1
}

for m in virtio_pci virtio_blk vbus_core vbus_proxy vbus_pcibridge vbus_blk; do
	p=""
	case "$m" in virtio_blk | vbus_blk) [ "$VB_POLL_QUEUES" -gt 0 ] && p="poll_queues=$VB_POLL_QUEUES" ;; esac
	# shellcheck disable=SC2086 # p is empty or one word
	[ -f "$VT_KMOD_DIR/$m.ko" ] && vt_kmod_load "$m" $p 2>/dev/null
done

TRACEFS=/sys/kernel/tracing

# kprobe events whose hit counts are the doorbells (see the header)
notif_setup() {
	local p ok=""
	[ -d "$TRACEFS/events" ] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null
	echo 0 >"$TRACEFS/tracing_on" 2>/dev/null
	for p in virtio_kick:virtio_pci:vp_notify \
		vbus_doorbell:vbus_pcibridge:vbus_pci_doorbell; do
		echo "p:vbnotif/${p%%:*} ${p#*:}" >>"$TRACEFS/kprobe_events" 2>/dev/null &&
			echo 1 >"$TRACEFS/events/vbnotif/${p%%:*}/enable" 2>/dev/null &&
			ok="$ok ${p%%:*}"
	done
	echo "VBUS-BENCH notif kprobes:${ok:- none}"
}

# probe_hits EVENT: its hits so far, or -
probe_hits() {
	awk -v e="$1" '$1 == e { print $2; f = 1 } END { if (!f) print "-" }' \
		"$TRACEFS/kprobe_profile" 2>/dev/null || echo -
}

# irq_sum PREFIX: interrupts so far of the vectors named PREFIX*, or -
irq_sum() {
	awk -v p="$1" 'NR == 1 { n = NF; next }
		index($NF, p) == 1 { for (c = 2; c <= n + 1; c++) s += $c; f = 1 }
		END { if (f) print s; else print "-" }' /proc/interrupts
}

# notif_counts DISK: "KICKS IRQS" so far
notif_counts() {
	local irq
	case "$1" in
	vbus*) echo "$(probe_hits vbus_doorbell) $(irq_sum vbus-eventq)" ;;
	*)
		eval "irq=\${virtio_irq_$1:--}"
		echo "$(probe_hits virtio_kick) $(irq_sum "$irq")"
		;;
	esac
}

devs=""
for d in $VB_DISKS; do
	case "$d" in
	vbus) s=$VB_VBUS_SERIAL ;;
	virtio) s=$VB_VIRTIO_SERIAL ;;
	*) s=bench-$d ;;
	esac
	if name=$(disk_by_serial "$s"); then
		echo "VBUS-BENCH $d up $name"
		eval "dev_$d=$name"
		devs="$devs $d"
		# a virtio disk's interrupts: its virtioN's MSI-X lines
		case "$d" in
		virtio*) eval "virtio_irq_$d=$(basename "$(readlink -f "/sys/block/$name/device")")-" ;;
		esac
	else
		echo "VBUS-BENCH $d unavailable no disk with serial $s"
	fi
done
notif_setup

# fio_args JOB: the job's fio options (RW-BS-qdN[-poll])
fio_args() {
	local rw bs qd j=${1%-poll}
	rw=${j%%-*}
	bs=${j#*-}
	bs=${bs%%-*}
	qd=${j##*-qd}
	echo "--rw=$rw --bs=$bs --iodepth=$qd"
	if [ "$j" != "$1" ]; then
		echo "--ioengine=io_uring --hipri=1"
	else
		echo "--ioengine=libaio"
	fi
}

r=1
while [ "$r" -le "$VB_ROUNDS" ]; do
	order=$devs
	[ $((r % 2)) = 0 ] && order=$(echo "$devs" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }')
	for j in $VB_JOBS; do
		for d in $order; do
			dev=
			eval "dev=\$dev_$d"
			# shellcheck disable=SC2046 # two numbers
			vt_host begin "$d" "$j" "$r" $(notif_counts "$d") ||
				echo "bench: host did not answer begin"
			# shellcheck disable=SC2046 # fio_args is a word list
			/usr/bin/fio --name="$j" --filename="/dev/$dev" $(fio_args "$j") \
				--direct=1 --size="${VB_SIZE_MB}M" \
				--time_based --runtime="$VB_SECS" \
				--randrepeat=0 --norandommap --group_reporting \
				--output-format=json --output=/tmp/fio.json >/tmp/fio.err 2>&1 ||
				{ echo "bench: fio $d $j failed: $(tail -n 1 /tmp/fio.err)"; }
			# shellcheck disable=SC2046 # two numbers
			vt_host end "$d" "$j" "$r" $(notif_counts "$d") ||
				echo "bench: host did not answer end"
			echo "VBUS-BENCH-JSON-BEGIN $d $j $r"
			tr -d '\n' </tmp/fio.json
			echo
			echo "VBUS-BENCH-JSON-END"
		done
	done
	r=$((r + 1))
done
# the kprobe method against a counter the driver keeps itself
for f in /sys/bus/pci/drivers/vbus-pcibridge/*/vbus_stats; do
	[ -f "$f" ] && echo "VBUS-BENCH notif check: kprobe vbus_doorbell $(probe_hits vbus_doorbell)," \
		"bridge doorbells $(awk '$1 == "doorbells" { print $2 }' "$f")"
done
echo "VBUS-BENCH DONE"
vt_pass bench-ran

demo() {
	local d=$1 f m
	# once: the demo runs per disk
	for m in crc32c_generic ext4; do
		grep -q "^$m " /proc/modules || vt_kmod_load "$m" || return 1
	done
	# shellcheck disable=SC2012 # queue numbers
	echo "demo: /dev/$d: $(cat "/sys/block/$d/size") sectors, serial $(cat "/sys/block/$d/serial")," \
		"$(ls -d "/sys/block/$d/mq/"* | wc -l) queue(s), write cache: $(cat "/sys/block/$d/queue/write_cache")"
	/usr/sbin/mkfs.ext4 -q -F "/dev/$d" || return 1
	mkdir -p /mnt/demo && mount -t ext4 "/dev/$d" /mnt/demo || return 1
	mkdir -p /mnt/demo/docs
	for f in 1 2 3 4 5; do
		head -c $((f * 100000)) /dev/urandom >"/mnt/demo/docs/file$f"
	done
	uname -a >/mnt/demo/hello.txt
	(cd /mnt/demo && find . -type f | sort | xargs md5sum) >/tmp/demo.md5
	sync
	# shellcheck disable=SC2012 # a listing to show, not to parse
	ls -lR /mnt/demo | sed 's/^/demo: /'
	df -h /mnt/demo | sed 's/^/demo: /'
	umount /mnt/demo && mount -t ext4 "/dev/$d" /mnt/demo || return 1
	(cd /mnt/demo && md5sum -c -s /tmp/demo.md5) || { echo "demo: checksums differ after remount"; return 1; }
	echo "demo: checksums match after remount"
	umount /mnt/demo
}
if [ "$VB_DEMO" = 1 ]; then
	if [ -n "${dev_vbus:-}" ]; then
		vt_check demo-ext4 demo "$dev_vbus"
		sed 's/^/  /' /tmp/.vt_check.out
	else
		vt_fail demo-ext4 "no vbus disk"
	fi
	# --format qcow2: the same on the qcow2 disk (image=)
	case " $VB_DISKS " in
	*" vbusq "*)
		if [ -n "${dev_vbusq:-}" ]; then
			vt_check demo-ext4-qcow2 demo "$dev_vbusq"
			sed 's/^/  /' /tmp/.vt_check.out
		else
			vt_fail demo-ext4-qcow2 "no vbusq disk"
		fi
		;;
	esac
fi
vt_done
