/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What vchan.c (the vchan-style calls) needs of an ipc endpoint beyond
 * the public ioq_ipc_* calls; not exported (libioq.map).
 */
#ifndef LIBIOQ_IPC_PRIV_H
#define LIBIOQ_IPC_PRIV_H

#include <vbus/ioq_channel.h>

/* The length of the next message (checked like a recv), -EAGAIN, or the
 * endpoint's error; the message stays queued. */
long ipc_next_len(struct ioq_ipc *ipc);
/* Free tx buffers after taking back what the peer consumed, or an error. */
long ipc_tx_room(struct ioq_ipc *ipc);

#endif
