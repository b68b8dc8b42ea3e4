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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hostd.h"

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

int hostd_parse_size(const char *s, __u64 *out)
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
	if (!eq || eq == tmp || !eq[1]) {
		*bad = true;
		*k = tmp;
		return comma ? comma + 1 : s + len;
	}
	*eq = 0;
	*k = tmp;
	*v = eq + 1;
	return comma ? comma + 1 : s + len;
}

int hostd_parse_guest_spec(const char *spec, struct hostd_guest_cfg *gc,
			   char *err, size_t errlen)
{
	char tmp[HOSTD_SPEC_MAX];
	bool have_sock = false, have_mem = false, have_size = false,
	     have_machine = false;
	const char *p;
	char *k = NULL, *v = NULL;
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
		if (!strcmp(k, "sock")) {
			if (have_sock)
				return fail(err, errlen, "--guest %s: sock= given twice", gc->name);
			if (strlen(v) >= sizeof(gc->sock))
				return fail(err, errlen, "--guest %s: sock path longer than %zu bytes",
					    gc->name, sizeof(gc->sock) - 1);
			strcpy(gc->sock, v);
			have_sock = true;
		} else if (!strcmp(k, "mem")) {
			if (have_mem)
				return fail(err, errlen, "--guest %s: mem= given twice", gc->name);
			if (strlen(v) >= sizeof(gc->mem))
				return fail(err, errlen, "--guest %s: mem path too long", gc->name);
			strcpy(gc->mem, v);
			have_mem = true;
		} else if (!strcmp(k, "size")) {
			if (have_size)
				return fail(err, errlen, "--guest %s: size= given twice", gc->name);
			if (hostd_parse_size(v, &gc->size))
				return fail(err, errlen, "--guest %s: bad size '%s' (e.g. 512M, 1G)",
					    gc->name, v);
			if (gc->size < HOSTD_MEM_MIN || gc->size > HOSTD_MEM_MAX ||
			    gc->size & 4095)
				return fail(err, errlen,
					    "--guest %s: size %s must be a multiple of 4 KiB between 1M and 1T",
					    gc->name, v);
			have_size = true;
		} else if (!strcmp(k, "machine")) {
			if (have_machine)
				return fail(err, errlen, "--guest %s: machine= given twice", gc->name);
			if (!strcmp(v, "q35"))
				gc->machine = HOSTD_MACHINE_Q35;
			else if (!strcmp(v, "pc"))
				gc->machine = HOSTD_MACHINE_PC;
			else
				return fail(err, errlen, "--guest %s: machine must be q35 or pc, not '%s'",
					    gc->name, v);
			have_machine = true;
		} else {
			return fail(err, errlen,
				    "--guest %s: unknown parameter '%s' (sock, mem, size, machine)",
				    gc->name, k);
		}
	}
	if (!have_sock || !have_mem || !have_size)
		return fail(err, errlen, "--guest %s: missing %s", gc->name,
			    !have_sock ? "sock=" : !have_mem ? "mem=" : "size=");
	return 0;
}

void hostd_dev_cfg_free(struct hostd_dev_cfg *dc)
{
	free(dc->strbuf);
	dc->strbuf = NULL;
	dc->params.count = 0;
}

int hostd_parse_dev_spec(const char *spec, bool with_guest,
			 struct hostd_dev_cfg *dc, char *err, size_t errlen)
{
	char tmp[HOSTD_SPEC_MAX];
	bool have_type = false, have_id = false;
	const char *p = spec;
	char *k = NULL, *v = NULL, *sb;
	size_t used = 0, total;
	bool bad;
	unsigned int i;

	memset(dc, 0, sizeof(*dc));
	if (strlen(spec) >= HOSTD_SPEC_MAX)
		return fail(err, errlen, "device spec too long");
	if (with_guest) {
		p = split_name(spec, dc->guest, "--device", err, errlen);
		if (!p)
			return -1;
	}
	total = strlen(p) + 1;
	sb = dc->strbuf = malloc(total);
	if (!sb)
		return fail(err, errlen, "out of memory");

	while ((p = next_kv(p, tmp, &k, &v, &bad)) != NULL || bad) {
		if (bad) {
			fail(err, errlen, "device spec '%s': malformed '%s' (expected key=value)",
			     spec, k ? k : "");
			goto out_fail;
		}
		if (!strcmp(k, "type")) {
			if (have_type) {
				fail(err, errlen, "device spec '%s': type= given twice", spec);
				goto out_fail;
			}
			if (strlen(v) >= sizeof(dc->type)) {
				fail(err, errlen, "device spec '%s': type too long", spec);
				goto out_fail;
			}
			strcpy(dc->type, v);
			have_type = true;
		} else if (!strcmp(k, "id")) {
			char *end;
			unsigned long long id;

			if (have_id) {
				fail(err, errlen, "device spec '%s': id= given twice", spec);
				goto out_fail;
			}
			errno = 0;
			id = strtoull(v, &end, 10);
			if (errno || *end || !isdigit((unsigned char)*v) ||
			    id > 0xffffffffull) {
				fail(err, errlen, "device spec '%s': bad id '%s' (0..4294967295)",
				     spec, v);
				goto out_fail;
			}
			dc->id = (__u32)id;
			have_id = true;
		} else {
			size_t kl = strlen(k) + 1, vl = strlen(v) + 1;

			for (i = 0; i < dc->params.count; i++) {
				if (!strcmp(dc->pv[i].key, k)) {
					fail(err, errlen, "device spec '%s': %s= given twice", spec, k);
					goto out_fail;
				}
			}
			if (dc->params.count >= HOSTD_MAX_PARAMS) {
				fail(err, errlen, "device spec '%s': more than %d parameters",
				     spec, HOSTD_MAX_PARAMS);
				goto out_fail;
			}
			/* "k=v" -> "k\0v\0": never longer than the spec */
			memcpy(sb + used, k, kl);
			memcpy(sb + used + kl, v, vl);
			dc->pv[dc->params.count].key = sb + used;
			dc->pv[dc->params.count].value = sb + used + kl;
			dc->params.count++;
			used += kl + vl;
		}
	}
	if (!have_type || !have_id) {
		fail(err, errlen, "device spec '%s': missing %s", spec,
		     !have_type ? "type=" : "id=");
		goto out_fail;
	}
	dc->params.v = dc->pv;
	return 0;

out_fail:
	hostd_dev_cfg_free(dc);
	return -1;
}

int hostd_config_add_guest(struct hostd_config *c, const char *spec,
			   char *err, size_t errlen)
{
	struct hostd_guest_cfg gc;
	unsigned int i;

	if (hostd_parse_guest_spec(spec, &gc, err, errlen))
		return -1;
	if (c->nguests >= HOSTD_MAX_GUESTS)
		return fail(err, errlen, "more than %d guests", HOSTD_MAX_GUESTS);
	for (i = 0; i < c->nguests; i++) {
		if (!strcmp(c->guests[i].name, gc.name))
			return fail(err, errlen, "guest %s defined twice", gc.name);
		if (!strcmp(c->guests[i].sock, gc.sock))
			return fail(err, errlen, "guests %s and %s share sock %s",
				    c->guests[i].name, gc.name, gc.sock);
		if (!strcmp(c->guests[i].mem, gc.mem))
			return fail(err, errlen, "guests %s and %s share mem %s",
				    c->guests[i].name, gc.name, gc.mem);
	}
	c->guests[c->nguests++] = gc;
	return 0;
}

int hostd_config_add_dev(struct hostd_config *c, const char *spec,
			 char *err, size_t errlen)
{
	struct hostd_dev_cfg dc, *n;

	if (hostd_parse_dev_spec(spec, true, &dc, err, errlen))
		return -1;
	n = realloc(c->devs, (c->ndevs + 1) * sizeof(*n));
	if (!n) {
		hostd_dev_cfg_free(&dc);
		return fail(err, errlen, "out of memory");
	}
	c->devs = n;
	c->devs[c->ndevs] = dc;
	/* params.v pointed into the stack copy */
	c->devs[c->ndevs].params.v = c->devs[c->ndevs].pv;
	c->ndevs++;
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

int hostd_config_file(struct hostd_config *c, const char *path,
		      char *err, size_t errlen)
{
	char line[HOSTD_SPEC_MAX + 64], sub[HOSTD_SPEC_MAX + 256];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return fail(err, errlen, "config %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *s, *hash, *arg;
		size_t n = strlen(line);
		bool dev;

		lineno++;
		if (n == sizeof(line) - 1 && line[n - 1] != '\n' && !feof(f)) {
			fclose(f);
			return fail(err, errlen, "%s:%u: line too long", path, lineno);
		}
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		s = trim(line);
		if (!*s)
			continue;
		if (!strncmp(s, "--", 2))
			s += 2;
		if (!strncmp(s, "guest", 5) && (s[5] == '=' || isspace((unsigned char)s[5]))) {
			dev = false;
			arg = s + 5;
		} else if (!strncmp(s, "device", 6) &&
			   (s[6] == '=' || isspace((unsigned char)s[6]))) {
			dev = true;
			arg = s + 6;
		} else {
			fclose(f);
			return fail(err, errlen,
				    "%s:%u: expected '--guest SPEC' or '--device SPEC'",
				    path, lineno);
		}
		if (*arg == '=')
			arg++;
		arg = trim(arg);
		if (dev ? hostd_config_add_dev(c, arg, sub, sizeof(sub))
			: hostd_config_add_guest(c, arg, sub, sizeof(sub))) {
			fclose(f);
			return fail(err, errlen, "%s:%u: %s", path, lineno, sub);
		}
	}
	if (ferror(f)) {
		fclose(f);
		return fail(err, errlen, "config %s: read error", path);
	}
	fclose(f);
	return 0;
}

int hostd_config_check(struct hostd_config *c, char *err, size_t errlen)
{
	unsigned int i, j, n;

	if (!c->ctl[0])
		return fail(err, errlen, "--ctl CTL.sock is required");
	if (!c->nguests)
		return fail(err, errlen, "no --guest given");
	for (i = 0; i < c->ndevs; i++) {
		struct hostd_dev_cfg *d = &c->devs[i];

		for (j = 0; j < c->nguests; j++)
			if (!strcmp(c->guests[j].name, d->guest))
				break;
		if (j == c->nguests)
			return fail(err, errlen, "--device %s:...,id=%u: no such guest '%s'",
				    d->guest, d->id, d->guest);
		if (!hostd_dev_type_find(d->type))
			return fail(err, errlen, "--device %s:...,id=%u: unknown type '%s'",
				    d->guest, d->id, d->type);
		for (j = 0, n = 0; j < c->ndevs; j++) {
			if (!strcmp(c->devs[j].guest, d->guest)) {
				n++;
				if (j < i && c->devs[j].id == d->id)
					return fail(err, errlen,
						    "--device %s: id %u used twice",
						    d->guest, d->id);
			}
		}
		if (n > HOSTD_MAX_DEVS)
			return fail(err, errlen, "guest %s: more than %d devices",
				    d->guest, HOSTD_MAX_DEVS);
	}
	return 0;
}

void hostd_config_free(struct hostd_config *c)
{
	unsigned int i;

	for (i = 0; i < c->ndevs; i++)
		hostd_dev_cfg_free(&c->devs[i]);
	free(c->devs);
	c->devs = NULL;
	c->ndevs = 0;
}
