// SPDX-License-Identifier: MIT
/*
 * swap_out.c - swap-out requests: folios to the devices.
 *
 * A request gets its slots (alloc_hooked(): with USWAP_SWAP_KEEP_CACHE
 * the copy enters the swap cache under the same cluster lock the
 * allocation took, as folio_alloc_swap() adds the folio to the swap
 * table), then its write goes to the backend with the rest of its submit
 * call (swapq.c), then, once written, it is committed under its cluster
 * lock, once more. So a folio costs two cluster-lock round trips, whatever
 * the flags, and its device is looked up once. A folio whose write failed
 * has its slots released and is placed again at once, where allocation
 * passes its device over (the device's write pause): up to SWAP_OUT_TRIES
 * writes in all. The slots' HAS_CACHE pins keep swapoff from freeing the
 * device under a write in flight (unuse waits for them).
 */
#include <stddef.h>

#include "swap/swap_internal.h"
#include "util/rcu.h"

#define SWAP_OUT_TRIES 4 /* writes per folio; each after an error lands elsewhere */

/* Under the allocation's cluster lock: note where the slots are, and
 * cache the copy while the pins are fresh. */
static void out_on_alloc(struct alloc_hook *h, struct swap_device *si,
			 struct swap_cluster_info *ci, uint32_t off)
{
	struct swap_req *r = (struct swap_req *)((char *)h - offsetof(struct swap_req, hook));

	r->si = si;
	r->ci = ci;
	r->off = off;
	if (r->folio)
		r->cached = scache_insert(ci, off % CLUSTER_SLOTS, r->folio) == 0;
}

/*
 * out_alloc() - slots for @r's folio, the copy cached, the write prepared.
 * Return: 0 (the write is ready in r->io), 1 (no backend: r->io.result
 * is -EOPNOTSUPP, nothing to submit), or uswap_alloc()'s -errno.
 * Context: inside an RCU read section.
 */
static int out_alloc(struct uswap *u, struct swap_req *r, struct pcpu_stats *st)
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
	r->b = device_backend(r->si);
	r->io = (struct backend_io){
		.op = BACKEND_WRITE,
		.slot = r->off,
		.order = order,
		.buf = r->folio ? (void *)r->folio->data : r->user->pages,
	};
	if (!r->b) {
		r->io.result = -EOPNOTSUPP;
		return 1;
	}
	return 0;
}

/*
 * out_finish() - the second and last cluster-lock round trip: commit a
 * written folio (the creator's reference to a cached copy goes too), or
 * release the slots of a failed write and pass the device over for a
 * while (device_write_failed()). Return: the write's result.
 * Context: inside an RCU read section; no lock held.
 */
static int out_finish(struct swap_req *r, struct pcpu_stats *st)
{
	unsigned int nr = 1u << r->user->order;
	int err = r->io.result;

	if (!err)
		device_write_done(r->si);
	else if (err != -EOPNOTSUPP)
		device_write_failed(r->si);
	ci_lock(r->ci, st);
	if (!err) {
		/* the caller's reference; the pin goes unless a copy is kept */
		slots_commit_locked(r->si, r->ci, r->off, nr, r->cached);
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

/* The caller's answer is @err; the copy no table holds any more goes. */
static int out_answer(struct swap_req *r, int err)
{
	r->user->result = err;
	if (r->folio)
		scache_put(r->folio);
	r->folio = NULL;
	return 1;
}

/* Slots for the folio, for a first write or after a failed one. */
static int out_place(struct uswap *u, struct swap_req *r, struct pcpu_stats *st)
{
	int rc = out_alloc(u, r, st);

	if (rc == 0) {
		r->tries++;
		return 0;
	}
	if (rc == 1)
		return out_answer(r, out_finish(r, st));
	/* -E2BIG, -ENOSPC: the caller decides; after a write error, "no
	 * room left elsewhere" is that error. */
	return out_answer(r, rc == -ENOSPC && r->write_err ? r->write_err : rc);
}

int out_prepare(struct uswap *u, struct swap_req *r, struct pcpu_stats *st)
{
	r->folio = NULL;
	r->tries = 0;
	r->write_err = 0;
	if (r->flags & USWAP_SWAP_KEEP_CACHE) {
		/* The copy is made here, with no lock held. */
		r->folio = scache_folio_new(r->user->pages, r->user->order);
		if (!r->folio)
			return out_answer(r, -ENOMEM);
	}
	return out_place(u, r, st);
}

int out_complete(struct uswap *u, struct swap_req *r, struct pcpu_stats *st)
{
	int err = out_finish(r, st);

	if (!err || err == -EOPNOTSUPP)
		return out_answer(r, err);
	r->write_err = err;
	if (r->tries >= SWAP_OUT_TRIES)
		return out_answer(r, err);
	return out_place(u, r, st);
}

static bool out_args_ok(const struct uswap_swap_io *ios, unsigned int nr, unsigned int flags)
{
	if (!ios || (flags & ~USWAP_SWAP_KEEP_CACHE))
		return false;
	for (unsigned int i = 0; i < nr; i++)
		if (!swap_io_ok(&ios[i]))
			return false;
	return true;
}

USWAP_API int uswap_swap_out_batch(struct uswap *u, struct uswap_swap_io *ios,
				   unsigned int nr, unsigned int flags)
{
	int done = 0;

	if (!out_args_ok(ios, nr, flags))
		return -EINVAL;
	swap_batch_run(u, ios, nr, true, flags);
	for (unsigned int i = 0; i < nr; i++)
		done += ios[i].result == 0;
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
