# shellcheck shell=dash
# Guest side of the venet_pair suite (host.sh next to it): one of two
# guests with a venet NIC on the same switch (a Linux bridge or Open
# vSwitch in the host's namespace, which also holds the host endpoint
# $VP_HOST_IP with busybox httpd on it). Each guest serves, with busybox
# httpd on $VP_SELF_IP:$VP_HTTP_PORT, /data (the file /test/data, md5
# $VP_DATA_MD5) and /cgi-bin/md5 (the md5 of a POST body), and checks
# against its peer ($VP_PEER_IP): ping, TCP both ways with md5 (it
# downloads the peer's /data, it uploads to the peer's /cgi-bin/md5),
# then the same at MTU 9000 (jumbo frames through the switch, none
# fragmented here). The reboot group: guest b reboots (its QEMU ends:
# the lab runs QEMU with -no-reboot; the host boots it again as role b2,
# the same vbus-hostd guest and tap) while guest a downloads md5-checked
# files from the host endpoint without a failure; then a and b2 talk
# again. The guests meet at barriers: vt_host sync NAME returns once both
# have asked (host.sh, req_sync).
#
# /test/config.sh: VP_ROLE (a, b, b2) VP_SWITCH VP_SELF_IP VP_PEER_IP
# VP_HOST_IP VP_HTTP_PORT VP_DATA_MD5 VP_SG (venet's sg_enabled)

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck source=tests/qemu/suites/venet/net.sh
. /test/net.sh
# shellcheck disable=SC1091
. /test/config.sh

PEER="http://$VP_PEER_IP:$VP_HTTP_PORT"
HOST="http://$VP_HOST_IP:$VP_HTTP_PORT"
log() { echo "venet-pair: $*"; }

# serve: /data and /cgi-bin/md5 on our address (busybox httpd)
serve() {
	mkdir -p /www/cgi-bin
	ln -s /test/data /www/data
	cat >/www/cgi-bin/md5 <<'EOF'
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
head -c "${CONTENT_LENGTH:-0}" | md5sum | cut -d' ' -f1
EOF
	chmod 0755 /www/cgi-bin/md5
	httpd -p "$VP_SELF_IP:$VP_HTTP_PORT" -h /www
}

# up: venet loaded, its interface addressed and up with carrier
up() {
	vt_kmod_load vbus_pcibridge || return 1
	vt_kmod_load venet "sg_enabled=$VP_SG" || return 1
	IF=$(venet_if) || { echo "no venet netdev"; return 1; }
	ip addr add "$VP_SELF_IP/24" dev "$IF" &&
		ip link set dev "$IF" up &&
		wait_carrier "$IF" 1
}

# get_md5 URL WANT: the download's md5 is WANT
get_md5() {
	local got
	got=$(timeout 60 wget -q -O - "$1" | md5sum | cut -d' ' -f1)
	echo "got $got want $2"
	[ "$got" = "$2" ]
}

check_peer_ping() { ping -c 3 -i 0.2 -W 3 "$VP_PEER_IP"; }
check_tcp_from_peer() { get_md5 "$PEER/data" "$VP_DATA_MD5"; }
check_tcp_to_peer() {
	local want got
	want=$(md5sum /tmp/up | cut -d' ' -f1)
	got=$(timeout 120 wget -q -O - --post-file /tmp/up "$PEER/cgi-bin/md5")
	echo "peer got $got, sent $want"
	[ "$got" = "$want" ]
}

# talk P: ping, TCP both ways with the peer (checks named P/...)
talk() {
	vt_check "$1/ping-peer" check_peer_ping
	vt_check "$1/tcp-from-peer" check_tcp_from_peer
	vt_check "$1/tcp-to-peer" check_tcp_to_peer
}

# jumbo: 8900-byte pings reach the peer unfragmented (the switch carries
# 9000-byte frames: a 1500 port anywhere on the path drops them)
check_jumbo_ping() {
	local f0 f1
	f0=$(ip_frag_creates)
	ping -c 3 -i 0.2 -W 3 -s 8900 "$VP_PEER_IP" || return 1
	f1=$(ip_frag_creates)
	echo "FragCreates $f0 -> $f1"
	[ "$f0" = "$f1" ]
}

check_pair() {
	vt_check pair/sync vt_host sync pair || return
	talk pair
	vt_check pair/sync-done vt_host sync pair-done
}

check_jumbo() {
	vt_check jumbo/mtu-9000 ip link set dev "$IF" mtu 9000 || return
	vt_check jumbo/sync vt_host sync jumbo || return
	vt_check jumbo/ping-peer-8900 check_jumbo_ping
	talk jumbo
	vt_check jumbo/sync-done vt_host sync jumbo-done
	vt_check jumbo/mtu-1500 ip link set dev "$IF" mtu 1500
}

# host_traffic: md5-checked downloads from the host endpoint until
# /tmp/stop exists; one line per download in /tmp/host.ok or /tmp/host.bad
host_traffic() {
	while [ ! -e /tmp/stop ]; do
		if get_md5 "$HOST/data" "$VP_DATA_MD5" >/dev/null 2>&1; then
			echo ok >>/tmp/host.ok
		else
			echo bad >>/tmp/host.bad
		fi
	done
}
count() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# the host's traffic went on while the peer was away: downloads done in
# the window, none failed
check_flowed() {
	echo "downloads from the host while the peer rebooted: $(($2 - $1)), failed: $(count /tmp/host.bad)"
	[ "$(($2 - $1))" -ge 1 ] && [ "$(count /tmp/host.bad)" -eq 0 ]
}

reboot_a() {
	local pid n0 n1
	vt_check reboot/sync vt_host sync reboot || return
	host_traffic &
	pid=$!
	# the host answers once b's QEMU has ended, and boots it again
	vt_check reboot/peer-gone vt_host peer_gone || { touch /tmp/stop; wait "$pid"; return; }
	n0=$(count /tmp/host.ok)
	vt_check reboot/peer-back vt_host sync rebooted
	n1=$(count /tmp/host.ok)
	touch /tmp/stop
	wait "$pid"
	vt_check reboot/host-traffic-flowed check_flowed "$n0" "$n1"
	log "downloads from the host while b was away: $((n1 - n0))"
	talk reboot/after
	vt_check reboot/sync-done vt_host sync reboot-done
	log "host downloads: $(count /tmp/host.ok) ok, $(count /tmp/host.bad) failed"
}

reboot_b() {
	vt_check reboot/sync vt_host sync reboot || return
	vt_done
	log "rebooting"
	reboot -f
}

check_reboot() {
	case "$VP_ROLE" in
	a) reboot_a ;;
	b) reboot_b ;;
	esac
}

log "$VP_ROLE on $VP_SWITCH: $VP_SELF_IP, peer $VP_PEER_IP, host $VP_HOST_IP, sg_enabled=$VP_SG"
mk_upload 2
vt_check up up || { vt_done; exit 1; }
serve
if [ "$VP_ROLE" = b2 ]; then
	# back from the reboot: meet a, then talk
	vt_check reboot/sync-rebooted vt_host sync rebooted && talk reboot/after
	vt_check reboot/sync-done vt_host sync reboot-done
else
	vt_run_checks pair jumbo reboot
fi
vt_done
