#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The RAM file and the sockets belong to one daemon: a locked RAM file is
# refused (naming its holder), a larger one is never shrunk, and two names
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
stop_daemon
# lock released with the daemon: the file is free again
start_daemon --ctl "$T/ctl1.sock" --guest "g1:sock=$T/g1.sock,mem=$T/d/g1.ram,size=16M" || finish
stop_daemon

# ---- never shrink ----
truncate -s 64M "$T/big.ram"
expect_fail "RAM file larger than size=" \
	"RAM file $T/big.ram is 67108864 bytes, larger than size=16777216: refusing to shrink it \\(QEMU's -m and its memory-backend size must equal size=\\)" \
	--ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/big.ram,size=16M" --foreground
[ "$(stat -c %s "$T/big.ram")" = $((64 << 20)) ] || fail "the larger RAM file was truncated"
truncate -s 4M "$T/small.ram"
start_daemon --ctl "$T/ctl.sock" --guest "g1:sock=$T/g1.sock,mem=$T/small.ram,size=16M" || finish
[ "$(stat -c %s "$T/small.ram")" = $((16 << 20)) ] || fail "a smaller RAM file is not grown to size="
stop_daemon

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
