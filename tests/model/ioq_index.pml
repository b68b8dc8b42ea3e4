/*
 * IOQ index encodings: ring version 4 (the 2009 series) against version 5
 * (core/ioq.c). One index, one producer (pushes at the tail), one consumer
 * (pops at the head), sequential consistency: every read and write of a
 * shared field is its own step, in the order the code does them. The bug
 * in v4 needs no weak memory at all.
 *
 *   -DV4           v4: head and tail are slots (0 .. SIZE-1) and "full"
 *                  is a byte that BOTH sides write (push sets it when the
 *                  tail catches the head, pop clears it)
 *   default        v5: head and tail are free-running counters, each with
 *                  one writer; count = tail - head, full = count == SIZE
 *
 * Property (assertions): the producer writes a slot only when it really is
 * free, the consumer takes a slot only when it really holds data, and a
 * count never exceeds SIZE (core/ioq.c faults the channel on that).
 * "items" is a ghost: the number of slots that hold unconsumed data.
 *
 * v4 fails: the producer fills the ring and is about to store full=1 when
 * the consumer drains it (storing full=0 on each pop); the late full=1
 * then makes an empty ring read as full, and the consumer pops nothing.
 *
 * -DOBSERVER adds a third context that reads the index while both sides
 * work (e.g. a driver thread that is neither the pusher nor the popper).
 * With -DV4 it reads wrong answers too. In v5 a naive reader (head, then
 * tail) can compute more than SIZE while both counters move: such a reader
 * must not fault the channel on it; with -DREREAD it reads head again and
 * retries until head did not move, and gets an exact count.
 */

#ifndef SIZE
#define SIZE	2
#endif
#define NPUSH	4	/* two laps */

byte head, tail;
bit fullflag;		/* v4 only */
byte items;		/* ghost: slots holding unconsumed data */
byte pub;		/* ghost: published count (moves with tail/head) */
bool obs_on;		/* ghost: an observer is reading */
byte lo, hi;		/* ghost: least/most "pub" during its read */

/* a writer published: move the ghost count, widen the observer's window */
inline published(delta) {
	pub = pub + delta;
	if
	:: obs_on && pub < lo -> lo = pub
	:: obs_on && pub > hi -> hi = pub
	:: else -> skip
	fi
}

#ifdef V4
/* the 2009 ioq_count(): full first, then the slot distance */
inline count(c) {
	byte f_, h_, t_;
	f_ = fullflag;
	h_ = head;
	t_ = tail;
	if
	:: f_ -> c = SIZE
	:: else -> c = (t_ + SIZE - h_) % SIZE
	fi
}
#endif

active proctype producer()
{
	byte n, c, h;

	do
	:: n < NPUSH ->
#ifdef V4
		count(c);
#else
		h = head;			/* the peer's, read once */
		c = (tail - h) & 255;		/* our own tail */
#endif
		assert(c <= SIZE);
		if
		:: c < SIZE ->
			d_step { assert(items < SIZE); items++ };	/* fill slot */
#ifdef V4
			d_step { tail = (tail + 1) % SIZE; published(1) };
			if
			:: tail == head -> fullflag = 1
			:: else -> skip
			fi;
#else
			d_step { tail = tail + 1; published(1) };
#endif
			n++
		:: else -> skip		/* full: try again */
		fi
	:: else -> break
	od
}

active proctype consumer()
{
	byte n, c, t;

	do
	:: n < NPUSH ->
#ifdef V4
		count(c);
#else
		t = tail;			/* the peer's, read once */
		c = (t - head) & 255;		/* our own head */
#endif
		assert(c <= SIZE);
		if
		:: c > 0 ->
			d_step { assert(items > 0); items-- };	/* take slot */
#ifdef V4
			d_step { head = (head + 1) % SIZE; published(-1) };
			fullflag = 0;
#else
			d_step { head = head + 1; published(-1) };
#endif
			n++
		:: else -> skip		/* empty: try again */
		fi
	:: else -> break
	od
}

#ifdef OBSERVER
/*
 * A reader that writes neither counter. Its answer must be a count that
 * was true at some moment while it read: between the least and the most
 * published count during its read (the writers widen [lo, hi] as they
 * publish).
 */
active proctype observer()
{
	byte c, h, h2, t;

	d_step { obs_on = true; lo = pub; hi = pub };
#ifdef V4
	count(c);
#else
again:
	h = head;
	t = tail;
#ifdef REREAD
	h2 = head;
	if
	:: h2 != h -> d_step { lo = pub; hi = pub }; goto again
	:: else -> skip
	fi;
#endif
	c = (t - h) & 255;
#endif
	obs_on = false;
	assert(lo <= c && c <= hi)
}
#endif
