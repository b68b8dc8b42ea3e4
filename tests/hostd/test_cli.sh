#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vbus-hostd command line and config file: every bad input is a clear
# message and a non-zero exit; then a daemon run driven through `ctl`.
# shellcheck source=tests/hostd/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

G="g1:sock=$T/g1.sock,mem=$T/g1.ram,size=16M"

expect_fail "no arguments" "--ctl CTL.sock is required"
expect_fail "unknown option" "unknown option '--bogus'" "${C[@]}" --guest "$G" --bogus
expect_fail "missing argument" "needs an argument" "${C[@]}" --guest
expect_fail "positional argument" "unexpected argument 'extra'" "${C[@]}" --guest "$G" extra
expect_fail "no guest" "no --guest" "${C[@]}"
expect_fail "guest without name" "expected NAME:key=value" "${C[@]}" --guest "sock=a"
expect_fail "bad guest name" "bad guest name" "${C[@]}" --guest "g 1:sock=a,mem=b,size=1G"
expect_fail "bad size" "bad size '12Q'" "${C[@]}" --guest "g1:sock=a,mem=b,size=12Q"
expect_fail "tiny size" "multiple of 4 KiB between 1M and 1T" "${C[@]}" --guest "g1:sock=a,mem=b,size=1000"
expect_fail "huge size" "bad size|between 1M and 1T" "${C[@]}" --guest "g1:sock=a,mem=b,size=99999999999G"
expect_fail "bad machine" "machine must be q35 or pc" "${C[@]}" --guest "$G,machine=arm"
expect_fail "missing mem" "missing mem=" "${C[@]}" --guest "g1:sock=a,size=1G"
expect_fail "unknown guest key" "unknown parameter 'foo'" "${C[@]}" --guest "$G,foo=1"
expect_fail "unknown QEMU user" "qemu_uid=no-such-user-x: no such user" "${C[@]}" --guest "$G,qemu_uid=no-such-user-x"
expect_fail "unknown QEMU group" "qemu_gid=no-such-group-x: no such group" "${C[@]}" --guest "$G,qemu_gid=no-such-group-x"
expect_fail "vectors= below 2" "vectors=1 must be a number from 2 to 64" "${C[@]}" --guest "$G,vectors=1"
expect_fail "vectors= above 64" "vectors=65 must be a number from 2 to 64" "${C[@]}" --guest "$G,vectors=65"
expect_fail "vectors= not a number" "vectors=4x must be a number from 2 to 64" "${C[@]}" --guest "$G,vectors=4x"
expect_fail "threads= above 16" "threads=17 must be a number from 0 to 16" "${C[@]}" --guest "$G,threads=17"
expect_fail "threads= not a number" "threads=-1 must be a number from 0 to 16" "${C[@]}" --guest "$G,threads=-1"
expect_fail "malformed pair" "malformed 'size'" "${C[@]}" --guest "g1:sock=a,mem=b,size"
expect_fail "duplicate key" "sock= given twice" "${C[@]}" --guest "$G,sock=x"
expect_fail "duplicate guest" "guest g1 defined twice" "${C[@]}" --guest "$G" --guest "$G"
expect_fail "device on unknown guest" "^vbus-hostd: no guest 'g2'$" "${C[@]}" --guest "$G" --device g2:type=vbus-test,id=1
expect_fail "unknown device type" "guest g1: device 1: unknown device type 'nope' \\(known: .*venet \\(alias virtual-ethernet\\)" "${C[@]}" --guest "$G" --device g1:type=nope,id=1
expect_fail "device without id" "missing id=" "${C[@]}" --guest "$G" --device g1:type=vbus-test
expect_fail "bad device id" "bad id 'abc'" "${C[@]}" --guest "$G" --device g1:type=vbus-test,id=abc
expect_fail "device id too big" "bad id '4294967296'" "${C[@]}" --guest "$G" --device g1:type=vbus-test,id=4294967296
expect_fail "duplicate device id" "guest g1: device 1: id already in use" "${C[@]}" --guest "$G" --device g1:type=vbus-test,id=1 --device g1:type=vbus-test,id=1
expect_fail "missing config" "config $T/nope.conf: No such file" "${C[@]}" --config "$T/nope.conf"
printf '# comment\n--guest %s\nbogus line\n' "$G" >"$T/bad.conf"
expect_fail "bad config line" "bad.conf:3: expected '--guest SPEC'" "${C[@]}" --config "$T/bad.conf"
printf 'guest %s\n--device g1:type=vbus-test,id=x\n' "$G" >"$T/bad2.conf"
expect_fail "bad config device" "bad2.conf:2: .*bad id 'x'" "${C[@]}" --config "$T/bad2.conf"
# a device key's mistake in a file reads word for word as on the command
# line and from ctl add (test_ctl_errors.sh)
printf 'guest %s\n--device g1:type=venet,id=1,backend=null,queues=17\n' "$G" >"$T/queues.conf"
expect_fail "bad config device key" \
	"^vbus-hostd: guest g1: device 1 \\(venet\\): queues=17: want 1\\.\\.16 \\(queue pairs\\)\$" \
	"${C[@]}" --config "$T/queues.conf"
head -c 3000 /dev/zero | tr '\0' 'a' >"$T/long.conf"
expect_fail "overlong config line" "long.conf:1: line too long" "${C[@]}" --config "$T/long.conf"
mkfifo "$T/fifo.conf"
expect_fail "config is a FIFO" "config $T/fifo.conf is not a regular file" --config "$T/fifo.conf"
expect_fail "config is /dev/zero" "config /dev/zero is not a regular file" --config /dev/zero
expect_fail "config is a directory" "config $T is not a regular file" --config "$T"
printf -- '--guest %s\n--device g1:type=vbus-test,id=1\0,color=blue\n' "$G" >"$T/nul.conf"
expect_fail "config line with a NUL" "nul.conf:2: a NUL byte: not a text line" --config "$T/nul.conf"
truncate -s 2M "$T/huge.conf"
expect_fail "config over 1 MiB" "config $T/huge.conf is 2097152 bytes: larger than 1048576" --config "$T/huge.conf"
expect_fail "long socket path" "path too long|longer than" "${C[@]}" --guest "g1:sock=$T/$(printf '%0200d' 0),mem=$T/x,size=16M"
expect_fail "RAM in a missing dir" "guest g1: RAM file .*/no/such/dir: No such file or directory" "${C[@]}" --guest "g1:sock=$T/g1.sock,mem=$T/no/such/dir,size=16M" --foreground
expect_fail "bad device parameter" "guest g1: device 1 \\(vbus-test\\): unknown parameter 'color' \\(known: none\\)" "${C[@]}" --guest "$G" --device g1:type=vbus-test,id=1,color=blue --foreground
# supervised (NOTIFY_SOCKET) without --foreground: refused before anything
# is created, the same message from the daemon alone and under the keeper
SUP="NOTIFY_SOCKET is set .* but --foreground is not: .*add --foreground"
NOTIFY_SOCKET=@vbus-cli-none expect_fail "supervised, forking" "$SUP" "${C[@]}" --guest "$G"
[ -e "$T/ctl.sock" ] && fail "supervised, forking: left $T/ctl.sock"
keeper=$(dirname "$HOSTD")/vbus-fdkeeper
timeout 20 "$keeper" -- "$HOSTD" "${C[@]}" --guest "$G" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 2 ]; then
	fail "keeper without --foreground: exit $rc, not 2:"; sed 's/^/    /' "$T/err"
elif ! grep -Eq -- "$SUP" "$T/err"; then
	fail "keeper without --foreground: stderr does not match /$SUP/:"; sed 's/^/    /' "$T/err"
elif pgrep -f -- "$T/ctl.sock" >/dev/null || [ -e "$T/ctl.sock" ]; then
	fail "keeper without --foreground: a daemon or its socket was left"
else
	echo "ok: keeper without --foreground (exit 2): $(grep -m1 NOTIFY_SOCKET "$T/err")"
fi
expect_fail "ipc region too large" "guest g1: device 5 \\(vbus-ipc\\): count=1024 x bufsize=1048576 = 1073741824 bytes a direction: .* over its limit of 1073741824; count x bufsize must be at most [0-9]+$" "${C[@]}" --guest "$G" --device "g1:type=vbus-ipc,id=5,service=e,sock=$T/e.sock,qsock=$T/q.sock,count=1024,bufsize=1048576" --foreground
expect_fail "ipc link with sock=" "guest g1: device 6 \\(vbus-ipc\\): peer= links two guests: sock= and peer_uid= \\(a host process\\) do not apply$" "${C[@]}" --guest "$G" --device "g1:type=vbus-ipc,id=6,service=c,sock=$T/l.sock,qsock=$T/l1.sock,peer=g2,peer_qsock=$T/l2.sock" --foreground
# the keeper's notify socket cannot be taken over once the keeper is gone:
# another user binding its name would get the next QEMU connection's
# descriptors from the daemon that lives on
if [ "$(id -u)" = 0 ]; then
	"$keeper" -- "$HOSTD" --foreground --ctl "$T/k.sock" \
		--guest "g1:sock=$T/kg1.sock,mem=$T/kg1.ram,size=16M" 2>"$T/keeper.err" &
	kpid=$!
	for _ in $(seq 400); do [ -S "$T/k.sock" ] && break; sleep 0.05; done
	dpid=$(pgrep -P "$kpid" | head -1)
	ns=$(tr '\0' '\n' <"/proc/$dpid/environ" 2>/dev/null | sed -n 's/^NOTIFY_SOCKET=//p')
	kill -9 "$kpid"
	wait "$kpid" 2>/dev/null
	if [ -z "$ns" ]; then
		fail "keeper: no NOTIFY_SOCKET in the daemon's environment"
	else
		# exit 3: the bind was refused; 0: bound; anything else: broken
		setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 - "$ns" <<'EOF'
import socket, sys
name = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    s.bind("\0" + name[1:] if name.startswith("@") else name)
except OSError as e:
    print(e)
    sys.exit(3)
EOF
		case $? in
		3) echo "ok: keeper gone: uid 65534 cannot bind its notify socket $ns" ;;
		0) fail "keeper gone: uid 65534 bound its notify socket $ns" ;;
		*) fail "keeper gone: the bind as uid 65534 did not run" ;;
		esac
	fi
	kill "$dpid" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.05; done
	# a SIGKILLed keeper cannot remove its directory
	case $ns in /*/vbus-fdkeeper.*/notify) rm -rf "${ns%/notify}" ;; esac
fi
expect_fail "ctl without --ctl" "--ctl CTL.sock is required" ctl list
expect_fail "ctl unknown option" "unknown option '--nope'" ctl "${C[@]}" list --nope
expect_fail "ctl without command" "no command" ctl "${C[@]}"
expect_fail "ctl no daemon" "cannot connect to $T/ctl.sock" ctl "${C[@]}" list

# ---- a daemon (forking mode), driven through ctl ----
cat >"$T/good.conf" <<EOF
# two guests; one device each
--guest $G
guest g2:sock=$T/g2.sock,mem=$T/g2.ram,size=8M,machine=pc   # trailing comment
--device g1:type=vbus-test,id=1
device g2:type=vbus-test,id=7
EOF
start_daemon "${C[@]}" --config "$T/good.conf" || finish
for f in g1.sock g2.sock ctl.sock; do
	[ -S "$T/$f" ] || fail "$f is not a socket"
done
[ "$(stat -c %s "$T/g1.ram")" = $((16 << 20)) ] || fail "g1.ram size"

expect_ok "list" "^guest=g1 state=waiting sock=$T/g1.sock" list
expect_ok "list devices" "^id=1 type=vbus-test state=closed$" list
expect_ok "list --json" '^\{"guests": \[\{"guest": "g1".*"guest": "g2".*"id": 7, "type": "vbus-test", "state": "closed"\}\]\}\]\}$' list --json
expect_ok "add" "added vbus-test device 3 to g1" add g1 type=vbus-test,id=3
expect_ok "stats" "^id=3 type=vbus-test state=closed calls=0 .* faults=0 ring=0 rounds=0 requeues=0$" stats g1
expect_ok "stats guest" "^guest=g1 state=waiting connections=0 refused=0 hypercalls=0 .* bus_faults=0$" stats g1
expect_ok "stats one --json" '^\{"guest": "g1".*"devices": \[\{"id": 3,' stats g1 3 --json
expect_ok "drop" "dropped device 3 from g1" drop g1 3
expect_fail "drop again" "guest g1 has no device 3" ctl "${C[@]}" drop g1 3
expect_fail "add duplicate" "guest g1: device 1: id already in use" ctl "${C[@]}" add g1 type=vbus-test,id=1
expect_fail "add bad spec" "missing id=" ctl "${C[@]}" add g1 type=vbus-test
expect_fail "add unknown type" "guest g1: device 4: unknown device type 'x'" ctl "${C[@]}" add g1 type=x,id=4
# a vbus-ipc link's mistake: the same message from ctl add as from the command line
LINKERR="guest g1: device 6 \\(vbus-ipc\\): peer= links two guests: sock= and peer_uid= \\(a host process\\) do not apply$"
expect_fail "add ipc link with sock=" "$LINKERR" ctl "${C[@]}" add g1 "type=vbus-ipc,id=6,service=c,sock=$T/l.sock,qsock=$T/l1.sock,peer=g2,peer_qsock=$T/l2.sock"
expect_fail "stats unknown guest" "^vbus-hostd ctl: no guest 'zz'$" ctl "${C[@]}" stats zz
expect_fail "bad command" "usage:" ctl "${C[@]}" frobnicate
expect_fail "second daemon" "guest g1: RAM file $T/g1.ram is in use: locked by pid $pid \\(vbus-hostd\\)" "${C[@]}" --config "$T/good.conf"

# garbage on the control socket: an error reply, the daemon lives on
if command -v python3 >/dev/null; then
	if python3 - "$T/ctl.sock" <<'EOF'
import socket, sys
for payload in [b"\x00\xff\xfe" * 50 + b"\n", b"a" * 9000, b"", b"stats\n"]:
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall(payload); s.shutdown(socket.SHUT_WR)
    r = s.recv(100000); s.close()
    assert payload == b"" or r.startswith(b"ERR"), (payload[:10], r)
EOF
	then
		echo "ok: control socket garbage"
	else
		fail "control socket garbage"
	fi
fi
expect_ok "still alive" "g2 " list

# the control socket is the daemon's user's: mode 0600, and a client of
# another uid is refused even when the mode is loosened (a passed fd)
if [ "$(stat -c %a "$T/ctl.sock")" = 600 ]; then
	echo "ok: ctl.sock is 0600"
else
	fail "ctl.sock mode $(stat -c %a "$T/ctl.sock"), not 600"
fi
if [ "$(id -u)" = 0 ]; then
	chmod 666 "$T/ctl.sock"
	chmod o+x "$T"
	if setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$HOSTD" ctl "${C[@]}" list >"$T/out" 2>"$T/err"; then
		fail "ctl from uid 65534: served: $(head -1 "$T/out")"
	elif grep -q "permission denied" "$T/err"; then
		echo "ok: ctl from uid 65534 refused: $(head -1 "$T/err")"
	else
		fail "ctl from uid 65534: $(head -1 "$T/err")"
	fi
	chmod 600 "$T/ctl.sock"
	chmod o-x "$T"
fi

# a client that sends its request a byte at a time cannot hold the
# thread that serves ctl: another client is answered while it drips
drip_client "$T/ctl.sock" l || fail "the dripping client did not connect"
t0=$(date +%s%N)
expect_ok "list while a client drips" "g2 " list
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$ms" -lt 15000 ]; then
	echo "ok: answered in $ms ms while another client dripped (its request is cut at 2 s)"
else
	fail "ctl list took $ms ms behind a dripping client"
fi
wait "$drip"

if stop_daemon; then
	[ -e "$T/g1.sock" ] && fail "g1.sock left behind"
	[ -e "$T/ctl.sock" ] && fail "ctl.sock left behind"
	echo "ok: daemon exited on SIGTERM and removed its sockets"
fi
finish
