#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# ctest ops_systemd_verify: the systemd units as `cmake --install` writes
# them pass `systemd-analyze verify` (offline: PID 1 need not be systemd),
# alone, as a template instance and with the taps.conf and disks.conf
# drop-ins, and their
# sandbox keeps a low exposure score. verify exits 0 on most mistakes (an
# unknown key or a bad value is "ignoring"), so any message about our files
# fails; deliberately broken copies prove that the check catches each kind.
#
#   tests/ops/systemd-verify.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: systemd-verify.sh BUILD_DIR}
command -v systemd-analyze >/dev/null ||
	{ echo "FAIL: systemd-analyze not installed (scripts/deps.sh)"; exit 1; }
tmp=$(mktemp -d /tmp/vbus-ops-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
units=$tmp/prefix/lib/systemd/system
drop=$tmp/prefix/share/vbus/systemd/taps.conf
disks=$tmp/prefix/share/vbus/systemd/disks.conf
for f in "$units/vbus-hostd.service" "$units/vbus-hostd@.service" "$drop" "$disks" \
	"$tmp/prefix/lib/sysusers.d/vbus.conf" "$tmp/prefix/lib/tmpfiles.d/vbus.conf"; do
	[[ -f "$f" ]] || { fail "not installed: $f"; exit 1; }
done
exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$units/vbus-hostd@.service")
if [[ "$exe" == "$tmp/prefix/bin/vbus-hostd" && -x "$exe" ]]; then
	ok "ExecStart= names the installed binary ($exe)"
else
	fail "ExecStart= is '$exe', want the installed $tmp/prefix/bin/vbus-hostd"
fi

# verify_units DIR UNIT: 0 iff systemd-analyze is happy and silent about
# our files; its output goes to $tmp/verify.out.
verify_units() {
	local dir=$1 unit=$2 rc=0
	SYSTEMD_UNIT_PATH="$dir:" systemd-analyze verify --man=no "$unit" \
		>"$tmp/verify.out" 2>&1 || rc=$?
	[[ $rc -eq 0 ]] && ! grep -q "vbus-hostd\|taps\.conf" "$tmp/verify.out"
}

# expect GOOD|BAD WHAT DIR UNIT
expect() {
	local want=$1 what=$2
	shift 2
	if verify_units "$@"; then
		if [[ $want == GOOD ]]; then ok "$what"; else fail "$what: verify passed a broken unit"; fi
	elif [[ $want == BAD ]]; then
		ok "$what: caught ($(grep -m1 . "$tmp/verify.out" | sed "s|$tmp/||"))"
	else
		fail "$what:"
		sed 's/^/    /' "$tmp/verify.out"
	fi
}

# a unit directory: the installed units, optionally a drop-in for UNIT
# mkdir_units NAME [UNIT DROPIN]
mkdir_units() {
	local d=$tmp/$1
	mkdir -p "$d"
	cp "$units"/vbus-hostd*.service "$d/"
	if [[ $# -eq 3 ]]; then
		mkdir -p "$d/$2.d"
		cp "$3" "$d/$2.d/"
	fi
	echo "$d"
}

plain=$(mkdir_units plain)
expect GOOD "vbus-hostd.service verifies" "$plain" vbus-hostd.service
expect GOOD "vbus-hostd@ci.service (template instance) verifies" "$plain" vbus-hostd@ci.service
taps=$(mkdir_units taps vbus-hostd@ci.service "$drop")
expect GOOD "vbus-hostd@ci.service with taps.conf verifies" "$taps" vbus-hostd@ci.service
disk=$(mkdir_units disks vbus-hostd@ci.service "$disks")
expect GOOD "vbus-hostd@ci.service with disks.conf verifies" "$disk" vbus-hostd@ci.service
pre=$(sed -n 's/^ExecStartPre=+\([^ ]*\).*/\1/p' "$drop")
if [[ "$pre" == "$tmp/prefix/libexec/vbus/vbus-taps" && -x "$pre" ]]; then
	ok "taps.conf's ExecStartPre= names the installed vbus-taps"
else
	fail "taps.conf's ExecStartPre= is '$pre', want the installed $tmp/prefix/libexec/vbus/vbus-taps"
fi

# broken copies: each must be caught
b=$(mkdir_units broken-key)
sed -i 's/^ProtectSystem=/ProtectSytem=/' "$b/vbus-hostd.service"
expect BAD "misspelt key" "$b" vbus-hostd.service
b=$(mkdir_units broken-value)
sed -i 's/^Type=notify/Type=notfy/' "$b/vbus-hostd@.service"
expect BAD "bad value in the template" "$b" vbus-hostd@ci.service
b=$(mkdir_units broken-exe)
sed -i 's|^ExecStart=[^ ]*|ExecStart=/nonexistent/vbus-hostd|' "$b/vbus-hostd.service"
expect BAD "ExecStart= binary missing" "$b" vbus-hostd.service
sed 's/^DevicePolicy=closed/DevicePolicy=closd/' "$drop" >"$tmp/taps-broken.conf"
b=$(mkdir_units broken-dropin vbus-hostd@ci.service "$tmp/taps-broken.conf")
expect BAD "bad value in the drop-in" "$b" vbus-hostd@ci.service

# the sandbox, scored offline (0 = locked down, 10 = wide open)
exposure() {
	SYSTEMD_UNIT_PATH="$1:" systemd-analyze security --offline=yes --no-pager "$2" 2>&1 |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'
}
for spec in "plain vbus-hostd@ci.service 0.6" "taps vbus-hostd@ci.service 1.2" \
	"disks vbus-hostd@ci.service 0.6"; do
	read -r dir unit max <<<"$spec"
	level=$(exposure "$tmp/$dir" "$unit")
	if [[ -n "$level" ]] && awk -v l="$level" -v m="$max" 'BEGIN { exit !(l <= m) }'; then
		ok "exposure of $unit ($dir): $level (at most $max)"
	else
		fail "exposure of $unit ($dir): '${level:-?}', want at most $max"
	fi
done

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
