// SPDX-License-Identifier: MIT
/*
 * io.c - the backend requests of one batch call: submitted together per
 * backend (one backend_submit_batch() each: for a file, one io_uring_submit
 * per queue depth of them) and waited for together. The memory backends
 * complete each request inside its submit; the file backend's complete in
 * a reap, ours or another thread's, which is why completion is counted in
 * done() and not by what reap returns.
 */
#include <sched.h>
#include <stddef.h>

#include "swap/swap.h"

/* Requests still outstanding, per distinct backend of the batch. */
struct swap_bio_set {
	struct backend *b[SWAP_BATCH];
	_Atomic unsigned int pending[SWAP_BATCH];
	unsigned int nr;
};

/* done(): may run on another thread (a reaper sharing the ring). The
 * release pairs with the acquire in swap_bio_run(), so the waiter sees
 * io->result. */
static void bio_done(struct backend_io *io)
{
	struct swap_bio *sb = (struct swap_bio *)((char *)io - offsetof(struct swap_bio, io));

	atomic_fetch_sub_explicit(&sb->set->pending[sb->bi], 1, memory_order_release);
}

static unsigned int set_index(struct swap_bio_set *set, struct backend *b)
{
	for (unsigned int j = 0; j < set->nr; j++)
		if (set->b[j] == b)
			return j;
	set->b[set->nr] = b;
	atomic_init(&set->pending[set->nr], 0);
	return set->nr++;
}

/* Wait until every request of backend @j completed: reap (which may run
 * other threads' completions too, and they ours). */
static void wait_backend(struct swap_bio_set *set, unsigned int j)
{
	struct backend *b = set->b[j];
	unsigned int left;

	while ((left = atomic_load_explicit(&set->pending[j], memory_order_acquire))) {
		if (b->ops->reap(b, left) <= 0)
			sched_yield(); /* ours are being finished elsewhere */
	}
}

/* One request alone goes through the backend's synchronous op: a single
 * O_DIRECT or buffered request costs more through a ring (submit, then a
 * wait that another thread's completion may end) than as one pread or
 * pwrite. */
static void bio_run_sync(struct swap_bio *sb)
{
	struct backend_io *io = &sb->io;
	struct backend *b = sb->b;

	io->result = io->op == BACKEND_READ ? b->ops->read(b, io->slot, io->order, io->buf)
					    : b->ops->write(b, io->slot, io->order, io->buf);
}

void swap_bio_run(struct swap_bio **bios, unsigned int n)
{
	struct backend_io *q[SWAP_BATCH];
	struct swap_bio_set set;

	if (n == 1) {
		bio_run_sync(bios[0]);
		return;
	}
	set.nr = 0;
	for (unsigned int i = 0; i < n; i++) {
		bios[i]->set = &set;
		bios[i]->bi = set_index(&set, bios[i]->b);
		bios[i]->io.done = bio_done;
		atomic_fetch_add_explicit(&set.pending[bios[i]->bi], 1, memory_order_relaxed);
	}
	for (unsigned int j = 0; j < set.nr; j++) {
		unsigned int k = 0;

		for (unsigned int i = 0; i < n; i++)
			if (bios[i]->bi == j)
				q[k++] = &bios[i]->io;
		/* Fails only for a NULL request, which we never pass. */
		WARN_ONCE(backend_submit_batch(set.b[j], q, k), "swap: submit_batch failed");
	}
	for (unsigned int j = 0; j < set.nr; j++)
		wait_backend(&set, j);
}
