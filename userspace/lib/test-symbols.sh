#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# ctest libioq_symbols: libioq.so exports exactly the public API.
#   test-symbols.sh LIBIOQ_SO LIBIOQ_MAP BUILD_DIR ABI_MAJOR ABI_MINOR
# Three lists must agree, and every difference is named:
#   map      the names in libioq.map's global: sections, with their node
#   exported nm -D --defined-only of the built libioq.so (name@@node)
#   headers  every function (not static inline) declared in the headers
#            `cmake --install` puts under include/vbus (gcc -aux-info)
# plus: SONAME is libioq.so.ABI_MAJOR and the newest map node is
# LIBIOQ_ABI_MAJOR.ABI_MINOR (docs/libioq.md).
set -euo pipefail
so=$1 map=$2 build=$3 major=$4 minor=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# map: "name node" per global name (comments stripped; local: * skipped)
sed 's,/\*.*\*/,,g' "$map" | awk '
	/^[[:space:]]*\/\*/,/\*\// { next }
	/^[[:space:]]*LIBIOQ_[0-9]+\.[0-9]+[[:space:]]*\{/ {
		node = $1; sub(/\{.*/, "", node); scope = ""; next }
	/global:/ { scope = "g"; next }
	/local:/  { scope = "l"; next }
	scope == "g" && /;/ { gsub(/[[:space:];]/, ""); if ($0 != "") print $0, node }
' | sort > "$tmp/map"
[ -s "$tmp/map" ] || { echo "FAIL: no global names parsed from $map"; exit 1; }

# exported: "name node" for every defined dynamic symbol but the node names
nm -D --defined-only "$so" | awk '$2 != "A" {
	split($3, a, "@"); node = a[length(a)]; if (node == a[1]) node = "(none)"
	print a[1], node }' | sort > "$tmp/exported"

cut -d' ' -f1 "$tmp/map" > "$tmp/map.names"
cut -d' ' -f1 "$tmp/exported" > "$tmp/exported.names"
while read -r s; do
	fail "$s is in libioq.map but libioq.so does not export it (a typo, or the function is gone: drop it from the map only with a major bump)"
done < <(comm -23 "$tmp/map.names" "$tmp/exported.names")
while read -r s; do
	fail "libioq.so exports $s, which libioq.map does not list (an internal symbol leaking: make it static or hidden)"
done < <(comm -13 "$tmp/map.names" "$tmp/exported.names")
while read -r s node; do
	want=$(awk -v s="$s" '$1 == s { print $2 }' "$tmp/map")
	[ -z "$want" ] || [ "$want" = "$node" ] ||
		fail "$s is exported as $s@$node, libioq.map puts it in $want"
done < "$tmp/exported"

# headers: what `cmake --install` really installs
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
inc=$tmp/prefix/include
hdrs=$(cd "$inc" && ls vbus/*.h)
for h in $hdrs; do echo "#include <$h>"; done > "$tmp/all.c"
gcc -std=gnu11 -fsyntax-only -aux-info "$tmp/aux" -I"$inc" "$tmp/all.c"
# "/* PATH:LINE:NC */ extern TYPE NAME (ARGS);" for each declaration
awk -v inc="$inc/" 'index($2, inc) == 1 && $4 == "extern" {
	where = substr($2, length(inc) + 1); sub(/:[^:]*$/, "", where)
	decl = $0; sub(/ \(.*/, "", decl); n = split(decl, w, /[ *]+/)
	print w[n], where }' "$tmp/aux" | sort > "$tmp/headers"
[ -s "$tmp/headers" ] || { echo "FAIL: no declarations found in $inc/vbus"; exit 1; }
cut -d' ' -f1 "$tmp/headers" | sort -u > "$tmp/headers.names"
while read -r s where; do
	grep -qx "$s" "$tmp/map.names" ||
		fail "$s is declared in the installed $where but libioq.map does not list it (add it to the newest node, LIBIOQ_$major.$minor)"
done < "$tmp/headers"
while read -r s; do
	fail "libioq.map lists $s, which no installed header declares (internal: drop it from the map, or declare it in a public header)"
done < <(comm -23 "$tmp/map.names" "$tmp/headers.names")

# SONAME and the newest node follow the ABI version
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libioq.so.$major" ] ||
	fail "SONAME is '$soname', expected libioq.so.$major"
newest=$(cut -d' ' -f2 "$tmp/map" | sort -u -V | tail -n1)
[ "$newest" = "LIBIOQ_$major.$minor" ] ||
	fail "the newest node in libioq.map is $newest, but the library is version $major.$minor (IOQ_ABI_MINOR in userspace/lib/CMakeLists.txt)"

echo "exported by $(basename "$so") ($soname):"
sed 's/ /@@/; s/^/  /' "$tmp/exported"
echo "$(wc -l < "$tmp/exported") exported, $(wc -l < "$tmp/map") in the map, $(wc -l < "$tmp/headers") declared in include/vbus; $fails failure(s)"
[ "$fails" -eq 0 ]
