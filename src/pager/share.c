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
 * folio with a reference of its own. Until uswap_pager_share_parent()
 * the pager's lock stays write-held: nothing is evicted or faulted in,
 * so every folio the fork copies unmapped is in the record, and none is
 * half mapped. A folio the child mapped anyway (touched before its pager
 * began: fork.c says how) gets the record's contents folded in by
 * uswap_pager_share_child() and its references dropped; so does one in
 * no region of the child's pager, written into place.
 */
#include <errno.h>
#include <stdlib.h>

#include <uswap/slots.h>

#include "pager/pager_internal.h"

struct shared_folio {
	char *addr;
	uint32_t whole;                           /* PF_WHOLE or 0 */
	uint64_t slot[1u << USWAP_PAGER_MAX_ORDER]; /* the first nr used */
};

struct uswap_pager_share {
	struct uswap *u;
	unsigned int order, nr;
	size_t n, cap;
	struct shared_folio *f;
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
	atomic_fetch_add_explicit(&p->hold, 1, memory_order_acq_rel);
	/* Write-held: the passes in flight are done, and no fault changes a
	 * folio while it is recorded. */
	pthread_rwlock_wrlock(&p->lock);
	for (size_t i = 0; i < p->nr_regions; i++) {
		struct pager_region *r = p->regions[i];

		for (size_t idx = 0; idx < r->nr_folios; idx++) {
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
	/* Still write-held until the fork is done: a fault served meanwhile
	 * could be half mapped (a folio's pages one by one) when the kernel
	 * copies the page tables, and the child would see part of it. */
	*out = s;
	return loaded;
}

USWAP_API void uswap_pager_share_parent(struct uswap_pager *p)
{
	pthread_rwlock_unlock(&p->lock);
	uswap_pager_release(p);
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
 * place where the child has no region there. Return: 1 if taken, 0 if
 * not (the record's references are the caller's to drop), -EIO.
 * Context: child->lock write-held. */
static int take(struct uswap_pager *child, const struct shared_folio *f, char *buf)
{
	struct pager_region *r = region_find(child, (uintptr_t)f->addr);
	size_t idx, page0;
	uint32_t st;

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
	free(s->f);
	free(s);
	return lost ? -EIO : taken;
}

USWAP_API void uswap_pager_share_free(struct uswap_pager_share *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		put_folio(s->u, &s->f[i], s->nr);
	free(s->f);
	free(s);
}
