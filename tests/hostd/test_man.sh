#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vbus-hostd(8): mandoc finds nothing at warning level or above in it,
# and `cmake --install` puts it (and the daemon) where man looks.
#   test_man.sh SOURCE_MAN_PAGE BUILD_DIR
set -u
page=${1:?usage: test_man.sh vbus-hostd.8 build-dir}
build=${2:?usage: test_man.sh vbus-hostd.8 build-dir}
T=$(mktemp -d /tmp/vbus-hostd-man.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0

command -v mandoc >/dev/null || { echo "FAIL: mandoc is missing (scripts/deps.sh)"; exit 1; }
if mandoc -T lint -W warning "$page"; then
	echo "ok: mandoc -T lint -W warning $page"
else
	echo "FAIL: mandoc -T lint found warnings or errors"; fails=$((fails + 1))
fi
if ! cmake --install "$build" --prefix "$T" >"$T/install.log" 2>&1; then
	echo "FAIL: cmake --install:"; sed 's/^/    /' "$T/install.log"; exit 1
fi
inst=$(find "$T" -path '*/man8/vbus-hostd.8')
if [ -z "$inst" ] || ! cmp -s "$inst" "$page"; then
	echo "FAIL: cmake --install did not install vbus-hostd.8 under man8"
	fails=$((fails + 1))
elif ! mandoc -T utf8 "$inst" | grep -q "vbus-hostd ctl"; then
	echo "FAIL: the installed page does not render"; fails=$((fails + 1))
else
	echo "ok: installed as ${inst#"$T"/}"
fi
[ -x "$T/bin/vbus-hostd" ] || { echo "FAIL: vbus-hostd not installed"; fails=$((fails + 1)); }
echo "$fails failure(s)"
[ $fails -eq 0 ]
