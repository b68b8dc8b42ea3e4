#!/usr/bin/env bash
# ctest libioq_install_pkgconfig: `cmake --install` into a temporary prefix,
# then build the README's example against it the way a user would (only
# pkg-config, no paths into the source tree, no liburcu headers) and run it. Also checks that
# the example in README.md is this file, verbatim.
set -euo pipefail
build=$1 src=$2 cc=${3:-cc} san=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pcdir=$(find "$tmp/prefix" -name libioq.pc -printf '%h\n' | head -n1)
[ -n "$pcdir" ] || { echo "libioq.pc not installed"; exit 1; }
libdir=$(dirname "$pcdir")
for h in platform platform_impl shm_signal ioq ioq_channel vbus_pci venet; do
	[ -f "$tmp/prefix/include/vbus/$h.h" ] || { echo "missing include/vbus/$h.h"; exit 1; }
done

export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# A consumer needs no liburcu: its headers sit in /usr/include here, so
# shadow them with ones that stop the build, and check the dependency list.
mkdir -p "$tmp/no-urcu/urcu"
for h in arch system compiler uatomic; do
	echo '#error "a libioq consumer must not need liburcu"' > "$tmp/no-urcu/urcu/$h.h"
done
nourcu="-I$tmp/no-urcu"
flags=$(pkg-config --cflags --libs libioq)
echo "pkg-config --cflags --libs libioq: $flags"
# $san: a sanitizer build's libioq needs the same -fsanitize to link.
# shellcheck disable=SC2046  # pkg-config's words are separate flags
"$cc" -std=gnu11 -M $(pkg-config --cflags libioq) \
	"$src/userspace/lib/examples/ioq_hello.c" > "$tmp/deps"
if grep -q urcu "$tmp/deps"; then
	echo "the installed headers include liburcu:"; grep -o '[^ ]*urcu[^ ]*' "$tmp/deps"; exit 1
fi
# The consumer's vbus_mb() is a full fence (the shm-signal store->load
# pattern needs one): on x86 an mfence or a locked instruction.
if [ "$(uname -m)" = x86_64 ]; then
	printf '#include <vbus/platform.h>\nvoid f(void) { vbus_mb(); }\n' > "$tmp/mb.c"
	# shellcheck disable=SC2046,SC2086 # word lists: pkg-config's flags, $nourcu
	"$cc" -std=gnu11 -O2 -S -o "$tmp/mb.s" $(pkg-config --cflags libioq) $nourcu "$tmp/mb.c"
	grep -Eq '\<(mfence|lock)\>' "$tmp/mb.s" ||
		{ echo "vbus_mb() is no full fence for a consumer:"; cat "$tmp/mb.s"; exit 1; }
fi
# shellcheck disable=SC2086
"$cc" -std=gnu11 -Wall -Wextra -Werror $san $nourcu -o "$tmp/ioq_hello" \
	"$src/userspace/lib/examples/ioq_hello.c" $flags
LD_LIBRARY_PATH="$libdir" "$tmp/ioq_hello" | tee "$tmp/out"
[ "$(grep -c 'south got cookie' "$tmp/out")" = 3 ]

# static: the .pc's private parts are enough to link libioq.a
# shellcheck disable=SC2046,SC2086
"$cc" -std=gnu11 $san $nourcu -o "$tmp/ioq_hello_static" \
	"$src/userspace/lib/examples/ioq_hello.c" \
	$(pkg-config --cflags libioq) "$libdir/libioq.a" \
	$(pkg-config --static --libs-only-other libioq)
"$tmp/ioq_hello_static" >/dev/null

# CMake users: find_package(vbus), link vbus::ioq_static
mkdir -p "$tmp/cmake-user"
cat > "$tmp/cmake-user/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.18)
project(ioq_user C)
find_package(vbus REQUIRED)
add_executable(ioq_hello $src/userspace/lib/examples/ioq_hello.c)
target_link_libraries(ioq_hello PRIVATE vbus::ioq_static)
CMK
cmake -S "$tmp/cmake-user" -B "$tmp/cmake-user/b" \
	-DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_C_FLAGS="$san $nourcu" -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build "$tmp/cmake-user/b" >/dev/null
"$tmp/cmake-user/b/ioq_hello" >/dev/null

# the README shows this same program
awk '/<!-- example: ioq_hello.c -->/{f=1;next} f&&/^```c/{p=1;next} p&&/^```/{exit} p' \
	"$src/README.md" > "$tmp/readme.c"
diff -u "$src/userspace/lib/examples/ioq_hello.c" "$tmp/readme.c"
echo "install + pkg-config example: ok"
