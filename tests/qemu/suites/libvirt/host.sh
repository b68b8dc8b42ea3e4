#!/usr/bin/env bash
# A guest on vbus started by libvirt (docs/operations.md, "libvirt"): the
# domain is dist/libvirt/vbus-guest.xml with this lab's kernel and
# initramfs instead of a disk, started with `virsh create` in a private
# session libvirtd (as nobody when run as root, under a temporary HOME:
# the machine's libvirt is not touched), on a vbus-hostd with one
# vbus-test device. The guest loads the bus modules, finds the device and
# moves 1000 verified descriptors through it (the "rejoin" role of the
# bus suite's guest.sh).
#
# libvirt runs hooks only from /etc/libvirt/hooks, which this test must
# not write: it runs dist/libvirt/vbus-qemu-hook itself, on the live XML
# libvirt will have (a fresh session daemon gives its first domain id 1,
# which the test checks), exactly as libvirtd would on "start begin".
#
#   tests/qemu/run.sh libvirt [--mem MiB] [--hostd PATH]
#   --hostd PATH  this vbus-hostd binary (else the one built in build/cmake)
# shellcheck disable=SC2317 # lv_cleanup: at exit
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

mem=512 hostd=
lab_begin libvirt hostd:S -- "$@"
[[ "$mem" =~ ^[0-9]+$ ]] || { vbus_err "--mem takes MiB here, not $mem"; exit 2; }
for c in virsh python3; do
	command -v "$c" >/dev/null || { h_fail deps "$c is missing (scripts/deps.sh)"; finish; }
done
VBUS_HOSTD=${hostd:-${VBUS_HOSTD:-}}
lab_build --modules "$LAB_BUS_SUBDIRS" --cmake vbus-hostd
lab_kos --bus kernel/vbus_test/vbus_test.ko

# ---- QEMU (session libvirt) and vbus-hostd run as $user ----
chmod 755 "$run"
as_user=()
if [[ $(id -u) == 0 ]]; then as_user=(runuser -u nobody --); fi
virsh_s() {
	"${as_user[@]}" env HOME="$run/home" XDG_RUNTIME_DIR="$run/xdg" \
		XDG_CONFIG_HOME="$run/home/.config" XDG_CACHE_HOME="$run/home/.cache" \
		timeout 120 virsh -c qemu:///session "$@"
}
lv_cleanup() {
	virsh_s destroy vbus-lv >/dev/null 2>&1 || true
	cp "$run/home/.cache/libvirt/qemu/log/vbus-lv.log" "$out/qemu.log" 2>/dev/null || true
	# the session daemon virsh started for this run (else it idles 120 s)
	if [[ -f "$run/xdg/libvirt/libvirtd.pid" ]]; then
		kill "$(cat "$run/xdg/libvirt/libvirtd.pid")" 2>/dev/null || true
	fi
	cp "$run/guest.log" "$out/guest.log" 2>/dev/null || true
}
lab_defer lv_cleanup
mkdir -p "$run/home/.config/libvirt" "$run/xdg" "$run/ram"
chmod 700 "$run/xdg"
echo "memory_backing_dir = \"$run/ram\"" >"$run/home/.config/libvirt/qemu.conf"

lab_stage guest "$(dirname "$0")/../bus/guest.sh" "${kos[@]}" <<CONFIG
VBT_ROLE=rejoin
VBT_DEVS="7"
VBT_FOREIGN=""
CONFIG
h_pass initramfs
cp "$VBUS_VMLINUX" "$run/kernel"
[[ ${#as_user[@]} -eq 0 ]] || chown -R nobody "$run"

# ---- vbus-hostd, as the user QEMU runs as (the simplest way in: no group) ----
LAB_HOSTD_WRAP=("${as_user[@]}")
lab_hostd -- --guest "$(lab_guest g1 "${mem}M")" --device g1:type=vbus-test,id=7
ram=/dev/shm/$tag-g1

# ---- the domain: the shipped XML, with kernel/initrd instead of a disk ----
python3 - "$top/dist/libvirt/vbus-guest.xml" "$run" "$ram" "$mem" \
	"$VBUS_BASE_CMDLINE" >"$run/guest.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
src, run, ram, mem, cmdline = sys.argv[1:]
ET.register_namespace("vbus", "urn:x-vbus:libvirt:1")
dom = ET.parse(src).getroot()
dom.set("type", "qemu")                       # TCG: no usable KVM here
dom.find("name").text = "vbus-lv"
dom.find("metadata/{urn:x-vbus:libvirt:1}guest/{urn:x-vbus:libvirt:1}ram").set("path", ram)
m = dom.find("memory"); m.set("unit", "MiB"); m.text = mem
dom.find("vcpu").text = "1"
os_ = dom.find("os")
os_.remove(os_.find("boot"))
for tag, text in (("kernel", run + "/kernel"), ("initrd", run + "/guest.cpio.gz"),
                  ("cmdline", cmdline)):
    ET.SubElement(os_, tag).text = text
ET.SubElement(dom, "on_poweroff").text = "destroy"
ET.SubElement(dom, "on_crash").text = "destroy"
dev = dom.find("devices")
for tag in ("disk", "serial", "console"):
    for e in dev.findall(tag):
        dev.remove(e)
dev.find("shmem/server").set("path", run + "/g1.sock")
ser = ET.SubElement(dev, "serial", type="file")
ET.SubElement(ser, "source", path=run + "/guest.log")
sys.stdout.write(ET.tostring(dom, encoding="unicode"))
PY
chmod 644 "$run/guest.xml"

# ---- the hook, as libvirtd runs it on "start begin" (id 1: see above) ----
if sed "s/<domain /<domain id=\"1\" /" "$run/guest.xml" |
	"${as_user[@]}" env VBUS_LIBVIRT_QEMU_CONF="$run/home/.config/libvirt/qemu.conf" \
	"$top/dist/libvirt/vbus-qemu-hook" vbus-lv start begin - >"$out/hook.log" 2>&1; then
	h_pass hook
else
	h_fail hook "$(cat "$out/hook.log")"
	finish
fi

# ---- start it, wait for the guest to power off ----
t0=$(vbus_now)
if virsh_s create "$run/guest.xml" >"$out/virsh.log" 2>&1; then h_pass virsh-create
else h_fail virsh-create "$(cat "$out/virsh.log")"; finish; fi
# no "| head" here: virsh writes its trailing blank line after the id, and
# a reader gone by then makes it die of SIGPIPE, which pipefail and set -e
# turn into the end of this script
id=$(virsh_s domid vbus-lv 2>/dev/null || true)
id=${id//[[:space:]]/}
if [[ "$id" == 1 ]]; then h_pass domain-id-1
else h_fail domain-id-1 "libvirt gave id '$id': the hook linked the path of id 1"; fi
if grep -qF " $ram" "/proc/$(cat "$run/xdg/libvirt/qemu/run/vbus-lv.pid" 2>/dev/null || echo 0)/maps" 2>/dev/null; then
	h_pass qemu-maps-hostd-ram
else
	h_fail qemu-maps-hostd-ram "QEMU does not map $ram"
fi
while [[ "$(virsh_s domstate vbus-lv 2>/dev/null || true)" == running* ]]; do
	if (($(printf '%.0f' "$(vbus_elapsed "$t0")") > timeout)); then
		h_fail guest-finished "still running after $timeout s"; break
	fi
	sleep 2
done
vbus_log "guest ran $(vbus_elapsed "$t0") s under libvirt (TCG)"
cp "$run/guest.log" "$out/guest.log" 2>/dev/null || true
if vbus_check_results "$out/guest.log"; then h_pass guest-results
else h_fail guest-results "see $out/guest.log"; fi
finish
