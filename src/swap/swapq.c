// SPDX-License-Identifier: MIT
/*
 * swapq.c - swap queues: swap-outs and swap-ins kept in flight across
 * calls, and the batch calls built on them.
 *
 * A request goes FREE -> INFLIGHT (submitted) -> DONE (the backend's
 * done(), on any thread that reaps the backend: the file backend's ring is
 * shared) -> READY (finished by the owner in swapq_reap(): a swap-out
 * committed, or resubmitted elsewhere after a failed write) -> FREE (handed
 * back to the caller). done() stores DONE last and touches neither the
 * request nor the queue afterwards, so the owner may reuse the place as
 * soon as it sees DONE.
 *
 * Devices: each request in flight is counted in its device's io_inflight
 * while the submitter is inside an RCU read section, and uncounted in
 * done(). swapoff (device_remove()) waits one grace period, so every
 * submit that found the device has counted, then reaps the backend until
 * the count is zero, then waits another, so every reaper that saw one of
 * those requests has left the backend.
 */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

#include "swap/swap_internal.h"
#include "util/rcu.h"

#define SWAPQ_MAX_DEPTH 4096

void swapq_init(struct swap_queue *q, struct uswap *u, struct swap_req *req,
		unsigned int *busy, unsigned int *free, unsigned int depth)
{
	*q = (struct swap_queue){
		.u = u, .depth = depth, .req = req, .busy = busy, .free = free,
		.nr_free = depth,
	};
	for (unsigned int i = 0; i < depth; i++) {
		atomic_init(&req[i].state, REQ_FREE);
		free[i] = depth - 1 - i;
	}
}

/* A FREE place, now busy (its state still FREE: the caller prepares it).
 * Return: NULL when all @depth are taken. */
struct swap_req *swapq_get(struct swap_queue *q)
{
	unsigned int i;

	if (!q->nr_free)
		return NULL;
	i = q->free[--q->nr_free];
	q->busy[q->nr_busy++] = i;
	return &q->req[i];
}

static void req_done(struct backend_io *io)
{
	struct swap_req *r = (struct swap_req *)((char *)io - offsetof(struct swap_req, io));
	struct swap_device *si = r->si;

	/* After this store the owner may reuse @r: read what we need first.
	 * The release pairs with the owner's acquire, so it sees io.result. */
	atomic_store_explicit(&r->state, REQ_DONE, memory_order_release);
	atomic_fetch_sub_explicit(&si->io_inflight, 1, memory_order_release);
}

/* Queue @r (prepared: r->io, r->b and r->si set) for the next flush.
 * Context: inside the RCU read section the flush runs in. */
void swapq_add(struct swap_queue *q, struct swapq_batch *sb, struct swap_req *r)
{
	if (sb->n == SWAP_BATCH)
		swapq_flush(q, sb);
	r->io.done = req_done;
	atomic_store_explicit(&r->state, REQ_INFLIGHT, memory_order_relaxed);
	atomic_fetch_add_explicit(&r->si->io_inflight, 1, memory_order_relaxed);
	sb->r[sb->n++] = r;
}

/* A lone request of a batch call goes through the backend's synchronous
 * read or write: one O_DIRECT or buffered request costs more through a
 * ring (submit, then a wait that another thread's completion may end)
 * than as one pread or pwrite. */
static void run_sync(struct swap_req *r)
{
	struct backend_io *io = &r->io;

	io->result = io->op == BACKEND_READ ? r->b->ops->read(r->b, io->slot, io->order, io->buf)
					    : r->b->ops->write(r->b, io->slot, io->order, io->buf);
	req_done(io);
}

/* Send the queued requests, one backend_submit_batch() per backend. */
void swapq_flush(struct swap_queue *q, struct swapq_batch *sb)
{
	struct backend_io *ios[SWAP_BATCH];
	bool sent[SWAP_BATCH] = { false };

	if (sb->n == 1 && q->sync_single) {
		run_sync(sb->r[0]);
		sb->n = 0;
		return;
	}
	for (unsigned int i = 0; i < sb->n; i++) {
		struct backend *b = sb->r[i]->b;
		unsigned int k = 0;

		if (sent[i])
			continue;
		for (unsigned int j = i; j < sb->n; j++) {
			if (!sent[j] && sb->r[j]->b == b) {
				sent[j] = true;
				ios[k++] = &sb->r[j]->io;
			}
		}
		/* Fails only for a NULL request, which we never pass. */
		WARN_ONCE(backend_submit_batch(b, ios, k), "swap: submit_batch failed");
	}
	sb->n = 0;
}

static int finish(struct swap_queue *q, struct swap_req *r, struct pcpu_stats *st)
{
	return r->out ? out_complete(q->u, r, st) : in_complete(r, st);
}

/* Finish every DONE request: READY, or resubmitted (a failed write).
 * Return: how many are still in flight. Context: inside an RCU section. */
static unsigned int finish_done(struct swap_queue *q, struct pcpu_stats *st)
{
	struct swapq_batch sb = { .n = 0 };
	unsigned int inflight = 0;

	for (unsigned int i = 0; i < q->nr_busy; i++) {
		struct swap_req *r = &q->req[q->busy[i]];
		int s = atomic_load_explicit(&r->state, memory_order_acquire);

		if (s == REQ_DONE) {
			if (finish(q, r, st) == 0) {
				swapq_add(q, &sb, r);
				inflight++;
			} else {
				atomic_store_explicit(&r->state, REQ_READY, memory_order_relaxed);
			}
		} else if (s == REQ_INFLIGHT) {
			inflight++;
		}
	}
	swapq_flush(q, &sb);
	return inflight;
}

/* Hand up to @max READY requests to @done (if not NULL) and free their
 * places. Return: how many. */
static unsigned int hand_ready(struct swap_queue *q, struct uswap_swap_io **done,
			       unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < q->nr_busy && n < max;) {
		unsigned int idx = q->busy[i];
		struct swap_req *r = &q->req[idx];

		if (atomic_load_explicit(&r->state, memory_order_relaxed) != REQ_READY) {
			i++;
			continue;
		}
		if (done)
			done[n] = r->user;
		n++;
		atomic_store_explicit(&r->state, REQ_FREE, memory_order_relaxed);
		q->busy[i] = q->busy[--q->nr_busy];
		q->free[q->nr_free++] = idx;
	}
	return n;
}

/* Run completions on the backends our requests in flight are on: wait for
 * one when there is a single such backend, else poll each. Return: true if
 * any completion ran here. Context: inside an RCU read section. */
static bool reap_backends(struct swap_queue *q)
{
	struct backend *seen[8];
	unsigned int ns = 0;
	bool ran = false, many = false;

	for (unsigned int i = 0; i < q->nr_busy; i++) {
		struct swap_req *r = &q->req[q->busy[i]];
		bool dup = false;

		if (atomic_load_explicit(&r->state, memory_order_acquire) != REQ_INFLIGHT)
			continue;
		for (unsigned int j = 0; j < ns; j++)
			dup |= seen[j] == r->b;
		if (!dup && ns < 8)
			seen[ns++] = r->b;
		else if (!dup)
			many = true; /* the rest are polled next time round */
	}
	for (unsigned int j = 0; j < ns; j++)
		ran |= seen[j]->ops->reap(seen[j], ns == 1 && !many) > 0;
	return ran;
}

/*
 * swapq_submit() - prepare and send up to the queue's free places of
 * @ios: swap-outs (@out, with @flags) or swap-ins. Requests answered at
 * once (no room, a swap cache hit, a bad entry) are READY for the next
 * reap like the rest. Return: how many of @ios were taken.
 */
int swapq_submit(struct swap_queue *q, struct uswap_swap_io *const *ios, unsigned int nr,
		 bool out, unsigned int flags)
{
	struct pcpu_stats *st = this_cpu_stats(q->u);
	struct swapq_batch sb = { .n = 0 };
	unsigned int n = 0;

	rcu_read_begin();
	for (; n < nr; n++) {
		struct swap_req *r = swapq_get(q);
		int rc;

		if (!r)
			break;
		r->out = out;
		r->user = ios[n];
		r->flags = flags;
		rc = out ? out_prepare(q->u, r, st) : in_prepare(q->u, r, st);
		if (rc == 0)
			swapq_add(q, &sb, r);
		else
			atomic_store_explicit(&r->state, REQ_READY, memory_order_relaxed);
	}
	swapq_flush(q, &sb);
	rcu_read_end(&q->u->rcu_hb);
	return (int)n;
}

/*
 * swapq_reap() - finish what completed and hand back at least @min (fewer
 * if fewer are outstanding) and at most @max answered requests.
 * Return: how many were handed back into @done.
 */
int swapq_reap(struct swap_queue *q, unsigned int min, struct uswap_swap_io **done,
	       unsigned int max)
{
	struct pcpu_stats *st = this_cpu_stats(q->u);
	unsigned int got = 0;

	if (min > max)
		min = max;
	for (;;) {
		unsigned int inflight;

		rcu_read_begin();
		inflight = finish_done(q, st);
		rcu_read_end(&q->u->rcu_hb);
		got += hand_ready(q, done ? done + got : NULL, max - got);
		if (got >= min || q->nr_busy == 0 || got == max)
			return (int)got;
		if (!inflight)
			continue;
		rcu_read_begin();
		if (!reap_backends(q))
			sched_yield(); /* ours are being finished elsewhere */
		rcu_read_end(&q->u->rcu_hb);
	}
}

void swap_batch_run(struct uswap *u, struct uswap_swap_io *ios, unsigned int nr,
		    bool out, unsigned int flags)
{
	struct swap_req req[SWAP_BATCH];
	unsigned int busy[SWAP_BATCH], free[SWAP_BATCH], sent = 0;
	struct uswap_swap_io *p[SWAP_BATCH];
	struct swap_queue q;

	/* As many places as the call has folios: a call of one (each fault's
	 * swap-in) does not set up 128. */
	swapq_init(&q, u, req, busy, free, nr < SWAP_BATCH ? (nr ? nr : 1) : SWAP_BATCH);
	q.sync_single = true;
	while (sent < nr) {
		unsigned int k = q.nr_free < nr - sent ? q.nr_free : nr - sent;

		for (unsigned int i = 0; i < k; i++)
			p[i] = &ios[sent + i];
		sent += (unsigned int)swapq_submit(&q, p, k, out, flags);
		/* Reap half a queue before refilling: submissions stay
		 * batched while the devices are kept busy. */
		swapq_reap(&q, sent < nr ? q.depth / 2 : q.nr_busy, NULL, q.depth);
	}
}

/* --- the public queue ------------------------------------------------- */

struct uswap_swapq {
	struct swap_queue q;
	struct swap_req req[];
};

USWAP_API int uswap_swapq_create(struct uswap *u, unsigned int depth,
				 struct uswap_swapq **out)
{
	struct uswap_swapq *sq;
	unsigned int *idx;

	if (!u || !out || depth == 0 || depth > SWAPQ_MAX_DEPTH)
		return -EINVAL;
	sq = calloc(1, sizeof(*sq) + depth * sizeof(sq->req[0]));
	idx = calloc(2 * (size_t)depth, sizeof(*idx));
	if (!sq || !idx) {
		free(sq);
		free(idx);
		return -ENOMEM;
	}
	swapq_init(&sq->q, u, sq->req, idx, idx + depth, depth);
	*out = sq;
	return 0;
}

USWAP_API void uswap_swapq_destroy(struct uswap_swapq *sq)
{
	if (!sq)
		return;
	while (sq->q.nr_busy)
		swapq_reap(&sq->q, sq->q.nr_busy, NULL, sq->q.nr_busy);
	free(sq->q.busy); /* busy and free share one allocation */
	free(sq);
}

USWAP_API int uswap_swapq_reap(struct uswap_swapq *sq, unsigned int min,
			       struct uswap_swap_io **done, unsigned int max)
{
	if (!sq || (!done && max))
		return -EINVAL;
	return swapq_reap(&sq->q, min, done, max);
}

static bool ios_ok(struct uswap_swap_io *const *ios, unsigned int nr)
{
	if (!ios)
		return false;
	for (unsigned int i = 0; i < nr; i++)
		if (!swap_io_ok(ios[i]))
			return false;
	return true;
}

USWAP_API int uswap_swapq_out(struct uswap_swapq *sq, struct uswap_swap_io *const *ios,
			      unsigned int nr, unsigned int flags)
{
	if (!sq || (flags & ~USWAP_SWAP_KEEP_CACHE) || !ios_ok(ios, nr))
		return -EINVAL;
	return swapq_submit(&sq->q, ios, nr, true, flags);
}

USWAP_API int uswap_swapq_in(struct uswap_swapq *sq, struct uswap_swap_io *const *ios,
			     unsigned int nr)
{
	if (!sq || !ios_ok(ios, nr))
		return -EINVAL;
	return swapq_submit(&sq->q, ios, nr, false, 0);
}

USWAP_API unsigned int uswap_swapq_pending(const struct uswap_swapq *sq)
{
	return sq ? sq->q.nr_busy : 0;
}

USWAP_API unsigned int uswap_swapq_space(const struct uswap_swapq *sq)
{
	return sq ? sq->q.nr_free : 0;
}
