// SPDX-License-Identifier: MIT
/*
 * mmap.c - the program's own private anonymous mmap()s under `uswap run`.
 *
 * A plain request (addr NULL, MAP_PRIVATE | MAP_ANONYMOUS, read-write,
 * MAP_NORESERVE or MAP_POPULATE allowed; none of MAP_FIXED,
 * MAP_FIXED_NOREPLACE, MAP_GROWSDOWN, MAP_STACK, MAP_HUGETLB) from a
 * program thread is served
 * from the region heap as a page-aligned, zero-filled block, and recorded.
 * munmap() of it frees the block, mremap() resizes or moves it, and
 * madvise(MADV_DONTNEED or MADV_FREE) discards it: the pager drops those
 * folios with their charge and swap slots, and they read back as zeros.
 * Everything else goes to the kernel, through adopt.c (which adopts the
 * program's other anonymous mappings in place); every call from an
 * internal thread (the pager's own madvise and munmap of the region
 * included) goes straight to the kernel.
 *
 * The pager owns the region's mapping, so calls on region memory that
 * would change the mapping are emulated or refused: a partial munmap
 * discards that part (the block stays until all of it is unmapped), other
 * madvise advice is accepted and ignored, mprotect() to anything but
 * read-write fails with EACCES.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mimalloc.h>
#include <uswap/uswap.h>

#include "agent/agent.h"

#define API __attribute__((visibility("default")))
#define PAGE 4096u

#define NOT_OURS (MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_GROWSDOWN | MAP_STACK | \
		  MAP_HUGETLB)

/*
 * The kernel's calls, made directly: what the wrappers use until
 * agent_mmap_init() has looked up the next library's. Another library's
 * constructor (or another preload, mimalloc's say) may map memory before
 * ours has run, and a NULL pointer there ended the program with SIGSEGV.
 */
static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int sys_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

static void *sys_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *fixed = NULL;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		fixed = va_arg(ap, void *);
		va_end(ap);
	}
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, fixed);
}

static int sys_madvise(void *addr, size_t len, int advice)
{
	return (int)syscall(SYS_madvise, addr, len, advice);
}

static int sys_mprotect(void *addr, size_t len, int prot)
{
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

void *(*agent_real_mmap)(void *, size_t, int, int, int, off_t) = sys_mmap;
int (*agent_real_munmap)(void *, size_t) = sys_munmap;
void *(*agent_real_mremap)(void *, size_t, size_t, int, ...) = sys_mremap;
int (*agent_real_madvise)(void *, size_t, int) = sys_madvise;
int (*agent_real_mprotect)(void *, size_t, int) = sys_mprotect;

/* The blocks handed out as mappings, sorted by address; glibc memory. */
static struct mapping { char *addr; size_t len; } *maps;
static size_t nr_maps, cap_maps;
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

/* Around fork(): a child must not inherit maps_lock held by a thread it
 * does not have. */
void agent_mmap_lock(void)
{
	pthread_mutex_lock(&maps_lock);
}

void agent_mmap_unlock(void)
{
	pthread_mutex_unlock(&maps_lock);
}

/* The next library's functions (libc's, or another preload's), where
 * found; the direct kernel calls stay for any that is not. */
#define NEXT(var, name) do { \
	void *f_ = dlsym(RTLD_NEXT, name); \
	if (f_) \
		var = (__typeof__(var))f_; \
} while (0)

void agent_mmap_init(void)
{
	NEXT(agent_real_mmap, "mmap");
	NEXT(agent_real_munmap, "munmap");
	NEXT(agent_real_mremap, "mremap");
	NEXT(agent_real_madvise, "madvise");
	NEXT(agent_real_mprotect, "mprotect");
}

static size_t page_round(size_t len)
{
	return (len + PAGE - 1) & ~(size_t)(PAGE - 1);
}

/* Index of the first mapping not below @addr. Context: maps_lock. */
static size_t find(const char *addr)
{
	size_t lo = 0, hi = nr_maps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (maps[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The mapping containing @addr, or NULL. Context: maps_lock. */
static struct mapping *containing(const char *addr)
{
	size_t i = find(addr);

	if (i < nr_maps && maps[i].addr == addr)
		return &maps[i];
	if (i > 0 && addr < maps[i - 1].addr + maps[i - 1].len)
		return &maps[i - 1];
	return NULL;
}

static bool record(char *addr, size_t len)
{
	size_t i;

	if (nr_maps == cap_maps) {
		size_t cap = cap_maps ? cap_maps * 2 : 256;
		void *m = realloc(maps, cap * sizeof(*maps)); /* internal: glibc */

		if (!m)
			return false;
		maps = m;
		cap_maps = cap;
	}
	i = find(addr);
	memmove(&maps[i + 1], &maps[i], (nr_maps - i) * sizeof(*maps));
	maps[i] = (struct mapping){ addr, len };
	nr_maps++;
	return true;
}

static void forget(struct mapping *m)
{
	size_t i = (size_t)(m - maps);

	memmove(&maps[i], &maps[i + 1], (nr_maps - i - 1) * sizeof(*maps));
	nr_maps--;
}

static bool ours(const void *addr, int flags, int prot)
{
	return !t_internal && atomic_load_explicit(&agent.ready, memory_order_acquire) &&
	       !addr && (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE &&
	       !(flags & NOT_OURS) && prot == (PROT_READ | PROT_WRITE);
}

/* A page-aligned block of @len bytes of the region, zero-filled by a
 * discard rather than by mimalloc's memset: a folio the discard finds
 * untouched costs nothing, and one that held data is dropped, so the
 * block reads as zeros with nothing charged for it until it is used (a
 * memset wrote, and so charged, every page of a mapping the program may
 * only read: stress-ng's read64 maps 128 MiB and reads it). */
static void *alloc_zeroed(mi_heap_t *h, size_t len)
{
	void *p = mi_heap_malloc_aligned(h, len, PAGE);

	if (p)
		agent_discard(p, len);
	return p;
}

/* A zero-filled, page-aligned block of the region, recorded. */
static void *map_block(size_t len)
{
	mi_heap_t *h = agent_heap();
	void *p = NULL;

	if (!h)
		return NULL;
	t_internal++;
	p = alloc_zeroed(h, len);
	pthread_mutex_lock(&maps_lock);
	if (p && !record(p, len)) {
		mi_free(p);
		p = NULL;
	}
	pthread_mutex_unlock(&maps_lock);
	t_internal--;
	return p;
}

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (len && ours(addr, flags, prot)) {
		void *p = map_block(page_round(len));

		if (p)
			return p;
	}
	return agent_adopt_mmap(addr, len, prot, flags, fd, off);
}

/* Both names (off_t is 64 bits either way here); asm labels because
 * <sys/mman.h> renames mmap to mmap64 under _FILE_OFFSET_BITS=64. */
API void *agent_mmap(void *, size_t, int, int, int, off_t) __asm__("mmap");
API void *agent_mmap64(void *, size_t, int, int, int, off_t) __asm__("mmap64");

void *agent_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off);
}

void *agent_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off);
}

void agent_discard(void *addr, size_t len)
{
	t_internal++;
	/* Without a pager (a detached child): zeros, as the kernel's
	 * MADV_DONTNEED would read back. */
	if (!agent_has_pager() || agent_pg_discard(addr, len))
		memset(addr, 0, len);
	t_internal--;
}

API int munmap(void *addr, size_t len)
{
	struct mapping *m;
	int rc = 0;

	if (t_internal || !agent_owns(addr))
		return agent_adopt_munmap(addr, len);
	if ((uintptr_t)addr % PAGE || !len) {
		errno = EINVAL;
		return -1;
	}
	len = page_round(len);
	t_internal++;
	pthread_mutex_lock(&maps_lock);
	m = containing(addr);
	if (m && m->addr == addr && len >= m->len) {
		agent_discard(m->addr, m->len); /* no charge, no swap for it */
		mi_free(m->addr);
		forget(m);
	} else if (m) {
		size_t end = (size_t)(m->addr + m->len - (char *)addr);

		agent_discard(addr, len < end ? len : end); /* a part: the block stays */
	} else {
		errno = EINVAL; /* heap memory, never mapped by the program */
		rc = -1;
	}
	pthread_mutex_unlock(&maps_lock);
	t_internal--;
	return rc;
}

/* Resize a recorded block: in place when it shrinks or mimalloc's block
 * already has room, else moved (MREMAP_MAYMOVE) or -ENOMEM. */
static void *remap_block(mi_heap_t *h, struct mapping *m, size_t new_len, int flags)
{
	char *old = m->addr;
	void *p;

	if (new_len <= m->len || new_len <= mi_usable_size(old)) {
		if (new_len > m->len) /* what mimalloc had there reads as zeros */
			agent_discard(old + m->len, new_len - m->len);
		m->len = new_len;
		return old;
	}
	if (!(flags & MREMAP_MAYMOVE) || !h)
		return NULL;
	p = alloc_zeroed(h, new_len);
	if (!p)
		return NULL;
	memcpy(p, old, m->len);
	agent_discard(old, m->len);
	mi_free(old);
	forget(m);
	if (!record(p, new_len)) {
		mi_free(p);
		return NULL;
	}
	return p;
}

API void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	struct mapping *m;
	mi_heap_t *h;
	void *p = NULL;

	if (t_internal || !agent_owns(old)) {
		va_list ap;
		void *fixed;

		va_start(ap, flags);
		fixed = va_arg(ap, void *);
		va_end(ap);
		return agent_adopt_mremap(old, old_len, new_len, flags, fixed);
	}
	if (!new_len || (flags & MREMAP_FIXED)) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	h = agent_heap();
	t_internal++;
	pthread_mutex_lock(&maps_lock);
	m = containing(old);
	if (m && m->addr == old)
		p = remap_block(h, m, page_round(new_len), flags);
	pthread_mutex_unlock(&maps_lock);
	t_internal--;
	if (!p) {
		errno = m && m->addr == old ? ENOMEM : EFAULT;
		return MAP_FAILED;
	}
	return p;
}

API int madvise(void *addr, size_t len, int advice)
{
	if (t_internal || !agent_owns(addr))
		return agent_adopt_madvise(addr, len, advice);
	if ((uintptr_t)addr % PAGE) { /* the kernel's answer */
		errno = EINVAL;
		return -1;
	}
	/* Both free the memory; DONTNEED reads zero after it, FREE may (the
	 * kernel's keeps a page not reclaimed yet), zero here too: whole
	 * pages, as the kernel rounds the length up. */
	if ((advice == MADV_DONTNEED || advice == MADV_FREE) && len)
		agent_discard(addr, (len + PAGE - 1) & ~(size_t)(PAGE - 1));
	return 0; /* the pager owns the mapping: other advice changes nothing */
}

API int mprotect(void *addr, size_t len, int prot)
{
	if (t_internal || !agent_owns(addr))
		return agent_adopt_mprotect(addr, len, prot);
	if (prot == (PROT_READ | PROT_WRITE))
		return 0;
	errno = EACCES; /* the pager's mapping cannot change protection */
	return -1;
}
