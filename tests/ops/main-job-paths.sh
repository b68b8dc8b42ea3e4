#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The README's main job (scripts/main.sh) is not run by the test command
# (it takes a minute and a half of TCG); this keeps what it depends on from
# moving under it unnoticed: the vbus-hostd path it builds and checks is
# the one CMake builds, and every --flag it passes to a script of ours is
# one that script parses.
#   main-job-paths.sh SRC_DIR BUILD_DIR HOSTD_BINARY
src=$1 build=$2 hostd=$3
main="$src/scripts/main.sh"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# shellcheck disable=SC2016 # $cbuild is text in scripts/main.sh
rel=$(sed -n 's|^hostd="\$cbuild/\(.*\)"$|\1|p' "$main")
if [[ -z "$rel" ]]; then
	fail "no hostd=\"\$cbuild/...\" line in scripts/main.sh"
elif [[ ! "$build/$rel" -ef "$hostd" ]]; then
	fail "scripts/main.sh looks for vbus-hostd at <build>/$rel; CMake builds it at $hostd"
else
	echo "ok: scripts/main.sh finds vbus-hostd at <build>/$rel"
fi

# parses SCRIPT FLAG: a case pattern of SCRIPT's own option parsing
# ("--flag)" or "--flag |"), or an option spec ("flag:...") of its
# lab_begin/lab_parse call (tests/qemu/lib/lab.sh), or one of the options
# lab_parse gives every caller (its "specs=(...)" line)
parses() {
	local script=$src/$1 flag=$2 specs
	grep -Eq -- "(^|[[:space:]|(])${flag}[[:space:]]*[|)]" "$script" && return 0
	grep -q 'lab/lab.sh\|lib/lab.sh' "$script" || return 1
	specs=$(sed -e ':a' -e '/\\$/{N;s/\\\n//;ba}' "$script" |
		grep -E '^[[:space:]]*lab_(begin|parse) ')
	specs+=" $(grep -E '^[[:space:]]*local specs=\(' "$src/tests/qemu/lib/lab.sh")"
	grep -Eq -- "[[:space:](]${flag#--}:" <<<"$specs"
}

# "$top/SCRIPT" --a --b ... (continuation lines included): each flag must
# be parsed by SCRIPT
n=0
# shellcheck disable=SC2016 # $top is text in scripts/main.sh
while read -r script flag; do
	n=$((n + 1))
	if parses "$script" "$flag"; then
		echo "ok: $script parses $flag"
	else
		fail "scripts/main.sh passes $flag to $script, which does not parse it"
	fi
done < <(sed -e ':a' -e '/\\$/{N;s/\\\n//;ba}' "$main" |
	grep -oE '"\$top/[a-z/._-]+\.sh"[^|;&]*' |
	awk '{ s = $1; gsub(/"|\$top\//, "", s)
	       # tests/qemu/run.sh SUITE ...: the flags go to the suite
	       if (s == "tests/qemu/run.sh") s = "tests/qemu/suites/" $2 "/host.sh"
	       for (i = 2; i <= NF; i++) if ($i ~ /^--[a-z-]+$/) print s, $i }' | sort -u)
((n > 0)) || fail "found no script calls with flags in scripts/main.sh"
((fails == 0)) && echo "main-job-paths: ok ($n flags)"
exit $((fails > 0))
