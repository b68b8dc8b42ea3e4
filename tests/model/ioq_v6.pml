/*
 * IOQ ring v6 (core/ioq.c): the three roles with cached counters and bulk
 * publication, and the "arm, then look again" before a sleep.
 *
 *   pusher   (north) shadow tail, cached inuse_head; posts up to BATCH
 *            descriptors, then publishes the tail once         [R1]
 *   consumer (south) shadow valid_head, cached tail            [A1]
 *            reads each body, writes its completion back (a
 *            length), publishes valid_head once                [R2]
 *   reaper   (north) shadow inuse_head, cached valid_head      [A2]
 *            reads each completion, publishes inuse_head once  [R3]
 *   the pusher reloads inuse_head only when its cache says full [A3]
 *
 * ihead is the inuse head as the pusher reads it: in core/ioq.c the
 * reaper's shadow (reap.head), released by the reaper before the shared
 * copy it writes for the peer, which north never reads back. Both are
 * stored at the one [R3] point below, so one variable models them.
 *
 * A role reloads the counter it waits on only when its cache says
 * full/empty. The model is sequentially consistent; each -DNO_xxx does the
 * reordering that dropping that ordering point allows (ARMv8/POWER, or the
 * compiler anywhere), and must make spin find a violation:
 *   NO_R1      the tail store before the bodies
 *   NO_A1      the consumer's body load before its tail load
 *   NO_R2      valid_head before the consumer's reads and completions
 *   NO_A2      the reaper's completion load before its valid_head load
 *   NO_R3      inuse_head before the reaper's reads
 *   NO_A3      the pusher's body store before its inuse_head load
 *   NO_RECHECK the consumer sleeps after arming without looking again
 *              (the lost wakeup; shm_signal.pml checks the signal itself)
 *   NO_RELOAD  a cache that says full/empty is believed without a reload
 *              (a false full: -ENOSPC with room; a false empty)
 *
 * Properties: every body the consumer reads and every completion the
 * reaper reads is the one for that message (in order, nothing clobbered);
 * full and empty are only concluded when true at the reload; and when
 * nothing can move (timeout) every message was consumed and reaped: no lost
 * wakeup, no deadlock.
 */

#ifndef SIZE
#define SIZE	2
#endif
#ifndef NMSG
#define NMSG	4	/* two laps */
#endif
#ifndef BATCH
#define BATCH	2
#endif

#define DIST(a, b)	(((a) - (b) + 256) % 256)
#define MIN(a, b)	((a) < (b) -> (a) : (b))

byte tail, vhead, ihead;	/* the counters, one writer each (ihead: above) */
byte body[SIZE];		/* what north posted in a descriptor */
byte done[SIZE];		/* what south wrote back (a completion) */
bit armed;			/* south armed its notification (irq.enabled) */
bit kick;			/* a notification on its way to south */
byte consumed, reaped;		/* ghosts */

active proctype pusher()
{
	byte sent, ctail, chead, want, room, i;

	do
	:: sent < NMSG ->
		want = MIN(BATCH, NMSG - sent);
		room = SIZE - DIST(ctail, chead);
		if
		:: room < want ->
#ifdef NO_A3
			/* the store overtook the load that says "reaped" */
			body[ctail % SIZE] = sent + 1;
#endif
			d_step {
#ifndef NO_RELOAD
				chead = ihead;			/* [A3] */
				assert(DIST(ctail, chead) <= SIZE);
				room = SIZE - DIST(ctail, chead);
#endif
				/* no -ENOSPC with room: full is true here */
				if
				:: room == 0 -> assert(DIST(ctail, ihead) == SIZE)
				:: else -> skip
				fi
			};
			if
			:: room == 0 ->
				/* wait for the reaper (north-internal) */
				(DIST(ctail, ihead) < SIZE);
				goto next
			:: else -> skip
			fi;
			want = MIN(want, room)
		:: else -> skip
		fi;
#ifdef NO_R1
		tail = ctail + want;			/* too early */
#endif
		i = 0;
		do
		:: i < want -> body[(ctail + i) % SIZE] = sent + i + 1; i++
		:: else -> break
		od;
		tail = ctail + want;			/* [R1], once */
		ctail = ctail + want;
		sent = sent + want;
		/* shm_signal_inject(): kick an armed consumer */
		if
		:: armed -> kick = 1
		:: else -> skip
		fi;
next:		skip
	:: else -> break
	od
}

active proctype consumer()
{
	byte got, chead, ctail, avail, k, i, v, spec;
	bit speculated;

	do
	:: got < NMSG ->
		avail = DIST(ctail, chead);
		if
		:: avail == 0 ->
#ifdef NO_A1
			/* the body load overtook the tail load */
			spec = body[chead % SIZE];
			speculated = 1;
#endif
			d_step {
#ifndef NO_RELOAD
				ctail = tail;			/* [A1] */
				assert(DIST(ctail, chead) <= SIZE);
				avail = DIST(ctail, chead);
#endif
				/* no false empty: empty is true here */
				if
				:: avail == 0 -> assert(DIST(tail, chead) == 0)
				:: else -> skip
				fi
			};
			if
			:: avail == 0 ->
				/* arm, look again, and only then sleep */
				armed = 1;
#ifndef NO_RECHECK
				d_step {
					ctail = tail;
					avail = DIST(ctail, chead)
				};
#endif
				if
				:: avail == 0 ->
					(kick == 1);
					kick = 0
				:: else -> skip
				fi;
				armed = 0;
				speculated = 0;
				goto next
			:: else -> skip
			fi
		:: else -> skip
		fi;
		k = MIN(avail, BATCH);
#ifdef NO_R2
		vhead = chead + k;			/* too early */
#endif
		i = 0;
		do
		:: i < k ->
			if
			:: speculated && i == 0 -> v = spec
			:: else -> v = body[(chead + i) % SIZE]
			fi;
			assert(v == got + i + 1);
			done[(chead + i) % SIZE] = v;
			i++
		:: else -> break
		od;
		speculated = 0;
		vhead = chead + k;			/* [R2], once */
		chead = chead + k;
		got = got + k;
		consumed = got;
next:		skip
	:: else -> break
	od
}

active proctype reaper()
{
	byte r, rhead, cdone, avail, k, i, v, spec;
	bit speculated;

	do
	:: r < NMSG ->
		avail = DIST(cdone, rhead);
		if
		:: avail == 0 ->
#ifdef NO_A2
			spec = done[rhead % SIZE];
			speculated = 1;
#endif
			d_step {
				cdone = vhead;			/* [A2] */
				assert(DIST(cdone, rhead) <= SIZE);
				avail = DIST(cdone, rhead)
			};
			if
			:: avail == 0 ->
				/* wait for a completion (south's signal) */
				(vhead != cdone);
				speculated = 0;
				goto next
			:: else -> skip
			fi
		:: else -> skip
		fi;
		k = MIN(avail, BATCH);
#ifdef NO_R3
		ihead = rhead + k;			/* too early */
#endif
		i = 0;
		do
		:: i < k ->
			if
			:: speculated && i == 0 -> v = spec
			:: else -> v = done[(rhead + i) % SIZE]
			fi;
			assert(v == r + i + 1);
			i++
		:: else -> break
		od;
		speculated = 0;
		ihead = rhead + k;			/* [R3], once */
		rhead = rhead + k;
		r = r + k;
		reaped = r;
next:		skip
	:: else -> break
	od
}

/* When nothing can move, everything must have been delivered. */
active proctype watchdog()
{
	timeout;
	assert(consumed == NMSG && reaped == NMSG)
}
