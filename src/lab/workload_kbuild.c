// SPDX-License-Identifier: MIT
/*
 * workload_kbuild.c - a kernel-build-like mix: `make -j96` under a memory
 * cgroup, as swap sees it.
 *
 * Derived from seeds 1 and 2 (time make -j96 in a 768 MiB - 1152 MiB
 * memcg, 10 GiB zram, 4 KiB pages or 64 KiB mTHP) and seed 5 (make -j96
 * in 2-3 GiB memcgs on eight zram devices):
 *
 *  - 96 jobs run at once, one per vCPU: each vCPU runs compile jobs back
 *    to back. With `procs` set (make -jN on a machine with more CPUs, as
 *    seed 5's -j96 on 256), only N vCPUs spread over the machine build;
 *    the others stay idle. A job (a cc1 process) swaps out folios while it runs, one
 *    per operation, and frees all of them when it exits. Its size is
 *    uniform in [job_min, job_max] folios. These are the short-lived
 *    folios; their exits free slots in bursts, all over the clusters the
 *    job used.
 *  - long_pct % of the folios are long-lived instead (make itself, the
 *    shell, the linker, tmpfs-like objects): each vCPU keeps up to
 *    long_cap of them and, once full, frees a random one for each new
 *    one. Random replacement scatters their lifetimes, which is what
 *    leaves holes in clusters.
 *  - With 64 KiB mTHP a process's anonymous memory is mostly order-4
 *    folios; order-0 comes from small mappings, stacks and COW.
 *    order4_pct % of the folios are order 4, the rest order 0; an order-4
 *    folio that gets -E2BIG is split and swapped out as 16 order-0 slots
 *    (swpout_fallback), as the kernel does.
 *  - Swap-in is 4 KiB even for a 64 KiB folio (6.x kernels swap mTHP back
 *    in page by page unless the folio is still in the swap cache):
 *    swapin_pct % of the operations fault one page of a random live
 *    folio of the vCPU back in, which frees that one slot. This is what
 *    leaves order-4 clusters with holes no order-4 folio fits in; the
 *    seed 2 fix is about which clusters get used next.
 *  - Every folio is "mapped" once written: each page holds its own
 *    reference and the swap cache has let go (lab_folio_map()).
 *  - Pressure: the memcg is small beside the build, so most anonymous
 *    memory lives in swap; devices are sized so that the expected live
 *    slots are `fill` of their capacity, and the build runs long enough
 *    (jobs_per_vcpu) for every cluster to be used and reused several
 *    times. The kernel-side numbers (10 GiB, 5120 clusters against 96
 *    CPUs) are kept in proportion: clusters outnumber per-CPU clusters by
 *    a factor of ten or more.
 */
#include <errno.h>
#include <stdlib.h>

#include "lab/workload.h"

struct kbuild_vcpu {
	uint64_t rng;
	unsigned int jobs_left;
	unsigned int job_len, job_nr;
	struct lab_folio *job;   /* [job_max]: the running job's folios */
	struct lab_folio *lng;   /* [long_cap]: long-lived folios */
	unsigned int lng_nr;
};

struct kbuild_state {
	struct kbuild_vcpu *vcpus;
};

static double slots_per_folio(const struct lab_kbuild_params *p)
{
	return (p->order4_pct * 16.0 + (100 - p->order4_pct) * 1.0) / 100.0;
}

static unsigned int jobs(const struct lab_kbuild_params *p, const struct lab_options *opt)
{
	unsigned int n = (unsigned int)((double)p->jobs_per_vcpu * opt->scale);

	return n ? n : 1;
}

/* vCPUs that build: `procs`, or every one. */
static unsigned int builders(const struct lab_kbuild_params *p, unsigned int nr_vcpus)
{
	return p->procs && p->procs < nr_vcpus ? p->procs : nr_vcpus;
}

/* Is @v one of the builders, placed as usemem's tasks are (i * V / N)? */
static bool is_builder(const struct lab_kbuild_params *p, unsigned int v, unsigned int nr_vcpus)
{
	unsigned int n = builders(p, nr_vcpus);
	/* The first builder i whose vCPU i * V / n is >= v. */
	uint64_t i = ((uint64_t)v * n + nr_vcpus - 1) / nr_vcpus;

	return i < n && i * nr_vcpus / n == v;
}

/* Live slots per vCPU once its long-lived set is full: that set, plus a
 * job half done on average. */
static double live_per_vcpu(const struct lab_kbuild_params *p)
{
	double job_avg = (p->job_min + p->job_max) / 2.0;

	return (p->long_cap + job_avg / 2.0) * slots_per_folio(p);
}

static uint64_t kbuild_device_slots(const struct lab_workload *wl,
				    const struct lab_options *opt)
{
	const struct lab_kbuild_params *p = &wl->kbuild;
	uint64_t demand = (uint64_t)(live_per_vcpu(p) * builders(p, opt->vcpu.nr_vcpus));

	return lab_device_slots_for(demand, p->fill, wl->nr_devices);
}

static uint64_t kbuild_max_vcpu_ops(const struct lab_env *env)
{
	const struct lab_kbuild_params *p = &env->wl->kbuild;
	double job_avg = (p->job_min + p->job_max) / 2.0;

	/* Allocations, plus one operation per job exit. */
	return (uint64_t)(jobs(p, env->opt) *
			  (job_avg / (1 - (p->long_pct + p->swapin_pct) / 100.0) + 1));
}

/* Folios: each job's, plus the long-lived ones allocated meanwhile. */
static uint64_t kbuild_total_ops(const struct lab_env *env)
{
	const struct lab_kbuild_params *p = &env->wl->kbuild;
	double job_avg = (p->job_min + p->job_max) / 2.0;
	double per_job = job_avg * (100.0 - p->swapin_pct) /
			 (100.0 - p->long_pct - p->swapin_pct);

	return (uint64_t)(jobs(p, env->opt) * per_job) * builders(p, env->nr_vcpus);
}

static void kbuild_fini(struct lab_env *env)
{
	struct kbuild_state *st = env->state;

	for (unsigned int v = 0; st->vcpus && v < env->nr_vcpus; v++) {
		free(st->vcpus[v].job);
		free(st->vcpus[v].lng);
	}
	free(st->vcpus);
	free(st);
	env->state = NULL;
}

static unsigned int job_length(struct kbuild_vcpu *vc, const struct lab_kbuild_params *p)
{
	return p->job_min + (unsigned int)lab_rand_below(&vc->rng, p->job_max - p->job_min + 1);
}

static int kbuild_init(struct lab_env *env)
{
	const struct lab_kbuild_params *p = &env->wl->kbuild;
	struct kbuild_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	env->state = st;
	if (!p->job_min || p->job_max < p->job_min || p->long_pct >= 100 ||
	    p->order4_pct > 100 || !p->long_cap || p->swapin_pct >= 100 ||
	    p->long_pct + p->swapin_pct >= 100)
		return -EINVAL;
	st->vcpus = calloc(env->nr_vcpus, sizeof(*st->vcpus));
	if (!st->vcpus)
		return -ENOMEM;
	for (unsigned int v = 0; v < env->nr_vcpus; v++) {
		struct kbuild_vcpu *vc = &st->vcpus[v];

		vc->job = calloc(p->job_max, sizeof(*vc->job));
		vc->lng = calloc(p->long_cap, sizeof(*vc->lng));
		if (!vc->job || !vc->lng)
			return -ENOMEM;
		/* One stream per vCPU, whatever thread runs it. */
		vc->rng = env->opt->seed ^ (0xd1b54a32d192ed03ull * (v + 1));
		vc->jobs_left = is_builder(p, v, env->nr_vcpus) ? jobs(p, env->opt) : 0;
		vc->job_len = job_length(vc, p);
	}
	return 0;
}

/* A long-lived folio: replace a random one once the set is full. */
static int long_lived(struct lab_env *env, unsigned int thread,
		      struct kbuild_vcpu *vc, unsigned int order)
{
	const struct lab_kbuild_params *p = &env->wl->kbuild;
	unsigned int i;
	int err;

	if (vc->lng_nr < p->long_cap) {
		i = vc->lng_nr++;
	} else {
		i = (unsigned int)lab_rand_below(&vc->rng, p->long_cap);
		err = lab_folio_free(env, thread, &vc->lng[i]);
		if (err)
			return err;
	}
	err = lab_folio_alloc(env, thread, order, &vc->lng[i]);
	if (!err)
		err = lab_folio_map(env, thread, &vc->lng[i]);
	return err == -ENOSPC ? 0 : err; /* stays in memory */
}

/* Fault one page of a random live folio of @vc back in. */
static int swap_in_page(struct lab_env *env, unsigned int thread, struct kbuild_vcpu *vc)
{
	unsigned int n = vc->lng_nr + vc->job_nr, k, page;
	struct lab_folio *f;

	if (!n)
		return 0;
	k = (unsigned int)lab_rand_below(&vc->rng, n);
	f = k < vc->lng_nr ? &vc->lng[k] : &vc->job[k - vc->lng_nr];
	if (!f->nr)
		return 0; /* never swapped out (-ENOSPC) or all back in */
	page = (unsigned int)lab_rand_below(&vc->rng, 1u << f->order);
	for (unsigned int i = 0; i < (1u << f->order); i++) {
		unsigned int p = (page + i) & ((1u << f->order) - 1);

		if (!(f->gone & (1u << p)))
			return lab_folio_free_page(env, thread, f, p);
	}
	return 0;
}

/* The job exits: every folio it swapped out is freed at once. */
static int job_exit(struct lab_env *env, unsigned int thread, struct kbuild_vcpu *vc)
{
	for (unsigned int i = 0; i < vc->job_nr; i++) {
		int err = lab_folio_free(env, thread, &vc->job[i]);

		if (err)
			return err;
	}
	vc->job_nr = 0;
	vc->jobs_left--;
	vc->job_len = job_length(vc, &env->wl->kbuild);
	return 0;
}

static int kbuild_step(void *ctx, unsigned int vcpu, unsigned int thread)
{
	struct lab_env *env = ctx;
	const struct lab_kbuild_params *p = &env->wl->kbuild;
	struct kbuild_vcpu *vc = &((struct kbuild_state *)env->state)->vcpus[vcpu];
	unsigned int order, kind;
	int err;

	if (!vc->jobs_left)
		return 0;
	if (vc->job_nr == vc->job_len) {
		err = job_exit(env, thread, vc);
		return err ? err : 1;
	}
	order = lab_rand_below(&vc->rng, 100) < p->order4_pct ? 4 : 0;
	kind = (unsigned int)lab_rand_below(&vc->rng, 100);
	if (kind < p->swapin_pct) {
		err = swap_in_page(env, thread, vc);
	} else if (kind < p->swapin_pct + p->long_pct) {
		err = long_lived(env, thread, vc, order);
	} else {
		struct lab_folio *f = &vc->job[vc->job_nr++];

		err = lab_folio_alloc(env, thread, order, f);
		if (!err)
			err = lab_folio_map(env, thread, f);
		if (err == -ENOSPC)
			err = 0;
	}
	return err ? err : 1;
}

const struct lab_wl_ops lab_kbuild_ops = {
	.device_slots = kbuild_device_slots,
	.total_ops = kbuild_total_ops,
	.max_vcpu_ops = kbuild_max_vcpu_ops,
	.init = kbuild_init,
	.step = kbuild_step,
	.fini = kbuild_fini,
};
