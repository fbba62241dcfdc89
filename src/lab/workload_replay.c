// SPDX-License-Identifier: MIT
/*
 * workload_replay.c - a recorded trace (trace.c) as a workload: its
 * records run in the trace's order, each on its CPU's vCPU, in virtual
 * time, under whatever policy the arm has.
 *
 * The order is the trace's, not the smallest clock's: a folio may be
 * swapped out on one CPU and freed on another, and only the recorded
 * order keeps every free after its allocation. A record's vCPU starts it
 * at its recorded time or at its own clock, whichever is later; the gap
 * before a record is idle time, not system time. Every later record
 * starts at or after the current record's time, so that time is the
 * horizon below which the locks can forget their holdings.
 *
 * An A record is a swap-out as the lab's kernel build does it: slots for
 * the folio (split after -E2BIG up to order 4), each page's store, the
 * page-table references taken. A folio that finds no room stays in memory
 * (its later records do nothing), as in the kernel. An X record frees
 * every folio (the process exec'd: its swap went with the old program).
 */
#include <errno.h>
#include <stdlib.h>

#include "lab/workload.h"

struct replay_state {
	struct lab_folio *folio; /* [trace->nr_slots] */
	size_t next;             /* the next record */
	uint64_t not_out;        /* A records that found no room */
};

static uint64_t replay_device_slots(const struct lab_workload *wl,
				    const struct lab_options *opt)
{
	(void)opt;
	/* The peak, plus each device's header slot: at fill 1 it fits. */
	return lab_device_slots_for(wl->trace->peak_slots + wl->nr_devices,
				    wl->replay_fill, wl->nr_devices);
}

static uint64_t replay_total_ops(const struct lab_env *env)
{
	return env->wl->trace->nr;
}

static uint64_t replay_max_ops(const struct lab_env *env)
{
	return env->wl->trace->nr;
}

static int replay_init(struct lab_env *env)
{
	const struct lab_trace *t = env->wl->trace;
	struct replay_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	env->state = st;
	if (!t || !t->nr || !(env->wl->replay_fill >= LAB_REPLAY_MIN_FILL &&
			      env->wl->replay_fill <= 1))
		return -EINVAL;
	st->folio = calloc(t->nr_slots ? t->nr_slots : 1, sizeof(*st->folio));
	return st->folio ? 0 : -ENOMEM;
}

static void replay_fini(struct lab_env *env)
{
	struct replay_state *st = env->state;

	free(st->folio);
	free(st);
	env->state = NULL;
}

/* One record on its vCPU. */
static int replay_one(struct lab_env *env, struct replay_state *st,
		      const struct lab_trace_rec *r)
{
	struct lab_folio *f = &st->folio[r->slot];
	int err = 0;

	switch (r->op) {
	case LAB_TRACE_ALLOC:
		err = lab_folio_alloc(env, 0, r->order, f);
		if (!err)
			err = lab_folio_map(env, 0, f);
		if (err == -ENOSPC || err == -E2BIG) {
			st->not_out++;
			err = 0; /* stays in memory */
		}
		return err;
	case LAB_TRACE_FREE:
		return lab_folio_free(env, 0, f);
	case LAB_TRACE_SWAPIN:
		err = lab_folio_free_page(env, 0, f, r->page);
		return err == -ENOENT ? 0 : err; /* never out, or split away */
	case LAB_TRACE_RESET: /* the program exec'd: its swap is gone */
		for (uint32_t i = 0; i < env->wl->trace->nr_slots && !err; i++)
			err = lab_folio_free(env, 0, &st->folio[i]);
		return err;
	}
	return -EINVAL;
}

int lab_replay_run(struct lab_env *env, struct lab_vtime *vt)
{
	const struct lab_trace *t = env->wl->trace;
	struct replay_state *st = env->state;
	uint64_t per_round = (uint64_t)env->nr_vcpus * env->opt->vcpu.slice_ops;
	int err = 0;

	uswap_thread_set_probe(&vt->probe);
	for (st->next = 0; st->next < t->nr && !err; st->next++) {
		const struct lab_trace_rec *r = &t->rec[st->next];
		unsigned int v = r->cpu % env->nr_vcpus;

		vt->cur = v;
		if (vt->clock[v] < (double)r->t_ns) {
			vt->idle_ns += (double)r->t_ns - vt->clock[v];
			vt->clock[v] = (double)r->t_ns;
		}
		vt->horizon = (double)r->t_ns;
		uswap_thread_set_cpu((int)v);
		err = replay_one(env, st, r);
		if (!err && vt->failed)
			err = vt->failed;
		if ((st->next + 1) % per_round == 0)
			lab_env_round(env, (st->next + 1) / per_round - 1);
	}
	uswap_thread_set_probe(NULL);
	uswap_thread_set_cpu(-1);
	env->arm->replay_not_out = st->not_out;
	return err;
}

/* The step of the generic runners: replay runs only in virtual time,
 * through lab_replay_run(). */
static int replay_step(void *ctx, unsigned int vcpu, unsigned int thread)
{
	(void)ctx;
	(void)vcpu;
	(void)thread;
	return -EINVAL;
}

const struct lab_wl_ops lab_replay_ops = {
	.device_slots = replay_device_slots,
	.total_ops = replay_total_ops,
	.max_vcpu_ops = replay_max_ops,
	.init = replay_init,
	.step = replay_step,
	.fini = replay_fini,
};
