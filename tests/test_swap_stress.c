// SPDX-License-Identifier: MIT
/*
 * Description: the swap path under concurrency, checked against a shadow
 * model of every page's contents (each page carries its object id and a
 * version, so any wrong data is caught):
 *  - with 1 % of writes and 1 % of reads failing, 2 threads swapping pages
 *    out and in lose no page and never read wrong data;
 *  - swapoff of a device holding 10^4 slots, while 2 threads keep swapping
 *    the same pages in and out, moves every page through the owner's
 *    unuse callback: afterwards every page reads back identical and the
 *    device is gone;
 *  - swapon/swapoff of a device while a thread swaps out: no swap-out
 *    ever meets a device whose backend is not attached yet;
 *  - the same model under batched traffic (uswap_swap_out_batch(),
 *    uswap_swap_in_batch() of up to 16 pages, over ram and an io_uring
 *    file): with faults, and during a swapoff; and over an NBD export
 *    of nbdkit with two connections, and on a zram device writing its
 *    pages back to a lower device all along;
 *  - the same model under queued traffic (uswap_swapq_*: up to 32 requests
 *    in flight per thread, answered in any order): with faults, and during
 *    a swapoff of the io_uring file device they are in flight on;
 *  - batched and queued traffic on zram with compression workers, and on
 *    crypt over an io_uring file.
 * Arguments: none; USWAP_STRESS_SCALE shrinks the work, USWAP_TEST_SEED
 * fixes the seed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dev/backend.h"
#include "dev/zram.h"
#include "t_dev.h"

#define PAGE USWAP_PAGE_SIZE

/* One object: a page that is either in memory or swapped out. */
struct object {
	pthread_mutex_t lock;
	uswap_entry_t entry; /* valid while swapped */
	bool swapped;
	uint64_t version;    /* bumped on every rewrite */
	uint64_t id;
};

struct model {
	struct uswap *u;
	struct object *obj;
	size_t nr;
	_Atomic int *owner;  /* [type << 20 | offset] -> object id + 1 */
	_Atomic uint64_t read_errors, write_errors, verified;
};

static void stamp(void *page, uint64_t id, uint64_t version)
{
	uint64_t *w = page, s = id * 0x9e3779b97f4a7c15ull ^ version;

	w[0] = id;
	w[1] = version;
	for (size_t i = 2; i < PAGE / 8; i++)
		w[i] = t_rand(&s);
}

static bool stamp_ok(const void *page, uint64_t id, uint64_t version)
{
	char want[PAGE];

	stamp(want, id, version);
	return memcmp(want, page, PAGE) == 0;
}

static size_t owner_idx(uswap_entry_t e)
{
	return (size_t)uswap_entry_type(e) << 20 | (size_t)uswap_entry_offset(e);
}

/* Swap the object's page out. Context: o->lock held; not swapped. */
static void obj_swap_out(struct model *m, struct object *o)
{
	char page[PAGE];
	int rc;

	stamp(page, o->id, o->version);
	rc = uswap_swap_out(m->u, page, 0, 0, &o->entry);
	if (rc == -EIO) {
		m->write_errors++; /* the page simply stays in memory */
		return;
	}
	if (rc) {
		t_fail_async("swap_out of object %llu: %s", (unsigned long long)o->id,
			     t_errname(rc));
		return;
	}
	atomic_store(&m->owner[owner_idx(o->entry)], (int)o->id + 1);
	o->swapped = true;
}

/* Read the page back and check it; on success the entry is freed and the
 * page is in memory again. Return: 0, or -EIO (still swapped, retry). */
static int obj_swap_in(struct model *m, struct object *o)
{
	char page[PAGE];
	int rc = uswap_swap_in(m->u, o->entry, 0, page);

	if (rc == -EIO) {
		m->read_errors++;
		return rc;
	}
	if (rc < 0) {
		t_fail_async("swap_in of object %llu: %s", (unsigned long long)o->id,
			     t_errname(rc));
		return rc;
	}
	if (!stamp_ok(page, o->id, o->version))
		t_fail_async("object %llu version %llu: WRONG DATA", (unsigned long long)o->id,
			     (unsigned long long)o->version);
	m->verified++;
	atomic_store(&m->owner[owner_idx(o->entry)], 0);
	rc = uswap_swap_free(m->u, o->entry, 0);
	if (rc)
		t_fail_async("swap_free: %s", t_errname(rc));
	o->swapped = false;
	o->version++; /* the app writes it while it is in memory */
	return 0;
}

static void model_init(struct model *m, struct uswap *u, size_t nr)
{
	memset(m, 0, sizeof(*m));
	m->u = u;
	m->nr = nr;
	m->obj = calloc(nr, sizeof(*m->obj));
	m->owner = calloc((size_t)USWAP_MAX_DEVICES << 20, sizeof(*m->owner));
	assert_non_null(m->obj);
	assert_non_null(m->owner);
	for (size_t i = 0; i < nr; i++) {
		pthread_mutex_init(&m->obj[i].lock, NULL);
		m->obj[i].id = i;
	}
}

/* Bring every page back (retrying failed reads), check it, free all. */
static void model_drain(struct model *m)
{
	for (size_t i = 0; i < m->nr; i++) {
		struct object *o = &m->obj[i];
		int tries = 0;

		while (o->swapped && obj_swap_in(m, o) == -EIO && ++tries < 1000)
			;
		if (o->swapped)
			t_fail_async("object %zu never read back", i);
	}
	t_assert_no_async_failure("drain");
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->nr; i++)
		pthread_mutex_destroy(&m->obj[i].lock);
	free(m->obj);
	free(m->owner);
}

struct worker {
	struct model *m;
	uint64_t rng;
	uint64_t ops;
};

/* Random swap-outs and swap-ins of random objects. */
static void *traffic(void *arg)
{
	struct worker *w = arg;
	struct model *m = w->m;

	for (uint64_t n = 0; n < w->ops && !t_async_failed(); n++) {
		struct object *o = &m->obj[t_rand_below(&w->rng, m->nr)];

		pthread_mutex_lock(&o->lock);
		if (o->swapped)
			obj_swap_in(m, o);
		else
			obj_swap_out(m, o);
		pthread_mutex_unlock(&o->lock);
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Batched traffic: up to BATCH distinct objects at a time, locked in index
 * order (so two workers never wait on each other); those in memory go out
 * in one uswap_swap_out_batch(), the swapped ones come back in one
 * uswap_swap_in_batch(). The same model checks every page.
 * ---------------------------------------------------------------------- */

#define BATCH 16

static unsigned int pick_objects(struct worker *w, struct object **o)
{
	unsigned int want = 1 + (unsigned int)t_rand_below(&w->rng, BATCH), n = 0;

	while (n < want) {
		size_t idx = t_rand_below(&w->rng, w->m->nr), at = n;
		bool dup = false;

		for (unsigned int j = 0; j < n; j++)
			dup |= o[j] == &w->m->obj[idx];
		if (dup)
			continue;
		while (at > 0 && o[at - 1] > &w->m->obj[idx]) { /* insertion sort */
			o[at] = o[at - 1];
			at--;
		}
		o[at] = &w->m->obj[idx];
		n++;
	}
	return n;
}

/* The answer to a batched or queued swap-out of @o's page. */
static void out_answered(struct model *m, struct object *o, const struct uswap_swap_io *io)
{
	if (io->result == -EIO) {
		m->write_errors++; /* the page simply stays in memory */
	} else if (io->result) {
		t_fail_async("swap-out of object %llu: %s", (unsigned long long)o->id,
			     t_errname(io->result));
	} else {
		o->entry = io->entry;
		atomic_store(&m->owner[owner_idx(io->entry)], (int)o->id + 1);
		o->swapped = true;
	}
}

/* The answer to a batched or queued swap-in of @o's page (in io->pages). */
static void in_answered(struct model *m, struct object *o, const struct uswap_swap_io *io)
{
	int rc;

	if (io->result == -EIO) {
		m->read_errors++; /* still swapped: read again later */
		return;
	}
	if (io->result < 0) {
		t_fail_async("swap-in of object %llu: %s", (unsigned long long)o->id,
			     t_errname(io->result));
		return;
	}
	if (!stamp_ok(io->pages, o->id, o->version))
		t_fail_async("object %llu version %llu: WRONG DATA in a batch",
			     (unsigned long long)o->id, (unsigned long long)o->version);
	m->verified++;
	atomic_store(&m->owner[owner_idx(o->entry)], 0);
	if ((rc = uswap_swap_free(m->u, o->entry, 0)))
		t_fail_async("swap_free: %s", t_errname(rc));
	o->swapped = false;
	o->version++;
}

static void batch_out(struct model *m, struct object **o, unsigned int n)
{
	static _Thread_local char pages[BATCH][PAGE];
	struct uswap_swap_io io[BATCH];
	struct object *who[BATCH];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (o[i]->swapped)
			continue;
		stamp(pages[k], o[i]->id, o[i]->version);
		io[k] = (struct uswap_swap_io){ .pages = pages[k], .order = 0 };
		who[k++] = o[i];
	}
	if (uswap_swap_out_batch(m->u, io, k, 0) < 0)
		t_fail_async("swap_out_batch refused %u folios", k);
	for (unsigned int i = 0; i < k; i++)
		out_answered(m, who[i], &io[i]);
}

static void batch_in(struct model *m, struct object **o, unsigned int n)
{
	static _Thread_local char pages[BATCH][PAGE];
	struct uswap_swap_io io[BATCH];
	struct object *who[BATCH];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (!o[i]->swapped)
			continue;
		io[k] = (struct uswap_swap_io){ .pages = pages[k], .order = 0,
						.entry = o[i]->entry };
		who[k++] = o[i];
	}
	if (uswap_swap_in_batch(m->u, io, k) < 0)
		t_fail_async("swap_in_batch refused %u folios", k);
	for (unsigned int i = 0; i < k; i++)
		in_answered(m, who[i], &io[i]);
}

static void *batch_traffic(void *arg)
{
	struct worker *w = arg;
	struct object *o[BATCH];

	for (uint64_t n = 0; n < w->ops && !t_async_failed();) {
		unsigned int k = pick_objects(w, o);

		for (unsigned int i = 0; i < k; i++)
			pthread_mutex_lock(&o[i]->lock);
		if (t_rand_below(&w->rng, 2)) {
			batch_out(w->m, o, k);
			batch_in(w->m, o, k);
		} else {
			batch_in(w->m, o, k);
			batch_out(w->m, o, k);
		}
		for (unsigned int i = k; i-- > 0;)
			pthread_mutex_unlock(&o[i]->lock);
		n += k;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Queued traffic: each worker keeps up to QDEPTH swap-outs and swap-ins in
 * flight on its own uswap_swapq, answered in whatever order the devices
 * finish. An object is locked (trylock: a busy one is skipped, so workers
 * never wait on each other) from its submission to its answer.
 * ---------------------------------------------------------------------- */

#define QDEPTH 32

struct qreq {
	struct uswap_swap_io io; /* first: the answer's pointer is the qreq's */
	struct object *o;
	bool out;
	_Alignas(16) char page[PAGE]; /* stamp() writes 8-byte words */
};

/* Lock a random idle object and submit its swap-out or swap-in. */
static bool queue_one(struct worker *w, struct uswap_swapq *q, struct qreq *r)
{
	struct object *o = &w->m->obj[t_rand_below(&w->rng, w->m->nr)];
	int rc;

	if (pthread_mutex_trylock(&o->lock))
		return false;
	r->o = o;
	r->out = !o->swapped;
	if (r->out) {
		stamp(r->page, o->id, o->version);
		r->io = (struct uswap_swap_io){ .pages = r->page, .order = 0 };
		rc = uswap_swapq_out(q, (struct uswap_swap_io *[]){ &r->io }, 1, 0);
	} else {
		r->io = (struct uswap_swap_io){ .pages = r->page, .order = 0, .entry = o->entry };
		rc = uswap_swapq_in(q, (struct uswap_swap_io *[]){ &r->io }, 1);
	}
	if (rc != 1) {
		t_fail_async("swapq submit: %d with %u free places", rc, uswap_swapq_space(q));
		pthread_mutex_unlock(&o->lock);
		return false;
	}
	return true;
}

static void queue_answer(struct worker *w, struct qreq *r, struct qreq **idle,
			 unsigned int *nr_idle)
{
	if (r->out)
		out_answered(w->m, r->o, &r->io);
	else
		in_answered(w->m, r->o, &r->io);
	pthread_mutex_unlock(&r->o->lock);
	idle[(*nr_idle)++] = r;
}

static void *queued_traffic(void *arg)
{
	struct worker *w = arg;
	struct qreq *req = calloc(QDEPTH, sizeof(*req)), *idle[QDEPTH];
	struct uswap_swap_io *done[QDEPTH];
	unsigned int nr_idle = QDEPTH;
	struct uswap_swapq *q;
	uint64_t n = 0;

	if (uswap_swapq_create(w->m->u, QDEPTH, &q)) {
		t_fail_async("swapq_create");
		return NULL;
	}
	for (unsigned int i = 0; i < QDEPTH; i++)
		idle[i] = &req[i];
	while (!t_async_failed() && (n < w->ops || uswap_swapq_pending(q))) {
		int got;

		for (int tries = 0; n < w->ops && nr_idle && tries < 4; tries++) {
			if (queue_one(w, q, idle[nr_idle - 1])) {
				nr_idle--;
				n++;
			}
		}
		/* Sometimes wait for one, sometimes only poll. */
		got = uswap_swapq_reap(q, (unsigned int)t_rand_below(&w->rng, 2), done, QDEPTH);
		for (int i = 0; i < got; i++)
			queue_answer(w, (struct qreq *)done[i], idle, &nr_idle);
	}
	if (uswap_swapq_pending(q))
		t_fail_async("%u requests never answered", uswap_swapq_pending(q));
	uswap_swapq_destroy(q);
	free(req);
	return NULL;
}

static void run_threads(struct model *m, int nthreads, uint64_t ops_each, uint64_t seed,
			void *(*fn)(void *))
{
	pthread_t th[4];
	struct worker w[4];

	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .m = m, .rng = seed + (uint64_t)i, .ops = ops_each };
		pthread_create(&th[i], NULL, fn, &w[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
}

static void run_traffic(struct model *m, int nthreads, uint64_t ops_each, uint64_t seed)
{
	run_threads(m, nthreads, ops_each, seed, traffic);
}

static int swapon_backend(struct uswap *u, struct backend *b, int prio)
{
	struct uswap_swapon_args a = { .prio = prio, .backend = (struct uswap_backend *)b };
	int type = uswap_swapon(u, &a);

	t_true(type >= 0);
	return type;
}

static struct backend *ram(uint64_t slots)
{
	struct backend *b;
	char err[128];

	t_eq(backend_ram_open(slots * PAGE, &b, err, sizeof(err)), 0);
	return b;
}

/* The end of a traffic test with faults: every page read back, the faults
 * seen on both sides, nothing left. */
static void drain_faulted(struct uswap *u, struct model *m, const char *how)
{
	model_drain(m);
	printf("# %llu pages verified%s, %llu read errors, %llu write errors\n",
	       (unsigned long long)m->verified, how, (unsigned long long)m->read_errors,
	       (unsigned long long)t_stats(u).write_errors);
	t_true(m->read_errors > 0); /* the faults really happened */
	t_true(t_stats(u).write_errors > 0);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	model_free(m);
	uswap_destroy(u);
}

/* The owner's unuse callback: move the page to another device. */
static int unuse_move(void *ctx, uswap_entry_t e)
{
	struct model *m = ctx;
	int id = atomic_load(&m->owner[owner_idx(e)]) - 1;
	struct object *o;
	int rc = 0;

	if (id < 0)
		return 0; /* freed since the sweep saw it */
	o = &m->obj[id];
	pthread_mutex_lock(&o->lock);
	if (o->swapped && o->entry.val == e.val) {
		rc = obj_swap_in(m, o); /* back in memory... */
		if (!rc)
			obj_swap_out(m, o); /* ...and out to another device */
	}
	pthread_mutex_unlock(&o->lock);
	return rc;
}

struct swapoff_arg {
	struct uswap *u;
	int type;
	int rc;
	uint64_t last_left;
};

static void on_progress(void *ctx, uint64_t left)
{
	((struct swapoff_arg *)ctx)->last_left = left;
}

static void *do_swapoff(void *arg)
{
	struct swapoff_arg *s = arg;

	s->rc = uswap_swapoff_progress(s->u, s->type, on_progress, s);
	return NULL;
}

static void test_swapoff_moves_every_used_slot_under_traffic(void **state)
{
	struct uswap *u = t_create(2, 0);
	struct swapoff_arg s = { .u = u };
	struct uswap_device_info info;
	size_t nr = 12000;
	struct model m;
	pthread_t th;

	s.type = swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), 10);
	swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), 5);
	swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), 5);
	model_init(&m, u, nr);
	for (size_t i = 0; i < nr; i++) /* all out: the prio-10 device first */
		obj_swap_out(&m, &m.obj[i]);
	t_true(t_info(u, s.type).inuse >= 10000);

	uswap_set_unuse(u, unuse_move, &m);
	pthread_create(&th, NULL, do_swapoff, &s);
	run_traffic(&m, 2, (uint64_t)(50000 * t_env_scale()) + 1000, t_env_seed());
	pthread_join(th, NULL);
	t_assert_no_async_failure("traffic during swapoff");
	t_eq(s.rc, 0);
	t_eq(s.last_left, 0);
	t_eq(uswap_device_info(u, s.type, &info), -ENOENT);
	for (size_t i = 0; i < nr; i++)
		if (m.obj[i].swapped && uswap_entry_type(m.obj[i].entry) == (unsigned int)s.type)
			fail_msg("object %zu still on the swapped-off device", i);
	model_drain(&m);
	t_eq_u64(m.verified >= nr ? 1 : 0, 1);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	model_free(&m);
	uswap_destroy(u);
}

static void test_swapoff_without_owner_is_refused_while_busy(void **state)
{
	struct uswap *u = t_create(2, 0);
	int type = swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), -1);
	char page[PAGE] = { 1 };
	uswap_entry_t e;

	t_eq(uswap_swap_out(u, page, 0, 0, &e), 0);
	t_eq(uswap_swapoff(u, type), -EBUSY);
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_eq(uswap_swapoff(u, type), 0);
	uswap_destroy(u);
}

/* Batched swap-outs and swap-ins from 2 threads, 1 % of writes and reads
 * failing, on a faulty ram device above a file device (io_uring: the
 * completions of one thread's batch may be reaped by the other): no page
 * lost, no wrong data, every failure answered for its own folio. */
/*
 * Slots of the healthy device beside the faulty one. A failed write
 * passes the faulty device over for 10 ms or more (device_write_failed());
 * if the healthy device could take every page meanwhile, the faulty one
 * would see only the writes of the first moments after each pause, a
 * number set by the machine's speed (a slow run saw no read fault at
 * all). Two clusters fill within a pause, and then allocation takes the
 * paused device again, so the faulty device carries most of the traffic
 * on any machine, and failed writes still find room elsewhere.
 */
#define HEALTHY_SLOTS (2 * USWAP_CLUSTER_SLOTS)

/* 2 threads run @fn's traffic over a device failing 1 % of reads and
 * writes, preferred, and @healthy below it; every page then reads back
 * intact. */
static void faulted_traffic(void *(*fn)(void *), struct backend *healthy, const char *how)
{
	struct faulty_opts fo = { .read_error_rate = 0.01, .write_error_rate = 0.01,
				  .seed = t_env_seed() };
	struct uswap *u = t_create(2, 0);
	struct backend *b;
	struct model m;
	char err[128];
	uint64_t ops = (uint64_t)(100000 * t_env_scale()) / 2 + 1000;

	t_async_reset();
	t_eq(backend_faulty_open(ram(64 * USWAP_CLUSTER_SLOTS), &fo, &b, err, sizeof(err)), 0);
	swapon_backend(u, b, 10);
	swapon_backend(u, healthy, 0);
	model_init(&m, u, 8192);
	run_threads(&m, 2, ops, t_env_seed(), fn);
	t_assert_no_async_failure(how);
	drain_faulted(u, &m, how);
}

static void test_faults_lose_no_page_and_never_return_wrong_data(void **state)
{
	faulted_traffic(traffic, ram(HEALTHY_SLOTS), "");
}

static void test_batches_with_faults_lose_no_page(void **state)
{
	faulted_traffic(batch_traffic, t_backend_open(T_FILE_URING, HEALTHY_SLOTS, false),
			" in batches");
}

/* Swapoff of device @top of @u (swapped on by the caller, with room
 * below it) while 2 threads run @fn's traffic: every page moves through
 * the owner's callback and reads back intact, and the device is gone. */
static void swapoff_under(struct uswap *u, int top, void *(*fn)(void *), const char *how)
{
	struct swapoff_arg s = { .u = u, .type = top };
	struct uswap_device_info info;
	size_t nr = 12000;
	struct model m;
	pthread_t th;

	t_async_reset();
	model_init(&m, u, nr);
	for (size_t i = 0; i < nr; i++)
		obj_swap_out(&m, &m.obj[i]);
	uswap_set_unuse(u, unuse_move, &m);
	pthread_create(&th, NULL, do_swapoff, &s);
	run_threads(&m, 2, (uint64_t)(50000 * t_env_scale()) + 1000, t_env_seed(), fn);
	pthread_join(th, NULL);
	t_assert_no_async_failure(how);
	t_eq(s.rc, 0);
	t_eq(uswap_device_info(u, s.type, &info), -ENOENT);
	model_drain(&m);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	model_free(&m);
	uswap_destroy(u);
}

/* Swapoff of the top device while 2 threads swap in batches. */
static void test_swapoff_under_batched_traffic_moves_every_page(void **state)
{
	struct uswap *u = t_create(2, 0);
	int top = swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), 10);

	swapon_backend(u, t_backend_open(T_FILE_URING, 64 * USWAP_CLUSTER_SLOTS, false), 5);
	swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), 5);
	swapoff_under(u, top, batch_traffic, "batched traffic during swapoff");
}

/* Queued traffic (up to 32 requests in flight per thread, answers in any
 * order) from 2 threads with 1 % of writes and reads failing, on a faulty
 * ram device above an io_uring file: no page lost, no wrong data. */
static void test_queued_traffic_with_faults_loses_no_page(void **state)
{
	faulted_traffic(queued_traffic, t_backend_open(T_FILE_URING, HEALTHY_SLOTS, false),
			" through queues");
}

/* Swapoff of an io_uring file device while 2 threads keep requests in
 * flight on it through their queues: swapoff waits for those in flight. */
static void test_swapoff_under_queued_traffic_moves_every_page(void **state)
{
	struct uswap *u = t_create(2, 0);
	int top = swapon_backend(u, t_backend_open(T_FILE_URING, 64 * USWAP_CLUSTER_SLOTS,
						   false), 10);

	swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), 5);
	swapoff_under(u, top, queued_traffic, "queued traffic during swapoff");
}

/* Batched traffic from 2 threads on an NBD export over two connections
 * (nbdkit's memory plugin, multi-conn), a ram device below: one thread's
 * completions may arrive while the other polls; no page lost or wrong. */
static void test_batches_over_nbd_lose_no_page(void **state)
{
	struct uswap *u;
	struct t_nbdkit s = { 0 };
	char spec[256], err[512];
	struct model m;
	uint64_t ops = (uint64_t)(40000 * t_env_scale()) + 1000;

	t_need_kind(DEV_KIND_NBD);
	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_async_reset();
	u = t_create(2, 0);
	t_nbdkit_start(&s, "256M", false);
	snprintf(spec, sizeof(spec), "%s:conns=2:prio=10", s.uri);
	if (uswap_swapon_spec(u, spec, err, sizeof(err)) < 0)
		fail_msg("swapon %s: %s", spec, err);
	swapon_backend(u, ram(64 * USWAP_CLUSTER_SLOTS), 0);
	model_init(&m, u, 8192);
	run_threads(&m, 2, ops, t_env_seed(), batch_traffic);
	t_assert_no_async_failure("batched traffic over nbd");
	model_drain(&m);
	printf("# %llu pages verified over nbd\n", (unsigned long long)m.verified);
	t_eq_u64(m.read_errors, 0);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	model_free(&m);
	uswap_destroy(u);
	t_nbdkit_stop(&s);
}

/* Batched traffic from 2 threads on a zram device that writes its pages
 * back to a ram device all the time (the model's pages are random, so
 * every one is huge, and the budget is small): writes, reads and frees
 * race the writeback thread's moves; no page lost or wrong. */
static void test_batches_over_zram_writeback_lose_no_page(void **state)
{
	struct uswap *u = t_create(2, 0);
	struct uswap_backend *ub;
	struct zram_wb_stat wb;
	char err[256];
	struct model m;
	int prio;
	uint64_t ops = (uint64_t)(20000 * t_env_scale()) + 1000;

	t_async_reset();
	t_eq(uswap_backend_open("writeback:huge,budget=4M:zram:64M|ram:64M", &ub, &prio,
				err, sizeof(err)), 0);
	swapon_backend(u, (struct backend *)ub, 0);
	model_init(&m, u, 8192);
	/* Rounds until the writeback thread has scanned 10 times (2 s) and
	 * moved pages, whatever the machine's speed. */
	for (int round = 0; round < 200; round++) {
		run_threads(&m, 2, ops, t_env_seed() + (uint64_t)round, batch_traffic);
		t_eq(zram_wb_stat((struct backend *)ub, &wb), 0);
		if (t_async_failed() || (wb.scans >= 10 && wb.bd_writes > 0))
			break;
	}
	t_assert_no_async_failure("batched traffic over zram writeback");
	model_drain(&m);
	printf("# %llu pages verified; %llu written back, %llu read from below, %llu scans\n",
	       (unsigned long long)m.verified, (unsigned long long)wb.bd_writes,
	       (unsigned long long)wb.bd_reads, (unsigned long long)wb.scans);
	t_true(wb.bd_writes > 0); /* the moves really raced the traffic */
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	model_free(&m);
	uswap_destroy(u);
}

struct publish_race {
	struct uswap *u;
	_Atomic bool stop;
	_Atomic uint64_t swap_outs, unsupported, other_errors;
};

/* Swap a page out and free it again, as fast as possible. */
static void *swap_out_loop(void *arg)
{
	struct publish_race *r = arg;
	char page[PAGE];
	uswap_entry_t e;
	uint64_t rng = 7;

	while (!atomic_load(&r->stop)) {
		stamp(page, t_rand(&rng), 0);
		int rc = uswap_swap_out(r->u, page, 0, 0, &e);

		atomic_fetch_add(&r->swap_outs, 1);
		if (rc == -EOPNOTSUPP)
			atomic_fetch_add(&r->unsupported, 1);
		else if (rc)
			atomic_fetch_add(&r->other_errors, 1);
		else if ((rc = uswap_swap_free(r->u, e, 0)))
			t_fail_async("swap_free: %s", t_errname(rc));
	}
	return NULL;
}

/* Found by an outside tester (item 3 of the reliability report): a device swapped on while another thread
 * swaps out was found in its ring before its backend was attached, and
 * ~146,000 swap-outs failed with -EOPNOTSUPP. A device must be published
 * complete: no swap-out may fail while the base device has room. */
static void test_swap_out_never_finds_a_device_without_its_backend(void **state)
{
	struct publish_race r = { .u = t_create(2, 0) };
	unsigned int cycles = (unsigned int)(200 * t_env_scale()) + 10;
	char err[256];
	pthread_t th;

	t_async_reset();
	if (uswap_swapon_spec(r.u, "zram:16M", err, sizeof(err)) < 0)
		fail_msg("swapon zram:16M: %s", err);
	pthread_create(&th, NULL, swap_out_loop, &r);
	for (unsigned int i = 0; i < cycles; i++) {
		int type = uswap_swapon_spec(r.u, "zram:16M:prio=10", err, sizeof(err));

		if (type < 0) {
			atomic_store(&r.stop, true);
			pthread_join(th, NULL);
			fail_msg("swapon zram:16M:prio=10: %s", err);
		}
		sched_yield();
		int rc;

		while ((rc = uswap_swapoff(r.u, type)) == -EBUSY)
			sched_yield(); /* the loop holds one of its slots */
		t_eq(rc, 0);
	}
	atomic_store(&r.stop, true);
	pthread_join(th, NULL);
	t_assert_no_async_failure("swap-out loop");
	printf("# %llu swap-outs over %u swapon/swapoff cycles\n",
	       (unsigned long long)atomic_load(&r.swap_outs), cycles);
	t_eq_u64(atomic_load(&r.unsupported), 0);
	t_eq_u64(atomic_load(&r.other_errors), 0);
	t_eq_u64(t_total_inuse(r.u), 0);
	t_check(r.u);
	uswap_destroy(r.u);
}

/* Batched and queued traffic from 2 threads on zram with 2 compression
 * workers (completions on the workers' threads, the submitters helping):
 * no page lost or wrong, and the workers really ran requests. */
static void test_batches_and_queues_over_zram_workers_lose_no_page(void **state)
{
	struct uswap *u = t_create(2, 0);
	struct uswap_backend *ub;
	uint64_t by_workers = 0;
	char err[256];
	struct model m;
	int prio;
	uint64_t ops = (uint64_t)(50000 * t_env_scale()) + 1000;

	t_async_reset();
	t_eq(uswap_backend_open("zram:64M:workers=2", &ub, &prio, err, sizeof(err)), 0);
	swapon_backend(u, (struct backend *)ub, 0);
	model_init(&m, u, 8192);
	run_threads(&m, 2, ops, t_env_seed(), batch_traffic);
	run_threads(&m, 2, ops, t_env_seed() + 1, queued_traffic);
	t_assert_no_async_failure("traffic over zram workers");
	t_eq(zram_nr_workers((struct backend *)ub, &by_workers), 2);
	model_drain(&m);
	printf("# %llu pages verified; %llu requests ran on the workers\n",
	       (unsigned long long)m.verified, (unsigned long long)by_workers);
	t_true(by_workers > 0);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	model_free(&m);
	uswap_destroy(u);
}

/* Queued and batched traffic from 2 threads on crypt over an io_uring
 * file: pages are opened in completions on whichever thread reaps the
 * ring; no page lost or wrong. */
static void test_queues_over_crypt_on_a_file_lose_no_page(void **state)
{
	char *path, spec[256], err[256];
	uint64_t ops = (uint64_t)(30000 * t_env_scale()) + 1000;
	struct uswap_backend *ub;
	struct uswap *u;
	struct model m;
	int prio;

	t_need_kind(DEV_KIND_CRYPT);
	path = t_dev_swapfile(64 * USWAP_CLUSTER_SLOTS);
	if (!path) {
		t_skip("mkswap not installed");
		return;
	}
	t_async_reset();
	u = t_create(2, 0);
	snprintf(spec, sizeof(spec), "crypt:file:%s", path);
	t_eq(uswap_backend_open(spec, &ub, &prio, err, sizeof(err)), 0);
	swapon_backend(u, (struct backend *)ub, 0);
	model_init(&m, u, 8192);
	run_threads(&m, 2, ops, t_env_seed(), queued_traffic);
	run_threads(&m, 2, ops, t_env_seed() + 1, batch_traffic);
	t_assert_no_async_failure("traffic over crypt");
	model_drain(&m);
	printf("# %llu pages verified over crypt:file\n", (unsigned long long)m.verified);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	model_free(&m);
	uswap_destroy(u);
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_faults_lose_no_page_and_never_return_wrong_data),
		cmocka_unit_test(test_swapoff_moves_every_used_slot_under_traffic),
		cmocka_unit_test(test_swapoff_without_owner_is_refused_while_busy),
		cmocka_unit_test(test_swap_out_never_finds_a_device_without_its_backend),
		cmocka_unit_test(test_batches_with_faults_lose_no_page),
		cmocka_unit_test(test_swapoff_under_batched_traffic_moves_every_page),
		cmocka_unit_test(test_queued_traffic_with_faults_loses_no_page),
		cmocka_unit_test(test_swapoff_under_queued_traffic_moves_every_page),
		cmocka_unit_test(test_batches_over_nbd_lose_no_page),
		cmocka_unit_test(test_batches_over_zram_writeback_lose_no_page),
		cmocka_unit_test(test_batches_and_queues_over_zram_workers_lose_no_page),
		cmocka_unit_test(test_queues_over_crypt_on_a_file_lose_no_page),
	};
	return t_run(tests);
}
