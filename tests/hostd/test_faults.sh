#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Fault injection is test-only and off unless asked for
# (docs/fault-injection.md): a daemon without --test-faults refuses `ctl
# fault`, --test-fault without --test-faults is a usage error, and with it
# a verb's mistake reads the same from ctl and from --test-fault.
# shellcheck source=tests/hostd/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

G=(--guest "g1:sock=$T/g1.sock,mem=$T/g1.ram,size=8M" --device "g1:type=vbus-test,id=1")
OFF='fault injection is off: vbus-hostd was not started with --test-faults \(test-only\)'

# ---- off: the default ----
start_daemon "${C[@]}" "${G[@]}" || finish
if "$HOSTD" ctl "${C[@]}" fault g1 status >"$T/out" 2>"$T/err"; then
	fail "ctl fault without --test-faults: exit 0"
elif grep -Eq -- "$OFF" "$T/err"; then
	echo "ok: ctl fault without --test-faults refused: $(cat "$T/err")"
else
	fail "ctl fault without --test-faults: $(cat "$T/err")"
fi
stop_daemon
expect_fail "--test-fault without --test-faults" \
	'--test-fault needs --test-faults \(fault injection, for tests only\)' \
	"${C[@]}" "${G[@]}" --test-fault "g1 phantoms 3" --foreground

# ---- on ----
BAD="fault poke: device 5 is absent"
expect_fail "--test-fault with a mistake" "^vbus-hostd: --test-fault 'g1 poke 5 0 0 1': $BAD\$" \
	"${C[@]}" "${G[@]}" --test-faults --test-fault "g1 poke 5 0 0 1" --foreground
start_daemon "${C[@]}" "${G[@]}" --test-faults --test-fault "g1 phantoms 3" || finish
expect_ok "--test-fault ran" "^phantoms 3 posted 0 busreg-quiet off$" fault g1 status
if "$HOSTD" ctl "${C[@]}" fault g1 poke 5 0 0 1 >"$T/out" 2>"$T/err"; then
	fail "ctl fault poke of an absent device: exit 0"
elif grep -q -- "$BAD\$" "$T/err"; then
	echo "ok: ctl says the same: $(cat "$T/err")"
else
	fail "ctl fault poke of an absent device: $(cat "$T/err")"
fi
expect_fail "a closed device is not poked" "fault poke: device 1 is not open" \
	ctl "${C[@]}" fault g1 poke 1 0 0 1
expect_fail "a bad number" "fault hc-delay: bad number 'x' \\(0..60000\\)" \
	ctl "${C[@]}" fault g1 hc-delay x 1
expect_fail "an unknown verb" "usage: fault NAME phantoms N" ctl "${C[@]}" fault g1 flood
expect_ok "a late answer armed" "the next 2 hypercalls are answered 5 ms late" fault g1 hc-delay 5 2
stop_daemon
finish
