/* SPDX-License-Identifier: MIT */
/*
 * bench_usemem_worker.c - one usemem worker: its passes over its region,
 * what each page holds, and the check of every byte read back.
 *
 * Page contents (page p of worker w, written by the pass of generation g):
 *  - bytes 0..7: the tag, g << 48 | w << 40 | p;
 *  - the rest: with --data, the bytes of the file at offset
 *    (w * pages_per_worker + p) * 4096 modulo the file's length (the file
 *    repeated over all the workers' memory); without it, usemem's kind of
 *    pattern: every 8-byte word holds its own index in the worker's
 *    memory.
 * A read pass compares every byte; memory never written (--read-only)
 * must read as zeroes.
 */
#include "bench_usemem.h"
#include "cli.h"

#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE USWAP_PAGE_SIZE
#define WORDS (PAGE / 8)

static uint64_t tag_of(uint64_t gen, unsigned int worker, uint64_t page)
{
	if (!gen)
		return 0; /* never written: zeroes */
	return gen << 48 | (uint64_t)worker << 40 | page;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void usemem_worker_plan(struct usemem_worker *w)
{
	const struct usemem_opts *o = w->opts;
	unsigned int n = 0;
	uint64_t gen = 0;

	for (unsigned int r = 0; r < o->repeat; r++) {
		if (!o->read_only) {
			w->pass_kind[n] = USEMEM_PASS_WRITE;
			w->pass_gen[n++] = ++gen;
		}
		w->pass_kind[n] = USEMEM_PASS_READ;
		w->pass_gen[n++] = gen;
		if (o->read_again) {
			w->pass_kind[n] = USEMEM_PASS_READ;
			w->pass_gen[n++] = gen;
		}
	}
	w->nr_passes = n;
	w->bytes = (uint64_t)n * w->nr_pages * PAGE;
}

static const uint8_t *data_at(const struct usemem_worker *w, uint64_t page)
{
	uint64_t global = (uint64_t)w->id * w->nr_pages + page;

	return w->content->pat + (global * PAGE) % w->content->pat_len;
}

static void page_write(struct usemem_worker *w, uint64_t page, uint64_t gen)
{
	uint64_t *dst = (uint64_t *)(w->mem + page * PAGE);

	if (w->content->pat) {
		memcpy(dst, data_at(w, page), PAGE);
	} else {
		uint64_t base = page * WORDS;

		for (unsigned int i = 1; i < WORDS; i++)
			dst[i] = base + i;
	}
	dst[0] = tag_of(gen, w->id, page);
}

/* Return: whether page @page holds generation @gen's contents. */
static bool page_check(struct usemem_worker *w, uint64_t page, uint64_t gen,
		       uint64_t *got_tag)
{
	const uint64_t *src = (const uint64_t *)(w->mem + page * PAGE);
	uint64_t want = tag_of(gen, w->id, page);

	*got_tag = src[0];
	if (src[0] != want)
		return false;
	if (!gen) {
		for (unsigned int i = 1; i < WORDS; i++)
			if (src[i])
				return false;
		return true;
	}
	if (w->content->pat)
		return memcmp(src + 1, data_at(w, page) + 8, PAGE - 8) == 0;
	for (unsigned int i = 1; i < WORDS; i++)
		if (src[i] != page * WORDS + i)
			return false;
	return true;
}

static void shuffle(struct usemem_worker *w)
{
	for (uint64_t i = 0; i < w->nr_pages; i++)
		w->perm[i] = (uint32_t)i;
	for (uint64_t i = w->nr_pages - 1; i > 0; i--) {
		uint64_t j = rng_next(&w->rng) % (i + 1);
		uint32_t t = w->perm[i];

		w->perm[i] = w->perm[j];
		w->perm[j] = t;
	}
}

static void note_bad(struct usemem_worker *w, unsigned int pass, uint64_t page,
		     uint64_t got)
{
	if (!w->bad_pages++) {
		w->first_bad_page = page;
		w->first_bad_pass = pass;
		w->first_bad_want = tag_of(w->pass_gen[pass], w->id, page);
		w->first_bad_got = got;
	}
}

static void run_pass(struct usemem_worker *w, unsigned int pass)
{
	bool write = w->pass_kind[pass] == USEMEM_PASS_WRITE;
	uint64_t gen = w->pass_gen[pass];

	if (w->perm)
		shuffle(w);
	for (uint64_t i = 0; i < w->nr_pages; i++) {
		uint64_t page = w->perm ? w->perm[i] : i;
		uint64_t got;

		if (write)
			page_write(w, page, gen);
		else if (!page_check(w, page, gen, &got))
			note_bad(w, pass, page, got);
		if ((i & 255) == 255)
			atomic_fetch_add_explicit(&w->progress, 256, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&w->progress, w->nr_pages & 255, memory_order_relaxed);
}

/* A page the pager could not read back faults with SIGBUS (UFFDIO_POISON):
 * the worker that touched it stops and the run reports it. volatile: the
 * compiler must not drop the stores as dead. */
static __thread sigjmp_buf *volatile bus_jmp;
static __thread struct usemem_worker *volatile bus_worker;

void usemem_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	if (!bus_jmp) {
		/* Not a worker's page: die of it as we would have. */
		signal(SIGBUS, SIG_DFL);
		raise(SIGBUS);
		_exit(CLI_EXIT_RUNTIME);
	}
	bus_worker->bus_addr = si->si_addr;
	siglongjmp(*bus_jmp, 1);
}

/* The passes, until done or a SIGBUS. Return: false after a SIGBUS. */
static bool run_passes(struct usemem_worker *w)
{
	sigjmp_buf env;

	if (sigsetjmp(env, 1)) {
		bus_jmp = NULL;
		return false;
	}
	bus_worker = w;
	bus_jmp = &env;
	for (unsigned int pass = 0; pass < w->nr_passes; pass++) {
		uint64_t t0 = cli_now_ns();

		w->cur_pass = pass;
		run_pass(w, pass);
		w->pass_ns[pass] = cli_now_ns() - t0;
	}
	bus_jmp = NULL;
	return true;
}

void *usemem_worker_main(void *arg)
{
	struct usemem_worker *w = arg;

	pthread_barrier_wait(&w->sync->start);
	w->start_ns = cli_now_ns();
	w->sigbus = !run_passes(w);
	w->end_ns = cli_now_ns();
	if (w->sigbus) /* only what was touched before it */
		w->bytes = atomic_load(&w->progress) * PAGE;
	atomic_fetch_add(&w->sync->done, 1);
	return NULL;
}
