// SPDX-License-Identifier: MIT
/*
 * adopt.c - the program's own anonymous mappings, swapped where they are.
 *
 * A runtime that maps its heap itself never calls malloc for it, so the
 * region heap (malloc.c, mmap.c) never sees it: the JVM reserves its heap
 * PROT_NONE and commits it with mmap(MAP_FIXED), V8 reserves its pages
 * PROT_NONE and commits them with mprotect(). Every private anonymous
 * mapping the kernel makes for a program thread through mmap(), read-write
 * or PROT_NONE and of ADOPT_MIN bytes or more, is adopted in place as a
 * pager region (uswap_region_adopt()), and what the program then does to
 * it is passed on before (and after) the kernel does it:
 *  - mmap(MAP_FIXED) or munmap() over it: uswap_region_replaced(), which
 *    frees the old pages' slots and charge and registers an anonymous
 *    replacement again; a region unmapped whole is let go of;
 *  - mprotect() to anything but read-write: uswap_region_mlock() first
 *    (the evictor can neither read nor move such folios); back to
 *    read-write: uswap_region_munlock();
 *  - madvise(MADV_DONTNEED or MADV_FREE): uswap_region_discard();
 *  - mremap(): uswap_region_disown() first (every folio read in), and the
 *    moved mapping is adopted anew.
 * A range that is not folio-aligned (--order above 0) makes its region be
 * disowned instead: correct, no longer swapped.
 *
 * Not covered, and so counted as unmanaged by `uswap run`: mappings made
 * by raw system calls (Go's runtime) or inside libc (thread stacks), and
 * those made before the agent was ready.
 *
 * fork(): uswap_pager_hold() brings every region in, adopted ones too; the
 * child adopts its copies under its own pager and locks again what is not
 * read-write (read from /proc/self/maps).
 *
 * Locking: adopt_lock serialises the table and the pager calls that
 * change regions; it is taken by program threads only (the pager's
 * threads never map memory through here), so waiting in the pager for
 * faults in flight while holding it cannot deadlock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <uswap/uswap.h>

#include "agent/agent.h"

#define ADOPT_MIN ((size_t)256 << 10) /* smaller mappings stay the kernel's */
#define RW (PROT_READ | PROT_WRITE)

/* The adopted regions, sorted by address; glibc memory. */
static struct adopted { char *base; size_t len; } *tab;
static size_t nr_tab, cap_tab;
static pthread_mutex_t adopt_lock = PTHREAD_MUTEX_INITIALIZER;

void agent_adopt_lock(void)
{
	pthread_mutex_lock(&adopt_lock);
}

void agent_adopt_unlock(void)
{
	pthread_mutex_unlock(&adopt_lock);
}

static size_t folio_bytes(void)
{
	return (size_t)USWAP_PAGE_SIZE << agent.order;
}

/* Whether calls are passed to the pager: a program thread, a pager. */
static bool active(void)
{
	return !t_internal && atomic_load_explicit(&agent.ready, memory_order_acquire) &&
	       agent_has_pager();
}

static bool adoptable(int prot, int flags)
{
	return (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE &&
	       !(flags & (MAP_GROWSDOWN | MAP_STACK | MAP_HUGETLB)) &&
	       (prot == PROT_NONE || prot == RW);
}

static void tab_remove(size_t i)
{
	memmove(&tab[i], &tab[i + 1], (nr_tab - i - 1) * sizeof(*tab));
	nr_tab--;
}

static bool tab_insert(char *base, size_t len)
{
	size_t i = 0;

	if (nr_tab == cap_tab) {
		size_t cap = cap_tab ? 2 * cap_tab : 64;
		void *t = realloc(tab, cap * sizeof(*tab));

		if (!t)
			return false;
		tab = t;
		cap_tab = cap;
	}
	while (i < nr_tab && tab[i].base < base)
		i++;
	memmove(&tab[i + 1], &tab[i], (nr_tab - i) * sizeof(*tab));
	tab[i] = (struct adopted){ base, len };
	nr_tab++;
	return true;
}

/* Adopt the folio-aligned inside of a new mapping [@a, @a + @len).
 * Context: adopt_lock, t_internal raised. */
static void adopt_new(char *a, size_t len)
{
	size_t fb = folio_bytes();
	char *b = (char *)(((uintptr_t)a + fb - 1) & ~(uintptr_t)(fb - 1));
	char *e = (char *)((uintptr_t)(a + len) & ~(uintptr_t)(fb - 1));

	if (len < ADOPT_MIN || e <= b)
		return;
	if (agent_pg_adopt(b, (size_t)(e - b)))
		return; /* e.g. it meets a region: the kernel's, as before */
	if (!tab_insert(b, (size_t)(e - b)))
		agent_pg_disown(b);
}

/* Let go of region @i (correct, no longer swapped). Context: adopt_lock. */
static void drop(size_t i)
{
	int rc = agent_pg_disown(tab[i].base);

	if (rc && rc != -ENOENT)
		fprintf(stderr, "uswap run: agent: giving back %p: %s\n", (void *)tab[i].base,
			strerror(-rc));
	tab_remove(i);
}

enum op { OP_BEFORE_MAP, OP_AFTER_MAP_ANON, OP_AFTER_MAP_OTHER, OP_UNMAP, OP_LOCK,
	  OP_UNLOCK, OP_DISCARD, OP_DISOWN };

/* Apply @op to the part of each adopted region inside [@a, @a + @len).
 * Return: whether any region met the range. Context: adopt_lock,
 * t_internal raised. */
static bool for_overlaps(char *a, size_t len, enum op op)
{
	size_t fb = folio_bytes();
	bool met = false;

	for (size_t i = 0; i < nr_tab;) {
		char *rb = tab[i].base, *re = rb + tab[i].len;
		char *b = a > rb ? a : rb, *e = a + len < re ? a + len : re;
		size_t n = (size_t)(e - b);

		if (e <= b) {
			i++;
			continue;
		}
		met = true;
		if (op == OP_DISOWN || (uintptr_t)b % fb || n % fb) {
			drop(i);
			continue;
		}
		switch (op) {
		case OP_BEFORE_MAP:
			agent_pg_replaced(b, n, false);
			break;
		case OP_AFTER_MAP_ANON:
		case OP_AFTER_MAP_OTHER:
			agent_pg_replaced(b, n, op == OP_AFTER_MAP_ANON);
			break;
		case OP_UNMAP:
			agent_pg_replaced(b, n, false);
			if (b == rb && e == re) { /* nothing of it is left */
				drop(i);
				continue;
			}
			break;
		case OP_LOCK:
			if (agent_pg_mlock(b, n) == -EIO)
				fprintf(stderr, "uswap run: agent: read errors under %p\n",
					(void *)b);
			break;
		case OP_UNLOCK:
			agent_pg_munlock(b, n);
			break;
		case OP_DISCARD:
			agent_pg_discard(b, n);
			break;
		case OP_DISOWN:
			break;
		}
		i++;
	}
	return met;
}

void *agent_adopt_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	bool fixed = (flags & MAP_FIXED) != 0, met = false;
	void *m;

	if (!active())
		return agent_real_mmap(addr, len, prot, flags, fd, off);
	pthread_mutex_lock(&adopt_lock);
	t_internal++;
	if (fixed)
		met = for_overlaps(addr, len, OP_BEFORE_MAP);
	m = agent_real_mmap(addr, len, prot, flags, fd, off);
	if (m != MAP_FAILED) {
		if (met) {
			for_overlaps(m, len, adoptable(prot, flags) ? OP_AFTER_MAP_ANON :
					     OP_AFTER_MAP_OTHER);
			if (adoptable(prot, flags) && prot != RW && prot != PROT_NONE)
				for_overlaps(m, len, OP_LOCK);
		} else if (adoptable(prot, flags)) {
			adopt_new(m, len);
		}
	}
	t_internal--;
	pthread_mutex_unlock(&adopt_lock);
	return m;
}

int agent_adopt_munmap(void *addr, size_t len)
{
	int rc;

	if (!active())
		return agent_real_munmap(addr, len);
	pthread_mutex_lock(&adopt_lock);
	t_internal++;
	for_overlaps(addr, len, OP_UNMAP);
	rc = agent_real_munmap(addr, len);
	t_internal--;
	pthread_mutex_unlock(&adopt_lock);
	return rc;
}

int agent_adopt_mprotect(void *addr, size_t len, int prot)
{
	int rc;

	if (!active())
		return agent_real_mprotect(addr, len, prot);
	pthread_mutex_lock(&adopt_lock);
	t_internal++;
	if (prot != RW)
		for_overlaps(addr, len, OP_LOCK);
	rc = agent_real_mprotect(addr, len, prot);
	if (!rc && prot == RW)
		for_overlaps(addr, len, OP_UNLOCK);
	t_internal--;
	pthread_mutex_unlock(&adopt_lock);
	return rc;
}

int agent_adopt_madvise(void *addr, size_t len, int advice)
{
	int rc;

	if (!active() || (advice != MADV_DONTNEED && advice != MADV_FREE))
		return agent_real_madvise(addr, len, advice);
	pthread_mutex_lock(&adopt_lock);
	t_internal++;
	/* The kernel rounds the length up to whole pages: so does the pager. */
	if ((uintptr_t)addr % USWAP_PAGE_SIZE == 0)
		for_overlaps(addr, (len + USWAP_PAGE_SIZE - 1) & ~(size_t)(USWAP_PAGE_SIZE - 1),
			     OP_DISCARD);
	rc = agent_real_madvise(addr, len, advice);
	t_internal--;
	pthread_mutex_unlock(&adopt_lock);
	return rc;
}

void *agent_adopt_mremap(void *old, size_t old_len, size_t new_len, int flags, void *fixed)
{
	void *m;

	if (!active())
		return agent_real_mremap(old, old_len, new_len, flags, fixed);
	pthread_mutex_lock(&adopt_lock);
	t_internal++;
	bool met = for_overlaps(old, old_len ? old_len : 1, OP_DISOWN);

	if (flags & MREMAP_FIXED)
		for_overlaps(fixed, new_len, OP_BEFORE_MAP);
	m = agent_real_mremap(old, old_len, new_len, flags, fixed);
	if (m != MAP_FAILED && met && !for_overlaps(m, new_len, OP_DISOWN))
		adopt_new(m, new_len); /* it was anonymous: it was adopted */
	t_internal--;
	pthread_mutex_unlock(&adopt_lock);
	return m;
}

/* A hexadecimal number at *@s, ended by @end, which is skipped. */
static bool hex_field(const char **s, char end, uintptr_t *v)
{
	const char *p = *s;

	for (*v = 0; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		*v = *v * 16 + (uintptr_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	if (p == *s || *p != end)
		return false;
	*s = p + 1;
	return true;
}

/* One line of /proc/self/maps: the range and whether it is read-write.
 * By hand, not sscanf(): in a fork child this runs before the swapped-out
 * heap is the child's pager's, and sscanf() reads the locale's data,
 * which the program's setlocale() put in the heap. */
static bool maps_line(const char *line, char **b, char **e, bool *rw)
{
	uintptr_t lo, hi;

	if (!hex_field(&line, '-', &lo) || !hex_field(&line, ' ', &hi) || strlen(line) < 3)
		return false;
	*b = (char *)lo;
	*e = (char *)hi;
	*rw = line[0] == 'r' && line[1] == 'w' && line[2] != 'x';
	return true;
}

/* Lock what of the regions is not read-write now. Return: 0 or -errno. */
static int lock_from_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *b, *e;
		bool rw;

		if (maps_line(line, &b, &e, &rw) && !rw)
			for_overlaps(b, (size_t)(e - b), OP_LOCK);
	}
	fclose(f);
	return 0;
}

void agent_adopt_child(void)
{
	int rc;

	if (!agent_has_pager()) {
		nr_tab = 0; /* the memory stays, resident, with no pager */
		return;
	}
	/* No eviction until what must not be evicted is locked. */
	agent_pg_hold();
	for (size_t i = 0; i < nr_tab;) {
		if (agent_pg_adopt(tab[i].base, tab[i].len))
			tab_remove(i); /* a file mapped into it, say: plain memory */
		else
			i++;
	}
	rc = lock_from_maps();
	if (rc) { /* cannot tell what is PROT_NONE: give all of it back */
		while (nr_tab)
			drop(nr_tab - 1);
	}
	agent_pg_release();
}

size_t agent_adopt_count(void)
{
	return nr_tab;
}
