// SPDX-License-Identifier: MIT
/*
 * workload_swapin.c - seed 3's HDD test: lkp-tests' swapin_setup makes
 * `usemem -n 8` hold 8 GiB and pushes it to an 8 GiB HDD swap partition;
 * then every process reads its memory back sequentially and reports
 * bytes / time (1270.92 KB/s per process before the patch, 1849.54 after,
 * averaged over the 24 lines of each side of the thread).
 *
 * Swap-out runs on the real allocator: each task (on its own vCPU)
 * swaps out its pages in address order, one order-0 slot per operation,
 * so where its pages land on the device is what the free-cluster order
 * makes of it. Swap-in is then replayed on a model of one rotational
 * disk, because what the seed measured is the disk's head movement:
 *
 *  - the tasks read at once; the disk serves their requests in turn (one
 *    request per task in round robin, a FIFO queue with no elevator);
 *  - a request reads the `readahead`-slot aligned window around the page
 *    (swap readahead with vm.page-cluster 3 on a rotational device); a
 *    page already read, by its own or another task's window, costs
 *    nothing (the swap cache keeps it);
 *  - its cost: nothing extra when the window starts where the head is;
 *    otherwise a seek of settle + distance * per-MiB, plus the mean
 *    rotational latency; then the transfer at the media rate;
 *  - a task's rate is its bytes over the disk time until its last page
 *    was read. KB/s as usemem prints it: bytes / us * 1e6 / 1024.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab/workload.h"

struct swapin_task {
	uint64_t *pages;   /* [nr]: entry of each page, in address order */
	uint64_t nr, idx;  /* pages; next to swap out (or read) */
	unsigned int vcpu;
};

struct swapin_state {
	struct swapin_task *tasks;
	int *vcpu_task;    /* [nr_vcpus]: task index or -1 */
};

static uint64_t task_pages(const struct lab_workload *wl, const struct lab_options *opt)
{
	uint64_t n = (uint64_t)((double)wl->swapin.size_slots * opt->scale);

	return n ? n : 1;
}

static uint64_t swapin_device_slots(const struct lab_workload *wl,
				    const struct lab_options *opt)
{
	uint64_t demand = wl->swapin.tasks * task_pages(wl, opt);

	return lab_device_slots_for(demand, wl->swapin.fill, wl->nr_devices);
}

static uint64_t swapin_total_ops(const struct lab_env *env)
{
	return env->wl->swapin.tasks * task_pages(env->wl, env->opt);
}

static uint64_t swapin_max_vcpu_ops(const struct lab_env *env)
{
	return task_pages(env->wl, env->opt);
}

static void swapin_fini(struct lab_env *env)
{
	struct swapin_state *st = env->state;

	for (unsigned int i = 0; st->tasks && i < env->wl->swapin.tasks; i++)
		free(st->tasks[i].pages);
	free(st->tasks);
	free(st->vcpu_task);
	free(st);
	env->state = NULL;
}

static int swapin_init(struct lab_env *env)
{
	const struct lab_swapin_params *p = &env->wl->swapin;
	struct swapin_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	env->state = st;
	/* One disk: the model has one head. */
	if (env->wl->nr_devices != 1 || !p->tasks || p->tasks > env->nr_vcpus || !p->readahead ||
	    (p->readahead & (p->readahead - 1)) || p->readahead > USWAP_CLUSTER_SLOTS)
		return -EINVAL;
	st->tasks = calloc(p->tasks, sizeof(*st->tasks));
	st->vcpu_task = malloc(env->nr_vcpus * sizeof(*st->vcpu_task));
	if (!st->tasks || !st->vcpu_task)
		return -ENOMEM;
	for (unsigned int v = 0; v < env->nr_vcpus; v++)
		st->vcpu_task[v] = -1;
	for (unsigned int i = 0; i < p->tasks; i++) {
		struct swapin_task *t = &st->tasks[i];

		t->nr = task_pages(env->wl, env->opt);
		t->pages = calloc(t->nr, sizeof(*t->pages));
		if (!t->pages)
			return -ENOMEM;
		t->vcpu = (unsigned int)((uint64_t)i * env->nr_vcpus / p->tasks);
		st->vcpu_task[t->vcpu] = (int)i;
	}
	return 0;
}

/* Swap-out: the task's next page gets a slot. */
static int swapin_step(void *ctx, unsigned int vcpu, unsigned int thread)
{
	struct lab_env *env = ctx;
	struct swapin_state *st = env->state;
	struct lab_folio f;
	struct swapin_task *t;
	int err;

	if (st->vcpu_task[vcpu] < 0)
		return 0;
	t = &st->tasks[st->vcpu_task[vcpu]];
	if (t->idx == t->nr)
		return 0;
	err = lab_folio_alloc(env, thread, 0, &f);
	if (err)
		return err; /* sized to fit: -ENOSPC is a real failure here */
	t->pages[t->idx++] = f.s[0].val;
	return 1;
}

/* ------------------------------------------------------------------------
 * The disk model
 * ---------------------------------------------------------------------- */

struct disk {
	const struct lab_swapin_params *p;
	uint64_t head;        /* slot after the last one read (one device) */
	double clock_us;      /* disk busy time so far */
	double seek_mib;      /* total seek distance */
	uint64_t seeks;
	uint8_t *cached;      /* per slot: read already */
};

static void disk_read(struct disk *d, uint64_t slot)
{
	const struct lab_swapin_params *p = d->p;
	uint64_t start = slot & ~(uint64_t)(p->readahead - 1);
	double bytes = (double)p->readahead * USWAP_PAGE_SIZE;

	if (start != d->head) {
		uint64_t dist = start > d->head ? start - d->head : d->head - start;
		double mib = (double)dist * USWAP_PAGE_SIZE / (1024.0 * 1024.0);

		d->clock_us += p->seek_settle_us + mib * p->seek_us_per_mib +
			       p->rotation_us;
		d->seek_mib += mib;
		d->seeks++;
	}
	d->clock_us += bytes / p->media_mb_s; /* MB/s = bytes per us */
	memset(d->cached + start, 1, p->readahead);
	d->head = start + p->readahead;
}

/* Advance @t past the pages already read; read the next one if any.
 * Return: true while the task has pages left. */
static bool task_read_next(struct disk *d, struct swapin_task *t)
{
	while (t->idx < t->nr && d->cached[uswap_entry_offset((uswap_entry_t){ t->pages[t->idx] })])
		t->idx++;
	if (t->idx == t->nr)
		return false;
	disk_read(d, uswap_entry_offset((uswap_entry_t){ t->pages[t->idx] }));
	return true;
}

static int swapin_after(struct lab_env *env)
{
	const struct lab_swapin_params *p = &env->wl->swapin;
	struct swapin_state *st = env->state;
	uint64_t slots = env->ops->device_slots(env->wl, env->opt);
	struct disk d = { .p = p, .head = 0 };
	double *done_us = calloc(p->tasks, sizeof(*done_us));
	unsigned int left = p->tasks;
	double kbs = 0;

	d.cached = calloc(slots + p->readahead, 1);
	if (!d.cached || !done_us) {
		free(d.cached);
		free(done_us);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < p->tasks; i++) {
		st->tasks[i].idx = 0;
		done_us[i] = -1; /* still reading */
	}
	while (left) {
		for (unsigned int i = 0; i < p->tasks; i++) {
			struct swapin_task *t = &st->tasks[i];

			if (done_us[i] < 0 && !task_read_next(&d, t)) {
				done_us[i] = d.clock_us;
				left--;
			}
		}
	}
	for (unsigned int i = 0; i < p->tasks; i++) {
		double bytes = (double)st->tasks[i].nr * USWAP_PAGE_SIZE;

		kbs += bytes / done_us[i] * 1e6 / 1024.0;
	}
	env->arm->swapin_kb_s = kbs / p->tasks;
	env->arm->swapin_seek_mib = d.seeks ? d.seek_mib / (double)d.seeks : 0;
	free(d.cached);
	free(done_us);
	return 0;
}

const struct lab_wl_ops lab_swapin_ops = {
	.device_slots = swapin_device_slots,
	.total_ops = swapin_total_ops,
	.max_vcpu_ops = swapin_max_vcpu_ops,
	.init = swapin_init,
	.step = swapin_step,
	.after = swapin_after,
	.fini = swapin_fini,
};
