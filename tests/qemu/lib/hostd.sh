# shellcheck shell=bash
# vbus-hostd for the QEMU tests and the bench: build it, stop it.

# vbus_build_hostd CBUILD LOG: configure + build the vbus-hostd target in
# CBUILD (output to LOG); prints the binary's path. Non-zero on failure.
vbus_build_hostd() {
	local cbuild=$1 log=$2 top
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
	{ cmake -S "$top" -B "$cbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		cmake --build "$cbuild" --target vbus-hostd -j"$(nproc)"; } \
		>"$log" 2>&1 || return 1
	vbus_find_hostd "$cbuild"
}

# vbus_transport_args RAMFILE SIZE SOCK [VECTORS]: the QEMU arguments of
# the vbus transport, one per line (for mapfile): guest RAM shared through
# RAMFILE (SIZE, QEMU syntax; must equal -m and vbus-hostd's size=) and an
# ivshmem-doorbell whose chardev is vbus-hostd's guest socket SOCK, with
# VECTORS MSI-X vectors (default 2; above 2: per-queue vectors, when
# vbus-hostd's vectors= says the same, docs/transport.md).
vbus_transport_args() {
	printf '%s\n' -object "memory-backend-file,id=ram,size=$2,mem-path=$1,share=on" \
		-machine q35,memory-backend=ram \
		-chardev "socket,id=vbus0,path=$3" \
		-device "ivshmem-doorbell,chardev=vbus0,vectors=${4:-2}"
}

# vbus_find_hostd CBUILD: the vbus-hostd binary under CBUILD, or non-zero.
# The newest one: a build tree that outlived a move of the sources keeps
# the old binary where it was.
vbus_find_hostd() {
	local bin
	bin=$(find "$1" -type f -name vbus-hostd -perm -u+x -printf '%T@ %p\n' 2>/dev/null |
		sort -rn | head -n 1 | cut -d' ' -f2-)
	[[ -n "$bin" ]] && echo "$bin"
}

# vbus_stop_pid PID: SIGTERM, up to 5 s for a clean exit (it removes its
# sockets), then SIGKILL. Quiet when PID is empty or gone.
vbus_stop_pid() {
	local pid=$1
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.5
	done
	kill -9 "$pid" 2>/dev/null || true
}

# vbus_build_stack SUBDIRS OUT CBUILD: `make modules` for vbus_core plus
# SUBDIRS (logs OUT/build-modules.log), then vbus-hostd in CBUILD (logs
# OUT/build-userspace.log). On failure prints the log's tail and returns 1
# with the failed step's name (build-modules / build-userspace) on stdout.
vbus_build_stack() {
	local subdirs=$1 out=$2 cbuild=$3 top t0
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
	t0=$(vbus_now)
	if ! make -C "$top" modules KVER="$VBUS_KVER" VBUS_SUBDIRS="$subdirs" \
		>"$out/build-modules.log" 2>&1; then
		tail -n 40 "$out/build-modules.log" | sed 's/^/    /' >&2
		echo build-modules
		return 1
	fi
	vbus_log "make modules: $(vbus_elapsed "$t0") s" >&2
	t0=$(vbus_now)
	if ! vbus_build_hostd "$cbuild" "$out/build-userspace.log" >/dev/null; then
		tail -n 40 "$out/build-userspace.log" | sed 's/^/    /' >&2
		echo build-userspace
		return 1
	fi
	vbus_log "cmake vbus-hostd: $(vbus_elapsed "$t0") s" >&2
}
