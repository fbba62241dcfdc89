// SPDX-License-Identifier: MIT
/*
 * workload_usemem.c - vm-scalability's usemem as an allocator-only replay.
 *
 * Seed 4 ran `usemem --init-time -O -y -x -n 31 2G` in a 4 GiB memory
 * cgroup on four default-priority zram devices: 31 processes each touch
 * 2 GiB, almost all of which is pushed to swap, then exit. Here each task
 * swaps out its memory folio by folio (one folio per operation), then
 * frees it all (the exit), `rounds` times. Only the slots move: no data,
 * no pager. Devices are sized so that the peak demand (every task holding
 * all its memory) is `fill` of the total: the seed's swapon snapshot
 * shows 25.1 of 64 GiB in use, 0.39.
 *
 * Task i lives on vCPU i * nr_vcpus / tasks, so the tasks spread over the
 * emulated NUMA nodes as processes spread over a machine's CPUs.
 */
#include <errno.h>
#include <stdlib.h>

#include "lab/workload.h"

struct usemem_task {
	struct lab_folio *folios; /* [nr] */
	uint64_t nr;              /* folios per round */
	uint64_t idx;             /* next folio to allocate or free */
	bool freeing;             /* in the exit half of the round */
	unsigned int rounds_left;
};

struct usemem_vcpu {
	unsigned int first, nr;   /* its tasks: [first, first + nr) */
	unsigned int turn;        /* task whose turn it is */
};

struct usemem_state {
	struct usemem_task *tasks;
	struct usemem_vcpu *vcpus;
};

static uint64_t task_folios(const struct lab_workload *wl, const struct lab_options *opt)
{
	const struct lab_usemem_params *p = &wl->usemem;
	uint64_t slots = (uint64_t)((double)p->size_slots * opt->scale);
	uint64_t nr = slots >> p->order;

	return nr ? nr : 1;
}

static uint64_t usemem_device_slots(const struct lab_workload *wl,
				    const struct lab_options *opt)
{
	const struct lab_usemem_params *p = &wl->usemem;
	uint64_t demand = p->tasks * (task_folios(wl, opt) << p->order);

	return lab_device_slots_for(demand, p->fill, wl->nr_devices);
}

static uint64_t usemem_total_ops(const struct lab_env *env)
{
	const struct lab_usemem_params *p = &env->wl->usemem;

	return task_folios(env->wl, env->opt) * p->rounds * p->tasks;
}

static uint64_t usemem_max_vcpu_ops(const struct lab_env *env)
{
	const struct lab_usemem_params *p = &env->wl->usemem;
	uint64_t per_vcpu = (p->tasks + env->nr_vcpus - 1) / env->nr_vcpus;

	return 2 * task_folios(env->wl, env->opt) * p->rounds * per_vcpu;
}

static void usemem_fini(struct lab_env *env)
{
	struct usemem_state *st = env->state;

	for (unsigned int i = 0; st->tasks && i < env->wl->usemem.tasks; i++)
		free(st->tasks[i].folios);
	free(st->tasks);
	free(st->vcpus);
	free(st);
	env->state = NULL;
}

static int usemem_init(struct lab_env *env)
{
	const struct lab_usemem_params *p = &env->wl->usemem;
	struct usemem_state *st = calloc(1, sizeof(*st));
	uint64_t nr = task_folios(env->wl, env->opt);

	if (!st)
		return -ENOMEM;
	env->state = st;
	if (!p->tasks || p->order > LAB_FOLIO_MAX_SPLIT_ORDER || !p->rounds)
		return -EINVAL;
	st->tasks = calloc(p->tasks, sizeof(*st->tasks));
	st->vcpus = calloc(env->nr_vcpus, sizeof(*st->vcpus));
	if (!st->tasks || !st->vcpus)
		return -ENOMEM;
	for (unsigned int i = 0; i < p->tasks; i++) {
		struct usemem_task *t = &st->tasks[i];
		/* Spread evenly; with more tasks than vCPUs, share them. */
		unsigned int v = (unsigned int)((uint64_t)i * env->nr_vcpus / p->tasks);

		t->folios = calloc(nr, sizeof(*t->folios));
		if (!t->folios)
			return -ENOMEM;
		t->nr = nr;
		t->rounds_left = p->rounds;
		if (!st->vcpus[v].nr)
			st->vcpus[v].first = i;
		st->vcpus[v].nr++;
	}
	return 0;
}

/* One folio of @t: allocate the next one, or free the next one. */
static int task_step(struct lab_env *env, unsigned int thread, struct usemem_task *t)
{
	int err;

	if (!t->freeing) {
		err = lab_folio_alloc(env, thread, env->wl->usemem.order,
				      &t->folios[t->idx]);
		/* -ENOSPC: the folio stays in memory (the kernel would OOM or
		 * retry); the replay just goes on without it. */
		if (err && err != -ENOSPC)
			return err;
		if (++t->idx == t->nr) {
			t->freeing = true;
			t->idx = 0;
		}
		return 0;
	}
	err = lab_folio_free(env, thread, &t->folios[t->idx]);
	if (err)
		return err;
	if (++t->idx == t->nr) {
		t->freeing = false;
		t->idx = 0;
		t->rounds_left--;
	}
	return 0;
}

static int usemem_step(void *ctx, unsigned int vcpu, unsigned int thread)
{
	struct lab_env *env = ctx;
	struct usemem_state *st = env->state;
	struct usemem_vcpu *vc = &st->vcpus[vcpu];

	/* Round robin over this vCPU's tasks that still run. */
	for (unsigned int k = 0; k < vc->nr; k++) {
		struct usemem_task *t = &st->tasks[vc->first + vc->turn];

		vc->turn = (vc->turn + 1) % vc->nr;
		if (t->rounds_left) {
			int err = task_step(env, thread, t);

			return err ? err : 1;
		}
	}
	return 0;
}

const struct lab_wl_ops lab_usemem_ops = {
	.device_slots = usemem_device_slots,
	.total_ops = usemem_total_ops,
	.max_vcpu_ops = usemem_max_vcpu_ops,
	.init = usemem_init,
	.step = usemem_step,
	.fini = usemem_fini,
};
