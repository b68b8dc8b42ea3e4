#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Build vbus-hostd's libFuzzer targets in build/fuzz (clang, VBUS_FUZZ=ON;
# tests/fuzz/CMakeLists.txt lists them) and fuzz each for SECONDS (default
# 5), starting from its seeds (tests/fuzz/seeds/NAME) and kept reproducers
# (tests/fuzz/corpus/NAME), which it never writes to. New interesting inputs go to
# build/fuzz/corpus/NAME (not the source tree); a crash leaves its
# reproducer in build/fuzz/artifacts/NAME: copy it to tests/fuzz/corpus/NAME
# once it is fixed.
#
#   tests/fuzz/run.sh [SECONDS] [NAME...]   every target, or those named
#   JOBS=N                                  targets fuzzed at once (1)
#
# Prints one line per target (executions, coverage, crashes) and the total;
# exits non-zero if any target crashed, leaked or timed out.
set -eu
SECONDS_TO_RUN=${1:-5}
shift || true
JOBS=${JOBS:-1}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$SRC/build/fuzz
ALL="hostd blkpoll venet ipc ivshmem adopt ctl config"
TARGETS=${*:-$ALL}

command -v clang >/dev/null || { echo "run.sh: clang is needed (apt-get install clang-14)"; exit 2; }
if [ ! -f "$B/CMakeCache.txt" ]; then
	CC=clang cmake -S "$SRC" -B "$B" -DVBUS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
bins=()
for t in $TARGETS; do bins+=("fuzz_$t"); done
cmake --build "$B" -j"$(nproc)" --target "${bins[@]}" >/dev/null

# one target: its log is $B/NAME.log
fuzz_one() {
	local t=$1 d dirs=()
	for d in "$SRC/tests/fuzz/seeds/$t" "$SRC/tests/fuzz/corpus/$t"; do
		[ -d "$d" ] && dirs+=("$d")
	done
	mkdir -p "$B/corpus/$t" "$B/artifacts/$t" "$B/tmp/$t"
	# TMPDIR: the disk images and sockets of a crashed run stay in build/
	# -close_fd_mask=2: the daemon's log lines (libFuzzer's and the
	# sanitizers' reports still print)
	TMPDIR=$B/tmp/$t "$B/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_TO_RUN" \
		-print_final_stats=1 -artifact_prefix="$B/artifacts/$t/" \
		-max_len=4096 -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 \
		"$B/corpus/$t" "${dirs[@]}" >"$B/$t.log" 2>&1
}

rm -f "$B"/*.log
touch "$B/run.stamp"	# artifacts newer than this are this run's
running=0
for t in $TARGETS; do
	fuzz_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait -n || true
		running=$((running - 1))
	fi
done
wait || true

total=0
bad=0
for t in $TARGETS; do
	log=$B/$t.log
	execs=$(grep -h "stat::number_of_executed_units" "$log" | awk '{s += $2} END {print s + 0}')
	if [ "$execs" -eq 0 ]; then	# cut short: the last status line
		execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
		execs=${execs:-0}
	fi
	cov=$(grep -hoE "cov: [0-9]+" "$log" | tail -n 1)
	crashes=$(find "$B/artifacts/$t" -maxdepth 1 -newer "$B/run.stamp" \
		-regextype posix-extended \
		-regex '.*/(crash|leak|timeout|oom|slow-unit)-[^/]*' | wc -l)
	if ! grep -q "^Done [0-9]* runs" "$log"; then
		crashes=$((crashes > 0 ? crashes : 1))
	fi
	printf 'fuzz %-8s %ss, executions: %s, %s, crashes: %s\n' "$t" \
		"$SECONDS_TO_RUN" "$execs" "${cov:-cov: ?}" "$crashes"
	if [ "$crashes" -ne 0 ]; then
		grep -hE "ERROR|SUMMARY|runtime error|^ctl|^ivshmem|^ipc|^venet|as a config|descriptors open" "$log" | head -n 20
		echo "  log: $log, artifacts: $B/artifacts/$t"
		bad=$((bad + 1))
	fi
	total=$((total + execs))
done
echo "fuzz total: $total executions over $(echo "$TARGETS" | wc -w) targets, $bad crashed"
[ "$bad" -eq 0 ]
