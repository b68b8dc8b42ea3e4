# shellcheck shell=dash
# The vbus_blk suite's checks of the later disk features (issue 23),
# sourced by guest.sh (busybox sh): topology in the queue limits and the
# geometry (HDIO_GETGEO), the cache_type attribute, online resize of a mounted ext4 and a disk from
# a host that offers only the first features (compat=v1), and DISCARD
# with a range list (F_DISCARD_RANGES). Uses guest.sh's disk, gone, attr,
# log, write_pattern and the host requests topo, resize, addold, dropold,
# sha, qstat (host.sh).

# topo_matches DISK: the queue limits are what vbus-hostd's GETTOPOLOGY
# said (its ctl stats: "PBS IO_MIN IO_OPT NONROT")
topo_matches() {
	local t pbs iomin ioopt nonrot
	t=$(vt_host topo rw) || { echo "$t"; return 1; }
	# shellcheck disable=SC2086 # four numbers
	set -- $t
	pbs=$1 iomin=$2 ioopt=$3 nonrot=$4
	log "topology from the host: physical $pbs, io_min $iomin, io_opt $ioopt, nonrot $nonrot" >/tmp/topo.log
	attr "$RW" queue/physical_block_size "$pbs" &&
		attr "$RW" queue/minimum_io_size "$iomin" &&
		attr "$RW" queue/optimal_io_size "$ioopt" &&
		attr "$RW" queue/rotational $((1 - nonrot))
}

# geometry DISK: HDIO_GETGEO (busybox fdisk asks it; without the op it
# makes up 255 heads, 63 sectors) is virtio-blk's default: 64 heads,
# 32 sectors, size / 2048 cylinders
geometry() {
	local want
	want="$(($(cat "/sys/block/$1/size") / 2048)) cylinders, 64 heads, 32 sectors/track"
	fdisk -l "/dev/$1" 2>&1 | grep -F "$want" && return 0
	fdisk -l "/dev/$1" 2>&1 | head -n 3
	echo "fdisk does not say: $want"
	return 1
}

# cache_type: write back (FLUSH + FUA granted); write through turns the
# block layer's write cache off; bad input is refused and changes nothing
cache_type_rw() {
	local f="/sys/block/$1/cache_type"
	attr "$1" cache_type "write back" || return 1
	echo "write through" >"$f" || return 1
	attr "$1" cache_type "write through" &&
		attr "$1" queue/write_cache "write through" || return 1
	# a write in write-through mode (FUA on every write) reaches the host
	guest_to_host "$1" 8388608 1048576 || return 1
	if echo "write sometimes" >"$f" 2>/dev/null; then
		echo "cache_type took 'write sometimes'"
		return 1
	fi
	attr "$1" cache_type "write through" || return 1
	echo "write back" >"$f" || return 1
	attr "$1" cache_type "write back" &&
		attr "$1" queue/write_cache "write back"
}

# grow_mounted DISK: ext4 mounted on DISK; the host grows the file by
# 32 MiB (ctl resize); the disk's size follows without a reopen, and
# resize2fs grows the mounted file system online; fsck clean afterwards
grow_mounted() {
	local d=$1 old want before after m
	mkdir -p /mnt/rs
	# metadata_csum wants crc32c (as ext4_cycle; either group may run alone)
	for m in crc32c_generic ext4; do
		[ -d "/sys/module/$m" ] || vt_kmod_load "$m" || return 1
	done
	/usr/sbin/mkfs.ext4 -q -F "/dev/$d" || return 1
	mount -t ext4 "/dev/$d" /mnt/rs || return 1
	head -c 1048576 /dev/urandom >/mnt/rs/keep
	md5sum /mnt/rs/keep >/tmp/keep.md5
	before=$(df -k /mnt/rs | awk 'NR == 2 { print $2 }')
	old=$(cat "/sys/block/$d/size")
	want=$((old + 65536))
	if ! vt_host resize rw $((want * 512)); then
		umount /mnt/rs
		return 1
	fi
	if ! vt_wait 20 attr "$d" size "$want"; then
		umount /mnt/rs
		return 1
	fi
	log "RESIZE $d: $old -> $want sectors, seen without a reopen" >/tmp/resize.log
	if ! /usr/sbin/resize2fs "/dev/$d" >/tmp/resize2fs.out 2>&1; then
		cat /tmp/resize2fs.out
		umount /mnt/rs
		return 1
	fi
	after=$(df -k /mnt/rs | awk 'NR == 2 { print $2 }')
	log "RESIZE ext4 on $d: $before -> $after KiB, online" >>/tmp/resize.log
	md5sum -c -s /tmp/keep.md5 || { echo "file changed"; umount /mnt/rs; return 1; }
	umount /mnt/rs || return 1
	[ "$after" -gt "$before" ] || { echo "ext4 did not grow: $before -> $after KiB"; return 1; }
	/usr/sbin/fsck.ext4 -n -f "/dev/$d"
}

# the newest probe line of the disk with serial $1 (dmesg)
probe_line() { dmesg | grep "serial $1\$" | tail -n 1; }

# compat=v1: a host that offers only the first features; the new driver
# neither asks for the later ones nor needs them
old_host_disk() {
	local d line
	d=$(disk vbt-old 30) || { echo "$d"; return 1; }
	line=$(probe_line vbt-old)
	log "compat=v1 disk $d: $line"
	case "$line" in
	*" topology"* | *" resize"* | *" discard-ranges"*) echo "the old host's disk has later features: $line"; return 1 ;;
	"") echo "no probe line for vbt-old"; return 1 ;;
	esac
	attr "$d" cache_type "write back" || return 1
	# no range list from an old host: one range per DISCARD
	attr "$d" queue/max_discard_segments 1 || return 1
	write_pattern "$d" 0 1048576 >/tmp/old.sha || return 1
	same_as_host "$d" old 0 1048576 || return 1
	echo "$d" >/tmp/old.disk
}

# multi_range DISK: a DISCARD the block layer merged from two bios goes
# to the host as one request of two ranges. blkdiscard from 512 bytes
# past a discard granule: blkdev_issue_discard cuts the head up to the
# granule into a bio of its own and, in the same plug, the rest into a
# second, which merges into the first's request (max_discard_segments >
# 1). The host counts a request of more than one range, the discarded
# bytes are zero in its file, the ones either side are what was written.
MR_OFF=33554432		# 32 MiB into the rw disk, MR_DATA bytes of data there
MR_DATA=131072
MR_LEN=65536		# discarded from MR_OFF + 512
multi_range() {
	local d=$1 before after n gran zero head tail
	gran=$(cat "/sys/block/$d/queue/discard_granularity")
	[ "$gran" -gt 512 ] || { echo "discard_granularity $gran: no head bio to split off"; return 1; }
	before=$(vt_host qstat 1 multi_range_discards 0) || { echo "$before"; return 1; }
	n=${before#*=}
	write_pattern "$d" "$MR_OFF" "$MR_DATA" >/dev/null || return 1
	/usr/sbin/blkdiscard -o $((MR_OFF + 512)) -l "$MR_LEN" "/dev/$d" || return 1
	after=$(vt_host qstat 1 multi_range_discards $((n + 1))) ||
		{ echo "$after"; return 1; }
	zero=$(head -c "$MR_LEN" /dev/zero | sha256sum | cut -d' ' -f1)
	head=$(head -c 512 /tmp/pattern | sha256sum | cut -d' ' -f1)
	tail=$(dd if=/tmp/pattern bs=512 skip=$(((512 + MR_LEN) / 512)) 2>/dev/null |
		sha256sum | cut -d' ' -f1)
	log "DISCARD_MULTI granularity $gran: multi_range_discards $n -> ${after#*=}" >/tmp/mr.log
	[ "$(vt_host sha rw $((MR_OFF + 512)) "$MR_LEN")" = "$zero" ] ||
		{ echo "the discarded range is not zero in the host's file"; return 1; }
	[ "$(vt_host sha rw "$MR_OFF" 512)" = "$head" ] ||
		{ echo "the 512 bytes before the range changed"; return 1; }
	[ "$(vt_host sha rw $((MR_OFF + 512 + MR_LEN)) $((MR_DATA - 512 - MR_LEN)))" = "$tail" ] ||
		{ echo "the bytes after the range changed"; return 1; }
}

check_discard_multi() {
	vt_check discard-ranges-limit attr "$RW" queue/max_discard_segments 64
	vt_check discard-multi-range multi_range "$RW"
	cat /tmp/mr.log 2>/dev/null
}

check_topology() {
	local line
	line=$(probe_line "$VT_RW_SERIAL")
	case "$line" in
	*" topology"*" resize "*) vt_pass features-negotiated ;;
	*) vt_fail features-negotiated "probe line: $line" ;;
	esac
	vt_check topology-queue-limits topo_matches
	vt_check getgeo-virtio-default geometry "$RW"
	cat /tmp/topo.log 2>/dev/null
}
check_cache() { vt_check cache-type cache_type_rw "$RW"; }
check_resize() {
	vt_check resize-mounted-ext4-online grow_mounted "$RW"
	cat /tmp/resize.log 2>/dev/null
}
check_compat() {
	vt_check old-host-add vt_host addold || return
	vt_check old-host-new-guest old_host_disk
	vt_check old-host-drop vt_host dropold
	[ -s /tmp/old.disk ] && vt_check old-host-disk-gone gone "$(cat /tmp/old.disk)" 30
}
