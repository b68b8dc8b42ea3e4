/* Post three descriptors north -> south over a libioq channel. */
#include <stdio.h>
#include <vbus/ioq_channel.h>

static void on_signal(struct ioq_channel *ch, void *arg)
{
	struct ioq_iterator it;

	(void)arg;
	ioq_iter_init(ioq_channel_ioq(ch), &it, ioq_idx_consume, 0);
	ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	while (ioq_iter_owned(&it)) {
		printf("south got cookie %llu\n",
		       (unsigned long long)it.desc->cookie);
		ioq_iter_pop(&it, 0);
	}
}

int main(void)
{
	struct ioq_channel *north, *south;
	struct ioq_channel_fds fds;
	struct ioq_iterator it;

	if (ioq_channel_create(&north, 64, NULL))
		return 1;
	ioq_channel_fds(north, &fds);	/* or send them: ioq_channel_send_fds */
	if (ioq_channel_attach(&south, ioq_locality_south, &fds))
		return 1;
	ioq_channel_set_notifier(south, on_signal, NULL);
	ioq_notify_enable(ioq_channel_ioq(south), 0);

	ioq_iter_init(ioq_channel_ioq(north), &it, ioq_idx_push,
		      IOQ_ITER_AUTOUPDATE);
	ioq_iter_seek(&it, ioq_seek_tail, 0, 0);
	for (int i = 1; i <= 3; i++) {
		/* room first: on a full ring it.desc is still in flight */
		if (ioq_full(ioq_channel_ioq(north), ioq_idx_reap))
			break;
		it.desc->cookie = i;
		ioq_iter_push(&it, 0);	/* rings south's eventfd once */
	}

	if (ioq_channel_wait(south, 1000) != 1)
		return 1;
	ioq_channel_destroy(south);
	ioq_channel_destroy(north);
	return 0;
}
