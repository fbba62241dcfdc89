// SPDX-License-Identifier: MIT
/*
 * stats.c - reading the counters and the devices while allocation runs:
 * uswap_stats_get(), uswap_device_info() and the /proc/swaps-style table.
 */
#include <stddef.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "util/percpu.h"

struct pcpu_stats *this_cpu_stats(struct uswap *u)
{
	return &u->pcpu[current_cpu(u->nr_cpus)].stats;
}

USWAP_API int uswap_stats_get(struct uswap *u, struct uswap_stats *out)
{
	struct uswap_stats st = { .size = sizeof(st), .version = USWAP_STATS_VERSION };
	size_t size;

	if (!out || out->size < offsetof(struct uswap_stats, swpout))
		return -EINVAL;
	size = out->size < sizeof(st) ? out->size : sizeof(st);
	for (unsigned int cpu = 0; cpu < u->nr_cpus; cpu++) {
		const struct pcpu_stats *p = &u->pcpu[cpu].stats;

		for (int o = 0; o < NR_ORDERS; o++) {
			st.swpout[o] += stat_read(&p->swpout[o]);
			st.swpout_fallback[o] += stat_read(&p->swpout_fallback[o]);
		}
#define X(name, description) st.name += stat_read(&p->name);
		USWAP_STATS_COUNTERS(X)
		USWAP_STATS_COUNTERS_V2(X)
#undef X
		for (int c = 0; c < USWAP_LOCK_MAX; c++) {
			st.locks[c].acquired += stat_read(&p->locks[c].acquired);
			st.locks[c].contended += stat_read(&p->locks[c].contended);
		}
	}
	st.size = (uint32_t)size;
	memcpy(out, &st, size);
	return 0;
}

/* What @si's allocator metadata costs now: the static part (descriptor,
 * cluster descriptors, per-CPU cursors) and what comes with use (a table
 * per cluster holding slots, the pool's tables, count side tables). */
static uint64_t device_metadata_bytes(struct swap_device *si)
{
	uint64_t tables = atomic_load_explicit(&si->tables_used, memory_order_relaxed) +
			  atomic_load_explicit(&si->table_pool_nr, memory_order_relaxed);
	uint64_t bytes = sizeof(*si) +
			 (uint64_t)si->nr_clusters * sizeof(*si->cluster_info) +
			 (uint64_t)si->nr_cpus * sizeof(*si->cursors) +
			 tables * sizeof(struct swap_table);

	for (uint32_t i = 0; i < si->nr_clusters; i++)
		if (__atomic_load_n(&si->cluster_info[i].ext, __ATOMIC_RELAXED))
			bytes += CLUSTER_SLOTS * sizeof(uint16_t);
	return bytes;
}

static void fill_info(struct swap_device *si, struct uswap_device_info *info,
		      struct pcpu_stats *st)
{
	memset(info, 0, sizeof(*info));
	info->type = si->type;
	info->prio = si->prio;
	info->node = si->node;
	snprintf(info->name, sizeof(info->name), "%s", si->name);
	snprintf(info->kind, sizeof(info->kind), "%s",
		 si->backend_is_file ? "file" : "partition");
	info->nr_slots = si->max;
	info->pages = si->pages;
	info->inuse = device_inuse(si, st);
	info->size_kb = info->pages * (USWAP_PAGE_SIZE / 1024);
	info->used_kb = info->inuse * (USWAP_PAGE_SIZE / 1024);
	info->nr_clusters = si->nr_clusters;
	spin_lock(&si->lock, lock_stat_of(st, USWAP_LOCK_DEVICE));
	info->free_clusters = si->free_clusters.nr;
	info->full_clusters = si->full_clusters.nr;
	for (int o = 0; o < NR_ORDERS; o++) {
		info->nonfull_clusters += si->nonfull_clusters[o].nr;
		info->frag_clusters += si->frag_clusters[o].nr;
	}
	info->discard_clusters = si->discard_clusters.nr;
	info->percpu_clusters = si->nr_clusters - info->free_clusters -
				info->full_clusters - info->nonfull_clusters -
				info->frag_clusters - si->discard_clusters.nr;
	spin_unlock(&si->lock);
	info->metadata_bytes = device_metadata_bytes(si);
	info->write_errors = atomic_load(&si->write_errors);
	info->read_errors = atomic_load(&si->read_errors);
	info->write_pauses = atomic_load(&si->write_pauses);
	info->write_paused = device_write_paused(si);
}

USWAP_API int uswap_device_info(struct uswap *u, int type, struct uswap_device_info *info)
{
	int err = -ENOENT;

	if (type < 0 || type >= USWAP_MAX_DEVICES || !info)
		return -ENOENT;
	global_lock(u); /* keeps the device from being swapped off */
	if (u->devs[type]) {
		fill_info(u->devs[type], info, this_cpu_stats(u));
		err = 0;
	}
	global_unlock(u);
	return err;
}

USWAP_API int uswap_swaps(struct uswap *u, FILE *out)
{
	struct uswap_device_info info;
	int n = 0;

	fprintf(out, "%-40s%-10s%-10s%-10s%s\n", "Filename", "Type", "Size", "Used",
		"Priority");
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		if (uswap_device_info(u, type, &info))
			continue;
		fprintf(out, "%-40s%-10s%-10llu%-10llu%d\n", info.name, info.kind,
			(unsigned long long)info.size_kb,
			(unsigned long long)info.used_kb, info.prio);
		n++;
	}
	return n;
}
