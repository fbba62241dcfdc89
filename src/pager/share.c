// SPDX-License-Identifier: MIT
/*
 * share.c - fork() without reading back, for pagers that serve processes
 * from outside (targets, uswap run --daemon): the child's pager takes the
 * parent's swapped-out folios on the same slots, each slot's count raised
 * (uswap_dup()), as the kernel's fork shares swap entries
 * (swap_duplicate() in copy_nonpresent_pte()). Each process then frees its
 * own references; the slot goes with the last one. One instance serves
 * both, so file and NBD tiers are shared as well as memory ones.
 *
 * The parent's pager cannot see the fork, so the share is taken just
 * before it: uswap_pager_share_prepare() stops eviction, waits for the
 * reclaim passes and faults in flight, and records every swapped-out
 * folio with a reference of its own. Eviction stays stopped until
 * uswap_pager_share_parent(), so every folio the fork copies unmapped is
 * in the record.
 *
 * Faults are served meanwhile. The forking thread runs the program's
 * libc between its atfork handlers and the copy of the page tables (its
 * malloc's locks, its name-service state), and its other threads run
 * too: a fault there that waited for the fork to end, or one in a thread
 * holding a lock the forking thread waits for, would never end (a Python
 * fork under `uswap run --daemon` hung so). A recorded folio swapped in
 * during the window keeps its record and is marked: the fork either
 * copied the parent's page to the child (served before the copy: the
 * child has it, with whatever the parent wrote before the fork) or did
 * not (served after: the record's contents are the parent's at the
 * fork). uswap_pager_share_parent() tells them apart once the fork is
 * done: a page the fork copied is mapped in both processes, so the
 * parent's pagemap does not say it is exclusively mapped (PM_MMAP_
 * EXCLUSIVE, bit 56); the child's share waits for that.
 *
 * uswap_pager_share_child() takes each recorded folio the child has with
 * no page and lets go of those the fork copied. One it has mapped
 * otherwise (touched before its pager began: fork.c says how) gets the
 * record's contents folded in where its bytes are zero (folio_fold())
 * and its references dropped; so does one in no region of the child's
 * pager, written into place. One case is wrong: a folio swapped in
 * during the window, given a zero byte over a non-zero one by the parent
 * before the copy, and written again by either process after the copy
 * but before the parent's pagemap was read, reads the old byte in the
 * child (a written page is no longer shared, so it looks as if the fork
 * had not copied it). pager_stats.fork_window counts the folios swapped
 * in during windows, so a run can say whether that could arise at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <uswap/slots.h>

#include "pager/pager_internal.h"

struct shared_folio {
	char *addr;
	uint32_t whole;                           /* PF_WHOLE or 0 */
	_Atomic bool served;                      /* swapped in during the window */
	bool copied;                              /* ...and before the page
						     tables' copy: the child has it */
	uint64_t slot[1u << USWAP_PAGER_MAX_ORDER]; /* the first nr used */
};

struct uswap_pager_share {
	struct uswap *u;
	unsigned int order, nr;
	size_t n, cap;
	struct shared_folio *f;                   /* by address */
	int pagemap;                              /* the parent's, or -1 */
	pthread_mutex_t lock;
	pthread_cond_t done;                      /* parent_done set */
	bool parent_done;                         /* share_parent() has sorted
						     the served folios */
};

/* One more reference to each slot of the folio; undone if one fails. */
static int dup_folio(struct uswap *u, const uint64_t *slot, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++) {
		int err = slot[i] ? uswap_dup(u, (uswap_entry_t){ slot[i] }) : 0;

		if (err) {
			while (i--)
				if (slot[i])
					uswap_swap_free(u, (uswap_entry_t){ slot[i] }, 0);
			return err;
		}
	}
	return 0;
}

/* Drop the record's references (the per-slot references dup_folio()
 * took, page by page, whatever the folio's allocation was). */
static void put_folio(struct uswap *u, const struct shared_folio *f, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++)
		if (f->slot[i])
			uswap_swap_free(u, (uswap_entry_t){ f->slot[i] }, 0);
}

static int record(struct uswap_pager_share *s, struct pager_region *r, size_t idx,
		  uint32_t st)
{
	struct shared_folio *f;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		void *a = realloc(s->f, cap * sizeof(*s->f));

		if (!a)
			return -ENOMEM;
		s->f = a;
		s->cap = cap;
	}
	f = &s->f[s->n];
	f->addr = folio_addr(r, idx);
	f->whole = st & PF_WHOLE;
	atomic_init(&f->served, false);
	f->copied = false;
	for (unsigned int i = 0; i < s->nr; i++)
		f->slot[i] = atomic_load_explicit(&r->slot[idx * s->nr + i], memory_order_relaxed);
	if (dup_folio(s->u, f->slot, s->nr))
		return -ENOMEM;
	s->n++;
	return 0;
}

USWAP_API long uswap_pager_share_prepare(struct uswap_pager *p, struct uswap_pager_share **out)
{
	struct uswap_pager_share *s;
	long loaded = 0;

	if (!p || !out)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->u = p->u;
	s->order = p->order;
	s->nr = p->nr;
	s->pagemap = p->remote ? fcntl(p->pagemap, F_DUPFD_CLOEXEC, 0) : -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->done, NULL);
	atomic_fetch_add_explicit(&p->hold, 1, memory_order_acq_rel);
	/* Write-held: the passes in flight are done, and no fault changes a
	 * folio while it is recorded. */
	pthread_rwlock_wrlock(&p->lock);
	for (size_t i = 0; i < p->nr_regions; i++) {
		struct pager_region *r = p->regions[i];

		for (size_t idx = 0, end = region_used(r); idx < end; idx++) {
			uint32_t st = atomic_load_explicit(&r->state[idx], memory_order_acquire);

			if (pf_state(st) != PF_SWAPPED || !record(s, r, idx, st))
				continue;
			/* No reference to share (a count at its most, no
			 * memory): the folio comes in, and the fork copies it. */
			atomic_store_explicit(&r->state[idx], (st & PF_WHOLE) | PF_MOVING,
					      memory_order_relaxed);
			pthread_mutex_lock(&p->unuse_lock);
			folio_load(p, r, idx, st, true);
			pthread_mutex_unlock(&p->unuse_lock);
			loaded++;
		}
	}
	/* Faults go on (the header says why); eviction stays stopped. */
	atomic_store_explicit(&p->fork_share, s, memory_order_release);
	pthread_rwlock_unlock(&p->lock);
	*out = s;
	return loaded;
}

/* Free @s itself; its references are gone. */
static void share_destroy(struct uswap_pager_share *s)
{
	if (s->pagemap >= 0)
		close(s->pagemap);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->done);
	free(s->f);
	free(s);
}

/* The record's folio at @addr, or NULL. */
static struct shared_folio *share_find(struct uswap_pager_share *s, const char *addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->f[mid].addr == addr)
			return &s->f[mid];
		if (s->f[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void share_note_swapin(struct uswap_pager *p, const char *addr, unsigned int n)
{
	struct uswap_pager_share *s = atomic_load_explicit(&p->fork_share, memory_order_acquire);

	if (!s)
		return;
	atomic_fetch_add_explicit(&p->cnt.fork_window, n, memory_order_relaxed);
	for (unsigned int i = 0; i < n; i++) {
		struct shared_folio *f = share_find(s, addr + (size_t)i * p->folio_bytes);

		if (f)
			atomic_store_explicit(&f->served, true, memory_order_relaxed);
	}
}

/* Whether the fork copied @f's page to the child: a page of it is mapped
 * and not exclusively (the header says why). */
static bool share_copied(const struct uswap_pager_share *s, const struct shared_folio *f)
{
	uint64_t e[1u << USWAP_PAGER_MAX_ORDER];
	off_t off = (off_t)((uintptr_t)f->addr / USWAP_PAGE_SIZE * sizeof(*e));

	if (pread(s->pagemap, e, s->nr * sizeof(*e), off) != (ssize_t)(s->nr * sizeof(*e)))
		return false; /* the parent is gone: fold, as for a touch */
	for (unsigned int i = 0; i < s->nr; i++)
		if ((e[i] & PM_PRESENT) && !(e[i] & PM_MMAP_EXCLUSIVE))
			return true;
	return false;
}

USWAP_API void uswap_pager_share_parent(struct uswap_pager *p, struct uswap_pager_share *s)
{
	if (!p)
		return;
	/* Write-held for a moment: the faults in flight have marked what
	 * they brought in, and no later one looks at @s. */
	pthread_rwlock_wrlock(&p->lock);
	atomic_store_explicit(&p->fork_share, NULL, memory_order_release);
	pthread_rwlock_unlock(&p->lock);
	/* Still held: a served folio the fork copied is mapped in the parent
	 * until it is read here. Evicted first (the hold ended), it would
	 * look not copied, and the child would fold the record's older
	 * bytes into its copy where that has zeros. */
	for (size_t i = 0; s && i < s->n; i++)
		if (atomic_load_explicit(&s->f[i].served, memory_order_relaxed) &&
		    s->pagemap >= 0)
			s->f[i].copied = share_copied(s, &s->f[i]);
	uswap_pager_release(p);
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->parent_done = true;
	pthread_cond_broadcast(&s->done);
	pthread_mutex_unlock(&s->lock);
}

/* @f, mapped in @child (touched before its pager began): folded with the
 * record's copy (folio_fold()), through @buf's two folios. Return: 0 or
 * -EIO. */
static int fold(struct uswap_pager *child, const struct shared_folio *f, char *buf)
{
	if (slots_swap_in(child, f->slot, f->whole != 0, buf) < 0)
		return -EIO;
	pager_count(child, fork_folded);
	return folio_fold(child, f->addr, buf, buf + child->folio_bytes) < 0 ? -EIO : 0;
}

/* @f where @child has no region (one its agent could not adopt: plain
 * memory there, and the fork copied no page of it): its contents written
 * into place, with what the child wrote there first kept (folio_fold()).
 * Return: 0, or -EIO. */
static int place(struct uswap_pager *child, const struct shared_folio *f, char *buf)
{
	if (slots_swap_in(child, f->slot, f->whole != 0, buf) < 0)
		return -EIO;
	return folio_fold(child, f->addr, buf, buf + child->folio_bytes) < 0 ? -EIO : 0;
}

/* Give @f to @child where it has the folio with no page (the fork copied
 * it unmapped); fold it where the child has it mapped; write it into
 * place where the child has no region there; leave it where the fork
 * copied the parent's page. Return: 1 if taken, 0 if not (the record's
 * references are the caller's to drop), -EIO.
 * Context: child->lock write-held. */
static int take(struct uswap_pager *child, const struct shared_folio *f, char *buf)
{
	struct pager_region *r = region_find(child, (uintptr_t)f->addr);
	size_t idx, page0;
	uint32_t st;

	if (f->copied)
		return 0;
	if (!r)
		return place(child, f, buf);
	if ((size_t)(f->addr - r->base) % child->folio_bytes)
		return 0;
	idx = (size_t)(f->addr - r->base) / child->folio_bytes;
	st = atomic_load_explicit(&r->state[idx], memory_order_relaxed);
	if (pf_state(st) == PF_RESIDENT)
		return fold(child, f, buf);
	if (st != PF_NONE)
		return 0;
	page0 = idx * child->nr;
	region_note_used(r, idx + 1);
	for (unsigned int i = 0; i < child->nr; i++) {
		atomic_store_explicit(&r->slot[page0 + i], f->slot[i], memory_order_relaxed);
		if (f->slot[i])
			rmap_set(child, f->slot[i],
				 ((uint64_t)(r->id + 1) << 32) | (uint64_t)(page0 + i));
	}
	atomic_store_explicit(&r->state[idx], PF_SWAPPED | f->whole, memory_order_release);
	return 1;
}

USWAP_API long uswap_pager_share_child(struct uswap_pager *child, struct uswap_pager_share *s)
{
	long taken = 0, lost = 0;
	char *buf;

	if (!s)
		return -EINVAL;
	if (!child || child->u != s->u || child->order != s->order) {
		uswap_pager_share_free(s);
		return -EINVAL;
	}
	buf = malloc(2 * child->folio_bytes); /* fold()'s */
	if (!buf) {
		uswap_pager_share_free(s);
		return -ENOMEM;
	}
	/* Which folios the fork copied is known once the parent's side is
	 * done (uswap_pager_share_parent()). */
	pthread_mutex_lock(&s->lock);
	while (!s->parent_done)
		pthread_cond_wait(&s->done, &s->lock);
	pthread_mutex_unlock(&s->lock);
	pthread_rwlock_wrlock(&child->lock);
	for (size_t i = 0; i < s->n; i++) {
		int rc = take(child, &s->f[i], buf);

		if (rc > 0) {
			taken++;
			continue;
		}
		lost += rc < 0;
		put_folio(s->u, &s->f[i], s->nr);
	}
	pthread_rwlock_unlock(&child->lock);
	free(buf);
	share_destroy(s);
	return lost ? -EIO : taken;
}

USWAP_API void uswap_pager_share_free(struct uswap_pager_share *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		put_folio(s->u, &s->f[i], s->nr);
	share_destroy(s);
}
