// SPDX-License-Identifier: MIT
/*
 * workload.c - one arm of an experiment: build the swap system under a
 * policy, run a workload on the virtual CPUs, and keep the books every
 * workload shares (folio allocation with the kernel's split on -E2BIG,
 * per-device use, samples, progress).
 *
 * Per-device use is counted here, from the entries the workload holds,
 * not read from uswap_device_info(): that call takes the global and
 * device locks, which are what the experiments count.
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
}

uint64_t lab_device_slots_for(uint64_t demand, double fill, unsigned int nr)
{
	uint64_t per = (uint64_t)ceil((double)demand / fill / nr);
	uint64_t clusters = (per + USWAP_CLUSTER_SLOTS - 1) / USWAP_CLUSTER_SLOTS;

	if (clusters < USWAP_MIN_CLUSTERS)
		clusters = USWAP_MIN_CLUSTERS;
	/* + 1: slot 0 is the header, so a device of whole clusters has one
	 * usable slot less; round the demand into the next cluster instead. */
	return clusters * USWAP_CLUSTER_SLOTS;
}

/* ------------------------------------------------------------------------
 * Parameters as text (`uswap lab run --workload`)
 * ---------------------------------------------------------------------- */

enum param_type { P_UINT, P_U64, P_DOUBLE };

struct param_desc {
	const char *key;
	enum lab_workload_kind kind; /* which workload it belongs to */
	enum param_type type;
	size_t offset;               /* in struct lab_workload */
};

#define WP(key, kind, type, field) { key, kind, type, offsetof(struct lab_workload, field) }

static const struct param_desc params[] = {
	WP("tasks", LAB_WL_USEMEM, P_UINT, usemem.tasks),
	WP("size", LAB_WL_USEMEM, P_U64, usemem.size_slots),
	WP("order", LAB_WL_USEMEM, P_UINT, usemem.order),
	WP("rounds", LAB_WL_USEMEM, P_UINT, usemem.rounds),
	WP("fill", LAB_WL_USEMEM, P_DOUBLE, usemem.fill),
	WP("jobs", LAB_WL_KBUILD, P_UINT, kbuild.jobs_per_vcpu),
	WP("job_min", LAB_WL_KBUILD, P_UINT, kbuild.job_min),
	WP("job_max", LAB_WL_KBUILD, P_UINT, kbuild.job_max),
	WP("long_pct", LAB_WL_KBUILD, P_UINT, kbuild.long_pct),
	WP("long_cap", LAB_WL_KBUILD, P_UINT, kbuild.long_cap),
	WP("order4_pct", LAB_WL_KBUILD, P_UINT, kbuild.order4_pct),
	WP("swapin_pct", LAB_WL_KBUILD, P_UINT, kbuild.swapin_pct),
	WP("fill", LAB_WL_KBUILD, P_DOUBLE, kbuild.fill),
	WP("tasks", LAB_WL_SWAPIN, P_UINT, swapin.tasks),
	WP("size", LAB_WL_SWAPIN, P_U64, swapin.size_slots),
	WP("fill", LAB_WL_SWAPIN, P_DOUBLE, swapin.fill),
	WP("readahead", LAB_WL_SWAPIN, P_UINT, swapin.readahead),
	WP("settle_us", LAB_WL_SWAPIN, P_DOUBLE, swapin.seek_settle_us),
	WP("us_per_mib", LAB_WL_SWAPIN, P_DOUBLE, swapin.seek_us_per_mib),
	WP("rotation_us", LAB_WL_SWAPIN, P_DOUBLE, swapin.rotation_us),
	WP("media_mb_s", LAB_WL_SWAPIN, P_DOUBLE, swapin.media_mb_s),
};

static int param_set(struct lab_workload *wl, const struct param_desc *d,
		     const char *val)
{
	char *end;
	void *field = (char *)wl + d->offset;

	errno = 0;
	if (d->type == P_DOUBLE) {
		double v = strtod(val, &end);

		if (end == val || *end || errno || !(v > 0) || v > 1e9)
			return -EINVAL;
		*(double *)field = v;
		return 0;
	}
	if (*val < '0' || *val > '9')
		return -EINVAL;
	unsigned long long v = strtoull(val, &end, 10);

	if (*end || errno || (d->type == P_UINT && v > UINT32_MAX))
		return -EINVAL;
	if (d->type == P_UINT)
		*(unsigned int *)field = (unsigned int)v;
	else
		*(uint64_t *)field = v;
	return 0;
}

static int param_item(struct lab_workload *wl, char *item)
{
	char *eq = strchr(item, '=');

	if (!eq)
		return -EINVAL;
	*eq = '\0';
	if (!strcmp(item, "devices")) {
		unsigned long v = strtoul(eq + 1, NULL, 10);

		if (!v || v > USWAP_MAX_DEVICES)
			return -EINVAL;
		wl->nr_devices = (unsigned int)v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (params[i].kind == wl->kind && !strcmp(params[i].key, item))
			return param_set(wl, &params[i], eq + 1);
	return -EINVAL;
}

int lab_workload_parse(const char *s, struct lab_workload *wl)
{
	char buf[512], *save = NULL;

	if (!*s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (char *item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		int err = param_item(wl, item);

		if (err)
			return err;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Folios
 * ---------------------------------------------------------------------- */

static void use_add(struct lab_thread_stat *ts, uswap_entry_t e, int64_t nr)
{
	_Atomic int64_t *u = &ts->used[uswap_entry_type(e)];

	/* Only this thread writes it: a relaxed load and store, no lock. */
	atomic_store_explicit(u, atomic_load_explicit(u, memory_order_relaxed) + nr,
			      memory_order_relaxed);
}

static void ops_inc(struct lab_thread_stat *ts)
{
	atomic_store_explicit(&ts->ops,
			      atomic_load_explicit(&ts->ops, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static int slot_alloc(struct lab_env *env, struct lab_thread_stat *ts,
		      unsigned int order, struct lab_slot *s)
{
	uswap_entry_t e;
	int err = uswap_alloc(env->u, order, &e);

	if (err)
		return err;
	ts->allocs++;
	s->val = e.val;
	s->order = order;
	use_add(ts, e, (int64_t)1 << order);
	return 0;
}

static int slot_free(struct lab_env *env, struct lab_thread_stat *ts,
		     const struct lab_slot *s)
{
	uswap_entry_t e = { s->val };
	int err = uswap_put_folio(env->u, e, s->order);

	if (err)
		return err;
	ts->frees++;
	use_add(ts, e, -((int64_t)1 << s->order));
	return 0;
}

/* The entry of page @page of @f. */
static uswap_entry_t page_entry(const struct lab_folio *f, unsigned int page)
{
	if (f->nr == 1) {
		uswap_entry_t e = { f->s[0].val };

		return uswap_entry(uswap_entry_type(e), uswap_entry_offset(e) + page);
	}
	return (uswap_entry_t){ f->s[page].val };
}

/* Drop the references of a mapped folio's remaining pages: one call per
 * whole run, one per page once some were freed alone. */
static int free_mapped(struct lab_env *env, struct lab_thread_stat *ts,
		       struct lab_folio *f)
{
	unsigned int pages = 1u << f->order;
	int err;

	if (f->nr == 1 && !f->gone) {
		err = uswap_free(env->u, page_entry(f, 0), pages);
		if (err)
			return err;
		ts->frees++;
		use_add(ts, page_entry(f, 0), -(int64_t)pages);
		return 0;
	}
	for (unsigned int i = 0; i < pages; i++) {
		if (f->gone & (1u << i))
			continue;
		err = uswap_free(env->u, page_entry(f, i), 1);
		if (err)
			return err;
		ts->frees++;
		use_add(ts, page_entry(f, i), -1);
	}
	return 0;
}

int lab_folio_free(struct lab_env *env, unsigned int thread, struct lab_folio *f)
{
	struct lab_thread_stat *ts = &env->ts[thread];
	int err = 0;

	if (f->nr && f->mapped)
		err = free_mapped(env, ts, f);
	else
		for (unsigned int i = 0; i < f->nr && !err; i++)
			err = slot_free(env, ts, &f->s[i]);
	f->nr = 0;
	f->mapped = false;
	f->gone = 0;
	return err;
}

int lab_folio_map(struct lab_env *env, unsigned int thread, struct lab_folio *f)
{
	unsigned int pages = 1u << f->order;
	int err;

	if (!f->nr || f->mapped)
		return 0;
	for (unsigned int i = 0; i < pages; i++) {
		err = uswap_dup(env->u, page_entry(f, i));
		if (err)
			return err;
	}
	for (unsigned int i = 0; i < f->nr; i++) {
		err = uswap_put_folio(env->u, (uswap_entry_t){ f->s[i].val }, f->s[i].order);
		if (err)
			return err;
	}
	f->mapped = true;
	return 0;
}

int lab_folio_free_page(struct lab_env *env, unsigned int thread,
			struct lab_folio *f, unsigned int page)
{
	struct lab_thread_stat *ts = &env->ts[thread];
	int err;

	if (!f->nr || !f->mapped || page >= (1u << f->order) || (f->gone & (1u << page)))
		return -ENOENT;
	err = uswap_free(env->u, page_entry(f, page), 1);
	if (err)
		return err;
	ts->frees++;
	use_add(ts, page_entry(f, page), -1);
	f->gone |= (uint16_t)(1u << page);
	/* The last page gone frees the folio. */
	if (f->gone == (uint16_t)((1u << (1u << f->order)) - 1)) {
		f->nr = 0;
		f->mapped = false;
		f->gone = 0;
	}
	return 0;
}

int lab_folio_alloc(struct lab_env *env, unsigned int thread,
		    unsigned int order, struct lab_folio *f)
{
	struct lab_thread_stat *ts = &env->ts[thread];
	int err;

	f->nr = 0;
	f->order = order;
	f->mapped = false;
	f->gone = 0;
	ts->folios++;
	ts->req[order]++;
	ops_inc(ts);
	err = slot_alloc(env, ts, order, &f->s[0]);
	if (!err) {
		f->nr = 1;
		ts->bytes += (uint64_t)USWAP_PAGE_SIZE << order;
		return 0;
	}
	if (err == -ENOSPC)
		ts->enospc++;
	if (err != -E2BIG || order > LAB_FOLIO_MAX_SPLIT_ORDER)
		return err;
	/* -E2BIG: the kernel splits the folio and swaps its pages out one
	 * by one (swpout_fallback); so does the lab. */
	ts->split[order]++;
	for (unsigned int i = 0; i < (1u << order); i++) {
		err = slot_alloc(env, ts, 0, &f->s[i]);
		if (err) {
			if (err == -ENOSPC)
				ts->enospc++;
			lab_folio_free(env, thread, f);
			return err;
		}
		f->nr = i + 1;
	}
	ts->bytes += (uint64_t)USWAP_PAGE_SIZE << order;
	return 0;
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
	err = lab_vcpu_run(&env->opt->vcpu, env->ops->step, lab_env_round, env);
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
