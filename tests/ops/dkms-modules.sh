#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# dkms.conf's module list (name and build directory of each) must be the
# set of modules the Kbuild files build less the test modules (the top
# Kbuild's VBUS_TEST_SUBDIRS: `make modules` builds them, the package does
# not ship them), and its PACKAGE_VERSION the project's version: whoever
# adds, renames or moves a module is told here.
#
#   tests/ops/dkms-modules.sh [TOP]
#       the Kbuild side from make evaluating the Kbuild files themselves
#       (conditionals, VBUS_SUBDIRS, VBUS_TEST_MODULES=n as dkms.conf
#       builds; no kernel tree needed); also the tree scripts/dkms-source.sh
#       stages: no test module directory, and its Kbuild files build the
#       same list; ctest ops_dkms_modules
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

# kbuild_objs DIR [VAR=VALUE...]: obj-m of DIR/Kbuild as make sees it
# (src = DIR), with those variables on make's command line
kbuild_objs() {
	local dir=$1
	shift
	# shellcheck disable=SC2016 # make syntax, for make
	printf 'src := %s\ninclude %s/Kbuild\n$(info $(obj-m))\nall: ;@:\n' "$dir" "$dir" |
		make -s --no-print-directory -f - all "$@"
}
# kbuild_walk DIR REL [VAR=VALUE...]: "name dir" for every module under DIR
kbuild_walk() {
	local dir=$1 rel=$2 o
	shift 2
	for o in $(kbuild_objs "$dir" "$@"); do
		case "$o" in
		*/) kbuild_walk "$dir/${o%/}" "${rel:+$rel/}${o%/}" "$@" ;;
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
	what="the Kbuild files build, test modules left out"
	kbuild_walk "$top" "" VBUS_TEST_MODULES=n | sort >"$tmp/kbuild"
fi

rc=0
if ! diff -q "$tmp/dkms" "$tmp/kbuild" >/dev/null; then
	echo "FAIL: dkms.conf's modules differ from what $what (name directory):"
	diff -u --label dkms.conf --label Kbuild "$tmp/dkms" "$tmp/kbuild" | tail -n +3
	echo "(edit the list at the top of dkms.conf; test modules go in Kbuild's VBUS_TEST_SUBDIRS)"
	rc=1
else
	echo "ok: dkms.conf lists the $(wc -l <"$tmp/dkms") modules $what:" \
		"$(cut -d' ' -f1 "$tmp/dkms" | tr '\n' ' ')"
fi

if [[ $# -lt 3 ]]; then
	# what `make modules` builds on top: the test modules, not shipped
	kbuild_walk "$top" "" | sort | comm -13 "$tmp/kbuild" - >"$tmp/test"
	if [[ -s "$tmp/test" ]]; then
		echo "ok: test modules, built by make modules, not shipped:" \
			"$(cut -d' ' -f1 "$tmp/test" | tr '\n' ' ')"
	else
		echo "FAIL: make modules builds no test module (Kbuild VBUS_TEST_SUBDIRS)"
		rc=1
	fi
	# the staged DKMS source: none of their directories, the same list
	"$top/scripts/dkms-source.sh" "$tmp/stage" >/dev/null
	while read -r _ d; do
		if [[ -e "$tmp/stage/$d" ]]; then
			echo "FAIL: scripts/dkms-source.sh ships the test module directory $d"
			rc=1
		fi
	done <"$tmp/test"
	if [[ -e "$tmp/stage/tests" ]]; then
		echo "FAIL: scripts/dkms-source.sh ships tests/"
		rc=1
	fi
	kbuild_walk "$tmp/stage" "" VBUS_TEST_MODULES=n | sort >"$tmp/staged"
	if diff -q "$tmp/dkms" "$tmp/staged" >/dev/null; then
		echo "ok: the staged DKMS source builds the same modules, no test sources"
	else
		echo "FAIL: the tree scripts/dkms-source.sh stages builds other modules:"
		diff -u --label dkms.conf --label staged "$tmp/dkms" "$tmp/staged" | tail -n +3
		rc=1
	fi
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
