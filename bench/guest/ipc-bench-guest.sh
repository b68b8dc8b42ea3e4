# shellcheck shell=dash
# Guest side of bench/ipc-vs-tcp.sh; runs as /test/run.sh under busybox
# sh. Brings up virtio-net and venet (each on its own subnet, as
# bench-guest.sh; transports.sh) and vbus_ipc, says which are up, then plays the echo end
# of every session the host measures, in the host's order: VIPCB_SESSIONS
# names one transport per session (ipc | venet | virtio); a transport that
# is not up is skipped here and, from the status lines, by the host. The
# same program (/test/ipc-peer) echoes on all three: over /dev/vbus-ipc0,
# or as a TCP client of the host's listener on the NIC's subnet.
# Around each TCP session it prints the NICs' counters (counters.sh), from
# which the host counts notifications per message. The host's clock times
# everything; the guest's (TCG) clock enters no figure.
#
# Console protocol (one line each, read by the host):
#   VBUS-IPCB T up DETAIL | VBUS-IPCB T unavailable REASON   (T: transport)
#   VBUS-IPCB READY
#   VBUS-IPCB SNAP SID 0|1 LINE      counters.sh before (0) / after (1)
#   VBUS-IPCB ECHO SID T EXIT        ipc-peer's exit status (0: the host
#                                    ended the session)
#   VBUS-IPCB IRQ SID 0|1 LINE       ipc sessions: the data vector's, RES' and CAL's lines of
#                                    /proc/interrupts before (0) / after (1)
#   VBUS-IPCB ECHO-STATS SID LINE    ipc sessions: the echo end's doorbells
#                                    rung (kicks), wakeups and sleeps
# Knobs (/test/config.sh): VIPCB_SESSIONS, VB_VIRTIO_IP, VB_VENET_IP,
# VB_PREFIX, VIPCB_VIRTIO_HOST, VIPCB_VENET_HOST, VIPCB_PORT.

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck source=bench/guest/nic.sh
. /test/nic.sh
# shellcheck source=bench/guest/transports.sh
. /test/transports.sh
# shellcheck disable=SC1091
. /test/config.sh
: "${VB_PREFIX:=24}"

say() { echo "VBUS-IPCB $*"; }
dev=/dev/vbus-ipc0

echo "ipc-bench-guest: $(grep -c ^processor /proc/cpuinfo) CPUs, kernel $(uname -r), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
transports_up "$VB_VIRTIO_IP" "$VB_VENET_IP" "$dev"
say READY

# snap SID 0|1: the NICs' counters, one console line each
snap() { sh /test/counters.sh | sed "s/^/VBUS-IPCB SNAP $1 $2 /"; }

# ipc_irqs SID 0|1: the vbus-ipc data vector's interrupts per CPU
ipc_irqs() { grep -E "vbus-ipc-data|RES:|CAL:" /proc/interrupts | sed "s/^/VBUS-IPCB IRQ $1 $2 /"; }

echo_session() {
	case "$1" in
	ipc) /test/ipc-peer guest "$dev" echo --timeout 120000 ;;
	venet) /test/ipc-peer tcp-connect "$VIPCB_VENET_HOST:$VIPCB_PORT" echo --timeout 120000 ;;
	virtio) /test/ipc-peer tcp-connect "$VIPCB_VIRTIO_HOST:$VIPCB_PORT" echo --timeout 120000 ;;
	esac
}

sid=0 bad=0
for t in $VIPCB_SESSIONS; do
	sid=$((sid + 1))
	[ -f "/tmp/$t.up" ] || continue
	if [ "$t" = ipc ]; then ipc_irqs "$sid" 0; else snap "$sid" 0; fi
	echo_session "$t" >/tmp/echo.out 2>&1
	rc=$?
	if [ "$t" = ipc ]; then ipc_irqs "$sid" 1; else snap "$sid" 1; fi
	[ "$t" = ipc ] && grep -m1 'ipc-peer: echo:' /tmp/echo.out | sed "s/^/VBUS-IPCB ECHO-STATS $sid /"
	say "ECHO $sid $t $rc"
	if [ "$rc" != 0 ]; then
		bad=$((bad + 1))
		sed 's/^/  | /' /tmp/echo.out
	fi
done
if [ "$bad" = 0 ]; then vt_pass echo-sessions; else vt_fail echo-sessions "$bad of $sid failed"; fi
vt_done
