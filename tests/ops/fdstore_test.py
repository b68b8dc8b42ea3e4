#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""vbus-hostd restarts through a descriptor store (ctest label ops;
docs/operations.md, "Restarts"; docs/transport.md, "Host restarts").

  fdstore_test.py keeper HOSTD KEEPER   restarts under vbus-fdkeeper
  fdstore_test.py listen HOSTD          what LISTEN_FDS may and may not be
  fdstore_test.py cut store|removal     (run by the keeper test) a daemon
                                        killed halfway through storing or
                                        removing guest g1's connection

keeper: a QEMU stand-in connects; the daemon is killed (SIGKILL) and
stopped (SIGTERM) and comes back each time on the same connection: BAR2's
host_epoch goes odd on the way down and to the next even value on the
way up, the guest's MSI-X eventfds fire, a hypercall left in the mailbox
is answered -ENOTCONN, and a NEGOTIATE rung on the old doorbell eventfd
is served by the new daemon. Then, with guests g1 and g2 connected, a
daemon is killed halfway through storing g1's connection (before the
marker, g1/conn) or removing it (after the marker went): the next daemon
starts, drops g1's leftovers (logged; the keeper no longer holds them),
takes g2 over, and serves g1 as a new guest. listen: every mistake in
what is passed in exits 1 with its own message; an incomplete set or a
name passed twice is dropped with its own message and the daemon runs.
Prints "ok: ..."/"FAIL: ..."; exit status =
failures.
"""
import errno
import fcntl
import mmap
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_test import (FAILS, check, wait_for, fake_qemu, write_conf,  # noqa: E402
                          shm_name)

MAGIC = 0xbf53eef5
OFF_EPOCH, OFF_HC, OFF_HC_SEQ, OFF_HC_DONE, OFF_HC_RESULT = 24, 64, 80, 128, 132
GPA_REQ = 0x10000		# where the stand-in puts a hypercall request


class Shm:
    def __init__(self, fd):
        self.m = mmap.mmap(fd, 4096)

    def u32(self, off):
        return struct.unpack_from("<I", self.m, off)[0]

    def s32(self, off):
        return struct.unpack_from("<i", self.m, off)[0]

    def put32(self, off, v):
        struct.pack_into("<I", self.m, off, v)


class Keeper:
    def __init__(self, keeper, argv):
        self.log = tempfile.NamedTemporaryFile(prefix="vbus-keeper.", delete=False)
        self.p = subprocess.Popen([keeper, "--restart-delay", "50", "--"] + argv,
                                  stdout=subprocess.DEVNULL, stderr=self.log)

    def text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def count(self, what):
        return self.text().count(what)

    def held(self):
        """How many descriptors the keeper has open: its own plus the store."""
        try:
            return len(os.listdir("/proc/%d/fd" % self.p.pid))
        except OSError:
            return -1

    def daemon_pid(self):
        """The pid of the newest 'started pid N' line."""
        pids = [int(line.split("started pid ")[1].split()[0])
                for line in self.text().splitlines() if "started pid " in line]
        return pids[-1] if pids else None

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                return self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def eventfd_fired(fd):
    r, _, _ = select.select([fd], [], [], 10)
    if not r:
        return False
    os.read(fd, 8)
    return True


def hypercall(shm, ram, db_fd, seq, vector, payload):
    """Put a request at GPA_REQ, fill the mailbox, ring DB_HC."""
    ram.seek(GPA_REQ)
    ram.write(payload)
    ram.flush()
    struct.pack_into("<IIQ", shm.m, OFF_HC, vector, len(payload), GPA_REQ)
    shm.put32(OFF_HC_SEQ, seq)
    os.write(db_fd, struct.pack("<Q", 1))


def keeper_restarts(hostd, keeper, T):
    ram = shm_name("restart")
    write_conf(T + "/r.conf", ["g1:sock=%s/g1.sock,mem=%s,size=1M" % (T, ram)],
               ["g1:type=vbus-test,id=1"])
    k = Keeper(keeper, [hostd, "--foreground", "--ctl", T + "/r.ctl",
                        "--config", T + "/r.conf"])
    try:
        check(wait_for(lambda: k.count("ready") >= 1, 10), "keeper: daemon ready",
              k.text())
        own = k.held()		# nothing stored yet: the keeper's own
        s, fds = fake_qemu(T + "/g1.sock")
        check(len(fds) == 5, "QEMU stand-in got BAR2 and four eventfds", str(fds))
        if len(fds) != 5:
            return
        bar2, db_hc, _db_sig, msix_hc, msix_ev = fds
        shm = Shm(bar2)
        check(shm.u32(0) == MAGIC and shm.u32(OFF_EPOCH) == 0,
              "fresh BAR2: epoch 0")
        # the daemon stores the connection: six descriptors reach the keeper
        check(wait_for(lambda: k.held() == own + 6, 10),
              "the connection is stored: the keeper holds six more descriptors",
              "%d, was %d" % (k.held(), own))
        first = k.daemon_pid()

        # a crash: nothing written; the store brings the connection back
        os.kill(first, signal.SIGKILL)
        check(wait_for(lambda: k.count("ready") >= 2, 10),
              "SIGKILL: keeper restarted the daemon", k.text())
        check("with 6 stored descriptors" in k.text(),
              "the new daemon got the six stored descriptors", k.text())
        check(wait_for(lambda: shm.u32(OFF_EPOCH) == 2, 10),
              "after the crash: host_epoch 0 -> 2", str(shm.u32(OFF_EPOCH)))
        check(eventfd_fired(msix_hc) and eventfd_fired(msix_ev),
              "after the crash: both guest vectors fired")
        s.setblocking(False)
        try:
            eof = s.recv(1) == b""
        except BlockingIOError:
            eof = False
        check(not eof, "QEMU's socket stayed open across the crash")

        # the new daemon serves the old doorbell: NEGOTIATE
        with open(ram, "r+b") as f:
            hypercall(shm, f, db_hc, 7, 0, struct.pack("<IIQ", MAGIC, 1, 0))
        check(wait_for(lambda: shm.u32(OFF_HC_DONE) == 7, 10) and
              shm.s32(OFF_HC_RESULT) == 0,
              "restarted daemon answers NEGOTIATE on the stored doorbell",
              "done %u result %d" % (shm.u32(OFF_HC_DONE), shm.s32(OFF_HC_RESULT)))

        # graceful: odd epoch at once; a request left unanswered -> ENOTCONN
        second = k.daemon_pid()
        os.kill(second, signal.SIGSTOP)
        shm.put32(OFF_HC_SEQ, 8)	# rung while the daemon cannot answer
        os.kill(second, signal.SIGTERM)
        os.kill(second, signal.SIGCONT)
        check(wait_for(lambda: k.count("ready") >= 3, 10),
              "SIGTERM: keeper restarted the daemon", k.text())
        check(shm.u32(OFF_EPOCH) == 4, "after SIGTERM: host_epoch 2 -> (3) -> 4",
              str(shm.u32(OFF_EPOCH)))
        check(shm.u32(OFF_HC_DONE) == 8 and
              shm.s32(OFF_HC_RESULT) == -errno.ENOTCONN,
              "a hypercall nobody answered is answered -ENOTCONN",
              "done %u result %d" % (shm.u32(OFF_HC_DONE), shm.s32(OFF_HC_RESULT)))

        # QEMU goes away: its descriptors leave the store
        s.close()
        for fd in fds:
            os.close(fd)
        check(wait_for(lambda: k.held() == own, 10),
              "QEMU left: the daemon removed its six descriptors from the store",
              "%d, was %d" % (k.held(), own))
        os.kill(k.daemon_pid(), signal.SIGKILL)
        check(wait_for(lambda: k.count("ready") >= 4, 10) and
              "with 0 stored descriptors" in k.text().splitlines()[-2] + k.text().splitlines()[-1],
              "after QEMU left, the next daemon gets nothing", k.text()[-400:])
    finally:
        rc = k.stop()
        check(rc == 0, "SIGTERM to the keeper: daemon stopped, exit 0", str(rc))
        if os.path.exists(ram):
            os.unlink(ram)


def cut_short(mode):
    """Play a daemon killed (SIGKILL) halfway through storing (mode
    "store": three of g1's six, not the marker g1/conn, after its old set
    was removed) or removing (mode "removal": the marker and one more) g1's
    connection, with the keeper's stored descriptors as the fds."""
    names = os.environ["LISTEN_FDNAMES"].split(":")
    fd = {n: 3 + i for i, n in enumerate(names)}
    addr = os.environ["NOTIFY_SOCKET"]
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    kinds = ["bar2", "db0", "db1", "msix0", "msix1", "conn"]  # store order
    if mode == "store":
        for k in kinds:
            s.sendto(b"FDSTOREREMOVE=1\nFDNAME=g1/" + k.encode(), addr)
        for k in kinds[:3]:
            s.sendmsg([b"FDSTORE=1\nFDPOLL=0\nFDNAME=g1/" + k.encode()],
                      [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                        struct.pack("i", fd["g1/" + k]))], 0, addr)
    else:
        for k in reversed(kinds[-2:]):
            s.sendto(b"FDSTOREREMOVE=1\nFDNAME=g1/" + k.encode(), addr)
    os.kill(os.getpid(), signal.SIGKILL)


def keeper_cut_short(hostd, keeper, T, mode):
    """The next daemon after a store/removal of g1 cut short (cut_short)."""
    rams = [shm_name("cut-%s-%s" % (mode, g)) for g in ("g1", "g2")]
    conf = T + "/c.conf"
    write_conf(conf, ["%s:sock=%s/%s-%s.sock,mem=%s,size=1M" % (g, T, mode, g, r)
                      for g, r in zip(("g1", "g2"), rams)],
               ["g1:type=vbus-test,id=1", "g2:type=vbus-test,id=1"])
    runs, run = T + "/runs-" + mode, T + "/run-%s.sh" % mode
    with open(run, "w") as f:	# the 2nd start is the daemon cut short
        f.write('#!/bin/sh\nn=$(cat %s 2>/dev/null || echo 0)\n'
                'echo $((n + 1)) > %s\n'
                'if [ "$n" = 1 ]; then exec %s %s cut %s; fi\n'
                'exec %s --foreground --ctl %s/c-%s.ctl --config %s\n'
                % (runs, runs, sys.executable, os.path.abspath(__file__), mode,
                   hostd, T, mode, conf))
    os.chmod(run, 0o755)
    k = Keeper(keeper, [run])
    what = "store cut before the marker" if mode == "store" else \
        "removal cut after the marker"
    conns = []
    try:
        check(wait_for(lambda: k.count("ready") >= 1, 10), "%s: daemon ready" % what,
              k.text())
        own = k.held()
        conns = [fake_qemu("%s/%s-%s.sock" % (T, mode, g)) for g in ("g1", "g2")]
        check(all(len(f) == 5 for _, f in conns), "%s: both QEMU stand-ins connected"
              % what, str([f for _, f in conns]))
        if not all(len(f) == 5 for _, f in conns):
            return
        check(wait_for(lambda: k.held() == own + 12, 10),
              "%s: both connections stored (twelve descriptors)" % what,
              "%d, was %d" % (k.held(), own))
        os.kill(k.daemon_pid(), signal.SIGKILL)
        check(wait_for(lambda: k.count("ready") >= 2, 20),
              "%s: the daemon after the cut starts (not exit 1)" % what, k.text())
        found = "bar2,db0,db1" if mode == "store" else "bar2,db0,db1,msix0"
        check("stored connection of guest g1 is incomplete: no 'g1/conn' (found %s;"
              % found in k.text() and "guest g1 is not taken over" in k.text(),
              "%s: g1's leftovers logged (found %s)" % (what, found), k.text()[-800:])
        check(wait_for(lambda: k.held() == own + 6, 10),
              "%s: the keeper no longer holds g1's leftovers (g2's six remain)" % what,
              "%d, was %d" % (k.held(), own))
        g2 = Shm(conns[1][1][0])
        check(wait_for(lambda: g2.u32(OFF_EPOCH) == 2, 10),
              "%s: g2 taken over (host_epoch 0 -> 2)" % what, str(g2.u32(OFF_EPOCH)))
        g1 = fake_qemu("%s/%s-g1.sock" % (T, mode))
        conns.append(g1)
        check(len(g1[1]) == 5 and wait_for(lambda: k.held() == own + 12, 10),
              "%s: g1 connects again as a new guest, stored again" % what,
              "%s; %d, was %d" % (g1[1], k.held(), own))
    finally:
        for s, fds in conns:
            s.close()
            for fd in fds:
                os.close(fd)
        rc = k.stop()
        check(rc == 0, "%s: SIGTERM to the keeper: exit 0" % what, str(rc))
        for r in rams:
            if os.path.exists(r):
                os.unlink(r)


def keeper_bad_config(hostd, keeper, T):
    k = Keeper(keeper, [hostd, "--foreground", "--ctl", T + "/b.ctl",
                        "--guest", "bad"])
    try:
        rc = k.p.wait(10)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 2 and k.count("started pid") == 1,
          "a daemon exiting 2 (configuration) is not restarted; keeper exits 2",
          "rc %s: %s" % (rc, k.text()))
    k.stop()


def run_listen(hostd, T, fds, env, tag):
    """Start the daemon with @fds at 3.. and LISTEN_* from @env."""
    ram = shm_name(tag)
    args = [hostd, "--foreground", "--ctl", T + "/%s.ctl" % tag,
            "--guest", "g1:sock=%s/%s.sock,mem=%s,size=1M" % (T, tag, ram)]
    full = dict(os.environ)
    full.update(env)
    if full.get("LISTEN_PID") == "self":
        # the daemon's own pid, as systemd sets it: sh's, kept by exec
        del full["LISTEN_PID"]
        args = ["sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh"] + args

    def place():
        high = [os.dup2(fd, 100 + i) for i, fd in enumerate(fds)]
        for i, fd in enumerate(high):
            os.dup2(fd, 3 + i)
        # nothing else: ctest, for one, leaves a descriptor open
        os.closerange(3 + len(fds), 100 + len(fds))
    # close_fds would run after place() and close what it placed
    p = subprocess.Popen(args, env=full, preexec_fn=place, close_fds=False,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=3)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=10)
        rc = "running"
    else:
        rc = p.returncode
    if os.path.exists(ram):
        os.unlink(ram)
    return rc, out + err


def listen_errors(hostd, T):
    efd = os.eventfd(0) if hasattr(os, "eventfd") else None
    sa, sb = socket.socketpair()
    pr, pw = os.pipe()
    cases = [
        ("mism", [sa.fileno(), pr], {"LISTEN_PID": "self", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "g1/conn"},
         1, "LISTEN_FDNAMES names 1 descriptor(s), LISTEN_FDS says 2"),
        ("nonames", [sa.fileno()], {"LISTEN_PID": "self", "LISTEN_FDS": "1"},
         1, "without LISTEN_FDNAMES"),
        ("notnum", [], {"LISTEN_PID": "self", "LISTEN_FDS": "x", "LISTEN_FDNAMES": ""},
         1, "LISTEN_FDS=x: not a count"),
        ("closed", [], {"LISTEN_PID": "self", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "g1/conn"},
         1, "stored descriptor 3 ('g1/conn') is not open"),
        ("badname", [sa.fileno()], {"LISTEN_PID": "self", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "foo"},
         1, "is named 'foo', not GUEST/"),
        ("twice", [sa.fileno(), sa.fileno()],
         {"LISTEN_PID": "self", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "g1/conn:g1/conn"},
         "running", "stored connection of guest g1 is ambiguous: 'g1/conn' passed "
         "twice (fds 3 and 4): dropped, guest g1 is not taken over"),
        # the marker alone: an older daemon (conn stored first) cut short
        ("partial", [sa.fileno()], {"LISTEN_PID": "self", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "g1/conn"},
         "running", "stored connection of guest g1 is incomplete: no 'g1/bar2' "
         "(found conn; a store or removal was cut short): dropped, guest g1 is "
         "not taken over"),
        ("kind", [pr] * 6,
         {"LISTEN_PID": "self", "LISTEN_FDS": "6",
          "LISTEN_FDNAMES": "g1/conn:g1/bar2:g1/db0:g1/db1:g1/msix0:g1/msix1"},
         1, "stored descriptor 'g1/conn' (fd 3) is not a socket"),
        ("otherpid", [sa.fileno()],
         {"LISTEN_FDS": "1", "LISTEN_FDNAMES": "g1/conn", "LISTEN_PID": "1"},
         "running", "LISTEN_FDS is for process 1, not us: ignored"),
        ("nopid", [sa.fileno()], {"LISTEN_FDS": "1", "LISTEN_FDNAMES": "g1/conn"},
         "running", "LISTEN_FDS without LISTEN_PID: not ours to take, ignored"),
        ("stranger", [sa.fileno()], {"LISTEN_PID": "self", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "zz/conn"},
         "running", "stored descriptor 'zz/conn' belongs to no configured guest: dropped"),
    ]
    names6 = "g1/conn:g1/bar2:g1/db0:g1/db1:g1/msix0:g1/msix1"
    mfd = os.memfd_create("vbus-ops-bar2", os.MFD_ALLOW_SEALING)
    os.ftruncate(mfd, 4096)
    loose = os.memfd_create("vbus-ops-bar2-unsealed")
    os.ftruncate(loose, 4096)
    fcntl.fcntl(mfd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    cases.append(("notmemfd", [sa.fileno(), pr, pr, pr, pr, pr],
                  {"LISTEN_PID": "self", "LISTEN_FDS": "6", "LISTEN_FDNAMES": names6},
                  1, "stored descriptor 'g1/bar2' (fd 4) is not a memfd"))
    if efd is not None:
        cases.append(("noteventfd", [sa.fileno(), mfd, efd, pr, efd, efd],
                      {"LISTEN_PID": "self", "LISTEN_FDS": "6", "LISTEN_FDNAMES": names6},
                      1, "stored descriptor 'g1/db1' (fd 6) is not an eventfd"))
        cases.append(("unsealed", [sa.fileno(), loose, efd, efd, efd, efd],
                      {"LISTEN_PID": "self", "LISTEN_FDS": "6", "LISTEN_FDNAMES": names6},
                      1, "guest g1: stored BAR2 is not sealed against shrinking and growing"))
        cases.append(("notbar2", [sa.fileno(), mfd, efd, efd, efd, efd],
                      {"LISTEN_PID": "self", "LISTEN_FDS": "6", "LISTEN_FDNAMES": names6},
                      1, "guest g1: stored BAR2 is not a vbus BAR2"))
    for tag, fds, env, want_rc, want in cases:
        rc, text = run_listen(hostd, T, fds, env, tag)
        check(rc == want_rc and want in text,
              "LISTEN_FDS %s: %s (%s)" % (tag, want, want_rc),
              "rc %s: %s" % (rc, text.strip()[-300:]))
    for fd in (pr, pw, mfd, loose):
        os.close(fd)
    sa.close()
    sb.close()
    if efd is not None:
        os.close(efd)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "cut":
        cut_short(sys.argv[2])
    if len(sys.argv) < 3 or sys.argv[1] not in ("keeper", "listen"):
        print(__doc__)
        return 2
    mode, hostd = sys.argv[1], os.path.abspath(sys.argv[2])
    T = tempfile.mkdtemp(prefix="vbus-fds.", dir="/tmp")
    try:
        if mode == "keeper":
            keeper = os.path.abspath(sys.argv[3])
            keeper_restarts(hostd, keeper, T)
            keeper_cut_short(hostd, keeper, T, "store")
            keeper_cut_short(hostd, keeper, T, "removal")
            keeper_bad_config(hostd, keeper, T)
        else:
            listen_errors(hostd, T)
    finally:
        shutil.rmtree(T, ignore_errors=True)
    print("%d failure(s)%s" % (len(FAILS), (": " + ", ".join(FAILS)) if FAILS else ""))
    return min(len(FAILS), 100)


if __name__ == "__main__":
    sys.exit(main())
