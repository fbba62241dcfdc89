// SPDX-License-Identifier: MIT
/*
 * table.c - the per-cluster swap table: each slot's reference count,
 * HAS_CACHE pin, BAD mark and swap-cache folio in one 64-bit entry (the
 * kernel's swap table after phase III, which removed swap_map; phase IV
 * allocates the tables per cluster on use). A free cluster has no table,
 * so a slot's static cost is its share of the 32-byte cluster descriptor.
 *
 * Tables come from a per-device pool. The pool is filled with no lock
 * held (table_pool_refill(), called by uswap_alloc() between walks) and
 * popped under the cluster lock when a cluster takes its first slot, so
 * the swap-out path never allocates under a spinlock; when the pool is
 * dry the allocation stops, refills and walks again (the kernel drops its
 * locks and allocates the table the same way), and a failed refill is
 * -ENOMEM for that one folio. A cluster whose count drops to 0 gives its
 * table back to the pool; frees trim the pool down to its target.
 *
 * Counts up to ENT_COUNT_INLINE live in the entry; larger ones, up to
 * USWAP_COUNT_MAX, in the cluster's side table ci->ext (the role of count
 * continuation, and of the newest kernel's extend_table), allocated by
 * uswap_dup() outside the lock. Every operation validates all slots it
 * touches before changing any, so a bad call leaves the table as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "util/rcu.h"

/* Tables the pool is refilled to, and kept at by frees; below the low
 * mark the next uswap_alloc() refills it before it walks. A walk takes at
 * most two tables (a LOCKING_DEVICE slot-cache fill), and at most one
 * walk runs per CPU, so a pool at its low mark does not run dry unless
 * more threads than CPUs passed the check together, or the device is
 * small enough that the pool is capped at 1/32 of its clusters (so the
 * pool never costs more than 0.25 byte per slot): then the walk stops,
 * refills and walks again (alloc.c). */
uint32_t table_pool_target(const struct swap_device *si)
{
	uint32_t n = 2 * si->nr_cpus + 4;
	uint32_t cap = si->nr_clusters / 32;

	if (n > 64)
		n = 64;
	if (cap < 4)
		cap = 4;
	return n < cap ? n : cap;
}

static uint32_t pool_low(const struct swap_device *si)
{
	return table_pool_target(si) / 2;
}

/* The pool's lock stands in for the kernel's slab allocator, which the
 * lab does not model: it is not reported to the probe (util/probe.h), so
 * the lab's virtual times do not move with the pool's refills. */
static void pool_lock(struct swap_device *si)
{
	stat_inc(&si->table_lstat.acquired);
	if (likely(!atomic_exchange_explicit(&si->table_lock.locked, 1, memory_order_acquire)))
		return;
	stat_inc(&si->table_lstat.contended);
	spin_lock_wait(&si->table_lock);
}

static void pool_unlock(struct swap_device *si)
{
	atomic_store_explicit(&si->table_lock.locked, 0, memory_order_release);
}

static struct swap_table *pool_pop(struct swap_device *si)
{
	struct swap_table *t;

	pool_lock(si);
	t = si->table_pool;
	if (t) {
		memcpy(&si->table_pool, &t->ent[0], sizeof(t));
		t->ent[0] = 0;
		atomic_store_explicit(&si->table_pool_nr, si->table_pool_nr - 1,
				      memory_order_relaxed);
	}
	if (si->table_pool_nr < pool_low(si))
		atomic_fetch_or_explicit(&si->owner->tables_low, UINT32_C(1) << si->type,
					 memory_order_relaxed);
	pool_unlock(si);
	return t;
}

/* Context: any; @t all zero. */
static void pool_push(struct swap_device *si, struct swap_table *t)
{
	pool_lock(si);
	memcpy(&t->ent[0], &si->table_pool, sizeof(t));
	si->table_pool = t;
	atomic_store_explicit(&si->table_pool_nr, si->table_pool_nr + 1,
			      memory_order_relaxed);
	pool_unlock(si);
}

/*
 * table_pool_refill() - fill @si's pool up to its target.
 * Return: 0, or -ENOMEM (an allocation failed and the pool is empty; a
 * pool that other CPUs emptied again after a good refill is not that).
 * Context: no lock held.
 */
int table_pool_refill(struct swap_device *si)
{
	uint32_t target = table_pool_target(si);
	bool failed = false;

	while (atomic_load_explicit(&si->table_pool_nr, memory_order_relaxed) < target) {
		struct swap_table *t = NULL;
		bool fail;

		pool_lock(si);
		fail = si->table_fail > 0;
		if (fail)
			si->table_fail--;
		pool_unlock(si);
		if (!fail)
			t = calloc(1, sizeof(*t));
		if (!t) {
			failed = true;
			break;
		}
		pool_push(si, t);
	}
	if (failed && !atomic_load_explicit(&si->table_pool_nr, memory_order_relaxed))
		return -ENOMEM;
	return 0;
}

/*
 * table_pools_refill() - refill every pool of @u that fell below its low
 * mark (u->tables_low). A pool that stays low (no memory) is tried again
 * by the next allocation. Context: no lock held; inside an RCU read
 * section (the devices stay alive).
 */
void table_pools_refill(struct uswap *u)
{
	uint32_t low = atomic_exchange_explicit(&u->tables_low, 0, memory_order_relaxed);

	while (low) {
		int type = __builtin_ctz(low);
		struct swap_device *si = rcu_deref(u->devs[type]);

		low &= low - 1;
		if (si && table_pool_refill(si) == 0 &&
		    atomic_load_explicit(&si->table_pool_nr, memory_order_relaxed) >= pool_low(si))
			continue;
		if (si)
			atomic_fetch_or_explicit(&u->tables_low, UINT32_C(1) << type,
						 memory_order_relaxed);
	}
}

/* table_pool_trim() - free what the pool holds past twice its target
 * (down to the target). Context: no lock held. */
void table_pool_trim(struct swap_device *si)
{
	uint32_t target = table_pool_target(si);

	if (atomic_load_explicit(&si->table_pool_nr, memory_order_relaxed) <= 2 * target)
		return;
	while (atomic_load_explicit(&si->table_pool_nr, memory_order_relaxed) > target) {
		struct swap_table *t = pool_pop(si);

		if (!t)
			break;
		free(t);
	}
}

/* table_pool_fail_refills() - tests: empty @si's pool and make its next
 * @n table allocations fail as if out of memory (the kernel's failslab
 * role). Context: no lock held. */
void table_pool_fail_refills(struct swap_device *si, uint32_t n)
{
	struct swap_table *t;

	pool_lock(si);
	si->table_fail = n;
	pool_unlock(si);
	while ((t = pool_pop(si)))
		free(t);
}

/* Device teardown: free the pool. Context: nothing else runs. */
void table_pool_free(struct swap_device *si)
{
	struct swap_table *t;

	while ((t = pool_pop(si)))
		free(t);
}

/* Mark what a cluster can never hand out in a fresh table: the header
 * slot and padding past the device's end (bad blocks get their table at
 * swapon). */
static void table_mark_implicit_bad(struct swap_device *si, struct swap_cluster_info *ci,
				    struct swap_table *t)
{
	uint32_t base = cluster_first(si, ci);

	if (base == 0)
		t->ent[0] = ENT_BAD;
	for (uint32_t off = si->max > base ? si->max : base; off < base + CLUSTER_SLOTS; off++)
		t->ent[off - base] = ENT_BAD;
}

/*
 * cluster_table_attach() - give @ci a table from the pool.
 * Return: true, or false (the pool is dry: nothing changed).
 * Context: ci->lock held; @ci has no table.
 */
bool cluster_table_attach(struct swap_device *si, struct swap_cluster_info *ci)
{
	struct swap_table *t = pool_pop(si);

	if (!t)
		return false;
	table_mark_implicit_bad(si, ci, t);
	__atomic_store_n(&ci->table, t, __ATOMIC_RELAXED);
	atomic_fetch_add_explicit(&si->tables_used, 1, memory_order_relaxed);
	return true;
}

/* cluster_table_detach() - an emptied cluster gives its (all-zero) table
 * back to the pool. Context: ci->lock held; ci->count 0. */
void cluster_table_detach(struct swap_device *si, struct swap_cluster_info *ci)
{
	struct swap_table *t = ci->table;

	if (!t)
		return;
	__atomic_store_n(&ci->table, NULL, __ATOMIC_RELAXED);
	atomic_fetch_sub_explicit(&si->tables_used, 1, memory_order_relaxed);
	pool_push(si, t);
}

/* Build-time: a table that holds bad blocks from swapon on. Return:
 * false on no memory. Context: the device is not published yet. */
bool cluster_table_new(struct swap_device *si, struct swap_cluster_info *ci)
{
	struct swap_table *t = calloc(1, sizeof(*t));

	if (!t)
		return false;
	table_mark_implicit_bad(si, ci, t);
	ci->table = t;
	atomic_fetch_add_explicit(&si->tables_used, 1, memory_order_relaxed);
	return true;
}

unsigned int slot_count(const struct swap_cluster_info *ci, uint32_t ci_off)
{
	uint64_t e = slot_ent(ci, ci_off);
	unsigned int field = (unsigned int)((e & ENT_COUNT_MASK) >> ENT_COUNT_SHIFT);

	if (e & ENT_BAD)
		return 0;
	return field == ENT_COUNT_CONT ? ci->ext[ci_off] : field;
}

static bool cluster_has_continued(const struct swap_table *t)
{
	for (unsigned int i = 0; i < CLUSTER_SLOTS; i++)
		if (!(t->ent[i] & ENT_BAD) &&
		    (t->ent[i] & ENT_COUNT_MASK) == ENT_COUNT_MASK)
			return true;
	return false;
}

/* The side table pointer is also read, without ci->lock, by the metadata
 * figure of uswap_device_info(): hence the atomic stores. */
void cluster_ext_free(struct swap_cluster_info *ci)
{
	free(ci->ext);
	__atomic_store_n(&ci->ext, NULL, __ATOMIC_RELAXED);
}

/* cluster_ext_install() - give @ci the side table *@spare (allocated by
 * the caller outside the lock) unless it has one; *@spare is NULLed when
 * taken. Context: ci->lock held. */
static void cluster_ext_install(struct swap_cluster_info *ci, uint16_t **spare)
{
	if (ci->ext || !*spare)
		return;
	__atomic_store_n(&ci->ext, *spare, __ATOMIC_RELAXED);
	*spare = NULL;
}

/* Store @count for the slot, keeping its pin and cached folio. A count
 * past ENT_COUNT_INLINE needs ci->ext in place; the side table is freed
 * when its last user drops back into the entry.
 * Context: ci->lock held; the slot is not BAD. */
void slot_set_count(struct swap_device *si, struct swap_cluster_info *ci,
		    uint32_t off, unsigned int count)
{
	uint32_t ci_off = off % CLUSTER_SLOTS;
	uint64_t *e = &ci->table->ent[ci_off];
	bool was_continued = (*e & ENT_COUNT_MASK) == ENT_COUNT_MASK;
	unsigned int field = count;

	(void)si;
	if (count > ENT_COUNT_INLINE) {
		uswap_assert(ci->ext);
		ci->ext[ci_off] = (uint16_t)count;
		field = ENT_COUNT_CONT;
	}
	*e = (*e & ~ENT_COUNT_MASK) | ((uint64_t)field << ENT_COUNT_SHIFT);
	if (was_continued && field != ENT_COUNT_CONT && !cluster_has_continued(ci->table))
		cluster_ext_free(ci);
}

/*
 * slot_cache_ptr_set() - store the swap layer's folio pointer @p (NULL:
 * none) in the slot's entry.
 * Return: 0, -EOVERFLOW (@p does not fit the entry's 48 bits: nothing
 * changed). Context: ci->lock held; the slot holds the HAS_CACHE pin.
 */
int slot_cache_ptr_set(struct swap_cluster_info *ci, uint32_t ci_off, void *p)
{
	uint64_t v = (uint64_t)(uintptr_t)p;
	uint64_t *e = &ci->table->ent[ci_off];

	if (v & ~ENT_PTR_MASK)
		return -EOVERFLOW;
	uswap_assert(*e & ENT_HAS_CACHE);
	*e = (*e & ~ENT_PTR_MASK) | v;
	return 0;
}

/*
 * slots_commit_locked() - the swap path's commit of a written folio: each
 * slot of [off, off + nr) gets its owner's first reference and, unless
 * @keep_cache (a clean copy stays in the swap cache), loses the HAS_CACHE
 * pin the allocation gave it. The slots stay in use either way.
 * Context: ci->lock held; every slot pinned with a count of 0.
 */
void slots_commit_locked(struct swap_device *si, struct swap_cluster_info *ci,
			 uint32_t off, unsigned int nr, bool keep_cache)
{
	lock_assert_held(&ci->lock);
	for (uint32_t i = off; i < off + nr; i++) {
		slot_set_count(si, ci, i, 1);
		if (!keep_cache)
			ci->table->ent[i % CLUSTER_SLOTS] &= ~ENT_HAS_CACHE;
	}
}

/*
 * slot_pin_cache_locked() - set the HAS_CACHE pin of slot @off (kept if
 * already set), so that a slot whose last reference just went stays
 * allocated until the swap path has made its device forget the data.
 * Context: ci->lock held; the slot is in use.
 */
void slot_pin_cache_locked(struct swap_device *si, struct swap_cluster_info *ci,
			   uint32_t off)
{
	(void)si;
	lock_assert_held(&ci->lock);
	ci->table->ent[off % CLUSTER_SLOTS] |= ENT_HAS_CACHE;
}

/* Report a free of a slot that holds no reference once per instance-less
 * process (the kernel's "Unused swap offset entry") and count every one. */
static int bad_free(struct pcpu_stats *st, uswap_entry_t entry)
{
	stat_inc(&st->bad_free);
	WARN_ONCE(1, "free of unused swap entry type %u offset %llu",
		  uswap_entry_type(entry), (unsigned long long)uswap_entry_offset(entry));
	return -ENOENT;
}

/* Look up and lock the cluster holding [entry, entry + nr).
 * Return: the device, or NULL (-EINVAL) when the range is not inside one
 * cluster of a swapped-on device. Context: inside an RCU read section. */
struct swap_device *lock_range(struct uswap *u, uswap_entry_t entry,
			       unsigned int nr, struct pcpu_stats *st,
			       uint32_t *off, struct swap_cluster_info **ci)
{
	struct swap_device *si = device_lookup(u, entry, off);

	if (!si || nr == 0 || nr > CLUSTER_SLOTS ||
	    *off / CLUSTER_SLOTS != (*off + nr - 1) / CLUSTER_SLOTS ||
	    *off + nr > si->max)
		return NULL;
	*ci = cluster_of(si, *off);
	ci_lock(*ci, st);
	return si;
}

static void trace_freed(struct swap_device *si, struct swap_cluster_info *ci,
			uint32_t off, unsigned int nr);

/*
 * put_range() - drop one reference (@cache false) or the cache pin (@cache
 * true) of each slot in [off, off + nr) and free the slots left unused.
 * A cluster left empty gives its table back (cluster_slots_freed()), so
 * the tracer hears of the frees first.
 * Return: 0 or -ENOENT (some slot lacks what is dropped; nothing changed).
 * Context: ci->lock held.
 */
int put_range(struct swap_device *si, struct swap_cluster_info *ci,
	      uint32_t off, unsigned int nr, bool cache, struct pcpu_stats *st)
{
	uint32_t base = off % CLUSTER_SLOTS;
	unsigned int freed = 0;
	uint64_t *ent;

	if (!ci->table)
		return -ENOENT; /* every slot is free */
	ent = ci->table->ent;
	if (cache) {
		uint64_t bad = 0, rest = 0;

		/* In use and pinned is one test: the pin, and not BAD. OR-ed
		 * over the run without a branch, so a large folio's check is
		 * vectorised; @rest says whether any slot keeps anything. */
		for (uint32_t i = base; i < base + nr; i++) {
			bad |= (ent[i] & (ENT_BAD | ENT_HAS_CACHE)) ^ ENT_HAS_CACHE;
			rest |= ent[i] & ~ENT_HAS_CACHE;
		}
		if (bad)
			return -ENOENT;
		if (!rest) { /* pins only: the whole run is free */
			memset(ent + base, 0, nr * sizeof(*ent));
			freed = nr;
		} else {
			for (uint32_t i = base; i < base + nr; i++) {
				ent[i] &= ~ENT_HAS_CACHE;
				freed += ent[i] == 0;
			}
		}
	} else {
		for (uint32_t i = base; i < base + nr; i++)
			if (!slot_in_use(ci, i) || !slot_count(ci, i))
				return -ENOENT;
		for (uint32_t i = base; i < base + nr; i++) {
			slot_set_count(si, ci, i, slot_count(ci, i) - 1);
			freed += ent[i] == 0;
		}
	}
	if (freed && unlikely(atomic_load_explicit(&si->owner->tracer, memory_order_relaxed)))
		trace_freed(si, ci, off, nr);
	if (freed)
		cluster_slots_freed(si, ci, freed, st);
	return 0;
}

/* Tell the tracer of each run of slots in [off, off + nr) now free. */
static __cold void trace_freed(struct swap_device *si, struct swap_cluster_info *ci,
			       uint32_t off, unsigned int nr)
{
	const uint64_t *ent = ci->table->ent;
	uint32_t base = cluster_first(si, ci);

	for (uint32_t i = off; i < off + nr;) {
		uint32_t j = i;

		if (ent[i - base]) {
			i++;
			continue;
		}
		while (j < off + nr && !ent[j - base])
			j++;
		trace_event(si->owner, USWAP_TRACE_FREE,
			    uswap_entry((unsigned int)si->type, i), j - i);
		i = j;
	}
}

/* put_entries() under LOCKING_DEVICE (alloc_policy.h): the free takes the
 * device lock before the cluster lock, as 6.12's frees went through
 * si->lock (one at a time here, not in return-cache batches). */
static __cold int put_entries_device_locked(struct uswap *u, uswap_entry_t entry,
					    unsigned int nr, bool cache)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	struct swap_device *si, *locked;
	struct swap_cluster_info *ci;
	uint32_t off;
	int err = -EINVAL;

	rcu_read_begin();
	locked = device_lookup(u, entry, &off);
	if (locked)
		spin_lock(&locked->alloc_lock, lock_stat_of(st, USWAP_LOCK_DEVICE));
	si = lock_range(u, entry, nr, st, &off, &ci);
	if (si) {
		err = put_range(si, ci, off, nr, cache, st);
		ci_unlock(ci);
	}
	if (locked)
		spin_unlock(&locked->alloc_lock);
	if (si)
		table_pool_trim(si);
	rcu_read_end(&u->rcu_hb);
	if (err == -EINVAL)
		return err;
	return err ? bad_free(st, entry) : 0;
}

static int put_entries(struct uswap *u, uswap_entry_t entry, unsigned int nr,
		       bool cache)
{
	struct pcpu_stats *st;
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;
	int err;

	if (unlikely(u->policy.lock == USWAP_LOCKING_DEVICE))
		return put_entries_device_locked(u, entry, nr, cache);
	st = this_cpu_stats(u);
	rcu_read_begin();
	si = lock_range(u, entry, nr, st, &off, &ci);
	if (!si) {
		rcu_read_end(&u->rcu_hb);
		return -EINVAL;
	}
	err = put_range(si, ci, off, nr, cache, st);
	ci_unlock(ci);
	table_pool_trim(si);
	rcu_read_end(&u->rcu_hb);
	return err ? bad_free(st, entry) : 0;
}

/* slot_release() - drop the cache pin of one slot nobody was handed
 * (a slot cache's), which frees it. Context: inside an RCU read section;
 * may hold this CPU's lock, so the pool is not trimmed here. */
void slot_release(struct uswap *u, uswap_entry_t entry, struct pcpu_stats *st)
{
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;

	si = lock_range(u, entry, 1, st, &off, &ci);
	if (!si)
		return;
	WARN_ONCE(put_range(si, ci, off, 1, true, st), "slot cache held a free slot");
	ci_unlock(ci);
}

USWAP_API int uswap_put_folio(struct uswap *u, uswap_entry_t entry, unsigned int order)
{
	if (order >= NR_ORDERS || uswap_entry_offset(entry) % (1u << order))
		return -EINVAL;
	return put_entries(u, entry, 1u << order, true);
}

USWAP_API int uswap_free(struct uswap *u, uswap_entry_t entry, unsigned int nr)
{
	return put_entries(u, entry, nr, false);
}

/* Run @op on one slot with its cluster locked. */
static long with_slot(struct uswap *u, uswap_entry_t entry,
		      long (*op)(struct swap_device *, struct swap_cluster_info *,
				 uint32_t, void *),
		      void *arg)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	struct swap_cluster_info *ci;
	struct swap_device *si;
	uint32_t off;
	long ret = -EINVAL;

	rcu_read_begin();
	si = lock_range(u, entry, 1, st, &off, &ci);
	if (si) {
		ret = op(si, ci, off, arg);
		ci_unlock(ci);
	}
	rcu_read_end(&u->rcu_hb);
	return ret;
}

/* Add a reference; a count leaving the entry needs the side table, which
 * *arg (uint16_t *, allocated unlocked) provides: without one, -EAGAIN
 * asks the caller to allocate it and come back. */
static long dup_op(struct swap_device *si, struct swap_cluster_info *ci,
		   uint32_t off, void *arg)
{
	uint32_t ci_off = off % CLUSTER_SLOTS;
	unsigned int count;

	if (!slot_in_use(ci, ci_off))
		return -ENOENT;
	count = slot_count(ci, ci_off);
	if (count >= USWAP_COUNT_MAX)
		return -EOVERFLOW;
	if (count + 1 > ENT_COUNT_INLINE) {
		cluster_ext_install(ci, arg);
		if (!ci->ext)
			return -EAGAIN;
	}
	slot_set_count(si, ci, off, count + 1);
	return 0;
}

USWAP_API int uswap_dup(struct uswap *u, uswap_entry_t entry)
{
	uint16_t *spare = NULL;
	long rc = with_slot(u, entry, dup_op, &spare);

	if (rc == -EAGAIN) {
		spare = calloc(CLUSTER_SLOTS, sizeof(*spare));
		if (!spare)
			return -ENOMEM;
		rc = with_slot(u, entry, dup_op, &spare);
		free(spare); /* NULL if the cluster took it */
	}
	return (int)rc;
}

static long pin_op(struct swap_device *si, struct swap_cluster_info *ci,
		   uint32_t off, void *arg)
{
	uint32_t ci_off = off % CLUSTER_SLOTS;

	(void)si;
	(void)arg;
	if (!slot_in_use(ci, ci_off))
		return -ENOENT;
	if (slot_has_cache(ci, ci_off))
		return -EEXIST;
	ci->table->ent[ci_off] |= ENT_HAS_CACHE;
	return 0;
}

USWAP_API int uswap_cache_pin(struct uswap *u, uswap_entry_t entry)
{
	return (int)with_slot(u, entry, pin_op, NULL);
}

static long count_op(struct swap_device *si, struct swap_cluster_info *ci,
		     uint32_t off, void *arg)
{
	uint32_t ci_off = off % CLUSTER_SLOTS;
	uint64_t e = slot_ent(ci, ci_off);
	bool *has_cache = arg;

	(void)si;
	if (off == 0 || (e & ENT_BAD)) /* the header is BAD before any table */
		return -EIO;
	if (!e)
		return -ENOENT;
	if (has_cache)
		*has_cache = e & ENT_HAS_CACHE;
	return slot_count(ci, ci_off);
}

USWAP_API long uswap_slot_count(struct uswap *u, uswap_entry_t entry, bool *has_cache)
{
	return with_slot(u, entry, count_op, has_cache);
}
