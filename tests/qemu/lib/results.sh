# shellcheck shell=bash
# vbus_check_results LOG: the verdict of a guest run, from its serial log.
#
# Guest protocol (lib/guest.sh): lines "VBUS-TEST PASS <name>",
# "VBUS-TEST FAIL <name> <reason>", and a final "VBUS-TEST DONE".
# Failures: each FAIL line; a missing DONE (the guest died, hung or timed out);
# no result line at all; and each kernel-log line that shows a kernel problem
# (WARN, BUG, Oops, panic, GPF, sleeping in atomic, list corruption, SLUB
# debug poison/redzone reports, KASAN/UBSAN, RCU stalls, lockups, hung tasks).
# Lines matching the ERE in $VBUS_KERNEL_IGNORE are not counted as problems.
# Prints each result, the offending lines and finally exactly
# "N passed, N failed". Returns 0 iff nothing failed.

# shellcheck source=tests/qemu/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

VBUS_KERNEL_PROBLEMS='WARNING:|BUG:|kernel BUG at|(^|\] )BUG [^ ]+ \(|Oops|sleeping function called from invalid context|scheduling while atomic|Kernel panic|general protection fault|KASAN|UBSAN|list_add corruption|list_del corruption|Poison overwritten|Redzone|Object already free|detected stalls|soft lockup|blocked for more than|pagealloc: memory corruption|pagealloc: single bit error'

# The log as text: no CR, no ANSI/VT escapes (SeaBIOS), no NULs.
_vbus_clean_log() {
	tr -d '\r\000' <"$1" | sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1b[c()][0-9A-Za-z]\{0,1\}//g'
}

vbus_check_results() {
	local log=$1 clean passed failed problems done_seen line
	if [[ ! -f "$log" ]]; then
		vbus_err "vbus_check_results: $log not found"
		printf '0 passed, 1 failed\n'
		return 1
	fi
	clean=$(_vbus_clean_log "$log")
	passed=0 failed=0 done_seen=0

	while IFS= read -r line; do
		case "$line" in
		"VBUS-TEST PASS "*)
			passed=$((passed + 1))
			printf 'PASS %s\n' "${line#VBUS-TEST PASS }"
			;;
		"VBUS-TEST FAIL "*)
			failed=$((failed + 1))
			printf 'FAIL %s\n' "${line#VBUS-TEST FAIL }"
			;;
		"VBUS-TEST DONE"*) done_seen=1 ;;
		esac
	done < <(grep -ao 'VBUS-TEST \(PASS\|FAIL\|DONE\).*' <<<"$clean" || true)

	problems=$(grep -av 'VBUS-TEST ' <<<"$clean" | grep -aE -e "$VBUS_KERNEL_PROBLEMS" || true)
	if [[ -n "${VBUS_KERNEL_IGNORE:-}" && -n "$problems" ]]; then
		problems=$(grep -avE -e "$VBUS_KERNEL_IGNORE" <<<"$problems" || true)
	fi
	if [[ -n "$problems" ]]; then
		while IFS= read -r line; do
			failed=$((failed + 1))
			printf 'FAIL kernel-log: %s\n' "$line"
		done <<<"$problems"
	fi

	if ((!done_seen)); then
		failed=$((failed + 1))
		if grep -aq 'VBUS-HARNESS TIMEOUT' <<<"$clean"; then
			printf 'FAIL guest-done: no VBUS-TEST DONE (timed out); last lines of %s:\n' "$log"
		else
			printf 'FAIL guest-done: no VBUS-TEST DONE (guest died or hung); last lines of %s:\n' "$log"
		fi
		tail -n 30 <<<"$clean" | sed 's/^/  | /'
	elif ((passed + failed == 0)); then
		failed=1
		printf 'FAIL guest-results: no VBUS-TEST PASS/FAIL line in %s\n' "$log"
	fi

	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
}

# vbus_add_results LOG [PREFIX]: vbus_check_results LOG for a suite that
# keeps its own totals: prints the PASS/FAIL lines (names prefixed with
# PREFIX/ when given) and adds the counts to the caller's $passed and
# $failed (a failed verdict that counted no failure counts as one).
# Returns non-zero if anything failed.
vbus_add_results() {
	local log=$1 pfx=${2:+$2/} res rc=0 p f
	res=$(vbus_check_results "$log") || rc=$?
	grep -v '^[0-9]* passed, [0-9]* failed$' <<<"$res" | sed "s#^\(PASS\|FAIL\) #\1 $pfx#" || true
	read -r p _ f _ < <(tail -n 1 <<<"$res")
	if ((rc != 0 && f == 0)); then
		printf 'FAIL %sguest-results vbus_check_results failed (log %s)\n' "$pfx" "$log"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	return "$rc"
}
