# shellcheck shell=bash
# Guest initramfs: busybox-static + an /init that runs the caller's test.
#
#   vbus_make_initramfs OUT.cpio.gz STAGING
#       STAGING is the caller's throw-away tree; it must hold test/run.sh.
#       Adds bin/busybox and /init to it and packs it (newc, gzip, owner 0:0).
#   vbus_initramfs_add_kmods STAGING MODULE...
#       MODULE is a module name looked up in $VBUS_KMODDIR (tun, virtio_net)
#       or a path to a .ko (ours). Copies it and, recursively, the modules in
#       its .modinfo depends= to STAGING/lib/modules/vbus/NAME.ko (decompressed),
#       writes NAME.deps (its direct deps) and appends to `order` (deps first).
#       In the guest: vt_kmod_load NAME [params] (lib/guest.sh).
#   vbus_initramfs_add_binary STAGING /path/to/binary...
#       Copies a dynamically linked host binary, the libraries ldd lists and
#       the dynamic loader, each at its own path.

# shellcheck source=tests/qemu/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

: "${VBUS_BUSYBOX:=/bin/busybox}"

# The guest's /init. Kept free of marker strings: a FAIL is only emitted
# if run.sh exits non-zero.
_vbus_init_script() {
	cat <<'INIT'
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /bin /sbin /usr/bin /usr/sbin /root
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
exec </dev/console >/dev/console 2>&1
# Panic (and, with -no-reboot, end QEMU) on an oops; show KERN_WARNING and
# worse on the console so WARN() splats reach the serial log.
echo 1 >/proc/sys/kernel/panic_on_oops
echo -1 >/proc/sys/kernel/panic
echo 5 >/proc/sys/kernel/printk
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
hostname vbus-guest
echo "vbus-init: running /test/run.sh"
cd /test && sh /test/run.sh
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "VBUS-TEST FAIL run.sh exit-status-$rc"
fi
echo "vbus-init: run.sh finished (status $rc), powering off"
sync
poweroff -f
INIT
}

vbus_make_initramfs() {
	local out=$1 staging=$2 t0
	if [[ ! -f "$staging/test/run.sh" ]]; then
		vbus_err "vbus_make_initramfs: $staging/test/run.sh missing"
		return 1
	fi
	if ! file -L "$VBUS_BUSYBOX" 2>/dev/null | grep -q 'statically linked'; then
		vbus_err "$VBUS_BUSYBOX is not a static busybox (apt-get install busybox-static)"
		return 1
	fi
	t0=$(vbus_now)
	mkdir -p "$staging"/{bin,dev,proc,sys,tmp,run,root} "$(dirname "$out")" || return 1
	cp "$VBUS_BUSYBOX" "$staging/bin/busybox" || return 1
	_vbus_init_script >"$staging/init" || return 1
	chmod 0755 "$staging/init" "$staging/bin/busybox"
	# /dev/console for the kernel's initial console (devtmpfs replaces it).
	[[ -e "$staging/dev/console" ]] || mknod -m 600 "$staging/dev/console" c 5 1 2>/dev/null || true
	(cd "$staging" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet | gzip -1 >"$out.tmp") || return 1
	mv "$out.tmp" "$out" || return 1
	vbus_log "initramfs $out ($(du -h "$out" | cut -f1), $(vbus_elapsed "$t0") s)"
}

# Module name of a .ko path: basename without .ko[.xz|.zst|.gz], '-' -> '_'.
_vbus_kmod_name() {
	local n
	n=$(basename "$1")
	n=${n%%.ko*}
	printf '%s\n' "${n//-/_}"
}

# Path of in-tree module NAME in $VBUS_KMODDIR.
_vbus_kmod_find() {
	local name=$1 f
	if [[ -z "${VBUS_KMODDIR:-}" || ! -d "$VBUS_KMODDIR" ]]; then
		vbus_err "VBUS_KMODDIR unset: call vbus_fetch_kernel first"
		return 1
	fi
	# by file name first (- and _ are the same in module names): one
	# find, no fork per module file (minutes on a loaded machine)
	f=$(find "$VBUS_KMODDIR" \( -name "$name.ko*" -o -name "${name//_/-}.ko*" \) \
		-print -quit 2>/dev/null)
	[[ -n "$f" ]] && { printf '%s\n' "$f"; return 0; }
	while IFS= read -r -d '' f; do
		if [[ "$(_vbus_kmod_name "$f")" == "$name" ]]; then
			printf '%s\n' "$f"
			return 0
		fi
	done < <(find "$VBUS_KMODDIR" -name '*.ko*' -print0)
	return 1
}

# Decompress/copy module SRC to DST (.ko).
_vbus_kmod_copy() {
	local src=$1 dst=$2
	case "$src" in
	*.ko.xz) xz -dc "$src" >"$dst" ;;
	*.ko.zst) zstd -qdc "$src" >"$dst" ;;
	*.ko.gz) gzip -dc "$src" >"$dst" ;;
	*) cp "$src" "$dst" ;;
	esac
}

# depends= of a module file (comma list), via kmod's modinfo or objcopy.
_vbus_kmod_depends() {
	local f=$1
	if command -v modinfo >/dev/null; then
		modinfo -F depends "$f"
	else
		objcopy -O binary --only-section=.modinfo "$f" /dev/stdout |
			tr '\0' '\n' | sed -n 's/^depends=//p'
	fi
}

_vbus_kmod_add_one() {
	local dir=$1 spec=$2 name src deps d
	if [[ "$spec" == */* || "$spec" == *.ko* ]]; then
		src=$spec
		[[ -f "$src" ]] || { vbus_err "module file $src not found"; return 1; }
	else
		name=${spec//-/_}
		[[ -f "$dir/$name.ko" ]] && return 0
		if ! src=$(_vbus_kmod_find "$name"); then
			if grep -q "/${name//_/[_-]}\.ko\$" "$VBUS_KMODDIR/modules.builtin" 2>/dev/null; then
				vbus_log "module $name is built into the guest kernel"
				return 0
			fi
			vbus_err "module $name not found in $VBUS_KMODDIR"
			return 1
		fi
	fi
	name=$(_vbus_kmod_name "$src")
	_vbus_kmod_copy "$src" "$dir/$name.ko" || return 1
	deps=$(_vbus_kmod_depends "$dir/$name.ko") || return 1
	deps=${deps//,/ }
	printf '%s\n' "$deps" >"$dir/$name.deps"
	for d in $deps; do
		_vbus_kmod_add_one "$dir" "$d" || return 1
	done
	grep -qx "$name" "$dir/order" 2>/dev/null || printf '%s\n' "$name" >>"$dir/order"
}

vbus_initramfs_add_kmods() {
	local staging=$1 dir m
	shift
	dir="$staging/lib/modules/vbus"
	mkdir -p "$dir" || return 1
	touch "$dir/order"
	for m in "$@"; do
		_vbus_kmod_add_one "$dir" "$m" || return 1
	done
}

vbus_initramfs_add_binary() {
	local staging=$1 bin f
	shift
	for bin in "$@"; do
		[[ -x "$bin" ]] || { vbus_err "$bin: not an executable"; return 1; }
		mkdir -p "$staging$(dirname "$bin")" || return 1
		cp -L "$bin" "$staging$bin" || return 1
		# "libx.so => /path (0x..)" and "/lib64/ld-linux-x86-64.so.2 (0x..)"
		while IFS= read -r f; do
			[[ -n "$f" && -e "$f" ]] || continue
			mkdir -p "$staging$(dirname "$f")" || return 1
			cp -L "$f" "$staging$f" || return 1
		done < <(ldd "$bin" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
	done
}
