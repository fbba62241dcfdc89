/* SPDX-License-Identifier: MIT */
/*
 * Description: reference counts and cache pins under concurrency, against a
 * shadow model, while swap tables attach to clusters and leave them all the
 * time (alloc/table.c). Not a benchmark: it prints no timings and asserts
 * none.
 *
 * Usage: test_table_stress [threads [scale [seed]]]
 *   threads  worker threads (default 2), plus one reader thread
 *   scale    multiplies the operation count (default $USWAP_STRESS_SCALE,
 *            else 1.0 = 3000000 operations in all; TSan runs use 0.1)
 *   seed     splitmix64 seed (default $USWAP_TEST_SEED, else random);
 *            printed at start and with any failure
 *
 * One instance of 2 CPUs, two small devices of the same priority (16
 * clusters each; the second with a partial last cluster and a bad slot),
 * so clusters run empty, give their table back and take one again often.
 *
 * Each worker owns the slots it allocated and keeps, per slot, the count
 * and the pin it expects; only the owner changes its slots, so every
 * uswap_slot_count() must match exactly. Operations at random: allocate
 * orders 0..4 (new slots: pinned, count 0; -ENOSPC, -E2BIG and -ENOMEM
 * change nothing), dup, free one reference, drop the pin
 * (uswap_put_folio(entry, 0)), pin again (-EEXIST when pinned), read the
 * count back, and calls that must be refused (-ENOENT) and change
 * nothing. A slot whose count and pin are both gone is free and leaves
 * the model; a bitmap per device catches a slot handed out twice.
 * Workers alternate fill phases (to a random size, one in four until
 * -ENOSPC) and drain phases (mostly one cluster after another, one in
 * three down to nothing), each worker on a CPU of its own, so that
 * clusters empty completely.
 *
 * Once per run each worker takes a slot past the count an entry holds
 * (ENT_COUNT_INLINE) into the cluster's side table and back, with a
 * second slot of the same cluster past it meanwhile, the other workers
 * going on; worker 0 goes on to USWAP_COUNT_MAX and -EOVERFLOW. In one
 * round the workers make a device's table refills fail now and then
 * (table_pool_fail_refills()): allocations meeting a dry pool may be
 * -ENOMEM there, and nowhere else. A reader thread loops on
 * uswap_device_info() and uswap_stats_get(), which read what the tables
 * change without the cluster locks, and uswap_slot_count() of random
 * slots.
 *
 * At the end of each round the workers check their whole model, then
 * (all parked on a barrier) uswap_check() must pass and each device's
 * inuse must equal what the models hold. After two rounds, and at the
 * end, everything is freed first: inuse 0, every cluster but the
 * reserved ones free and without a table; an order-9 allocation that
 * meets failing refills is -ENOMEM and changes nothing, then succeeds;
 * one that meets a dry pool stops, refills and succeeds.
 */
#include "t_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"

enum {
	NR_DEV = 2,
	DEV_CLUSTERS = 16,
	NR_CPUS = 2,
	ROUNDS = 8,
	FAIL_ROUND = 3,          /* refills fail now and then in this one */
	BASE_OPS = 3000000,      /* operations in all at scale 1.0 */
	TOP_ORDER = 4,           /* largest order allocated */
	ENOMEM_PROBES = 8,       /* owned slots re-read after an -ENOMEM */
};

/* Rounds after which every worker frees everything before the barrier. */
static bool drain_round(int round)
{
	return round == 2 || round == 5;
}

struct dev_spec {
	uint64_t nr_slots;
	const uint64_t *bad;
	size_t nr_bad;
};

static const uint64_t dev1_bad[] = { 3 * USWAP_CLUSTER_SLOTS + 7 };

static const struct dev_spec specs[NR_DEV] = {
	{ DEV_CLUSTERS * USWAP_CLUSTER_SLOTS, NULL, 0 },
	/* Not a multiple of 512: the last cluster is partial, never free. */
	{ DEV_CLUSTERS * USWAP_CLUSTER_SLOTS - 100, dev1_bad, T_ARRAY_SIZE(dev1_bad) },
};

/* Command line. */
static struct {
	int threads;
	double scale;
	uint64_t seed;
} opt;

/* ------------------------------------------------------------------
 * Per-device bitmap: bit set = slot owned by some worker (or reserved)
 * ------------------------------------------------------------------ */

struct bitmap {
	_Atomic uint64_t *bits;
	size_t nr_words;
	uint64_t base; /* bits set for the header, bad slots and the tail */
};

/* Set bit @off; false if it was set already. */
static bool bit_take(struct bitmap *b, uint64_t off)
{
	uint64_t m = UINT64_C(1) << (off % 64);

	return !(atomic_fetch_or(&b->bits[off / 64], m) & m);
}

/* Clear bit @off; false if it was not set. */
static bool bit_release(struct bitmap *b, uint64_t off)
{
	uint64_t m = UINT64_C(1) << (off % 64);

	return atomic_fetch_and(&b->bits[off / 64], ~m) & m;
}

static uint64_t bitmap_population(struct bitmap *b)
{
	uint64_t n = 0;

	for (size_t i = 0; i < b->nr_words; i++)
		n += (uint64_t)__builtin_popcountll(atomic_load(&b->bits[i]));
	return n;
}

static void bitmap_init(struct bitmap *b, const struct dev_spec *spec)
{
	b->nr_words = (spec->nr_slots + 63) / 64;
	b->bits = calloc(b->nr_words, sizeof(*b->bits));
	t_true(b->bits != NULL);
	bit_take(b, 0);
	for (size_t i = 0; i < spec->nr_bad; i++)
		bit_take(b, spec->bad[i]);
	for (uint64_t off = spec->nr_slots; off < b->nr_words * 64; off++)
		bit_take(b, off);
	b->base = bitmap_population(b);
}

/* ------------------------------------------------------------------
 * Shared state and the workers' models
 * ------------------------------------------------------------------ */

/* What the owner expects of one of its slots. */
struct slot {
	uswap_entry_t e;
	uint32_t count;
	bool pin;
	bool owned;
	uint32_t pos;   /* index in the worker's owned[] while owned */
};

struct worker {
	int id;
	pthread_t tid;
	uint64_t rng;
	uint64_t nr_ops;
	struct slot *model[NR_DEV]; /* every slot of each device */
	uint16_t *in_cluster[NR_DEV]; /* owned slots per cluster */
	struct slot **owned;    /* the slots this worker holds */
	size_t nr_slots;        /* ... how many */
	struct slot *cursor;    /* drain: where the cluster being emptied
				   was left off */
	bool fill;              /* fill phase, else drain */
	bool fail_round;        /* refills may fail: -ENOMEM allowed */
	uint64_t left;          /* fill: -ENOSPC answers still to see */
	size_t fill_to;         /* fill: ends on holding this many */
	size_t drain_to;        /* drain: ends on holding this few */
	int excursion_round;    /* when to go past the inline count */
	uint64_t excursion_at;  /* ... at which op of that round */
	bool excursion_due, excursion_done;
	bool excursion_pair;    /* ... with a second slot of the cluster */
	/* What happened, for the summary line. */
	uint64_t allocs, alloc_slots, dups, frees, puts, pins, eexist, counts;
	uint64_t refused, freed, enospc, e2big, enomem, eoverflow, fail_calls;
};

static struct {
	struct uswap *u;
	int types[NR_DEV];
	int dev_of_type[USWAP_MAX_DEVICES]; /* -1: not one of ours */
	struct bitmap bm[NR_DEV];
	struct worker *w;
	pthread_barrier_t barrier;
	size_t usable; /* slots the devices can hand out */
	atomic_bool stop_reader;
	uint64_t reader_loops; /* written by the reader, read after join */
	uint64_t enomem_checked; /* enomem_check()s done (drained points) */
} S;

static struct bitmap *bm_of(uswap_entry_t e)
{
	return &S.bm[S.dev_of_type[uswap_entry_type(e)]];
}

/* Orders 0..TOP_ORDER weighted toward 0 (percent). */
static unsigned int pick_order(uint64_t *rng)
{
	static const unsigned int cumulative[TOP_ORDER + 1] = { 50, 70, 85, 95, 100 };
	unsigned int r = (unsigned int)t_rand_below(rng, 100);
	unsigned int order = 0;

	while (r >= cumulative[order])
		order++;
	return order;
}

/* Read the slot back: count and pin must be exactly the model's. */
static bool slot_matches(struct worker *w, const struct slot *s, const char *when)
{
	bool cache = !s->pin;
	long rc = uswap_slot_count(S.u, s->e, &cache);

	if (rc == (long)s->count && cache == s->pin)
		return true;
	t_fail_async("thread %d %s: slot type %u offset %llu reads count %ld (%s) "
		     "pin %d, model says %u pin %d", w->id, when,
		     uswap_entry_type(s->e), (unsigned long long)uswap_entry_offset(s->e),
		     rc, t_errname(rc), cache, s->count, s->pin);
	return false;
}

static struct slot *pick_slot(struct worker *w)
{
	return w->owned[t_rand_below(&w->rng, w->nr_slots)];
}

/* How many slots of @s's cluster the worker holds. */
static uint16_t *cluster_owned(struct worker *w, const struct slot *s)
{
	int d = S.dev_of_type[uswap_entry_type(s->e)];

	return &w->in_cluster[d][uswap_entry_offset(s->e) / USWAP_CLUSTER_SLOTS];
}

/* The slot after @s in its cluster, wrapping to the cluster's start. */
static struct slot *next_in_cluster(struct worker *w, struct slot *s)
{
	int d = S.dev_of_type[uswap_entry_type(s->e)];
	uint64_t off = uswap_entry_offset(s->e) + 1;

	if (off % USWAP_CLUSTER_SLOTS == 0 || off == specs[d].nr_slots)
		off = (off - 1) / USWAP_CLUSTER_SLOTS * USWAP_CLUSTER_SLOTS;
	return &w->model[d][off];
}

/* Drains mostly empty one cluster after another, so that clusters go
 * wholly free and give their tables back: the next owned slot of the
 * cluster being emptied, or a random one to start on another cluster. */
static struct slot *pick_in_cluster(struct worker *w)
{
	struct slot *s = w->cursor;

	if (!s || *cluster_owned(w, s) == 0)
		s = pick_slot(w);
	while (!s->owned)
		s = next_in_cluster(w, s);
	return w->cursor = s;
}

/* The slot has neither count nor pin: the library freed it. */
static void forget_slot(struct worker *w, struct slot *s)
{
	struct slot *last = w->owned[--w->nr_slots];

	w->owned[s->pos] = last;
	last->pos = s->pos;
	s->owned = false;
	(*cluster_owned(w, s))--;
	w->freed++;
}

/* About to drop the last thing holding @s: clear its bit first, since
 * once freed another worker may be handed it. */
static void release_bit(struct worker *w, const struct slot *s)
{
	if (!bit_release(bm_of(s->e), uswap_entry_offset(s->e)))
		t_fail_async("thread %d: model lost slot type %u offset %llu", w->id,
			     uswap_entry_type(s->e),
			     (unsigned long long)uswap_entry_offset(s->e));
}

/* ------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------ */

/* Enter the 2^@order slots from @e in the model: pinned, count 0. */
static void own_folio(struct worker *w, uswap_entry_t e, unsigned int order)
{
	unsigned int type = uswap_entry_type(e);
	uint64_t off = uswap_entry_offset(e), n = UINT64_C(1) << order;
	int d = S.dev_of_type[type];

	if (d < 0 || off % n || off + n > specs[d].nr_slots) {
		t_fail_async("thread %d: alloc order %u returned type %u offset %llu",
			     w->id, order, type, (unsigned long long)off);
		return;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct slot *s = &w->model[d][off + i];

		if (!bit_take(&S.bm[d], off + i) || s->owned) {
			t_fail_async("slot handed out twice: type %u offset %llu "
				     "(thread %d order %u; or a header/bad slot)",
				     type, (unsigned long long)(off + i), w->id, order);
			return;
		}
		s->count = 0;
		s->pin = true;
		s->owned = true;
		s->pos = (uint32_t)w->nr_slots;
		w->owned[w->nr_slots++] = s;
		(*cluster_owned(w, s))++;
	}
	slot_matches(w, &w->model[d][off], "after alloc");
	w->allocs++;
	w->alloc_slots += n;
}

/* -ENOMEM must have changed nothing: re-read a few owned slots (the
 * quiescent checks compare the whole device). Outside FAIL_ROUND no
 * refill fails, so -ENOMEM would be a walk that met a dry pool and gave
 * up instead of refilling it. */
static void after_enomem(struct worker *w, unsigned int order)
{
	w->enomem++;
	if (!w->fail_round)
		t_fail_async("thread %d: alloc order %u returned -ENOMEM with no "
			     "refill failing", w->id, order);
	for (int i = 0; i < ENOMEM_PROBES && w->nr_slots; i++)
		slot_matches(w, pick_slot(w), "after -ENOMEM");
}

static int do_alloc(struct worker *w)
{
	unsigned int order = pick_order(&w->rng);
	uswap_entry_t e;
	int rc = uswap_alloc(S.u, order, &e);

	if (rc == 0)
		own_folio(w, e, order);
	else if (rc == -ENOSPC)
		w->enospc++;
	else if (rc == -E2BIG && order > 0)
		w->e2big++;
	else if (rc == -ENOMEM)
		after_enomem(w, order);
	else
		t_fail_async("thread %d: alloc order %u returned %d (%s)", w->id,
			     order, rc, t_errname(rc));
	return rc;
}

static void do_dup(struct worker *w, struct slot *s)
{
	int rc = uswap_dup(S.u, s->e);

	if (rc == 0 && s->count < USWAP_COUNT_MAX)
		s->count++;
	else if (rc == -EOVERFLOW && s->count == USWAP_COUNT_MAX)
		w->eoverflow++;
	else
		t_fail_async("thread %d: dup of count %u returned %d (%s)", w->id,
			     s->count, rc, t_errname(rc));
	w->dups++;
}

/* Drop one reference, or the pin; a slot left with neither is gone. */
static void do_release(struct worker *w, struct slot *s, bool put)
{
	bool last = put ? s->count == 0 : s->count == 1 && !s->pin;
	int rc;

	if (last)
		release_bit(w, s);
	rc = put ? uswap_put_folio(S.u, s->e, 0) : uswap_free(S.u, s->e, 1);
	if (rc != 0)
		t_fail_async("thread %d: %s of count %u pin %d returned %d (%s)",
			     w->id, put ? "put" : "free", s->count, s->pin, rc,
			     t_errname(rc));
	if (put) {
		s->pin = false;
		w->puts++;
	} else {
		s->count--;
		w->frees++;
	}
	if (last)
		forget_slot(w, s);
}

/* Drop the pin while there is one (half the time when there is a count
 * too), else a reference. */
static void do_release_any(struct worker *w, struct slot *s)
{
	do_release(w, s, s->pin && (s->count == 0 || t_rand_below(&w->rng, 2)));
}

static void do_pin(struct worker *w, struct slot *s)
{
	int rc = uswap_cache_pin(S.u, s->e);

	if (rc == 0 && !s->pin) {
		s->pin = true;
		w->pins++;
	} else if (rc == -EEXIST && s->pin) {
		w->eexist++;
	} else {
		t_fail_async("thread %d: pin of a slot with pin %d returned %d (%s)",
			     w->id, s->pin, rc, t_errname(rc));
	}
}

/* A free of a reference the slot lacks, or a put of a missing pin: both
 * -ENOENT, and the slot must read as before. */
static void do_refused(struct worker *w, struct slot *s)
{
	int rc;

	if (s->count == 0)
		rc = uswap_free(S.u, s->e, 1);
	else if (!s->pin)
		rc = uswap_put_folio(S.u, s->e, 0);
	else
		return;
	if (rc != -ENOENT)
		t_fail_async("thread %d: refused %s returned %d (%s)", w->id,
			     s->count == 0 ? "free" : "put", rc, t_errname(rc));
	slot_matches(w, s, "after a refused call");
	w->refused++;
}

/* Around ENT_COUNT_INLINE, and every 4096, a count is read back. */
static bool worth_a_check(uint32_t count)
{
	return (count + 2 >= ENT_COUNT_INLINE && count <= ENT_COUNT_INLINE + 2) ||
	       count % 4096 == 0;
}

/* Dup @s up to @top; at USWAP_COUNT_MAX one more dup must be -EOVERFLOW
 * and change nothing. */
static void dup_up_to(struct worker *w, struct slot *s, uint32_t top)
{
	while (s->count < top && !t_async_failed()) {
		do_dup(w, s);
		if (worth_a_check(s->count))
			slot_matches(w, s, "going up");
	}
	slot_matches(w, s, "at the top");
	if (s->count == USWAP_COUNT_MAX) {
		do_dup(w, s); /* -EOVERFLOW, or a failure */
		slot_matches(w, s, "after -EOVERFLOW");
	}
}

static void free_down_to(struct worker *w, struct slot *s, uint32_t bottom)
{
	while (s->count > bottom && !t_async_failed()) {
		do_release(w, s, false /* put */);
		if (worth_a_check(s->count))
			slot_matches(w, s, "coming down");
	}
}

/* Another slot the worker holds in @a's cluster, or NULL. */
static struct slot *cluster_neighbour(struct worker *w, struct slot *a)
{
	struct slot *b = next_in_cluster(w, a);

	while (b != a && !b->owned)
		b = next_in_cluster(w, b);
	return b == a ? NULL : b;
}

/*
 * Take an owned slot (a new one if none) past ENT_COUNT_INLINE, so its
 * cluster needs a side table, and back, while the other workers go on;
 * worker 0 goes on to USWAP_COUNT_MAX. A second slot of the same
 * cluster, if the worker holds one, goes past too before the first
 * comes back, so the side table must outlive the first slot's return.
 * The slots keep a pin or a count throughout: never freed on the way.
 * Return: false if no slot could be had now (tried again later).
 */
static bool excursion(struct worker *w)
{
	uint32_t top = w->id == 0 ? USWAP_COUNT_MAX : ENT_COUNT_INLINE + 2;
	struct slot *a, *b;
	uint32_t a_start, b_start;
	uswap_entry_t e;

	if (w->nr_slots == 0) {
		if (uswap_alloc(S.u, 0, &e) != 0)
			return false;
		own_folio(w, e, 0);
	}
	a = pick_slot(w);
	b = cluster_neighbour(w, a);
	a_start = a->count;
	dup_up_to(w, a, top);
	if (b) {
		w->excursion_pair = true;
		b_start = b->count;
		dup_up_to(w, b, ENT_COUNT_INLINE + 2);
	}
	free_down_to(w, a, a_start);
	if (b) {
		slot_matches(w, b, "after its neighbour came back");
		free_down_to(w, b, b_start);
	}
	return true;
}

/* A device's next few table allocations fail (FAIL_ROUND only). */
static void fail_some_refills(struct worker *w)
{
	int d = (int)t_rand_below(&w->rng, NR_DEV);

	table_pool_fail_refills(S.u->devs[S.types[d]],
				1 + (uint32_t)t_rand_below(&w->rng, 4));
	w->fail_calls++;
}

/* Percent of each operation, cumulative: alloc, dup, release (free or
 * put), pin, count; the rest are refused calls. */
static const unsigned int fill_mix[] = { 60, 70, 80, 82, 99 };
static const unsigned int drain_mix[] = { 3, 5, 85, 87, 99 };

/* A fill ends on holding a random part of the worker's share of the
 * slots (one fill in four has no such end) or after a few -ENOSPC. A
 * drain ends on holding at most a random part of what it held, one time
 * in three nothing: its clusters then empty and give their tables back
 * (each worker has a CPU of its own, so most clusters are its alone). */
static void switch_phase(struct worker *w)
{
	size_t share = S.usable / (size_t)opt.threads;

	w->fill = !w->fill;
	if (w->fill) {
		w->left = 1 + t_rand_below(&w->rng, 4);
		w->fill_to = t_rand_below(&w->rng, 4) == 0 ? SIZE_MAX :
			     share / 4 * (1 + t_rand_below(&w->rng, 3));
	} else if (t_rand_below(&w->rng, 3) == 0)
		w->drain_to = 0;
	else
		w->drain_to = t_rand_below(&w->rng, w->nr_slots / 2 + 1);
}

static void one_op(struct worker *w)
{
	const unsigned int *mix = w->fill ? fill_mix : drain_mix;
	unsigned int r = (unsigned int)t_rand_below(&w->rng, 100);

	if (w->fail_round && t_rand_below(&w->rng, 64) == 0)
		fail_some_refills(w);
	if (w->nr_slots == 0 || r < mix[0]) {
		if (do_alloc(w) == -ENOSPC && w->fill && w->left > 0)
			w->left--;
	} else if (r < mix[1]) {
		do_dup(w, pick_slot(w));
	} else if (r < mix[2]) {
		/* In a drain, 3 in 4 releases empty clusters in turn. */
		bool in_turn = !w->fill && t_rand_below(&w->rng, 4) != 0;

		do_release_any(w, in_turn ? pick_in_cluster(w) : pick_slot(w));
	} else if (r < mix[3]) {
		do_pin(w, pick_slot(w));
	} else if (r < mix[4]) {
		slot_matches(w, pick_slot(w), "on a count check");
		w->counts++;
	} else {
		do_refused(w, pick_slot(w));
	}
	if (w->fill ? w->left == 0 || w->nr_slots >= w->fill_to
		    : w->nr_slots <= w->drain_to)
		switch_phase(w);
}

/* Drop everything the worker holds, in random order. */
static void drain_all(struct worker *w)
{
	while (w->nr_slots > 0 && !t_async_failed())
		do_release_any(w, pick_slot(w));
}

/* Every owned slot reads exactly as the model says. */
static void check_model(struct worker *w)
{
	for (size_t i = 0; i < w->nr_slots; i++)
		if (!slot_matches(w, w->owned[i], "at the end of a round"))
			return;
}

/* ------------------------------------------------------------------
 * Quiescent checks: worker 0 (or the main thread), nothing else
 * allocating or freeing; the reader may run.
 * ------------------------------------------------------------------ */

static bool reserved_cluster(const struct dev_spec *spec, uint32_t c)
{
	if (c == 0 || (uint64_t)(c + 1) * USWAP_CLUSTER_SLOTS > spec->nr_slots)
		return true;
	for (size_t i = 0; i < spec->nr_bad; i++)
		if (spec->bad[i] / USWAP_CLUSTER_SLOTS == c)
			return true;
	return false;
}

/* Clusters holding the header, a bad slot or the device's end. */
static uint32_t nr_reserved_clusters(const struct dev_spec *spec)
{
	uint32_t n = 0;

	for (uint32_t c = 0; c < DEV_CLUSTERS; c++)
		n += reserved_cluster(spec, c);
	return n;
}

/* uswap_check() passes; each device's inuse is what the models hold, and
 * its pool was trimmed (frees keep it at most twice its target). */
static void quiescent_check(const char *when)
{
	uint64_t owned = 0, inuse = 0;

	if (uswap_check(S.u) != 0)
		t_fail_async("uswap_check failed %s (see stderr)", when);
	for (int d = 0; d < NR_DEV; d++) {
		struct swap_device *si = S.u->devs[S.types[d]];
		uint64_t expect = bitmap_population(&S.bm[d]) - S.bm[d].base;
		uint32_t pool = atomic_load(&si->table_pool_nr);
		struct uswap_device_info info;

		if (uswap_device_info(S.u, S.types[d], &info) != 0) {
			t_fail_async("device %d vanished %s", S.types[d], when);
			continue;
		}
		if (info.inuse != expect)
			t_fail_async("%s: device %d inuse %llu, models hold %llu", when,
				     S.types[d], (unsigned long long)info.inuse,
				     (unsigned long long)expect);
		if (pool > 2 * table_pool_target(si))
			t_fail_async("%s: device %d pools %u tables, target %u", when,
				     S.types[d], pool, table_pool_target(si));
		inuse += info.inuse;
	}
	for (int i = 0; i < opt.threads; i++)
		owned += S.w[i].nr_slots;
	if (owned != inuse)
		t_fail_async("%s: workers own %llu slots, devices use %llu", when,
			     (unsigned long long)owned, (unsigned long long)inuse);
}

/* Everything was freed: no slot in use, every cluster that can be is
 * free, and only reserved clusters may keep a table. */
static void check_empty(const char *when)
{
	for (int d = 0; d < NR_DEV; d++) {
		struct swap_device *si = S.u->devs[S.types[d]];
		uint32_t reserved = nr_reserved_clusters(&specs[d]);
		uint32_t tables = atomic_load(&si->tables_used);
		struct uswap_device_info info = { 0 };

		uswap_device_info(S.u, S.types[d], &info);
		if (info.inuse != 0 || info.free_clusters != DEV_CLUSTERS - reserved)
			t_fail_async("%s: device %d has %llu slots in use and %u free "
				     "clusters, expected 0 and %u", when, S.types[d],
				     (unsigned long long)info.inuse,
				     info.free_clusters, DEV_CLUSTERS - reserved);
		if (tables > reserved)
			t_fail_async("%s: device %d keeps %u tables with nothing in "
				     "use (%u reserved clusters)", when, S.types[d],
				     tables, reserved);
	}
	if (uswap_check(S.u) != 0)
		t_fail_async("uswap_check failed %s (see stderr)", when);
}

static struct uswap_stats stats_now(void)
{
	struct uswap_stats st = { .size = sizeof(st) };

	uswap_stats_get(S.u, &st);
	return st;
}

/* Make each device's next @n table allocations fail (0: none). */
static void fail_refills_everywhere(uint32_t n)
{
	for (int d = 0; d < NR_DEV; d++)
		table_pool_fail_refills(S.u->devs[S.types[d]], n);
}

/* An order-9 folio, given back at once. Return: uswap_alloc()'s. */
static int alloc_order9_and_put(const char *when)
{
	uswap_entry_t e;
	int rc = uswap_alloc(S.u, USWAP_MAX_ORDER, &e);

	if (rc == 0 && uswap_put_folio(S.u, e, USWAP_MAX_ORDER) != 0)
		t_fail_async("%s: put of the order-9 folio failed", when);
	return rc;
}

/*
 * With every device empty, an order-9 folio needs a new table. With the
 * refills of every device failing, it is -ENOMEM, counted, and changes
 * nothing; with the failures used up it succeeds.
 */
static void enomem_check(const char *when)
{
	uint64_t failed = stats_now().table_refill_fail;
	int rc, tries = 0;

	fail_refills_everywhere(2);
	rc = alloc_order9_and_put(when);
	if (rc != -ENOMEM)
		t_fail_async("%s: order 9 with failing refills returned %d (%s)",
			     when, rc, t_errname(rc));
	if (stats_now().table_refill_fail <= failed)
		t_fail_async("%s: -ENOMEM not counted in table_refill_fail", when);
	check_empty("after -ENOMEM");
	while (rc == -ENOMEM && tries++ < 8)
		rc = alloc_order9_and_put(when);
	if (rc != 0)
		t_fail_async("%s: order 9 still %d (%s) after the failures ran out",
			     when, rc, t_errname(rc));
	fail_refills_everywhere(0);
	check_empty("after the order-9 folio");
	S.enomem_checked++;
}

/*
 * One failing allocation per device: the refill before the walk (every
 * pool is below its low mark) uses it up and leaves the pools dry, so the
 * walk meets a dry pool. It must stop, refill, walk again and succeed
 * (counted in table_refills), not give up with -ENOMEM.
 */
static void dry_pool_check(const char *when)
{
	uint64_t stopped = stats_now().table_refills;
	int rc;

	fail_refills_everywhere(1);
	rc = alloc_order9_and_put(when);
	if (rc != 0)
		t_fail_async("%s: order 9 meeting a dry pool returned %d (%s)",
			     when, rc, t_errname(rc));
	if (stats_now().table_refills <= stopped)
		t_fail_async("%s: the order-9 walk did not stop to refill", when);
	fail_refills_everywhere(0);
	check_empty("after the dry pool");
}

/* Runs on worker 0 while every other worker waits at the barrier. */
static void round_check(int round)
{
	char when[64];

	snprintf(when, sizeof(when), "after round %d", round);
	quiescent_check(when);
	if (drain_round(round) && !t_async_failed()) {
		check_empty(when);
		enomem_check(when);
		dry_pool_check(when);
	}
	/* Later -ENOMEM would be a walk that met a dry pool and did not
	 * refill it. */
	if (round == FAIL_ROUND)
		fail_refills_everywhere(0);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t per_round = (w->nr_ops + ROUNDS - 1) / ROUNDS;

	/* Past NR_CPUS workers, CPUs are shared (and walks may find a
	 * dry pool). */
	uswap_thread_set_cpu(w->id % NR_CPUS);
	w->excursion_round = (int)t_rand_below(&w->rng, ROUNDS);
	w->excursion_at = t_rand_below(&w->rng, per_round);
	for (int round = 0; round < ROUNDS; round++) {
		w->fail_round = round == FAIL_ROUND;
		for (uint64_t i = 0; i < per_round && !t_async_failed(); i++) {
			if (round == w->excursion_round && i == w->excursion_at)
				w->excursion_due = true;
			if (w->excursion_due && excursion(w)) {
				w->excursion_due = false;
				w->excursion_done = true;
			}
			one_op(w);
		}
		if (drain_round(round))
			drain_all(w);
		check_model(w);
		/* Everyone (even after a failure) reaches both barriers. */
		pthread_barrier_wait(&S.barrier);
		if (w->id == 0 && !t_async_failed())
			round_check(round);
		pthread_barrier_wait(&S.barrier);
	}
	if (w->excursion_due && !t_async_failed() && excursion(w)) {
		w->excursion_due = false;
		w->excursion_done = true;
	}
	drain_all(w);
	return NULL;
}

/* ------------------------------------------------------------------
 * The reader: calls that read the devices while the workers change them
 * ------------------------------------------------------------------ */

/* A snapshot taken while slots move is not exact, but it is sane. */
static void read_info(int d)
{
	struct uswap_device_info info;
	uint32_t listed;

	if (uswap_device_info(S.u, S.types[d], &info) != 0) {
		t_fail_async("reader: device %d vanished", S.types[d]);
		return;
	}
	listed = info.free_clusters + info.nonfull_clusters + info.frag_clusters +
		 info.full_clusters + info.discard_clusters;
	if (info.inuse > info.pages || listed > info.nr_clusters ||
	    info.percpu_clusters > info.nr_clusters)
		t_fail_async("reader: device %d inuse %llu of %llu, %u of %u clusters "
			     "listed, %u per-CPU", S.types[d],
			     (unsigned long long)info.inuse,
			     (unsigned long long)info.pages, listed,
			     info.nr_clusters, info.percpu_clusters);
}

/* A random slot of a random device: free, a count (a count of 0 only
 * with the pin), or the header/bad slot. */
static void read_slot(uint64_t *rng)
{
	int d = (int)t_rand_below(rng, NR_DEV);
	uint64_t off = t_rand_below(rng, specs[d].nr_slots);
	bool reserved = off == 0, cache = false;
	long rc;

	for (size_t i = 0; i < specs[d].nr_bad; i++)
		reserved |= specs[d].bad[i] == off;
	rc = uswap_slot_count(S.u, uswap_entry((unsigned int)S.types[d], off), &cache);
	if (reserved ? rc == -EIO
		     : rc == -ENOENT || (rc > 0 && rc <= USWAP_COUNT_MAX) || (rc == 0 && cache))
		return;
	t_fail_async("reader: slot type %d offset %llu reads %ld (%s) pin %d",
		     S.types[d], (unsigned long long)off, rc, t_errname(rc), cache);
}

static void *reader_main(void *arg)
{
	uint64_t rng = opt.seed ^ UINT64_C(0x5eadbeefcafe), loops = 0;

	(void)arg;
	while (!atomic_load(&S.stop_reader) && !t_async_failed()) {
		struct uswap_stats st = { .size = sizeof(st) };

		for (int d = 0; d < NR_DEV; d++)
			read_info(d);
		if (uswap_stats_get(S.u, &st) != 0 || st.size != sizeof(st))
			t_fail_async("reader: uswap_stats_get failed");
		for (int i = 0; i < 16; i++)
			read_slot(&rng);
		loops++;
	}
	S.reader_loops = loops;
	return NULL;
}

/* ------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------ */

static void setup(void)
{
	memset(&S, 0, sizeof(S));
	t_async_reset();
	S.u = t_create(NR_CPUS, 0);
	for (int t = 0; t < USWAP_MAX_DEVICES; t++)
		S.dev_of_type[t] = -1;
	for (int d = 0; d < NR_DEV; d++) {
		S.types[d] = t_swapon_bad(S.u, specs[d].nr_slots, 0, specs[d].bad,
					  specs[d].nr_bad);
		S.dev_of_type[S.types[d]] = d;
		bitmap_init(&S.bm[d], &specs[d]);
		S.usable += specs[d].nr_slots - 1 - specs[d].nr_bad;
	}
	S.w = calloc((size_t)opt.threads, sizeof(*S.w));
	t_true(S.w != NULL);
	t_eq(pthread_barrier_init(&S.barrier, NULL, (unsigned int)opt.threads), 0);
}

static void teardown(void)
{
	pthread_barrier_destroy(&S.barrier);
	for (int i = 0; i < opt.threads; i++) {
		for (int d = 0; d < NR_DEV; d++) {
			free(S.w[i].model[d]);
			free(S.w[i].in_cluster[d]);
		}
		free(S.w[i].owned);
	}
	free(S.w);
	for (int d = 0; d < NR_DEV; d++)
		free(S.bm[d].bits);
	uswap_destroy(S.u);
}

static void model_init(struct worker *w)
{
	for (int d = 0; d < NR_DEV; d++) {
		w->model[d] = calloc(specs[d].nr_slots, sizeof(struct slot));
		w->in_cluster[d] = calloc(DEV_CLUSTERS, sizeof(uint16_t));
		t_true(w->model[d] != NULL && w->in_cluster[d] != NULL);
		for (uint64_t off = 0; off < specs[d].nr_slots; off++)
			w->model[d][off].e = uswap_entry((unsigned int)S.types[d], off);
	}
	w->owned = malloc(S.usable * sizeof(*w->owned));
	t_true(w->owned != NULL);
}

static void start_workers(uint64_t total_ops)
{
	for (int i = 0; i < opt.threads; i++) {
		struct worker *w = &S.w[i];

		w->id = i;
		w->rng = opt.seed ^ ((uint64_t)(i + 1) * UINT64_C(0x9e3779b97f4a7c15));
		w->nr_ops = (total_ops + (uint64_t)opt.threads - 1) / (uint64_t)opt.threads;
		w->fill = true;
		w->left = 1 + t_rand_below(&w->rng, 4);
		w->fill_to = SIZE_MAX;
		model_init(w);
		t_eq(pthread_create(&w->tid, NULL, worker_main, w), 0);
	}
}

/* Join the workers and print what they did, summed. */
static void join_workers(void)
{
	struct worker sum = { 0 };
	int excursions = 0, pairs = 0;

	for (int i = 0; i < opt.threads; i++) {
		struct worker *w = &S.w[i];

		pthread_join(w->tid, NULL);
		sum.allocs += w->allocs;
		sum.alloc_slots += w->alloc_slots;
		sum.dups += w->dups;
		sum.frees += w->frees;
		sum.puts += w->puts;
		sum.pins += w->pins;
		sum.eexist += w->eexist;
		sum.counts += w->counts;
		sum.refused += w->refused;
		sum.freed += w->freed;
		sum.enospc += w->enospc;
		sum.e2big += w->e2big;
		sum.enomem += w->enomem;
		sum.eoverflow += w->eoverflow;
		sum.fail_calls += w->fail_calls;
		excursions += w->excursion_done;
		pairs += w->excursion_pair;
	}
	printf("# %llu allocations (%llu slots), %llu dups, %llu frees, %llu puts, "
	       "%llu pins (%llu -EEXIST), %llu count checks, %llu refused, "
	       "%llu slots freed, %llu -ENOSPC, %llu -E2BIG, %llu -ENOMEM "
	       "(%llu failing refills armed), %llu -EOVERFLOW, "
	       "%d excursions past the entry (%d with a neighbour)\n",
	       (unsigned long long)sum.allocs, (unsigned long long)sum.alloc_slots,
	       (unsigned long long)sum.dups, (unsigned long long)sum.frees,
	       (unsigned long long)sum.puts, (unsigned long long)sum.pins,
	       (unsigned long long)sum.eexist, (unsigned long long)sum.counts,
	       (unsigned long long)sum.refused, (unsigned long long)sum.freed,
	       (unsigned long long)sum.enospc, (unsigned long long)sum.e2big,
	       (unsigned long long)sum.enomem, (unsigned long long)sum.fail_calls,
	       (unsigned long long)sum.eoverflow, excursions, pairs);
	if (!t_async_failed() && excursions != opt.threads)
		t_fail_async("%d of %d workers went past the inline count", excursions,
			     opt.threads);
}

static void test_counts_and_pins_match_the_model_while_tables_come_and_go(void **state)
{
	uint64_t total_ops = (uint64_t)(BASE_OPS * opt.scale + 0.5);
	pthread_t reader;
	struct uswap_stats st;
	char context[160];

	(void)state;
	if (total_ops < (uint64_t)opt.threads * ROUNDS)
		total_ops = (uint64_t)opt.threads * ROUNDS;
	printf("# test_table_stress: threads %d scale %g seed %llu ops %llu\n",
	       opt.threads, opt.scale, (unsigned long long)opt.seed,
	       (unsigned long long)total_ops);
	snprintf(context, sizeof(context), "seed %llu (rerun: test_table_stress %d %g %llu)",
		 (unsigned long long)opt.seed, opt.threads, opt.scale,
		 (unsigned long long)opt.seed);

	setup();
	t_eq(pthread_create(&reader, NULL, reader_main, NULL), 0);
	start_workers(total_ops);
	join_workers();
	atomic_store(&S.stop_reader, true);
	pthread_join(reader, NULL);
	printf("# reader: %llu loops\n", (unsigned long long)S.reader_loops);
	t_assert_no_async_failure(context);

	/* The workers freed everything they held. */
	quiescent_check("at the end");
	check_empty("at the end");
	enomem_check("at the end");
	dry_pool_check("at the end");
	t_assert_no_async_failure(context);
	t_eq(S.enomem_checked, 3);
	st = t_stats(S.u);
	printf("# tables: %llu walks stopped to refill, %llu -ENOMEM counted\n",
	       (unsigned long long)st.table_refills,
	       (unsigned long long)st.table_refill_fail);
	t_true(st.table_refills > 0);
	t_true(st.table_refill_fail > 0);
	t_check(S.u);
	for (int d = 0; d < NR_DEV; d++)
		t_eq_u64(t_info(S.u, S.types[d]).inuse, 0);
	teardown();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_and_pins_match_the_model_while_tables_come_and_go),
	};

	opt.threads = argc > 1 ? atoi(argv[1]) : 2;
	opt.scale = argc > 2 ? strtod(argv[2], NULL) : t_env_scale();
	opt.seed = argc > 3 ? strtoull(argv[3], NULL, 0) : t_env_seed();
	if (opt.threads < 1 || opt.scale <= 0) {
		fprintf(stderr, "usage: %s [threads [scale [seed]]]\n", argv[0]);
		return 2;
	}
	return t_run(tests);
}
