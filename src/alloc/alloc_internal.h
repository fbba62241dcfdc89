/* SPDX-License-Identifier: MIT */
/*
 * alloc_internal.h - functions shared between the files of src/alloc/, grouped by
 * the file that defines them, so this header is also a map of the layer.
 */
#ifndef USWAP_ALLOC_ALLOC_INTERNAL_H
#define USWAP_ALLOC_ALLOC_INTERNAL_H

#include <errno.h>

#include "alloc/types.h"

/* Geometry helpers */
static inline struct swap_cluster_info *cluster_of(struct swap_device *si, uint32_t off)
{
	return &si->cluster_info[off / CLUSTER_SLOTS];
}

static inline uint32_t cluster_idx(struct swap_device *si, struct swap_cluster_info *ci)
{
	return (uint32_t)(ci - si->cluster_info);
}

static inline uint32_t cluster_first(struct swap_device *si, struct swap_cluster_info *ci)
{
	return cluster_idx(si, ci) * CLUSTER_SLOTS;
}

static inline struct lock_stat *lock_stat_of(struct pcpu_stats *st, enum uswap_lock_class c)
{
	return &st->locks[c];
}

/* A macro, so the probe names the caller as the lock site. */
#define ci_lock(ci, st) spin_lock(&(ci)->lock, lock_stat_of((st), USWAP_LOCK_CLUSTER))

static inline void ci_unlock(struct swap_cluster_info *ci)
{
	spin_unlock(&ci->lock);
}

/* trace_event() - tell @u's tracer, if any (uswap_set_tracer()). */
static inline void trace_event(struct uswap *u, enum uswap_trace_event ev,
			       uswap_entry_t entry, unsigned int n)
{
	const struct uswap_tracer *t =
		atomic_load_explicit(&u->tracer, memory_order_acquire);

	if (unlikely(t))
		t->event(t->ctx, ev, entry, n);
}

/* cluster.c */
void cluster_list_init(struct cluster_list *l);
void cluster_list_add_tail_locked(struct swap_device *si, struct cluster_list *l,
				  struct swap_cluster_info *ci);
void cluster_move(struct swap_device *si, struct swap_cluster_info *ci,
		  enum cluster_flag flag, struct pcpu_stats *st);
struct swap_cluster_info *cluster_isolate(struct swap_device *si,
					  struct cluster_list *l,
					  struct pcpu_stats *st);
struct swap_cluster_info *cluster_isolate_as(struct swap_device *si,
					     struct cluster_list *l,
					     enum cluster_flag flag,
					     struct pcpu_stats *st);
void cluster_relocate(struct swap_device *si, struct swap_cluster_info *ci,
		      struct pcpu_stats *st);
#define CLUSTER_NO_TABLE UINT32_MAX /* cluster_alloc_range(): pool dry */
uint32_t cluster_alloc_range(struct swap_device *si, struct swap_cluster_info *ci,
			     uint32_t start, unsigned int order, bool wrap);
void cluster_slots_freed(struct swap_device *si, struct swap_cluster_info *ci,
			 unsigned int nr, struct pcpu_stats *st);
struct cluster_list *cluster_list_of(struct swap_device *si,
				     const struct swap_cluster_info *ci);

/* device.c */
struct swap_device *device_lookup(struct uswap *u, uswap_entry_t entry,
				  uint32_t *offset);
void device_cluster_filled(struct swap_device *si);
void device_cluster_unfilled(struct swap_device *si);
uint64_t device_inuse(struct swap_device *si, struct pcpu_stats *st);
void device_free(struct swap_device *si);
#define DEV_FLAG_FILE         0x1 /* a swap file: "file" in the Type column */
#define DEV_FLAG_PAGE_DISCARD 0x2 /* discard each cluster as it empties */
int device_swapon(struct uswap *u, const struct uswap_swapon_args *args,
		  void *backend, const struct device_hooks *hooks, unsigned int dev_flags);
int device_disable(struct uswap *u, struct swap_device *si);
uint32_t device_discard(struct swap_device *si, uint32_t max, struct pcpu_stats *st);
void device_reenable(struct uswap *u, struct swap_device *si);
void device_remove(struct uswap *u, struct swap_device *si);
void global_lock(struct uswap *u);
void global_unlock(struct uswap *u);

static inline bool device_full(struct swap_device *si)
{
	return atomic_load_explicit(&si->nr_full, memory_order_relaxed) & DEVICE_FULL;
}

bool device_pause_over(struct swap_device *si);
void device_write_failed(struct swap_device *si);
void device_read_failed(struct swap_device *si);
void device_write_done(struct swap_device *si);

/* device_write_paused() - is @si passed over after a failed write? Only
 * a paused device reads the clock; the pause ends by itself. */
static inline bool device_write_paused(struct swap_device *si)
{
	if (likely(!atomic_load_explicit(&si->write_pause_until, memory_order_relaxed)))
		return false;
	return !device_pause_over(si);
}

/* device_available() - may the ring readers try @si? */
static inline bool device_available(struct swap_device *si)
{
	return !device_full(si) && atomic_load_explicit(&si->writeok, memory_order_relaxed);
}

/* device_passed_over() - does this allocation skip @si for its write
 * pause? A skip is recorded: when nothing else has room, uswap_alloc()
 * tries again with paused devices, so a pause never turns room into
 * -ENOSPC. */
static inline bool device_passed_over(struct alloc_ctx *ctx, struct swap_device *si)
{
	if (likely(!device_write_paused(si)) || ctx->use_paused)
		return false;
	ctx->skipped_paused = true;
	return true;
}

/* alloc.c */
int device_alloc(struct alloc_ctx *ctx, struct swap_device *si,
		 unsigned int order, uint32_t *offset);
void slot_cache_drain(struct uswap *u, struct uswap_pcpu *pc,
		      struct swap_device *si, struct pcpu_stats *st);
int alloc_hooked(struct uswap *u, unsigned int order, uswap_entry_t *entry,
		 struct alloc_hook *hook);

/* queue.c */
int ring_set_rebuild(struct uswap *u);
void ring_set_free(struct ring_set *rs);
int ring_alloc(struct alloc_ctx *ctx, struct prio_ring *r, unsigned int order,
	       uswap_entry_t *entry);
void avail_rebuild(struct uswap *u);
void avail_sync(struct swap_device *si);
int avail_alloc(struct alloc_ctx *ctx, unsigned int order, uswap_entry_t *entry);

/* table.c */
uint32_t table_pool_target(const struct swap_device *si);
int table_pool_refill(struct swap_device *si);
void table_pools_refill(struct uswap *u);
void table_pool_trim(struct swap_device *si);
void table_pool_fail_refills(struct swap_device *si, uint32_t n);
void table_pool_free(struct swap_device *si);
bool cluster_table_attach(struct swap_device *si, struct swap_cluster_info *ci);
void cluster_table_detach(struct swap_device *si, struct swap_cluster_info *ci);
bool cluster_table_new(struct swap_device *si, struct swap_cluster_info *ci);
void cluster_ext_free(struct swap_cluster_info *ci);
unsigned int slot_count(const struct swap_cluster_info *ci, uint32_t ci_off);
void slot_set_count(struct swap_device *si, struct swap_cluster_info *ci,
		    uint32_t off, unsigned int count);
int slot_cache_ptr_set(struct swap_cluster_info *ci, uint32_t ci_off, void *p);
void slots_commit_locked(struct swap_device *si, struct swap_cluster_info *ci,
			 uint32_t off, unsigned int nr, bool keep_cache);
void slot_pin_cache_locked(struct swap_device *si, struct swap_cluster_info *ci,
			   uint32_t off);
struct swap_device *lock_range(struct uswap *u, uswap_entry_t entry,
			       unsigned int nr, struct pcpu_stats *st,
			       uint32_t *off, struct swap_cluster_info **ci);
int put_range(struct swap_device *si, struct swap_cluster_info *ci,
	      uint32_t off, unsigned int nr, bool cache, struct pcpu_stats *st);
void slot_release(struct uswap *u, uswap_entry_t entry, struct pcpu_stats *st);

/* The table entry of slot @ci_off of @ci: 0 (free) while the cluster has
 * no table. Context for these readers: ci->lock held. */
static inline uint64_t slot_ent(const struct swap_cluster_info *ci, uint32_t ci_off)
{
	return ci->table ? ci->table->ent[ci_off] : 0;
}

static inline bool slot_in_use(const struct swap_cluster_info *ci, uint32_t ci_off)
{
	uint64_t e = slot_ent(ci, ci_off);

	return e && !(e & ENT_BAD);
}

static inline bool slot_has_cache(const struct swap_cluster_info *ci, uint32_t ci_off)
{
	return slot_ent(ci, ci_off) & ENT_HAS_CACHE;
}

/* The swap layer's folio stored for the slot (slot_cache_ptr_set()), or
 * NULL. */
static inline void *slot_cache_ptr(const struct swap_cluster_info *ci, uint32_t ci_off)
{
	return (void *)(uintptr_t)(slot_ent(ci, ci_off) & ENT_PTR_MASK);
}

/* stats.c */
struct pcpu_stats *this_cpu_stats(struct uswap *u);

#endif /* USWAP_ALLOC_ALLOC_INTERNAL_H */
