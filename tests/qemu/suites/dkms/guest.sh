# shellcheck shell=dash
# Guest side of the dkms suite (host.sh next to it); runs as /test/run.sh under
# busybox sh. The staged modules are the ones DKMS built, whatever their
# names: every one must carry this kernel's vermagic and load (after its
# dependencies, in the staged order), none of them a test module; then every
# device the host announced bound to a driver (a vbus-test ring, a venet
# ping, a vbus-blk disk's content), and every module unloads.
#
# Knobs from /test/config.sh (written by the host script):
#   VDK_NDEVS      devices the host announces
#   VDK_DISK_SHA   sha256 of the vbus-blk disk's (1 MiB) backing file
#   VDK_HOST_IP VDK_GUEST_IP VDK_PREFIX   the venet link (host end: a tap)
#   VDK_PARAMS_<module>   parameters for that module's insmod

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VDK_NDEVS:=0}"

BUS=/sys/bus/vbus-proxy/devices
MODS=$(cat "$VT_KMOD_DIR/order")
log() { echo "vbus-dkms-tests: $*"; }

# busybox modinfo wants a modules.dep for the running kernel
mkdir -p "/lib/modules/$(uname -r)"
touch "/lib/modules/$(uname -r)/modules.dep"

vermagic_ok() {
	local v
	v=$(modinfo -F vermagic "$VT_KMOD_DIR/$1.ko") || return 1
	echo "$1: vermagic '$v', kernel $(uname -r)"
	case "$v" in "$(uname -r) "*) return 0 ;; esac
	return 1
}

load() {
	local p
	[ -d "/sys/module/$1" ] && return 0
	eval "p=\${VDK_PARAMS_$1:-}"
	# shellcheck disable=SC2086 # the parameters are words
	insmod "$VT_KMOD_DIR/$1.ko" $p
}

# every announced device is there and bound (up to 20 s)
# disk_ok NAME: /dev/NAME holds what the host put in the backing file
disk_ok() {
	local got
	got=$(dd if="/dev/$1" bs=1M count=1 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
	[ "$got" = "${VDK_DISK_SHA:-}" ] && return 0
	echo "/dev/$1 reads sha256 $got, the host's file has ${VDK_DISK_SHA:-?}"
	return 1
}

all_bound() {
	local n=0 d have unbound
	while [ "$n" -lt 100 ]; do
		have=0 unbound=
		for d in "$BUS"/*; do
			[ -e "$d" ] || continue
			have=$((have + 1))
			[ -e "$d/driver" ] || unbound="$unbound ${d##*/}"
		done
		[ "$have" -ge "$VDK_NDEVS" ] && [ -z "$unbound" ] && return 0
		n=$((n + 1))
		usleep 200000
	done
	echo "devices: $have of $VDK_NDEVS, unbound:$unbound"
	return 1
}

ring_ok() {
	local out
	echo 1000 >"$1/run_ring" || return 1
	out=$(cat "$1/result")
	echo "$out"
	case "$out" in "ok 1000 msgs"*) return 0 ;; esac
	return 1
}

ping_host() {
	local i=0
	ip addr add "$VDK_GUEST_IP/$VDK_PREFIX" dev "$1" || return 1
	ip link set dev "$1" up || return 1
	while [ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" != 1 ]; do
		i=$((i + 1))
		[ "$i" -lt 200 ] || { echo "no carrier on $1"; return 1; }
		usleep 100000
	done
	ping -c 3 -i 0.2 -W 3 "$VDK_HOST_IP"
}

unload_all() {
	local m rev=
	for m in $MODS; do rev="$m $rev"; done
	for m in $rev; do
		[ -d "/sys/module/$m" ] || continue
		rmmod "$m" || { echo "rmmod $m failed"; return 1; }
	done
	for m in $MODS; do
		[ ! -d "/sys/module/$m" ] || { echo "$m still loaded"; return 1; }
	done
}

log "modules from DKMS: $(echo "$MODS" | tr '\n' ' ')"
for m in $MODS; do
	vt_check "$m/vermagic" vermagic_ok "$m"
	vt_check "$m/load" load "$m"
done

# the package ships what users run: no test module
no_test_module() { ! echo "$MODS" | grep -qx vbus_selftest; }
vt_check no-test-module no_test_module

vt_check devices-bound all_bound
for d in "$BUS"/*; do
	[ -e "$d/run_ring" ] && vt_check "dev${d##*/}-ring" ring_ok "$d"
	for n in "$d"/net/*; do
		[ -e "$n" ] && vt_check "dev${d##*/}-ping-host" ping_host "${n##*/}"
	done
	for b in "$d"/block/*; do
		[ -e "$b" ] && vt_check "dev${d##*/}-disk-data" disk_ok "${b##*/}"
	done
done

vt_check unload-all unload_all
vt_done
