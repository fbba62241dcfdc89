// SPDX-License-Identifier: MIT
/*
 * cluster.c - cluster lists, isolation, relocation and the scan for a free
 * aligned run inside one cluster.
 *
 * The lists are index-linked (two u32 per cluster instead of two pointers)
 * and protected by the device list lock si->lock, which is the only
 * device-wide lock allocation ever takes, and only to move a cluster
 * between lists (kernel 6.14+, seed "rework of swap allocator locks").
 * Everything inside a cluster is under its own ci->lock.
 */
#include <string.h>

#include "alloc/alloc_internal.h"

static inline struct swap_cluster_info *ci_at(struct swap_device *si, uint32_t idx)
{
	return &si->cluster_info[idx];
}

/* List length, read without si->lock to skip taking it for an empty list.
 * Written only under si->lock. */
static inline uint32_t list_nr(const struct cluster_list *l)
{
	return __atomic_load_n(&l->nr, __ATOMIC_RELAXED);
}

void cluster_list_init(struct cluster_list *l)
{
	l->head = l->tail = CLUSTER_NIL;
	l->nr = 0;
}

/* Context: si->lock held (or the device not yet published). */
void cluster_list_add_tail_locked(struct swap_device *si, struct cluster_list *l,
				  struct swap_cluster_info *ci)
{
	uint32_t idx = cluster_idx(si, ci);

	ci->next = CLUSTER_NIL;
	ci->prev = l->tail;
	if (l->tail == CLUSTER_NIL)
		l->head = idx;
	else
		ci_at(si, l->tail)->next = idx;
	l->tail = idx;
	__atomic_store_n(&l->nr, l->nr + 1, __ATOMIC_RELAXED);
}

static void list_del_locked(struct swap_device *si, struct cluster_list *l,
			    struct swap_cluster_info *ci)
{
	if (ci->prev == CLUSTER_NIL)
		l->head = ci->next;
	else
		ci_at(si, ci->prev)->next = ci->next;
	if (ci->next == CLUSTER_NIL)
		l->tail = ci->prev;
	else
		ci_at(si, ci->next)->prev = ci->prev;
	ci->prev = ci->next = CLUSTER_NIL;
	__atomic_store_n(&l->nr, l->nr - 1, __ATOMIC_RELAXED);
}

/* The list a cluster's flag (and, for nonfull/frag, its order) puts it
 * on; NULL for a CPU's current cluster, which is on none. */
struct cluster_list *cluster_list_of(struct swap_device *si,
				     const struct swap_cluster_info *ci)
{
	switch (ci->flags) {
	case CLUSTER_FLAG_FREE:    return &si->free_clusters;
	case CLUSTER_FLAG_NONFULL: return &si->nonfull_clusters[ci->order];
	case CLUSTER_FLAG_FRAG:    return &si->frag_clusters[ci->order];
	case CLUSTER_FLAG_FULL:    return &si->full_clusters;
	case CLUSTER_FLAG_DISCARD: return &si->discard_clusters;
	default:                   return NULL;
	}
}

/*
 * cluster_move() - put @ci on the list for @flag (none for PERCPU). The
 * only list mutator besides isolation (move_cluster() in the kernel).
 * Moving to FREE drops the cluster's order: the next user picks a new one.
 * Context: ci->lock held; takes si->lock.
 */
void cluster_move(struct swap_device *si, struct swap_cluster_info *ci,
		  enum cluster_flag flag, struct pcpu_stats *st)
{
	struct cluster_list *l;

	lock_assert_held(&ci->lock);
	spin_lock(&si->lock, lock_stat_of(st, USWAP_LOCK_DEVICE));
	l = cluster_list_of(si, ci);
	if (l)
		list_del_locked(si, l, ci);
	if (flag == CLUSTER_FLAG_FREE)
		ci->order = 0;
	ci->flags = (uint8_t)flag;
	l = cluster_list_of(si, ci);
	if (l)
		cluster_list_add_tail_locked(si, l, ci);
	probe_step(USWAP_STEP_MOVE, 1);
	spin_unlock(&si->lock);
	stat_inc(&st->cluster_moves);
}

/*
 * cluster_isolate() - take the first cluster of @l whose lock is free off
 * the list, mark it PERCPU and return it locked (isolate_lock_cluster()).
 * Only trylock under si->lock: the normal order is ci->lock -> si->lock.
 * Return: the locked cluster, or NULL when @l is empty or every cluster on
 * it is momentarily locked by another CPU.
 */
struct swap_cluster_info *cluster_isolate(struct swap_device *si,
					  struct cluster_list *l,
					  struct pcpu_stats *st)
{
	return cluster_isolate_as(si, l, CLUSTER_FLAG_PERCPU, st);
}

/* cluster_isolate() giving the isolated cluster @flag, an off-list state. */
struct swap_cluster_info *cluster_isolate_as(struct swap_device *si,
					     struct cluster_list *l,
					     enum cluster_flag flag,
					     struct pcpu_stats *st)
{
	struct swap_cluster_info *ci;
	uint32_t idx;

	if (!list_nr(l))
		return NULL; /* why take the shared lock to see nothing */
	spin_lock(&si->lock, lock_stat_of(st, USWAP_LOCK_DEVICE));
	for (idx = l->head; idx != CLUSTER_NIL; idx = ci->next) {
		ci = ci_at(si, idx);
		stat_inc(&st->list_scan_steps);
		probe_step(USWAP_STEP_LIST, 1);
		if (!spin_trylock_stat(&ci->lock, lock_stat_of(st, USWAP_LOCK_CLUSTER)))
			continue;
		list_del_locked(si, l, ci);
		ci->flags = (uint8_t)flag;
		probe_step(USWAP_STEP_MOVE, 1);
		spin_unlock(&si->lock);
		stat_inc(&st->cluster_moves);
		return ci;
	}
	spin_unlock(&si->lock);
	return NULL;
}

/*
 * cluster_relocate() - file a cluster its CPU is done with by fill level
 * (relocate_cluster()): empty -> FREE, full -> FULL, else FRAG (a scan for
 * its order failed or it has no room left for it).
 * Context: ci->lock held.
 */
void cluster_relocate(struct swap_device *si, struct swap_cluster_info *ci,
		      struct pcpu_stats *st)
{
	enum cluster_flag flag;

	lock_assert_held(&ci->lock);
	if (ci->flags == CLUSTER_FLAG_DISCARD || ci->flags == CLUSTER_FLAG_DISCARDING)
		return;
	if (ci->count == 0)
		flag = CLUSTER_FLAG_FREE;
	else if (ci->count == CLUSTER_SLOTS)
		flag = CLUSTER_FLAG_FULL;
	else
		flag = CLUSTER_FLAG_FRAG;
	if (ci->flags != flag)
		cluster_move(si, ci, flag, st);
}

/* Free entries are zero. A run of a large order is checked by OR-ing
 * its entries (no branch per entry, so the compiler vectorises it) after
 * the first one, which alone settles most busy runs. */
static bool range_is_free(const uint64_t *ent, unsigned int nr)
{
	uint64_t any = ent[0];

	if (any)
		return false;
	for (unsigned int i = 1; i < nr; i++)
		any |= ent[i];
	return !any;
}

/* First zero entry in [from, to), or @to. This reads 8 bytes a slot
 * where memchr() read swap_map's one: the price of the table (see
 * docs/benchmarks.md, "The swap table"). */
static uint32_t find_free_slot(const uint64_t *ent, uint32_t from, uint32_t to)
{
	uint32_t off = from;

	while (off < to && ent[off])
		off++;
	return off;
}

/* First free naturally aligned run of @nr slots starting in [from, to)
 * (offsets in the cluster), or -1. @from is aligned to @nr; runs never
 * cross the cluster end. The lab is charged per 64 slots scanned, the
 * unit it has always counted (one swap_map cache line), so its virtual
 * times do not move with the entry's size. */
static int find_free_run(const uint64_t *ent, uint32_t from, uint32_t to,
			 unsigned int nr)
{
	if (nr == 1) {
		uint32_t off = find_free_slot(ent, from, to);

		probe_step(USWAP_STEP_MAP, ((off < to ? off + 1 : to) - from + 63) / 64);
		return off < to ? (int)off : -1;
	}
	for (uint32_t off = from; off < to; off += nr)
		if (range_is_free(ent + off, nr)) {
			probe_step(USWAP_STEP_MAP, (off + nr - from + 63) / 64);
			return (int)off;
		}
	probe_step(USWAP_STEP_MAP, (to - from + 63) / 64);
	return -1;
}

/*
 * cluster_alloc_range() - find and take 2^@order free aligned slots in @ci,
 * scanning from @start to the cluster end and, if @wrap, then from the
 * cluster start (alloc_swap_scan_cluster() + cluster_alloc_range()).
 * Taken slots get the HAS_CACHE pin; an empty cluster takes @order and a
 * table from the device's pool. Refused once swapoff cleared writeok:
 * that check under ci->lock is what lets swapoff know no allocator is
 * still inside the device.
 * Return: the first slot's offset; 0 (no room; offset 0 is the header);
 * CLUSTER_NO_TABLE (room, but the pool is dry: refill and come back).
 * Context: ci->lock held.
 */
uint32_t cluster_alloc_range(struct swap_device *si, struct swap_cluster_info *ci,
			     uint32_t start, unsigned int order, bool wrap)
{
	unsigned int nr = 1u << order;
	uint32_t base = cluster_first(si, ci);
	uint32_t end = base + CLUSTER_SLOTS;
	uint64_t *ent;
	int found;

	lock_assert_held(&ci->lock);
	if (ci->count + nr > CLUSTER_SLOTS)
		return 0;
	if (!atomic_load_explicit(&si->writeok, memory_order_relaxed))
		return 0;
	if (!ci->table && !cluster_table_attach(si, ci))
		return CLUSTER_NO_TABLE;
	if (ci->count == 0 || start < base || start >= end)
		start = base;
	start &= ~(nr - 1);
	ent = ci->table->ent;
	found = find_free_run(ent, start - base, CLUSTER_SLOTS, nr);
	if (found < 0 && wrap && start > base)
		found = find_free_run(ent, 0, start - base, nr);
	if (found < 0)
		return 0;
	for (unsigned int i = 0; i < nr; i++)
		ent[(uint32_t)found + i] = ENT_HAS_CACHE;
	probe_step(USWAP_STEP_SLOT, nr);
	if (ci->count == 0)
		ci->order = (uint8_t)order;
	ci->count = (uint16_t)(ci->count + nr);
	if (ci->count == CLUSTER_SLOTS)
		device_cluster_filled(si);
	return base + (uint32_t)found;
}

/*
 * cluster_slots_freed() - account @nr slots of @ci that just became free
 * and file the cluster: empty -> FREE (always, even a CPU's current one, so
 * every wholly free cluster can serve order 9), FULL or FRAG -> NONFULL
 * (it has room again: worth a full scan; partial_free_cluster()). A CPU's
 * current cluster stays where it is: its owner will find the room.
 * Context: ci->lock held.
 */
void cluster_slots_freed(struct swap_device *si, struct swap_cluster_info *ci,
			 unsigned int nr, struct pcpu_stats *st)
{
	lock_assert_held(&ci->lock);
	uswap_assert(ci->count >= nr);
	if (ci->count == CLUSTER_SLOTS)
		device_cluster_unfilled(si);
	ci->count = (uint16_t)(ci->count - nr);
	stat_add(&st->free_slots, nr);
	probe_step(USWAP_STEP_SLOT, nr);
	if (ci->count == 0) {
		cluster_ext_free(ci); /* no slot can hold a continued count */
		cluster_table_detach(si, ci);
		/* A page-discard device must forget the data before the
		 * cluster is reused: the swap layer discards it, then frees it
		 * (swap_cluster_schedule_discard()). */
		cluster_move(si, ci, si->page_discard ? CLUSTER_FLAG_DISCARD
						      : CLUSTER_FLAG_FREE, st);
	} else if (ci->flags == CLUSTER_FLAG_FULL || ci->flags == CLUSTER_FLAG_FRAG) {
		cluster_move(si, ci, CLUSTER_FLAG_NONFULL, st);
	}
}
