#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The RAM file and the sockets belong to one daemon: a locked RAM file is
# refused (naming its holder), so is one another user owns or could reach
# (mode, hard links), a larger one is never shrunk, a disk is never a RAM
# file nor another disk's inode, and two names
# for one file (a//b and a/b, a symlinked directory) are one file; a
# device's own socket in use is refused in the guest socket's words.
# shellcheck source=tests/hostd/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

mkdir "$T/d"
ln -s "$T/d" "$T/link"

# ---- one daemon holds g1.ram ----
start_daemon --ctl "$T/ctl1.sock" --guest "g1:sock=$T/g1.sock,mem=$T/d/g1.ram,size=16M" || finish
expect_fail "RAM file locked by another daemon" \
	"^vbus-hostd: guest g2: RAM file $T/d/g1.ram is in use: locked by pid $pid \\(vbus-hostd\\)" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/d/g1.ram,size=8M" --foreground
expect_fail "locked, named through a symlinked directory" "is in use: locked by pid $pid" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/link/g1.ram,size=16M" --foreground
# the second daemon neither truncated nor took the file
[ "$(stat -c %s "$T/d/g1.ram")" = $((16 << 20)) ] || fail "the locked RAM file changed size"
[ -e "$T/g2.sock" ] && fail "the refused daemon left its socket"
expect_fail "guest socket in use by another daemon" "$T/g1.sock is in use by another process" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g1.sock,mem=$T/g2.ram,size=8M" --foreground
# a device's own socket (vbus-ipc) is refused in the same words
expect_fail "ipc device socket in use by another daemon" \
	"sock: cannot listen: $T/g1.sock is in use by another process" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=8M" \
	--device "g2:type=vbus-ipc,id=5,service=echo,sock=$T/g1.sock,qsock=$T/q2.sock" --foreground
expect_fail "ipc device qsock in use by another daemon" \
	"qsock: cannot listen: $T/g1.sock is in use by another process" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=8M" \
	--device "g2:type=vbus-ipc,id=5,service=echo,sock=$T/e2.sock,qsock=$T/g1.sock" --foreground
# a disk is never a live guest's RAM file, this daemon's or another's
truncate -s 1M "$T/disk.img"
expect_fail "disk on another daemon's RAM file" \
	"^vbus-hostd: guest g2: device 4 \\(vbus-blk\\): backing file $T/d/g1.ram is in use: locked by pid $pid \\(vbus-hostd\\)" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=8M" \
	--device "g2:type=vbus-blk,id=4,file=$T/d/g1.ram" --foreground
expect_fail "disk on its own guest's RAM file" \
	"device 4 \\(vbus-blk\\): backing file $T/g2.ram is in use: locked by this vbus-hostd" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=8M" \
	--device "g2:type=vbus-blk,id=4,file=$T/g2.ram" --foreground
ln "$T/disk.img" "$T/disk-link.img"
expect_fail "two disks on one file through a hard link" \
	"device 5 \\(vbus-blk\\): backing file $T/disk-link.img is already used by device 4 of guest g2 \\(as $T/disk.img\\)" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=8M" \
	--device "g2:type=vbus-blk,id=4,file=$T/disk.img" \
	--device "g2:type=vbus-blk,id=5,file=$T/disk-link.img" --foreground
mkfifo "$T/fifo"
expect_fail "read-only disk on a FIFO" \
	"backing file $T/fifo is not a regular file or a block device" \
	--ctl "$T/ctl2.sock" --guest "g2:sock=$T/g2.sock,mem=$T/g2.ram,size=8M" \
	--device "g2:type=vbus-blk,id=4,file=$T/fifo,ro=1" --foreground
stop_daemon
# lock released with the daemon: the file is free again
start_daemon --ctl "$T/ctl1.sock" --guest "g1:sock=$T/g1.sock,mem=$T/d/g1.ram,size=16M" || finish
stop_daemon

# ---- never shrink ----
truncate -s 64M "$T/big.ram"
chmod 600 "$T/big.ram"
expect_fail "RAM file larger than size=" \
	"RAM file $T/big.ram is 67108864 bytes, larger than size=16777216: refusing to shrink it \\(QEMU's -m and its memory-backend size must equal size=\\)" \
	--ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/big.ram,size=16M" --foreground
[ "$(stat -c %s "$T/big.ram")" = $((64 << 20)) ] || fail "the larger RAM file was truncated"
truncate -s 4M "$T/small.ram"
chmod 600 "$T/small.ram"
start_daemon --ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/small.ram,size=16M" || finish
[ "$(stat -c %s "$T/small.ram")" = $((16 << 20)) ] || fail "a smaller RAM file is not grown to size="
stop_daemon

# ---- a RAM file someone else could reach is refused, untouched ----
G1="g1:sock=$T/g1.sock,mem=$T/pre.ram,size=16M"
truncate -s 4M "$T/pre.ram"
chmod 666 "$T/pre.ram"
expect_fail "RAM file writable by others" \
	"^vbus-hostd: guest g1: RAM file $T/pre.ram has mode 0666, group [0-9]*: other users .* chmod 600 it or remove it" \
	--ctl "$T/ctl.sock" --guest "$G1" --foreground
chmod 644 "$T/pre.ram"
expect_fail "RAM file readable by others" "RAM file $T/pre.ram has mode 0644" \
	--ctl "$T/ctl.sock" --guest "$G1" --foreground
chmod 600 "$T/pre.ram"
ln "$T/pre.ram" "$T/pre-link.ram"
expect_fail "RAM file with a second name" \
	"RAM file $T/pre.ram has 2 names \\(hard links\\): another name reaches the guest's memory" \
	--ctl "$T/ctl.sock" --guest "$G1" --foreground
rm "$T/pre-link.ram"
if [ "$(id -u)" = 0 ]; then
	chown 65534 "$T/pre.ram"
	expect_fail "RAM file owned by another user" \
		"RAM file $T/pre.ram is owned by uid 65534, not by this daemon's user \\(uid 0\\)" \
		--ctl "$T/ctl.sock" --guest "$G1" --foreground
	chown 0 "$T/pre.ram"
else
	echo "not root: the other-owner case is not run"
fi
# the daemon's own group may reach it (QEMU's user joins that group);
# another group may not, not even read it
if [ "$(id -u)" = 0 ]; then
	chmod 640 "$T/pre.ram"
	chgrp 65534 "$T/pre.ram"
	expect_fail "RAM file readable by another group" \
		"RAM file $T/pre.ram has mode 0640, group 65534: other users \\(or a group not this daemon's, gid $(id -g)\\) could reach" \
		--ctl "$T/ctl.sock" --guest "$G1" --foreground
	chgrp "$(id -g)" "$T/pre.ram"
else
	echo "not root: the other-group case is not run"
fi
[ "$(stat -c %s "$T/pre.ram")" = $((4 << 20)) ] || fail "a refused RAM file was resized"
chmod 660 "$T/pre.ram"
start_daemon --ctl "$T/ctl.sock" --guest "$G1" || finish
stop_daemon
# made by the daemon: 0660 less its umask, its own group
umask_was=$(umask)
umask 0007
start_daemon --ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/new.ram,size=16M" || finish
stop_daemon
umask "$umask_was"
[ "$(stat -c %a:%g "$T/new.ram")" = "660:$(id -g)" ] ||
	fail "a new RAM file is $(stat -c %a:%g "$T/new.ram"), want 660:$(id -g) (umask 0007)"

# ---- one file, two spellings ----
expect_fail "two guests, mem a//b and a/b" \
	"guest g1's mem $T/d//x.ram and guest g2's mem $T/d/x.ram are the same file" \
	--ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/d//x.ram,size=16M" \
	--guest "g2:sock=$T/g2.sock,mem=$T/d/x.ram,size=16M"
expect_fail "two guests, mem through a symlinked directory" "are the same file" \
	--ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/link/y.ram,size=16M" \
	--guest "g2:sock=$T/g2.sock,mem=$T/d/y.ram,size=16M"
touch "$T/d/exists.ram"
ln -s "$T/d/exists.ram" "$T/d/alias.ram"
expect_fail "two guests, mem one a symlink to the other" "are the same file" \
	--ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/d/exists.ram,size=16M" \
	--guest "g2:sock=$T/g2.sock,mem=$T/d/alias.ram,size=16M"
expect_fail "two guests, sock a/./b and a/b" \
	"guest g1's sock $T/d/./s.sock and guest g2's sock $T/d/s.sock are the same file" \
	--ctl "$T/ctl.sock" --guest "g1:sock=$T/d/./s.sock,mem=$T/a.ram,size=16M" \
	--guest "g2:sock=$T/d/s.sock,mem=$T/b.ram,size=16M"
expect_fail "guest socket is the control socket" \
	"the control socket $T/link/c.sock and guest g1's sock $T/d/c.sock are the same file" \
	--ctl "$T/link/c.sock" --guest "g1:sock=$T/d/c.sock,mem=$T/a.ram,size=16M"
expect_fail "a guest's mem is another's sock" "are the same file" \
	--ctl "$T/ctl.sock" --guest "g1:sock=$T/d/z,mem=$T/a.ram,size=16M" \
	--guest "g2:sock=$T/b.sock,mem=$T/d//z,size=16M"
[ -e "$T/d/x.ram" ] || [ -e "$T/d/y.ram" ] || [ -e "$T/a.ram" ] &&
	fail "a refused configuration created a RAM file"
finish
