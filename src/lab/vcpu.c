// SPDX-License-Identifier: MIT
/*
 * vcpu.c - virtual CPUs: many per-CPU indexes multiplexed on few threads.
 *
 * The seeds were measured on 96- and 256-CPU machines, where every CPU has
 * its own cached cluster, ring reader and slot cache, and where the shared
 * locks are shared by that many CPUs. This host has two. A thread here
 * plays several CPUs in turn: before each slice it sets its per-CPU index
 * with uswap_thread_set_cpu(), so the allocator keeps 96 sets of per-CPU
 * state and the counts (slow paths, list moves, rotations, fallbacks)
 * are those of 96 CPUs whatever the host has. What cannot be emulated is
 * 96-way contention itself: times stay two-core times.
 *
 * Determinism: a vCPU's operations are decided by its own state only, and
 * a thread visits its vCPUs in a fixed order, so one thread gives the
 * same interleaving, and the same counts, on every run and every host.
 * Several threads meet at a barrier after every round (one slice of each
 * of their vCPUs), so none runs ahead; what each vCPU's own state decides
 * (its work, its ring rotations) is the same for any thread count, and
 * costs that depend on how CPUs interleave (slow paths, list moves) vary
 * with the thread count about as much as with --seed (tests/test_lab.c).
 * Nothing depends on the host's core count.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

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
