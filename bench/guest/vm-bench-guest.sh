# shellcheck shell=dash
# Guest side of bench/vm-to-vm.sh; runs as /test/run.sh under busybox sh
# in both guests. Brings up virtio-net, venet and vbus_ipc (transports.sh;
# the guests' NICs are on one Linux bridge), tells the host which are up
# and learns which are up in both (vt_host up), then runs every session in
# the host's order: VMB_SESSIONS, one "ROUND:T:ACTION:N:BYTES[:BATCH]" per
# session (T: ipc | venet | virtio); a transport not up at both ends is
# skipped by both. VMB_ROLE=a measures (ipc-peer rr/stream, on this
# guest's clock): over the link's /dev/vbus-ipc0 (the north end), or as a
# TCP client of b's address on the NIC's subnet; VMB_ROLE=b echoes
# (/dev/vbus-ipc0, the south end; or a TCP listener on its address, a port
# per session). Around each TCP session a prints its NICs' counters
# (counters.sh), from which the host counts notifications per message.
#
# Console protocol (a's, read by the host afterwards; b says only status):
#   VBUS-VMB T up DETAIL | VBUS-VMB T unavailable REASON
#   VBUS-VMB BOTH T...                 the transports up in both guests
#   VBUS-VMB SNAP SID 0|1 LINE         counters.sh before (0) / after (1)
#   VBUS-VMB OUT SID LINE              ipc-peer's output
#   VBUS-VMB SESSION SID ROUND T EXIT ACTION ARGS...
# Knobs (/test/config.sh): VMB_ROLE, VMB_SESSIONS, VB_VIRTIO_IP,
# VB_VENET_IP, VB_PREFIX, VMB_PEER_VIRTIO, VMB_PEER_VENET, VMB_PORT.

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck source=bench/guest/nic.sh
. /test/nic.sh
# shellcheck source=bench/guest/transports.sh
. /test/transports.sh
# shellcheck disable=SC1091
. /test/config.sh
: "${VB_PREFIX:=24}"

say() { echo "VBUS-VMB $*"; }
dev=/dev/vbus-ipc0
tmo="--timeout 120000"

echo "vm-bench-guest $VMB_ROLE: $(grep -c ^processor /proc/cpuinfo) CPUs, kernel $(uname -r), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
transports_up "$VB_VIRTIO_IP" "$VB_VENET_IP" "$dev"
mine=""
for t in ipc venet virtio; do [ -f "/tmp/$t.up" ] && mine="$mine $t"; done
# shellcheck disable=SC2086 # the list is the request's words
if ! both=$(vt_host up $mine); then
	vt_fail meet "$both"
	vt_done
	exit 0
fi
say BOTH "$both"

snap() { sh /test/counters.sh | sed "s/^/VBUS-VMB SNAP $1 $2 /"; }
peer_ip() { if [ "$1" = venet ]; then echo "$VMB_PEER_VENET"; else echo "$VMB_PEER_VIRTIO"; fi; }
self_ip() { if [ "$1" = venet ]; then echo "$VB_VENET_IP"; else echo "$VB_VIRTIO_IP"; fi; }

# session SID T RUN...: one session, this guest's end
session() {
	local sid=$1 t=$2 port
	shift 2
	port=$((VMB_PORT + sid))
	# shellcheck disable=SC2086 # tmo is two words
	case "$VMB_ROLE:$t" in
	a:ipc) /test/ipc-peer guest "$dev" "$@" $tmo ;;
	a:*) /test/ipc-peer tcp-connect "$(peer_ip "$t"):$port" "$@" $tmo ;;
	b:ipc) /test/ipc-peer guest "$dev" echo $tmo ;;
	b:*) /test/ipc-peer tcp-listen "$(self_ip "$t"):$port" echo $tmo ;;
	esac
}

sid=0 bad=0
for s in $VMB_SESSIONS; do
	sid=$((sid + 1))
	# shellcheck disable=SC2046,SC2086 # the session's fields
	set -- $(echo "$s" | tr : ' ')
	r=$1 t=$2
	shift 2
	case " $both " in *" $t "*) ;; *) continue ;; esac
	[ "$VMB_ROLE" = a ] && [ "$t" != ipc ] && snap "$sid" 0
	session "$sid" "$t" "$@" >/tmp/s.out 2>&1
	rc=$?
	if [ "$VMB_ROLE" = a ]; then
		[ "$t" != ipc ] && snap "$sid" 1
		sed "s/^/VBUS-VMB OUT $sid /" /tmp/s.out
		say SESSION "$sid" "$r" "$t" "$rc" "$@"
	fi
	if [ "$rc" != 0 ]; then
		bad=$((bad + 1))
		echo "session $sid ($t $*) exit $rc:"
		sed 's/^/  | /' /tmp/s.out
	fi
done
if [ "$bad" = 0 ]; then vt_pass "$VMB_ROLE-sessions"; else vt_fail "$VMB_ROLE-sessions" "$bad of $sid failed"; fi
vt_done
