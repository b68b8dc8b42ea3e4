#!/usr/bin/env bash
# What vbus-hostd refuses, shown the way a user meets it (the main job's
# step 2b): a RAM file another user could reach, a disk on a live guest's
# RAM file or on another disk through a hard link, a config that is not a
# regular file, a supervised daemon that would fork, a control client or
# a QEMU socket connector of another uid. Each line is the daemon's own
# message; exit 1 if anything was accepted that must not be.
#
#   scripts/hostd-refusals.sh PATH/TO/vbus-hostd
set -uo pipefail
hostd=${1:?usage: $0 path/to/vbus-hostd}
T=$(mktemp -d /tmp/vbus-refusals.XXXXXX)
pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$T"
}
# shellcheck disable=SC2317 # the EXIT trap runs it
trap cleanup EXIT
bad=0

# refused WHAT ARGS...: vbus-hostd ARGS must fail; print its message
refused() {
	local what=$1 msg
	shift
	if msg=$(timeout 30 "$hostd" "$@" --foreground 2>&1 </dev/null); then
		echo "  ACCEPTED: $what"
		bad=1
		return
	fi
	printf '  %-34s %s\n' "$what:" "$(head -n 1 <<<"$msg")"
}

G="g1:sock=$T/g1.sock,size=16M"
truncate -s 16M "$T/open.ram"
chmod 666 "$T/open.ram"
refused "RAM file mode 0666" --ctl "$T/c.sock" --guest "$G,mem=$T/open.ram"
if [ "$(id -u)" = 0 ]; then
	truncate -s 16M "$T/theirs.ram"
	chmod 600 "$T/theirs.ram"
	chown 65534 "$T/theirs.ram"
	refused "RAM file of another user" --ctl "$T/c.sock" --guest "$G,mem=$T/theirs.ram"
fi
# forking: stdout carries "ready"; its stderr stays open in the daemon
ready=$("$hostd" --ctl "$T/live.sock" --guest "g1:sock=$T/live-g1.sock,mem=$T/live.ram,size=16M" 2>>"$T/daemon.err") &&
	pid=$(sed -n 's/.*ready pid \([0-9]*\).*/\1/p' <<<"$ready")
refused "disk on a live guest's RAM file" --ctl "$T/c.sock" \
	--guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=16M" \
	--device "g2:type=vbus-blk,id=4,file=$T/live.ram"
truncate -s 1M "$T/disk.img"
ln "$T/disk.img" "$T/disk-link.img"
refused "one disk twice through a hard link" --ctl "$T/c.sock" \
	--guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=16M" \
	--device "g2:type=vbus-blk,id=4,file=$T/disk.img" \
	--device "g2:type=vbus-blk,id=5,file=$T/disk-link.img"
refused "config that is /dev/zero" --config /dev/zero
if msg=$(NOTIFY_SOCKET=/nonexistent timeout 30 "$hostd" --ctl "$T/c.sock" \
	--guest "g3:sock=$T/g3.sock,mem=$T/g3.ram,size=16M" 2>&1); then
	echo "  ACCEPTED: a supervised daemon that forks"
	bad=1
else
	printf '  %-34s %s\n' "supervised, without --foreground:" "$(head -n 1 <<<"$msg")"
fi
if [ "$(id -u)" = 0 ] && [ -n "$pid" ]; then
	# a guest's socket: only its QEMU user is served (the log says who)
	chmod 666 "$T/live-g1.sock"
	chmod o+x "$T"
	# any client will do: the daemon must close on it without a word
	timeout 20 setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$hostd" ctl --ctl "$T/live-g1.sock" list >/dev/null 2>&1
	line=$(grep -m1 "refused a connection" "$T/daemon.err")
	if [ -z "$line" ]; then
		echo "  ACCEPTED: a QEMU socket connector of uid 65534"
		bad=1
	else
		printf '  %-34s %s\n' "QEMU socket, uid 65534:" "$line"
	fi
	chmod 666 "$T/live.sock"
	if msg=$(setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$hostd" ctl --ctl "$T/live.sock" list 2>&1); then
		echo "  ACCEPTED: a ctl client of uid 65534"
		bad=1
	elif [[ "$msg" == "vbus-hostd ctl: permission denied"* ]]; then
		printf '  %-34s %s\n' "ctl client of uid 65534:" "$msg"
	else
		echo "  (ctl as uid 65534 did not run: $msg)"
	fi
fi
exit $bad
