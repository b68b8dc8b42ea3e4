// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: exclusive host resources (see claim.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "claim.h"

struct claim {
	struct claim *next;
	const void *owner;
	char *key;		/* "what name" */
	char desc[96];
};

static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static struct claim *claims;	/* under claim_lock */

static struct claim *claim_find(const char *key)
{
	struct claim *c;

	for (c = claims; c; c = c->next)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

int hostd_claim(const char *what, const char *name, const void *owner,
		const char *desc, char *holder, size_t holderlen)
{
	size_t len = strlen(what) + strlen(name) + 2;
	struct claim *c, *held;
	int ret = 0;

	c = calloc(1, sizeof(*c));
	if (c)
		c->key = malloc(len);
	if (!c || !c->key) {
		free(c);
		snprintf(holder, holderlen, "(out of memory)");
		return -ENOMEM;
	}
	snprintf(c->key, len, "%s %s", what, name);
	snprintf(c->desc, sizeof(c->desc), "%s", desc);
	c->owner = owner;
	pthread_mutex_lock(&claim_lock);
	held = claim_find(c->key);
	if (held) {
		snprintf(holder, holderlen, "%s", held->desc);
		ret = held->owner == owner ? 0 : -EBUSY;
	} else {
		c->next = claims;
		claims = c;
		c = NULL;
	}
	pthread_mutex_unlock(&claim_lock);
	if (c) {
		free(c->key);
		free(c);
	}
	return ret;
}

void hostd_claim_release(const void *owner)
{
	struct claim **pp, *c;

	pthread_mutex_lock(&claim_lock);
	for (pp = &claims; (c = *pp);) {
		if (c->owner == owner) {
			*pp = c->next;
			free(c->key);
			free(c);
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&claim_lock);
}
