// SPDX-License-Identifier: MIT
/*
 * malloc.c - the malloc family of a program under `uswap run`.
 *
 * Each call goes to the calling thread's mimalloc heap in the region's
 * exclusive arena (mi_heap_new_in_arena()), unless the thread is internal
 * (t_internal: the pager's threads, the agent at work) or the agent is
 * not set up yet, when glibc's own allocator (__libc_malloc and friends)
 * serves it. A pointer is freed by whichever owns its address, so memory
 * allocated before the agent started, or by the library, is freed right.
 * When the region is full an allocation falls back to glibc (counted):
 * the program keeps running, that memory is just never swapped.
 *
 * What ld.so allocates goes to glibc too: a thread's DTV and the TLS
 * tables of dlopen()ed modules. __tls_get_addr() reads them on every
 * thread-local access of a shared library (liburcu's and libc's among
 * them), so in the region a pager thread, or a program thread holding
 * the pager's lock, would fault on a page that only the pager can bring
 * in. ld.so calls the malloc family through pointers bound to these
 * functions, so the caller's return address tells it apart.
 */
#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <mimalloc.h>

#include "agent/agent.h"

/* glibc's allocator, under its exported internal names. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t size);

#define API __attribute__((visibility("default")))

/* mimalloc deletes a thread's heaps when the thread ends (what they
 * still hold moves to its backing heap, and frees of it keep working). */
static AGENT_TLS mi_heap_t *t_heap;

/* Run a mimalloc call as internal, so whatever mmap() or madvise() it
 * makes itself goes to the kernel, not back to us (mmap.c). */
#define MI(call) ({ t_internal++; __typeof__(call) r_ = (call); t_internal--; r_; })

static void mi_free_internal(void *p)
{
	t_internal++;
	mi_free(p);
	t_internal--;
}

/* ld.so's mapped extent, [ldso_lo, ldso_hi); set before the agent is ready. */
static uintptr_t ldso_lo, ldso_hi;

static int find_ldso(struct dl_phdr_info *info, size_t size, void *base)
{
	(void)size;
	if (info->dlpi_addr != (uintptr_t)base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD)
			continue;
		if (!ldso_lo || lo < ldso_lo)
			ldso_lo = lo;
		if (hi > ldso_hi)
			ldso_hi = hi;
	}
	return 1;
}

void agent_malloc_init(void)
{
	uintptr_t base = getauxval(AT_BASE); /* 0 when ld.so ran as a program */

	if (base)
		dl_iterate_phdr(find_ldso, (void *)base);
}

/* The calling thread's heap in the region for a block asked for from
 * @caller (a return address), or NULL: use glibc. */
static mi_heap_t *region_heap_for(const void *caller)
{
	if (t_internal || !atomic_load_explicit(&agent.ready, memory_order_acquire) ||
	    ((uintptr_t)caller >= ldso_lo && (uintptr_t)caller < ldso_hi))
		return NULL;
	if (!t_heap) {
		t_internal++;
		t_heap = mi_heap_new_in_arena(agent.arena);
		t_internal--;
	}
	return t_heap;
}

mi_heap_t *agent_heap(void)
{
	return region_heap_for(NULL);
}

#define CALLER_HEAP() region_heap_for(__builtin_return_address(0))

static void *fell_back(void *p)
{
	atomic_fetch_add_explicit(&agent.fallbacks, 1, memory_order_relaxed);
	return p;
}

static void *heap_malloc(mi_heap_t *h, size_t size)
{
	void *p = h ? MI(mi_heap_malloc(h, size)) : NULL;

	return p ? p : h ? fell_back(__libc_malloc(size)) : __libc_malloc(size);
}

API void *malloc(size_t size)
{
	return heap_malloc(CALLER_HEAP(), size);
}

API void *calloc(size_t n, size_t size)
{
	mi_heap_t *h = CALLER_HEAP();
	void *p = h ? MI(mi_heap_calloc(h, n, size)) : NULL;

	return p ? p : h ? fell_back(__libc_calloc(n, size)) : __libc_calloc(n, size);
}

/* A block this large is discarded when freed, as glibc gives its large
 * chunks back with munmap(): mimalloc would keep the pages, charged, and
 * the pager would write them to swap as they age. */
#define DISCARD_MIN (UINT64_C(1) << 20)

API void free(void *p)
{
	if (!agent_owns(p)) {
		__libc_free(p);
		return;
	}
	size_t n = mi_usable_size(p);

	if (n >= DISCARD_MIN)
		agent_discard(p, n);
	mi_free_internal(p);
}

/* glibc's malloc_usable_size: this library's own symbol hides it, and
 * mimalloc's would come next, so it is looked up in libc by version. */
static size_t libc_usable_size(void *p)
{
	static size_t (*fn)(void *);

	if (!fn) {
		void *libc;

		t_internal++;
		libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
		fn = libc ? (size_t (*)(void *))dlvsym(libc, "malloc_usable_size",
							"GLIBC_2.2.5") : NULL;
		t_internal--;
		if (!fn)
			return 0;
	}
	return fn(p);
}

API size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	return agent_owns(p) ? MI(mi_usable_size(p)) : libc_usable_size(p);
}

/* A block that must change owner: copy what fits, free the old one. */
static void *move_block(void *p, size_t size, void *to)
{
	size_t old = malloc_usable_size(p);

	if (to) {
		memcpy(to, p, old < size ? old : size);
		free(p);
	}
	return to;
}

API void *realloc(void *p, size_t size)
{
	mi_heap_t *h;

	if (!p)
		return heap_malloc(CALLER_HEAP(), size);
	if (!agent_owns(p)) /* glibc's stays glibc's */
		return __libc_realloc(p, size);
	h = CALLER_HEAP();
	if (h) {
		void *q = MI(mi_heap_realloc(h, p, size));

		if (q || !size)
			return q;
		/* The region is full: the block leaves it for glibc's heap. */
		return move_block(p, size, fell_back(__libc_malloc(size)));
	}
	/* An internal thread resizing region memory: it leaves the region. */
	return move_block(p, size, __libc_malloc(size));
}

API void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, bytes);
}

static void *aligned(size_t align, size_t size)
{
	mi_heap_t *h = region_heap_for(NULL); /* ld.so does not call these */
	void *p = h ? MI(mi_heap_malloc_aligned(h, size, align)) : NULL;

	if (p)
		return p;
	return h ? fell_back(__libc_memalign(align, size)) : __libc_memalign(align, size);
}

static bool power_of_two(size_t v)
{
	return v && !(v & (v - 1));
}

API int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (!power_of_two(align) || align % sizeof(void *))
		return EINVAL;
	p = aligned(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

API void *aligned_alloc(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(align, size);
}

API void *memalign(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(align, size);
}

API void *valloc(size_t size)
{
	return aligned((size_t)sysconf(_SC_PAGESIZE), size);
}

API void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return aligned(page, (size + page - 1) / page * page);
}
