// SPDX-License-Identifier: MIT
/*
 * swap_in.c - uswap_swap_in() and uswap_swap_in_batch(): folios back from
 * the swap cache or the devices, many per call.
 *
 * Each folio is checked under its cluster lock (every slot in use) and
 * looked up in the swap cache there; a cached copy is copied out with a
 * reference held and no lock, the rest are read from the backends
 * together (swapq.c: for a file, one io_uring submission for a submit
 * call's reads, which is what swap readahead wants). A read in flight is
 * counted in its device's io_inflight, which swapoff waits for before it
 * closes the backend.
 */
#include <stddef.h>
#include <string.h>

#include "swap/swap_internal.h"
#include "util/rcu.h"

/*
 * in_prepare() - the cluster-locked part of one swap-in: check the
 * entry, and either copy a cached folio out (result 1) or prepare the
 * read in r->io. Return: 0 (the read is to be submitted) or 1 (answered).
 * Context: inside an RCU read section; no lock held.
 */
int in_prepare(struct uswap *u, struct swap_req *r, struct pcpu_stats *st)
{
	struct uswap_swap_io *io = r->user;
	unsigned int nr = 1u << io->order;
	struct scache_folio *folio;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;

	if (uswap_entry_offset(io->entry) % nr ||
	    !(si = lock_range(u, io->entry, nr, st, &off, &ci))) {
		io->result = -EINVAL;
		return 1;
	}
	if (!range_in_use(ci, off, nr)) {
		ci_unlock(ci);
		io->result = -ENOENT;
		return 1;
	}
	folio = scache_lookup(ci, off % CLUSTER_SLOTS);
	if (folio && folio->order == io->order) {
		scache_get(folio); /* copy it out without the lock held */
	} else if (!range_referenced(ci, off, nr)) {
		/* Only a pin, no reference and no copy here: a swap-out
		 * whose write is not committed yet (a swap queue's, maybe
		 * not even written), or slots uswap_alloc() handed out with
		 * nothing written. The device holds nothing valid there. */
		ci_unlock(ci);
		io->result = -ENOENT;
		return 1;
	} else {
		folio = NULL;
	}
	ci_unlock(ci);

	stat_inc(&st->swpin);
	if (folio) {
		memcpy(io->pages, folio->data, folio_bytes(io->order));
		ci_lock(ci, st);
		scache_put(folio);
		ci_unlock(ci);
		stat_inc(&st->swpin_cached);
		io->result = 1;
		return 1;
	}
	r->si = si;
	r->b = device_backend(si);
	if (!r->b) {
		stat_inc(&st->read_errors);
		io->result = -EOPNOTSUPP;
		return 1;
	}
	r->io = (struct backend_io){
		.op = BACKEND_READ, .slot = off, .order = io->order, .buf = io->pages,
	};
	return 0;
}

/* After the read: -EIO for any device error. Return: 1 (answered). */
int in_complete(struct swap_req *r, struct pcpu_stats *st)
{
	int err = r->io.result;

	if (err) {
		stat_inc(&st->read_errors);
		device_read_failed(r->si);
		err = err == -EOPNOTSUPP ? err : -EIO;
	}
	r->user->result = err;
	return 1;
}

static bool in_args_ok(const struct uswap_swap_io *ios, unsigned int nr)
{
	if (!ios)
		return false;
	for (unsigned int i = 0; i < nr; i++)
		if (!swap_io_ok(&ios[i]))
			return false;
	return true;
}

USWAP_API int uswap_swap_in_batch(struct uswap *u, struct uswap_swap_io *ios,
				  unsigned int nr)
{
	int done = 0;

	if (!in_args_ok(ios, nr))
		return -EINVAL;
	swap_batch_run(u, ios, nr, false, 0);
	for (unsigned int i = 0; i < nr; i++)
		done += ios[i].result >= 0;
	return done;
}

USWAP_API int uswap_swap_in(struct uswap *u, uswap_entry_t entry, unsigned int order,
			    void *buf)
{
	struct uswap_swap_io io = { .pages = buf, .order = order, .entry = entry };

	if (uswap_swap_in_batch(u, &io, 1) < 0)
		return -EINVAL;
	return io.result;
}
