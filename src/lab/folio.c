// SPDX-License-Identifier: MIT
/*
 * folio.c - the folios the workloads swap out, and the books kept on
 * them: slots for a folio as the kernel's swap-out gets them (whole, or
 * split into order-0 slots after -E2BIG), the page references of a
 * written folio, freeing one page at a time, and per-device use.
 *
 * Per-device use is counted here, from the entries the workload holds,
 * not read from uswap_device_info(): that call takes the global and
 * device locks, which are what the experiments count.
 */
#include <errno.h>

#include <uswap/slots.h>

#include "lab/workload.h"


static void use_add(struct lab_thread_stat *ts, uswap_entry_t e, int64_t nr)
{
	_Atomic int64_t *u = &ts->used[uswap_entry_type(e)];

	/* Only this thread writes it: a relaxed load and store, no lock. */
	atomic_store_explicit(u, atomic_load_explicit(u, memory_order_relaxed) + nr,
			      memory_order_relaxed);
}

/* Virtual time: the fixed part of one library call (an allocation, or a
 * free, dup or put), before the locks and steps it reports itself. */
static void vt_call(struct lab_env *env, bool alloc)
{
	if (env->vt)
		lab_vt_charge(env->vt, alloc ? env->vt->cost.alloc : env->vt->cost.free);
}

/* The library calls the workloads make, each charged its fixed part. */
static int lab_alloc(struct lab_env *env, unsigned int order, uswap_entry_t *e)
{
	vt_call(env, true);
	return uswap_alloc(env->u, order, e);
}

static int lab_free(struct lab_env *env, uswap_entry_t e, unsigned int nr)
{
	vt_call(env, false);
	return uswap_free(env->u, e, nr);
}

static int lab_dup(struct lab_env *env, uswap_entry_t e)
{
	vt_call(env, false);
	return uswap_dup(env->u, e);
}

static int lab_put_folio(struct lab_env *env, uswap_entry_t e, unsigned int order)
{
	vt_call(env, false);
	return uswap_put_folio(env->u, e, order);
}

/*
 * The write of a swapped-out folio, in virtual time: each page costs
 * page_out (compression and the copy, off every lock, with the jitter)
 * and then updates its device's shared state: zram's write path adds to
 * the device's stats counters and takes its zsmalloc pool's lock,
 * pool_lines cache lines that move whenever another CPU stored to that
 * device last. That per-device traffic is what spreading writes over
 * devices relieves (seed 4).
 */
static void vt_store(struct lab_env *env, const struct lab_folio *f)
{
	const struct lab_cost *c;
	unsigned int pages = 1u << f->order;

	if (!env->vt)
		return;
	c = &env->vt->cost;
	for (unsigned int i = 0; i < pages; i++) {
		uswap_entry_t e = { f->s[f->nr == 1 ? 0 : i].val };
		const void *dev = &env->pool[uswap_entry_type(e)];

		lab_vt_charge_page(env->vt, c->page_out);
		if (!c->pool_lines)
			continue;
		lab_vt_lock_lines(env->vt, dev, "&zram->stats", "zram_write_page (model)",
				  c->pool_lines);
		lab_vt_unlock(env->vt, dev);
	}
}

/* The arm's trace (opt->trace_out): one record at the running vCPU's
 * operation start, so times never go backwards (the scheduler runs
 * operations in start order). */
static void trace_rec(struct lab_env *env, enum lab_trace_op op,
		      const struct lab_folio *f, unsigned int page)
{
	struct lab_trace_rec r;

	if (!env->opt->trace_out || !env->vt || !f->id)
		return;
	r = (struct lab_trace_rec){
		.t_ns = (uint64_t)env->vt->horizon, .cpu = env->vt->cur, .op = op,
		.order = f->order, .id = f->id, .page = page,
	};
	lab_trace_write(env->opt->trace_out, &r);
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
	int err;

	err = lab_alloc(env, order, &e);
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
	int err;

	err = lab_put_folio(env, e, s->order);

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
		err = lab_free(env, page_entry(f, 0), pages);
		if (err)
			return err;
		ts->frees++;
		use_add(ts, page_entry(f, 0), -(int64_t)pages);
		return 0;
	}
	for (unsigned int i = 0; i < pages; i++) {
		if (f->gone & (1u << i))
			continue;
		err = lab_free(env, page_entry(f, i), 1);
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

	trace_rec(env, LAB_TRACE_FREE, f, 0);
	f->id = 0;
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
		err = lab_dup(env, page_entry(f, i));
		if (err)
			return err;
	}
	for (unsigned int i = 0; i < f->nr; i++) {
		err = lab_put_folio(env, (uswap_entry_t){ f->s[i].val }, f->s[i].order);
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
	trace_rec(env, LAB_TRACE_SWAPIN, f, page);
	if (env->vt)
		lab_vt_charge_page(env->vt, env->vt->cost.page_in); /* read it back */
	err = lab_free(env, page_entry(f, page), 1);
	if (err)
		return err;
	ts->frees++;
	use_add(ts, page_entry(f, page), -1);
	f->gone |= (uint16_t)(1u << page);
	/* The last page gone frees the folio. */
	if (f->gone == (uint16_t)((1u << (1u << f->order)) - 1)) {
		f->id = 0; /* the trace's ID ends with its last page */
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
	f->id = env->opt->trace_out ? ++env->next_id : 0;
	trace_rec(env, LAB_TRACE_ALLOC, f, 0);
	ts->folios++;
	ts->req[order]++;
	ops_inc(ts);
	err = slot_alloc(env, ts, order, &f->s[0]);
	if (!err) {
		f->nr = 1;
		ts->bytes += (uint64_t)USWAP_PAGE_SIZE << order;
		vt_store(env, f);
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
	vt_store(env, f);
	return 0;
}
