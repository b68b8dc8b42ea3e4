#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A FUSE file system with one file, "disk" (1 MiB of zeros), that stops
answering on SIGUSR1: a backing file on storage that hangs, made
deterministic. Speaks the kernel's FUSE protocol on /dev/fuse itself (no
libfuse), root only.

  stallfs.py MOUNTPOINT READY_FILE

Mounts, creates READY_FILE once it serves, and serves until SIGUSR1
(then it creates READY_FILE.stalled); from then on it reads no request, so every later one (an open, a read)
waits in the kernel until this process exits (the connection is then
aborted: those calls fail with ENOTCONN) or the caller is killed. A
close sends nothing that waits (FOPEN_NOFLUSH: the kernel waits for a
FLUSH even through SIGKILL, so no process using the file could ever
exit). Exit 77 when FUSE cannot be mounted here (no /dev/fuse, no
CAP_SYS_ADMIN)."""
import ctypes
import errno
import os
import signal
import struct
import sys

LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE = 1, 2, 3, 14, 15, 17, 18
FLUSH, INIT, OPENDIR, RELEASEDIR, INTERRUPT, DESTROY = 25, 26, 27, 29, 36, 38
BATCH_FORGET = 42
NO_REPLY = (FORGET, BATCH_FORGET, INTERRUPT)
ROOT, DISK, SIZE = 1, 2, 1 << 20
# FOPEN_DIRECT_IO | FOPEN_NOFLUSH: reads come here, not from a cache, and
# a close sends no FLUSH (one the kernel would wait for unkillably)
OPEN_FLAGS = 1 | 32
IN_HDR = struct.Struct("<IIQQIIIHH")        # fuse_in_header, 40 bytes
OUT_HDR = struct.Struct("<IiQ")             # fuse_out_header, 16 bytes



class Stall(Exception):
    """SIGUSR1: raised out of the read, so no request is taken half-way."""


def attr(node):
    """fuse_attr: a 0755 directory or a 0600 regular file of SIZE."""
    if node == ROOT:
        mode, size, nlink = 0o40755, 0, 2
    else:
        mode, size, nlink = 0o100600, SIZE, 1
    return struct.pack("<QQQQQQIIIIIIIIII", node, size, (size + 511) // 512,
                       0, 0, 0, 0, 0, 0, mode, nlink, 0, 0, 0, 4096, 0)


def reply(fd, unique, body=b"", err=0):
    os.write(fd, OUT_HDR.pack(OUT_HDR.size + len(body), -err, unique) + body)


def serve_one(fd, req):
    _, op, unique, node = IN_HDR.unpack_from(req)[:4]
    arg = req[IN_HDR.size:]
    if op in NO_REPLY:
        return True
    if op == INIT:
        major, minor = struct.unpack_from("<II", arg)
        reply(fd, unique, struct.pack("<IIIIHHIIHHI7I", 7, min(minor, 31),
                                      0, 0, 16, 12, 65536, 1, 0, 0, 0,
                                      *([0] * 7)))
    elif op == LOOKUP:
        if arg.split(b"\0")[0] != b"disk" or node != ROOT:
            reply(fd, unique, err=errno.ENOENT)
        else:
            reply(fd, unique, struct.pack("<QQQQII", DISK, 1, 3600, 3600,
                                          0, 0) + attr(DISK))
    elif op == GETATTR:
        reply(fd, unique, struct.pack("<QII", 3600, 0, 0) + attr(node))
    elif op in (OPEN, OPENDIR):
        reply(fd, unique, struct.pack("<QII", 1, OPEN_FLAGS if op == OPEN
                                      else 0, 0))
    elif op == READ:
        off, size = struct.unpack_from("<QQI", arg)[1:3]
        n = max(0, min(size, SIZE - off))
        reply(fd, unique, bytes(n))
    elif op == STATFS:
        reply(fd, unique, struct.pack("<5Q4I6I", 256, 0, 0, 2, 0, 4096, 255,
                                      4096, 0, *([0] * 6)))
    elif op in (FLUSH, RELEASE, RELEASEDIR):
        reply(fd, unique)
    elif op == DESTROY:
        reply(fd, unique)
        return False
    else:
        reply(fd, unique, err=errno.ENOSYS)
    return True


def on_usr1(signum, frame):
    raise Stall()


def main():
    mnt, ready = sys.argv[1], sys.argv[2]
    try:
        fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        print("stallfs: /dev/fuse: %s" % e.strerror)
        return 77
    libc = ctypes.CDLL(None, use_errno=True)
    opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % fd
    if libc.mount(b"stallfs", mnt.encode(), b"fuse.stallfs", 6,  # NOSUID|NODEV
                  opts.encode()) != 0:
        print("stallfs: mount: %s" % os.strerror(ctypes.get_errno()))
        return 77
    signal.signal(signal.SIGUSR1, on_usr1)
    open(ready, "w").close()
    try:
        while True:
            try:
                req = os.read(fd, 1 << 20 | 4096)
            except OSError as e:
                if e.errno == errno.ENODEV:     # unmounted
                    return 0
                raise
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
            going = serve_one(fd, req)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
            if not going:
                return 0
    except Stall:
        open(ready + ".stalled", "w").close()
    while True:
        signal.pause()      # read nothing more until killed


if __name__ == "__main__":
    sys.exit(main())
