# shellcheck shell=bash
# Shared helpers of the vbus QEMU harness: paths, logging, timing, accelerator.
# Sourced by the other lib/*.sh files. Sets no shell options; every function
# checks its own errors, so it is safe under the callers' `set -euo pipefail`
# and also inside `if`/`||` (where errexit does not apply).

[[ -n "${_VBUS_COMMON_SH:-}" ]] && return 0
_VBUS_COMMON_SH=1

VBUS_QEMU_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The repository top (git work tree, else three levels above this file).
vbus_repo_top() {
	local top
	if top=$(git -C "$VBUS_QEMU_LIB" rev-parse --show-toplevel 2>/dev/null); then
		printf '%s\n' "$top"
	else
		(cd "$VBUS_QEMU_LIB/../../.." && pwd)
	fi
}

# Build products (kernel download, initramfs, logs). git-ignored.
: "${VBUS_BUILD:=$(vbus_repo_top)/build}"
export VBUS_BUILD

vbus_log() { printf 'vbus-qemu: %s\n' "$*"; }
vbus_warn() { printf 'vbus-qemu: WARNING: %s\n' "$*" >&2; }
vbus_err() { printf 'vbus-qemu: ERROR: %s\n' "$*" >&2; }

# Wall-clock timestamp in seconds (with fractions) and elapsed time since one.
vbus_now() { date +%s.%N; }
vbus_elapsed() { awk -v a="$1" -v b="$(vbus_now)" 'BEGIN { printf "%.1f", b - a }'; }

# Accelerator for QEMU: $VBUS_QEMU_ACCEL if set (kvm, tcg, ...), else kvm only
# when it is hardware KVM (kvm_intel / kvm_amd), else tcg. /dev/kvm may be PVM
# (kvm_pvm), which cannot run a stock guest kernel.
vbus_qemu_accel() {
	if [[ -n "${VBUS_QEMU_ACCEL:-}" ]]; then
		printf '%s\n' "$VBUS_QEMU_ACCEL"
		return 0
	fi
	local m hw=0
	for m in kvm_intel kvm_amd; do
		if [[ -d /sys/module/$m ]] ||
			{ [[ -r /proc/modules ]] && grep -q "^$m " /proc/modules; }; then
			hw=1
		fi
	done
	if ((hw)) && [[ -r /dev/kvm && -w /dev/kvm ]]; then
		printf 'kvm\n'
	else
		printf 'tcg\n'
	fi
}

# CPU model for an accelerator: $VBUS_QEMU_CPU, else host (kvm) / qemu64 (tcg;
# ~10% faster to boot under TCG than "max").
vbus_qemu_cpu() {
	if [[ -n "${VBUS_QEMU_CPU:-}" ]]; then
		printf '%s\n' "$VBUS_QEMU_CPU"
	elif [[ "$1" == kvm* ]]; then
		printf 'host\n'
	else
		printf 'qemu64\n'
	fi
}
