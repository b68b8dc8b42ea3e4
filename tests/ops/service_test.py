#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""vbus-hostd as a systemd service, without systemd (ctest label ops).

  service_test.py notify   HOSTD UNIT.in   sd_notify readiness and shutdown
  service_test.py sandbox  HOSTD UNIT.in   the unit's sandbox, emulated
  service_test.py syscalls HOSTD UNIT.in   every system call is allowed

HOSTD is the vbus-hostd binary, UNIT.in dist/systemd/vbus-hostd.service.in:
the daemon runs with the unit's own ExecStart= arguments. Each check prints
"ok: ..." or "FAIL: ..."; the exit status is the number of failures (0 =
pass). Every wait is bounded: a hang is a failure, not a stuck test.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FAILS = []


def check(cond, what, detail=""):
    if cond:
        print("ok: " + what)
    else:
        FAILS.append(what)
        print("FAIL: " + what + (": " + detail if detail else ""))
    return cond


def wait_for(pred, timeout, step=0.01):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def is_socket(path):
    try:
        return (os.lstat(path).st_mode & 0o170000) == 0o140000
    except FileNotFoundError:
        return False


# ---- the unit's command line ---------------------------------------------

def unit_argv(unit_in, hostd, ctl, conf):
    """ExecStart= of the unit with its placeholders filled in."""
    with open(unit_in) as f:
        for line in f:
            if line.startswith("ExecStart="):
                words = line[len("ExecStart="):].split()
                subst = {"@VBUS_HOSTD_BIN@": hostd, "@VBUS_UNIT_CTL@": ctl,
                         "@VBUS_UNIT_CONF@": conf}
                return [subst.get(w, w) for w in words]
    raise SystemExit("no ExecStart= in " + unit_in)


def unit_values(unit_in, key):
    out = []
    with open(unit_in) as f:
        for line in f:
            if line.startswith(key + "="):
                out.append(line[len(key) + 1:].strip())
    return out


# ---- the service manager's end of sd_notify ------------------------------

def notify_addr(name):
    """$NOTIFY_SOCKET's value as a socket address ('@' = abstract)."""
    return "\0" + name[1:] if name.startswith("@") else name


class Notify:
    """A datagram socket like systemd's, at a path or (name "@...") in the
    abstract namespace; recv() returns (text, sender pid)."""

    def __init__(self, name):
        self.name = name
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(notify_addr(name))
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.fillers, self.nfill = [], 0

    def recv(self, timeout):
        self.s.settimeout(timeout)
        try:
            data, anc, _, _ = self.s.recvmsg(4096, socket.CMSG_SPACE(12))
        except (socket.timeout, BlockingIOError):
            return None, None
        pid = None
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                pid = int.from_bytes(cdata[0:4], sys.byteorder)
        return data.decode(errors="replace"), pid

    def fill(self):
        """Fill the receive queue (net.unix.max_dgram_qlen datagrams): the
        next sender blocks until drain(). A sender also blocks on its own
        send buffer, so a fresh socket takes over until one cannot send
        even its first datagram: then the receiver is full."""
        while True:
            f = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.fillers.append(f)
            sent = 0
            try:
                while True:
                    f.sendto(b"F", socket.MSG_DONTWAIT, notify_addr(self.name))
                    sent += 1
            except BlockingIOError:
                pass
            self.nfill += sent
            if not sent:
                return

    def drain(self):
        for _ in range(self.nfill):
            self.recv(1)
        for f in self.fillers:
            f.close()
        self.fillers, self.nfill = [], 0

    def close(self):
        self.s.close()


# ---- a daemon and a QEMU stand-in ------------------------------------------

class Daemon:
    def __init__(self, argv, env_notify=None, wrap=(), cwd=None):
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        if env_notify is not None:
            env["NOTIFY_SOCKET"] = env_notify
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(list(wrap) + argv, env=env, cwd=cwd,
                                  stdout=subprocess.DEVNULL, stderr=self.err)
        self.pid = self.p.pid

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def wait(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def fake_qemu(sock_path):
    """Connect like QEMU's ivshmem-doorbell and take the handshake (seven
    int64 messages, five with an fd); returns (socket, fds)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    fds = []
    try:
        s.connect(sock_path)
    except OSError as e:
        print("  fake QEMU: connect %s: %s" % (sock_path, e))
        return s, fds
    for _ in range(7):
        try:
            data, anc, _, _ = s.recvmsg(8, socket.CMSG_SPACE(4))
        except OSError as e:
            print("  fake QEMU: handshake: %s" % e)
            break
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fds.append(int.from_bytes(cdata[:4], sys.byteorder))
        if len(data) != 8:
            break
    return s, fds


def ctl(hostd, ctl_path, *args):
    r = subprocess.run([hostd, "ctl", "--ctl", ctl_path] + list(args),
                       capture_output=True, text=True, timeout=10)
    return r.returncode, r.stdout + r.stderr


def guest_state(hostd, ctl_path, name):
    rc, out = ctl(hostd, ctl_path, "list", "--json")
    if rc:
        return None
    for g in json.loads(out)["guests"]:
        if g["guest"] == name:
            return g["state"]
    return None


SENDTO = {"x86_64": 44, "aarch64": 206}


def in_syscall(pid, nr):
    try:
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split()[0] == str(nr)
    except (OSError, IndexError):
        return False


def write_conf(path, guests, devices=()):
    with open(path, "w") as f:
        for g in guests:
            f.write("--guest %s\n" % g)
        for d in devices:
            f.write("--device %s\n" % d)


def shm_name(tag):
    return "/dev/shm/vbus-ops-%d-%s" % (os.getpid(), tag)


# ---- notify ----------------------------------------------------------------

def notify_ready_order(hostd, unit, T):
    """READY=1 is sent only when every socket listens and every RAM file
    is sized. Deterministic: the notify queue is full, so the daemon's
    first sendto() blocks; while it is blocked we look at what exists."""
    n = 64		# HOSTD_MAX_GUESTS: the set-up takes a while
    guests = ["g%d:sock=%s/g%d.sock,mem=%s/g%d.ram,size=1M" % (i, T, i, T, i)
              for i in range(1, n + 1)]
    write_conf(T + "/many.conf", guests, ["g1:type=vbus-test,id=1"])
    nt = Notify(T + "/notify.sock")
    nt.fill()
    nr = SENDTO.get(os.uname().machine)
    if not check(nr is not None, "architecture known for /proc/PID/syscall",
                 os.uname().machine):
        return
    d = Daemon(unit_argv(unit, hostd, T + "/ctl.sock", T + "/many.conf"),
               env_notify=T + "/notify.sock")
    try:
        blocked = wait_for(lambda: in_syscall(d.pid, nr) or d.p.poll() is not None, 10, 0.0005)
        check(blocked and d.p.poll() is None, "daemon blocks in its first sd_notify send",
              "exit %s: %s" % (d.p.poll(), d.stderr()))
        missing = [i for i in range(1, n + 1) if not is_socket("%s/g%d.sock" % (T, i))]
        sized = [i for i in range(1, n + 1)
                 if os.path.exists("%s/g%d.ram" % (T, i)) and
                 os.path.getsize("%s/g%d.ram" % (T, i)) == 1 << 20]
        check(not missing, "all %d guest sockets listen before the first notify" % n,
              "missing: %s" % missing[:8])
        check(is_socket(T + "/ctl.sock"), "control socket listens before the first notify")
        check(len(sized) == n, "all RAM files sized before the first notify",
              "%d of %d" % (len(sized), n))
        nt.drain()
        msg, pid = nt.recv(10)
        check(msg is not None and "READY=1" in msg.split("\n"),
              "first notify message is READY=1", repr(msg))
        check(pid == d.pid, "READY=1 comes from the main pid", "%s vs %d" % (pid, d.pid))
        check(msg is not None and "STATUS=serving %d guest(s)" % n in msg,
              "READY=1 carries STATUS=", repr(msg))

        # a connected guest, then SIGTERM: STOPPING=1 and a prompt exit 0
        q, fds = fake_qemu(T + "/g1.sock")
        check(len(fds) == 5, "fake QEMU got the 5 ivshmem fds", str(len(fds)))
        check(wait_for(lambda: guest_state(hostd, T + "/ctl.sock", "g1") == "connected", 10),
              "g1 is connected")
        # the connection goes to the descriptor store (fdstore_test.py)
        stored = [nt.recv(10)[0] for _ in range(6)]
        check(all(m and "FDSTORE=1" in m.split("\n") for m in stored),
              "the connection is stored: six FDSTORE=1", repr(stored))
        t0 = time.monotonic()
        d.p.send_signal(signal.SIGTERM)
        msg, pid = nt.recv(10)
        check(msg is not None and "STOPPING=1" in msg.split("\n"),
              "SIGTERM -> STOPPING=1", repr(msg))
        rc = d.wait(10)
        dt = time.monotonic() - t0
        check(rc == 0, "SIGTERM with a connected guest -> exit 0 (%.0f ms)" % (dt * 1e3),
              "exit %s" % rc)
        check(not is_socket(T + "/g1.sock") and not is_socket(T + "/ctl.sock"),
              "sockets removed on exit")
        q.close()
        for fd in fds:
            os.close(fd)
    finally:
        d.stop()
        nt.close()
    check("Sanitizer" not in d.stderr(), "no sanitizer report", d.stderr())


def notify_abstract(hostd, unit, T):
    name = "@vbus-ops-notify-%d" % os.getpid()
    write_conf(T + "/one.conf", ["g1:sock=%s/a.sock,mem=%s,size=16M" % (T, shm_name("a"))])
    nt = Notify(name)
    d = Daemon(unit_argv(unit, hostd, T + "/actl.sock", T + "/one.conf"), env_notify=name)
    try:
        msg, pid = nt.recv(10)
        check(msg is not None and "READY=1" in msg.split("\n") and pid == d.pid,
              "abstract NOTIFY_SOCKET: READY=1 from the daemon", repr(msg))
        check(is_socket(T + "/a.sock") and is_socket(T + "/actl.sock"),
              "abstract NOTIFY_SOCKET: sockets listen at READY=1")
        d.p.send_signal(signal.SIGTERM)
        msg, _ = nt.recv(10)
        check(msg is not None and "STOPPING=1" in msg, "abstract: STOPPING=1", repr(msg))
        check(d.wait(10) == 0, "abstract: exit 0 on SIGTERM")
    finally:
        d.stop()
        nt.close()
        if os.path.exists(shm_name("a")):
            os.unlink(shm_name("a"))


def notify_bad_config(hostd, unit, T):
    """A bad configuration: non-zero exit, the reason on stderr, no READY=1."""
    cases = [
        ("malformed guest spec", 2, "bad size '1Q'",
         ["g1:sock=%s/b.sock,mem=%s/b.ram,size=1Q" % (T, T)], []),
        ("unknown device type", 1, "unknown device type 'nope'",
         ["g1:sock=%s/b.sock,mem=%s/b.ram,size=16M" % (T, T)], ["g1:type=nope,id=1"]),
        ("RAM file in a missing directory", 1, "RAM file %s/no/such/dir" % T,
         ["g1:sock=%s/b.sock,mem=%s/no/such/dir,size=16M" % (T, T)], []),
        ("guest socket in a missing directory", 1, "cannot listen",
         ["g1:sock=%s/no/such/b.sock,mem=%s/b.ram,size=16M" % (T, T)], []),
    ]
    for what, want_rc, want_err, guests, devs in cases:
        write_conf(T + "/bad.conf", guests, devs)
        nt = Notify(T + "/bad-notify.sock")
        d = Daemon(unit_argv(unit, hostd, T + "/bctl.sock", T + "/bad.conf"),
                   env_notify=T + "/bad-notify.sock")
        rc = d.wait(10)
        msgs = []
        while True:
            m, _ = nt.recv(0.2)
            if m is None:
                break
            msgs.append(m)
        d.stop()
        nt.close()
        os.unlink(T + "/bad-notify.sock")
        check(rc == want_rc, "%s: exit %d" % (what, want_rc), "exit %s" % rc)
        check(want_err in d.stderr(), "%s: stderr says why" % what, d.stderr())
        check(not any("READY=1" in m.split("\n") for m in msgs),
              "%s: no READY=1" % what, repr(msgs))
        if want_rc == 1:
            check(any(m.startswith("STATUS=start-up failed: ") for m in msgs),
                  "%s: STATUS= says why" % what, repr(msgs))


def notify_dead_socket(hostd, unit, T):
    """$NOTIFY_SOCKET names nothing: the daemon logs it and serves anyway;
    unset: nothing is sent and nothing is logged. The stderr is judged
    once the daemon exited: the control socket listens before READY=1 is
    sent, and SIGTERM (blocked since before that) is taken only after it,
    so by then READY=1 and STOPPING=1 have been tried, whatever the
    scheduling."""
    write_conf(T + "/one.conf", ["g1:sock=%s/d.sock,mem=%s,size=16M" % (T, shm_name("d"))])
    for env, want_log in ((T + "/nobody-listens", True), (None, False)):
        d = Daemon(unit_argv(unit, hostd, T + "/dctl.sock", T + "/one.conf"), env_notify=env)
        try:
            up = wait_for(lambda: is_socket(T + "/dctl.sock"), 10)
            check(up, "NOTIFY_SOCKET=%s: daemon comes up" % env)
            d.p.send_signal(signal.SIGTERM)
            check(d.wait(10) == 0, "NOTIFY_SOCKET=%s: exit 0 on SIGTERM" % env)
            logged = "cannot notify the service manager" in d.stderr()
            check(logged == want_log, "NOTIFY_SOCKET=%s: %s" %
                  (env, "the failure is logged" if want_log else "nothing logged"), d.stderr())
        finally:
            d.stop()
    if os.path.exists(shm_name("d")):
        os.unlink(shm_name("d"))


# ---- sandbox -----------------------------------------------------------------

def sandbox_wrap(rw_dirs, bounding, setup=""):
    """The unit's sandbox by hand: a private network namespace
    (PrivateNetwork=), a mount namespace where / is read-only but for
    @rw_dirs (ProtectSystem=strict, ReadWritePaths=, RuntimeDirectory=;
    /dev/shm is its own mount and stays writable, as under systemd), the
    bounding set @bounding (CapabilityBoundingSet=) and no_new_privs
    (NoNewPrivileges=). @setup runs first, as root (an operator's `ip
    tuntap add`). Returns a command prefix; the command follows as "$@"."""
    script = "set -e; " + setup
    for dr in rw_dirs:
        script += 'mount --bind "%s" "%s"; ' % (dr, dr)
    script += "mount -o remount,bind,ro /; "
    script += 'exec setpriv --bounding-set %s --inh-caps -all --no-new-privs -- "$@"' % bounding
    return ["unshare", "--mount", "--net", "--propagation", "private", "--",
            "sh", "-c", script, "sandbox"]


def sandbox_run(hostd, unit, T, name, guests, devs=(), bounding="-all", setup=""):
    """The unit's ExecStart= in sandbox_wrap(); its configuration in a
    directory that becomes read-only, its sockets in a writable "runtime
    directory" ({run} in @guests). Returns (daemon, READY=1 seen, run dir)."""
    etc, run = T + "/etc-" + name, T + "/run-" + name
    os.makedirs(etc)
    os.makedirs(run)
    write_conf(etc + "/g.conf", [g.format(run=run) for g in guests], devs)
    nt = Notify(run + "/notify.sock")
    d = Daemon(unit_argv(unit, hostd, run + "/ctl.sock", etc + "/g.conf"),
               env_notify=run + "/notify.sock",
               wrap=sandbox_wrap([run], bounding, setup), cwd="/")
    msg = None
    end = time.monotonic() + 15
    while msg is None and d.p.poll() is None and time.monotonic() < end:
        msg, _ = nt.recv(0.2)
    nt.close()
    return d, msg is not None and "READY=1" in msg, run


def sandbox_base(hostd, unit, T, ram):
    d, ready, run = sandbox_run(hostd, unit, T, "base",
                                ["g1:sock={run}/g1.sock,mem=%s,size=16M" % ram],
                                ["g1:type=vbus-test,id=1"])
    try:
        if not check(ready, "sandboxed (no capabilities, read-only /, private net): READY=1",
                     d.stderr()):
            return
        with open("/proc/%d/status" % d.pid) as f:
            st = dict((k, v.strip()) for k, v in
                      (line.split(":", 1) for line in f if ":" in line))
        # the sandboxed process is the daemon itself (setpriv execs)
        check(int(st["CapBnd"], 16) == 0 and st["NoNewPrivs"] == "1",
              "the daemon runs with an empty bounding set and no_new_privs",
              "CapBnd %s NoNewPrivs %s" % (st["CapBnd"], st["NoNewPrivs"]))
        q, fds = fake_qemu(run + "/g1.sock")
        check(len(fds) == 5, "sandboxed: fake QEMU handshake")
        check(wait_for(lambda: guest_state(hostd, run + "/ctl.sock", "g1") == "connected", 10),
              "sandboxed: guest connected, ctl works from outside")
        rc, out = ctl(hostd, run + "/ctl.sock", "add", "g1", "type=vbus-test,id=2")
        check(rc == 0, "sandboxed: ctl add", out)
        d.p.send_signal(signal.SIGTERM)
        check(d.wait(10) == 0, "sandboxed: exit 0 on SIGTERM with a guest connected",
              d.stderr())
        q.close()
        for fd in fds:
            os.close(fd)
    finally:
        d.stop()


def sandbox_readonly(hostd, unit, T):
    """The emulation must bite: a RAM file outside the writable paths."""
    d, ready, _ = sandbox_run(hostd, unit, T, "ro",
                              ["g1:sock={run}/g1.sock,mem=%s/ro.ram,size=16M" % T])
    rc = d.wait(10)
    d.stop()
    check(not ready and rc == 1 and "Read-only file system" in d.stderr(),
          "sandboxed: a RAM file outside ReadWritePaths= is refused (read-only)",
          "ready %s rc %s: %s" % (ready, rc, d.stderr()))


def sandbox_taps(hostd, unit, T, ram):
    """A tap made beforehand needs no capability; creating one needs
    CAP_NET_ADMIN, which the unit never has (taps.conf makes the taps for
    the user vbus before the daemon starts)."""
    for label, bounding, tap, want in (
            ("existing tap, no capabilities", "-all", "vbt0", "vbt0"),
            ("new tap, no capabilities", "-all", "vbnew0", None)):
        d, ready, run = sandbox_run(
            hostd, unit, T, re.sub(r"[^a-z0-9]+", "-", label),
            ["g1:sock={run}/g1.sock,mem=%s,size=16M" % ram],
            ["g1:type=venet,id=1,tap=%s" % tap], bounding,
            "ip tuntap add dev vbt0 mode tap vnet_hdr; ")
        try:
            check(ready, "%s: READY=1" % label, d.stderr())
            rc, out = ctl(hostd, run + "/ctl.sock", "stats", "g1", "1", "--json")
            dev = json.loads(out)["devices"][0]["device"] if rc == 0 else {}
            if want:
                check(dev.get("backend") == want, "%s: the device has tap %s" % (label, want),
                      out)
            else:
                check(dev.get("backend") == "none" and
                      "CAP_NET_ADMIN" in dev.get("backend_error", ""),
                      "%s: no backend, and stats say CAP_NET_ADMIN" % label, out)
            d.p.send_signal(signal.SIGTERM)
            check(d.wait(10) == 0, "%s: exit 0 on SIGTERM" % label)
        finally:
            d.stop()
            if os.path.exists(ram):
                os.unlink(ram)


def sandbox(hostd, unit, T):
    if not check(os.geteuid() == 0, "running as root (unshare, setpriv, tap)",
                 "the sandbox emulation needs root"):
        return
    ram = shm_name("sb")
    try:
        sandbox_base(hostd, unit, T, ram)
        sandbox_readonly(hostd, unit, T)
        sandbox_taps(hostd, unit, T, ram)
    finally:
        if os.path.exists(ram):
            os.unlink(ram)


# ---- syscalls -------------------------------------------------------------

def syscall_groups():
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not line.startswith(" ") and s.startswith("@"):
            cur = groups.setdefault(s, set())
        elif cur is not None:
            cur.add(s)
    return groups


def expand(names, groups, seen=None):
    seen = set() if seen is None else seen
    out = set()
    for n in names:
        if n.startswith("@"):
            if n in seen:
                continue
            seen.add(n)
            out |= expand(groups.get(n, ()), groups, seen)
        else:
            out.add(n)
    return out


def unit_syscall_filter(*files):
    """The calls SystemCallFilter= allows, over @files in order (the unit,
    then drop-ins), as systemd reads it: the first line is an allow list,
    a later "~" line removes calls, a later allow line adds them back."""
    groups = syscall_groups()
    allow = None
    for path in files:
        for v in unit_values(path, "SystemCallFilter"):
            deny = v.startswith("~")
            calls = expand(v.lstrip("~").split(), groups)
            if allow is None:
                allow = set() if deny else calls
            elif deny:
                allow -= calls
            else:
                allow |= calls
    return allow or set()


def syscalls(hostd, unit, T):
    """Run the daemon under strace through start-up, a QEMU connection and
    its doorbells, ctl add/drop/stats, a venet device on a tap, a
    vbus-blk device (its io_uring) and SIGTERM; every system call it
    makes must pass the unit's
    SystemCallFilter=, and none may map memory writable and executable
    (MemoryDenyWriteExecute=)."""
    if not check(shutil.which("strace") is not None, "strace installed (scripts/deps.sh)"):
        return
    if not check(os.geteuid() == 0, "running as root (tap in a private namespace)"):
        return
    # the daemon traced has a disk, so its unit has disks.conf
    disks = os.path.join(os.path.dirname(unit), "disks.conf")
    allowed = unit_syscall_filter(unit, disks)
    check(len(allowed) > 100, "SystemCallFilter= of the unit expands (%d calls)" % len(allowed))
    uring = {"io_uring_setup", "io_uring_register", "io_uring_enter"}
    check(not uring & unit_syscall_filter(unit),
          "the unit alone allows no io_uring call (disks.conf does)")
    ram = shm_name("sc")
    write_conf(T + "/sc.conf",
               ["g1:sock=%s/s1.sock,mem=%s,size=16M" % (T, ram),
                "g2:sock=%s/s2.sock,mem=%s-2,size=16M,machine=pc" % (T, ram)],
               ["g1:type=vbus-test,id=1", "g1:type=venet,id=2,tap=vbsc0",
                "g1:type=vbus-blk,id=4,file=%s/sc-disk.img" % T])
    with open(T + "/sc-disk.img", "wb") as f:
        f.truncate(1 << 20)
    trace = T + "/strace.out"
    wrap = ["unshare", "--net", "--", "sh", "-c",
            'ip tuntap add dev vbsc0 mode tap vnet_hdr && exec "$@"', "sc",
            "strace", "-f", "-qq", "-o", trace]
    nt = Notify(T + "/sc-notify.sock")
    d = Daemon(unit_argv(unit, hostd, T + "/sctl.sock", T + "/sc.conf"),
               env_notify=T + "/sc-notify.sock", wrap=wrap)
    daemon_pid = None
    try:
        msg, daemon_pid = nt.recv(20)
        if not check(msg is not None and "READY=1" in msg and daemon_pid,
                     "traced daemon: READY=1", d.stderr()):
            return
        q, fds = fake_qemu(T + "/s1.sock")
        for fd in fds[1:3]:		# the host doorbells: hypercall, signal
            os.write(fd, (1).to_bytes(8, sys.byteorder))
        for args in (["add", "g1", "type=vbus-test,id=3"], ["stats", "g1"],
                     ["stats", "g1", "2", "--json"], ["drop", "g1", "3"],
                     ["stats", "g1", "4"], ["drop", "g1", "4"],
                     ["add", "g1", "type=vbus-blk,id=5,file=%s/sc-disk.img" % T],
                     ["list"]):
            ctl(hostd, T + "/sctl.sock", *args)
        q.close()		# QEMU goes away: the bus is torn down
        wait_for(lambda: guest_state(hostd, T + "/sctl.sock", "g1") == "waiting", 10)
        for fd in fds:
            os.close(fd)
        # the daemon itself, not strace (which would detach from it)
        os.kill(daemon_pid, signal.SIGTERM)
        check(d.wait(20) == 0, "traced daemon: exit 0 on SIGTERM", d.stderr())
    finally:
        if daemon_pid and d.p.poll() is None:
            os.kill(daemon_pid, signal.SIGKILL)	# strace would only detach
        d.stop()
        nt.close()
        for f in (ram, ram + "-2"):
            if os.path.exists(f):
                os.unlink(f)
    used, wx = set(), []
    with open(trace) as f:
        for line in f:
            m = re.match(r"\d+\s+(\w+)\(", line)
            if m:
                used.add(m.group(1))
            if re.search(r"\b(mmap|mprotect|pkey_mprotect)\(.*PROT_EXEC", line) and \
               (" mprotect(" in line or "PROT_WRITE" in line):
                wx.append(line.strip())
    check(len(used) > 20, "strace saw the daemon's system calls (%d distinct)" % len(used))
    check("io_uring_setup" in used, "strace saw vbus-blk set up its io_uring")
    check(uring <= allowed, "io_uring calls (vbus-blk) pass SystemCallFilter= with disks.conf",
          " ".join(sorted(uring - allowed)))
    bad = sorted(used - allowed)
    check(not bad, "every system call passes SystemCallFilter=", " ".join(bad))
    check(not wx, "no writable+executable mapping, no mprotect(PROT_EXEC)", "; ".join(wx[:3]))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("notify", "sandbox", "syscalls"):
        print(__doc__)
        return 2
    mode, hostd, unit = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    # short paths: sun_path is 108 bytes
    T = tempfile.mkdtemp(prefix="vbus-ops.", dir="/tmp")
    try:
        if mode == "notify":
            notify_ready_order(hostd, unit, T)
            notify_abstract(hostd, unit, T)
            notify_bad_config(hostd, unit, T)
            notify_dead_socket(hostd, unit, T)
        elif mode == "sandbox":
            sandbox(hostd, unit, T)
        else:
            syscalls(hostd, unit, T)
    finally:
        shutil.rmtree(T, ignore_errors=True)
    print("%d failure(s)%s" % (len(FAILS), (": " + ", ".join(FAILS)) if FAILS else ""))
    return min(len(FAILS), 100)


if __name__ == "__main__":
    sys.exit(main())
