#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# dkms.conf's module list (name and build directory of each) must be the
# set of modules the Kbuild files build, and its PACKAGE_VERSION the
# project's version: whoever adds, renames or moves a module is told here.
#
#   tests/ops/dkms-modules.sh [TOP]
#       the Kbuild side from make evaluating the Kbuild files themselves
#       (conditionals, wildcards, VBUS_SUBDIRS; no kernel tree needed);
#       ctest ops_dkms_modules
#   tests/ops/dkms-modules.sh TOP BUILD_DIR KO_LIST
#       the Kbuild side from a real build: KO_LIST holds the path of each
#       .ko built under BUILD_DIR (the dkms QEMU suite passes DKMS's own)
#
# Prints both lists on a mismatch; exits 1 then.
set -euo pipefail
top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "name dir" for each module dkms.conf lists
# shellcheck disable=SC2034 # read by dkms.conf
( kernelver=x kernel_source_dir=x
  # shellcheck source=/dev/null
  . "$top/dkms.conf"
  for i in "${!BUILT_MODULE_NAME[@]}"; do
	echo "${BUILT_MODULE_NAME[i]} ${BUILT_MODULE_LOCATION[i]:-.}"
  done ) | sed 's|/$||; s| \./| |' | sort >"$tmp/dkms"

# kbuild_objs DIR: obj-m of DIR/Kbuild as make sees it (src = DIR)
kbuild_objs() {
	# shellcheck disable=SC2016 # make syntax, for make
	printf 'src := %s\ninclude %s/Kbuild\n$(info $(obj-m))\nall: ;@:\n' "$1" "$1" |
		make -s --no-print-directory -f - all
}
# kbuild_walk DIR REL: "name dir" for every module under DIR
kbuild_walk() {
	local dir=$1 rel=$2 o
	for o in $(kbuild_objs "$dir"); do
		case "$o" in
		*/) kbuild_walk "$dir/${o%/}" "${rel:+$rel/}${o%/}" ;;
		*.o) echo "${o%.o} ${rel:-.}" ;;
		esac
	done
}

if [[ $# -ge 3 ]]; then
	build=${2%/}	# DKMS's build directory is gone after the build: no cd
	what="built in $build"
	sed "s|^$build/||" "$3" | while read -r ko; do
		d=$(dirname "$ko")
		echo "$(basename "$ko" .ko) $d"
	done | sort -u >"$tmp/kbuild"
else
	what="the Kbuild files build"
	kbuild_walk "$top" "" | sort >"$tmp/kbuild"
fi

rc=0
if ! diff -q "$tmp/dkms" "$tmp/kbuild" >/dev/null; then
	echo "FAIL: dkms.conf's modules differ from what $what (name directory):"
	diff -u --label dkms.conf --label Kbuild "$tmp/dkms" "$tmp/kbuild" | tail -n +3
	echo "(edit the list at the top of dkms.conf)"
	rc=1
else
	echo "ok: dkms.conf lists the $(wc -l <"$tmp/dkms") modules $what:" \
		"$(cut -d' ' -f1 "$tmp/dkms" | tr '\n' ' ')"
fi
pv=$(sed -n 's/^PACKAGE_VERSION=//p' "$top/dkms.conf")
cv=$(sed -n 's/^project(vbus VERSION \([0-9.]*\).*/\1/p' "$top/CMakeLists.txt")
if [[ -n "$pv" && "$pv" == "$cv" ]]; then
	echo "ok: PACKAGE_VERSION $pv is the project version"
else
	echo "FAIL: dkms.conf PACKAGE_VERSION '$pv' but CMakeLists.txt project VERSION '$cv'"
	rc=1
fi
exit $rc
