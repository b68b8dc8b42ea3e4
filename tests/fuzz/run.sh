#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Build the vbus-hostd libFuzzer target in build/fuzz (clang, VBUS_FUZZ=ON)
# and fuzz for SECONDS (default 60), starting from tests/fuzz/seeds and the
# kept reproducers in tests/fuzz/corpus. New interesting inputs go to
# build/fuzz/corpus (not the source tree); a crash leaves its reproducer in
# build/fuzz/artifacts: copy it to tests/fuzz/corpus once it is fixed.
# Prints executions and crashes; exits non-zero if the fuzzer found one.
set -eu
SECONDS_TO_RUN=${1:-60}
JOBS=${JOBS:-1}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$SRC/build/fuzz

command -v clang >/dev/null || { echo "run.sh: clang is needed (apt-get install clang-14)"; exit 2; }
mkdir -p "$B/corpus" "$B/artifacts"
if [ ! -f "$B/CMakeCache.txt" ]; then
	CC=clang cmake -S "$SRC" -B "$B" -DVBUS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$B" --target hostd_fuzz -j"$(nproc)" >/dev/null

LOG=$B/fuzz.log
rm -f "$B"/fuzz-*.log
cd "$B"		# -jobs writes its fuzz-N.log files to the cwd
set +e
"$B/tests/fuzz/hostd_fuzz" -max_total_time="$SECONDS_TO_RUN" -jobs="$JOBS" -workers="$JOBS" \
	-print_final_stats=1 -artifact_prefix="$B/artifacts/" -max_len=4096 \
	-timeout=10 -rss_limit_mb=2048 \
	"$B/corpus" "$SRC/tests/fuzz/seeds" "$SRC/tests/fuzz/corpus" >"$LOG" 2>&1
rc=$?
set -e
if [ "$JOBS" -gt 1 ]; then cat "$B"/fuzz-*.log >>"$LOG" 2>/dev/null; fi

execs=$(grep -h "stat::number_of_executed_units" "$LOG" | awk '{s += $2} END {print s + 0}')
crashes=$(find "$B/artifacts" -maxdepth 1 -regextype posix-extended \
	-regex '.*/(crash|leak|timeout|oom)-[^/]*' 2>/dev/null | wc -l)
cov=$(grep -hoE "cov: [0-9]+" "$LOG" | tail -1)
echo "fuzz: ${SECONDS_TO_RUN}s, executions: $execs, $cov, crashes: $crashes (artifacts: $B/artifacts), log: $LOG"
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
	grep -hE "ERROR|SUMMARY|runtime error" "$LOG" | head -20
	exit 1
fi
