# shellcheck shell=dash
# Guest side of bench/venet-vs-virtio.sh --compare-queues: makes K queue
# pairs active on every bench NIC (ethtool -L IF combined K; both drivers
# apply it before they return: virtio-net's control queue command, venet's
# SETACTIVE) and reads the count back (ethtool -l). tcprr -s -X runs it
# with K when the host asks (tcprr -g -A K).
# Output, one line per NIC (parsed by the bench):
#   ACTIVE <nic> <ifname> <K>        ethtool -l reads K back as current
#   FAILED <nic> <ifname> <reason>
k=$1

# current IF: ethtool -l's current combined count
current() {
	ethtool -l "$1" 2>/dev/null |
		awk '/^Current/ { c = 1 } c && /^Combined:/ { print $2; exit }'
}

for nic in virtio venet; do
	[ -f "/tmp/$nic.if" ] || continue
	IF=$(cat "/tmp/$nic.if")
	# ethtool -L with the current count changes nothing and may fail so
	if [ "$(current "$IF")" != "$k" ] &&
		! ethtool -L "$IF" combined "$k" >/tmp/channels.out 2>&1; then
		echo "FAILED $nic $IF ethtool -L combined $k: $(tail -n 1 /tmp/channels.out)"
		continue
	fi
	got=$(current "$IF")
	if [ "$got" = "$k" ]; then
		echo "ACTIVE $nic $IF $k"
	else
		echo "FAILED $nic $IF ethtool -l reads back combined ${got:-nothing}, not $k"
	fi
done
exit 0
