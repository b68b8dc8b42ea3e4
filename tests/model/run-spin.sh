#!/usr/bin/env bash
# ctest model.*: model-check one variant of a Promela model with spin.
#   run-spin.sh verifies|fails <model.pml> [-DNAME ...]
# "verifies": an exhaustive search (no depth cut-off) with 0 errors.
# "fails":    spin must find an assertion violation (a broken variant that
#             spin accepts means the model cannot see that bug any more).
set -euo pipefail
expect=$1 model=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/model.pml"
cd "$work"
spin "$@" -a model.pml >spin.log 2>&1 || { cat spin.log; exit 1; }
# pan.c is generated code: its warnings are not ours
${CC:-cc} -O2 -DSAFETY -w -o pan pan.c
./pan -m2000000 >pan.log 2>&1 || true
grep -E 'errors:|states, stored|assertion violated|elapsed' pan.log || true

errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log)
[ -n "$errors" ] || { echo "pan produced no verdict"; cat pan.log; exit 1; }
case $expect in
verifies)
	if grep -q 'max search depth too small' pan.log; then
		echo "search was cut off: not a proof"; exit 1
	fi
	[ "$errors" = 0 ] || { spin "$@" -t -p model.pml | tail -40; exit 1; }
	echo "model $(basename "$model") $*: verified" ;;
fails)
	if [ "$errors" = 0 ] || ! grep -q 'assertion violated' pan.log; then
		echo "expected a violation, spin found none"; exit 1
	fi
	echo "model $(basename "$model") $*: violation found, as it must" ;;
*)
	echo "usage: $0 verifies|fails model.pml [-D...]"; exit 2 ;;
esac
