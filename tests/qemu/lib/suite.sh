# shellcheck shell=bash
# What every tests/qemu suite sources: the kernel fetch, the initramfs,
# the boot, the results and vbus-hostd helpers. Source it from a script
# that has set $here to its own directory.
_vbus_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/qemu/lib/kernel.sh
source "$_vbus_lib/kernel.sh"
# shellcheck source=tests/qemu/lib/initramfs.sh
source "$_vbus_lib/initramfs.sh"
# shellcheck source=tests/qemu/lib/boot.sh
source "$_vbus_lib/boot.sh"
# shellcheck source=tests/qemu/lib/results.sh
source "$_vbus_lib/results.sh"
# shellcheck source=tests/qemu/lib/hostd.sh
source "$_vbus_lib/hostd.sh"
