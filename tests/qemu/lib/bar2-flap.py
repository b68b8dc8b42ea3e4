#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A hostile host for the restart suite: a daemon that flips BAR2's
host_epoch and interrupts the guest without end, then dies.

  bar2-flap.py PID SECONDS

Stops vbus-hostd PID (SIGSTOP: it touches no ring meanwhile), takes its
BAR2 memfd and eventfds (pidfd_getfd), and for SECONDS writes a random
host_epoch (odd and even) and rings every one of its eventfds, the guest's
MSI-X vectors among them, every 2 ms. Then SIGKILL: the keeper starts a
new daemon, which takes the connection over as after any crash. Prints
"flapped N times, epoch A -> B, M eventfds".
"""
import ctypes
import mmap
import os
import random
import signal
import struct
import sys
import time

OFF_EPOCH = 24
SYS_PIDFD_GETFD = 438		# x86_64, like the rest of the suite
libc = ctypes.CDLL(None, use_errno=True)


def getfd(pidfd, fd):
    r = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
    if r < 0:
        raise OSError(ctypes.get_errno(), "pidfd_getfd(%d)" % fd)
    return r


def main():
    pid, secs = int(sys.argv[1]), float(sys.argv[2])
    os.kill(pid, signal.SIGSTOP)
    try:
        pidfd = os.pidfd_open(pid)
        bar2, evfds = None, []
        for name in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, name))
            except OSError:
                continue
            if link.startswith("/memfd:vbus-bar2-"):
                bar2 = mmap.mmap(getfd(pidfd, int(name)), 4096)
            elif link == "anon_inode:[eventfd]":
                evfds.append(getfd(pidfd, int(name)))
        if bar2 is None:
            print("no BAR2 memfd in process %d" % pid)
            return 1
        start = struct.unpack_from("<I", bar2, OFF_EPOCH)[0]
        end = time.monotonic() + secs
        n = 0
        one = struct.pack("<Q", 1)
        while time.monotonic() < end:
            struct.pack_into("<I", bar2, OFF_EPOCH, random.getrandbits(32))
            for e in evfds:
                try:
                    os.write(e, one)
                except BlockingIOError:
                    pass
            n += 1
            time.sleep(0.002)
        last = struct.unpack_from("<I", bar2, OFF_EPOCH)[0]
        print("flapped %d times, epoch %d -> %d, %d eventfds" % (n, start, last, len(evfds)))
        return 0
    finally:
        os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
