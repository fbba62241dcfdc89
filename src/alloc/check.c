// SPDX-License-Identifier: MIT
/*
 * check.c - uswap_check(): the full consistency check that tests use as an
 * oracle at quiescent points (the role of the kernel's debug-only
 * swap_cluster_assert_empty and friends, made exhaustive).
 */
#include <stdarg.h>
#include <stdlib.h>

#include "alloc/alloc_internal.h"
#include "alloc/alloc_policy.h"

struct checker {
	struct swap_device *si;
	int errors;
};

static void bad(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	if (c->errors++ >= 20)
		return; /* enough to debug; keep counting */
	fprintf(stderr, "uswap_check: %s: ", c->si->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Every cluster on @l carries @flag (and @order for per-order lists), and
 * the list's links and length agree. Marks each visited cluster in @seen. */
static void check_list(struct checker *c, struct cluster_list *l, uint8_t flag,
		       int order, uint8_t *seen)
{
	struct swap_device *si = c->si;
	uint32_t nr = 0, prev = CLUSTER_NIL;

	for (uint32_t idx = l->head; idx != CLUSTER_NIL; idx = si->cluster_info[idx].next) {
		struct swap_cluster_info *ci = &si->cluster_info[idx];

		if (idx >= si->nr_clusters || seen[idx]++ || nr++ > si->nr_clusters) {
			bad(c, "list with flag %u is corrupt at cluster %u", flag, idx);
			return;
		}
		if (ci->flags != flag || (order >= 0 && ci->order != order))
			bad(c, "cluster %u (flag %u order %u) on list flag %u order %d",
			    idx, ci->flags, ci->order, flag, order);
		if (ci->prev != prev)
			bad(c, "cluster %u has a wrong prev link", idx);
		prev = idx;
	}
	if (prev != l->tail || nr != l->nr)
		bad(c, "list flag %u: tail/length mismatch (%u counted, %u recorded)",
		    flag, nr, l->nr);
}

static void check_lists(struct checker *c)
{
	struct swap_device *si = c->si;
	uint8_t *seen = calloc(si->nr_clusters, 1);

	if (!seen) {
		bad(c, "out of memory");
		return;
	}
	check_list(c, &si->free_clusters, CLUSTER_FLAG_FREE, -1, seen);
	check_list(c, &si->full_clusters, CLUSTER_FLAG_FULL, -1, seen);
	check_list(c, &si->discard_clusters, CLUSTER_FLAG_DISCARD, -1, seen);
	for (int o = 0; o < NR_ORDERS; o++) {
		check_list(c, &si->nonfull_clusters[o], CLUSTER_FLAG_NONFULL, o, seen);
		check_list(c, &si->frag_clusters[o], CLUSTER_FLAG_FRAG, o, seen);
	}
	for (uint32_t i = 0; i < si->nr_clusters; i++) {
		uint8_t f = si->cluster_info[i].flags;

		if (!seen[i] && f != CLUSTER_FLAG_PERCPU && f != CLUSTER_FLAG_DISCARDING)
			bad(c, "cluster %u has flag %u but is on no list", i, f);
	}
	free(seen);
}

/* Counts: each cluster's count equals its non-free entries (the header
 * and padding counted before a table exists), the device's in-use figure
 * equals the slots held by owners, the full-cluster count and the FULL
 * mark agree with the clusters, fill level with the flag, a table is
 * attached exactly while a cluster holds slots. */
static void check_counts(struct checker *c, struct pcpu_stats *st)
{
	struct swap_device *si = c->si;
	uint32_t nr_full = 0, tables = 0, mark = atomic_load(&si->nr_full);
	uint64_t inuse = 0;

	for (uint32_t i = 0; i < si->nr_clusters; i++) {
		struct swap_cluster_info *ci = &si->cluster_info[i];
		uint32_t base = i * CLUSTER_SLOTS;
		unsigned int used = 0, continued = 0;

		for (unsigned int s = 0; s < CLUSTER_SLOTS; s++) {
			uint64_t e = slot_ent(ci, s);
			bool implicit_bad = base + s == 0 || base + s >= si->max;

			used += e != 0 || (!ci->table && implicit_bad);
			inuse += slot_in_use(ci, s);
			continued += !(e & ENT_BAD) && (e & ENT_COUNT_MASK) == ENT_COUNT_MASK;
			if (ci->table && implicit_bad && e != ENT_BAD)
				bad(c, "cluster %u slot %u: header or padding not BAD", i, s);
			if ((e & ENT_PTR_MASK) && !(e & ENT_HAS_CACHE))
				bad(c, "cluster %u slot %u cached without the pin", i, s);
		}
		nr_full += ci->count == CLUSTER_SLOTS;
		tables += ci->table != NULL;
		if (used != ci->count)
			bad(c, "cluster %u count %u but %u slots used", i, ci->count, used);
		if (continued && !ci->ext)
			bad(c, "cluster %u has continued counts but no side table", i);
		if (ci->count == 0 && ci->table)
			bad(c, "cluster %u is empty but keeps its table", i);
		if ((ci->count == 0) != (ci->flags == CLUSTER_FLAG_FREE ||
					 ci->flags == CLUSTER_FLAG_DISCARD ||
					 ci->flags == CLUSTER_FLAG_DISCARDING))
			bad(c, "cluster %u: count %u with flag %u", i, ci->count, ci->flags);
		if (ci->flags == CLUSTER_FLAG_FULL && ci->count != CLUSTER_SLOTS)
			bad(c, "cluster %u on the full list with count %u", i, ci->count);
	}
	if (tables != atomic_load(&si->tables_used))
		bad(c, "%u tables attached, %u counted", tables, atomic_load(&si->tables_used));
	/* Slots parked in slot caches are allocated but not in use. */
	inuse -= atomic_load(&si->cached_slots);
	if (inuse != device_inuse(si, st))
		bad(c, "inuse %llu but %llu slots in use",
		    (unsigned long long)device_inuse(si, st), (unsigned long long)inuse);
	if ((mark & ~DEVICE_FULL) != nr_full)
		bad(c, "%u full clusters counted, %u recorded", nr_full, mark & ~DEVICE_FULL);
	if (!!(mark & DEVICE_FULL) != (nr_full == si->nr_clusters))
		bad(c, "FULL mark %s with %u of %u clusters full",
		    mark & DEVICE_FULL ? "set" : "clear", nr_full, si->nr_clusters);
}

/* GLOBAL_ROTATE / LEGACY_PRIO: each list holds exactly the writeok
 * devices that are not full, each once, keys never rising, and a device's
 * key is its priority (or -1 on its own node's list under LEGACY_PRIO). */
static void check_avail(struct checker *c, struct uswap *u)
{
	struct swap_device *si = c->si;
	unsigned int nr_lists = policy_nr_avail_lists(u);
	bool want = atomic_load(&si->writeok) && !device_full(si);

	if (!u->avail)
		return;
	if (si->on_avail != want)
		bad(c, "on the global list: %d, expected %d", si->on_avail, want);
	for (unsigned int n = 0; n < nr_lists; n++) {
		struct avail_list *l = &u->avail[n];
		unsigned int found = 0;

		for (unsigned int i = 0; i < l->nr; i++) {
			if (i && l->key[i] > l->key[i - 1])
				bad(c, "node %u list out of priority order at %u", n, i);
			if (l->dev[i] != si)
				continue;
			found++;
			int key = nr_lists > 1 && si->prio_auto &&
				  (unsigned int)si->node == n ? -1 : si->prio;
			if (l->key[i] != key)
				bad(c, "node %u list key %d, expected %d", n, l->key[i], key);
		}
		if (found != (want ? 1u : 0u))
			bad(c, "on node %u's list %u times", n, found);
	}
}

USWAP_API int uswap_check(struct uswap *u)
{
	int errors = 0;

	global_lock(u);
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		struct checker c = { .si = u->devs[type] };

		if (!c.si)
			continue;
		check_lists(&c);
		check_counts(&c, this_cpu_stats(u));
		check_avail(&c, u);
		errors += c.errors;
	}
	global_unlock(u);
	return errors ? -EUCLEAN : 0;
}
