# shellcheck shell=dash
# Guest side of the vbus-ipc benches (ipc-bench-guest.sh, vm-bench-guest.sh),
# sourced after /test/lib.sh and /test/nic.sh; the sourcing script defines
# say() (its console protocol) and VB_PREFIX.
# transports_up VIRTIO_IP VENET_IP DEV brings up virtio-net and venet
# (each on its own subnet) and vbus_ipc (DEV appears), says which are up
# ("T up DETAIL" | "T unavailable REASON") and leaves /tmp/T.up for each.
transports_up() {
	# virtio_pci is no dependency of virtio_net, but binds the PCI device
	[ -d /sys/module/virtio_pci ] || vt_kmod_load virtio_pci >/tmp/load.out 2>&1
	if vt_kmod_load virtio_net >/tmp/load.out 2>&1 || [ -d /sys/module/virtio_net ]; then
		up virtio "$1" virtio_net && touch /tmp/virtio.up
	else
		say "virtio unavailable insmod virtio_net: $(tail -n 1 /tmp/load.out)"
	fi
	if ! vt_kmod_load vbus_pcibridge >/tmp/load.out 2>&1; then
		say "venet unavailable insmod vbus_pcibridge: $(tail -n 1 /tmp/load.out)"
		say "ipc unavailable insmod vbus_pcibridge: $(tail -n 1 /tmp/load.out)"
		return 0
	fi
	if vt_kmod_load venet >/tmp/load.out 2>&1; then
		up venet "$2" venet && touch /tmp/venet.up
	else
		say "venet unavailable insmod venet: $(tail -n 1 /tmp/load.out)"
	fi
	if ! vt_kmod_load vbus_ipc >/tmp/load.out 2>&1; then
		say "ipc unavailable insmod vbus_ipc: $(tail -n 1 /tmp/load.out)"
		return 0
	fi
	n=0
	while [ "$n" -lt 50 ] && [ ! -c "$3" ]; do usleep 100000; n=$((n + 1)); done
	if [ -c "$3" ]; then
		say "ipc up $3"
		touch /tmp/ipc.up
	else
		say "ipc unavailable no $3 after loading vbus_ipc"
	fi
}
