/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* vbus-hostd: an intrusive doubly linked list (the library's only one). */
#ifndef VBUS_HOSTD_LIST_H
#define VBUS_HOSTD_LIST_H

#include <stdbool.h>
#include "device.h"	/* hostd_container_of */

struct hostd_list {
	struct hostd_list *next, *prev;
};

static inline void hostd_list_init(struct hostd_list *l)
{
	l->next = l->prev = l;
}

static inline void hostd_list_add_tail(struct hostd_list *n,
				       struct hostd_list *head)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void hostd_list_del(struct hostd_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

static inline bool hostd_list_empty(const struct hostd_list *l)
{
	return l->next == l;
}

/* Safe against removing @pos inside the body. */
#define hostd_list_for_each_safe(pos, tmp, head)			\
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

/* The entries of @head, as @type via @member; safe against removal. */
#define hostd_list_for_each_entry(e, tmp, head, type, member)		\
	for (struct hostd_list *tmp = (head)->next, *tmp##_n = tmp->next; \
	     tmp != (head) && ((e) = hostd_container_of(tmp, type, member), 1); \
	     tmp = tmp##_n, tmp##_n = tmp->next)

#endif /* VBUS_HOSTD_LIST_H */
