#!/usr/bin/env bash
# ctest abi.*: compile abi_dump.c to assembly for -m64 and -m32 (and with
# clang when it is installed), pull out the "# @@" lines it emits, and
# require identical dumps. Nothing is executed, so it also holds on a host
# kernel without i386 binary support. Every build uses the
# C11-atomics platform (liburcu's headers here are 64-bit only) and also
# re-checks the headers' static asserts for that ABI.
set -euo pipefail
cc=$1 src=$2 out=$3
mkdir -p "$out"
flags=(-std=gnu11 -Wall -Wextra -Werror -DVBUS_PLATFORM_C11_ATOMICS
       -I"$src/core/include" -I"$src/userspace/lib/include")

build() {	# name compiler -mXX
	"$2" "${flags[@]}" "$3" -S -o "$out/abi_dump.$1.s" "$src/tests/abi/abi_dump.c"
	# "$N" is an immediate; i386 prints those above 2^31 negative
	perl -ne 'next unless s/^\s*# @@ //;
		s/\$(-?\d+)/$1 < 0 ? $1 + 4294967296 : $1/ge; print' \
		"$out/abi_dump.$1.s" > "$out/abi.$1.txt"
	# a dump that lost its lines would compare equal to another empty one
	if (($(grep -c ' off ' "$out/abi.$1.txt") < 100)); then
		echo "abi: $1: too few fields in the dump (compiler output format?)"
		exit 1
	fi
}

build m64 "$cc" -m64
build m32 "$cc" -m32
runs=(m32)
for clang in clang clang-14; do
	if command -v "$clang" >/dev/null; then
		build clang-m32 "$clang" -m32
		build clang-m64 "$clang" -m64
		runs+=(clang-m32 clang-m64)
		break
	fi
done

rc=0
for r in "${runs[@]}"; do
	if diff -u "$out/abi.m64.txt" "$out/abi.$r.txt"; then
		echo "abi: $r matches m64 ($(grep -c ' off ' "$out/abi.m64.txt") fields)"
	else
		echo "abi: $r differs from m64"
		rc=1
	fi
done
exit $rc
