#!/usr/bin/env bash
# Runs shellcheck -x (Debian's package, scripts/deps.sh) over every shell
# script git tracks: *.sh, files whose first line is a sh or bash
# shebang, and dkms.conf (dkms sources it with bash). Run from the top of
# the tree, so `# shellcheck source=` paths are relative to it. The
# scripts/test.sh stage `shellcheck`.
#
#   scripts/shellcheck.sh            every script; JOBS=N shellchecks at once
#   scripts/shellcheck.sh FILE...    only these
#
# Prints the findings (gcc format) and a last line "shellcheck: N
# file(s), N finding(s)"; exits 1 when there is any.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
command -v shellcheck >/dev/null ||
	{ echo "shellcheck: not installed (scripts/deps.sh)" >&2; exit 2; }

if (($#)); then
	files=("$@")
else
	# the list comes from git: a build tree or a scratch file is not ours
	git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
		{ echo "shellcheck: $top is not a git checkout" >&2; exit 2; }
	mapfile -t files < <(
		git ls-files -z | while IFS= read -r -d '' f; do
			[[ -f "$f" && ! -L "$f" ]] || continue
			if [[ "$f" == *.sh || "$f" == dkms.conf ]] ||
				head -n 1 "$f" | grep -qE '^#!.*[/ ](ba)?sh([[:space:]]|$)'; then
				echo "$f"
			fi
		done)
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# a file at a time, JOBS at once; shellcheck exits 1 for findings, more
# when it could not check the file: that is a finding too
# shellcheck disable=SC2016 # the script bash -c runs, expanded there
printf '%s\0' "${files[@]}" |
	xargs -0 -n 1 -P "${JOBS:-$(nproc)}" bash -c \
		'shellcheck -x -f gcc "$1"; rc=$?
		 ((rc <= 1)) || echo "$1:1:1: error: shellcheck exited $rc [vbus]"' _ \
		>"$out" 2>&1 || true
sort -t: -k1,1 -k2,2n -k3,3n "$out"
n=$(grep -c ': \(note\|warning\|error\|style\|info\): ' "$out" || true)
echo "shellcheck: ${#files[@]} file(s), $n finding(s)"
[ "$n" -eq 0 ]
