# shellcheck shell=bash
# The QEMU lab: the one skeleton of every suite (tests/qemu/suites/*/host.sh)
# and every bench (bench/*.sh). A host script sets its option defaults,
# calls lab_begin, then declares what it needs, in order:
#
#   lab_begin SUITE [SPEC...] -- "$@"   options, run dir, cleanup, kernel
#   lab_build [--modules SUBDIRS] [--cmake "TARGET..."]
#   lab_kos [--bus] REL.ko...           kos=(...), each must exist
#   lab_netns IP TAP [IP TAP]...        namespace $ns with taps (nsx CMD)
#   lab_httpd DIR                       busybox httpd in it on $host_ip:$port
#   lab_hostd [--ns] -- ARGS...         vbus-hostd; waits for its sockets
#   lab_stage ROLE GUEST [--bin P] [--file P] [KMOD...] <config
#   lab_run ROLE [--guest G] [BOOT OPTS] [-- QEMU ARGS]
#   finish                              "N passed, N failed"; exit status
#
# One request channel, guest -> host: every guest gets a second serial
# port (/dev/ttyS1 in the guest, a FIFO pair here). The guest's vt_host
# CMD ARGS (lib/guest.sh) writes one line and reads one reply line; here
# lab_serve calls the host script's function req_CMD ARGS, in this shell
# (so it can count checks and keep state): status 0 replies "ok
# $lab_reply", 2 means "not yet" (asked again 0.2 s later), anything else
# replies "fail $lab_reply". $lab_role and $lab_guest name the asker.
#
# One check alone: `--only REGEX` (run.sh SUITE:REGEX, or $VBUS_QEMU_ONLY)
# reaches the guest as VT_ONLY (vt_run_checks runs only the check_*
# groups it matches) and the host script as lab_want.

[[ -n "${_VBUS_LAB_SH:-}" ]] && return 0
_VBUS_LAB_SH=1
_lab_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/qemu/lib/kernel.sh
source "$_lab_lib/kernel.sh"
# shellcheck source=tests/qemu/lib/initramfs.sh
source "$_lab_lib/initramfs.sh"
# shellcheck source=tests/qemu/lib/boot.sh
source "$_lab_lib/boot.sh"
# shellcheck source=tests/qemu/lib/results.sh
source "$_lab_lib/results.sh"
# shellcheck source=tests/qemu/lib/hostd.sh
source "$_lab_lib/hostd.sh"

top=$(cd "$_lab_lib/../../.." && pwd)
# The bus stack every device suite loads, and what `make modules` needs
# for it (vbus_ipc: the bus's own tests use its headers).
# shellcheck disable=SC2034 # for the suites
LAB_BUS_SUBDIRS="kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc"
LAB_BUS_KOS=(vbus_core.ko kernel/bus/vbus_proxy.ko kernel/pci_bridge/vbus_pcibridge.ko)

passed=0 failed=0
h_pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
h_fail() { failed=$((failed + 1)); printf 'FAIL %s %s\n' "$1" "${*:2}"; }
finish() {
	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
	exit $?
}
# h_check NAME CMD...: PASS iff CMD succeeds.
h_check() {
	local name=$1
	shift
	if "$@"; then h_pass "$name"; else h_fail "$name" "($*)"; fi
}

# lab_want NAME: NAME matches --only (always true without one).
lab_want() { [[ -z "${only:-}" ]] || grep -qE -e "$only" <<<"$1"; }

_lab_usage() {
	awk 'NR == 1 { next } !/^#/ || /^# shellcheck/ { exit } { sub(/^# ?/, ""); print }' "$0"
	printf '\nEvery suite: [--mem SIZE] [--timeout SEC] [--no-build] [--only REGEX] [--swiotlb]\n'
}

# lab_begin SUITE [SPEC...] -- ARGS...: parse ARGS against the SPECs and
# the common options, then the run directory and the kernel. A SPEC is
# NAME:N (--NAME takes a number, into $NAME with - as _), NAME:S (any
# string) or NAME:VAR=VALUE (a flag). Common: --mem SIZE, --timeout SEC,
# --no-build, --only REGEX, --swiotlb (swiotlb=1, exported as VBUS_SWIOTLB:
# the guest boots with swiotlb=force, boot.sh; a suite that knows the
# option runs its bounce-buffer checks, lab_dma_window). Defaults are the caller's variables, set
# before. Sets suite out (results, kept: $VBUS_BUILD/qemu/SUITE unless the
# caller set it) lab_logs (where the lab's own logs go: $out unless the
# caller sets it after) run (temporary, short: socket paths) tag cbuild
# t_start.
lab_begin() {
	lab_parse "$@"
	lab_setup
}

# lab_parse SUITE [SPEC...] -- ARGS...: lab_begin's first half, the
# options (for a script with work to do between the two).
lab_parse() {
	suite=$1
	shift
	local specs=(mem:S timeout:N no-build:build=0 only:S swiotlb:swiotlb=1) s opt var hit
	while (($#)) && [[ "$1" != -- ]]; do specs+=("$1"); shift; done
	(($#)) && shift
	mem=${mem:-1G} timeout=${timeout:-600} build=${build:-1} only=${only:-${VBUS_QEMU_ONLY:-}} swiotlb=${swiotlb:-0}
	while (($#)); do
		[[ "$1" == -h || "$1" == --help ]] && { _lab_usage; exit 0; }
		opt=${1#--} hit=
		for s in "${specs[@]}"; do
			[[ "${s%%:*}" == "$opt" ]] || continue
			hit=1 var=${opt//-/_}
			case "${s#*:}" in
			N | S)
				(($# >= 2)) || { vbus_err "$1 needs a value"; exit 2; }
				[[ "${s#*:}" == S || "$2" =~ ^[0-9]+$ ]] || { vbus_err "$1: not a number: $2"; exit 2; }
				printf -v "$var" '%s' "$2"
				shift 2
				;;
			*)
				var=${s#*:}
				printf -v "${var%%=*}" '%s' "${var#*=}"
				shift
				;;
			esac
			break
		done
		[[ -n "$hit" ]] || { vbus_err "unknown argument $1 (see --help)"; exit 2; }
	done
	VBUS_SWIOTLB=$swiotlb
	export VBUS_SWIOTLB
}

# lab_setup: lab_begin's second half: run dir, cleanup, kernel.
lab_setup() {
	t_start=$(vbus_now)
	out=${out:-$VBUS_BUILD/qemu/$suite}
	lab_logs=$out
	cbuild="$VBUS_BUILD/cmake"
	mkdir -p "$out"
	run=$(mktemp -d "/tmp/vbus-$suite.XXXXXX")
	tag="vbus-$suite-$$"
	trap _lab_cleanup EXIT
	trap 'exit 130' INT TERM
	[[ -z "$only" ]] || vbus_log "only the checks matching '$only'"
	vbus_fetch_kernel
}

# lab_defer CMD: run CMD (a string, evaluated then) at exit, last first.
_lab_deferred=()
_lab_bg=()
lab_defer() { _lab_deferred+=("$1"); }

# shellcheck disable=SC2317 # the EXIT trap
_lab_cleanup() {
	local f p i
	# the exit status is the script's: nothing here may change it (errexit
	# would, at the first process already gone)
	set +e
	# QEMU's and the peers' pidfiles: nothing of this run may outlive it
	for f in "$run"/*.pid; do
		[[ -f "$f" ]] || continue
		p=$(cat "$f" 2>/dev/null) || continue
		[[ -n "$p" ]] && kill -9 "$p" 2>/dev/null
	done
	for p in "${_lab_bg[@]}"; do kill "$p" 2>/dev/null; done
	for ((i = ${#_lab_deferred[@]} - 1; i >= 0; i--)); do
		eval "${_lab_deferred[i]}" || true
	done
	[[ -n "${VBUS_KEEP_RUN:-}" ]] || rm -rf "$run"
	rm -f "/dev/shm/$tag"-*
	return 0
}

# lab_build [--modules SUBDIRS] [--cmake "TARGET..."]: unless --no-build,
# `make modules` of vbus_core plus SUBDIRS and the CMake targets; then
# $hostd ($VBUS_HOSTD, else the newest under $cbuild) when vbus-hostd is
# among the targets. A failure is a FAIL and the end.
lab_build() {
	local subdirs="" targets="" t t0
	while (($#)); do
		case "$1" in
		--modules) subdirs=$2; shift 2 ;;
		--cmake) targets=$2; shift 2 ;;
		*) vbus_err "lab_build: unknown argument $1"; exit 2 ;;
		esac
	done
	if ((build)) && [[ -n "$subdirs" ]]; then
		t0=$(vbus_now)
		if ! make -C "$top" modules KVER="$VBUS_KVER" VBUS_SUBDIRS="$subdirs" \
			>"$lab_logs/build-modules.log" 2>&1; then
			tail -n 40 "$lab_logs/build-modules.log" | sed 's/^/    /'
			h_fail build-modules "(log $lab_logs/build-modules.log)"
			finish
		fi
		vbus_log "make modules: $(vbus_elapsed "$t0") s"
	fi
	if ((build)) && [[ -n "$targets" ]]; then
		t0=$(vbus_now)
		# shellcheck disable=SC2086 # a list of targets
		if ! { cmake -S "$top" -B "$cbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
			cmake --build "$cbuild" -j"$(nproc)" --target $targets; } \
			>"$lab_logs/build-userspace.log" 2>&1; then
			tail -n 40 "$lab_logs/build-userspace.log" | sed 's/^/    /'
			h_fail build-userspace "(log $lab_logs/build-userspace.log)"
			finish
		fi
		vbus_log "cmake $targets: $(vbus_elapsed "$t0") s"
	fi
	for t in $targets; do
		[[ "$t" == vbus-hostd ]] || continue
		hostd=${VBUS_HOSTD:-$(vbus_find_hostd "$cbuild")} ||
			{ h_fail build "no vbus-hostd binary under $cbuild"; finish; }
	done
}

# lab_kos [--bus] REL...: kos=(the bus stack with --bus, then REL...),
# paths under the top; each must exist.
lab_kos() {
	local ko
	kos=()
	if [[ "${1:-}" == --bus ]]; then
		shift
		for ko in "${LAB_BUS_KOS[@]}"; do kos+=("$top/$ko"); done
	fi
	for ko in "$@"; do kos+=("$top/$ko"); done
	for ko in "${kos[@]}"; do
		[[ -f "$ko" ]] || { h_fail build "$ko not built"; finish; }
	done
}

# lab_tools NAME...: each host tool's path into tool_NAME (- and . as _),
# searched in sbin too. A missing one is a FAIL and the end.
lab_tools() {
	local t p
	for t in "$@"; do
		p=$(PATH=$PATH:/usr/sbin:/sbin command -v "$t") ||
			{ h_fail setup "no $t on the host (scripts/deps.sh installs it)"; finish; }
		t=${t//-/_}
		printf -v "tool_${t//./_}" '%s' "$p"
	done
}

# lab_netns [--mq] IP TAP [IP TAP]...: network namespace $ns with lo
# and, for each pair, a tap TAP (vnet_hdr, IP/24, up; IP "-": no address,
# for a tap that joins a bridge; --mq: multi_queue, for a venet device
# with queues= > 1); host_ip and tap: the first.
# nsx CMD... runs a command in it.
lab_netns() {
	local mq=()
	[[ "$1" == --mq ]] && { mq=(multi_queue); shift; }
	# shellcheck disable=SC2034 # for the suites
	host_ip=$1 tap=$2 ns=$tag
	lab_defer "ip netns del $ns 2>/dev/null"
	if ! (
		ip netns add "$ns" && nsx ip link set lo up || exit 1
		while (($#)); do
			nsx ip tuntap add dev "$2" mode tap vnet_hdr "${mq[@]}" &&
				{ [[ "$1" == - ]] || nsx ip addr add "$1/24" dev "$2"; } &&
				nsx ip link set "$2" up || exit 1
			shift 2
		done
	) >"$lab_logs/netns.log" 2>&1; then
		sed 's/^/    /' "$lab_logs/netns.log"
		h_fail netns "cannot create the namespace/tap (root needed; log $lab_logs/netns.log)"
		finish
	fi
	h_pass netns-tap
}
nsx() { ip netns exec "$ns" "$@"; }

# lab_bridge BR TAP...: a Linux bridge BR in the namespace with the TAPs
# as its ports, up (no address: the caller adds one if it wants).
lab_bridge() {
	local br=$1 t
	shift
	nsx ip link add "$br" type bridge || return 1
	for t in "$@"; do nsx ip link set dev "$t" master "$br" || return 1; done
	nsx ip link set dev "$br" up
}

# lab_qemu_in_ns: a qemu-system-x86_64 in $lab_ns_bin that runs the real
# one in the namespace (a tap netdev is looked up by name there); boot
# with PATH="$lab_ns_bin:$PATH" lab_boot ...
lab_qemu_in_ns() {
	lab_ns_bin="$run/bin"
	mkdir -p "$lab_ns_bin"
	printf '#!/bin/sh\nexec ip netns exec %q %q "$@"\n' "$ns" "$(command -v qemu-system-x86_64)" \
		>"$lab_ns_bin/qemu-system-x86_64"
	chmod +x "$lab_ns_bin/qemu-system-x86_64"
}

# lab_ivshmem NAME: QEMU's arguments (one a line) for a vbus-ipc device on
# vbus-hostd's socket $run/NAME.sock (its qsock= or peer_qsock=):
#   mapfile -t q < <(lab_ivshmem north)
lab_ivshmem() {
	printf '%s\n' -chardev "socket,id=ipc0,path=$run/$1.sock" \
		-device "ivshmem-doorbell,chardev=ipc0,vectors=2"
}

# lab_httpd DIR: busybox httpd serving DIR (cgi-bin/ too) on
# $host_ip:${port:-8080} in the namespace. $busybox is its path.
lab_httpd() {
	port=${port:-8080}
	busybox=$(command -v busybox) || { h_fail setup "no busybox on the host"; finish; }
	# not nsx: `ip netns exec` execs, so $! is the daemon itself
	ip netns exec "$ns" "$busybox" httpd -f -p "$host_ip:$port" -h "$1" \
		>"$lab_logs/httpd.log" 2>&1 &
	_lab_bg+=($!)
}

# lab_cgi_md5 DIR: DIR/cgi-bin/md5, the md5 of a POST body (uploads).
lab_cgi_md5() {
	mkdir -p "$1/cgi-bin"
	cat >"$1/cgi-bin/md5" <<EOF
#!$busybox sh
printf 'Content-Type: text/plain\r\n\r\n'
$busybox head -c "\${CONTENT_LENGTH:-0}" | $busybox md5sum | $busybox cut -d' ' -f1
EOF
	chmod 0755 "$1/cgi-bin/md5"
}

# lab_guest NAME [SIZE]: vbus-hostd's --guest spec for guest NAME, its
# socket and RAM file in this run (SIZE: --mem).
lab_guest() { printf '%s:sock=%s,mem=%s,size=%s\n' "$1" "$run/$1.sock" "/dev/shm/$tag-$1" "${2:-$mem}"; }

# lab_hostd [--ns] -- ARGS...: vbus-hostd --foreground --ctl $run/ctl.sock
# ARGS (in the namespace with --ns; under the command words of the array
# LAB_HOSTD_WRAP if set), log $lab_logs/hostd.log; PASS hostd-started once
# every socket it was given (--ctl, sock=, qsock=) is there. Sets
# hostd_pid (the wrapper's, if any) and ctl().
LAB_HOSTD_WRAP=()
lab_hostd() {
	local pre=() socks=("$run/ctl.sock") a fields s
	[[ "$1" == --ns ]] && { pre=(ip netns exec "$ns"); shift; }
	[[ "$1" == -- ]] && shift
	for a in "$@"; do
		IFS=, read -ra fields <<<"$a"
		for s in "${fields[@]}"; do
			case "$s" in *sock=*) socks+=("${s#*sock=}") ;; esac
		done
	done
	"${pre[@]}" "${LAB_HOSTD_WRAP[@]}" "$hostd" --foreground --ctl "$run/ctl.sock" "$@" \
		>"$lab_logs/hostd.log" 2>&1 &
	hostd_pid=$!
	# shellcheck disable=SC2016 # expanded at exit: a suite may change it
	lab_defer 'vbus_stop_pid "$hostd_pid"'
	if lab_wait_sockets "$hostd_pid" "${socks[@]}"; then
		h_pass hostd-started
	else
		sed 's/^/    hostd: /' "$lab_logs/hostd.log" | tail -n 20
		h_fail hostd-started "vbus-hostd did not come up (log $lab_logs/hostd.log)"
		finish
	fi
}
ctl() { "$hostd" ctl --ctl "$run/ctl.sock" "$@"; }

# lab_wait_sockets PID SOCK...: up to 30 s for every SOCK to exist while
# PID (the daemon that makes them) lives.
lab_wait_sockets() {
	local pid=$1 s ok
	shift
	for _ in $(seq 300); do
		ok=1
		for s in "$@"; do [[ -S "$s" ]] || ok=0; done
		((ok)) && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# lab_no_fault WHAT: PASS hostd-no-device-fault unless vbus-hostd's log
# shows it faulted a device (strict=1: our driver broke the protocol).
lab_no_fault() {
	if grep -aq " faulted: " "$lab_logs/hostd.log"; then
		grep -a " faulted: " "$lab_logs/hostd.log" | head -n 5 | sed 's/^/    hostd: /'
		h_fail hostd-no-device-fault "the host faulted $1 (strict=1)"
	else
		h_pass hostd-no-device-fault
	fi
}

# ---- --swiotlb: the data buffers vbus-hostd saw were the bounce buffers ----
# The guest asks (vt_swiotlb_range, then its suite's drop and "window
# START END") for its device to come back with dma_window=START-END
# (test-only, vbus-hostd(8)): vbus-hostd then counts each data buffer
# inside (dma_in) and refuses one outside (dma_out).
# lab_dma_add SPEC START END: ctl add of device SPEC with the window.
lab_dma_add() {
	[[ "$2" =~ ^0x[0-9a-f]+$ && "$3" =~ ^0x[0-9a-f]+$ ]] ||
		{ lab_reply="not a window: '$2' '$3'"; return 1; }
	ctl add g1 "$1,dma_window=$2-$3" >>"$out/ctl.log" 2>&1 ||
		{ lab_reply="ctl add (see $out/ctl.log)"; return 1; }
}
# lab_dma_check ID: device ID of g1 saw data buffers, all in its window;
# the reply is both counts.
lab_dma_check() {
	local st n_in n_out
	st=$(ctl stats g1 "$1" 2>>"$out/ctl.log") || { lab_reply="ctl stats g1 $1 (see $out/ctl.log)"; return 1; }
	n_in=$(tr ' ' '\n' <<<"$st" | sed -n 's/^dma_in=//p' | head -n 1)
	n_out=$(tr ' ' '\n' <<<"$st" | sed -n 's/^dma_out=//p' | head -n 1)
	lab_reply="dma_in=${n_in:-none} dma_out=${n_out:-none}"
	[[ "${n_in:-0}" -gt 0 && "${n_out:-1}" -eq 0 ]]
}

# lab_stage ROLE GUEST [--bin PATH]... [--file PATH]... [KMOD...] <CONFIG:
# the initramfs $run/ROLE.cpio.gz: guest script GUEST as /test/run.sh,
# lib/guest.sh as /test/lib.sh, CONFIG (stdin, shell assignments; none
# from a terminal) and VT_ONLY as /test/config.sh, the modules (with their
# dependencies), host binaries (at their paths, with their libraries) and
# files (in /test).
lab_stage() {
	local role=$1 guest=$2 s="$run/stage-$1" kmods=() bins=() files=()
	shift 2
	while (($#)); do
		case "$1" in
		--bin) bins+=("$2"); shift 2 ;;
		--file) files+=("$2"); shift 2 ;;
		*) kmods+=("$1"); shift ;;
		esac
	done
	mkdir -p "$s/test"
	cp "$_lab_lib/guest.sh" "$s/test/lib.sh"
	cp "$guest" "$s/test/run.sh"
	{
		printf "VT_ONLY='%s'\n" "${only//\'/\'\\\'\'}"
		[[ -t 0 ]] || cat
	} >"$s/test/config.sh"
	((${#files[@]} == 0)) || cp "${files[@]}" "$s/test/"
	if ! { vbus_initramfs_add_kmods "$s" "${kmods[@]}" &&
		vbus_initramfs_add_binary "$s" "${bins[@]}" &&
		vbus_make_initramfs "$run/$role.cpio.gz" "$s" >/dev/null; }; then
		h_fail "initramfs-$role" "could not stage it"
		finish
	fi
}

# lab_boot ROLE [--guest G] [--vectors N] [vbus_boot_guest OPTIONS] [-- QEMU ARGS]: boot
# (--reboot: the guest's reboot resets QEMU instead of ending it; --vectors:
# the ivshmem-doorbell's MSI-X vectors, default 2)
# $run/ROLE.cpio.gz in the background, serial log $lab_logs/ROLE.log, the
# request channel on the second serial port, with guest G's vbus
# transport (vbus-hostd's socket and RAM file); QEMU's pid in $run/ROLE.pid.
declare -A lab_pid lab_t0 lab_guest_of
lab_boot() {
	local role=$1 g="" opts=() qargs=() m=$mem vec=2
	shift
	while (($#)) && [[ "$1" != -- ]]; do
		case "$1" in
		--guest) g=$2; shift 2 ;;
		--vectors) vec=$2; shift 2 ;;
		--mem) m=$2; opts+=("$1" "$2"); shift 2 ;;
		--reboot) opts+=("$1"); shift ;;
		*) opts+=("$1" "$2"); shift 2 ;;
		esac
	done
	(($#)) && shift
	[[ -z "$g" ]] ||
		mapfile -t qargs < <(vbus_transport_args "/dev/shm/$tag-$g" "$m" "$run/$g.sock" "$vec")
	rm -f "$lab_logs/$role.log" "$run/$role.pid" "$run/$role.chan".*
	mkfifo "$run/$role.chan.in" "$run/$role.chan.out"
	vbus_boot_guest --initrd "$run/$role.cpio.gz" --log "$lab_logs/$role.log" --mem "$m" \
		--timeout "$timeout" "${opts[@]}" -- "${qargs[@]}" "$@" \
		-serial "pipe:$run/$role.chan" -pidfile "$run/$role.pid" >"$lab_logs/$role.boot.out" 2>&1 &
	lab_pid[$role]=$!
	lab_t0[$role]=$(vbus_now)
	lab_guest_of[$role]=$g
	_lab_bg+=($!)
}

# lab_serve [ROLE...]: answer the guests' requests (req_CMD, see the top)
# until each ROLE's QEMU has ended (default: every one booted and not yet
# served, and every one a req_ function boots meanwhile: a guest that
# reboots is booted again while its peers run on). Requests and replies
# go to $lab_logs/requests.log. lab_secs[ROLE] is how long each ran.
declare -A lab_secs
lab_serve() {
	local roles=("$@") follow=0 r line chunk alive rc fd
	local -A rfd wfd pend part
	((${#roles[@]})) || follow=1
	while :; do
		((follow)) && roles=("${!lab_pid[@]}")
		for r in "${roles[@]}"; do
			[[ -z "${rfd[$r]:-}" ]] || continue
			# read-write: the open never blocks, a dead QEMU never SIGPIPEs
			exec {fd}<>"$run/$r.chan.out"
			rfd[$r]=$fd
			exec {fd}<>"$run/$r.chan.in"
			wfd[$r]=$fd
			pend[$r]="" part[$r]=""
		done
		alive=0
		for r in "${!rfd[@]}"; do
			[[ -n "${lab_pid[$r]:-}" ]] || continue
			if ! kill -0 "${lab_pid[$r]}" 2>/dev/null; then
				rc=0
				wait "${lab_pid[$r]}" || rc=$?
				((rc == 0)) || vbus_warn "$r: vbus_boot_guest returned $rc (see $lab_logs/$r.boot.out)"
				lab_secs[$r]=$(vbus_elapsed "${lab_t0[$r]}")
				unset "lab_pid[$r]"
				continue
			fi
			alive=1
			if [[ -z "${pend[$r]}" ]]; then
				chunk=""
				if IFS= read -r -t 0.1 -u "${rfd[$r]}" chunk; then
					pend[$r]=$(tr -cd '[:print:]' <<<"${part[$r]}$chunk")
					part[$r]=""
				else
					# a timed-out read keeps what it had of a line
					part[$r]+=$chunk
				fi
			fi
			[[ -n "${pend[$r]}" ]] || continue
			# shellcheck disable=SC2034 # for the req_ functions
			lab_role=$r lab_guest=${lab_guest_of[$r]} lab_reply=""
			line=${pend[$r]}
			rc=0
			# shellcheck disable=SC2086 # the request's words are the arguments
			if declare -F "req_${line%% *}" >/dev/null; then
				"req_${line%% *}" ${line#"${line%% *}"} || rc=$?
			else
				lab_reply="unknown request '$line'" rc=1
			fi
			((rc == 2)) && continue
			pend[$r]=""
			if ((rc == 0)); then line+=" -> ok${lab_reply:+ $lab_reply}"; else line+=" -> fail $lab_reply"; fi
			printf '%s\n' "${line#* -> }" >&"${wfd[$r]}"
			printf '%s: %s\n' "$r" "$line" >>"$lab_logs/requests.log"
		done
		((alive)) || break
		if [[ -n "${lab_serve_until:-}" ]] && (($(date +%s) > lab_serve_until)); then
			vbus_log "the guest did not finish: killing QEMU"
			for r in "${!rfd[@]}"; do
				kill -9 "$(cat "$run/$r.pid" 2>/dev/null)" 2>/dev/null
			done
			lab_serve_until=
		fi
		sleep 0.1
	done
	for r in "${!rfd[@]}"; do
		fd=${rfd[$r]}
		exec {fd}>&-
		fd=${wfd[$r]}
		exec {fd}>&-
	done
}

# lab_wait_ready ROLE ERE: wait until the guest's log has a line matching
# ERE (the guest is ready for the host's part); non-zero, with the tail
# of its log, if its QEMU ended first.
lab_wait_ready() {
	local log="$lab_logs/$1.log"
	while kill -0 "${lab_pid[$1]}" 2>/dev/null; do
		[[ -f "$log" ]] && tr -d '\r' <"$log" | grep -aqE "$2" && return 0
		sleep 0.2
	done
	sed 's/^/    /' "$lab_logs/$1.boot.out"
	tr -d '\r' <"$log" | tail -n 30 | sed 's/^/    serial: /'
	vbus_err "the guest never became ready (log $log)"
	return 1
}

# lab_end ROLE SECS: give the guest up to SECS s to finish (serving its
# requests), then kill its QEMU.
lab_end() {
	local t0
	t0=$(vbus_now)
	lab_serve_until=$((${2%.*} + ${t0%.*}))
	lab_serve "$1"
	lab_serve_until=
}

# lab_ticks PID: utime+stime of the whole process (all threads) in clock
# ticks, 0 if there is none (the benches' CPU figures)
lab_ticks() {
	local st
	if [[ -z "$1" ]] || ! st=$(cat "/proc/$1/stat" 2>/dev/null); then
		echo 0
		return
	fi
	st=${st##*) }
	awk '{ print $12 + $13 }' <<<"$st"
}

# ---- for the benches ----
bench_log() { printf 'bench: %s\n' "$*"; }

# The benches' guests' extra kernel arguments (lab_boot --append). Under
# TCG the kernel does not trust the emulated TSC and times with the HPET,
# every read of which is an MMIO exit under QEMU's global lock (tens of
# microseconds when QEMU is busy): a guest that times round trips, or
# libioq's poll window in a guest (docs/devices/vbus_ipc.md, "Waiting"),
# would measure its own clock. tsc=reliable makes a read cost what
# kvm-clock's vDSO read costs under KVM.
# shellcheck disable=SC2034 # for the benches
LAB_BENCH_APPEND="tsc=reliable"

# bench_sessions ROUNDS NRUNS T...: one "ROUND T RUN" line per session:
# per round the transports T, rotated by one each round (none always
# first), each with runs 0..NRUNS-1.
bench_sessions() {
	local rounds=$1 nruns=$2 r k m
	shift 2
	local ts=("$@")
	for ((r = 1; r <= rounds; r++)); do
		for ((k = 0; k < ${#ts[@]}; k++)); do
			for ((m = 0; m < nruns; m++)); do
				echo "$r ${ts[$(((k + r - 1) % ${#ts[@]}))]} $m"
			done
		done
	done
}

# lab_need TOOL...: each must be on PATH (else the end, exit 1).
lab_need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || { vbus_err "$t not found (scripts/deps.sh installs it)"; exit 1; }
	done
}

# lab_raw DIR: DIR afresh as $raw, the bench's raw data and the lab's logs.
lab_raw() {
	raw=$1 lab_logs=$1
	rm -rf "$raw"
	mkdir -p "$raw"
}

# lab_meta KEY[=VALUE]...: a bench's meta.env: the run's facts (accel,
# cpu, smp, mem, kernel, the host's CPUs and load, QEMU, date), then
# KEY=VALUE for each; a KEY alone records $KEY.
lab_meta() {
	local a accel
	accel=$(vbus_qemu_accel)
	printf '%s\n' "accel=$accel" "cpu=$(vbus_qemu_cpu "$accel")" smp=2 "mem=$mem" \
		"kernel=$VBUS_KVER" "host_cpus=$(nproc)" \
		"host_loadavg_after=$(cut -d' ' -f1-3 /proc/loadavg)" \
		"qemu=$(qemu-system-x86_64 --version | head -n 1)" "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	for a in "$@"; do
		if [[ "$a" == *=* ]]; then printf '%s\n' "$a"; else printf '%s=%s\n' "$a" "${!a}"; fi
	done
}

# lab_results ROLE [PREFIX]: the guest's verdict into the totals.
lab_results() { vbus_add_results "$lab_logs/$1.log" "${2:-}" || true; }

# lab_run ROLE [lab_boot ARGS]: boot, serve, results (no prefix).
lab_run() {
	local role=$1
	shift
	lab_boot "$role" "$@"
	lab_serve "$role"
	lab_results "$role"
}

# lab_figures ROLE ERE: the guest's figure lines (matching ERE), indented.
lab_figures() {
	tr -d '\r' <"$lab_logs/$1.log" | grep -aoE "$2" | sed 's/^/    /' || printf '    (no figures)\n'
}

# lab_summary ROLE: one line on the guest's run, then finish.
lab_summary() {
	printf 'guest: %s s (accel=%s, %s boot, RAM %s, kernel %s); total %s s; logs in %s\n' \
		"${lab_secs[$1]:-?}" "$(vbus_qemu_accel)" "$VBUS_KBOOT" "$mem" "$VBUS_KVER" \
		"$(vbus_elapsed "$t_start")" "$out"
	finish
}
