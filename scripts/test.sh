#!/usr/bin/env bash
# Every check of the tree, in stages; see README.md for the list.
# Prints one line per stage and, last, "N passed, N failed" over all of
# them (ctest stages count their tests; build steps count as one each).
# Exits non-zero if anything failed.
#
#   VBUS_TEST_STAGES="build ctest ..."  run only these stages; the soaks
#                                       (soak-stress soak-bus soak-venet
#                                       soak-ipc soak-fuzz) run only when
#                                       named here
#   VBUS_SKIP_KERNEL=1                  skip make modules and QEMU
#   VBUS_BUILD_DIR=dir                  build tree (default: build/)
#   JOBS=N                              parallelism (default: nproc)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
build=${VBUS_BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
stages=${VBUS_TEST_STAGES:-build ctest shellcheck buildtypes asan tsan valgrind fuzz kernel}

passed=0
failed=0
report=()
logdir=$build/test-logs

note() { report+=("$(printf '%-9s %s' "$1" "$2")"); echo "== $1: $2"; }
want() { [[ " $stages " == *" $1 "* ]]; }

# step NAME LOG CMD...: one pass/fail unit (a build, a make)
step() {
	local name=$1 log=$2
	shift 2
	echo "== $name: $*"
	if "$@" >"$log" 2>&1; then
		passed=$((passed + 1))
		return 0
	fi
	tail -n 40 "$log"
	failed=$((failed + 1))
	note "$name" "FAILED (log: $log)"
	return 1
}

# build NAME DIR [cmake options]: configure + build one tree
cmake_build() {
	local name=$1 dir=$2
	shift 2
	step "$name" "$logdir/$name.configure.log" \
		cmake -S "$root" -B "$dir" "$@" &&
	step "$name" "$logdir/$name.build.log" \
		cmake --build "$dir" -j "$jobs"
}

# run_ctest NAME DIR [ctest args]: adds its tests to the totals
run_ctest() {
	local name=$1 dir=$2 log=$logdir/$1.ctest.log out total nfail
	shift 2
	echo "== $name: ctest $*"
	ctest --test-dir "$dir" -j "$jobs" --output-on-failure "$@" \
		>"$log" 2>&1
	out=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log")
	if [ -z "$out" ]; then
		if grep -q 'No tests were found' "$log"; then
			note "$name" "SKIP (no tests with $*)"
			return 0
		fi
		tail -n 40 "$log"
		failed=$((failed + 1))
		note "$name" "FAILED: ctest gave no summary (log: $log)"
		return 1
	fi
	total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$out")
	nfail=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$out")
	passed=$((passed + total - nfail))
	failed=$((failed + nfail))
	if [ "$nfail" -ne 0 ]; then
		sed -n '/The following tests FAILED/,$p' "$log"
		note "$name" "$((total - nfail))/$total passed (log: $log)"
		return 1
	fi
	note "$name" "$total/$total passed"
}

# run_qemu NAME SUITES: QEMU suites (empty: run-all.sh's default list);
# adds their test counts to the totals
run_qemu() {
	local name=$1 log=$logdir/$1.log out p f
	echo "== $name: tests/qemu/run-all.sh ${2:-} (log: $log)"
	VBUS_QEMU_SUITES=$2 tests/qemu/run-all.sh >"$log" 2>&1
	local rc=$?
	sed -n '/=== qemu summary/,$p' "$log"
	out=$(grep -aE '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	if [ -z "$out" ]; then
		tail -n 40 "$log"
		failed=$((failed + 1))
		note "$name" "FAILED: no summary (log: $log)"
		return 1
	fi
	p=${out%% passed*}
	f=${out#*passed, }
	f=${f%% failed*}
	[ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		grep -a '^FAIL\|VBUS-TEST FAIL\| FAIL ' "$log" | head -n 30
		note "$name" "$p passed, $f failed (log: $log)"
		return 1
	fi
	note "$name" "$p/$p passed"
}

# kernel_ok STAGE: the installed kernel headers are there (else SKIP)
kver=${KVER:-$(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)}
kernel_ok() {
	if [ -n "${VBUS_SKIP_KERNEL:-}" ]; then
		note "$1" "SKIP (VBUS_SKIP_KERNEL set)"
		return 1
	fi
	if [ -z "$kver" ] || [ ! -d "/lib/modules/$kver/build" ]; then
		note "$1" "SKIP (no kernel headers; scripts/deps.sh)"
		return 1
	fi
}

mkdir -p "$logdir"
start=$(date +%s)

# ctest's ops_systemd_sandbox boots a Debian tree that debootstrap builds
# the first time (1-2 min, mostly download): start it now, in the
# background, so it overlaps the builds; the test waits for it (a lock)
# and builds it itself if this failed (debian-tree.sh)
tree_pid=
if want ctest && [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then
	tests/ops/debian-tree.sh "$build" >"$logdir/debian-tree.log" 2>&1 &
	tree_pid=$!
fi

default_ok=0
if want build || want ctest || want valgrind || want soak-stress; then
	cmake_build build "$build" && default_ok=1 && note build ok
fi
if want ctest; then
	if [ $default_ok = 1 ]; then
		run_ctest ctest "$build" -LE valgrind
	else
		note ctest "SKIP (build failed)"
	fi
fi

if want shellcheck; then
	# every tracked shell script, clean; one step however many files
	if command -v shellcheck >/dev/null; then
		step shellcheck "$logdir/shellcheck.log" \
			scripts/shellcheck.sh &&
			note shellcheck "ok ($(tail -n 1 "$logdir/shellcheck.log"))"
	else
		note shellcheck "SKIP (shellcheck not installed; scripts/deps.sh)"
	fi
fi

if want buildtypes; then
	# every CMAKE_BUILD_TYPE with gcc and clang, -Werror: the optimisers
	# warn differently (GCC 12 -O2 -Wstringop-overflow, clang -Os ...).
	# Build only; the tests run in the ctest stage.
	for cc in ${VBUS_BUILDTYPES_CC:-gcc clang}; do
		for bt in ${VBUS_BUILDTYPES:-Debug Release RelWithDebInfo MinSizeRel}; do
			if ! command -v "$cc" >/dev/null; then
				note "bt-$cc" "SKIP ($cc not installed)"
				break
			fi
			# the build stage is this one already (gcc, the
			# default RelWithDebInfo): not twice
			if [[ "$cc" == gcc && "$bt" == RelWithDebInfo ]] && want build; then
				note "bt-$cc-$bt" "= the build stage (not built twice)"
				continue
			fi
			CC=$cc cmake_build "bt-$cc-$bt" "$build/bt-$cc-$bt" \
				-DCMAKE_BUILD_TYPE="$bt" &&
				note "bt-$cc-$bt" ok
		done
	done
fi

if want asan; then
	# model/abi/valgrind do not depend on the sanitizer: run once, above
	cmake_build asan "$build/asan" -DVBUS_SANITIZE=ON &&
		ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		run_ctest asan "$build/asan" -LE 'valgrind|model|abi'
fi

if want tsan; then
	cmake_build tsan "$build/tsan" -DVBUS_TSAN=ON &&
		TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		run_ctest tsan "$build/tsan" -L 'tsan|stress'
fi

if want valgrind; then
	if [ $default_ok = 1 ]; then
		run_ctest valgrind "$build" -L valgrind
	else
		note valgrind "SKIP (build failed)"
	fi
fi

if want fuzz; then
	# every libFuzzer target over vbus-hostd's surfaces, a few s each
	step fuzz "$logdir/fuzz.log" tests/fuzz/run.sh 4 &&
		note fuzz "ok ($(grep -a '^fuzz total' "$logdir/fuzz.log"))"
fi

if want kernel && kernel_ok kernel; then
	# modules-check first: it compiles with other flags, so the plain
	# build after it leaves the objects the QEMU suites' own `make
	# modules` finds up to date (the other order recompiled each suite's
	# modules once more)
	step modules-check "$logdir/modules-check.log" \
		make -C "$root" modules-check KVER="$kver" &&
		note modules-check "ok (W=1 and sparse clean)" &&
	step modules "$logdir/modules.log" make -C "$root" modules \
		KVER="$kver" && note modules "ok ($kver)"
	run_qemu qemu "${VBUS_QEMU_SUITES:-}"
fi

# ---- the soaks: opt-in, only when named (README, the stage table) ----
if want soak-stress; then
	if [ $default_ok = 1 ]; then
		step soak-stress "$logdir/soak-stress.log" \
			"$build/tests/stress/ioq-stress" --mode process \
			-n "${VBUS_SOAK_MSGS:-100000000}" &&
			note soak-stress "ok ($(grep -m1 'msg/s' "$logdir/soak-stress.log"))"
	else
		note soak-stress "SKIP (build failed)"
	fi
fi
if want soak-bus && kernel_ok soak-bus; then
	run_qemu soak-bus bus-soak
fi
if want soak-venet && kernel_ok soak-venet; then
	run_qemu soak-venet venet-soak
fi
if want soak-ipc && kernel_ok soak-ipc; then
	run_qemu soak-ipc ipc-soak
fi
if want soak-fuzz; then
	# every fuzz target for VBUS_FUZZ_SECONDS each; per-target figures
	step soak-fuzz "$logdir/soak-fuzz.log" \
		tests/fuzz/run.sh "${VBUS_FUZZ_SECONDS:-300}" &&
		note soak-fuzz "ok ($(grep -a '^fuzz total' "$logdir/soak-fuzz.log"))"
	grep -a '^fuzz ' "$logdir/soak-fuzz.log"
fi

# normally long done (ctest waited for it)
[ -z "$tree_pid" ] || wait "$tree_pid" 2>/dev/null

echo
echo "== summary ($(($(date +%s) - start)) s)"
printf '%s\n' "${report[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
