#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The same mistake reads the same whichever way it arrives: each bad
# device spec is given once on the command line (--device, the daemon
# refuses to start) and once to a running daemon (ctl add), and the two
# messages must be identical and say what is wrong. A tap serves at most
# one device of a daemon, both ways too. The daemons run in a network
# namespace of their own when unshare(1) may make one, so their taps never
# touch the host's interfaces; without one the taps just stay unopened
# ("no backend"), which these checks do not depend on.
# shellcheck source=tests/hostd/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

NS=()
unshare -n true 2>/dev/null && NS=(unshare -n)
# The command-line daemon must not share the ctl daemon's disk (a disk is
# locked to one daemon): in a mount namespace of its own the same path
# names a copy, so both daemons print the same path.
if ! unshare -m true 2>/dev/null; then
	fail "unshare -m: cannot give the command-line daemon a disk of its own (run as root)"
	finish
fi
TAP=vbce$$
TAP=${TAP:0:15}

# guests NAME: the two guests' options in $guest_args, with files of
# their own per daemon NAME; g2's devices get queue threads by default
# (threads=2: those whose type takes it)
guests() {
	guest_args=(--guest "g1:sock=$T/$1-g1.sock,mem=$T/$1-g1.ram,size=8M"
		    --guest "g2:sock=$T/$1-g2.sock,mem=$T/$1-g2.ram,size=8M,threads=2")
}

# vbus-blk backing files: a disk, one too small for a sector
head -c 1048576 /dev/zero >"$T/disk.img"
head -c 1048576 /dev/zero >"$T/cli-disk.img"
head -c 100 /dev/zero >"$T/tiny.img"
DISK="g1:type=vbus-blk,id=2,file=$T/disk.img"

# ---- the daemon for ctl add: g1 has device 1, a venet on $TAP, and
# device 2, a vbus-blk on $T/disk.img ----
guests ctl
ready=$("${NS[@]}" "$HOSTD" "${C[@]}" "${guest_args[@]}" \
	--device "g1:type=venet,id=1,tap=$TAP" --device "$DISK" \
	2>>"$T/daemon.err")
pid=$(echo "$ready" | sed -n 's/.*ready pid \([0-9]*\).*/\1/p')
[ -n "$pid" ] || { fail "daemon start: $ready $(cat "$T/daemon.err")"; finish; }
pids+=("$pid")
echo "ok: daemon started${NS:+ in a network namespace}: $ready"

# same GUEST SPEC REGEX: --device GUEST:SPEC and ctl add GUEST SPEC say
# the same, and it matches REGEX
same() {
	local guest=$1 spec=$2 re=$3 cli ctl
	guests cli
	# shellcheck disable=SC2016 # the inner sh expands them
	unshare -m "${NS[@]:1}" -- sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
		sh "$T/cli-disk.img" "$T/disk.img" \
		"$HOSTD" --ctl "$T/cli.sock" "${guest_args[@]}" \
		--device "g1:type=venet,id=1,tap=$TAP" --device "$DISK" \
		--device "$guest:$spec" --foreground >/dev/null 2>"$T/cli.err"
	cli=$(sed -n '1s/^vbus-hostd: //p' "$T/cli.err")
	"$HOSTD" ctl "${C[@]}" add "$guest" "$spec" >/dev/null 2>"$T/ctl.err"
	ctl=$(sed -n '1s/^vbus-hostd ctl: //p' "$T/ctl.err")
	if [ -z "$cli" ] || [ "$cli" != "$ctl" ]; then
		fail "$spec: command line and ctl differ:"
		echo "    --device: $(head -1 "$T/cli.err")"
		echo "    ctl add:  $(head -1 "$T/ctl.err")"
		return
	fi
	if ! grep -Eq -- "$re" <<<"$cli"; then
		fail "$spec: '$cli' does not match /$re/"
		return
	fi
	clean_log "$spec" "$T/cli.err" && echo "ok: $spec: both say: $cli"
}

same g1 "type=venet,id=5,tap=abcdefghijklmnop" \
	'^guest g1: device 5 \(venet\): tap name "abcdefghijklmnop" is longer than 15 characters$'
same g1 "type=venet,id=5,mac=01:00:5e:00:00:01" \
	'^guest g1: device 5 \(venet\): bad mac "01:00:5e:00:00:01" \(want a unicast xx:xx:xx:xx:xx:xx\)$'
same g1 "type=venet,id=5,color=blue" \
	"^guest g1: device 5 \\(venet\\): unknown parameter 'color' \\(known: tap, mac, strict, tx_poll_us, backend, queues, doorbell_mask_us, rx_coalesce_us\\)$"
same g1 "type=virtual-ethernet,id=5,strict=2" \
	'^guest g1: device 5 \(venet\): strict=2: want 0 or 1$'
same g1 "type=venet,id=5,tx_poll_us=20000" \
	'^guest g1: device 5 \(venet\): tx_poll_us=20000: want 0..10000 \(microseconds\)$'
same g1 "type=venet,id=5,tx_poll_us=-1" \
	'^guest g1: device 5 \(venet\): tx_poll_us=-1: want 0..10000 \(microseconds\)$'
same g1 "type=venet,id=5,doorbell_mask_us=10001" \
	'^guest g1: device 5 \(venet\): doorbell_mask_us=10001: want 0..10000 \(microseconds\)$'
same g1 "type=venet,id=5,rx_coalesce_us=x" \
	'^guest g1: device 5 \(venet\): rx_coalesce_us=x: want 0..10000 \(microseconds\)$'
same g1 "type=venet,id=5,queues=0" \
	'^guest g1: device 5 \(venet\): queues=0: want 1..16 \(queue pairs\)$'
same g1 "type=venet,id=5,queues=17" \
	'^guest g1: device 5 \(venet\): queues=17: want 1..16 \(queue pairs\)$'
same g1 "type=vbus-test,id=5,color=blue" \
	"^guest g1: device 5 \\(vbus-test\\): unknown parameter 'color' \\(known: none\\)$"
same g1 "type=nope,id=5" \
	"^guest g1: device 5: unknown device type 'nope' \\(known: .*venet \\(alias virtual-ethernet\\).*\\)$"
same g1 "type=vbus-test,id=1" '^guest g1: device 1: id already in use$'
same g1 "type=vbus-test,id=x" \
	"^guest g1: device spec 'type=vbus-test,id=x': bad id 'x' \\(0..4294967295\\)$"
same g1 "type=vbus-test" "^guest g1: device spec 'type=vbus-test': missing id=$"
same g1 "type=vbus-test,id=5,id=6" \
	"^guest g1: device spec 'type=vbus-test,id=5,id=6': id= given twice$"
same g1 "type=vbus-test,id=5,bad" \
	"^guest g1: device spec 'type=vbus-test,id=5,bad': malformed 'bad' \\(expected key=value\\)$"
same g9 "type=vbus-test,id=5" "^no guest 'g9'$"
# a tap serves one device: in the same guest and across guests
same g1 "type=venet,id=5,tap=$TAP" \
	"^guest g1: device 5 \\(venet\\): tap $TAP is already used by device 1 of guest g1$"
same g2 "type=venet,id=5,tap=$TAP" \
	"^guest g2: device 5 \\(venet\\): tap $TAP is already used by device 1 of guest g1$"

# vbus-blk: its backing file is checked and claimed at create
B='^guest g1: device 5 \(vbus-blk\): '
same g1 "type=vbus-blk,id=5" \
	"${B}vbus-blk needs file=PATH \\(a regular file or a block device\\) or nbd=URI \\(an NBD export\\)\$"
# nbd=: one backend per device; a server that is not there is named
NBD="nbd+unix:///?socket=$T/no-server.sock"
NBD_RE="nbd\\+unix:///\\?socket=$T/no-server.sock"
same g1 "type=vbus-blk,id=5,file=$T/disk.img,nbd=$NBD" \
	"${B}vbus-blk takes one of file=PATH, nbd=URI and image=PATH\$"
same g1 "type=vbus-blk,id=5,image=$T/missing.qcow2" \
	"${B}image=$T/missing.qcow2: No such file or directory\$"
same g1 "type=vbus-blk,id=5,nbd=$NBD" \
	"${B}nbd=$NBD_RE: cannot connect: .*connect: No such file or directory\$"
same g1 "type=vbus-blk,id=5,file=$T/missing.img" \
	"${B}backing file $T/missing.img: No such file or directory\$"
same g1 "type=virtual-block,id=5,file=$T" \
	"${B}backing file $T is not a regular file or a block device\$"
same g1 "type=vbus-blk,id=5,file=$T/tiny.img" \
	"${B}backing file $T/tiny.img is smaller than one logical block \\(100 < [0-9]+ bytes\\)\$"
same g1 "type=vbus-blk,id=5,file=$T/disk.img,depth=3" \
	"${B}depth=3: want a power of two in 1..1024\$"
same g1 "type=vbus-blk,id=5,file=$T/disk.img" \
	"${B}backing file $T/disk.img is already used by device 2 of guest g1 \\(as $T/disk.img\\)\$"
same g2 "type=vbus-blk,id=5,file=$T/../${T##*/}/disk.img" \
	"^guest g2: device 5 \\(vbus-blk\\): backing file $T/disk.img is already used by device 2 of guest g1 \\(as $T/disk.img\\)\$"

# threads= (the library's, every device type): a number 0..16, only for
# a type that serves queues from threads (vbus-blk's file backend); the
# config file says it the same way too
TH="want a number in 0..16 \\(0: the guest's thread serves every queue\\)\$"
same g1 "type=vbus-blk,id=5,file=$T/tiny.img,threads=x" "${B}threads=x: $TH"
same g1 "type=vbus-blk,id=5,file=$T/tiny.img,threads=17" "${B}threads=17: $TH"
same g1 "type=vbus-blk,id=5,file=$T/tiny.img,threads=-1" "${B}threads=-1: $TH"
same g1 "type=vbus-blk,id=5,file=$T/tiny.img,threads=2x" "${B}threads=2x: $TH"
same g1 "type=venet,id=5,threads=2" \
	'^guest g1: device 5 \(venet\): threads=2: venet serves its queues from the guest.s thread only$'
same g1 "type=vbus-blk,id=5,nbd=$NBD,threads=2" \
	"${B}threads=2 applies to file= only \\(nbd= and image= serve every queue from the guest's thread\\)\$"
# g2's threads=2 is its disks' default: an nbd= disk is told to opt out
same g2 "type=vbus-blk,id=5,nbd=$NBD" \
	"^guest g2: device 5 \\(vbus-blk\\): threads=2 \\(the guest's threads=\\) applies to file= only \\(nbd= and image= serve every queue from the guest's thread\\): give this disk threads=0\$"
# the config file's daemon refuses it with the same words as ctl add
guests conf
{
	printf 'guest %s\n' "${guest_args[1]}"
	printf 'device g1:type=vbus-blk,id=5,file=%s/tiny.img,threads=x\n' "$T"
} >"$T/threads.conf"
"$HOSTD" --ctl "$T/conf.sock" --config "$T/threads.conf" --foreground \
	>/dev/null 2>"$T/conf.err"
conf=$(sed -n '1s/^vbus-hostd: //p' "$T/conf.err")
"$HOSTD" ctl "${C[@]}" add g1 "type=vbus-blk,id=5,file=$T/tiny.img,threads=x" \
	>/dev/null 2>"$T/ctl.err"
ctl=$(sed -n '1s/^vbus-hostd ctl: //p' "$T/ctl.err")
if [ -n "$conf" ] && [ "$conf" = "$ctl" ]; then
	echo "ok: threads=x: the config file and ctl add both say: $conf"
else
	fail "threads=x: config file '$conf', ctl add '$ctl'"
fi

# none of the refused adds left a device behind, and the tap is free
# again once its device is dropped
expect_fail "g1 got no device 5" "guest g1 has no device 5" ctl "${C[@]}" stats g1 5
expect_fail "g2 got no device 5" "guest g2 has no device 5" ctl "${C[@]}" stats g2 5
# ctl resize: a device's own verb; each mistake says what is wrong and
# changes nothing (the disk is 1 MiB: capacity=2048 below)
R="^vbus-hostd ctl: guest g1: device 2 \\(vbus-blk\\): "
expect_fail "resize: a device without the verb" \
	"^vbus-hostd ctl: guest g1: device 1 \\(venet\\): no verb 'resize'\$" \
	ctl "${C[@]}" resize g1 1 2M
expect_fail "resize: no such device" "^vbus-hostd ctl: guest g1 has no device 9\$" \
	ctl "${C[@]}" resize g1 9 2M
expect_fail "resize: SIZE not a size" \
	"${R}resize: SIZE '2X': want bytes, or a number with K, M, G or T \\(1024-based\\), 1 .. 1 EiB\$" \
	ctl "${C[@]}" resize g1 2 2X
expect_fail "resize: SIZE 0" "${R}resize: SIZE '0': want bytes" \
	ctl "${C[@]}" resize g1 2 0
expect_fail "resize: SIZE past 1 EiB" "${R}resize: SIZE '99999999T': want bytes" \
	ctl "${C[@]}" resize g1 2 99999999T
expect_fail "resize: not whole blocks" \
	"${R}resize: 1049089 bytes is not a multiple of the disk's logical block \\([0-9]+ bytes\\)\$" \
	ctl "${C[@]}" resize g1 2 1049089
expect_fail "resize: a shrink" \
	"${R}resize: 524288 bytes is smaller than the disk \\(1048576 bytes\\): vbus-hostd only grows a disk" \
	ctl "${C[@]}" resize g1 2 512K
expect_fail "resize: missing SIZE" "^vbus-hostd ctl: usage: .*resize NAME ID SIZE" \
	ctl "${C[@]}" resize g1 2
expect_ok "resize: none of them changed the disk" "capacity=2048 .*resizes=0 " stats g1 2
expect_ok "resize: the same size" "disk.img: 1048576 bytes already\$" resize g1 2 1M
expect_ok "resize: grow to 2 MiB" "disk.img: 2097152 bytes; the guest sees it when it opens the device again" resize g1 2 2M
expect_ok "resize: the disk's new capacity" "capacity=4096 .*resizes=1 " stats g1 2
if [ "$(stat -c %s "$T/disk.img")" = 2097152 ]; then
	echo "ok: resize: the file is 2 MiB"
else
	fail "resize: the file is $(stat -c %s "$T/disk.img") bytes, not 2097152"
fi
expect_ok "drop the tap's device" "dropped device 1 from g1" drop g1 1
expect_ok "its tap is free again" "added venet device 6 to g2" add g2 "type=venet,id=6,tap=$TAP"
expect_ok "the disk's stats" "direct=[01] .*capacity=4096 " stats g1 2
expect_ok "the disk's stats, json" '"capacity": ?4096' stats --json g1 2
expect_ok "drop the disk's device" "dropped device 2 from g1" drop g1 2
expect_ok "its file is free again" "added virtual-block device 7 to g2" add g2 "type=virtual-block,id=7,file=$T/disk.img"
expect_ok "g2's threads=2 is its disk's default" " threads=2" stats g2 7
stop_daemon
finish
