// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tcprr: a tiny TCP request/response latency probe (netperf TCP_RR-like),
 * built static so that the same binary runs on the host and in the guest.
 *
 *   tcprr -s PORT                 server: echo every connection's bytes back,
 *                                 one connection at a time; a connection whose
 *                                 first byte is 'Q' makes the server exit 0
 *   tcprr -c IPV4 -p PORT [-n N] [-b BYTES] [-w WARMUP] [-t SEC] [-o FILE]
 *                                 client: N round trips of BYTES (default
 *                                 2000 x 1 byte, after 50 warm-up ones) on one
 *                                 TCP_NODELAY connection; prints one line
 *                                 "tcprr samples=N min_us=.. p50_us=.. p90_us=..
 *                                  p99_us=.. max_us=.. mean_us=.." and writes
 *                                 every sample (microseconds) to FILE
 *   tcprr -c ... -B USEC          the same, with the server's socket busy
 *                                 polling for USEC microseconds (SO_BUSY_POLL:
 *                                 a blocked read spins on the NIC's NAPI
 *                                 context instead of sleeping until its
 *                                 interrupt); a connection whose first byte is
 *                                 'B' carries it ("B" + 7 decimal digits), and
 *                                 the server answers one byte: 'b' set, 'e'
 *                                 refused
 *   tcprr -q IPV4 -p PORT         ask the server to exit
 *   tcprr -s PORT -x CMD          server as above; a connection whose first
 *                                 byte is 'S' gets CMD's output (sh -c CMD)
 *   tcprr -g IPV4 -p PORT         ask the server for that output, print it
 *                                 (the bench reads the guest's counters so)
 *   tcprr -s PORT -X CMD          a connection whose first bytes are 'A' + 4
 *                                 decimal digits N gets the output of
 *                                 sh -c "CMD N" (digits only: nothing the
 *                                 client sends reaches the shell otherwise)
 *   tcprr -g IPV4 -p PORT -A N    ask for "CMD N"'s output (0..9999), print it
 *                                 (the bench sets the guest NICs' active
 *                                 queue pairs so)
 *
 * Every socket operation is bounded by -t SEC (default 10): a dead peer
 * makes the client fail, never hang. Exit status: 0 ok, 1 error, 2 usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_BYTES 65536

static int timeout_s = 10;

static int usage(void)
{
	fprintf(stderr,
		"usage: tcprr -s PORT\n"
		"       tcprr -c IPV4 -p PORT [-n N] [-b BYTES] [-w WARMUP] [-t SEC] [-o FILE] [-B USEC]\n"
		"       tcprr -q IPV4 -p PORT\n"
		"       tcprr -g IPV4 -p PORT [-A N]\n"
		"       tcprr -s PORT [-x CMD] [-X CMD]\n");
	return 2;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int full_io(int fd, char *buf, size_t len, int wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = wr ? write(fd, buf + done, len - done)
			       : read(fd, buf + done, len - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = ECONNRESET;
			return -1;
		}
		done += (size_t)r;
	}
	return 0;
}

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = timeout_s };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* CMD's output to the connection (a snapshot of the guest's counters). */
static void send_cmd_output(int c, const char *cmd)
{
	static char out[MAX_BYTES];
	FILE *p;
	size_t n;

	if (!cmd)
		return;
	p = popen(cmd, "r");
	if (!p)
		return;
	while ((n = fread(out, 1, sizeof(out), p)) > 0)
		if (full_io(c, out, n, 1))
			break;
	pclose(p);
}

#define BUSY_HDR 8	/* 'B' + 7 decimal digits */
#define ARG_HDR 5	/* 'A' + 4 decimal digits */

/* The rest of an 'A' header: "@xcmd N"'s output; a bad header gets none. */
static void serve_arg_cmd(int c, char *buf, size_t have, const char *xcmd)
{
	char cmd[4096];
	int i;

	if (!xcmd || (have < ARG_HDR && full_io(c, buf + have, ARG_HDR - have, 0)))
		return;
	for (i = 1; i < ARG_HDR; i++)
		if (buf[i] < '0' || buf[i] > '9')
			return;
	buf[ARG_HDR] = 0;
	/* N in decimal without leading zeros (a leading 0 reads as octal) */
	if (snprintf(cmd, sizeof(cmd), "%s %d", xcmd, atoi(buf + 1)) >= (int)sizeof(cmd))
		return;
	send_cmd_output(c, cmd);
}

/* The rest of a 'B' header: SO_BUSY_POLL on @c, then 'b' (set) or 'e'. */
static int serve_busy_poll(int c, char *buf, size_t have)
{
	char ack = 'b';
	int us;

	if (have < BUSY_HDR && full_io(c, buf + have, BUSY_HDR - have, 0))
		return -1;
	buf[BUSY_HDR] = 0;
	us = atoi(buf + 1);
	if (setsockopt(c, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us))) {
		fprintf(stderr, "tcprr: SO_BUSY_POLL %d: %s\n", us, strerror(errno));
		ack = 'e';
	}
	return full_io(c, &ack, 1, 1) || ack == 'e' ? -1 : 0;
}

static int serve(int port, const char *cmd, const char *xcmd)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((unsigned short)port),
				 .sin_addr.s_addr = htonl(INADDR_ANY) };
	static char buf[MAX_BYTES];
	int one = 1, ls;

	signal(SIGPIPE, SIG_IGN);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0) {
		perror("tcprr: socket");
		return 1;
	}
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 8)) {
		perror("tcprr: bind/listen");
		return 1;
	}
	for (;;) {
		int c = accept(ls, NULL, NULL), first = 1;
		ssize_t r;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			perror("tcprr: accept");
			return 1;
		}
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		/* a stuck client must not block the next one forever */
		set_timeouts(c);
		while ((r = read(c, buf, sizeof(buf))) > 0) {
			if (first && buf[0] == 'Q') {
				close(c);
				close(ls);
				return 0;
			}
			if (first && buf[0] == 'S') {
				send_cmd_output(c, cmd);
				break;
			}
			if (first && buf[0] == 'A') {
				serve_arg_cmd(c, buf, (size_t)r, xcmd);
				break;
			}
			if (first && buf[0] == 'B') {
				first = 0;
				if (serve_busy_poll(c, buf, (size_t)r))
					break;
				continue;
			}
			first = 0;
			if (full_io(c, buf, (size_t)r, 1))
				break;
		}
		close(c);
	}
}

static int connect_to(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((unsigned short)port) };
	int one = 1, fd;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "tcprr: bad IPv4 address %s\n", ip);
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		perror("tcprr: socket");
		return -1;
	}
	set_timeouts(fd);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "tcprr: connect %s:%d: %s\n", ip, port, strerror(errno));
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* nearest-rank percentile of sorted v[0..n) */
static double pct(const double *v, int n, double p)
{
	int k = (int)(p / 100.0 * n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

/* Ask the server to busy poll its end of @fd for @us microseconds. */
static int ask_busy_poll(int fd, int us)
{
	char hdr[BUSY_HDR + 1], ack = 0;

	snprintf(hdr, sizeof(hdr), "B%07d", us);
	if (full_io(fd, hdr, BUSY_HDR, 1) || full_io(fd, &ack, 1, 0)) {
		fprintf(stderr, "tcprr: busy poll request: %s\n", strerror(errno));
		return -1;
	}
	if (ack != 'b') {
		fprintf(stderr, "tcprr: the server refused SO_BUSY_POLL %d\n", us);
		return -1;
	}
	return 0;
}

static int client(const char *ip, int port, int n, int bytes, int warm, int busy_us,
		  const char *out)
{
	static char buf[MAX_BYTES];
	double *s, sum = 0;
	int fd, i;

	s = calloc((size_t)n, sizeof(*s));
	if (!s)
		return 1;
	fd = connect_to(ip, port);
	if (fd < 0)
		return 1;
	if (busy_us && ask_busy_poll(fd, busy_us)) {
		close(fd);
		return 1;
	}
	memset(buf, 'p', sizeof(buf));
	for (i = -warm; i < n; i++) {
		double t0 = now_us();

		if (full_io(fd, buf, (size_t)bytes, 1) || full_io(fd, buf, (size_t)bytes, 0)) {
			fprintf(stderr, "tcprr: round trip %d: %s\n", i, strerror(errno));
			close(fd);
			return 1;
		}
		if (i >= 0)
			s[i] = now_us() - t0;
	}
	close(fd);
	if (out) {
		FILE *f = fopen(out, "w");

		if (!f) {
			perror(out);
			return 1;
		}
		for (i = 0; i < n; i++)
			fprintf(f, "%.1f\n", s[i]);
		fclose(f);
	}
	for (i = 0; i < n; i++)
		sum += s[i];
	qsort(s, (size_t)n, sizeof(*s), cmp_d);
	printf("tcprr samples=%d bytes=%d min_us=%.1f p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f mean_us=%.1f\n",
	       n, bytes, s[0], pct(s, n, 50), pct(s, n, 90), pct(s, n, 99), s[n - 1], sum / n);
	free(s);
	return 0;
}

static int quit(const char *ip, int port)
{
	int fd = connect_to(ip, port);

	if (fd < 0)
		return 1;
	if (write(fd, "Q", 1) != 1) {
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

/*
 * Ask the server for its -x output (@arg < 0) or its "-X CMD @arg" output
 * and copy it to stdout.
 */
static int get(const char *ip, int port, int arg)
{
	static char buf[MAX_BYTES];
	char req[ARG_HDR + 1] = "S";
	int fd = connect_to(ip, port);
	size_t len = 1;
	ssize_t r;

	if (fd < 0)
		return 1;
	if (arg >= 0) {
		snprintf(req, sizeof(req), "A%04d", arg);
		len = ARG_HDR;
	}
	if (full_io(fd, req, len, 1)) {
		close(fd);
		return 1;
	}
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r)
			break;
	close(fd);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *ip = NULL, *out = NULL, *cmd = NULL, *xcmd = NULL;
	int opt, mode = 0, port = 0, n = 2000, bytes = 1, warm = 50, busy_us = 0, arg = -1;

	while ((opt = getopt(argc, argv, "s:c:q:g:x:X:A:p:n:b:w:t:o:B:")) != -1) {
		switch (opt) {
		case 's': mode = 's'; port = atoi(optarg); break;
		case 'c': mode = 'c'; ip = optarg; break;
		case 'q': mode = 'q'; ip = optarg; break;
		case 'g': mode = 'g'; ip = optarg; break;
		case 'x': cmd = optarg; break;
		case 'X': xcmd = optarg; break;
		case 'A': arg = atoi(optarg); if (arg < 0) return usage(); break;
		case 'p': port = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'b': bytes = atoi(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 't': timeout_s = atoi(optarg); break;
		case 'o': out = optarg; break;
		case 'B': busy_us = atoi(optarg); break;
		default: return usage();
		}
	}
	if (!mode || port <= 0 || port > 65535 || n < 1 || bytes < 1 || bytes > MAX_BYTES ||
	    warm < 0 || timeout_s < 1 || busy_us < 0 || busy_us > 9999999 || arg > 9999 ||
	    (arg >= 0 && mode != 'g') || optind != argc)
		return usage();
	if (mode == 's')
		return serve(port, cmd, xcmd);
	if (mode == 'q')
		return quit(ip, port);
	if (mode == 'g')
		return get(ip, port, arg);
	return client(ip, port, n, bytes, warm, busy_us, out);
}
