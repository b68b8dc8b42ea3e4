# shellcheck shell=dash
# Guest side of the venet suite (host.sh next to it); runs as
# /test/run.sh under busybox sh. Loads the bus stack and venet.ko and
# checks, once per sg_enabled mode: ping both ways, TCP transfers both ways
# with checksums, MTU 1500/9000 (FLUSHRX), link down/up, the negotiated
# offloads (ethtool -k), that TSO is really used (tx_gso_packets) and, with
# sg_enabled=1 (which also negotiates RXSG), that host->guest TCP arrives
# as GSO frames (rx_gso_packets); with VT_SOAK_MB, that many MiB each way
# (one download, 64 MiB uploads), md5-checked at both ends (the soak);
# remove while traffic flows; at 2 queue pairs (the host's queues=2, 2
# vCPUs): flows spread over both, interrupts on both vCPUs, ethtool -L
# combined 1 and back under traffic, md5 both ways (mq), and one pair
# from a host with queues=1 (mq_old_host);
# then load/unload cycles with traffic that must not grow any slab cache.
#
# The host side (host.sh) runs vbus-hostd with a venet device on a tap
# inside a network namespace, gives the tap $VT_HOST_IP, and serves
# (busybox httpd, in that namespace) on $VT_HTTP_PORT:
#   /data             $VT_DATA_BYTES bytes whose md5 is $VT_DATA_MD5
#   /cgi-bin/md5      POST body -> its md5 (hex)
#   /soak             $VT_SOAK_MB MiB whose md5 is $VT_SOAK_MD5
# and answers (vt_host): ping (it pings us 3 times), mtu N (the tap's MTU).
#
# Knobs come from /test/config.sh (written by the host script):
#   VT_HOST_IP VT_GUEST_IP VT_PREFIX VT_HTTP_PORT VT_DATA_MD5 VT_DATA_BYTES
#   VT_SG_MODES   e.g. "1 0"
#   VT_CYCLES     load/unload cycles for the slab check (default 20)
#   VT_UP_MB      size of the guest->host upload (default 8)
#   VT_SOAK_MB    MiB of the soak, each way (default 0: no soak)
#   VT_BRIDGE     bridge module to load first (default vbus_pcibridge)

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck source=tests/qemu/suites/venet/net.sh
. /test/net.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VT_HOST_IP:=10.77.0.1}"
: "${VT_GUEST_IP:=10.77.0.2}"
: "${VT_PREFIX:=24}"
: "${VT_HTTP_PORT:=8080}"
: "${VT_DATA_MD5:=}"
: "${VT_DATA_BYTES:=0}"
: "${VT_SG_MODES:=1 0}"
: "${VT_CYCLES:=20}"
: "${VT_UP_MB:=8}"
: "${VT_SOAK_MB:=0}"
: "${VT_SOAK_MD5:=}"
: "${VT_BRIDGE:=vbus_pcibridge}"

URL="http://$VT_HOST_IP:$VT_HTTP_PORT"
HAVE_ETHTOOL=0
command -v ethtool >/dev/null 2>&1 && HAVE_ETHTOOL=1

log() { echo "venet-tests: $*"; }

# http GET/POST with a bound on the time (a wedged link must not hang us).
http_get() { timeout 60 wget -q -O - "$URL$1"; }
http_post() { timeout 120 wget -q -O - --post-file "$2" "$URL$1"; }

# ethstats IF NAME...: those counters, space-separated, from one ethtool -S
# (counters compared with each other must come from the same snapshot).
ethstats() {
	ethtool -S "$1" | awk -v ks="$*" '
		BEGIN { n = split(ks, k, " ") }
		{ v[$1] = $2 }
		END { for (i = 2; i <= n; i++) { if (!((k[i] ":") in v)) exit 1; printf "%s%s", (i > 2 ? " " : ""), v[k[i] ":"] } print "" }'
}

# ethfeature IF NAME: "on" or "off" from ethtool -k.
ethfeature() {
	ethtool -k "$1" | awk -v k="$2:" '$1 == k { print $2; f = 1 } END { exit !f }'
}

check_ping_out() { ping -c 3 -i 0.2 -W 3 "$VT_HOST_IP"; }

# tx_all_completed: tx_completed == tx_packets in one ethtool -S snapshot
tx_all_completed() {
	local s
	s=$(ethstats "$IF" tx_completed tx_packets) || return 1
	echo "tx_completed ${s% *} of tx_packets ${s#* }"
	[ "${s% *}" = "${s#* }" ]
}

# tx_complete_irq=0: frames sent and nothing received after them (to a
# neighbour that does not exist: no reply, no ARP) are still reaped: the
# tx completion signal is masked while the queue runs, so only the
# end-of-burst timer (venet_tx.c, tx_timer) frees them.
check_tx_reaped_idle() {
	local rc=0 ghost="${VT_HOST_IP%.*}.213"
	arp -i "$IF" -s "$ghost" 02:00:00:00:02:13 || return 1
	ping -c 3 -i 0.2 -W 1 "$ghost" >/dev/null 2>&1
	vt_wait 20 tx_all_completed || rc=1
	arp -i "$IF" -d "$ghost"
	return $rc
}

# tx_complete_irq=0: a tx completion interrupts only when the driver asked
# for it (tx_irq_waits: the queue stopped, or frames were still in flight
# after a reap, e.g. when the end-of-burst timer beat the host). How often
# the rx poll that brings each reply frees the request first depends on
# the host's speed against a jiffy: printed, not checked. (With the
# default, 1, each request's completion interrupts: ping_tx_irq.)
ping_20() {
	local a b
	a=$(ethstats "$IF" tx_signals_recv tx_irq_waits) || return 1
	ping -c 20 -i 0.05 -W 2 "$VT_HOST_IP" >/dev/null || return 1
	b=$(ethstats "$IF" tx_signals_recv tx_irq_waits) || return 1
	sig=$((${b% *} - ${a% *}))
	waits=$((${b#* } - ${a#* }))
	# on the console too: the figure, whether the check passes or not
	echo "venet-tests: tx_complete_irq=$(cat \
		/sys/module/venet/parameters/tx_complete_irq):" \
		"tx_signals_recv +$sig, tx_irq_waits +$waits over 20 pings" |
		tee /dev/console
}

check_ping_no_tx_irq() {
	local sig waits
	ping_20 || return 1
	[ "$sig" -le $((waits + 1)) ]
}

check_ping_tx_irq() {
	local sig waits
	ping_20 || return 1
	[ "$waits" -eq 0 ] && [ "$sig" -ge 2 ]
}

check_ping_in() { vt_host ping; }

check_tcp_in() {
	local got
	[ -n "$VT_DATA_MD5" ] || { echo "no VT_DATA_MD5"; return 1; }
	got=$(http_get /data | md5sum | cut -d' ' -f1)
	echo "got $got want $VT_DATA_MD5"
	test "$got" = "$VT_DATA_MD5"
}

check_tcp_out() {
	local want got
	mk_upload "$VT_UP_MB"
	want=$(md5sum /tmp/up | cut -d' ' -f1)
	got=$(http_post /cgi-bin/md5 /tmp/up)
	echo "host got $got, sent $want"
	test "$got" = "$want"
}

# ---- the soak: VT_SOAK_MB each way, md5 at both ends ----
uptime_s() { cut -d' ' -f1 /proc/uptime; }
mbps() { awk -v mb="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f s, %.1f MB/s", b - a, mb * 1.048576 / (b - a) }'; }

# each writes its figure to /tmp/soak.fig (vt_check shows output only on failure)
soak_in() {
	local t0 got
	t0=$(uptime_s)
	got=$(timeout $((VT_SOAK_MB + 600)) wget -q -O - "$URL/soak" | md5sum | cut -d' ' -f1)
	echo "SOAK host-to-guest $VT_SOAK_MB MiB: $(mbps "$VT_SOAK_MB" "$t0" "$(uptime_s)"); md5 $got (host $VT_SOAK_MD5)" >/tmp/soak.fig
	[ "$got" = "$VT_SOAK_MD5" ] || { echo "received md5 $got, the host sent $VT_SOAK_MD5"; return 1; }
}

# Guest -> host in uploads of ~64 MiB of random text (busybox wget posts
# a file it holds in memory; a 2 GiB file would not fit in guest RAM),
# until VT_SOAK_MB have gone: each one's md5 as the host received it must
# be the file's.
soak_out() {
	local t0 chunk=64 n=0 sent=0 want got bytes
	[ "$VT_SOAK_MB" -lt "$chunk" ] && chunk=$VT_SOAK_MB
	mk_upload "$chunk"
	want=$(md5sum /tmp/up | cut -d' ' -f1)
	bytes=$(wc -c </tmp/up)
	t0=$(uptime_s)
	while [ "$sent" -lt $((VT_SOAK_MB * 1048576)) ]; do
		got=$(timeout 600 wget -q -O - --post-file /tmp/up "$URL/cgi-bin/md5")
		n=$((n + 1))
		[ "$got" = "$want" ] || { echo "upload $n: host md5 $got, sent $want"; return 1; }
		sent=$((sent + bytes))
	done
	echo "SOAK guest-to-host $((sent / 1048576)) MiB in $n uploads: $(mbps $((sent / 1048576)) "$t0" "$(uptime_s)"); md5 $want each (host the same)" >/tmp/soak.fig
}

soak() {
	local p=$1
	vt_slab_snapshot /tmp/slab.soak0
	vt_check "$p/soak-host-to-guest-${VT_SOAK_MB}M" soak_in
	log "$(cat /tmp/soak.fig)"
	vt_check "$p/soak-guest-to-host-${VT_SOAK_MB}M" soak_out
	log "$(cat /tmp/soak.fig)"
	vt_slab_snapshot /tmp/slab.soak1
	log "SOAK slab growth over the soak (interface up): $(vt_slab_growth /tmp/slab.soak0 /tmp/slab.soak1)"
}

set_mtu() {
	vt_host mtu "$2" || { echo "host mtu $2 failed"; return 1; }
	ip link set dev "$1" mtu "$2"
}

# jumbo IF: 8900-byte pings must not be fragmented by us, and TCP both
# ways still checks out.
check_jumbo() {
	local f0 f1
	f0=$(ip_frag_creates)
	ping -c 3 -i 0.2 -W 3 -s 8900 "$VT_HOST_IP" || return 1
	f1=$(ip_frag_creates)
	echo "FragCreates $f0 -> $f1"
	test "$f0" = "$f1"
}

# mode SG: one full round with sg_enabled=SG.
mode() {
	local sg=$1 p="sg$1" IF v tso b0

	vt_check "$p/load" vt_kmod_load venet "sg_enabled=$sg" || return
	if ! IF=$(venet_if); then
		vt_fail "$p/netdev" "no venet netdev"
		rmmod venet
		return
	fi
	vt_pass "$p/netdev"
	log "$p: interface $IF"

	if [ "$HAVE_ETHTOOL" = 1 ]; then
		vt_check "$p/ethtool-i" sh -c "ethtool -i $IF | grep -q '^driver: venet'"
		vt_check "$p/ethtool-g" sh -c "ethtool -g $IF | grep -q '^RX:.*[0-9]'"
		v=$(ethfeature "$IF" tcp-segmentation-offload)
		if [ "$sg" = 1 ]; then
			vt_check "$p/sg-on" test "$(ethfeature "$IF" scatter-gather)" = on
			vt_check "$p/tso-on" test "$v" = on
		else
			vt_check "$p/sg-off" test "$(ethfeature "$IF" scatter-gather)" = off
			vt_check "$p/tso-off" test "$v" = off
		fi
	fi

	vt_check "$p/carrier-off-before-up" wait_carrier "$IF" 0
	ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF"
	ip link set dev "$IF" up
	vt_check "$p/carrier-on" wait_carrier "$IF" 1

	vt_check "$p/ping-guest-to-host" check_ping_out
	vt_check "$p/ping-host-to-guest" check_ping_in
	vt_check "$p/tcp-host-to-guest" check_tcp_in
	vt_check "$p/tcp-guest-to-host" check_tcp_out

	if [ "$HAVE_ETHTOOL" = 1 ]; then
		tso=$(ethstats "$IF" tx_gso_packets)
		log "$p: tx_gso_packets=$tso"
		if [ "$sg" = 1 ]; then
			vt_check "$p/tso-used" test "${tso:-0}" -gt 0
		else
			vt_check "$p/no-gso-without-sg" test "${tso:-1}" -eq 0
		fi
		# rx offload (RXSG): the md5-checked host->guest transfer above
		# must have arrived as GSO frames, with nothing refused
		rxgso=$(ethstats "$IF" rx_gso_packets)
		log "$p: rx_gso_packets=$rxgso rx_csum_partial=$(ethstats "$IF" rx_csum_partial)"
		if [ "$sg" = 1 ]; then
			vt_check "$p/rx-gso-used" test "${rxgso:-0}" -gt 0
		else
			vt_check "$p/no-rx-gso-without-sg" test "${rxgso:-1}" -eq 0
		fi
		vt_check "$p/rx-no-bad-offload" test "$(ethstats "$IF" rx_bad_offload)" -eq 0
		vt_check "$p/rx-no-length-errors" test "$(ethstats "$IF" rx_length_errors)" -eq 0
	fi

	# MTU 9000 and back: FLUSHRX replaces every posted rx buffer
	vt_check "$p/mtu-9000" set_mtu "$IF" 9000
	vt_check "$p/mtu-9000-jumbo-ping" check_jumbo "$IF"
	vt_check "$p/mtu-9000-tcp-host-to-guest" check_tcp_in
	vt_check "$p/mtu-9000-tcp-guest-to-host" check_tcp_out
	[ "$HAVE_ETHTOOL" = 1 ] &&
		vt_check "$p/mtu-flushrx-seen" test "$(ethstats "$IF" rx_flushed)" -gt 0
	vt_check "$p/mtu-1500" set_mtu "$IF" 1500
	vt_check "$p/mtu-1500-ping" check_ping_out
	vt_check "$p/mtu-1500-tcp-host-to-guest" check_tcp_in

	# link down/up
	ip link set dev "$IF" down
	vt_check "$p/linkdown-carrier-off" wait_carrier "$IF" 0
	vt_check "$p/linkdown-no-ping" sh -c "! ping -c 2 -i 0.2 -W 1 $VT_HOST_IP"
	ip link set dev "$IF" up
	vt_check "$p/linkup-carrier-on" wait_carrier "$IF" 1
	vt_check "$p/linkup-ping" check_ping_out
	vt_check "$p/linkup-tcp-guest-to-host" check_tcp_out
	if [ "$HAVE_ETHTOOL" = 1 ]; then
		# tx completions masked while the queue runs (tx_complete_irq=0)
		echo 0 >/sys/module/venet/parameters/tx_complete_irq
		vt_check "$p/tx-reaped-when-idle" check_tx_reaped_idle
		vt_check "$p/ping-no-tx-irq" check_ping_no_tx_irq
		echo 1 >/sys/module/venet/parameters/tx_complete_irq
		vt_check "$p/ping-tx-irq-default" check_ping_tx_irq
	fi
	[ "$VT_SOAK_MB" -gt 0 ] && [ "$sg" = "${VT_SG_MODES%% *}" ] && soak "$p"

	[ "$HAVE_ETHTOOL" = 1 ] && ethtool -S "$IF" | sed 's/^/  /'

	# remove while traffic flows both ways
	b0=$(vt_net_bytes "$IF")
	(while http_get /data >/dev/null 2>&1; do :; done) &
	rx_pid=$!
	(while http_post /cgi-bin/md5 /tmp/up >/dev/null 2>&1; do :; done) &
	tx_pid=$!
	vt_check "$p/traffic-both-ways" vt_wait 30 vt_flowing "$IF" "$b0"
	vt_check "$p/unload-under-traffic" rmmod venet
	kill "$rx_pid" "$tx_pid" 2>/dev/null
	wait "$rx_pid" "$tx_pid" 2>/dev/null
	vt_check "$p/netdev-gone" test ! -e "/sys/class/net/$IF"
}

# small rings: the tx queue stops and wakes all the time, rx runs dry
check_small_rings() {
	local p=small-rings IF
	vt_check "$p/bad-param-rejected" sh -c "! insmod $VT_KMOD_DIR/venet.ko rx_ringlen=3"
	vt_check "$p/load" vt_kmod_load venet tx_ringlen=4 rx_ringlen=8 || return
	if ! IF=$(venet_if); then
		vt_fail "$p/netdev" "no venet netdev"
		rmmod venet
		return
	fi
	ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF"
	ip link set dev "$IF" up
	vt_check "$p/carrier-on" wait_carrier "$IF" 1
	vt_check "$p/ping" check_ping_out
	vt_check "$p/tcp-host-to-guest" check_tcp_in
	vt_check "$p/tcp-guest-to-host" check_tcp_out
	[ "$HAVE_ETHTOOL" = 1 ] && ethtool -S "$IF" | grep -E 'tx_busy|tx_timeouts|rx_alloc' | sed 's/^/  /'
	vt_check "$p/unload" rmmod venet
}

# one quick load/traffic/unload round (for the slab cycles)
cycle() {
	local IF
	vt_kmod_load venet || return 1
	IF=$(venet_if) || { rmmod venet; return 1; }
	ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF"
	ip link set dev "$IF" up
	wait_carrier "$IF" 1 >/dev/null || { rmmod venet; return 1; }
	ping -c 2 -i 0.2 -W 3 "$VT_HOST_IP" >/dev/null || { rmmod venet; return 1; }
	http_get /data >/dev/null || { rmmod venet; return 1; }
	http_post /cgi-bin/md5 /tmp/up >/dev/null || { rmmod venet; return 1; }
	rmmod venet
}

echo "venet-tests: $(grep -c ^processor /proc/cpuinfo) CPUs, kernel $(uname -r), ethtool=$HAVE_ETHTOOL"
vt_check load-bridge vt_kmod_load "$VT_BRIDGE"

check_sg1() { mode 1; }
check_sg0() { mode 0; }

# --- slab growth over load/unload cycles with traffic --------------------
# TCP recvmsg hands a freed rx skb back to the CPU that received it
# (skb_attempt_defer_free); that CPU frees it at its next NET_RX softirq.
# With the interface gone there may be none for a long time, so up to
# skb_defer_max skbs per CPU (each with a GRO frag_list) sit there: a
# stack cache, not a leak, but it shows as slab growth. Turn deferral off
# for this part and flush what is queued with loopback traffic on each CPU
# before every snapshot.
flush_defer() {
	local c=0 n
	n=$(grep -c ^processor /proc/cpuinfo)
	while [ "$c" -lt "$n" ]; do
		taskset -c "$c" ping -c 1 -W 1 127.0.0.1 >/dev/null 2>&1
		c=$((c + 1))
	done
}
check_cycles() {
	local i bad
	sysctl -w net.core.skb_defer_max=0 >/dev/null 2>&1
	mk_upload 1
	if cycle; then
		flush_defer
		vt_slab_snapshot /tmp/slab0
		i=0 bad=0
		while [ "$i" -lt "$VT_CYCLES" ]; do
			cycle || { bad=1; break; }
			i=$((i + 1))
		done
		if [ "$bad" = 0 ]; then
			vt_pass "cycles-$VT_CYCLES"
		else
			vt_fail "cycles-$VT_CYCLES" "cycle $i failed"
		fi
		flush_defer
		vt_slab_snapshot /tmp/slab1
		vt_slab_check "cycles-no-slab-growth" /tmp/slab0 /tmp/slab1 16 flush_defer
	else
		vt_fail cycles-warmup "first load/traffic/unload round failed"
	fi
}

# netdev_gone IF: IF no longer exists
netdev_gone() { [ ! -e "/sys/class/net/$1" ]; }

# hot drop: the host drops the device under an up link and adds it back;
# the normal removal is an error on neither side (no "host refused" in
# the guest, no hypercall error counted by the host)
check_hotdrop() {
	local IF e0 e1 n0
	vt_check hotdrop/load vt_kmod_load venet || return
	IF=$(venet_if) || { vt_fail hotdrop/netdev "no venet netdev"; rmmod venet; return; }
	ip link set dev "$IF" up
	vt_check hotdrop/carrier-on wait_carrier "$IF" 1
	e0=$(vt_host hc_errors) || { vt_fail hotdrop/hc-errors "$e0"; rmmod venet; return; }
	n0=$(dmesg | grep -c 'host refused')
	vt_check hotdrop/drop vt_host drop
	vt_check hotdrop/netdev-gone vt_wait 20 netdev_gone "$IF"
	vt_check hotdrop/no-refusal-logged test "$(dmesg | grep -c 'host refused')" = "$n0"
	e1=$(vt_host hc_errors)
	vt_check hotdrop/no-hc-errors-on-host test "$e1" = "$e0"
	log "hot drop: host hc_errors $e0 -> $e1"
	vt_check hotdrop/add vt_host add
	vt_check hotdrop/netdev-back venet_if
	vt_check hotdrop/unload rmmod venet
}

# ---- queue pairs (docs/devices/venet.md, "Queue pairs") -----------------
# host.sh gives the device queues=2 and the guest has 2 vCPUs, so venet
# asks for and gets 2 pairs (every group above runs on them); the
# mq_old_host group re-adds the device with queues=1.

# ethchan IF: "MAX CURRENT" combined channels (ethtool -l)
ethchan() {
	ethtool -l "$1" | awk '/^Pre-set/ { s = "max" } /^Current/ { s = "cur" }
		$1 == "Combined:" { v[s] = $2 } END { print v["max"], v["cur"] }'
}

# mq_channels IF "MAX CURRENT": ethtool -l says so
mq_channels() {
	local got
	got=$(ethchan "$1")
	echo "ethtool -l combined (max current): $got, want $2"
	[ "$got" = "$2" ]
}

# mq_snap IF: packets per pair "rx0 rx1 tx0 tx1", one ethtool -S snapshot
mq_snap() {
	ethstats "$1" rx_queue_0_packets rx_queue_1_packets tx_queue_0_packets tx_queue_1_packets
}

# mq_moved IF SNAP I...: the per-pair counters I (1..4 in mq_snap's
# order) all moved past SNAP
mq_moved() {
	local now snap=$2 IF=$1
	shift 2
	now=$(mq_snap "$IF") || return 1
	echo "per-pair packets (rx0 rx1 tx0 tx1): $snap -> $now"
	awk -v a="$snap" -v b="$now" -v w="$*" 'BEGIN { split(a, x); split(b, y)
		n = split(w, k); for (i = 1; i <= n; i++) if (y[k[i]] <= x[k[i]]) exit 1 }'
}

# mq_rx0_past IF N: pair 0 has received more than N frames
mq_rx0_past() { [ "$(ethstats "$1" rx_queue_0_packets)" -gt "$2" ]; }

# vbus_irq_cpus: the vbus bridge's interrupts per CPU (every vector:
# vbus-hc, vbus-eventq, the queue vectors vbus-qN)
vbus_irq_cpus() {
	awk '$NF ~ /^vbus-/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s[i - 1] += $i
		if (i - 2 > n) n = i - 2 }
		END { for (c = 1; c <= n; c++) printf "%s%d", (c > 1 ? " " : ""), s[c]; print "" }' \
		/proc/interrupts
}

# vbus_irq_every_cpu BEFORE: every CPU took vbus interrupts since BEFORE
vbus_irq_every_cpu() {
	local now
	now=$(vbus_irq_cpus)
	echo "vbus interrupts per CPU: $1 -> $now"
	awk -v a="$1" -v b="$now" 'BEGIN { n = split(a, x); m = split(b, y)
		if (m < 2 || n != m) exit 1; for (i = 1; i <= m; i++) if (y[i] <= x[i]) exit 1 }'
}

# xps_set IF N: tx queues 0..N-1 each have XPS CPUs (venet sets them from
# its tx rings' queue vectors; the suite's bridge has them)
xps_set() {
	local i=0 m
	while [ "$i" -lt "$2" ]; do
		m=$(cat "/sys/class/net/$1/queues/tx-$i/xps_cpus" 2>/dev/null)
		echo "tx-$i xps_cpus: ${m:-?}"
		case "$m" in *[1-9a-f]*) ;; *) return 1 ;; esac
		i=$((i + 1))
	done
}

# xps_apart IF: pairs 0 and 1 send from different CPUs (the bridge puts a
# pair's rx and tx ring on one vector, the next pair on the next one)
xps_apart() {
	local a b
	a=$(tr -d , <"/sys/class/net/$1/queues/tx-0/xps_cpus" 2>/dev/null)
	b=$(tr -d , <"/sys/class/net/$1/queues/tx-1/xps_cpus" 2>/dev/null)
	echo "xps_cpus: tx-0 ${a:-?}, tx-1 ${b:-?}"
	[ -n "$a" ] && [ -n "$b" ] && [ $((0x$a)) -ne 0 ] && [ $((0x$b)) -ne 0 ] &&
		[ $((0x$a & 0x$b)) -eq 0 ]
}

# flows in the background: new TCP connections both ways, one after the
# other (each its own flow hash), until mq_flows_stop
mq_flows_start() {
	(while http_get /data >/dev/null 2>&1; do :; done) &
	mq_pids=$!
	(while http_get /data >/dev/null 2>&1; do :; done) &
	mq_pids="$mq_pids $!"
	(while http_post /cgi-bin/md5 /tmp/up >/dev/null 2>&1; do :; done) &
	mq_pids="$mq_pids $!"
	(while http_post /cgi-bin/md5 /tmp/up >/dev/null 2>&1; do :; done) &
	mq_pids="$mq_pids $!"
}
mq_flows_stop() {
	# shellcheck disable=SC2086 # the pids
	kill $mq_pids 2>/dev/null
	# shellcheck disable=SC2086
	wait $mq_pids 2>/dev/null
}

# ethtool -L combined 1: once pair 0 has received 200 more frames (what
# pair 1 had completed before SETACTIVE is reaped by then), pair 1
# receives and sends nothing while pair 0 receives 1000 more
mq_pair1_quiet() {
	local s0 s1 s2
	s0=$(mq_snap "$1") || return 1
	vt_wait 60 mq_rx0_past "$1" $((${s0%% *} + 200)) || return 1
	s1=$(mq_snap "$1")
	vt_wait 60 mq_rx0_past "$1" $((${s1%% *} + 1000)) || return 1
	s2=$(mq_snap "$1")
	echo "per-pair packets (rx0 rx1 tx0 tx1): $s1 -> $s2"
	awk -v a="$s1" -v b="$s2" 'BEGIN { split(a, x); split(b, y); exit !(y[2] == x[2] && y[4] == x[4]) }'
}

check_mq() {
	local p=mq IF s0 i0 b0
	[ "$HAVE_ETHTOOL" = 1 ] || { vt_fail mq/ethtool "no ethtool in the guest"; return; }
	vt_check "$p/load" vt_kmod_load venet || return
	IF=$(venet_if) || { vt_fail "$p/netdev" "no venet netdev"; rmmod venet; return; }
	ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF"
	ip link set dev "$IF" up
	vt_check "$p/carrier-on" wait_carrier "$IF" 1
	vt_check "$p/channels-2-combined" mq_channels "$IF" "2 2"
	vt_check "$p/xps-from-queue-vectors" xps_set "$IF" 2
	vt_check "$p/xps-pairs-on-different-cpus" xps_apart "$IF"
	mk_upload 1

	# flows both ways spread over both pairs; interrupts on both vCPUs
	s0=$(mq_snap "$IF") i0=$(vbus_irq_cpus)
	mq_flows_start
	vt_check "$p/flows-spread-over-both-pairs" vt_wait 60 mq_moved "$IF" "$s0" 1 2 3 4
	vt_check "$p/interrupts-on-every-cpu" vt_wait 30 vbus_irq_every_cpu "$i0"

	# one pair, under traffic: it keeps flowing, pair 1 goes quiet
	vt_check "$p/set-combined-1-under-traffic" ethtool -L "$IF" combined 1
	vt_check "$p/channels-1-combined" mq_channels "$IF" "2 1"
	b0=$(vt_net_bytes "$IF")
	vt_check "$p/combined-1-traffic-flows" vt_wait 30 vt_flowing "$IF" "$b0"
	vt_check "$p/combined-1-pair-1-quiet" mq_pair1_quiet "$IF"

	# and back: pair 1 carries traffic both ways again
	vt_check "$p/set-combined-2-under-traffic" ethtool -L "$IF" combined 2
	vt_check "$p/channels-2-combined-again" mq_channels "$IF" "2 2"
	vt_check "$p/xps-from-queue-vectors-again" xps_set "$IF" 2
	s0=$(mq_snap "$IF")
	vt_check "$p/combined-2-pair-1-both-ways" vt_wait 60 mq_moved "$IF" "$s0" 2 4
	mq_flows_stop

	vt_check "$p/md5-host-to-guest-2-pairs" check_tcp_in
	vt_check "$p/md5-guest-to-host-2-pairs" check_tcp_out
	ethtool -S "$IF" | grep -E '_queue_' | sed 's/^/  /'
	vt_check "$p/unload" rmmod venet
}

# a host that grants one pair (queues=1, as a host from before queue
# pairs runs one): one pair, and it works
check_mq_old_host() {
	local p=mq-old-host IF
	[ "$HAVE_ETHTOOL" = 1 ] || { vt_fail "$p/ethtool" "no ethtool in the guest"; return; }
	vt_check "$p/drop" vt_host drop
	vt_check "$p/add-queues-1" vt_host add 1
	vt_check "$p/load" vt_kmod_load venet
	if IF=$(venet_if); then
		ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF"
		ip link set dev "$IF" up
		vt_check "$p/carrier-on" wait_carrier "$IF" 1
		vt_check "$p/channels-1-combined" mq_channels "$IF" "1 1"
		vt_check "$p/ping" check_ping_out
	else
		vt_fail "$p/netdev" "no venet netdev"
	fi
	vt_check "$p/unload" rmmod venet
	vt_check "$p/drop-again" vt_host drop
	vt_check "$p/add-back" vt_host add
}

# the 2009 series built the driver as vbus-enet.ko: `modprobe vbus_enet`
# (a modules-load.d line written for it) still loads venet
check_alias() {
	local d
	d=/lib/modules/$(uname -r)/extra
	mkdir -p "$d"
	cp "$VT_KMOD_DIR/venet.ko" "$d/"
	vt_check alias/depmod depmod
	vt_check alias/modprobe-vbus_enet modprobe vbus_enet
	vt_check alias/venet-loaded test -d /sys/module/venet
	vt_check alias/unload rmmod venet
	rm -f "$d/venet.ko"
}

# --swiotlb (VT_SWIOTLB=1): every DMA mapping of ours is a bounce buffer.
# The host adds the device back with dma_window= that range
# (vt_swiotlb_range); md5-checked TCP both ways in each sg mode, at MTU
# 1500 and 9000; then the host says every frame it saw was in the window
# (dma_in > 0, dma_out = 0; vbus-hostd refuses one outside).
swiotlb_mode() {
	local sg=$1 p="swiotlb/sg$1" IF
	vt_check "$p/load" vt_kmod_load venet "sg_enabled=$sg" || return
	IF=$(venet_if) || { vt_fail "$p/netdev" "no venet netdev"; rmmod venet; return; }
	ip addr add "$VT_GUEST_IP/$VT_PREFIX" dev "$IF"
	ip link set dev "$IF" up
	vt_check "$p/carrier-on" wait_carrier "$IF" 1
	vt_check "$p/tcp-host-to-guest" check_tcp_in
	vt_check "$p/tcp-guest-to-host" check_tcp_out
	vt_check "$p/mtu-9000" set_mtu "$IF" 9000
	vt_check "$p/mtu-9000-tcp-host-to-guest" check_tcp_in
	vt_check "$p/mtu-9000-tcp-guest-to-host" check_tcp_out
	vt_check "$p/mtu-1500" set_mtu "$IF" 1500
	vt_check "$p/unload" rmmod venet
}
check_swiotlb() {
	local r IF sg
	r=$(vt_swiotlb_range) || { vt_fail swiotlb/range "$r"; return; }
	log "swiotlb: bounce buffers at $r"
	vt_check swiotlb/load vt_kmod_load venet || return
	IF=$(venet_if) || { vt_fail swiotlb/netdev "no venet netdev"; rmmod venet; return; }
	vt_check swiotlb/drop vt_host drop
	vt_check swiotlb/netdev-gone vt_wait 20 netdev_gone "$IF"
	# shellcheck disable=SC2086 # START END
	vt_check swiotlb/back-with-window vt_host window $r
	vt_check swiotlb/netdev-back venet_if
	vt_check swiotlb/unload rmmod venet
	for sg in $VT_SG_MODES; do
		swiotlb_mode "$sg"
	done
	vt_check swiotlb/host-saw-bounce-buffers-only vt_host dmacheck
	log "swiotlb: vbus-hostd counted $(vt_host dmacheck)"
}

if [ "${VT_SWIOTLB:-0}" = 1 ]; then
	vt_run_checks swiotlb
else
	# shellcheck disable=SC2046 # one group per sg_enabled mode
	vt_run_checks $(for sg in $VT_SG_MODES; do echo "sg$sg"; done) mq mq_old_host small_rings hotdrop alias cycles
fi
vt_check enet-unloaded test ! -d /sys/module/venet

# host.sh gave the guest per-queue vectors: every ring signal of the run
# came on them (tasklet runs), none as a SHMSIGNAL event on the eventq
qvec_only() {
	local f
	f=$(echo /sys/bus/pci/drivers/vbus-pcibridge/*/vbus_stats)
	awk '$1 == "qvec_on" && $2 == 1 { on = 1 } $1 == "qvec_runs" && $2 > 0 { runs = 1 }
		$1 == "shmsignal" && $2 == 0 { none = 1 }
		END { exit !(on && runs && none) }' "$f" && return 0
	grep -E 'qvec|shmsignal' "$f"
	return 1
}
vt_check venet-rings-on-queue-vectors qvec_only
vt_done
