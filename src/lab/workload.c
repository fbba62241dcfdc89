// SPDX-License-Identifier: MIT
/*
 * workload.c - one arm of an experiment: build the swap system under a
 * policy, run a workload on the virtual CPUs around two statistics
 * snapshots, sample per-device use and print progress. The folios the
 * workloads move are folio.c's; their parameters as text, params.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/workload.h"

#define PROGRESS_AFTER_NS (2 * 1000000000ull) /* quiet for short arms */
#define PROGRESS_EVERY_NS (1 * 1000000000ull)
#define SAMPLES_WANTED    512

uint64_t lab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void lab_options_default(struct lab_options *o)
{
	memset(o, 0, sizeof(*o));
	o->vcpu.nr_vcpus = LAB_DEFAULT_VCPUS;
	o->vcpu.nr_threads = LAB_DEFAULT_THREADS;
	o->vcpu.slice_ops = LAB_DEFAULT_SLICE;
	o->seed = 1;
	o->scale = 1.0;
	lab_cost_default(&o->cost);
}

uint64_t lab_device_slots_for(uint64_t demand, double fill, unsigned int nr)
{
	uint64_t per = (uint64_t)ceil((double)demand / fill / nr);
	uint64_t clusters = (per + USWAP_CLUSTER_SLOTS - 1) / USWAP_CLUSTER_SLOTS;

	if (clusters < USWAP_MIN_CLUSTERS)
		clusters = USWAP_MIN_CLUSTERS;
	/* Whole clusters, the header slot 0 among them (one usable slot
	 * less than the count, which no workload notices). */
	return clusters * USWAP_CLUSTER_SLOTS;
}

/* ------------------------------------------------------------------------
 * Samples and progress (thread 0, once per round)
 * ---------------------------------------------------------------------- */

static uint64_t env_ops(struct lab_env *env)
{
	uint64_t ops = 0;

	for (unsigned int t = 0; t < env->nr_threads; t++)
		ops += atomic_load_explicit(&env->ts[t].ops, memory_order_relaxed);
	return ops;
}

static void take_sample(struct lab_env *env)
{
	struct lab_series *s = env->arm->series;
	unsigned int n;
	uint64_t total = 0;

	if (!s || s->nr_samples >= LAB_MAX_SAMPLES)
		return;
	n = s->nr_samples++;
	s->ops[n] = env_ops(env);
	for (unsigned int d = 0; d < s->nr_devices; d++) {
		int64_t used = 0;

		for (unsigned int t = 0; t < env->nr_threads; t++)
			used += atomic_load_explicit(&env->ts[t].used[d],
						     memory_order_relaxed);
		s->used[n][d] = used > 0 ? (uint64_t)used : 0;
		total += s->used[n][d];
	}
	if (total > env->arm->peak_total) {
		env->arm->peak_total = total;
		memcpy(env->arm->at_peak, s->used[n], sizeof(env->arm->at_peak));
	}
}

static void print_progress(struct lab_env *env, uint64_t now)
{
	double pct = env->total_ops ? 100.0 * (double)env_ops(env) / (double)env->total_ops
				    : 0.0;

	fprintf(env->opt->progress, "lab: %s arm: %.0f%% after %.1f s\n",
		env->arm_name, pct > 100 ? 100 : pct,
		(double)(now - env->start_ns) / 1e9);
	fflush(env->opt->progress);
}

void lab_env_round(void *ctx, uint64_t round)
{
	struct lab_env *env = ctx;
	uint64_t now;

	if (round % env->sample_every == 0)
		take_sample(env);
	if (!env->opt->progress)
		return;
	now = lab_now_ns();
	if (now - env->start_ns < PROGRESS_AFTER_NS ||
	    now - env->last_progress_ns < PROGRESS_EVERY_NS)
		return;
	env->last_progress_ns = now;
	print_progress(env, now);
}

/* ------------------------------------------------------------------------
 * One arm
 * ---------------------------------------------------------------------- */

static const struct lab_wl_ops *wl_ops(enum lab_workload_kind kind)
{
	switch (kind) {
	case LAB_WL_USEMEM: return &lab_usemem_ops;
	case LAB_WL_KBUILD: return &lab_kbuild_ops;
	case LAB_WL_SWAPIN: return &lab_swapin_ops;
	case LAB_WL_REPLAY: return &lab_replay_ops;
	}
	return NULL;
}

/* The seed machines' devices: equal size and priority; device i sits on
 * emulated node i (seed 4: zram0..3 on nodes 0..3 of 8). */
static int env_swapon(struct lab_env *env, const struct uswap_policy *policy)
{
	uint64_t slots = env->ops->device_slots(env->wl, env->opt);
	unsigned int nodes = policy->nr_nodes ? policy->nr_nodes : 1;

	for (unsigned int d = 0; d < env->wl->nr_devices; d++) {
		char name[32];
		struct uswap_swapon_args args = {
			.name = name,
			.nr_slots = slots,
			.prio = env->wl->prio,
			.node = (int)(d % nodes),
		};
		int type;

		snprintf(name, sizeof(name), "lab%u", d);
		type = uswap_swapon(env->u, &args);
		if (type < 0)
			return type;
		env->arm->dev_slots[type] = slots - 1;
	}
	return 0;
}

static int env_init(struct lab_env *env, const struct lab_workload *wl,
		    const struct uswap_policy *policy, const struct lab_options *opt,
		    struct lab_arm *out)
{
	struct uswap_config cfg = {
		.nr_cpus = opt->vcpu.nr_vcpus,
		.policy = *policy,
	};
	int err;

	memset(env, 0, sizeof(*env));
	env->wl = wl;
	env->opt = opt;
	env->arm = out;
	env->ops = wl_ops(wl->kind);
	env->nr_vcpus = opt->vcpu.nr_vcpus;
	env->nr_threads = opt->vcpu.nr_threads;
	if (!env->ops || !wl->nr_devices || wl->nr_devices > USWAP_MAX_DEVICES)
		return -EINVAL;
	env->ts = aligned_alloc(64, env->nr_threads * sizeof(*env->ts));
	out->series = calloc(1, sizeof(*out->series));
	if (!env->ts || !out->series)
		return -ENOMEM;
	memset(env->ts, 0, env->nr_threads * sizeof(*env->ts));
	out->series->nr_devices = wl->nr_devices;
	err = uswap_create(&cfg, &env->u);
	if (err)
		return err;
	err = env_swapon(env, policy);
	if (err)
		return err;
	return env->ops->init(env);
}

static void env_collect(struct lab_env *env)
{
	struct lab_arm *a = env->arm;

	for (unsigned int t = 0; t < env->nr_threads; t++) {
		const struct lab_thread_stat *ts = &env->ts[t];

		a->folios += ts->folios;
		a->allocs += ts->allocs;
		a->frees += ts->frees;
		a->bytes += ts->bytes;
		a->enospc += ts->enospc;
		for (int o = 0; o < USWAP_NR_ORDERS; o++) {
			a->req[o] += ts->req[o];
			a->split[o] += ts->split[o];
		}
	}
}

static void stats_sub(struct uswap_stats *d, const struct uswap_stats *before)
{
	uint64_t *dv = (uint64_t *)&d->swpout[0];
	const uint64_t *bv = (const uint64_t *)&before->swpout[0];
	size_t n = (sizeof(*d) - offsetof(struct uswap_stats, swpout)) / sizeof(uint64_t);

	/* Every field after the header is a uint64_t counter. */
	for (size_t i = 0; i < n; i++)
		dv[i] -= bv[i];
}

/* The vCPUs in virtual time (the default) or, in wall-clock mode, on
 * real threads in real time. */
static int env_run_vcpus(struct lab_env *env)
{
	struct lab_vtime vt;
	int err;

	env->arm->virtual_time = !env->opt->wall_clock;
	if (env->opt->wall_clock && (env->wl->kind == LAB_WL_REPLAY || env->opt->trace_out))
		return -EINVAL; /* a trace's times are virtual */
	if (env->opt->wall_clock)
		return lab_vcpu_run(&env->opt->vcpu, env->ops->step, lab_env_round, env);
	err = lab_vt_init(&vt, &env->opt->cost, env->nr_vcpus, env->opt->seed);
	if (err)
		return err;
	env->vt = &vt;
	if (env->wl->kind == LAB_WL_REPLAY)
		err = lab_replay_run(env, &vt);
	else
		err = lab_vcpu_run_virtual(&env->opt->vcpu, &vt, env->ops->step,
					   lab_env_round, env);
	lab_vt_result(&vt, &env->arm->vt);
	env->vt = NULL;
	lab_vt_fini(&vt);
	return err;
}

static int env_run(struct lab_env *env, const char *arm_name)
{
	struct uswap_stats before = { .size = sizeof(before) };
	uint64_t rounds, start;
	int err;

	env->arm_name = arm_name;
	env->total_ops = env->ops->total_ops(env);
	rounds = env->ops->max_vcpu_ops(env) / env->opt->vcpu.slice_ops + 1;
	env->sample_every = rounds / SAMPLES_WANTED + 1;
	env->arm->delta.size = sizeof(env->arm->delta);
	uswap_stats_get(env->u, &before);
	start = env->start_ns = env->last_progress_ns = lab_now_ns();
	err = env_run_vcpus(env);
	env->arm->elapsed_s = (double)(lab_now_ns() - start) / 1e9;
	uswap_stats_get(env->u, &env->arm->delta);
	stats_sub(&env->arm->delta, &before);
	take_sample(env);
	env_collect(env);
	if (!err && env->ops->after)
		err = env->ops->after(env);
	return err;
}

int lab_run_arm(const struct lab_workload *wl, const struct uswap_policy *policy,
		const struct lab_options *opt, struct lab_arm *out)
{
	struct lab_env env;
	int err;

	memset(out, 0, sizeof(*out));
	out->policy = *policy;
	out->threads = opt->vcpu.nr_threads;
	err = env_init(&env, wl, policy, opt, out);
	if (!err)
		err = env_run(&env, opt->label ? opt->label : "");
	if (env.ops && env.state)
		env.ops->fini(&env);
	uswap_destroy(env.u);
	free(env.ts);
	return err;
}

void lab_arm_fini(struct lab_arm *a)
{
	free(a->series);
	a->series = NULL;
}

uint64_t lab_shared_locks(const struct uswap_stats *st)
{
	return st->locks[USWAP_LOCK_DEVICE].acquired +
	       st->locks[USWAP_LOCK_GLOBAL].acquired;
}

double lab_use_ratio(const struct lab_arm *a)
{
	uint64_t max = 0, min = UINT64_MAX;
	unsigned int nr = a->series ? a->series->nr_devices : 0;

	for (unsigned int d = 0; d < nr; d++) {
		if (a->at_peak[d] > max)
			max = a->at_peak[d];
		if (a->at_peak[d] < min)
			min = a->at_peak[d];
	}
	if (!nr || !max)
		return NAN;
	return min ? (double)max / (double)min : INFINITY;
}
