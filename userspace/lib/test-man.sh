#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# ctest libioq_man: the section-3 pages of libioq (userspace/lib/man).
#   test-man.sh MAN_DIR LIBIOQ_MAP BUILD_DIR
# - every page that is not a .so link passes mandoc -T lint -W warning;
# - every .so link names a real page whose NAME section lists the link;
# - every name a page lists in NAME has a file (a page or a link);
# - every symbol libioq.map exports has a page: a new API function without
#   one fails here, by name;
# - `cmake --install` puts all of them in man3, and the links render.
set -u
man=${1:?usage: test-man.sh MAN_DIR LIBIOQ_MAP BUILD_DIR}
map=${2:?} build=${3:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v mandoc >/dev/null || { echo "FAIL: mandoc is missing (scripts/deps.sh)"; exit 1; }
T=$(mktemp -d /tmp/libioq-man.XXXXXX)
trap 'rm -rf "$T"' EXIT

pages=() links=0
for f in "$man"/*.3; do
	n=$(basename "$f" .3)
	if target=$(sed -n 's|^\.so man3/\(.*\)\.3$|\1|p' "$f") && [ -n "$target" ]; then
		links=$((links + 1))
		if [ ! -f "$man/$target.3" ] || grep -q '^\.so' "$man/$target.3"; then
			fail "$n.3 links to $target.3, which is not a page"
		elif ! grep -qx "\.Nm $n\( ,\)\?" "$man/$target.3"; then
			fail "$n.3 links to $target.3, whose NAME does not list $n"
		fi
		continue
	fi
	pages+=("$n")
	mandoc -T lint -W warning "$f" || fail "mandoc -T lint: $n.3"
	while read -r name; do
		[ -f "$man/$name.3" ] || fail "$n.3 lists $name in NAME but there is no $name.3 (.so man3/$n.3)"
	done < <(awk '/^\.Nm /{print $2}' "$f")
done

while read -r s; do
	[ -f "$man/$s.3" ] || fail "libioq.map exports $s but there is no man page $s.3 (add it to the NAME and SYNOPSIS of its family's page, and a .so link)"
done < <(sed 's,/\*.*\*/,,g' "$map" | awk '/global:/{g=1;next} /local:/{g=0} g && /;/{gsub(/[[:space:];]/,""); if ($0!="") print}')

cmake --install "$build" --prefix "$T/p" > "$T/install.log" 2>&1 ||
	{ echo "FAIL: cmake --install:"; cat "$T/install.log"; exit 1; }
inst=$(find "$T/p" -type d -path '*/man/man3' | head -n1)
if [ -z "$inst" ]; then
	fail "cmake --install put no man3 directory"
else
	for f in "$man"/*.3; do
		cmp -s "$f" "$inst/$(basename "$f")" || fail "$(basename "$f") not installed in ${inst#"$T"/p/}"
	done
	(cd "$inst/.." && mandoc -T utf8 man3/ioq_iter_pop.3) | grep -q "ioq_iter_pop" ||
		fail "the installed link ioq_iter_pop.3 does not render"
fi
echo "${#pages[@]} pages, $links links; $fails failure(s)"
[ $fails -eq 0 ]
