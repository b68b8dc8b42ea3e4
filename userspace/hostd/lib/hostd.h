/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd internals, shared by the daemon's files and the host-side
 * tests (tests/hostd, tests/fuzz). Devices use device.h only.
 *
 * Structure: one struct hostd_guest per --guest (one bus). Each runs its
 * own thread with an epoll loop (guest.c) that owns all of that guest's
 * state: the ivshmem connection, the hypercall mailbox, the eventq, the
 * signal table and the devices. The main thread runs the control socket
 * and hands guest-specific commands to the guest's thread (hostd_guest_call)
 * instead of sharing state. Why threads and not one loop for everything:
 * a guest that floods doorbells, or a device backend that is slow (a tap
 * write, a big echo buffer), then costs only its own thread; per-guest
 * state stays single-threaded (no locks on the data path); guests spread
 * over cores.
 */
#ifndef VBUS_HOSTD_H
#define VBUS_HOSTD_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <vbus/platform.h>
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>
#include <vbus/vbus_pci.h>
#include "device.h"

/* ---- small helpers ---------------------------------------------------- */

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

#define hostd_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

#define hostd_list_for_each_safe(pos, tmp, head)			\
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

/* A growable string, for control-socket replies. */
struct hostd_buf {
	char *s;
	size_t len, cap;
	bool oom;
};
void hostd_buf_printf(struct hostd_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hostd_buf_json_str(struct hostd_buf *b, const char *s);
void hostd_buf_free(struct hostd_buf *b);

/* ---- logging ---------------------------------------------------------- */

extern int hostd_verbose;

/* A token bucket: @burst lines per second. */
struct hostd_ratelimit {
	unsigned long long window_ns;
	unsigned int printed;
	unsigned long suppressed;
};

/* Daemon-level messages (start-up, control): never rate-limited. */
void hostd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hostd_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Anything a guest can provoke: rate-limited per guest. */
void hostd_glog(struct hostd_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hostd_vlog_rl(struct hostd_ratelimit *rl, const char *prefix,
		   const char *fmt, va_list ap);

/* ---- configuration (config.c) ------------------------------------------ */

#define HOSTD_NAME_MAX		32
#define HOSTD_MAX_GUESTS	64
#define HOSTD_MAX_DEVS		64	/* per bus */
#define HOSTD_MAX_PARAMS	16	/* per device */
#define HOSTD_SPEC_MAX		1024

enum hostd_machine { HOSTD_MACHINE_Q35, HOSTD_MACHINE_PC };

struct hostd_guest_cfg {
	char name[HOSTD_NAME_MAX + 1];
	char sock[108];			/* sun_path */
	char mem[PATH_MAX];
	__u64 size;
	enum hostd_machine machine;
};

/* A parsed --device spec; owns its strings. */
struct hostd_dev_cfg {
	char guest[HOSTD_NAME_MAX + 1];
	char type[VBUS_MAX_DEVTYPE_LEN];
	__u32 id;
	struct hostd_params params;	/* without type= and id= */
	struct hostd_param pv[HOSTD_MAX_PARAMS];
	char *strbuf;			/* storage for the keys/values */
};

struct hostd_config {
	char ctl[108];
	bool foreground;
	int verbose;
	unsigned int nguests, ndevs;
	struct hostd_guest_cfg guests[HOSTD_MAX_GUESTS];
	struct hostd_dev_cfg *devs;	/* ndevs */
};

/*
 * Each returns 0, or -1 with a message in @err (what was wrong and where).
 */
int hostd_parse_size(const char *s, __u64 *out);
int hostd_parse_guest_spec(const char *spec, struct hostd_guest_cfg *gc,
			   char *err, size_t errlen);
/* "NAME:type=...,id=N,..." (@with_guest) or "type=...,id=N,..." */
int hostd_parse_dev_spec(const char *spec, bool with_guest,
			 struct hostd_dev_cfg *dc, char *err, size_t errlen);
void hostd_dev_cfg_free(struct hostd_dev_cfg *dc);
int hostd_config_add_guest(struct hostd_config *c, const char *spec,
			   char *err, size_t errlen);
int hostd_config_add_dev(struct hostd_config *c, const char *spec,
			 char *err, size_t errlen);
int hostd_config_file(struct hostd_config *c, const char *path,
		      char *err, size_t errlen);
/* Cross-checks after everything is parsed (guests of devices exist, ...) */
int hostd_config_check(struct hostd_config *c, char *err, size_t errlen);
void hostd_config_free(struct hostd_config *c);

/* ---- guest memory (guestmem.c) ------------------------------------------ */

struct hostd_memblock {
	__u64 gpa;	/* first guest-physical address of the block */
	__u64 size;
	__u64 off;	/* offset in the RAM file */
};

struct hostd_mem {
	int fd;
	unsigned char *base;	/* the whole file, MAP_SHARED */
	__u64 size;
	unsigned int nblocks;
	struct hostd_memblock blk[2];
};

/* The below-4G part of @ram for @machine (DESIGN.md §4). */
__u64 hostd_mem_lowmem(enum hostd_machine machine, __u64 ram);
/* Build the table for a RAM of @size with @lowmem below 4 GiB. */
void hostd_mem_layout(struct hostd_mem *m, __u64 size, __u64 lowmem);
/* Create/size/map the RAM file (or use @fd >= 0, e.g. a memfd, as is). */
int hostd_mem_open(struct hostd_mem *m, const char *path, int fd, __u64 size,
		   enum hostd_machine machine);
void hostd_mem_close(struct hostd_mem *m);
void *hostd_mem_gpa(const struct hostd_mem *m, __u64 gpa, __u64 len);

/* ---- devices and the bus (bus.c, devreg.c) ------------------------------- */

struct hostd_counters {
	__u64 calls;		/* DEVCALLs answered */
	__u64 descs;		/* descriptors consumed (device-reported) */
	__u64 bytes;		/* payload bytes moved (device-reported) */
	__u64 notify_in;	/* guest doorbells delivered to a signal */
	__u64 notify_out;	/* injects towards the guest */
	__u64 faults;
};

struct hostd_fdwatch {
	struct hostd_list node;		/* in guest->fdwatches */
	struct hostd_dev *dev;		/* NULL for hostd's own fds */
	int fd;
	hostd_fd_cb cb;
	void *arg;
	void (*gcb)(struct hostd_guest *g, __u32 events);	/* own fds */
	bool dead;			/* removed while dispatching */
};

/* One DEVSHM registration (the public part is struct hostd_shm). */
struct hostd_shm_ent {
	struct hostd_shm pub;
	struct hostd_list node;		/* in dev->shms */
	struct hostd_guest *guest;
	struct shm_signal signal;	/* valid when pub.signal != NULL */
	__u64 cookie;			/* the guest's, for SHMSIGNAL/SHMCLOSE */
	__u32 handle;			/* 1..VBUS_PCI_MAX_SIGNALS-1, or 0 */
	bool closed;			/* device closed: injects go nowhere */
};

struct hostd_dev {
	struct hostd_list node;		/* in guest->devs */
	struct hostd_guest *guest;
	const struct hostd_dev_type *type;
	struct hostd_dev_cfg cfg;
	__u32 id;
	void *priv;
	bool created;
	bool open;
	bool faulted;
	__u64 handle;			/* nonzero while open */
	struct hostd_list shms;		/* struct hostd_shm_ent */
	struct hostd_counters cnt;
};

/* ---- the event queue (eventq.c) ------------------------------------------ */

#define HOSTD_EVQ_BACKLOG	256

struct hostd_eventq {
	bool attached;
	struct ioq ioq;
	struct shm_signal signal;	/* south, over the ring head's desc */
	struct ioq_notifier notifier;
	__u32 count;
	/* events the guest had no descriptor for yet, oldest first */
	struct vbus_pci_event *backlog;	/* HOSTD_EVQ_BACKLOG */
	unsigned int bl_head, bl_len;
	/* counters */
	__u64 posted, backlogged, dropped;
};

/* ---- the guest ----------------------------------------------------------- */

struct hostd_cmd;

struct hostd_guest {
	struct hostd_guest_cfg cfg;
	const char *name;		/* = cfg.name */
	struct hostd_mem mem;
	struct hostd_ratelimit rl;

	/* BAR2: our mapping of the memfd QEMU maps */
	int bar2_fd;
	struct vbus_pci_shm *shm;
	__u32 host_peer, guest_peer;

	/* the ivshmem connection */
	int listen_fd;			/* -1 in the tests */
	int conn_fd;			/* -1 while no QEMU */
	int db_fd[VBUS_PCI_NR_VECTORS];	  /* host peer: the guest rings these */
	int msix_fd[VBUS_PCI_NR_VECTORS]; /* guest vectors: we write these */
	__u64 connections;

	/* the loop */
	int epfd;
	int wake_fd;			/* eventfd: commands, deferred work */
	bool defer_pending;		/* some vbus_defer was scheduled */
	struct hostd_list fdwatches;
	unsigned int dispatch_depth;
	pthread_t thread;
	bool thread_started;
	volatile int stop;		/* read with __atomic */
	pthread_mutex_t cmd_lock;
	struct hostd_cmd *cmds;		/* under cmd_lock */

	/* the bus */
	bool negotiated;
	bool busreg;
	bool faulted;			/* bus fault: only NEGOTIATE/BUSREG */
	__u32 last_seq;			/* last hc_seq answered */
	__u64 next_handle;
	struct hostd_list devs;
	unsigned int ndevs;
	struct hostd_shm_ent *sigs[VBUS_PCI_MAX_SIGNALS];
	struct hostd_eventq evq;

	/* counters */
	__u64 hypercalls, hc_errors, doorbells, sig_unknown, bus_faults;
};

/* guest.c: lifetime, loop, connection */
int hostd_guest_init(struct hostd_guest *g, const struct hostd_guest_cfg *cfg,
		     int mem_fd);
/* Listen on cfg.sock (unlinking a stale socket). */
int hostd_guest_listen(struct hostd_guest *g);
int hostd_guest_start(struct hostd_guest *g);	/* the thread */
void hostd_guest_stop(struct hostd_guest *g);
void hostd_guest_fini(struct hostd_guest *g);
/* One pass of the loop: wait up to @timeout_ms, dispatch. */
int hostd_guest_poll(struct hostd_guest *g, int timeout_ms);
/* Per connection: fresh BAR2 contents and eventfds; and the teardown. */
int hostd_guest_conn_setup(struct hostd_guest *g);
void hostd_guest_conn_teardown(struct hostd_guest *g);
/* Run deferred work (vbus_defer of our signals, bus-fault cleanup). */
void hostd_guest_run_deferred(struct hostd_guest *g);
/* Run @fn on the guest's thread (inline when it has none) and wait. */
int hostd_guest_call(struct hostd_guest *g,
		     int (*fn)(struct hostd_guest *g, void *arg), void *arg);
int hostd_watch_add(struct hostd_guest *g, struct hostd_dev *dev, int fd,
		    __u32 events, hostd_fd_cb cb,
		    void (*gcb)(struct hostd_guest *, __u32), void *arg);
void hostd_watch_del(struct hostd_guest *g, int fd);
/* Write 1 to an eventfd of QEMU's (O_NONBLOCK: EAGAIN means pending). */
void hostd_eventfd_kick(int fd);
/* Drain an eventfd; true if it had a count. */
bool hostd_eventfd_drain(int fd);

/* ivshmem.c: the server side of QEMU's ivshmem protocol */
int hostd_ivshmem_send(int sock, __s64 msg, int fd);
int hostd_ivshmem_handshake(struct hostd_guest *g, int sock);
int hostd_bar2_create(struct hostd_guest *g);
void hostd_bar2_destroy(struct hostd_guest *g);

/* bus.c: hypercalls and devices */
void hostd_hc_doorbell(struct hostd_guest *g);	/* DB_HC fired */
int hostd_hc_dispatch(struct hostd_guest *g, const struct vbus_pci_hypercall *hc);
void hostd_bus_fault(struct hostd_guest *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hostd_bus_reset(struct hostd_guest *g);	/* close all, detach eventq */
int hostd_dev_add(struct hostd_guest *g, struct hostd_dev_cfg *dc,
		  char *err, size_t errlen);	/* takes over dc's strings */
int hostd_dev_drop(struct hostd_guest *g, __u32 id);
struct hostd_dev *hostd_dev_find(struct hostd_guest *g, __u32 id);
void hostd_dev_close(struct hostd_dev *dev);
void hostd_dev_free_all(struct hostd_guest *g);

/* signals.c: guest -> host (sigpending), host -> guest (MSI-X) */
void hostd_sig_doorbell(struct hostd_guest *g);	/* DB_SIGNAL fired */
int hostd_sig_alloc(struct hostd_guest *g, struct hostd_shm_ent *e);
void hostd_sig_release_handle(struct hostd_guest *g, struct hostd_shm_ent *e);
void hostd_shm_ent_signal_init(struct hostd_shm_ent *e,
			       struct shm_signal_desc *desc);

/* eventq.c */
int hostd_evq_attach(struct hostd_guest *g, const struct vbus_pci_eventqreg *r);
void hostd_evq_detach(struct hostd_guest *g);
/* Queue one event for the guest and try to deliver (0, or -errno). */
int hostd_evq_post(struct hostd_guest *g, const struct vbus_pci_event *ev);
void hostd_evq_flush(struct hostd_guest *g);

/* devreg.c: registry, params, stats emitter */
struct hostd_stats_out {
	struct hostd_buf *b;
	bool json;
	unsigned int n;		/* entries emitted in the current object */
};
void hostd_dev_stats(struct hostd_dev *dev, struct hostd_stats_out *out);
void hostd_dev_types_list(struct hostd_buf *b);

/* ctl.c: the control socket */
int hostd_ctl_listen(const char *path);
/* Serve one connection on @fd against @guests. */
void hostd_ctl_serve(int fd, struct hostd_guest **guests, unsigned int n);
/* Execute one command line; the reply (first line OK/ERR) goes to @out. */
void hostd_ctl_exec(const char *line, struct hostd_guest **guests,
		    unsigned int n, struct hostd_buf *out);
int hostd_ctl_client(const char *path, const char *line, FILE *out);

/* main.c entry points, split for the tests */
int hostd_main(int argc, char **argv);

/* A unix socket path: bind (unlinking a stale socket, refusing a live one) */
int hostd_unix_listen(const char *path, char *err, size_t errlen);

#endif /* VBUS_HOSTD_H */
