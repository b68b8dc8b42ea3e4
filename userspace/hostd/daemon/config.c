// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: --guest / --device specs and the config file.
 *
 *   --guest  NAME:sock=G.sock,mem=/dev/shm/vbus-NAME,size=1G[,machine=q35|pc]
 *   --device NAME:type=vbus-test,id=1[,key=value...]
 *
 * The config file holds the same specs, one per line ("--guest SPEC",
 * "guest SPEC", "--guest=SPEC"; likewise device), '#' starts a comment.
 * Every error names what was wrong (and the file:line).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "daemon.h"

#define HOSTD_MEM_MIN	(1ull << 20)
#define HOSTD_MEM_MAX	(1ull << 40)

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int daemon_parse_size(const char *s, __u64 *out)
{
	unsigned long long v = 0, mult = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (~0ull - 9) / 10)
			return -1;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	switch (*p) {
	case 'k': case 'K': mult = 1ull << 10; p++; break;
	case 'm': case 'M': mult = 1ull << 20; p++; break;
	case 'g': case 'G': mult = 1ull << 30; p++; break;
	case 't': case 'T': mult = 1ull << 40; p++; break;
	default: break;
	}
	if (*p)
		return -1;
	if (v && mult > ~0ull / v)
		return -1;
	*out = v * mult;
	return 0;
}

static bool valid_name(const char *s, size_t len)
{
	size_t i;

	if (!len || len > HOSTD_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '_' && c != '-' && c != '.')
			return false;
	}
	return true;
}

/* Split "NAME:rest": copies NAME, returns rest, or NULL with a message. */
static const char *split_name(const char *spec, char *name, const char *what,
			      char *err, size_t errlen)
{
	const char *colon = strchr(spec, ':');

	if (!colon) {
		fail(err, errlen, "%s spec '%s': expected NAME:key=value,...",
		     what, spec);
		return NULL;
	}
	if (!valid_name(spec, (size_t)(colon - spec))) {
		fail(err, errlen,
		     "%s spec '%s': bad guest name (1-%d of A-Z a-z 0-9 _ - .)",
		     what, spec, HOSTD_NAME_MAX);
		return NULL;
	}
	memcpy(name, spec, (size_t)(colon - spec));
	name[colon - spec] = 0;
	return colon + 1;
}

/*
 * Iterate "k=v,k=v": each call copies one pair into @tmp (which must hold
 * HOSTD_SPEC_MAX) and returns the rest, or NULL at the end. *@bad is set for
 * a malformed pair.
 */
static const char *next_kv(const char *s, char *tmp, char **k, char **v,
			   bool *bad)
{
	const char *comma;
	size_t len;
	char *eq;

	*bad = false;
	if (!s || !*s)
		return NULL;
	comma = strchr(s, ',');
	len = comma ? (size_t)(comma - s) : strlen(s);
	if (len >= HOSTD_SPEC_MAX) {
		*bad = true;
		return NULL;
	}
	memcpy(tmp, s, len);
	tmp[len] = 0;
	eq = strchr(tmp, '=');
	*k = tmp;
	if (!eq || eq == tmp || !eq[1])
		*bad = true;
	else {
		*eq = 0;
		*v = eq + 1;
	}
	return comma ? comma + 1 : s + len;
}

/* ---- --guest -------------------------------------------------------------- */

struct guest_spec {
	struct hostd_guest_cfg *gc;
	unsigned int seen;		/* bit per key */
	char *err;
	size_t errlen;
};

static int guest_sock(struct guest_spec *s, const char *v)
{
	if (strlen(v) >= sizeof(s->gc->sock))
		return fail(s->err, s->errlen, "--guest %s: sock path longer than %zu bytes",
			    s->gc->name, sizeof(s->gc->sock) - 1);
	strcpy(s->gc->sock, v);
	return 0;
}

static int guest_mem(struct guest_spec *s, const char *v)
{
	if (strlen(v) >= sizeof(s->gc->mem))
		return fail(s->err, s->errlen, "--guest %s: mem path too long",
			    s->gc->name);
	strcpy(s->gc->mem, v);
	return 0;
}

static int guest_size(struct guest_spec *s, const char *v)
{
	__u64 *size = &s->gc->size;

	if (daemon_parse_size(v, size))
		return fail(s->err, s->errlen, "--guest %s: bad size '%s' (e.g. 512M, 1G)",
			    s->gc->name, v);
	if (*size < HOSTD_MEM_MIN || *size > HOSTD_MEM_MAX || *size & 4095)
		return fail(s->err, s->errlen,
			    "--guest %s: size %s must be a multiple of 4 KiB between 1M and 1T",
			    s->gc->name, v);
	return 0;
}

static int guest_machine(struct guest_spec *s, const char *v)
{
	if (!strcmp(v, "q35"))
		s->gc->machine = HOSTD_MACHINE_Q35;
	else if (!strcmp(v, "pc"))
		s->gc->machine = HOSTD_MACHINE_PC;
	else
		return fail(s->err, s->errlen, "--guest %s: machine must be q35 or pc, not '%s'",
			    s->gc->name, v);
	return 0;
}

/* QEMU's ivshmem-doorbell vectors= (docs/transport.md, "Per-queue vectors") */
static int guest_vectors(struct guest_spec *s, const char *v)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno ||
	    n < VBUS_PCI_NR_VECTORS || n > VBUS_PCI_MAX_VECTORS)
		return fail(s->err, s->errlen,
			    "--guest %s: vectors=%s must be a number from %d to %d (QEMU's ivshmem-doorbell vectors=)",
			    s->gc->name, v, VBUS_PCI_NR_VECTORS,
			    VBUS_PCI_MAX_VECTORS);
	s->gc->vectors = (unsigned int)n;
	return 0;
}

/* threads=: the default threads= of the guest's devices (device.h) */
static int guest_threads(struct guest_spec *s, const char *v)
{
	unsigned long n;
	char *end;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno ||
	    n > HOSTD_DEV_MAX_THREADS)
		return fail(s->err, s->errlen,
			    "--guest %s: threads=%s must be a number from 0 to %d (its devices' queue threads, by default)",
			    s->gc->name, v, HOSTD_DEV_MAX_THREADS);
	s->gc->threads = (unsigned int)n;
	return 0;
}

/* A number, or a name the system's user (group) database knows. */
static int guest_qemu_id(struct guest_spec *s, const char *key, const char *v,
			 bool group, __u32 *id)
{
	unsigned long long n;
	char *end;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (isdigit((unsigned char)*v) && !*end && !errno && n < 0xffffffffull) {
		*id = (__u32)n;
		return 0;
	}
	if (group) {
		const struct group *gr = getgrnam(v);

		if (gr) {
			*id = (__u32)gr->gr_gid;
			return 0;
		}
	} else {
		const struct passwd *pw = getpwnam(v);

		if (pw) {
			*id = (__u32)pw->pw_uid;
			return 0;
		}
	}
	return fail(s->err, s->errlen, "--guest %s: %s=%s: no such %s",
		    s->gc->name, key, v, group ? "group" : "user");
}

static int guest_qemu_uid(struct guest_spec *s, const char *v)
{
	__u32 id = 0;	/* gcc -O3 cannot see guest_qemu_id() set it */

	if (guest_qemu_id(s, "qemu_uid", v, false, &id))
		return -1;
	s->gc->qemu.uid = (uid_t)id;
	s->gc->qemu.uid_set = true;
	return 0;
}

static int guest_qemu_gid(struct guest_spec *s, const char *v)
{
	__u32 id = 0;

	if (guest_qemu_id(s, "qemu_gid", v, true, &id))
		return -1;
	s->gc->qemu.gid = (gid_t)id;
	s->gc->qemu.gid_set = true;
	return 0;
}

static const struct {
	const char *key;
	int (*set)(struct guest_spec *s, const char *v);
	bool required;
} guest_keys[] = {
	{ "sock", guest_sock, true },
	{ "mem", guest_mem, true },
	{ "size", guest_size, true },
	{ "machine", guest_machine, false },
	{ "qemu_uid", guest_qemu_uid, false },
	{ "qemu_gid", guest_qemu_gid, false },
	{ "vectors", guest_vectors, false },
	{ "threads", guest_threads, false },
};
#define N_GUEST_KEYS (sizeof(guest_keys) / sizeof(guest_keys[0]))

static int guest_pair(struct guest_spec *s, const char *k, const char *v)
{
	unsigned int i;

	for (i = 0; i < N_GUEST_KEYS; i++) {
		if (strcmp(k, guest_keys[i].key))
			continue;
		if (s->seen & (1u << i))
			return fail(s->err, s->errlen, "--guest %s: %s= given twice",
				    s->gc->name, k);
		s->seen |= 1u << i;
		return guest_keys[i].set(s, v);
	}
	return fail(s->err, s->errlen,
		    "--guest %s: unknown parameter '%s' (sock, mem, size, machine, qemu_uid, qemu_gid, vectors, threads)",
		    s->gc->name, k);
}

static int daemon_parse_guest_spec(const char *spec, struct hostd_guest_cfg *gc,
				   char *err, size_t errlen)
{
	struct guest_spec s = { .gc = gc, .err = err, .errlen = errlen };
	char tmp[HOSTD_SPEC_MAX], *k = NULL, *v = NULL;
	const char *p;
	unsigned int i;
	bool bad;

	memset(gc, 0, sizeof(*gc));
	gc->machine = HOSTD_MACHINE_Q35;
	if (strlen(spec) >= HOSTD_SPEC_MAX)
		return fail(err, errlen, "--guest spec too long");
	p = split_name(spec, gc->name, "--guest", err, errlen);
	if (!p)
		return -1;
	if (!*p)
		return fail(err, errlen, "--guest %s: no parameters (need sock=, mem=, size=)",
			    gc->name);
	while ((p = next_kv(p, tmp, &k, &v, &bad)) != NULL || bad) {
		if (bad)
			return fail(err, errlen, "--guest %s: malformed '%s' (expected key=value)",
				    gc->name, k ? k : "");
		if (guest_pair(&s, k, v))
			return -1;
	}
	for (i = 0; i < N_GUEST_KEYS; i++)
		if (guest_keys[i].required && !(s.seen & (1u << i)))
			return fail(err, errlen, "--guest %s: missing %s=",
				    gc->name, guest_keys[i].key);
	return 0;
}

/* ---- --device / ctl add ---------------------------------------------------------- */

struct dev_spec {
	struct daemon_dev_cfg *dc;
	const char *spec;
	bool have_type, have_id;
	size_t used;			/* bytes of dc->strbuf */
	char *err;
	size_t errlen;
};

static int spec_fail(struct dev_spec *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "guest g1: device spec 'type=x': why" */
static int spec_fail(struct dev_spec *s, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return fail(s->err, s->errlen, "guest %s: device spec '%s': %s",
		    s->dc->guest, s->spec, why);
}

static int spec_type(struct dev_spec *s, const char *v)
{
	if (s->have_type)
		return spec_fail(s, "type= given twice");
	if (strlen(v) >= sizeof(s->dc->type))
		return spec_fail(s, "type too long");
	strcpy(s->dc->type, v);
	s->have_type = true;
	return 0;
}

static int spec_id(struct dev_spec *s, const char *v)
{
	unsigned long long id;
	char *end;

	if (s->have_id)
		return spec_fail(s, "id= given twice");
	errno = 0;
	id = strtoull(v, &end, 10);
	if (errno || *end || !isdigit((unsigned char)*v) || id > 0xffffffffull)
		return spec_fail(s, "bad id '%s' (0..4294967295)", v);
	s->dc->id = (__u32)id;
	s->have_id = true;
	return 0;
}

/* A device parameter: "k=v" -> "k\0v\0" in strbuf (never longer). */
static int spec_param(struct dev_spec *s, const char *k, const char *v)
{
	struct daemon_dev_cfg *dc = s->dc;
	size_t kl = strlen(k) + 1, vl = strlen(v) + 1;

	if (hostd_param_get(&dc->params, k))
		return spec_fail(s, "%s= given twice", k);
	if (dc->params.count >= HOSTD_MAX_PARAMS)
		return spec_fail(s, "more than %d parameters", HOSTD_MAX_PARAMS);
	memcpy(dc->strbuf + s->used, k, kl);
	memcpy(dc->strbuf + s->used + kl, v, vl);
	dc->pv[dc->params.count].key = dc->strbuf + s->used;
	dc->pv[dc->params.count].value = dc->strbuf + s->used + kl;
	dc->params.count++;
	s->used += kl + vl;
	return 0;
}

static int spec_pair(struct dev_spec *s, const char *k, const char *v)
{
	if (!strcmp(k, "type"))
		return spec_type(s, v);
	if (!strcmp(k, "id"))
		return spec_id(s, v);
	return spec_param(s, k, v);
}

void daemon_dev_cfg_free(struct daemon_dev_cfg *dc)
{
	free(dc->strbuf);
	dc->strbuf = NULL;
	dc->params.count = 0;
}

int daemon_parse_dev_spec(const char *spec, const char *guest,
			 struct daemon_dev_cfg *dc, char *err, size_t errlen)
{
	struct dev_spec s = { .dc = dc, .spec = spec, .err = err,
			      .errlen = errlen };
	char tmp[HOSTD_SPEC_MAX], *k = NULL, *v = NULL;
	const char *p = spec;
	bool bad;

	memset(dc, 0, sizeof(*dc));
	snprintf(dc->guest, sizeof(dc->guest), "%s", guest);
	dc->params.v = dc->pv;
	if (strlen(spec) >= HOSTD_SPEC_MAX)
		return spec_fail(&s, "too long");
	dc->strbuf = malloc(strlen(spec) + 1);
	if (!dc->strbuf)
		return spec_fail(&s, "out of memory");
	while ((p = next_kv(p, tmp, &k, &v, &bad)) != NULL || bad) {
		if (bad) {
			spec_fail(&s, "malformed '%s' (expected key=value)",
				  k ? k : "");
			goto out_fail;
		}
		if (spec_pair(&s, k, v))
			goto out_fail;
	}
	if (s.have_type && s.have_id)
		return 0;
	spec_fail(&s, "missing %s", !s.have_type ? "type=" : "id=");
out_fail:
	daemon_dev_cfg_free(dc);
	return -1;
}

/* ---- the whole configuration -------------------------------------------------------- */

int daemon_config_add_guest(struct daemon_config *c, const char *spec,
			   char *err, size_t errlen)
{
	struct hostd_guest_cfg gc;
	unsigned int i;

	if (daemon_parse_guest_spec(spec, &gc, err, errlen))
		return -1;
	if (c->nguests >= HOSTD_MAX_GUESTS)
		return fail(err, errlen, "more than %d guests", HOSTD_MAX_GUESTS);
	for (i = 0; i < c->nguests; i++)
		if (!strcmp(c->guests[i].name, gc.name))
			return fail(err, errlen, "guest %s defined twice", gc.name);
	c->guests[c->nguests++] = gc;
	return 0;
}

int daemon_config_add_dev(struct daemon_config *c, const char *spec,
			 char *err, size_t errlen)
{
	char guest[HOSTD_NAME_MAX + 1];
	struct daemon_dev_cfg dc, *n;
	const char *rest;
	unsigned int i;

	rest = split_name(spec, guest, "--device", err, errlen);
	if (!rest || daemon_parse_dev_spec(rest, guest, &dc, err, errlen))
		return -1;
	n = realloc(c->devs, (c->ndevs + 1) * sizeof(*n));
	if (!n) {
		daemon_dev_cfg_free(&dc);
		return fail(err, errlen, "out of memory");
	}
	c->devs = n;
	c->devs[c->ndevs++] = dc;
	/* params.v points into its own entry: the entries may have moved */
	for (i = 0; i < c->ndevs; i++)
		c->devs[i].params.v = c->devs[i].pv;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* After "guest" or "device": '=', a space, or nothing (an empty spec). */
static bool spec_follows(char c)
{
	return c == '=' || !c || isspace((unsigned char)c);
}

/*
 * "--guest SPEC", "guest=SPEC", ...: the spec, *@dev says which. A bare
 * "--guest" is an empty spec, which the option's parser words as it does
 * for `--guest ''`: one mistake, one message.
 */
static char *config_line(char *s, bool *dev)
{
	if (!strncmp(s, "--", 2))
		s += 2;
	if (!strncmp(s, "guest", 5) && spec_follows(s[5])) {
		*dev = false;
		s += 5;
	} else if (!strncmp(s, "device", 6) && spec_follows(s[6])) {
		*dev = true;
		s += 6;
	} else {
		return NULL;
	}
	if (*s == '=')
		s++;
	return trim(s);
}

/* One line of @path: 0, or -1 with "path:line: why". */
static int config_file_line(struct daemon_config *c, char *line,
			    const char *path, unsigned int lineno,
			    char *err, size_t errlen)
{
	char sub[HOSTD_SPEC_MAX + 256], *hash, *s, *arg;
	bool dev;

	hash = strchr(line, '#');
	if (hash)
		*hash = 0;
	s = trim(line);
	if (!*s)
		return 0;
	arg = config_line(s, &dev);
	if (!arg)
		return fail(err, errlen,
			    "%s:%u: expected '--guest SPEC' or '--device SPEC'",
			    path, lineno);
	if (dev ? daemon_config_add_dev(c, arg, sub, sizeof(sub))
		: daemon_config_add_guest(c, arg, sub, sizeof(sub)))
		return fail(err, errlen, "%s:%u: %s", path, lineno, sub);
	return 0;
}

/*
 * What --config names is opened without blocking and checked on the open
 * descriptor: a FIFO or a device (/dev/zero) would hang the start, so only
 * a regular file up to CONFIG_MAX_BYTES is read, and a NUL byte (a binary
 * file, or a line cut short by one) is refused rather than read past.
 */
#define CONFIG_MAX_BYTES (1 << 20)

static FILE *config_open(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		fail(err, errlen, "config %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0)
		fail(err, errlen, "config %s: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		fail(err, errlen, "config %s is not a regular file", path);
	else if (st.st_size > CONFIG_MAX_BYTES)
		fail(err, errlen, "config %s is %lld bytes: larger than %d",
		     path, (long long)st.st_size, CONFIG_MAX_BYTES);
	else if ((f = fdopen(fd, "r")))
		return f;
	else
		fail(err, errlen, "config %s: %s", path, strerror(errno));
	close(fd);
	return NULL;
}

int daemon_config_file(struct daemon_config *c, const char *path,
		       char *err, size_t errlen)
{
	unsigned int lineno = 0;
	size_t cap = 0, total = 0;
	char *line = NULL;
	ssize_t n;
	int ret = 0;
	FILE *f = config_open(path, err, errlen);

	if (!f)
		return -1;
	while (!ret && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		total += (size_t)n;
		if (total > CONFIG_MAX_BYTES)	/* it grew while we read */
			ret = fail(err, errlen, "config %s: larger than %d bytes",
				   path, CONFIG_MAX_BYTES);
		else if (memchr(line, '\0', (size_t)n))
			ret = fail(err, errlen, "%s:%u: a NUL byte: not a text line",
				   path, lineno);
		else if ((size_t)n > HOSTD_SPEC_MAX + 63)
			ret = fail(err, errlen, "%s:%u: line too long", path, lineno);
		else
			ret = config_file_line(c, line, path, lineno, err, errlen);
	}
	if (!ret && ferror(f))
		ret = fail(err, errlen, "config %s: read error", path);
	free(line);
	fclose(f);
	return ret;
}

/* ---- checks ------------------------------------------------------------------------- */

/*
 * A file by what it is, not how it is spelt: the inode of an existing
 * file, else the inode of its directory and its last name ("a//b", "a/b"
 * and "link-to-a/b" all come out the same).
 */
struct file_id {
	bool ok;
	dev_t dev;
	ino_t ino;
	char name[256];
};

static void file_id(const char *path, struct file_id *id)
{
	char dir[PATH_MAX], base[PATH_MAX];
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (stat(path, &st) == 0) {
		id->ok = true;
		id->dev = st.st_dev;
		id->ino = st.st_ino;
		return;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	if (stat(dirname(dir), &st) < 0)
		return;		/* opening it will say why */
	id->ok = true;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	snprintf(id->name, sizeof(id->name), "%s", basename(base));
}

static bool same_file(const struct file_id *a, const struct file_id *b)
{
	return a->ok && b->ok && a->dev == b->dev && a->ino == b->ino &&
	       !strcmp(a->name, b->name);
}

struct config_path {
	const char *path;
	char what[HOSTD_NAME_MAX + 32];	/* "guest g1's mem" */
	struct file_id id;
};

/* Every socket and RAM file of @c; returns how many. */
static unsigned int config_paths(const struct daemon_config *c,
				 struct config_path *p)
{
	unsigned int i, n = 0;

	p[n].path = c->ctl;
	snprintf(p[n++].what, sizeof(p->what), "the control socket");
	for (i = 0; i < c->nguests; i++) {
		p[n].path = c->guests[i].sock;
		snprintf(p[n++].what, sizeof(p->what), "guest %s's sock",
			 c->guests[i].name);
		p[n].path = c->guests[i].mem;
		snprintf(p[n++].what, sizeof(p->what), "guest %s's mem",
			 c->guests[i].name);
	}
	for (i = 0; i < n; i++)
		file_id(p[i].path, &p[i].id);
	return n;
}

static int check_paths(const struct daemon_config *c, char *err, size_t errlen)
{
	struct config_path *p = calloc(1 + 2 * HOSTD_MAX_GUESTS, sizeof(*p));
	unsigned int i, j, n;
	int ret = 0;

	if (!p)
		return fail(err, errlen, "out of memory");
	n = config_paths(c, p);
	for (i = 0; i < n && !ret; i++)
		for (j = 0; j < i && !ret; j++)
			if (same_file(&p[i].id, &p[j].id))
				ret = fail(err, errlen,
					   "%s %s and %s %s are the same file",
					   p[j].what, p[j].path, p[i].what,
					   p[i].path);
	free(p);
	return ret;
}

static bool have_guest(const struct daemon_config *c, const char *name)
{
	unsigned int i;

	for (i = 0; i < c->nguests; i++)
		if (!strcmp(c->guests[i].name, name))
			return true;
	return false;
}

int daemon_config_check(struct daemon_config *c, char *err, size_t errlen)
{
	unsigned int i;

	if (!c->ctl[0])
		return fail(err, errlen, "--ctl CTL.sock is required");
	if (!c->nguests)
		return fail(err, errlen, "no --guest given");
	for (i = 0; i < c->ndevs; i++)
		if (!have_guest(c, c->devs[i].guest))
			return fail(err, errlen, HOSTD_ERR_NO_GUEST,
				    c->devs[i].guest);
	return check_paths(c, err, errlen);
}

void daemon_config_free(struct daemon_config *c)
{
	unsigned int i;

	for (i = 0; i < c->ndevs; i++)
		daemon_dev_cfg_free(&c->devs[i]);
	free(c->devs);
	c->devs = NULL;
	c->ndevs = 0;
}
