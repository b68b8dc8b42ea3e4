# shellcheck shell=bash
# vbus_boot_guest: boot the cached kernel with an initramfs under QEMU.
#
#   vbus_boot_guest --initrd FILE --log FILE [--timeout SEC] [--mem SIZE]
#                   [--smp N] [--machine TYPE] [--kernel IMAGE]
#                   [--append "extra kernel cmdline"]... [--reboot]
#                   [-- extra QEMU args...]
#
# Defaults: --timeout 300, --mem 1G, --smp 2, --machine q35,
# --kernel $VBUS_VMLINUX (vbus_fetch_kernel); each --append adds to the
# command line (of a parameter given twice, the kernel takes the later).
# With VBUS_SWIOTLB=1 (the suites' --swiotlb) the guest bounces every DMA
# mapping: swiotlb=65536,force (128 MiB of bounce buffers: an RXSG venet
# keeps 17 MiB posted). The serial console goes to the
# log (overwritten). The guest's reboot ends QEMU (-no-reboot) unless
# --reboot: then it resets the machine and the same kernel boots again
# (warm-reboot checks; a panic reboots too, the log shows it). Extra QEMU
# args are passed through as given; repeated
# -machine options are merged by QEMU, so `-machine q35,memory-backend=ram`
# works (give the backend the same size as --mem).
# Accelerator: see vbus_qemu_accel (common.sh); env VBUS_QEMU_ACCEL/_CPU.
#
# Returns 0 when QEMU ran to its end (that is no verdict: QEMU exits 0 even
# if the guest panicked; run vbus_check_results on the log), 1 on a timeout
# (a "VBUS-HARNESS TIMEOUT" line is appended to the log) or a QEMU error.
# Under `set -e`, call it as `vbus_boot_guest ... || rc=$?`.

# shellcheck source=tests/qemu/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The tests boot with SLUB's debugging (red zones, poisoning, owner
# tracking), so that a driver's overflow or use after free shows in the log.
# The benchmarks set VBUS_BOOT_DEBUG=0 before sourcing this: owner tracking
# unwinds the stack on every allocation and free, which is not the kernel a
# user runs, and it weighs most on whichever driver allocates more.
# panic_on_warn: nothing may WARN (docs/threat-model.md: guests run with
# it), so every suite's guest does, and a WARN fails the run at once.
VBUS_BASE_CMDLINE="console=ttyS0 panic=-1 oops=panic panic_on_warn=1 quiet loglevel=4"
[[ "${VBUS_BOOT_DEBUG:-1}" == 0 ]] || VBUS_BASE_CMDLINE+=" slub_debug=FZPU"

vbus_boot_guest() {
	local initrd="" log="" timeout=300 mem=1G smp=2 machine=q35
	local kernel="${VBUS_VMLINUX:-}" append="" extra=() noreboot=(-no-reboot)
	while (($#)); do
		case "$1" in
		--initrd) initrd=$2; shift 2 ;;
		--log) log=$2; shift 2 ;;
		--timeout) timeout=$2; shift 2 ;;
		--mem) mem=$2; shift 2 ;;
		--smp) smp=$2; shift 2 ;;
		--machine) machine=$2; shift 2 ;;
		--kernel) kernel=$2; shift 2 ;;
		--append) append="${append:+$append }$2"; shift 2 ;;
		--reboot) noreboot=(); shift ;;
		--) shift; extra=("$@"); break ;;
		*) vbus_err "vbus_boot_guest: unknown argument $1"; return 1 ;;
		esac
	done
	[[ "${VBUS_SWIOTLB:-0}" == 0 ]] || append="swiotlb=65536,force${append:+ $append}"
	if [[ -z "$initrd" || -z "$log" ]]; then
		vbus_err "vbus_boot_guest: --initrd and --log are required"
		return 1
	fi
	if [[ -z "$kernel" || ! -f "$kernel" ]]; then
		vbus_err "vbus_boot_guest: no kernel image (call vbus_fetch_kernel or pass --kernel)"
		return 1
	fi
	local accel cpu t0 rc=0 secs
	accel=$(vbus_qemu_accel)
	cpu=$(vbus_qemu_cpu "$accel")
	mkdir -p "$(dirname "$log")" || return 1
	: >"$log"
	vbus_log "boot: accel=$accel cpu=$cpu machine=$machine smp=$smp mem=$mem timeout=${timeout}s kernel=$(basename "$kernel")${append:+ append=\"$append\"} log=$log"
	t0=$(vbus_now)
	timeout --kill-after=10 "$timeout" qemu-system-x86_64 \
		-accel "$accel" -cpu "$cpu" -machine "$machine" -smp "$smp" -m "$mem" \
		-nodefaults -nographic "${noreboot[@]}" -serial "file:$log" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "$VBUS_BASE_CMDLINE${append:+ $append}" \
		"${extra[@]}" </dev/null || rc=$?
	secs=$(vbus_elapsed "$t0")
	case "$rc" in
	0)
		vbus_log "guest finished: boot-to-result ${secs} s (accel=$accel)"
		return 0
		;;
	124 | 137)
		printf '\nVBUS-HARNESS TIMEOUT guest killed after %s s\n' "$timeout" >>"$log"
		vbus_err "TIMEOUT: guest did not finish within ${timeout} s (accel=$accel); killed. Log: $log"
		return 1
		;;
	*)
		vbus_err "qemu-system-x86_64 failed (exit $rc) after ${secs} s (accel=$accel). Log: $log"
		return 1
		;;
	esac
}
