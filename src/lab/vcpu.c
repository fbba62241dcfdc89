// SPDX-License-Identifier: MIT
/*
 * vcpu.c - virtual CPUs: many per-CPU indexes multiplexed on few threads,
 * in wall-clock mode (lab_vcpu_run()) or in virtual time
 * (lab_vcpu_run_virtual(), the default; the model is vtime.c's).
 *
 * The seeds were measured on 96- and 256-CPU machines, where every CPU has
 * its own cached cluster, ring reader and slot cache, and where the shared
 * locks are shared by that many CPUs. This host has two. A thread here
 * plays several CPUs in turn: before each slice (or, in virtual time,
 * each operation) it sets its per-CPU index with uswap_thread_set_cpu(),
 * so the allocator keeps 96 sets of per-CPU state and the counts (slow
 * paths, list moves, rotations, fallbacks) are those of 96 CPUs whatever
 * the host has.
 *
 * Wall-clock mode: a thread visits its vCPUs a slice at a time in a fixed
 * order, and threads meet at a barrier after every round (one slice of
 * each of their vCPUs), so none runs ahead. With one thread the
 * interleaving, and so every count, is exactly reproducible; with more,
 * what each vCPU's own state decides stays the same while costs that
 * depend on how CPUs interleave vary about as much as with --seed. Times
 * and contention are this host's: 96-way contention cannot happen here.
 *
 * Virtual time: the vCPU with the smallest clock runs one operation, then
 * the next smallest, and so on; vCPU v belongs to thread v % T and the
 * threads hand the turn to each other, so the order of operations, and
 * every result, is the same for any thread count. Times and contention
 * are the model's, for the vCPUs' machine.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_internal.h"

uint64_t lab_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t lab_rand_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)lab_rand(state) * n) >> 64);
}

struct vcpu_run {
	const struct lab_vcpu_config *cfg;
	lab_step_fn step;
	lab_round_fn round;
	void *ctx;
	pthread_mutex_t go_lock; /* go: every thread starts together */
	pthread_cond_t go_cond;
	bool go;                 /* go_lock */
	/* Round barrier, under go_lock: no thread starts round r + 1 before
	 * every thread still running has finished round r (one slice of each
	 * of its vCPUs), so no thread runs ahead of the others, whatever the
	 * host scheduler does. Waiters sleep: a round is a millisecond or
	 * more, and the host may have fewer cores than threads. A thread
	 * with nothing left leaves it. */
	unsigned int active;     /* threads still running rounds */
	unsigned int arrived;    /* of them, done with this round */
	uint64_t generation;     /* rounds completed by everyone */
	atomic_bool stop;        /* a step failed: everyone leaves */
	atomic_int err;          /* the first failure */
};

struct vcpu_thread {
	struct vcpu_run *run;
	unsigned int id;
	pthread_t tid;
};

static void run_fail(struct vcpu_run *run, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&run->err, &zero, err);
	atomic_store(&run->stop, true);
}

/*
 * round_end() - this thread is done with the current round (@last: and
 * with every round: it leaves). The thread that completes the round, the
 * last to arrive or leave, calls the round hook while every other thread
 * waits or is gone, so the hook sees the same state at a round boundary
 * whatever the thread count; then everyone goes on.
 */
static void round_end(struct vcpu_run *run, bool last)
{
	uint64_t gen;

	pthread_mutex_lock(&run->go_lock);
	gen = run->generation;
	if (last)
		run->active--;
	else
		run->arrived++;
	if (run->arrived == run->active) {
		if (run->round)
			run->round(run->ctx, gen);
		run->arrived = 0;
		run->generation++;
		pthread_cond_broadcast(&run->go_cond);
	} else if (!last) {
		while (gen == run->generation)
			pthread_cond_wait(&run->go_cond, &run->go_lock);
	}
	pthread_mutex_unlock(&run->go_lock);
}

/* One slice of @vcpu. Return: true while the vCPU has more to do. */
static bool run_slice(struct vcpu_run *run, unsigned int vcpu, unsigned int id)
{
	uswap_thread_set_cpu((int)vcpu);
	for (unsigned int i = 0; i < run->cfg->slice_ops; i++) {
		int rc = run->step(run->ctx, vcpu, id);

		if (rc < 0) {
			run_fail(run, rc);
			return false;
		}
		if (rc == 0)
			return false;
	}
	return true;
}

static void *vcpu_thread_main(void *arg)
{
	struct vcpu_thread *t = arg;
	struct vcpu_run *run = t->run;
	const struct lab_vcpu_config *cfg = run->cfg;
	unsigned int nr_own = (cfg->nr_vcpus - t->id + cfg->nr_threads - 1) /
			      cfg->nr_threads;
	bool *done = calloc(nr_own ? nr_own : 1, sizeof(*done));
	unsigned int left = nr_own;

	pthread_mutex_lock(&run->go_lock);
	while (!run->go)
		pthread_cond_wait(&run->go_cond, &run->go_lock);
	pthread_mutex_unlock(&run->go_lock);
	if (!done) {
		run_fail(run, -ENOMEM);
		round_end(run, true);
		return NULL;
	}
	while (left && !atomic_load_explicit(&run->stop, memory_order_relaxed)) {
		for (unsigned int k = 0; k < nr_own; k++) {
			if (!done[k] && !run_slice(run, t->id + k * cfg->nr_threads, t->id)) {
				done[k] = true;
				left--;
			}
		}
		if (left)
			round_end(run, false);
	}
	round_end(run, true);
	uswap_thread_set_cpu(-1);
	free(done);
	return NULL;
}

static int config_check(const struct lab_vcpu_config *cfg)
{
	if (!cfg->nr_vcpus || cfg->nr_vcpus > USWAP_MAX_CPUS)
		return -EINVAL;
	if (!cfg->nr_threads || cfg->nr_threads > LAB_MAX_THREADS ||
	    cfg->nr_threads > cfg->nr_vcpus)
		return -EINVAL;
	return cfg->slice_ops ? 0 : -EINVAL;
}

int lab_vcpu_run(const struct lab_vcpu_config *cfg, lab_step_fn step,
		 lab_round_fn round, void *ctx)
{
	struct vcpu_thread threads[LAB_MAX_THREADS];
	struct vcpu_run run = { .cfg = cfg, .step = step, .round = round, .ctx = ctx };
	unsigned int started = 0;
	int err = config_check(cfg);

	if (err)
		return err;
	atomic_init(&run.stop, false);
	atomic_init(&run.err, 0);
	pthread_mutex_init(&run.go_lock, NULL);
	run.active = cfg->nr_threads;
	pthread_cond_init(&run.go_cond, NULL);
	/* Thread 0 is the caller itself: one thread means no thread at all. */
	for (unsigned int i = 1; i < cfg->nr_threads; i++) {
		threads[i] = (struct vcpu_thread){ .run = &run, .id = i };
		if (pthread_create(&threads[i].tid, NULL, vcpu_thread_main, &threads[i])) {
			run_fail(&run, -EAGAIN); /* the started ones just leave */
			break;
		}
		started++;
	}
	pthread_mutex_lock(&run.go_lock);
	run.go = true;
	pthread_cond_broadcast(&run.go_cond);
	pthread_mutex_unlock(&run.go_lock);
	threads[0] = (struct vcpu_thread){ .run = &run, .id = 0 };
	vcpu_thread_main(&threads[0]);
	for (unsigned int i = 1; i <= started; i++)
		pthread_join(threads[i].tid, NULL);
	pthread_cond_destroy(&run.go_cond);
	pthread_mutex_destroy(&run.go_lock);
	return atomic_load(&run.err);
}

/* ------------------------------------------------------------------------
 * Virtual time: the smallest clock runs next
 * ---------------------------------------------------------------------- */

#define TURN_DONE (-1)

struct vt_run {
	const struct lab_vcpu_config *cfg;
	struct lab_vtime *vt;
	lab_step_fn step;
	lab_round_fn round;
	void *ctx;
	unsigned int *heap;      /* runnable vCPUs, a min-heap on (clock, id) */
	unsigned int nr_heap;
	uint64_t ops, per_round;
	_Atomic int turn;        /* the thread that may run, or TURN_DONE */
	int err;                 /* written by the thread whose turn it is */
};

static bool vt_before(const struct lab_vtime *vt, unsigned int a, unsigned int b)
{
	return vt->clock[a] < vt->clock[b] || (vt->clock[a] == vt->clock[b] && a < b);
}

/* The root's clock grew (or the root left): restore the heap. */
static void heap_sift_down(struct vt_run *r, unsigned int i)
{
	for (;;) {
		unsigned int l = 2 * i + 1, m = i, tmp;

		if (l < r->nr_heap && vt_before(r->vt, r->heap[l], r->heap[m]))
			m = l;
		if (l + 1 < r->nr_heap && vt_before(r->vt, r->heap[l + 1], r->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		tmp = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = tmp;
		i = m;
	}
}

/* Wait for this thread's turn. Spin briefly, then yield: the host may
 * have fewer cores than threads. Return: false when the run is over. */
static bool vt_wait_turn(struct vt_run *r, int id)
{
	unsigned int spins = 0;
	int t;

	while ((t = atomic_load_explicit(&r->turn, memory_order_acquire)) != id) {
		if (t == TURN_DONE)
			return false;
		if (++spins < 128)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	return true;
}

/* One operation of the earliest vCPU, if it is this thread's. Return:
 * the thread whose turn it is next. */
static int vt_run_one(struct vt_run *r, int id)
{
	unsigned int v, T = r->cfg->nr_threads;
	int rc;

	if (!r->nr_heap || r->err)
		return TURN_DONE;
	v = r->heap[0];
	if ((int)(v % T) != id)
		return (int)(v % T);
	r->vt->cur = v;
	r->vt->horizon = r->vt->clock[v];
	uswap_thread_set_cpu((int)v);
	rc = r->step(r->ctx, v, (unsigned int)id);
	if (rc < 0 || r->vt->failed) {
		r->err = rc < 0 ? rc : r->vt->failed;
		return TURN_DONE;
	}
	if (rc == 0)
		r->heap[0] = r->heap[--r->nr_heap];
	heap_sift_down(r, 0);
	if (r->round && ++r->ops % r->per_round == 0)
		r->round(r->ctx, r->ops / r->per_round - 1);
	return id;
}

static void vt_thread(struct vt_run *r, int id)
{
	uswap_thread_set_probe(&r->vt->probe);
	while (vt_wait_turn(r, id)) {
		int next;

		do
			next = vt_run_one(r, id);
		while (next == id);
		atomic_store_explicit(&r->turn, next, memory_order_release);
	}
	uswap_thread_set_probe(NULL);
	uswap_thread_set_cpu(-1);
}

struct vt_thread_arg {
	struct vt_run *run;
	int id;
};

static void *vt_thread_main(void *arg)
{
	struct vt_thread_arg *a = arg;

	vt_thread(a->run, a->id);
	return NULL;
}

int lab_vcpu_run_virtual(const struct lab_vcpu_config *cfg, struct lab_vtime *vt,
			 lab_step_fn step, lab_round_fn round, void *ctx)
{
	struct vt_thread_arg args[LAB_MAX_THREADS];
	pthread_t tids[LAB_MAX_THREADS];
	struct vt_run r = { .cfg = cfg, .vt = vt, .step = step, .round = round, .ctx = ctx };
	unsigned int started = 0;
	int err = config_check(cfg);

	if (err)
		return err;
	if (vt->nr_vcpus != cfg->nr_vcpus)
		return -EINVAL;
	r.heap = malloc(cfg->nr_vcpus * sizeof(*r.heap));
	if (!r.heap)
		return -ENOMEM;
	/* All clocks start equal: ascending ids are already a heap. */
	for (unsigned int v = 0; v < cfg->nr_vcpus; v++)
		r.heap[v] = v;
	r.nr_heap = cfg->nr_vcpus;
	r.per_round = (uint64_t)cfg->nr_vcpus * cfg->slice_ops;
	atomic_init(&r.turn, 0);
	for (unsigned int i = 1; i < cfg->nr_threads; i++) {
		args[i] = (struct vt_thread_arg){ .run = &r, .id = (int)i };
		if (pthread_create(&tids[i], NULL, vt_thread_main, &args[i])) {
			r.err = -EAGAIN;
			break;
		}
		started++;
	}
	if (!r.err)
		vt_thread(&r, 0);
	atomic_store_explicit(&r.turn, TURN_DONE, memory_order_release);
	for (unsigned int i = 1; i <= started; i++)
		pthread_join(tids[i], NULL);
	free(r.heap);
	return r.err;
}
