# shellcheck shell=dash
# Guest side of bench/venet-vs-virtio.sh: one snapshot of the counters the
# host turns into "notifications per GB"; tcprr -s -x runs it when the host
# asks (tcprr -g). The host diffs two snapshots around each iperf3 run.
# Output, one item a line (parsed by bench/report.py):
#   NIC <nic> <ifname> <irq-name-prefix>
#   STAT <nic> <name> <value>        ethtool -S of the NIC
#   IRQ <raw /proc/interrupts line>  the lines of the NICs' vectors
#   BRIDGE <name> <value>            vbus_pcibridge's vbus_stats (venet's bus)
# virtio-net: its queues' vectors are named "<virtioN>-input.0" etc.;
# venet: the bridge's "vbus-eventq" (host->guest signals) and "vbus-hc".
for nic in virtio venet; do
	[ -f "/tmp/$nic.if" ] || continue
	IF=$(cat "/tmp/$nic.if")
	if [ "$nic" = virtio ]; then
		d=$(readlink "/sys/class/net/$IF/device")
		irq="${d##*/}-"
	else
		irq="vbus-"
	fi
	echo "NIC $nic $IF $irq"
	ethtool -S "$IF" 2>/dev/null | while read -r name value; do
		[ -n "$value" ] && echo "STAT $nic ${name%:} $value"
	done
	grep -F "$irq" /proc/interrupts | sed 's/^/IRQ /'
done
for f in /sys/bus/pci/drivers/vbus-pcibridge/*/vbus_stats; do
	[ -f "$f" ] && sed 's/^/BRIDGE /' "$f"
done
exit 0
