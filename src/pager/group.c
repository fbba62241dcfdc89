// SPDX-License-Identifier: MIT
/*
 * group.c - charge groups: one resident limit for the pagers of several
 * processes (a memory cgroup's memory.max for all its tasks).
 *
 * The group is a page of counters in memory the caller maps shared into
 * every member process, changed only by lock-free atomic operations
 * (they work across processes on a shared mapping, and a member that dies
 * in the middle leaves no lock held). It holds the total charge and one
 * slot per member pager: the member's process (pid and start time, which
 * together name one process for the machine's uptime) and what it has
 * charged. A pager charges a folio to the total and to its slot
 * (reclaim.c), so the total is the sum of the slots.
 *
 * A process that ends (exit, kill -9, exec) does not uncharge: its memory
 * is simply gone. uswap_pager_group_reap(), called by a process that
 * outlives the members (uswap run, every 50 ms), finds the slots whose
 * process is gone and takes their charge off the total; a pager that
 * joins after an exec takes over its own process's old slot the same
 * way (same pid, same start time, another image number).
 *
 * Pressure: a member that must charge and holds less than an equal share
 * of the group (or has nothing of its own to evict) bumps pressure_seq;
 * every member's kswapd looks at it each GROUP_POLL_MS and reclaims its
 * own folios while the group is short of room. The member that charges
 * reclaims its own folios meanwhile, as before: a member cannot evict
 * another process's memory, so the group's limit holds at once and the
 * shares even out over the next polls (a memory cgroup evicts the
 * coldest pages of any of its tasks instead).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pager/pager_internal.h"

#define PAGER_GROUP_MAGIC 0x75737767u /* "uswg" */

_Static_assert(sizeof(struct pager_group) <= USWAP_PAGER_GROUP_BYTES,
	       "USWAP_PAGER_GROUP_BYTES is the group's size in the ABI");

USWAP_API int uswap_pager_group_init(void *mem, size_t len, uint64_t limit_bytes)
{
	struct pager_group *g = mem;

	if (!mem || len < USWAP_PAGER_GROUP_BYTES || ((uintptr_t)mem & 7) ||
	    limit_bytes < (1u << 20))
		return -EINVAL;
	memset(mem, 0, sizeof(*g));
	g->limit_pages = limit_bytes / USWAP_PAGE_SIZE;
	atomic_store_explicit(&g->magic, PAGER_GROUP_MAGIC, memory_order_release);
	return 0;
}

struct pager_group *group_check(void *mem)
{
	struct pager_group *g = mem;

	if (!mem || ((uintptr_t)mem & 7) ||
	    atomic_load_explicit(&g->magic, memory_order_acquire) != PAGER_GROUP_MAGIC)
		return NULL;
	return g;
}

#define START_UNKNOWN UINT64_MAX

/* When @pid started, in clock ticks since boot (field 22 of
 * /proc/PID/stat); 0 when it is gone, START_UNKNOWN when it could not be
 * read (out of descriptors): never taken for gone. */
static uint64_t proc_start(pid_t pid)
{
	char path[64], buf[512], *p;
	unsigned long long start = 0;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT || errno == ESRCH ? 0 : START_UNKNOWN;
	n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return 0; /* a zombie reads empty: its memory is gone */
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
	/* By hand, not sscanf(): a fork child creates its pager before the
	 * pager has the heap, and sscanf() reads the locale's data, which the
	 * program's setlocale() put there (a swapped-out page reads as zeros
	 * in the child then: a crash in bash's command substitutions). */
	for (unsigned int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || p[1] < '0' || p[1] > '9')
		return START_UNKNOWN;
	for (p++; *p >= '0' && *p <= '9'; p++)
		start = start * 10 + (unsigned long long)(*p - '0');
	return start;
}

/* @nr off @v, never below 0: a charge that a reap took off already
 * (a slot wrongly taken for gone) must not wrap the count. */
static void sub_floor(_Atomic uint64_t *v, uint64_t nr)
{
	uint64_t cur = atomic_load_explicit(v, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(v, &cur, cur > nr ? cur - nr : 0,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/* Take a slot's charge off the total and free it. Context: its process
 * is gone, or is the caller after an exec: nobody else changes it. */
static void slot_drop(struct pager_group *g, struct pager_group_member *m)
{
	uint64_t left = atomic_exchange_explicit(&m->resident, 0, memory_order_relaxed);

	if (left)
		sub_floor(&g->resident, left);
	atomic_store_explicit(&m->start, 0, memory_order_relaxed);
	atomic_store_explicit(&m->pid, 0, memory_order_release);
	sub_floor(&g->live, 1);
}

/* This program image's number: drawn once per image (an exec loads the
 * library anew; a fork's child shares it, but not its pid). */
static uint64_t image_id(void)
{
	static _Atomic uint64_t id;
	uint64_t v = atomic_load_explicit(&id, memory_order_relaxed), zero = 0;

	if (v)
		return v;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
	}
	v |= 1;
	if (!atomic_compare_exchange_strong(&id, &zero, v))
		v = zero; /* another thread drew first */
	return v;
}

struct pager_group_member *group_join(struct pager_group *g)
{
	pid_t me = getpid();
	uint64_t start = proc_start(me), image = image_id();
	struct pager_group_member *mine = NULL;

	if (!start || start == START_UNKNOWN)
		return NULL;
	for (unsigned int i = 0; i < PAGER_GROUP_MEMBERS; i++) {
		struct pager_group_member *m = &g->member[i];

		/* This process's slot from an image before an exec: its
		 * memory is gone. (Other pagers of this image keep theirs.) */
		if (atomic_load_explicit(&m->pid, memory_order_acquire) == me &&
		    atomic_load_explicit(&m->start, memory_order_relaxed) == start &&
		    atomic_load_explicit(&m->image, memory_order_relaxed) != image)
			slot_drop(g, m);
	}
	for (unsigned int i = 0; i < PAGER_GROUP_MEMBERS && !mine; i++) {
		int32_t free_pid = 0;

		if (atomic_compare_exchange_strong_explicit(&g->member[i].pid, &free_pid, me,
							    memory_order_acq_rel,
							    memory_order_relaxed))
			mine = &g->member[i];
	}
	if (!mine)
		return NULL;
	atomic_store_explicit(&mine->resident, 0, memory_order_relaxed);
	atomic_store_explicit(&mine->image, image, memory_order_relaxed);
	atomic_store_explicit(&mine->start, start, memory_order_release);
	atomic_fetch_add_explicit(&g->members, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g->live, 1, memory_order_relaxed);
	return mine;
}

void group_leave(struct pager_group *g, struct pager_group_member *m)
{
	slot_drop(g, m);
}

USWAP_API long uswap_pager_group_reap(void *mem)
{
	struct pager_group *g = group_check(mem);
	long reaped = 0;

	if (!g)
		return -EINVAL;
	for (unsigned int i = 0; i < PAGER_GROUP_MEMBERS; i++) {
		struct pager_group_member *m = &g->member[i];
		pid_t pid = atomic_load_explicit(&m->pid, memory_order_acquire);
		uint64_t start = atomic_load_explicit(&m->start, memory_order_acquire);

		if (!pid || !start) /* free, or being joined */
			continue;
		uint64_t now = proc_start(pid);

		if (now == start || now == START_UNKNOWN)
			continue;
		/* Gone (or its pid reused by another process). */
		if (atomic_load_explicit(&m->pid, memory_order_acquire) == pid &&
		    atomic_load_explicit(&m->start, memory_order_relaxed) == start) {
			slot_drop(g, m);
			reaped++;
		}
	}
	return reaped;
}

USWAP_API int uswap_pager_group_stats(const void *mem, struct uswap_pager_group_stats *st)
{
	struct pager_group *g = group_check((void *)mem);

	if (!g || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->limit_bytes = g->limit_pages * USWAP_PAGE_SIZE;
	st->resident_bytes = atomic_load(&g->resident) * USWAP_PAGE_SIZE;
	st->resident_peak_bytes = atomic_load(&g->peak) * USWAP_PAGE_SIZE;
	st->pressure = atomic_load(&g->pressure);
	st->over_limit = atomic_load(&g->over_limit);
	st->members = atomic_load(&g->members);
	for (unsigned int i = 0; i < PAGER_GROUP_MEMBERS; i++)
		st->members_now += atomic_load(&g->member[i].pid) != 0;
	return 0;
}

static void group_note_peak(struct pager_group *g, uint64_t now)
{
	uint64_t peak = atomic_load_explicit(&g->peak, memory_order_relaxed);

	while (now > peak &&
	       !atomic_compare_exchange_weak_explicit(&g->peak, &peak, now, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

bool group_try_charge(struct pager_group *g, struct pager_group_member *m, unsigned int nr)
{
	uint64_t cur = atomic_load_explicit(&g->resident, memory_order_relaxed);

	while (cur + nr <= g->limit_pages) {
		if (atomic_compare_exchange_weak_explicit(&g->resident, &cur, cur + nr,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			atomic_fetch_add_explicit(&m->resident, nr, memory_order_relaxed);
			group_note_peak(g, cur + nr);
			return true;
		}
	}
	return false;
}

void group_force_charge(struct pager_group *g, struct pager_group_member *m, uint64_t nr,
			bool over)
{
	uint64_t now = atomic_fetch_add_explicit(&g->resident, nr, memory_order_relaxed) + nr;

	atomic_fetch_add_explicit(&m->resident, nr, memory_order_relaxed);
	group_note_peak(g, now);
	if (over)
		atomic_fetch_add_explicit(&g->over_limit, 1, memory_order_relaxed);
}

void group_uncharge(struct pager_group *g, struct pager_group_member *m, uint64_t nr)
{
	sub_floor(&m->resident, nr);
	sub_floor(&g->resident, nr);
}

uint64_t group_free_pages(struct pager_group *g)
{
	uint64_t res = atomic_load_explicit(&g->resident, memory_order_relaxed);

	return res < g->limit_pages ? g->limit_pages - res : 0;
}

void group_raise_pressure(struct pager_group *g)
{
	atomic_fetch_add_explicit(&g->pressure, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g->pressure_seq, 1, memory_order_release);
}

bool group_below_share(struct pager_group *g, struct pager_group_member *m)
{
	uint64_t live = atomic_load_explicit(&g->live, memory_order_relaxed);

	return live > 1 && atomic_load_explicit(&m->resident, memory_order_relaxed) * live <
				   atomic_load_explicit(&g->resident, memory_order_relaxed);
}

uint32_t group_pressure_seq(struct pager_group *g)
{
	return atomic_load_explicit(&g->pressure_seq, memory_order_acquire);
}
