#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# ctest ops_libvirt: the libvirt procedure of docs/operations.md, on this
# machine, without touching its libvirt:
#   1. libvirt turns dist/libvirt/vbus-guest.xml into the QEMU command line
#      vbus needs (virsh domxml-to-native, in a private session daemon:
#      virsh starts one for an unprivileged user, under a temporary HOME):
#      ivshmem-doorbell on the guest's socket with 2 vectors, and guest RAM
#      a shared memory-backend-file under memory_backing_dir.
#   2. the hook links libvirt's RAM path to the file vbus-hostd created,
#      and refuses a missing or wrongly sized file.
#   3. QEMU, given libvirt's RAM object at that path, maps vbus-hostd's
#      file shared and connects to vbus-hostd's socket.
# The XML's type='kvm' becomes 'qemu' here (TCG: no usable /dev/kvm).
#   libvirt-test.sh SRC_DIR VBUS_HOSTD
set -u
src=${1:?usage: libvirt-test.sh SRC_DIR VBUS_HOSTD}
hostd=${2:?usage: libvirt-test.sh SRC_DIR VBUS_HOSTD}
xml=$src/dist/libvirt/vbus-guest.xml
hook=$src/dist/libvirt/vbus-qemu-hook
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for c in virsh qemu-system-x86_64 python3; do
	command -v $c >/dev/null || { echo "FAIL: $c is missing (scripts/deps.sh)"; exit 1; }
done

T=$(mktemp -d /tmp/vbus-libvirt.XXXXXX)
chmod 755 "$T"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	# the session daemon virsh started for this test (else it idles 120 s)
	[ -f "$T/run/libvirt/libvirtd.pid" ] && kill "$(cat "$T/run/libvirt/libvirtd.pid")" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# root's qemu:///session is the system daemon: run the session as nobody
user=$(id -un)
as_user=()
if [ "$(id -u)" = 0 ]; then
	user=nobody
	as_user=(runuser -u nobody --)
fi
mkdir -p "$T/home/.config/libvirt" "$T/run" "$T/ram"
cat > "$T/home/.config/libvirt/qemu.conf" <<CONF
memory_backing_dir = "$T/ram"
CONF
chmod 700 "$T/run"
[ "$user" = nobody ] && chown -R nobody "$T/home" "$T/run" "$T/ram"
sed "s/type='kvm'/type='qemu'/" "$xml" > "$T/guest.xml"
chmod 644 "$T/guest.xml"
virsh_session() {
	"${as_user[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/run" \
		XDG_CONFIG_HOME="$T/home/.config" XDG_CACHE_HOME="$T/home/.cache" \
		timeout 180 virsh -c qemu:///session "$@"
}

# ---- 1. libvirt's command line ----
if ! virsh_session domxml-to-native qemu-argv "$T/guest.xml" > "$T/argv" 2> "$T/virsh.err"; then
	echo "FAIL: virsh domxml-to-native:"; sed 's/^/    /' "$T/virsh.err"; exit 1
fi
tr ' ' '\n' < "$T/argv" | tr -d "'" > "$T/args"
want() {	# description, fixed string expected as one argument
	if grep -qxF -- "$2" "$T/args"; then ok "$1"
	else fail "$1: no argument '$2' in libvirt's command line"; fi
}
want "ivshmem-doorbell on charshmem0 with 2 MSI-X vectors" \
	"$(grep -o '{"driver":"ivshmem-doorbell"[^}]*}' "$T/args" |
	   grep -F '"chardev":"charshmem0","vectors":2,')"
want "charshmem0 is a client of the guest's vbus-hostd socket" \
	"socket,id=charshmem0,path=/run/vbus/g1.sock"
ram_obj=$(grep -o '{"qom-type":"memory-backend-file","id":"pc.ram"[^}]*}' "$T/args")
mem_path=$(sed -n 's/.*"mem-path":"\([^"]*\)".*/\1/p' <<< "$ram_obj")
want "guest RAM: a shared 1 GiB file in memory_backing_dir ($mem_path)" \
	"{\"qom-type\":\"memory-backend-file\",\"id\":\"pc.ram\",\"mem-path\":\"$T/ram/libvirt/qemu/-1-vbus-g1/pc.ram\",\"share\":true,\"x-use-canonical-path-for-ramblock-id\":false,\"size\":1073741824}"
if grep -q '^pc-q35[^ ]*,memory-backend=pc.ram' "$T/args"; then
	ok "the machine's RAM is that backend (memory-backend=pc.ram)"
else
	fail "-machine does not name memory-backend=pc.ram"
fi

# ---- 2. the hook ----
live() {	# the live XML libvirt hands the hook: with the domain id
	sed "s/<domain type='qemu'>/<domain type='qemu' id='7'>/" "$T/guest.xml"
}
run_hook() {	# expect-rc, what, args...; stdin is the XML
	local want_rc=$1 what=$2; shift 2
	VBUS_LIBVIRT_QEMU_CONF="$T/home/.config/libvirt/qemu.conf" \
		"$hook" "$@" > "$T/hook.out" 2>&1
	local rc=$?
	if [ $rc -eq "$want_rc" ]; then ok "hook: $what"
	else fail "hook: $what: exit $rc, expected $want_rc:"; sed 's/^/    /' "$T/hook.out"; fi
}
ram=/dev/shm/vbus/g1
# the XML names /dev/shm/vbus/g1; this test's daemon makes its file in $T
sed -i "s|path='$ram'|path='$T/vbus-g1'|" "$T/guest.xml"
ram=$T/vbus-g1
live | run_hook 1 "refuses to start the guest before vbus-hostd made its RAM file" vbus-g1 start begin -
grep -q "start vbus-hostd" "$T/hook.out" || fail "hook: no hint to start vbus-hostd: $(cat "$T/hook.out")"
truncate -s 512M "$ram"
live | run_hook 1 "refuses a RAM file whose size is not <memory>" vbus-g1 start begin -
grep -q "must be equal" "$T/hook.out" || fail "hook: size message: $(cat "$T/hook.out")"
rm -f "$ram"

"$hostd" --ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$ram,size=1G" \
	--foreground > "$T/hostd.log" 2>&1 &
pids+=("$!")
for _ in $(seq 50); do [ -S "$T/ctl.sock" ] && [ -f "$ram" ] && break; sleep 0.2; done
[ -f "$ram" ] || { echo "FAIL: vbus-hostd did not start:"; cat "$T/hostd.log"; exit 1; }
live | run_hook 0 "links libvirt's RAM path to vbus-hostd's file" vbus-g1 start begin -
link=$T/ram/libvirt/qemu/7-vbus-g1/pc.ram
if [ "$(readlink "$link")" = "$ram" ] && [ "${mem_path/\/-1-//7-}" = "$link" ]; then
	ok "hook: $link -> $ram (libvirt's path with id 7)"
else
	fail "hook: $link is '$(readlink "$link")', libvirt's path is $mem_path"
fi
sed '/^  <metadata>/,/^  <\/metadata>/d' "$T/guest.xml" |
	run_hook 0 "leaves a domain without vbus metadata alone" other start begin -
live | run_hook 0 "ignores other operations" vbus-g1 release end -
# a long name: libvirt cuts it to 20 characters in the path; so must the hook
long="vbus guest.with a long-name"
sed "s|<name>vbus-g1</name>|<name>$long</name>|" "$T/guest.xml" > "$T/long.xml"
chmod 644 "$T/long.xml"
if virsh_session domxml-to-native qemu-argv "$T/long.xml" > "$T/long.argv" 2>&1 &&
	lpath=$(grep -o '"mem-path":"[^"]*"' "$T/long.argv" | cut -d'"' -f4) && [ -n "$lpath" ]; then
	sed "s/<domain type='qemu'>/<domain type='qemu' id='12'>/" "$T/long.xml" |
		run_hook 0 "links a domain with a long name" "$long" start begin -
	if [ -L "${lpath/\/-1-//12-}" ]; then ok "hook: the long name's path is libvirt's ($lpath, id 12)"
	else fail "hook: no link at libvirt's path ${lpath/\/-1-//12-}: $(ls -R "$T/ram")"; fi
else
	fail "virsh domxml-to-native of a long name: $(cat "$T/long.argv")"
fi

# ---- 3. QEMU maps vbus-hostd's file through the link ----
qemu-system-x86_64 -machine q35,memory-backend=pc.ram -accel tcg -m 1G \
	-object "$(sed 's/[{}"]//g; s/qom-type:\([^,]*\)/\1/; s/:/=/g; s/,x-use[^,]*//; s|mem-path=[^,]*|mem-path='"$link"'|; s/share=true/share=on/' <<< "$ram_obj")" \
	-chardev "socket,id=charshmem0,path=$T/g1.sock" \
	-device ivshmem-doorbell,chardev=charshmem0,vectors=2 \
	-S -display none -monitor none -serial none -nodefaults > "$T/qemu.log" 2>&1 &
qpid=$!
pids+=("$qpid")
mapped=""
for _ in $(seq 100); do
	mapped=$(grep -F " $ram" "/proc/$qpid/maps" 2>/dev/null | head -n1)
	[ -n "$mapped" ] && break; sleep 0.3
done
if [[ "$mapped" == *" rw-s "* ]]; then ok "QEMU maps $ram shared (rw-s)"
else fail "QEMU did not map $ram shared: '$mapped'"; cat "$T/qemu.log"; fi
state=""
for _ in $(seq 50); do
	state=$("$hostd" ctl --ctl "$T/ctl.sock" list 2>&1 | grep -o 'state=[a-z]*')
	[ "$state" != state=waiting ] && break; sleep 0.2
done
if [ -n "$state" ] && [ "$state" != state=waiting ]; then ok "QEMU's ivshmem-doorbell connected to vbus-hostd ($state)"
else fail "vbus-hostd still waits for QEMU: $("$hostd" ctl --ctl "$T/ctl.sock" list 2>&1)"; fi

echo "$fails failure(s)"
[ $fails -eq 0 ]
