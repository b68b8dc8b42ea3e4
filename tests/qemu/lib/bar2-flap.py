#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A hostile host for the restart suite: flip BAR2's host_epoch.

  bar2-flap.py PID SECONDS

Opens the BAR2 memfd of vbus-hostd PID through /proc/PID/fd (the daemon's
own, so the guest sees every store), writes a new host_epoch every
millisecond for SECONDS (odd and even values, as a broken or hostile host
might), then leaves it at an even value two above where it started, as a
restarted daemon would. Prints "flapped N times, epoch A -> B".
"""
import mmap
import os
import random
import struct
import sys
import time

OFF_EPOCH = 24


def bar2_of(pid):
    d = "/proc/%d/fd" % pid
    for fd in os.listdir(d):
        try:
            if os.readlink(os.path.join(d, fd)).startswith("/memfd:vbus-bar2-"):
                return os.path.join(d, fd)
        except OSError:
            continue
    return None


def main():
    pid, secs = int(sys.argv[1]), float(sys.argv[2])
    path = bar2_of(pid)
    if not path:
        print("no BAR2 memfd in process %d" % pid)
        return 1
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 4096)
    start = struct.unpack_from("<I", m, OFF_EPOCH)[0]
    end = time.monotonic() + secs
    n = 0
    while time.monotonic() < end:
        struct.pack_into("<I", m, OFF_EPOCH, random.getrandbits(32))
        n += 1
        time.sleep(0.001)
    final = (start | 1) + 1
    struct.pack_into("<I", m, OFF_EPOCH, final)
    print("flapped %d times, epoch %d -> %d" % (n, start, final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
