# shellcheck shell=dash
# The venet guests' network helpers, staged as /test/net.sh (lab_stage
# --file) and sourced by the guest scripts of the venet and venet_pair
# suites after /test/lib.sh. Runs under busybox sh.

# venet_if: the name of the netdev bound to venet (waits up to 10 s:
# the device appears when the bridge has processed DEVADD).
venet_if() {
	local i n=0 d
	while [ "$n" -lt 50 ]; do
		for i in /sys/class/net/*; do
			d=$(readlink "$i/device/driver" 2>/dev/null) || continue
			case "${d##*/}" in
			venet) echo "${i##*/}"; return 0 ;;
			esac
		done
		n=$((n + 1))
		usleep 200000
	done
	return 1
}

# wait_carrier IF 0|1: wait up to 20 s for the carrier to read as wanted.
wait_carrier() {
	local n=0 c
	while [ "$n" -lt 100 ]; do
		c=$(cat "/sys/class/net/$1/carrier" 2>/dev/null || echo 0)
		[ "$c" = "$2" ] && return 0
		n=$((n + 1))
		usleep 200000
	done
	echo "carrier of $1 is ${c:-?}, wanted $2"
	return 1
}

# ip_frag_creates: IP fragments this guest created so far (/proc/net/snmp)
ip_frag_creates() {
	awk '$1 == "Ip:" && !h { for (i = 1; i <= NF; i++) n[i] = $i; h = 1; next }
	     $1 == "Ip:" { for (i = 1; i <= NF; i++) if (n[i] == "FragCreates") print $i }' \
		/proc/net/snmp
}

# mk_upload MB: /tmp/up, about MB MiB of random text. Text, because busybox
# wget --post-file sends the file as a C string (it stops at the first NUL).
mk_upload() {
	dd if=/dev/urandom bs=3k count=$(($1 * 256)) 2>/dev/null | base64 >/tmp/up
}
