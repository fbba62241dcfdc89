// SPDX-License-Identifier: MIT
/*
 * swap_out.c - uswap_swap_out() and uswap_swap_out_batch(): folios to the
 * devices, many per call.
 *
 * A round of a batch: every folio still to place gets its slots
 * (alloc_hooked(): with USWAP_SWAP_KEEP_CACHE the copy enters the swap
 * cache under the same cluster lock the allocation took, as
 * folio_alloc_swap() adds the folio to the swap table), then all the
 * writes go to the backends at once (swap_bio_run()), then each folio is
 * committed under its cluster lock, once more. So a folio costs two
 * cluster-lock round trips, whatever the flags, and its device is looked
 * up once. A folio whose write failed has its slots released and goes
 * into the next round, where allocation passes its device over (the
 * device's write pause): up to SWAP_OUT_TRIES rounds in all.
 * Each round runs inside one RCU read section, so swapoff cannot free a
 * device or close its backend while writes to it are in flight.
 */
#include <stddef.h>

#include "swap/swap.h"
#include "util/rcu.h"

#define SWAP_OUT_TRIES 4 /* rounds; each after a write error lands elsewhere */
#define OUT_PENDING    1 /* result of a folio still to place */

struct out_req {
	struct swap_bio bio;
	struct alloc_hook hook;
	struct uswap_swap_io *user;
	struct scache_folio *folio; /* KEEP_CACHE: the copy (creator's ref) */
	struct swap_device *si;     /* where the slots are */
	struct swap_cluster_info *ci;
	uint32_t off;
	bool cached;                /* folio is in ci's table */
	int write_err;              /* the last failed write, for the answer */
};

/* Under the allocation's cluster lock: note where the slots are, and
 * cache the copy while the pins are fresh. */
static void out_on_alloc(struct alloc_hook *h, struct swap_device *si,
			 struct swap_cluster_info *ci, uint32_t off)
{
	struct out_req *r = (struct out_req *)((char *)h - offsetof(struct out_req, hook));

	r->si = si;
	r->ci = ci;
	r->off = off;
	if (r->folio)
		r->cached = scache_insert(ci, off % CLUSTER_SLOTS, r->folio) == 0;
}

/*
 * out_alloc() - slots for @r's folio, the copy cached, the write prepared.
 * Return: 0 (the write is ready in r->bio), 1 (no backend: r->bio.io.result
 * is -EOPNOTSUPP, nothing to submit), or uswap_alloc()'s -errno.
 * Context: inside an RCU read section.
 */
static int out_alloc(struct uswap *u, struct out_req *r, struct pcpu_stats *st)
{
	unsigned int order = r->user->order;
	uswap_entry_t e;
	int err;

	r->hook.fn = out_on_alloc;
	r->cached = false;
	err = alloc_hooked(u, order, &e, &r->hook);
	if (err)
		return err;
	r->user->entry = e;
	if (!r->hook.ran) {
		/* From a slot cache (LOCKING_DEVICE): taken earlier. */
		struct swap_cluster_info *ci;
		struct swap_device *si;
		uint32_t off;

		si = lock_range(u, e, 1u << order, st, &off, &ci);
		if (!si)
			return -EINVAL; /* cannot happen: we just allocated it */
		out_on_alloc(&r->hook, si, ci, off);
		ci_unlock(ci);
	}
	r->bio.b = device_backend(r->si);
	r->bio.io = (struct backend_io){
		.op = BACKEND_WRITE,
		.slot = r->off,
		.order = order,
		.buf = r->folio ? (void *)r->folio->data : r->user->pages,
	};
	if (!r->bio.b) {
		r->bio.io.result = -EOPNOTSUPP;
		return 1;
	}
	return 0;
}

/* After the write: give the caller its reference and, unless a clean copy
 * is kept, drop the cache pin. Context: ci->lock held. */
static void out_commit(struct swap_device *si, struct swap_cluster_info *ci,
		       uint32_t off, unsigned int nr, bool keep)
{
	for (uint32_t i = off; i < off + nr; i++) {
		slot_set_count(si, ci, i, 1); /* 0 -> 1 never allocates */
		if (!keep)
			si->swap_map[i] &= (uint8_t)~MAP_HAS_CACHE;
	}
}

/*
 * out_finish() - the second and last cluster-lock round trip: commit a
 * written folio (the creator's reference to a cached copy goes too), or
 * release the slots of a failed write and pass the device over for a
 * while (device_write_failed()). Return: the write's result.
 * Context: inside an RCU read section; no lock held.
 */
static int out_finish(struct out_req *r, struct pcpu_stats *st)
{
	unsigned int nr = 1u << r->user->order;
	int err = r->bio.io.result;

	if (!err)
		device_write_done(r->si);
	else if (err != -EOPNOTSUPP)
		device_write_failed(r->si);
	ci_lock(r->ci, st);
	if (!err) {
		out_commit(r->si, r->ci, r->off, nr, r->cached);
		if (r->folio)
			scache_put(r->folio); /* the table holds its own refs */
		r->folio = NULL;
	} else {
		if (r->cached)
			scache_remove(r->ci, r->off % CLUSTER_SLOTS, nr);
		put_range(r->si, r->ci, r->off, nr, true, st);
		if (err != -EOPNOTSUPP)
			stat_inc(&st->write_errors);
	}
	ci_unlock(r->ci);
	return err;
}

/* One round over the folios still pending. Return: how many stay
 * pending (their write failed; the next round tries elsewhere). */
static unsigned int out_round(struct uswap *u, struct out_req *r, unsigned int n,
			      struct pcpu_stats *st)
{
	struct swap_bio *q[SWAP_BATCH];
	unsigned int k = 0, left = 0;

	rcu_read_begin();
	for (unsigned int i = 0; i < n; i++) {
		struct uswap_swap_io *io = r[i].user;
		int rc;

		if (io->result != OUT_PENDING)
			continue;
		rc = out_alloc(u, &r[i], st);
		if (rc == 0) {
			q[k++] = &r[i].bio;
		} else if (rc == 1) {
			io->result = out_finish(&r[i], st);
		} else {
			/* -E2BIG, -ENOSPC: the caller decides; after a write
			 * error, "no room left elsewhere" is that error. */
			io->result = rc == -ENOSPC && r[i].write_err ? r[i].write_err : rc;
		}
	}
	swap_bio_run(q, k);
	for (unsigned int i = 0; i < k; i++) {
		struct out_req *o = (struct out_req *)((char *)q[i] - offsetof(struct out_req, bio));
		int err = out_finish(o, st);

		if (!err || err == -EOPNOTSUPP) {
			o->user->result = err;
		} else {
			o->write_err = err;
			left++;
		}
	}
	rcu_read_end(&u->rcu_hb);
	return left;
}

/* Up to SWAP_BATCH folios, every one answered in its ->result. */
static void out_chunk(struct uswap *u, struct uswap_swap_io *ios, unsigned int n,
		      unsigned int flags, struct pcpu_stats *st)
{
	struct out_req r[SWAP_BATCH];
	unsigned int left = n;

	for (unsigned int i = 0; i < n; i++) {
		r[i].user = &ios[i];
		r[i].folio = NULL;
		r[i].write_err = 0;
		ios[i].result = OUT_PENDING;
		if (flags & USWAP_SWAP_KEEP_CACHE) {
			/* The copy is made here, with no lock held. */
			r[i].folio = scache_folio_new(ios[i].pages, ios[i].order);
			if (!r[i].folio) {
				ios[i].result = -ENOMEM;
				left--;
			}
		}
	}
	for (int tries = 0; left && tries < SWAP_OUT_TRIES; tries++)
		left = out_round(u, r, n, st);
	for (unsigned int i = 0; i < n; i++) {
		if (ios[i].result == OUT_PENDING)
			ios[i].result = r[i].write_err;
		if (r[i].folio)
			scache_put(r[i].folio); /* failed: in no table any more */
	}
}

static bool out_args_ok(const struct uswap_swap_io *ios, unsigned int nr, unsigned int flags)
{
	if (!ios || (flags & ~USWAP_SWAP_KEEP_CACHE))
		return false;
	for (unsigned int i = 0; i < nr; i++)
		if (!ios[i].pages || ios[i].order >= NR_ORDERS)
			return false;
	return true;
}

USWAP_API int uswap_swap_out_batch(struct uswap *u, struct uswap_swap_io *ios,
				   unsigned int nr, unsigned int flags)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	int done = 0;

	if (!out_args_ok(ios, nr, flags))
		return -EINVAL;
	for (unsigned int i = 0; i < nr; i += SWAP_BATCH) {
		unsigned int n = nr - i < SWAP_BATCH ? nr - i : SWAP_BATCH;

		out_chunk(u, ios + i, n, flags, st);
		for (unsigned int j = i; j < i + n; j++)
			done += ios[j].result == 0;
	}
	return done;
}

USWAP_API int uswap_swap_out(struct uswap *u, const void *pages, unsigned int order,
			     unsigned int flags, uswap_entry_t *entry)
{
	struct uswap_swap_io io = { .pages = (void *)pages, .order = order };

	if (!entry)
		return -EINVAL;
	if (uswap_swap_out_batch(u, &io, 1, flags) < 0)
		return -EINVAL;
	if (io.result == 0)
		*entry = io.entry;
	return io.result;
}
