// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "ctl": the control socket's server (daemon/ctl.c) over a
 * real socket, with requests built from its words and any bytes (list,
 * add, drop, stats, --json, names, ids, specs), against a guest with one
 * device of every type (vbus-test 1, venet 2 over the fake tap, vbus-blk
 * 3, vbus-ipc 4) in whatever state the fake guest put them. Every reply
 * must be one "OK" or "ERR ..." line and a body of at most
 * FUZZ_CTL_REPLY_MAX bytes, whatever the request and whatever the guest
 * wrote; after each input `stats` and `list` are checked the same way.
 *
 * Opcode 6 is a request, opcode 11 the vbus-blk driver (fuzz_blk.c).
 * Paths in `add` are relative: devices' files land in a private
 * directory (the cwd), never elsewhere.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fuzz_blk.h"
#include "fuzz_sock.h"

static const char *devices[5] = {
	"type=vbus-test,id=1", "type=venet,id=2,tap=fuzz2", NULL,
	"type=vbus-ipc,id=4,service=fuzz,sock=ipc4.sock,qsock=ipc4.qsock,"
	"count=4,bufsize=64",
	NULL
};

static const char *const words[] = {
	"list", "add", "drop", "stats", "fuzz", "--json", "nosuch",
	"0", "1", "2", "3", "4", "5", "4294967296", "-1",
	"type=vbus-test,id=5", "type=venet,id=6,tap=fuzz6,strict=1",
	"type=vbus-blk,id=7,file=disk7.img,queues=1,direct=0",
	"type=vbus-ipc,id=8,service=s8,sock=s8.sock,qsock=q8.sock",
	"type=vbus-blk,id=9,file=fuzz-ram", "type=nosuch,id=10",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static void setup(void)
{
	int fd;

	if (chdir(fuzz_sock_dir()) < 0)
		abort();
	devices[2] = fuzz_blk_disk("");
	fd = open("disk7.img", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 1 << 16) < 0)
		abort();
	close(fd);
}

/* Words and bytes, spaces or not; never a '/' (see above). */
static size_t request(struct fuzz_in *in, char *line, size_t max)
{
	unsigned int n = 1 + fuzz_u8(in) % 6, i;
	size_t len = 0, j;

	for (i = 0; i < n && len < max - 1; i++) {
		uint8_t sel = fuzz_u8(in);

		if (sel & 0x80) {
			uint8_t l = fuzz_u8(in) % 64;

			for (j = 0; j < l && len < max - 1; j++)
				line[len++] = (char)fuzz_u8(in);
		} else {
			len += (size_t)snprintf(line + len, max - len, "%s",
						words[sel % NWORDS]);
		}
		if (len > max - 1)
			len = max - 1;
		if (!(sel & 0x40) && len < max - 1)
			line[len++] = ' ';
	}
	for (j = 0; j < len; j++)
		if (line[j] == '/')
			line[j] = '_';
	return len;
}

static void op_request(struct fuzz_in *in)
{
	static char line[8192], reply[FUZZ_CTL_REPLY_MAX + 2];
	uint8_t how = fuzz_u8(in);
	size_t len = request(in, line, (how & 1) ? sizeof(line) : 512);
	size_t got = 0;
	ssize_t r;
	int sv[2];

	if (!(how & 2))
		line[len++] = '\n';
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	/* the whole request, then EOF: the server reads before it answers */
	if (write(sv[0], line, len) != (ssize_t)len)
		abort();
	shutdown(sv[0], SHUT_WR);
	daemon_ctl_serve(sv[1], -1, (struct hostd_guest *[]){ &fuzz_guest }, 1);
	while ((r = read(sv[0], reply + got, sizeof(reply) - got)) > 0 &&
	       got < sizeof(reply))
		got += (size_t)r;
	close(sv[0]);
	/* no request at all (EOF first): no reply either */
	if (got > FUZZ_CTL_REPLY_MAX || (len && !got) ||
	    (got && !((got >= 3 && !memcmp(reply, "OK\n", 3)) ||
	      (got >= 5 && !memcmp(reply, "ERR ", 4) && memchr(reply, '\n', got))))) {
		fprintf(stderr, "ctl '%.*s': a reply of %zu bytes: '%.*s'\n",
			(int)(len < 200 ? len : 200), line, got,
			(int)(got < 200 ? got : 200), reply);
		abort();
	}
	fuzz_pump();
}

static const struct fuzz_target target = {
	.devices = devices,
	.setup = setup,
	.op_a = op_request,
	.op_b = fuzz_blk_op,
	.done = fuzz_ctl_check,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_guest_run(&target, data, size);
	return 0;
}
