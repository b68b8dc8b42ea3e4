# shellcheck shell=bash
# vbus_fetch_kernel: the Debian kernel image matching the installed headers,
# unpacked and cached under $VBUS_BUILD/qemu/kernel-$KVER/.
#
# Exports:
#   VBUS_KVER     kernel release (from the installed headers, or $KVER)
#   VBUS_KBUILD   headers build dir for `make -C $VBUS_KBUILD M=...`
#   VBUS_VMLINUX  image for `qemu -kernel`: the extracted vmlinux (PVH entry,
#                 fast) or, if PVH boot failed, the bzImage
#   VBUS_BZIMAGE  the package's bzImage (vmlinuz)
#   VBUS_KBOOT    "pvh" or "bzimage"
#   VBUS_KMODDIR  the image's lib/modules/$KVER (in-tree modules)
#   VBUS_KDIR     the cache directory

# shellcheck source=tests/qemu/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Kernel release of the installed headers; $KVER wins. Newest if several.
vbus_detect_kver() {
	if [[ -n "${KVER:-}" ]]; then
		printf '%s\n' "$KVER"
		return 0
	fi
	local d found=()
	for d in /lib/modules/*/build; do
		[[ -e "$d/Makefile" ]] && found+=("$(basename "$(dirname "$d")")")
	done
	if ((${#found[@]} == 0)); then
		for d in /usr/src/linux-headers-*-amd64; do
			[[ -e "$d/Makefile" ]] && found+=("${d#/usr/src/linux-headers-}")
		done
	fi
	if ((${#found[@]} == 0)); then
		vbus_err "no kernel headers found (install linux-headers-amd64, or set KVER)"
		return 1
	fi
	printf '%s\n' "${found[@]}" | sort -V | tail -n1
}

# Headers build directory for a release.
vbus_kbuild_dir() {
	local kver=$1
	if [[ -e "/lib/modules/$kver/build/Makefile" ]]; then
		printf '%s\n' "/lib/modules/$kver/build"
	elif [[ -e "/usr/src/linux-headers-$kver/Makefile" ]]; then
		printf '%s\n' "/usr/src/linux-headers-$kver"
	else
		vbus_err "no headers build dir for $kver"
		return 1
	fi
}

# Download linux-image-$KVER (or -unsigned), same version as the headers when
# possible, into DIR/deb and unpack it into DIR.
_vbus_download_image() {
	local kver=$1 dir=$2 hver pkg spec
	mkdir -p "$dir/deb" || return 1
	rm -f "$dir"/deb/*.deb
	# apt's _apt user must be able to write the download directory.
	chmod 0777 "$dir/deb" 2>/dev/null || true
	hver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null) || hver=
	for pkg in "linux-image-$kver" "linux-image-$kver-unsigned"; do
		for spec in ${hver:+"$pkg=$hver"} "$pkg"; do
			vbus_log "downloading $spec"
			if (cd "$dir/deb" && apt-get -q download "$spec" >/dev/null 2>"$dir/deb/apt.err"); then
				if [[ -n "$hver" && "$spec" == "$pkg" ]]; then
					vbus_warn "$pkg=$hver not available; took the archive's version (must be the same build as the headers)"
				fi
				local deb
				deb=$(ls "$dir"/deb/*.deb) || return 1
				vbus_log "unpacking $(basename "$deb")"
				dpkg-deb -x "$deb" "$dir" || return 1
				return 0
			fi
		done
	done
	vbus_err "apt-get download of linux-image-$kver failed:"
	cat "$dir/deb/apt.err" >&2
	return 1
}

# Extract the uncompressed vmlinux (ELF) from a bzImage's payload.
vbus_extract_vmlinux() {
	local bz=$1 out=$2 setup poff plen start magic
	if [[ "$(od -An -c -j 514 -N 4 "$bz" | tr -d ' ')" != "HdrS" ]]; then
		vbus_err "$bz is not a bzImage"
		return 1
	fi
	setup=$(od -An -tu1 -j 497 -N 1 "$bz" | tr -d ' ')
	((setup == 0)) && setup=4
	poff=$(od -An -tu4 -j 584 -N 4 "$bz" | tr -d ' ')
	plen=$(od -An -tu4 -j 588 -N 4 "$bz" | tr -d ' ')
	start=$(((setup + 1) * 512 + poff))
	magic=$(od -An -tx1 -j "$start" -N 6 "$bz" | tr -d ' ')
	local dec
	case "$magic" in
	fd377a585a00) dec=(xz -dc --single-stream) ;;
	1f8b*) dec=(gzip -dc) ;;
	28b52ffd*) dec=(zstd -dc) ;;
	*)
		vbus_err "unknown bzImage payload format (magic $magic)"
		return 1
		;;
	esac
	# gzip warns about the trailing size word; the ELF check below decides.
	tail -c +"$((start + 1))" "$bz" | head -c "$plen" | "${dec[@]}" >"$out.tmp" 2>/dev/null
	if [[ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" != "7f454c46" ]]; then
		rm -f "$out.tmp"
		vbus_err "payload of $bz did not decompress to an ELF image"
		return 1
	fi
	mv "$out.tmp" "$out"
}

# Boot KERNEL with no initramfs and check that it starts (it then panics on
# the missing root fs, which is expected). Returns 0 if the kernel ran.
_vbus_probe_boot() {
	local kernel=$1 log=$2 accel
	accel=$(vbus_qemu_accel)
	timeout --kill-after=5 120 qemu-system-x86_64 -accel "$accel" \
		-cpu "$(vbus_qemu_cpu "$accel")" -machine q35 -m 512M -smp 1 \
		-nodefaults -nographic -no-reboot -serial "file:$log" \
		-kernel "$kernel" -append "console=ttyS0 panic=-1 loglevel=7" \
		</dev/null >"$log.qemu" 2>&1 || true
	grep -aq 'Linux version' "$log"
}

vbus_fetch_kernel() {
	local kver dir bz lock
	kver=$(vbus_detect_kver) || return 1
	dir="$VBUS_BUILD/qemu/kernel-$kver"
	mkdir -p "$dir" || return 1
	VBUS_KVER=$kver
	VBUS_KDIR=$dir
	VBUS_KBUILD=$(vbus_kbuild_dir "$kver") || return 1
	export VBUS_KVER VBUS_KDIR VBUS_KBUILD

	# One fetch at a time per kernel (parallel test scripts).
	exec {lock}>"$dir/.lock"
	flock "$lock"
	_vbus_fetch_kernel_locked "$kver" "$dir"
	local rc=$?
	exec {lock}>&-
	return "$rc"
}

_vbus_fetch_kernel_locked() {
	local kver=$1 dir=$2 bz t0
	if [[ ! -e "$dir/.unpacked" ]]; then
		t0=$(vbus_now)
		_vbus_download_image "$kver" "$dir" || return 1
		touch "$dir/.unpacked"
		vbus_log "kernel image fetched in $(vbus_elapsed "$t0") s"
	fi
	bz="$dir/boot/vmlinuz-$kver"
	if [[ ! -f "$bz" ]]; then
		vbus_err "$bz missing from the unpacked package (rm -rf $dir to refetch)"
		return 1
	fi
	VBUS_BZIMAGE=$bz
	if [[ -d "$dir/lib/modules/$kver" ]]; then
		VBUS_KMODDIR="$dir/lib/modules/$kver"
	else
		VBUS_KMODDIR="$dir/usr/lib/modules/$kver"
	fi
	if [[ ! -f "$dir/vmlinux" ]]; then
		t0=$(vbus_now)
		vbus_extract_vmlinux "$bz" "$dir/vmlinux" || return 1
		vbus_log "extracted vmlinux in $(vbus_elapsed "$t0") s"
	fi
	if [[ ! -e "$dir/.pvh-ok" && ! -e "$dir/.pvh-failed" ]]; then
		t0=$(vbus_now)
		if _vbus_probe_boot "$dir/vmlinux" "$dir/pvh-probe.log"; then
			touch "$dir/.pvh-ok"
			vbus_log "PVH boot of vmlinux works (probe $(vbus_elapsed "$t0") s)"
		else
			touch "$dir/.pvh-failed"
		fi
	fi
	if [[ -e "$dir/.pvh-ok" ]]; then
		VBUS_VMLINUX="$dir/vmlinux"
		VBUS_KBOOT=pvh
	else
		vbus_warn "PVH boot of the extracted vmlinux failed (see $dir/pvh-probe.log*; rm $dir/.pvh-failed to retry);" \
			"falling back to the bzImage (slower: XZ decompression in the guest)"
		VBUS_VMLINUX=$bz
		VBUS_KBOOT=bzimage
	fi
	export VBUS_VMLINUX VBUS_BZIMAGE VBUS_KBOOT VBUS_KMODDIR
	vbus_log "kernel $VBUS_KVER ($VBUS_KBOOT): $VBUS_VMLINUX"
	vbus_log "modules: $VBUS_KMODDIR"
	vbus_log "headers: $VBUS_KBUILD"
}
