// SPDX-License-Identifier: MIT
/*
 * stress_pager.c - the pager half of `uswap stress`: threads write and
 * read the pages of one userfaultfd region kept under a resident limit,
 * against a model of every page's last version.
 *
 * Thread t owns the pages p with p % threads == t, so the model needs no
 * lock, while the pager sees several threads fault on one region at
 * once. A page read back wrong is a violation unless the pager reported
 * its folio lost to a read error first (on_error, before the folio is
 * mapped); a lost folio must read as the poison byte, never as other
 * data. Folios are 4 KiB, so every injected read error loses one page.
 */
#include "cli.h"
#include "stress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pworker {
	struct stress *s;
	pthread_t th;
	unsigned int id;
	uint64_t rng;
};

struct stress_pager {
	struct uswap_pager *p;
	unsigned char *mem;
	size_t nr_pages;
	uint32_t *version;     /* per page; 0: never written (reads zero) */
	_Atomic uint8_t *lost; /* per page: reported lost, not yet read */
	struct pworker *w;
	unsigned int nr_w;
};

static void make_page(unsigned char *page, size_t p, uint32_t version)
{
	uint64_t *w = (uint64_t *)page, seed = p * 0x9e3779b97f4a7c15ull ^ version;

	if (!version) {
		memset(page, 0, USWAP_PAGE_SIZE);
		return;
	}
	w[0] = p;
	w[1] = version;
	for (size_t i = 2; i < USWAP_PAGE_SIZE / 8; i++)
		w[i] = stress_rnd(&seed);
}

/* uswap_pager_error_fn: remember which page was lost. Runs before the
 * folio is mapped, so its owner sees the mark when it sees the poison. */
static void on_error(void *ctx, void *addr, int err)
{
	struct stress *s = ctx;
	struct stress_pager *pg = s->pager;
	size_t p = (size_t)((unsigned char *)addr - pg->mem) / USWAP_PAGE_SIZE;

	(void)err;
	if (p < pg->nr_pages)
		atomic_store(&pg->lost[p], 1);
	atomic_fetch_add(&s->c.pager_lost, 1);
}

static bool all_poison(const unsigned char *page)
{
	for (size_t i = 0; i < USWAP_PAGE_SIZE; i++)
		if (page[i] != USWAP_PAGER_POISON_BYTE)
			return false;
	return true;
}

static void page_write(struct stress_pager *pg, size_t p)
{
	make_page(pg->mem + p * USWAP_PAGE_SIZE, p, ++pg->version[p]);
	atomic_store(&pg->lost[p], 0);
}

/* Check page @p (the access faults it in). A page reported lost must
 * hold the poison byte; it is then written anew, as a program would. */
static void page_read(struct stress *s, struct stress_pager *pg, size_t p, unsigned char *want)
{
	const unsigned char *got = pg->mem + p * USWAP_PAGE_SIZE;

	make_page(want, p, pg->version[p]);
	if (memcmp(got, want, USWAP_PAGE_SIZE) == 0)
		return;
	if (atomic_load(&pg->lost[p])) {
		if (!all_poison(got))
			stress_violation(s, &s->c.wrong, "pager page %zu: reported lost but "
					 "holds neither its data nor the poison byte", p);
		page_write(pg, p);
		return;
	}
	stress_violation(s, &s->c.wrong, "pager page %zu: wrong data (version %u)", p,
			 pg->version[p]);
	page_write(pg, p);
}

static void *pworker_main(void *arg)
{
	struct pworker *w = arg;
	struct stress *s = w->s;
	struct stress_pager *pg = s->pager;
	unsigned char want[USWAP_PAGE_SIZE];
	size_t mine = (pg->nr_pages - w->id + pg->nr_w - 1) / pg->nr_w;

	while (!atomic_load(&s->stop) && mine) {
		size_t p = w->id + (size_t)(stress_rnd(&w->rng) % mine) * pg->nr_w;

		pthread_rwlock_rdlock(&s->quiesce);
		if (stress_rnd(&w->rng) & 1) {
			page_write(pg, p);
			atomic_fetch_add(&s->c.pager_writes, 1);
		} else {
			page_read(s, pg, p, want);
			atomic_fetch_add(&s->c.pager_reads, 1);
		}
		pthread_rwlock_unlock(&s->quiesce);
	}
	return NULL;
}

/*
 * stress_pager_start() - create the pager on the pager set's instance, its
 * region and threads. Return: 0; -EPERM/-ENOSYS (no userfaultfd here:
 * the caller runs without the pager and says so); another -errno.
 */
int stress_pager_start(struct stress *s, char *err, size_t errlen)
{
	const struct stress_opts *o = s->o;
	struct uswap_pager_config cfg = {
		.limit_bytes = o->pager_limit,
		.flags = USWAP_PAGER_NO_POISON,
		.on_error = on_error,
		.error_ctx = s,
	};
	struct stress_pager *pg = calloc(1, sizeof(*pg));
	int rc;

	if (!pg)
		return -ENOMEM;
	s->pager = pg;
	pg->nr_pages = o->pager_size / USWAP_PAGE_SIZE;
	pg->version = calloc(pg->nr_pages, sizeof(*pg->version));
	pg->lost = calloc(pg->nr_pages, sizeof(*pg->lost));
	pg->w = calloc(o->pager_threads, sizeof(*pg->w));
	if (!pg->version || !pg->lost || !pg->w)
		return -ENOMEM;
	rc = uswap_pager_create(s->sets[1].u, &cfg, &pg->p);
	if (rc) {
		snprintf(err, errlen, "uswap_pager_create: %s", cli_errno_name(rc));
		return rc;
	}
	rc = uswap_region_create(pg->p, pg->nr_pages * USWAP_PAGE_SIZE, (void **)&pg->mem);
	if (rc) {
		snprintf(err, errlen, "uswap_region_create: %s", cli_errno_name(rc));
		return rc;
	}
	/* Every thread derives its slice from the final count: set first. */
	pg->nr_w = o->pager_threads;
	for (unsigned int i = 0; i < o->pager_threads; i++) {
		struct pworker *w = &pg->w[i];

		w->s = s;
		w->id = i;
		w->rng = o->seed * 7919 + i;
		if (pthread_create(&w->th, NULL, pworker_main, w)) {
			atomic_store(&s->stop, true);
			for (unsigned int k = 0; k < i; k++)
				pthread_join(pg->w[k].th, NULL);
			pg->nr_w = 0;
			snprintf(err, errlen, "cannot start pager thread %u", i);
			return -EAGAIN;
		}
	}
	return 0;
}

void stress_pager_join(struct stress *s)
{
	for (unsigned int i = 0; s->pager && i < s->pager->nr_w; i++)
		pthread_join(s->pager->w[i].th, NULL);
}

/* stress_pager_checkpoint() - the pager's side of the oracle: the limit
 * holds unless it reported going over it. Context: quiesced. (The
 * instance's uswap_check() needs no reclaim running, so it runs once
 * the pager is gone, at the end.) */
void stress_pager_checkpoint(struct stress *s)
{
	struct uswap_pager_stats st = { .size = sizeof(st) };

	if (!s->pager || !s->pager->p || uswap_pager_stats_get(s->pager->p, &st))
		return;
	if (st.resident_bytes > st.limit_bytes && !st.over_limit)
		stress_violation(s, &s->c.bad_refs, "pager: %llu bytes resident over a limit "
				 "of %llu, and no over_limit reported",
				 (unsigned long long)st.resident_bytes,
				 (unsigned long long)st.limit_bytes);
}

/* stress_pager_drain() - read every page back, then destroy the region
 * (its slots are freed). Context: pager threads stopped. */
void stress_pager_drain(struct stress *s)
{
	struct stress_pager *pg = s->pager;
	unsigned char want[USWAP_PAGE_SIZE];

	if (!pg || !pg->mem)
		return;
	for (size_t p = 0; p < pg->nr_pages; p++)
		page_read(s, pg, p, want);
	uswap_region_destroy(pg->p, pg->mem);
	pg->mem = NULL;
}

void stress_pager_resident(struct stress *s, double *resident_mib, double *limit_mib)
{
	struct uswap_pager_stats st = { .size = sizeof(st) };

	*resident_mib = *limit_mib = 0;
	if (!s->pager || !s->pager->p || uswap_pager_stats_get(s->pager->p, &st))
		return;
	*resident_mib = (double)st.resident_bytes / (1 << 20);
	*limit_mib = (double)st.limit_bytes / (1 << 20);
}

uint64_t stress_pager_fault_ns_max(struct stress *s)
{
	struct uswap_pager_stats st = { .size = sizeof(st) };

	if (!s->pager || !s->pager->p || uswap_pager_stats_get(s->pager->p, &st))
		return 0;
	return st.fault_ns_max;
}

void stress_pager_free(struct stress *s)
{
	struct stress_pager *pg = s->pager;

	if (!pg)
		return;
	uswap_pager_destroy(pg->p);
	free(pg->version);
	free((void *)pg->lost);
	free(pg->w);
	free(pg);
	s->pager = NULL;
}
