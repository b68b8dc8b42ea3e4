#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The vbus-hostd unit under a real systemd: runs inside the container
tests/ops/systemd-sandbox.sh boots (as root, with this build installed in
/usr/local and the container's boot having applied its sysusers.d and
tmpfiles.d).

  unit_sandbox_test.py run DISK REGEX     the checks whose name matches
  unit_sandbox_test.py qemu SOCK RAM      (internal) the QEMU side, run as
                                          another user in the group vbus

Probe checks: vbus-unit-probe runs as ExecStart= of vbus-hostd@probe (the
installed unit; a drop-in sets only ExecStart=, Type=oneshot and
Restart=no) and must be denied; then again with the setting(s) that deny
it removed (a second drop-in), when it must be allowed: so each check can
fail. Daemon checks: the real ExecStart= under the same unit. Each check
prints "ok: ..." or "FAIL: ..."; the exit status (also written to
/vbus-out/rc) is the number of failures.
"""
import grp
import os
import pwd
import re
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_test import FAILS, check, fake_qemu, wait_for  # noqa: E402

PROBE = "/opt/vbus-test/vbus-unit-probe"
HOSTD = "/usr/local/bin/vbus-hostd"
DROPDIR = "/run/systemd/system/vbus-hostd@%s.service.d"
DISKS = "/usr/local/share/vbus/systemd/disks.conf"
TAPS = "/usr/local/share/vbus/systemd/taps.conf"
QEMU_UID = 64000		# the QEMU side: a user of its own, in group vbus
STRANGER_UID = 64001		# a local user in no group of ours
OUT = "/run/vbus-unit-probe.out"


def sh(*argv, timeout=60):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    return r.returncode, (r.stdout + r.stderr).strip()


def show(unit, *props):
    _, out = sh("systemctl", "show", unit, "-p", ",".join(props))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def dropins(instance, files):
    """The drop-ins of vbus-hostd@INSTANCE: {name: text}, replacing any."""
    d = DROPDIR % instance
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    sh("systemctl", "daemon-reload")


# ---- the probe -------------------------------------------------------------

def run_probe(args, mutation):
    """vbus-hostd@probe with the probe as ExecStart=: (exit status, line)."""
    # its line goes to a file PID 1 opens (as root, before the sandbox):
    # how the unit logs is no part of what is tested
    files = {"50-probe.conf": "[Service]\nType=oneshot\nRestart=no\nExecStart=\n"
             "ExecStart=%s %s\nStandardOutput=truncate:%s\n" % (PROBE, " ".join(args), OUT)}
    if mutation:
        files["60-mutation.conf"] = mutation
    dropins("probe", files)
    sh("systemctl", "reset-failed", "vbus-hostd@probe")
    sh("systemctl", "start", "vbus-hostd@probe")
    p = show("vbus-hostd@probe", "ExecMainStatus")
    with open(OUT) as f:
        out = f.read()
    line = next((x for x in out.splitlines()
                 if re.match(r"(denied|allowed|error): ", x)), out[-300:])
    return int(p.get("ExecMainStatus", "-1") or -1), line


def probe_check(name, args, mutation, why, base="", under="the unit"):
    """Denied under the unit (with the drop-in @base, @under names it);
    allowed with @mutation too (the denying settings removed, @why names
    them)."""
    rc, line = run_probe(args, "[Service]\n" + base if base else None)
    check(rc == 0 and line.startswith("denied: "),
          "%s: denied under %s (%s)" % (name, under, line), "exit %d" % rc)
    rc, line = run_probe(args, "[Service]\n" + base + mutation)
    check(rc == 1 and line.startswith("allowed: "),
          "%s: allowed without %s (%s)" % (name, why, line), "exit %d" % rc)


def probe_allowed(name, args):
    """What the daemon needs must stay possible."""
    rc, line = run_probe(args, None)
    check(rc == 1 and line.startswith("allowed: "),
          "%s: allowed under the unit (%s)" % (name, line), "exit %d" % rc)


def disks_conf():
    """disks.conf's settings (without its [Service] line)."""
    with open(DISKS) as f:
        return f.read().split("[Service]", 1)[1]


ROOT = "User=\nGroup=\n"			# root, as the unit was before issue 21
NO_RUN = "TemporaryFileSystem=\n"		# the real /run
SYSTEM = "ProtectSystem=no\n"


def probe_checks(disk):
    return [
        ("shadow", lambda: probe_check("shadow", ["shadow"], ROOT, "User=vbus")),
        ("systemd_private", lambda: probe_check(
            "systemd_private", ["systemd_private"], ROOT + NO_RUN,
            "User=vbus and TemporaryFileSystem=/run")),
        ("dbus_system", lambda: probe_check(
            "dbus_system", ["dbus_system"], NO_RUN, "TemporaryFileSystem=/run")),
        ("disk", lambda: probe_check(
            "disk", ["disk", disk], ROOT + "PrivateDevices=no\n",
            "User=vbus and PrivateDevices=yes")),
        ("af_inet", lambda: probe_check(
            "af_inet", ["af_inet"], "RestrictAddressFamilies=\n",
            "RestrictAddressFamilies=AF_UNIX")),
        ("af_inet_uring", lambda: probe_check(
            "af_inet_uring", ["af_inet_uring"], disks_conf(),
            "the io_uring line of SystemCallFilter= (disks.conf puts it back)")),
        # with disks.conf io_uring is on, and what it opens is still the
        # user vbus's to open
        ("shadow_uring", lambda: probe_check(
            "shadow_uring", ["shadow_uring"], ROOT, "User=vbus", base=disks_conf(),
            under="the unit with disks.conf (io_uring on)")),
        ("write_etc", lambda: probe_check(
            "write_etc", ["write", "/etc"], ROOT + SYSTEM, "User=vbus and ProtectSystem=strict")),
        ("write_var_lib", lambda: probe_check(
            "write_var_lib", ["write", "/var/lib"], ROOT + SYSTEM,
            "User=vbus and ProtectSystem=strict")),
        ("write_run", lambda: probe_check(
            "write_run", ["write", "/run"], ROOT + SYSTEM + NO_RUN,
            "User=vbus, ProtectSystem=strict and TemporaryFileSystem=/run:ro")),
        ("write_dev_shm", lambda: probe_check(
            "write_dev_shm", ["write", "/dev/shm"], "ReadOnlyPaths=\n",
            "ReadOnlyPaths=/dev/shm")),
        ("own_dirs", lambda: [probe_allowed("own_dirs " + d, ["write", d])
                              for d in ("/run/vbus", "/dev/shm/vbus", "/var/lib/vbus")]),
    ]


# ---- the daemon ------------------------------------------------------------

def mode_owner(path):
    st = os.lstat(path)
    return "%04o %s:%s" % (stat.S_IMODE(st.st_mode), pwd.getpwuid(st.st_uid).pw_name,
                           grp.getgrgid(st.st_gid).gr_name)


def as_user(uid, groups, argv, **kw):
    return subprocess.Popen(argv, user=uid, group=uid, extra_groups=groups,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kw)


def ctl(name, *args):
    return sh(HOSTD, "ctl", "--ctl", "/run/vbus/%s.ctl.sock" % name, *args)


def start_daemon(name, conf, extra=None):
    os.makedirs("/etc/vbus", exist_ok=True)
    with open("/etc/vbus/%s.conf" % name, "w") as f:
        f.write(conf)
    dropins(name, extra or {})
    return sh("systemctl", "start", "vbus-hostd@" + name)


def daemon_serves():
    unit = "vbus-hostd@g1"
    rc, out = start_daemon("g1", "--guest g1:sock=/run/vbus/g1.sock,"
                           "mem=/dev/shm/vbus/g1,size=16M\n"
                           "--device g1:type=vbus-test,id=1\n")
    if not check(rc == 0, "daemon: systemctl start %s (READY=1)" % unit, out):
        print(sh("journalctl", "-u", unit, "--no-pager", "-o", "cat")[1])
        return
    pid = int(show(unit, "MainPID")["MainPID"])
    with open("/proc/%d/status" % pid) as f:
        st = dict((k, v.strip()) for k, v in (ln.split(":", 1) for ln in f if ":" in ln))
    vbus = pwd.getpwnam("vbus")
    check(st["Uid"].split()[0] == str(vbus.pw_uid) and int(st["CapEff"], 16) == 0
          and int(st["CapBnd"], 16) == 0 and st["NoNewPrivs"] == "1",
          "daemon: runs as vbus, no capability, no_new_privs",
          "Uid %s CapEff %s CapBnd %s" % (st["Uid"], st["CapEff"], st["CapBnd"]))
    for path, want in (("/run/vbus", "0750 vbus:vbus"), ("/dev/shm/vbus", "0750 vbus:vbus"),
                       ("/dev/shm/vbus/g1", "0660 vbus:vbus"),
                       ("/run/vbus/g1.sock", "0770 vbus:vbus"),
                       ("/run/vbus/g1.ctl.sock", "0600 vbus:vbus")):
        got = mode_owner(path)
        check(got == want, "daemon: %s is %s" % (path, want), got)
    # QEMU's side, as a user of its own in the group vbus
    q = as_user(QEMU_UID, [vbus.pw_gid], [sys.executable, os.path.abspath(__file__),
                                          "qemu", "/run/vbus/g1.sock", "/dev/shm/vbus/g1"])
    line = q.stdout.readline().strip()
    check(line == "ram rw-shared, handshake 5 fds",
          "QEMU's user (group vbus): maps the RAM file shared and connects", line)
    check(wait_for(lambda: '"state":"connected"' in ctl("g1", "list", "--json")[1]
                   .replace(" ", ""), 10),
          "daemon: serves the guest (ctl list from root: connected)", ctl("g1", "list")[1])
    # a stranger reaches neither the RAM file nor the socket
    s = as_user(STRANGER_UID, [], [sys.executable, "-c",
                                   "import os, socket\n"
                                   "for f in (lambda: os.open('/dev/shm/vbus/g1', os.O_RDONLY),"
                                   " lambda: socket.socket(socket.AF_UNIX).connect('/run/vbus/g1.sock')):\n"
                                   "  try: f(); print('reached')\n"
                                   "  except OSError as e: print(e.strerror)\n"])
    out = s.communicate(timeout=10)[0].split("\n")
    check(out[0] == "Permission denied", "another user: cannot open the RAM file", out[0])
    check(out[1] == "Permission denied", "another user: cannot connect to the guest socket",
          out[1])
    t0 = time.monotonic()
    rc, out = sh("systemctl", "stop", unit)
    p = show(unit, "Result", "ExecMainStatus", "ActiveState")
    check(rc == 0 and p["Result"] == "success" and p["ExecMainStatus"] == "0",
          "daemon: stops with the guest connected, exit 0 (%.2f s)" % (time.monotonic() - t0),
          "%s %s" % (out, p))
    check(not os.path.exists("/run/vbus/g1.sock") and os.path.exists("/dev/shm/vbus/g1"),
          "daemon: socket removed, RAM file kept for the next start")
    q.stdin.close()
    q.wait(10)


def daemon_restart():
    """A crash under a connected guest: systemd restarts the daemon, which
    takes the connection over from the descriptor store (FDSTORE=1 through
    the notify socket, the RAM file reopened: vbus's, 0660)."""
    unit = "vbus-hostd@r1"
    rc, out = start_daemon("r1", "--guest r1:sock=/run/vbus/r1.sock,"
                           "mem=/dev/shm/vbus/r1,size=16M\n"
                           "--device r1:type=vbus-test,id=1\n")
    if not check(rc == 0, "restart: systemctl start %s" % unit, out):
        return
    vbus = pwd.getpwnam("vbus")
    q = as_user(QEMU_UID, [vbus.pw_gid], [sys.executable, os.path.abspath(__file__),
                                          "qemu", "/run/vbus/r1.sock", "/dev/shm/vbus/r1"])
    q.stdout.readline()
    connected = wait_for(lambda: '"state":"connected"' in ctl("r1", "list", "--json")[1]
                         .replace(" ", ""), 10)
    old = show(unit, "MainPID")["MainPID"]
    stored = show(unit, "NFileDescriptorStore")["NFileDescriptorStore"]
    sh("systemctl", "kill", "-s", "SIGKILL", "--kill-who=main", unit)

    def restarted():
        p = show(unit, "MainPID", "ActiveState")
        return p["ActiveState"] == "active" and p["MainPID"] not in ("0", old)
    back = wait_for(restarted, 20)
    again = wait_for(lambda: '"state":"connected"' in ctl("r1", "list", "--json")[1]
                     .replace(" ", ""), 10)
    check(connected and stored == "6" and back and again,
          "restart: SIGKILL under a connected guest: restarted, the stored connection "
          "taken over (%s descriptors stored)" % stored,
          "connected %s stored %s back %s again %s: %s" % (
              connected, stored, back, again,
              sh("journalctl", "-u", unit, "--no-pager", "-o", "cat")[1][-400:]))
    sh("systemctl", "stop", unit)
    q.stdin.close()
    q.wait(10)


def daemon_disks():
    """vbus-blk needs io_uring: refused without disks.conf, served with it."""
    img = "/var/lib/vbus/d1.img"
    with open(img, "wb") as f:
        f.truncate(1 << 20)
    vbus = pwd.getpwnam("vbus")
    os.chown(img, vbus.pw_uid, vbus.pw_gid)
    conf = ("--guest d1:sock=/run/vbus/d1.sock,mem=/dev/shm/vbus/d1,size=16M\n"
            "--device d1:type=vbus-blk,id=1,file=%s\n" % img)
    rc, _ = start_daemon("d1", conf)
    log = sh("journalctl", "-u", "vbus-hostd@d1", "--no-pager", "-o", "cat")[1]
    check(rc != 0 and "io_uring unavailable" in log,
          "disks: without disks.conf a vbus-blk device is refused (io_uring off)",
          log[-300:])
    sh("systemctl", "reset-failed", "vbus-hostd@d1")
    rc, out = start_daemon("d1", conf, {"disks.conf": open(DISKS).read()})
    rc2, stats = ctl("d1", "stats", "d1", "1")
    check(rc == 0 and rc2 == 0 and "vbus-blk" in stats,
          "disks: with disks.conf the disk in /var/lib/vbus is served", out + stats)
    sh("systemctl", "stop", "vbus-hostd@d1")


def daemon_taps():
    """taps.conf: vbus-taps makes the tap for vbus, the daemon attaches."""
    conf = ("--guest t1:sock=/run/vbus/t1.sock,mem=/dev/shm/vbus/t1,size=16M\n"
            "--device t1:type=venet,id=2,tap=vbt1\n")
    rc, out = start_daemon("t1", conf, {"taps.conf": open(TAPS).read()})
    vbus = pwd.getpwnam("vbus")
    owner = open("/sys/class/net/vbt1/owner").read().strip() \
        if os.path.exists("/sys/class/net/vbt1/owner") else "none"
    check(owner == str(vbus.pw_uid), "taps: vbus-taps made tap vbt1 for vbus", owner)
    rc2, stats = ctl("t1", "stats", "t1", "2", "--json")
    check(rc == 0 and '"backend":"vbt1"' in stats.replace(" ", ""),
          "taps: the daemon (no capability) attached to it", out + stats)
    sh("systemctl", "stop", "vbus-hostd@t1")
    # a tap of that name made for another user: refused before the daemon
    sh("ip", "tuntap", "add", "dev", "vbt2", "mode", "tap", "vnet_hdr", "user", "0")
    rc, out = start_daemon("t2", conf.replace("t1", "t2").replace("vbt1", "vbt2"),
                           {"taps.conf": open(TAPS).read()})
    log = sh("journalctl", "-u", "vbus-hostd@t2", "--no-pager", "-o", "cat")[1]
    check(rc != 0 and "tap vbt2 belongs to uid" in log,
          "taps: a tap of that name made for another user is refused, saying whose",
          log[-300:])
    # queues=2: vbus-taps makes the tap multi-queue, the daemon opens
    # both queues (IFF_MULTI_QUEUE: tun_flags 0x100)
    rc, out = start_daemon("t3", conf.replace("t1", "t3").replace(
        "tap=vbt3", "tap=vbt3,queues=2"), {"taps.conf": open(TAPS).read()})
    flags = open("/sys/class/net/vbt3/tun_flags").read().strip() \
        if os.path.exists("/sys/class/net/vbt3/tun_flags") else "0"
    check(int(flags, 16) & 0x100 != 0,
          "taps: queues=2 makes tap vbt3 multi-queue", flags)
    rc2, stats = ctl("t3", "stats", "t3", "2", "--json")
    check(rc == 0 and '"backend":"vbt3"' in stats.replace(" ", "")
          and '"queues":2' in stats.replace(" ", ""),
          "taps: the daemon attached to both queues", out + stats)
    sh("systemctl", "stop", "vbus-hostd@t3")


# ---- main ------------------------------------------------------------------

def qemu_side(sock, ram):
    """As QEMU would: map the RAM file shared read-write, connect."""
    import mmap
    try:
        fd = os.open(ram, os.O_RDWR)
        mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        r = "ram rw-shared"
    except OSError as e:
        r = "ram: %s" % e.strerror
    s, fds = fake_qemu(sock)
    print("%s, handshake %d fds" % (r, len(fds)), flush=True)
    sys.stdin.read()		# held until the test is done with it
    s.close()


def run(disk, regex):
    try:
        pwd.getpwnam("vbus")
        ok = True
    except KeyError:
        ok = False
    check(ok, "setup: systemd-sysusers made the user vbus at boot")
    checks = probe_checks(disk) + [("daemon_serves", daemon_serves),
                                   ("daemon_restart", daemon_restart),
                                   ("daemon_disks", daemon_disks),
                                   ("daemon_taps", daemon_taps)]
    for name, fn in checks:
        if re.search(regex, name):
            fn()
    print("%d failure(s)%s" % (len(FAILS), (": " + ", ".join(FAILS)) if FAILS else ""))
    return min(len(FAILS), 100)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "qemu":
        qemu_side(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) != 4 or sys.argv[1] != "run":
        print(__doc__)
        return 2
    rc = 1
    try:
        rc = run(sys.argv[2], sys.argv[3])
    finally:
        sys.stdout.flush()
        with open("/vbus-out/rc", "w") as f:
            f.write("%d\n" % rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
