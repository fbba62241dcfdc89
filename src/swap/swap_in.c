// SPDX-License-Identifier: MIT
/*
 * swap_in.c - uswap_swap_in() and uswap_swap_in_batch(): folios back from
 * the swap cache or the devices, many per call.
 *
 * Each folio is checked under its cluster lock (every slot in use) and
 * looked up in the swap cache there; a cached copy is copied out with a
 * reference held and no lock, the rest are read from the backends all at
 * once (swap_bio_run(): for a file, one io_uring submission for the lot,
 * which is what swap readahead wants). The whole call runs inside one RCU
 * read section per SWAP_BATCH folios, so swapoff cannot close a backend
 * under a read.
 */
#include <stddef.h>
#include <string.h>

#include "swap/swap.h"
#include "util/rcu.h"

/*
 * in_lookup() - the cluster-locked part of one swap-in: check @io's
 * entry, and either copy a cached folio out (io->result 1) or prepare
 * the read in @bio. Return: true if @bio is to be submitted.
 * Context: inside an RCU read section; no lock held.
 */
static bool in_lookup(struct uswap *u, struct uswap_swap_io *io, struct swap_bio *bio,
		      struct pcpu_stats *st)
{
	unsigned int nr = 1u << io->order;
	struct scache_folio *folio;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;

	if (uswap_entry_offset(io->entry) % nr ||
	    !(si = lock_range(u, io->entry, nr, st, &off, &ci))) {
		io->result = -EINVAL;
		return false;
	}
	if (!range_in_use(si, off, nr)) {
		ci_unlock(ci);
		io->result = -ENOENT;
		return false;
	}
	folio = scache_lookup(ci, off % CLUSTER_SLOTS);
	if (folio && folio->order == io->order)
		scache_get(folio); /* copy it out without the lock held */
	else
		folio = NULL;
	ci_unlock(ci);

	stat_inc(&st->swpin);
	if (folio) {
		memcpy(io->pages, folio->data, folio_bytes(io->order));
		ci_lock(ci, st);
		scache_put(folio);
		ci_unlock(ci);
		stat_inc(&st->swpin_cached);
		io->result = 1;
		return false;
	}
	bio->b = device_backend(si);
	if (!bio->b) {
		stat_inc(&st->read_errors);
		io->result = -EOPNOTSUPP;
		return false;
	}
	bio->io = (struct backend_io){
		.op = BACKEND_READ, .slot = off, .order = io->order, .buf = io->pages,
	};
	return true;
}

/* Up to SWAP_BATCH folios, every one answered in its ->result. */
static void in_chunk(struct uswap *u, struct uswap_swap_io *ios, unsigned int n,
		     struct pcpu_stats *st)
{
	struct swap_bio bio[SWAP_BATCH], *q[SWAP_BATCH];
	unsigned int from[SWAP_BATCH], k = 0;

	rcu_read_begin();
	for (unsigned int i = 0; i < n; i++) {
		if (in_lookup(u, &ios[i], &bio[k], st)) {
			from[k] = i;
			q[k] = &bio[k];
			k++;
		}
	}
	swap_bio_run(q, k);
	for (unsigned int i = 0; i < k; i++) {
		int err = bio[i].io.result;

		if (err) {
			stat_inc(&st->read_errors);
			err = err == -EOPNOTSUPP ? err : -EIO;
		}
		ios[from[i]].result = err;
	}
	rcu_read_end(&u->rcu_hb);
}

USWAP_API int uswap_swap_in_batch(struct uswap *u, struct uswap_swap_io *ios,
				  unsigned int nr)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	int done = 0;

	if (!ios)
		return -EINVAL;
	for (unsigned int i = 0; i < nr; i++)
		if (!ios[i].pages || ios[i].order >= NR_ORDERS)
			return -EINVAL;
	for (unsigned int i = 0; i < nr; i += SWAP_BATCH) {
		unsigned int n = nr - i < SWAP_BATCH ? nr - i : SWAP_BATCH;

		in_chunk(u, ios + i, n, st);
		for (unsigned int j = i; j < i + n; j++)
			done += ios[j].result >= 0;
	}
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
