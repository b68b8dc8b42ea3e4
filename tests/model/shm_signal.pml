/*
 * shm-signal (core/shm_signal.c) under x86-TSO: no lost wakeup.
 *
 * One direction of a channel: the producer (north) publishes data and
 * injects into the consumer's irq record; the consumer (south) enables,
 * sleeps on its doorbell, and runs the wakeup loop, which calls the
 * notifier ("process the ring"). The consumer may also mask itself, poll
 * the ring and re-enable (the NAPI pattern), once.
 *
 * Memory model: x86-TSO. Each process's stores go into its own FIFO store
 * buffer; a separate flusher process commits the oldest entry to memory
 * at any time; a load sees the newest buffered store of its own process to
 * that location, else memory. vbus_mb() (mfence) = wait until the buffer
 * is empty. vbus_wmb()/vbus_rmb() are no-ops on TSO (stores leave the
 * buffer in order; loads are not reordered with loads), so they are not
 * modelled. The doorbell (an eventfd write) is a buffered store after
 * pending=1, which is weaker than the syscall really is.
 *
 * Property: when nothing can move any more (timeout: producer finished,
 * buffers drained, consumer asleep), the consumer has processed all the
 * data the producer published.
 *
 * The four full barriers of core/shm_signal.c can be removed one at a
 * time with -DNO_B1 .. -DNO_B4; each variant must fail (tests/model/
 * run-spin.sh checks both directions).
 * ENABLED is the consumer's mask: core/shm_signal.c's wakeup reads the
 * private shadow the consumer stores with it (never the shared byte,
 * which only the producer's inject reads), so the consumer's loads of it
 * see its own latest store, as its loads of ENABLED here do.
 *
 *   B1 inject: after dirty=1, before loading enabled/pending
 *   B2 enable: after enabled=1, before loading dirty/pending
 *   B3 wakeup: after pending=0, before reloading dirty/enabled
 *   B4 wakeup: after dirty=0, before the notifier reads the ring
 *
 * -DUNMASK_LOOK: the consumer is a vbus-hostd device queue
 * (userspace/hostd/lib/devq.c): it drains with its side masked and goes
 * to sleep through hostd_devq_unmask(), "enable, then look at the ring
 * again; more arrived: mask and drain on", after polling the ring masked
 * for a while (its poll window spin). What that relies on is B2
 * against B1 over the ring itself (the look, not the dirty bit): so this
 * variant takes enable's own dirty/pending check away, and the look alone
 * must catch a post that raced the unmask. It must verify, and fail with
 * -DNO_B1 / -DNO_B2 (the post's check of enabled, or the look, overtakes
 * the other side's store) and with -DNO_LOOK (a bare
 * unmask, trusting nothing to ring).
 */

#ifndef NITEMS
#define NITEMS	3	/* data items the producer publishes */
#endif
#define BUFSZ	4	/* store-buffer entries per process */

/* shared locations */
#define DATA	0	/* the ring: how many items are published */
#define DIRTY	1	/* consumer's irq record ... */
#define PENDING	2
#define ENABLED	3
#define EFD	4	/* consumer's eventfd counter (> 0: readable) */
#define NVARS	5

#define PROD	0
#define CONS	1

byte mem[NVARS];

typedef sbuf_t {
	byte var[BUFSZ];
	byte val[BUFSZ];
	byte cnt
};
sbuf_t sb[2];

byte consumed;		/* consumer: items processed so far */
bool deferred;		/* consumer-local: deferred notify scheduled */

inline store(s_p, s_var, s_val) {
	atomic {
		sb[s_p].cnt < BUFSZ ->
		sb[s_p].var[sb[s_p].cnt] = s_var;
		sb[s_p].val[sb[s_p].cnt] = s_val;
		sb[s_p].cnt++
	}
}

/* own newest buffered store wins (store forwarding), else memory */
inline load(l_p, l_var, l_res) {
	d_step {
		l_res = mem[l_var];
		k = 0;
		do
		:: k < sb[l_p].cnt ->
			if
			:: sb[l_p].var[k] == l_var -> l_res = sb[l_p].val[k]
			:: else -> skip
			fi;
			k++
		:: else -> break
		od;
		k = 0
	}
}

inline mb(m_p) {
	sb[m_p].cnt == 0
}

proctype flusher(byte p)
{
	byte j;
end:	do
	:: d_step {
		sb[p].cnt > 0 ->
		mem[sb[p].var[0]] = sb[p].val[0];
		j = 0;
		do
		:: j + 1 < sb[p].cnt ->
			sb[p].var[j] = sb[p].var[j + 1];
			sb[p].val[j] = sb[p].val[j + 1];
			j++
		:: else -> break
		od;
		sb[p].cnt--;
		j = 0
	}
	od
}

/* ---- producer: publish, then shm_signal_inject() ---- */

active proctype producer()
{
	byte k, n, en, pe;

	do
	:: n < NITEMS ->
		n++;
		store(PROD, DATA, n);
		/* inject: wmb (no-op on TSO), dirty = 1 */
		store(PROD, DIRTY, 1);
#ifndef NO_B1
		mb(PROD);
#endif
		load(PROD, ENABLED, en);
		load(PROD, PENDING, pe);
		if
		:: en && !pe ->
			store(PROD, PENDING, 1);
			/* wmb (no-op on TSO); ops->inject: ring the doorbell */
			store(PROD, EFD, 1)
		:: else -> skip
		fi
	:: else -> break
	od
}

/* ---- consumer ---- */

inline notifier() {
	load(CONS, DATA, v);
	if
	:: v > consumed -> consumed = v
	:: else -> skip
	fi
}

inline enable() {
	store(CONS, ENABLED, 1);
#ifndef NO_B2
	mb(CONS);
#endif
#ifndef UNMASK_LOOK
	load(CONS, DIRTY, d);
	load(CONS, PENDING, pe);
	if
	:: d || pe -> deferred = true
	:: else -> skip
	fi
#endif
}

/*
 * hostd_devq_unmask(): enable (its B2), then look at the ring: more than
 * we consumed is "more arrived"
 */
inline unmask_look() {
	enable();
#ifndef NO_LOOK
	load(CONS, DATA, v);
	more = v > consumed
#else
	more = false
#endif
}

inline disable() {
	store(CONS, ENABLED, 0)
}

/* _shm_signal_wakeup(); the budget is not modelled (finite producer) */
inline wakeup() {
	load(CONS, ENABLED, en);
	load(CONS, DIRTY, d);
	load(CONS, PENDING, pe);
	do
	:: en && (d || pe) ->
		do
		:: true ->
			store(CONS, DIRTY, 0);
#ifndef NO_B4
			mb(CONS);
#endif
			notifier();
			load(CONS, DIRTY, d);
			load(CONS, ENABLED, en);
			if
			:: en && d -> skip
			:: else -> break
			fi
		od;
		store(CONS, PENDING, 0);
#ifndef NO_B3
		mb(CONS);
#endif
		load(CONS, ENABLED, en);
		load(CONS, DIRTY, d);
		load(CONS, PENDING, pe)
	:: else -> break
	od
}

active proctype consumer()
{
	byte k, v, d, pe, en;
	bool napi = true;
#ifdef UNMASK_LOOK
	bool more;

	/* attach: unmask and look once (the guest may have posted) */
	unmask_look();
	if
	:: more -> notifier()
	:: else -> skip
	fi;
#else
	enable();
#endif
end_idle:
	do
	:: /* poll() + read() of the eventfd: a locked RMW in the kernel */
		atomic { sb[CONS].cnt == 0 && mem[EFD] > 0 -> mem[EFD] = 0 };
		wakeup()
	:: /* the deferred notify, kicked through our own eventfd */
		deferred -> deferred = false;
		wakeup()
#ifdef UNMASK_LOOK
	:: /* a device queue's drain: masked, then unmask-and-look */
		napi -> napi = false;
		disable();
		do
		:: true ->
			notifier();
			/*
			 * the poll window (hostd_devq_polling()): still
			 * masked, look at the ring and drain again, any
			 * number of times, before the unmask
			 */
			do
			:: notifier()
			:: break
			od;
			unmask_look();
			if
			:: more -> disable()	/* more arrived: drain on */
			:: else -> break
			fi
		od
#else
	:: /* NAPI: mask, poll the ring directly, unmask */
		napi -> napi = false;
		disable();
		notifier();
		enable()
#endif
	od
}

init {
	atomic {
		run flusher(PROD);
		run flusher(CONS)
	}
}

active proctype monitor()
{
	timeout -> assert(consumed == NITEMS)
}
