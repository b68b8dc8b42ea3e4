/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd device-type interface: the only vbus-hostd header a device
 * includes (docs/adding-a-device.md walks through writing one).
 *
 * A device type (vbus-test, venet, ...) is a struct hostd_dev_type with a
 * handful of ops, registered with HOSTD_DEV_TYPE(var). The library
 * (libvbus-hostd) owns everything around it: the guest's memory table, the
 * bus (device ids, handles, signal handles), the hypercall and eventq
 * transport, the counters; the daemon adds the command line and the
 * control socket.
 *
 * Threading. Each guest (bus) has one thread running an epoll loop. Every
 * op of every device on that bus, every fd callback it registers, every
 * shm-signal notifier and inject of its signals, and every hostd_*() call
 * below happen on that thread, so a device needs no locks for its own
 * state. A device that wants its own worker threads hands results back to
 * the loop through an fd it registers (an eventfd) and makes hostd_*()
 * calls only from the callback. Blocking in an op stalls only that guest;
 * still, don't (use O_NONBLOCK fds). The one exception is a type that
 * opts into queue threads (threads=N, "Queue threads" below).
 *
 * Guest memory is hostile. Anything a device reads from it (ring
 * descriptors, buffers) may change under it at any time: read each field
 * once (VBUS_READ / a memcpy to local storage), validate, then use. A
 * device that finds garbage calls hostd_dev_fault() and stops; the bus,
 * the other devices and the other guests go on.
 *
 * Lifetime of a device:
 *   create(params)   at daemon start (--device) or `ctl add`; no guest may
 *                    be connected yet. Validate params, allocate, open
 *                    host resources (e.g. the tap). A negative errno
 *                    refuses it: return hostd_dev_fail(dev, -E..., why) so
 *                    the command line and `ctl add` both print the why.
 *   open(version)    guest DEVOPEN. At most one open at a time (hostd
 *                    answers -EBUSY to a second one itself).
 *   call / shm       only while open and not faulted.
 *   close()          guest DEVCLOSE, guest gone (QEMU disconnected,
 *                    NEGOTIATE/BUSREG again, BUSREG detach, bus fault) or
 *                    `ctl drop`. Release everything built over the
 *                    device's shms (ioq_put) and every pointer into guest
 *                    memory, and do not touch guest memory in close: the
 *                    guest may have freed it already (module reload,
 *                    reboot). Afterwards hostd drops its own references
 *                    to the shms' signals (SHMCLOSE to the guest when its
 *                    eventq is still there) and frees the struct hostd_shm.
 *   destroy()        `ctl drop` or daemon exit; after close if it was open.
 * A device faulted by hostd_dev_fault() gets no call/shm until it is
 * closed; a fresh open (the guest driver reloading) starts it clean.
 *
 * Faults, one check per level: a ring (channel) is faulted when
 * shm_signal_faulted(ioq->signal); that always faults its device too, so
 * a device's entry points need only hostd_dev_faulted(dev). A faulted bus
 * closes its devices: the device sees close().
 */
#ifndef VBUS_HOSTD_DEVICE_H
#define VBUS_HOSTD_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <vbus/platform.h>
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>
#include <vbus/poll_window.h>

#ifdef __cplusplus
extern "C" {
#endif

#define hostd_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

struct hostd_dev;	/* one device instance on a bus; opaque */
struct hostd_stats_out;	/* the control interface's key/value emitter */

/* --- parameters --------------------------------------------------------- */

/*
 * The key=value list of a --device spec or `ctl add`, without the ones
 * hostd consumes itself (type=, id=). Strings live as long as the device.
 */
struct hostd_param {
	const char *key;
	const char *value;
};

struct hostd_params {
	unsigned int count;
	const struct hostd_param *v;
};

/* The value of @key, or NULL if it was not given. */
const char *hostd_param_get(const struct hostd_params *p, const char *key);

/*
 * Refuse (hostd_dev_fail, -EINVAL) a key not in the NULL-terminated
 * @known: "unknown parameter 'color' (known: tap, mac, strict)".
 */
int hostd_params_check(struct hostd_dev *dev, const struct hostd_params *p,
		       const char *const *known);

/* --- shared memory regions (DEVSHM) -------------------------------------- */

/*
 * One DEVSHM registration, as handed to the shm op. hostd has already
 * translated and bounds-checked the region: ptr..ptr+len lies inside one
 * block of guest RAM. Its contents are still guest-controlled.
 *
 * The structure is hostd's; it stays valid until the device's close op
 * returns. The device may use ->priv.
 */
struct hostd_shm {
	struct hostd_dev *dev;
	__u32 id;		/* DEVSHM id: meaning defined by the device */
	__u32 flags;		/* DEVSHM flags, as the guest sent them */
	__u32 prio;		/* DEVSHM signal.prio, as the guest sent it */
	__u32 len;		/* bytes at ptr */
	__u64 gpa;		/* guest-physical address of the region */
	void *ptr;		/* host address of the region */
	/*
	 * South-side signal whose shm_signal_desc is inside the region at
	 * the offset the guest gave (checked: magic/version, in bounds), or
	 * NULL when the guest registered the region without a signal.
	 * inject posts SHMSIGNAL{cookie} on the guest's eventq; a guest
	 * doorbell for this handle runs _shm_signal_wakeup(), which calls
	 * signal->notifier (set by ioq_init(), or by the device directly).
	 * hostd holds one reference until after close; take your own
	 * (shm_signal_get) for anything that keeps it, e.g. hostd_shm_ioq.
	 */
	struct shm_signal *signal;
	__u32 sigoff;		/* offset of the signal desc in the region */
	void *priv;		/* the device's */
};

/*
 * Bind @ioq (south side) over @shm as an IOQ ring: checks the ring header
 * (ioq_ring_check over ptr/len: magic, version, count a power of two and
 * equal to @count unless @count is 0, all descriptors inside the region),
 * requires the shm's signal to be the ring head's embedded one, and calls
 * ioq_init() with its own reference on the signal. Set ioq->notifier to
 * hear the guest's signals; ioq_put() it in close. Returns 0 or -errno
 * (the caller should return it from its shm op: the guest gets the error).
 */
int hostd_shm_ioq(struct hostd_shm *shm, struct ioq *ioq,
		  const struct ioq_ops *ops, __u32 count);

/*
 * A descriptor's buffer: reads desc->ptr and desc->len once each and
 * translates them; the returned host pointer covers *@lenp bytes. NULL when
 * the range is not in guest RAM (the device is faulted with a message) or
 * len is 0 (*@lenp = 0, not a fault). Call it for every use: a descriptor
 * is re-posted by the guest with new values.
 */
void *hostd_desc_buf(struct hostd_dev *dev, const struct ioq_ring_desc *desc,
		     __u64 *lenp);

/*
 * Host pointer for guest-physical [gpa, gpa+len) of @dev's guest, or NULL
 * when any byte of it is outside guest RAM or the range crosses from one
 * RAM block into another (e.g. the below-4G/above-4G split). len 0 is
 * NULL. The mapping lives as long as the daemon; the contents are the
 * guest's.
 */
void *hostd_dev_gpa(struct hostd_dev *dev, __u64 gpa, __u64 len);

/*
 * hostd_dev_gpa() for a data buffer: a frame, a block segment (what the
 * guest driver maps with dma_map_*; not rings, request headers or
 * venet_sgs). With the test-only device parameter dma_window=START-END
 * (every device takes it; vbus-hostd(8)) a buffer
 * outside [START, END) is counted (ctl stats: dma_out; inside: dma_in),
 * logged and refused (NULL).
 */
void *hostd_dev_data(struct hostd_dev *dev, __u64 gpa, __u64 len);

/* --- the device itself ------------------------------------------------------ */

void *hostd_dev_priv(const struct hostd_dev *dev);
void hostd_dev_set_priv(struct hostd_dev *dev, void *priv);

/*
 * Refuse create: records "why" (the command line and `ctl add` print it,
 * prefixed with the guest and device) and returns @err (a negative errno)
 * for `return hostd_dev_fail(dev, -EINVAL, "...")`. Only in create and
 * the ctl op (there `ctl` prints it).
 */
int hostd_dev_fail(struct hostd_dev *dev, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A device that needs what it cannot learn without waiting (a network
 * server's handshake gives a disk its size and limits) need not block
 * its guest's loop in create: when hostd_dev_hot(), create may return
 * HOSTD_DEV_PENDING. The device then exists (`ctl stats` shows it, state
 * "connecting") but the guest is not told (no DEVADD; DEVOPEN of its id
 * is refused) until the device calls hostd_dev_ready() on its loop. A
 * device that cannot get ready calls hostd_dev_fail() (the why, as create
 * would; the ctl op's dev->err is untouched) and then hostd_dev_give_up():
 * after the loop's current pass the device is dropped, the why logged as
 * create's refusal reads ("guest G: device N (TYPE): why") and kept for
 * `ctl stats` (the guest's add_error).
 */
#define HOSTD_DEV_PENDING	1
/*
 * Created on a running guest (`ctl add`). Not at the daemon's start: a
 * guest that re-attaches after a restart drops every device the new
 * host does not announce at once, so those are created ready.
 */
bool hostd_dev_hot(const struct hostd_dev *dev);
void hostd_dev_ready(struct hostd_dev *dev);
void hostd_dev_give_up(struct hostd_dev *dev);

/*
 * Claim a host resource (@what "tap", @name "vb0") for this device alone,
 * across every guest of the daemon; released when the device goes. 0, or
 * -EBUSY after hostd_dev_fail("tap vb0 is already used by device 1 of
 * guest g1"). In create.
 */
int hostd_dev_claim(struct hostd_dev *dev, const char *what,
		    const char *name);

/*
 * Claim the file open on @fd (named @path in messages) for this device
 * alone: its inode across every guest of the daemon, whatever name or
 * hard link reaches it ("... is already used by device 4 of guest g1 (as
 * /x/y)"), and an OFD lock (@writable: exclusive, else shared) that
 * refuses a file another process holds: a guest's RAM file (this daemon's
 * or another's) or an image another program has locked. The lock lives
 * as long as @fd's open file description. 0, or -errno after
 * hostd_dev_fail(). In create.
 */
int hostd_dev_claim_file(struct hostd_dev *dev, const char *what,
			 const char *path, int fd, bool writable);

/*
 * The guest broke the device's protocol: log (rate-limited, prefixed with
 * guest and device id), count, remember the reason (`ctl stats` shows
 * it), mark every signal of the device faulted (so injects stop) and
 * refuse further calls/shms until close. Consumption loops must check
 * hostd_dev_faulted() and stop. Never exits, never aborts.
 */
void hostd_dev_fault(struct hostd_dev *dev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool hostd_dev_faulted(const struct hostd_dev *dev);

/*
 * The daemon is going down (its guest's loop was told to stop): a close
 * must not wait for anything that may not come (SIGTERM is bounded).
 */
bool hostd_dev_stopping(const struct hostd_dev *dev);

/* Rate-limited log line prefixed with the guest and device (not a fault). */
void hostd_dev_log(struct hostd_dev *dev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Counters the control socket shows. hostd counts calls, notifications in
 * (guest doorbells delivered to the device's signals), notifications out
 * (injects) and faults itself; the device adds the descriptors it consumed
 * and the payload bytes it moved.
 */
void hostd_dev_account(struct hostd_dev *dev, __u64 descs, __u64 bytes);

/* --- the event loop ----------------------------------------------------------- */

/*
 * Watch @fd (EPOLLIN/EPOLLOUT, level-triggered) in the guest's loop;
 * @cb runs on the loop thread with the epoll events that fired. One
 * registration per fd. hostd removes a device's remaining fds before its
 * destroy op (it does not close them: the device does).
 */
typedef void (*hostd_fd_cb)(struct hostd_dev *dev, int fd, __u32 events,
			    void *arg);
int hostd_fd_add(struct hostd_dev *dev, int fd, __u32 events, hostd_fd_cb cb,
		 void *arg);
int hostd_fd_mod(struct hostd_dev *dev, int fd, __u32 events);
void hostd_fd_del(struct hostd_dev *dev, int fd);

/*
 * eventfd helpers: a non-blocking eventfd (or -errno); add 1 (a doorbell to
 * the peer or a self-wakeup: the caller's fd says which); read it empty
 */
int hostd_eventfd_new(void);
void hostd_eventfd_write(int fd);
bool hostd_eventfd_drain(int fd);	/* true if it had a count */

/* CLOCK_MONOTONIC in nanoseconds (timeouts, poll windows, latencies) */
__u64 hostd_now_ns(void);

/*
 * An adaptive poll window (core's vbus/poll_window.h has the rule, KVM's
 * halt-polling one): how long a device keeps polling its ring after its
 * last work before it unmasks and sleeps. @cap_ns is the user's bound (0:
 * never poll), @ns the window now. After a sleep,
 * hostd_poll_window_adapt() learns from @gap_ns, the time from the last
 * work before the sleep to the work that ended it (vbus_poll_window_adapt)
 * and counts the grows and shrinks.
 */
#define HOSTD_POLL_WINDOW_START_NS VBUS_POLL_WINDOW_START_NS
struct hostd_poll_window {
	__u64 cap_ns, ns;
	__u64 grows, shrinks;
};
void hostd_poll_window_adapt(struct hostd_poll_window *w, __u64 gap_ns);
/* still within the window of @last_ns (the last work): keep polling */
bool hostd_poll_window_open(const struct hostd_poll_window *w, __u64 last_ns);

/*
 * A kick: "run @fn again soon, after the loop's other fds". A device that
 * stops at a budget with work left kicks itself instead of looping on.
 * hostd_kick() returns true when it armed the kick, false when one was
 * already pending; @fn runs once per armed kick. Cancel drops a pending
 * one (e.g. in close). The struct is the device's; @loop and @soon are
 * hostd's (the soon work of the loop of the thread that called init, a
 * queue thread's for a queue served there: no eventfd, no system call to
 * arm or to fire).
 * Loop thread only, as everything a device does (below, "Threading").
 */
struct hostd_loop_soon;
struct hostd_loop;
struct hostd_kick {
	struct hostd_dev *dev;
	struct hostd_loop *loop;	/* the loop of the thread that inited it */
	struct hostd_loop_soon *soon;
	bool pending;
	void (*fn)(struct hostd_dev *dev, void *arg);
	void *arg;
};
int hostd_kick_init(struct hostd_dev *dev, struct hostd_kick *k,
		    void (*fn)(struct hostd_dev *dev, void *arg), void *arg);
bool hostd_kick(struct hostd_kick *k);
void hostd_kick_cancel(struct hostd_kick *k);
void hostd_kick_fini(struct hostd_kick *k);

/*
 * A timer: "run @fn once, @ns from now", on the loop of the thread that
 * called init (a timerfd watched there). Arming an armed timer keeps the
 * earlier deadline (hostd_timer_arm() then returns false); cancel disarms
 * (e.g. in close); fini also closes it. A device that holds a queue's
 * doorbells off and comes back to look uses it (venet's
 * doorbell_mask_us). The struct is the device's. Loop thread only.
 */
struct hostd_timer {
	struct hostd_dev *dev;
	int fd;				/* -1: not inited */
	bool armed;
	void (*fn)(struct hostd_dev *dev, void *arg);
	void *arg;
};
int hostd_timer_init(struct hostd_dev *dev, struct hostd_timer *t,
		     void (*fn)(struct hostd_dev *dev, void *arg), void *arg);
bool hostd_timer_arm(struct hostd_timer *t, __u64 ns);
void hostd_timer_cancel(struct hostd_timer *t);
void hostd_timer_fini(struct hostd_timer *t);

/*
 * Guest -> device notifications need no registration: the guest's doorbell
 * for a shm's handle runs _shm_signal_wakeup() of its signal on the loop
 * thread, which (if the device unmasked it) calls the ioq notifier. A
 * device's rings are device queues (devq.h, struct hostd_devq): it hears
 * them through hostd_devq_attach()'s callback and signals the guest with
 * hostd_devq_signal(); it makes no ioq_* or shm_signal_* call itself. The
 * signals' deferred notify (vbus_defer) is run by the loop as well.
 */

/* --- queue threads ------------------------------------------------------------ */

/*
 * threads=N (the library's parameter, 0..16, default 0; the analogue of
 * QEMU's iothread-vq-mapping): the device gets N threads of its own, each
 * running a loop of its own, started before create and joined after
 * destroy; queue q is served by thread q mod N. Only a type with
 * .threads set takes it (others refuse threads= above 0).
 *
 * The rule is "a queue's things belong to the thread that set them up":
 *  - hostd_fd_add()/hostd_kick_init() register in the loop of the thread
 *    that calls them (a queue thread's, or the guest's); the callback
 *    runs there, and hostd_fd_mod/_del are called there too;
 *  - hostd_devq_attach() on a queue thread homes the shm there: the
 *    guest's doorbells for it run @on_signal on that thread, and the
 *    signal's deferred notify; hostd_devq_signal() may be called there
 *    (hostd hands an eventq SHMSIGNAL to the guest's thread itself);
 *  - so a device runs its per-queue setup (attach, the backend's
 *    per-thread resources) and teardown (detach, before close returns:
 *    nothing may run on a queue after it) on the queue's thread, with
 *    hostd_devthread_call(), and keeps each thread's state apart.
 * The ops themselves (create .. ctl, stats) still run on the guest's
 * thread. Thread-safe from a queue thread: hostd_dev_fault/_faulted,
 * hostd_dev_log, hostd_dev_account, hostd_dev_gpa/_data, hostd_desc_buf,
 * hostd_dev_stopping, hostd_now_ns, the eventfd helpers, the devq calls
 * on its own queues. Nothing else of the device may be shared between
 * its threads without a lock or an ordering rule the device states.
 */
struct hostd_devthread;		/* one queue thread; opaque */

/* N of threads=N (0: the guest's thread serves every queue). */
unsigned int hostd_dev_threads(const struct hostd_dev *dev);
/* The thread serving queue @q (q mod N), or NULL when N is 0. */
struct hostd_devthread *hostd_dev_thread(struct hostd_dev *dev,
					 unsigned int q);
/*
 * Run @fn(@arg) on @t and wait for its result (inline when @t is NULL).
 * From the guest's thread only (a queue thread never waits for another).
 */
int hostd_devthread_call(struct hostd_devthread *t, int (*fn)(void *arg),
			 void *arg);
/*
 * The same, but give up (-ETIMEDOUT, @fn never runs) if @t has not
 * taken it within @ms: for `ctl stats`, which must not hang on a busy
 * thread. 0 with @fn's result in *@ret.
 */
int hostd_devthread_call_within(struct hostd_devthread *t,
				int (*fn)(void *arg), void *arg,
				unsigned int ms, int *ret);

/* --- unix sockets ------------------------------------------------------------ */

/*
 * For a device that serves a socket of its own (vbus-ipc: a QEMU
 * ivshmem-doorbell and its host peers). Listen on @path (non-blocking,
 * CLOEXEC): a stale socket (its daemon died) is replaced, a live one
 * (something accepts on it) or a non-socket refused; the fd, or -errno
 * with the reason in @err (the same words as for the guest's socket).
 */
int hostd_sock_listen(const char *path, char *err, size_t errlen);

/*
 * Who may connect to a socket QEMU connects to (the guest's qemu_uid= and
 * qemu_gid=): root and the daemon's own user always may; the uid, and a
 * process with the gid among its groups, when set; with neither set, a
 * process with the daemon's own group among its groups.
 */
struct hostd_peer_rule {
	bool uid_set, gid_set;
	uid_t uid;
	gid_t gid;
};

/*
 * May the process connected on @fd in (SO_PEERCRED, SO_PEERGROUPS)? Its
 * credentials go to @cr either way (uid and gid -1, pid 0 if unknown).
 */
bool hostd_sock_peer_ok(int fd, const struct hostd_peer_rule *rule,
			struct ucred *cr);

/*
 * The same against the guest's own rule (qemu_uid=, qemu_gid=): for a
 * device that serves QEMU a socket of its own (vbus-ipc's qsock=).
 */
bool hostd_dev_qemu_peer_ok(struct hostd_dev *dev, int fd, struct ucred *cr);

/* The most descriptors one hostd_send_fds() carries. */
#define HOSTD_SEND_FDS_MAX	8

/*
 * Send all @len bytes of @buf, @nfd (<= HOSTD_SEND_FDS_MAX) descriptors
 * riding on the first byte (SCM_RIGHTS). 0 or -errno.
 */
int hostd_send_fds(int sock, const void *buf, size_t len, const int *fds,
		   size_t nfd);

/*
 * One ivshmem-doorbell server message (docs/transport.md, "ivshmem
 * server"): a little-endian int64 @msg and @fd, or no fd if < 0.
 */
int hostd_ivshmem_send(int sock, __s64 msg, int fd);

/* --- stats ------------------------------------------------------------------- */

/* Emit one device-specific counter / string for `ctl stats`. */
void hostd_stat_u64(struct hostd_stats_out *out, const char *key, __u64 v);
void hostd_stat_str(struct hostd_stats_out *out, const char *key,
		    const char *v);

/* --- the type --------------------------------------------------------------- */

struct hostd_dev_type {
	const char *name;	/* the DEVADD type string, e.g. "vbus-test" */
	const char *alias;	/* optional: another name config/ctl accept */
	/* required */
	int (*create)(struct hostd_dev *dev, const struct hostd_params *p);
	void (*destroy)(struct hostd_dev *dev);
	/*
	 * The rest is optional; what hostd does without it is in brackets.
	 * DEVOPEN: -EPROTO for a device ABI version you don't speak [every
	 * version opens].
	 */
	int (*open)(struct hostd_dev *dev, __u32 version);
	void (*close)(struct hostd_dev *dev);	/* [nothing to let go of] */
	/*
	 * DEVCALL. @buf is hostd's private copy of the guest's buffer (NULL
	 * when @len is 0); whatever the op leaves in it is copied back to
	 * the guest after it returns >= 0. Returns >= 0 or -errno (passed to
	 * the guest as the hypercall result) [-EINVAL].
	 */
	int (*call)(struct hostd_dev *dev, __u32 func, void *buf, __u32 len);
	/* DEVSHM. 0 or -errno; on error hostd drops the shm [-EINVAL]. */
	int (*shm)(struct hostd_dev *dev, struct hostd_shm *shm);
	/* device-specific counters for `ctl stats` [none] */
	void (*stats)(struct hostd_dev *dev, struct hostd_stats_out *out);
	/*
	 * A control verb for this device (`ctl resize NAME ID SIZE` calls it
	 * with "resize", "SIZE"). On the guest's thread. Write what was done
	 * into @msg (up to @len bytes) and return 0, or return
	 * hostd_dev_fail(dev, -E..., why): the caller prints the why.
	 * [-EOPNOTSUPP: "device N (TYPE) has no VERB"]
	 */
	int (*ctl)(struct hostd_dev *dev, const char *verb, const char *arg,
		   char *msg, size_t len);
	/*
	 * Takes threads=N ("Queue threads" above): its queues and their fds
	 * follow the rules there [threads= above 0 is refused].
	 */
	bool threads;
};

/*
 * Register a type at program start. A device lives in
 * userspace/hostd/devices/<name>/ with a CMakeLists.txt that makes an
 * OBJECT library of it (never a static archive, so the constructor is
 * never dropped by the linker) and adds it to VBUS_HOSTD_DEVICES.
 *
 *	static const struct hostd_dev_type venet_type = { .name = ..., ... };
 *	HOSTD_DEV_TYPE(venet_type);
 */
void hostd_dev_type_register(const struct hostd_dev_type *type);

#define HOSTD_DEV_TYPE(var)						\
	__attribute__((constructor)) static void hostd_register_##var(void) \
	{								\
		hostd_dev_type_register(&(var));			\
	}

#ifdef __cplusplus
}
#endif

#endif /* VBUS_HOSTD_DEVICE_H */
