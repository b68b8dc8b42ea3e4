#!/usr/bin/env bash
# One QEMU suite, or some of its checks:
#
#   tests/qemu/run.sh SUITE[:REGEX] [SUITE OPTIONS...]
#
# SUITE is a directory under tests/qemu/suites (venet, venet_pair, vbus_blk, vbus_ipc,
# bus, kernel, restart, shutdown, hostile, dkms, libvirt, harness; blk and ipc name the
# vbus_ ones). With :REGEX (an ERE) the guest runs only the check groups
# whose names it matches (`--only REGEX` to the suite; the names are in
# the suite's guest.sh, vt_run_checks), e.g. `run.sh venet:sg0`. Every
# suite takes --mem SIZE, --timeout SEC, --no-build and --only REGEX; see
# `run.sh SUITE --help` for its own. Prints PASS/FAIL lines and
# "N passed, N failed"; exits non-zero on a failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
(($#)) || { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 2; }
suite=${1%%:*}
only=
[[ "$1" == *:* ]] && only=${1#*:}
shift
case "$suite" in
blk | ipc) suite=vbus_$suite ;;
esac
[[ -f "$here/suites/$suite/host.sh" ]] || {
	have=("$here"/suites/*/)
	have=("${have[@]%/}")
	echo "run.sh: no suite '$suite' (have: ${have[*]##*/})" >&2
	exit 2
}
exec bash "$here/suites/$suite/host.sh" ${only:+--only "$only"} "$@"
