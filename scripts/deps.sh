#!/usr/bin/env bash
# Install what building and testing vbus needs (Debian 12). Idempotent:
# when everything is installed already it only checks, without apt-get.
set -euo pipefail

pkgs=(
	build-essential cmake pkg-config	# userspace build
	libcmocka-dev liburcu-dev		# unit tests; barriers (headers only)
	gcc-multilib clang			# -m32 ABI test, TSan/fuzz builds
	valgrind spin				# valgrind label; model checks
	linux-headers-amd64 sparse kmod		# make modules, modules-check
	qemu-system-x86 busybox-static cpio xz-utils	# tests/qemu
	iproute2 iperf3 ethtool iputils-ping	# guest network tests
	openvswitch-switch			# venet_pair: guests on Open vSwitch (userspace datapath)
	fio e2fsprogs udev			# guest disk tests (vbus-blk; udev: its udevadm names the disks)
	python3 gnuplot-nox			# bench: report and plot
	libdpdk-dev				# ioq-bench --poll: the rte_ring baseline
	dpdk-dev librte-net-memif23 librte-net-vhost23 librte-net-virtio23	# bench/venet-host-vs-dpdk.sh: dpdk-testpmd, memif, vhost, virtio-user
	mandoc					# man pages: mandoc -T lint
	shellcheck				# the shellcheck stage (scripts/shellcheck.sh)
	systemd strace util-linux procps	# ops: systemd-analyze, strace, unshare/setpriv; pgrep (qemu restart suite)
	systemd-container debootstrap		# ops_systemd_sandbox: systemd-nspawn --boot of a Debian tree
	liburing-dev				# vbus-blk: io_uring
	libnbd-dev nbdkit qemu-utils		# vbus-blk nbd=: libnbd; its tests' servers (nbdkit, qemu-nbd, qemu-img)
	qemu-system-common			# qemu-storage-daemon (vbus-blk image=)
	dkms openssl				# ops: dkms add/build (openssl: its signing key)
	libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients	# ops: libvirt (virsh, session libvirtd)
)

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#pkgs[@]} packages installed"
	exit 0
fi

echo "deps: installing ${missing[*]}"
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
