/* SPDX-License-Identifier: MIT */
/*
 * bench_alloc_worker.c - the worker threads of `uswap bench alloc`.
 *
 * A worker repeats one step: draw an order from the mix, get slots for a
 * folio of that order (splitting into order-0 slots on -E2BIG, as the
 * kernel does), then free live folios until at most `keep` remain. Frees
 * are uswap_put_folio() calls: the folios leave the swap cache with no
 * reference left, so each one frees its slots.
 *
 * The window is a ring of live folios, oldest at head. fifo frees the
 * head; random swaps a random live folio into the head first; pair keeps
 * nothing. A worker never touches another worker's ring.
 */
#include "bench_alloc.h"
#include "cli.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* How long a worker holding no folio keeps retrying -ENOSPC (the other
 * workers hold every slot and free them as they go). */
#define ENOSPC_WAIT_NS (2 * 1000000000ull)

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform value in [0, n) without a division. */
static uint64_t rng_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)splitmix64(state) * n) >> 64);
}

static size_t pow2_at_least(size_t n)
{
	size_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static void mix_init(struct bench_worker *w)
{
	uint64_t cum = 0;

	w->mix_nr = 0;
	for (unsigned int order = 0; order < USWAP_NR_ORDERS; order++) {
		if (!w->opts->order_weight[order])
			continue;
		cum += w->opts->order_weight[order];
		w->mix_order[w->mix_nr] = order;
		w->mix_cum[w->mix_nr] = cum;
		w->mix_nr++;
	}
}

int bench_worker_init(struct bench_worker *w, struct uswap *u,
		      const struct bench_alloc_opts *opts,
		      struct bench_sync *sync, unsigned int id, int cpu)
{
	size_t cap;

	memset(w, 0, sizeof(*w));
	w->u = u;
	w->opts = opts;
	w->sync = sync;
	w->id = id;
	w->cpu = cpu;
	w->keep = opts->pattern == BENCH_PATTERN_PAIR ? 0 : opts->window;
	/* Distinct, reproducible streams per thread. */
	w->rng = opts->seed ^ (0xd1b54a32d192ed03ull * (id + 1));
	mix_init(w);
	/* The window plus one whole split folio never overflows the ring. */
	cap = pow2_at_least((size_t)opts->window + (1u << USWAP_MAX_ORDER) + 1);
	w->ring = calloc(cap, sizeof(*w->ring));
	if (!w->ring)
		return -ENOMEM;
	w->ring_mask = cap - 1;
	return 0;
}

void bench_worker_fini(struct bench_worker *w)
{
	free(w->ring);
	w->ring = NULL;
}

static unsigned int pick_order(struct bench_worker *w)
{
	uint64_t r;
	unsigned int i = 0;

	if (w->mix_nr == 1)
		return w->mix_order[0];
	r = rng_below(&w->rng, w->mix_cum[w->mix_nr - 1]);
	while (r >= w->mix_cum[i])
		i++;
	return w->mix_order[i];
}

static void ring_push(struct bench_worker *w, uswap_entry_t entry,
		      unsigned int order)
{
	struct bench_folio *f;

	if (w->live > w->ring_mask)
		abort(); /* capacity is sized in bench_worker_init() */
	f = &w->ring[(w->head + w->live) & w->ring_mask];
	f->val = entry.val;
	f->order = order;
	w->live++;
}

/*
 * Take the folio to free next out of the window: the oldest, or for the
 * random pattern (unless @oldest) a random one. Context: w->live > 0.
 */
static struct bench_folio ring_pop_victim(struct bench_worker *w, bool oldest)
{
	struct bench_folio victim;

	if (!oldest && w->opts->pattern == BENCH_PATTERN_RANDOM && w->live > 1) {
		size_t idx = (w->head + rng_below(&w->rng, w->live)) & w->ring_mask;

		victim = w->ring[idx];
		w->ring[idx] = w->ring[w->head];
	} else {
		victim = w->ring[w->head];
	}
	w->head = (w->head + 1) & w->ring_mask;
	w->live--;
	return victim;
}

static int fail(struct bench_worker *w, int err, const char *call,
		unsigned int order)
{
	w->err = err;
	w->err_call = call;
	w->err_order = order;
	return err;
}

static int free_one(struct bench_worker *w, bool oldest)
{
	struct bench_folio f = ring_pop_victim(w, oldest);
	uswap_entry_t entry = { f.val };
	int err;

	err = uswap_put_folio(w->u, entry, f.order);
	if (err)
		return fail(w, err, "uswap_put_folio", f.order);
	w->counts.frees++;
	return 0;
}

/* -ENOSPC with nothing of our own to free: wait for the other workers. */
static int wait_for_space(struct bench_worker *w, uint64_t *since_ns)
{
	uint64_t now = cli_now_ns();

	if (!*since_ns)
		*since_ns = now;
	else if (now - *since_ns > ENOSPC_WAIT_NS)
		return -ENOSPC;
	sched_yield();
	return 0;
}

/*
 * Allocate one folio of @order, freeing our oldest folio on every -ENOSPC.
 * Return: 0, -E2BIG (split), or an unexpected error (recorded in @w).
 */
static int alloc_retry(struct bench_worker *w, unsigned int order,
		       uswap_entry_t *entry)
{
	uint64_t waiting_since = 0;

	for (;;) {
		int err = uswap_alloc(w->u, order, entry);

		if (!err) {
			w->counts.allocs++;
			return 0;
		}
		if (err == -E2BIG && order > 0)
			return err;
		if (err != -ENOSPC)
			return fail(w, err, "uswap_alloc", order);
		w->counts.enospc++;
		if (w->live) {
			err = free_one(w, true /* oldest */);
			if (err)
				return err;
		} else if (wait_for_space(w, &waiting_since)) {
			w->starved = true;
			return fail(w, -ENOSPC, "uswap_alloc", order);
		}
	}
}

/* One request: a whole folio, or 2^order order-0 slots after -E2BIG. */
static int alloc_request(struct bench_worker *w, unsigned int order)
{
	uswap_entry_t entry;
	int err;

	w->counts.requests++;
	err = alloc_retry(w, order, &entry);
	if (!err) {
		ring_push(w, entry, order);
		return 0;
	}
	if (err != -E2BIG)
		return err;
	w->counts.split[order]++;
	for (unsigned int i = 0; i < (1u << order); i++) {
		err = alloc_retry(w, 0, &entry);
		if (err)
			return err;
		ring_push(w, entry, 0);
	}
	return 0;
}

static int bench_step(struct bench_worker *w)
{
	int err = alloc_request(w, pick_order(w));

	while (!err && w->live > w->keep)
		err = free_one(w, false /* the pattern's victim */);
	atomic_store_explicit(&w->progress, w->counts.frees,
			      memory_order_relaxed);
	return err;
}

static bool should_stop(struct bench_worker *w)
{
	return atomic_load_explicit(&w->sync->stop, memory_order_relaxed);
}

/*
 * Fill the window (fifo, random) or run `window` pairs (pair), so the
 * timed phase starts in steady state. A full device pool ends the fill
 * early: the window cannot be held, and -ENOSPC handling takes over.
 */
static int warm_up(struct bench_worker *w)
{
	int err = 0;

	if (w->opts->pattern == BENCH_PATTERN_PAIR) {
		for (unsigned int i = 0; !err && i < w->opts->window &&
		     !should_stop(w); i++)
			err = bench_step(w);
		return err;
	}
	while (!err && w->live < w->keep && !w->counts.enospc && !should_stop(w))
		err = alloc_request(w, pick_order(w));
	return err;
}

static int timed_phase(struct bench_worker *w)
{
	const struct bench_alloc_opts *opts = w->opts;
	uint64_t target = UINT64_MAX;
	int err = 0;

	if (opts->ops) {
		target = opts->ops / opts->threads;
		if (w->id < opts->ops % opts->threads)
			target++;
	}
	while (!err && w->counts.frees < target && !should_stop(w))
		err = bench_step(w);
	return err;
}

static void note_failure(struct bench_worker *w)
{
	atomic_store(&w->sync->failed, true);
	atomic_store(&w->sync->stop, true);
}

void *bench_worker_main(void *arg)
{
	struct bench_worker *w = arg;

	if (w->cpu >= 0)
		uswap_thread_set_cpu(w->cpu);
	if (warm_up(w))
		note_failure(w);
	memset(&w->counts, 0, sizeof(w->counts));
	atomic_store_explicit(&w->progress, 0, memory_order_relaxed);
	pthread_barrier_wait(&w->sync->ready);
	pthread_barrier_wait(&w->sync->go);
	if (!w->err && timed_phase(w))
		note_failure(w);
	w->end_ns = cli_now_ns();
	atomic_fetch_add(&w->sync->done, 1);
	return NULL;
}

int bench_worker_drain(struct bench_worker *w)
{
	while (w->live) {
		int err = free_one(w, true /* oldest */);

		if (err)
			return err;
	}
	return 0;
}
