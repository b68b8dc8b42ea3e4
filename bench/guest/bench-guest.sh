# shellcheck shell=dash
# Guest side of bench/venet-vs-virtio.sh; runs as /test/run.sh under
# busybox sh. Brings up the virtio-net NIC and (when the host offers one)
# the venet NIC, each on its own subnet, starts the servers the host's
# measurements talk to (iperf3 -s, tcprr -s), says so on the console and
# waits for the host to finish (tcprr -q from the host ends tcprr -s).
# tcprr -s also answers the host's counter snapshots (counters.sh) and
# sets the NICs' active queue pairs (channels.sh, --compare-queues).
# The host drives every measurement, so the guest's (TCG) clock and CPU
# never enter a figure.
#
# Console protocol (read by the host; one line each):
#   VBUS-BENCH NIC up IFNAME            NIC = virtio | venet
#   VBUS-BENCH NIC unavailable REASON
#   VBUS-BENCH READY
# Knobs (/test/config.sh): VB_NICS ("virtio venet"), VB_<NIC>_IP, VB_PREFIX,
# VB_RR_PORT, VB_VENET_BRIDGE (vbus_pcibridge), VB_VENET_PARAMS.

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck source=bench/guest/nic.sh
. /test/nic.sh
# shellcheck disable=SC1091
. /test/config.sh
: "${VB_NICS:=virtio}"
: "${VB_PREFIX:=24}"
: "${VB_RR_PORT:=7777}"
: "${VB_VENET_BRIDGE:=vbus_pcibridge}"
: "${VB_VENET_PARAMS:=}"

say() { echo "VBUS-BENCH $*"; }

echo "bench-guest: $(grep -c ^processor /proc/cpuinfo) CPUs, kernel $(uname -r)"
for nic in $VB_NICS; do
	case "$nic" in
	virtio)
		# virtio_pci is no dependency of virtio_net, but binds the PCI device
		[ -d /sys/module/virtio_pci ] || vt_kmod_load virtio_pci >/tmp/load.out 2>&1 ||
			say "virtio unavailable insmod virtio_pci: $(tail -n 1 /tmp/load.out)"
		if vt_kmod_load virtio_net >/tmp/load.out 2>&1 || [ -d /sys/module/virtio_net ]; then
			up virtio "$VB_VIRTIO_IP" virtio_net
		else
			say "virtio unavailable insmod virtio_net: $(tail -n 1 /tmp/load.out)"
		fi
		;;
	venet)
		# shellcheck disable=SC2086
		if ! vt_kmod_load "$VB_VENET_BRIDGE" >/tmp/load.out 2>&1; then
			say "venet unavailable insmod $VB_VENET_BRIDGE: $(tail -n 1 /tmp/load.out)"
		elif ! vt_kmod_load venet $VB_VENET_PARAMS >/tmp/load.out 2>&1; then
			say "venet unavailable insmod venet: $(tail -n 1 /tmp/load.out)"
		else
			up venet "$VB_VENET_IP" venet
		fi
		;;
	esac
done

# one server per iperf3 process the host runs at once (--queues N: N)
i=0
while [ "$i" -lt "${VB_IPERF_SERVERS:-1}" ]; do
	iperf3 -s -D -p $((5201 + i)) --logfile "/tmp/iperf3-$i.log" ||
		say "virtio unavailable iperf3 -s -p $((5201 + i)) failed"
	i=$((i + 1))
done
# tcprr -g from the host reads the counters (bench/guest/counters.sh);
# tcprr -g -A K sets K active queue pairs (bench/guest/channels.sh)
/test/tcprr -s "$VB_RR_PORT" -x "sh /test/counters.sh" -X "sh /test/channels.sh" &
rr_pid=$!
usleep 200000
say READY
# The host ends tcprr -s when it is done (its timeout kills QEMU otherwise).
wait "$rr_pid"
vt_check tcprr-server-exit test "$?" = 0

for nic in $VB_NICS; do
	[ -f "/tmp/$nic.if" ] || continue
	IF=$(cat "/tmp/$nic.if")
	echo "bench-guest: $nic ($IF) counters:"
	for c in rx_packets rx_bytes tx_packets tx_bytes rx_dropped tx_dropped; do
		echo "  $c: $(cat "/sys/class/net/$IF/statistics/$c")"
	done
	command -v ethtool >/dev/null && ethtool -S "$IF" 2>/dev/null | sed 's/^/  /'
done
vt_done
