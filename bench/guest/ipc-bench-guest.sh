# shellcheck shell=dash
# Guest side of bench/ipc-vs-tcp.sh; runs as /test/run.sh under busybox
# sh. Brings up virtio-net and venet (each on its own subnet, as
# bench-guest.sh) and vbus_ipc, says which are up, then plays the echo end
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
# Knobs (/test/config.sh): VIPCB_SESSIONS, VB_VIRTIO_IP, VB_VENET_IP,
# VB_PREFIX, VIPCB_VIRTIO_HOST, VIPCB_VENET_HOST, VIPCB_PORT.

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck source=bench/guest/nic.sh
. /test/nic.sh
# shellcheck disable=SC1091
. /test/config.sh
: "${VB_PREFIX:=24}"

say() { echo "VBUS-IPCB $*"; }
dev=/dev/vbus-ipc0

echo "ipc-bench-guest: $(grep -c ^processor /proc/cpuinfo) CPUs, kernel $(uname -r)"
# virtio_pci is no dependency of virtio_net, but binds the PCI device
[ -d /sys/module/virtio_pci ] || vt_kmod_load virtio_pci >/tmp/load.out 2>&1
if vt_kmod_load virtio_net >/tmp/load.out 2>&1 || [ -d /sys/module/virtio_net ]; then
	up virtio "$VB_VIRTIO_IP" virtio_net && touch /tmp/virtio.up
else
	say "virtio unavailable insmod virtio_net: $(tail -n 1 /tmp/load.out)"
fi
if ! vt_kmod_load vbus_pcibridge >/tmp/load.out 2>&1; then
	say "venet unavailable insmod vbus_pcibridge: $(tail -n 1 /tmp/load.out)"
	say "ipc unavailable insmod vbus_pcibridge: $(tail -n 1 /tmp/load.out)"
else
	if vt_kmod_load venet >/tmp/load.out 2>&1; then
		up venet "$VB_VENET_IP" venet && touch /tmp/venet.up
	else
		say "venet unavailable insmod venet: $(tail -n 1 /tmp/load.out)"
	fi
	if ! vt_kmod_load vbus_ipc >/tmp/load.out 2>&1; then
		say "ipc unavailable insmod vbus_ipc: $(tail -n 1 /tmp/load.out)"
	else
		n=0
		while [ "$n" -lt 50 ] && [ ! -c "$dev" ]; do usleep 100000; n=$((n + 1)); done
		if [ -c "$dev" ]; then
			say "ipc up $dev"
			touch /tmp/ipc.up
		else
			say "ipc unavailable no $dev after loading vbus_ipc"
		fi
	fi
fi
say READY

# snap SID 0|1: the NICs' counters, one console line each
snap() { sh /test/counters.sh | sed "s/^/VBUS-IPCB SNAP $1 $2 /"; }

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
	[ "$t" = ipc ] || snap "$sid" 0
	echo_session "$t" >/tmp/echo.out 2>&1
	rc=$?
	[ "$t" = ipc ] || snap "$sid" 1
	say "ECHO $sid $t $rc"
	if [ "$rc" != 0 ]; then
		bad=$((bad + 1))
		sed 's/^/  | /' /tmp/echo.out
	fi
done
if [ "$bad" = 0 ]; then vt_pass echo-sessions; else vt_fail echo-sessions "$bad of $sid failed"; fi
vt_done
