# shellcheck shell=dash
# Guest-side NIC helpers of the benches (bench/guest/bench-guest.sh,
# bench/guest/ipc-bench-guest.sh), sourced after /test/lib.sh; the
# sourcing script defines say() (its console protocol) and VB_PREFIX.
# up NIC IP DRIVER... finds the netdev bound to one of the drivers, gives
# it the address, waits for carrier and leaves its name in /tmp/NIC.if
# (bench/guest/counters.sh reads it).

# nic_if DRIVER...: the netdev bound to one of the drivers (waits up to 10 s)
nic_if() {
	local i n=0 d drv
	while [ "$n" -lt 50 ]; do
		for i in /sys/class/net/*; do
			d=$(readlink "$i/device/driver" 2>/dev/null) || continue
			for drv in "$@"; do
				[ "${d##*/}" = "$drv" ] && { echo "${i##*/}"; return 0; }
			done
		done
		n=$((n + 1))
		usleep 200000
	done
	return 1
}

wait_carrier() {
	local n=0
	while [ "$n" -lt 50 ]; do
		[ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ] && return 0
		n=$((n + 1))
		usleep 200000
	done
	return 1
}

# up NIC IP DRIVER...: load, find, address, carrier
up() {
	local nic=$1 ip=$2 IF
	shift 2
	if ! IF=$(nic_if "$@"); then
		say "$nic unavailable no netdev bound to $* after loading the driver"
		return 1
	fi
	ip addr add "$ip/$VB_PREFIX" dev "$IF"
	ip link set dev "$IF" up
	if ! wait_carrier "$IF"; then
		say "$nic unavailable $IF has no carrier"
		return 1
	fi
	say "$nic up $IF"
	vt_pass "$nic-up"
	echo "$IF" >"/tmp/$nic.if"
}
