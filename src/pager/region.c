// SPDX-License-Identifier: MIT
/*
 * region.c - uswap_region_create(), uswap_region_destroy(),
 * uswap_region_adopt(), uswap_region_disown(), uswap_region_error(), and
 * finding the region of a fault address.
 *
 * A region is folio-aligned anonymous memory registered with the pager's
 * userfaultfd in missing and write-protect modes. It is kept out of
 * transparent huge pages (the pager maps and evicts folios of at most 64
 * KiB, and a huge page would be split by the first eviction anyway) and
 * out of fork() children (they would see the region without its pager).
 *
 * The pager keeps its regions in an array sorted by address (found by
 * binary search on every fault) and in an id table (the rmap names a
 * region by id). Both change only with p->lock write-held, which waits for
 * every fault, reclaim pass and unuse call in flight: once destroy has the
 * region out of the arrays, nothing else can reach it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pager/pager_internal.h"

struct pager_region *region_find(struct uswap_pager *p, uintptr_t addr)
{
	size_t lo = 0, hi = p->nr_regions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct pager_region *r = p->regions[mid];

		if (addr < (uintptr_t)r->base)
			hi = mid;
		else if (addr >= (uintptr_t)r->base + r->size)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

/* A folio-aligned anonymous mapping of @size bytes: map more and trim.
 * Not inherited by fork() unless @forkable (USWAP_PAGER_FORKABLE): a
 * child has no pager to fault its swapped-out pages in. */
static int map_aligned(size_t size, size_t align, bool forkable, void **base)
{
	size_t len = size + align;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *b;

	if (m == MAP_FAILED)
		return -ENOMEM;
	b = (char *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
	if (b > m)
		munmap(m, (size_t)(b - m));
	if (b + size < m + len)
		munmap(b + size, (size_t)(m + len - (b + size)));
	madvise(b, size, MADV_NOHUGEPAGE);
	if (!forkable)
		madvise(b, size, MADV_DONTFORK);
	*base = b;
	return 0;
}

/*
 * A region's per-folio and per-page arrays: zeroed, sized by the address
 * space the region covers (about 6 bytes per page: 50 MiB for an 8 GiB
 * heap), and touched only where the program uses it. From META_MMAP_BYTES
 * up they are mappings of their own, so untouched parts cost nothing and
 * nothing is zeroed by hand: calloc() gives such sizes a fresh mapping
 * only until glibc's dynamic mmap threshold has risen past them (a free()
 * of an mmapped block raises it, up to 32 MiB), and from then on zeroes
 * them from its heap with memset. A pager in a long-lived process (uswap
 * run serving a tree, a region per process) paid 10 ms of memset per new
 * process that way. Below it, calloc(): a mapping per small array would
 * cost a VMA each.
 */
#define META_MMAP_BYTES (1u << 20)

static void *meta_zalloc(size_t n, size_t size)
{
	size_t len = n * size;
	void *m;

	if (len < META_MMAP_BYTES)
		return calloc(n, size);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void meta_free(void *m, size_t n, size_t size)
{
	if (!m)
		return;
	if (n * size < META_MMAP_BYTES)
		free(m);
	else
		munmap(m, n * size);
}

static void region_free(struct pager_region *r)
{
	if (!r)
		return;
	if (r->map)
		munmap(r->map, r->map_len);
	meta_free((void *)r->state, r->nr_folios, sizeof(*r->state));
	meta_free((void *)r->slot, r->size / USWAP_PAGE_SIZE, sizeof(*r->slot));
	meta_free((void *)r->locked, r->nr_folios, sizeof(*r->locked));
	meta_free(r->hash, r->nr_folios, sizeof(*r->hash));
	meta_free(r->shadow, r->nr_folios, sizeof(*r->shadow));
	free(r);
}

/* A region's bookkeeping for @size bytes, with no memory yet. */
static struct pager_region *region_alloc_meta(struct uswap_pager *p, size_t size)
{
	struct pager_region *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->p = p;
	r->size = size;
	r->nr_folios = size / p->folio_bytes;
	r->state = meta_zalloc(r->nr_folios, sizeof(*r->state));
	r->slot = meta_zalloc(size / USWAP_PAGE_SIZE, sizeof(*r->slot));
	r->locked = meta_zalloc(r->nr_folios, sizeof(*r->locked));
	r->hash = meta_zalloc(r->nr_folios, sizeof(*r->hash));
	r->shadow = meta_zalloc(r->nr_folios, sizeof(*r->shadow));
	atomic_init(&r->nr_errors, 0);
	atomic_init(&r->first_error, NULL);
	if (!r->state || !r->slot || !r->locked || !r->hash || !r->shadow) {
		region_free(r);
		return NULL;
	}
	return r;
}

static struct pager_region *region_alloc(struct uswap_pager *p, size_t size)
{
	struct pager_region *r = region_alloc_meta(p, size);

	if (!r)
		return NULL;
	if (map_aligned(size, p->folio_bytes, p->cfg.flags & USWAP_PAGER_FORKABLE, &r->map)) {
		r->map = NULL;
		region_free(r);
		return NULL;
	}
	r->base = r->map;
	r->map_len = size;
	return r;
}

/* Insert @r in the sorted array and give it an id. Context: lock
 * write-held. */
static int region_insert(struct uswap_pager *p, struct pager_region *r)
{
	size_t pos = 0, id;

	if (p->nr_regions == p->cap_regions) {
		size_t cap = p->cap_regions ? 2 * p->cap_regions : 8;
		struct pager_region **a = realloc(p->regions, cap * sizeof(*a));
		struct pager_region **b;

		if (!a)
			return -ENOMEM;
		p->regions = a;
		b = realloc(p->by_id, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		memset(b + p->nr_ids, 0, (cap - p->nr_ids) * sizeof(*b));
		p->by_id = b;
		p->nr_ids = cap;
		p->cap_regions = cap;
	}
	for (id = 0; id < p->nr_ids && p->by_id[id]; id++)
		;
	while (pos < p->nr_regions && p->regions[pos]->base < r->base)
		pos++;
	memmove(&p->regions[pos + 1], &p->regions[pos],
		(p->nr_regions - pos) * sizeof(*p->regions));
	p->regions[pos] = r;
	p->nr_regions++;
	/* The hand keeps pointing at the same region. */
	if (p->nr_regions > 1 && pos <= p->hand_region)
		p->hand_region++;
	r->id = (uint32_t)id;
	p->by_id[id] = r;
	p->total_folios += r->nr_folios;
	return 0;
}

USWAP_API int uswap_region_create(struct uswap_pager *p, size_t size, void **addr)
{
	struct pager_region *r;
	int err;

	if (!p || !addr || !size || size > ((size_t)1 << 44))
		return -EINVAL;
	if (p->remote)
		return -EOPNOTSUPP;
	size = (size + p->folio_bytes - 1) / p->folio_bytes * p->folio_bytes;
	r = region_alloc(p, size);
	if (!r)
		return -ENOMEM;
	err = uffd_register(p->uffd, r->base, r->size);
	if (err) {
		region_free(r);
		return err == -EINVAL ? -ENOMEM : err;
	}
	pthread_rwlock_wrlock(&p->lock);
	err = region_insert(p, r);
	pthread_rwlock_unlock(&p->lock);
	if (err) {
		uffd_unregister(p->uffd, r->base, r->size);
		region_free(r);
		return err;
	}
	*addr = r->base;
	return 0;
}

/* Whether [addr, addr + size) meets a region. Context: lock held. */
static bool region_overlaps(struct uswap_pager *p, const char *addr, size_t size)
{
	for (size_t i = 0; i < p->nr_regions; i++)
		if (p->regions[i]->base < addr + size &&
		    addr < p->regions[i]->base + p->regions[i]->size)
			return true;
	return false;
}

/* Adopt folios [@first, @first + @nf) of @r, @vec being their pages'
 * mm_present() answer: a folio with any page present becomes RESIDENT,
 * its missing pages mapped as zeros (a RESIDENT folio is whole: the
 * evictor reads all of it); one with none stays NONE. A page the kernel
 * swapped out counts as present (UFFDIO_COPY says EEXIST). Return: pages
 * charged, or -errno. */
static long adopt_folios(struct uswap_pager *p, struct pager_region *r, size_t first,
			 size_t nf, const unsigned char *vec)
{
	long charged = 0;

	for (size_t f = 0; f < nf; f++) {
		const unsigned char *v = vec + f * p->nr;
		unsigned int in = 0;

		for (unsigned int i = 0; i < p->nr; i++)
			in += v[i] & 1;
		if (!in)
			continue;
		for (unsigned int i = 0; i < p->nr && in < p->nr; i++) {
			char *page = folio_addr(r, first + f) + (size_t)i * USWAP_PAGE_SIZE;
			int err = (v[i] & 1) ? 0 : uffd_copy(p->uffd, page, p->zero,
							 USWAP_PAGE_SIZE, false);

			if (err && err != -EEXIST)
				return err;
		}
		region_note_used(r, first + f + 1);
		atomic_store_explicit(&r->state[first + f], PF_RESIDENT, memory_order_relaxed);
		charged += p->nr;
	}
	return charged;
}

/* adopt_folios() over folios [@first, @last), ADOPT_CHUNK at a time. */
#define ADOPT_CHUNK 4096 /* folios per mm_present() */
static long adopt_range(struct uswap_pager *p, struct pager_region *r, size_t first,
			size_t last, unsigned char *vec)
{
	long charged = 0;

	for (; first < last; first += ADOPT_CHUNK) {
		size_t nf = last - first < ADOPT_CHUNK ? last - first : ADOPT_CHUNK;
		int rc = mm_present(p, folio_addr(r, first), nf * p->folio_bytes, vec);
		long got = rc ? rc : adopt_folios(p, r, first, nf, vec);

		if (got < 0)
			return got;
		charged += got;
	}
	return charged;
}

/* Charge what the adopted memory has mapped (adopt_folios()). Where the
 * kernel has PAGEMAP_SCAN, only the runs of pages it reports are looked
 * at: a fork child adopts its copy of a heap reserved at gigabytes and
 * holding megabytes, and mincore() over all of it cost 20 ms a fork.
 * The region is registered, so nothing else maps a page meanwhile.
 * Return: pages charged, or -errno. */
static long adopt_present(struct uswap_pager *p, struct pager_region *r)
{
	unsigned char *vec = malloc((size_t)ADOPT_CHUNK * p->nr);
	char *at = r->base, *end = r->base + r->size;
	size_t done = 0; /* folios below this were adopted */
	long charged = 0;

	if (!vec)
		return -ENOMEM;
	if (p->cfg.flags & USWAP_PAGER_NO_PAGEMAP_SCAN) {
		charged = adopt_range(p, r, 0, r->nr_folios, vec);
		at = end;
	}
	while (at < end && charged >= 0) {
		struct iovec run[64];
		long n = mm_populated(p, at, (size_t)(end - at), run, 64, &at);

		if (n == -ENOTTY || n == -EINVAL) { /* no PAGEMAP_SCAN: every page */
			charged = done ? -EIO : adopt_range(p, r, 0, r->nr_folios, vec);
			break;
		}
		if (n < 0) {
			charged = n;
			break;
		}
		for (long i = 0; i < n && charged >= 0; i++) {
			size_t lo = (size_t)((char *)run[i].iov_base - r->base) / p->folio_bytes;
			size_t hi = ((size_t)((char *)run[i].iov_base - r->base) + run[i].iov_len +
				     p->folio_bytes - 1) / p->folio_bytes;
			long got = adopt_range(p, r, lo > done ? lo : done, hi, vec);

			charged = got < 0 ? got : charged + got;
			done = hi > done ? hi : done;
		}
		if (!n)
			break;
	}
	free(vec);
	return charged;
}

USWAP_API int uswap_region_adopt(struct uswap_pager *p, void *addr, size_t size)
{
	struct pager_region *r;
	long charged;
	int err;

	if (!p || !addr || !size || size > ((size_t)1 << 44) ||
	    (uintptr_t)addr % p->folio_bytes || size % p->folio_bytes)
		return -EINVAL;
	r = region_alloc_meta(p, size);
	if (!r)
		return -ENOMEM;
	r->base = addr;
	if (!p->remote) /* a target's agent does it in its own process */
		madvise(addr, size, MADV_NOHUGEPAGE);
	/* Registered with the lock held: a fault from now on waits for the
	 * region to be in the arrays (a handler that found no region would
	 * leave its thread waiting forever). */
	pthread_rwlock_wrlock(&p->lock);
	err = region_overlaps(p, addr, size) ? -EBUSY : uffd_register(p->uffd, addr, size);
	if (err) {
		pthread_rwlock_unlock(&p->lock);
		region_free(r);
		return err;
	}
	charged = adopt_present(p, r);
	if (charged >= 0 && (err = region_insert(p, r)) == 0) {
		if (!p->remote) { /* the region owns the memory now */
			r->map = addr;
			r->map_len = size;
		}
		pager_charge_mapped(p, (uint64_t)charged);
	}
	pthread_rwlock_unlock(&p->lock);
	if (charged < 0 || err) {
		uffd_unregister(p->uffd, addr, size);
		region_free(r); /* r->map is NULL: the memory stays */
		return charged < 0 ? (int)charged : err;
	}
	return 0;
}

/* Take @r out of the arrays. Context: lock write-held. */
static void region_remove(struct uswap_pager *p, size_t pos)
{
	struct pager_region *r = p->regions[pos];

	memmove(&p->regions[pos], &p->regions[pos + 1],
		(p->nr_regions - pos - 1) * sizeof(*p->regions));
	p->nr_regions--;
	p->by_id[r->id] = NULL;
	p->total_folios -= r->nr_folios;
	/* hand_lock is not needed: every picker read-holds p->lock. */
	if (p->hand_region > pos) {
		p->hand_region--;
	} else if (p->hand_region == pos) {
		p->hand_folio = 0;
	}
}

/* Free what the folios hold: slots, and the charge of mapped ones. The
 * region is unreachable, so no folio is busy. */
static void region_release(struct uswap_pager *p, struct pager_region *r)
{
	uint64_t charged = 0;

	for (size_t idx = 0, end = region_used(r); idx < end; idx++) {
		uint32_t s = atomic_load_explicit(&r->state[idx], memory_order_acquire);

		WARN_ONCE(pf_busy(s), "pager: folio busy at region destroy");
		bool apart = folio_lock_drop_apart(p, r, idx, false);

		switch (pf_state(s)) {
		case PF_CLEAN:
			charged += apart ? 0 : p->nr;
			/* fall through */
		case PF_SWAPPED:
			folio_free_slots(p, r, idx, (s & PF_WHOLE) != 0);
			break;
		case PF_RESIDENT:
			charged += apart ? 0 : p->nr;
			break;
		}
	}
	if (charged) /* the group's charge too */
		pager_uncharge(p, (unsigned int)charged);
	uffd_unregister(p->uffd, r->base, r->size);
}

USWAP_API int uswap_region_destroy(struct uswap_pager *p, void *addr)
{
	struct pager_region *r = NULL;
	size_t pos;

	if (!p)
		return -ENOENT;
	pthread_rwlock_wrlock(&p->lock);
	for (pos = 0; pos < p->nr_regions; pos++) {
		if (p->regions[pos]->base == addr) {
			r = p->regions[pos];
			region_remove(p, pos);
			break;
		}
	}
	pthread_rwlock_unlock(&p->lock);
	if (!r)
		return -ENOENT;
	region_release(p, r);
	region_free(r);
	return 0;
}

USWAP_API int uswap_region_disown(struct uswap_pager *p, void *addr)
{
	struct pager_region *r;
	size_t pos;
	long lost;

	if (!p)
		return -ENOENT;
	pthread_rwlock_rdlock(&p->lock);
	r = region_find(p, (uintptr_t)addr);
	if (!r || r->base != addr) {
		pthread_rwlock_unlock(&p->lock);
		return -ENOENT;
	}
	/* Every folio in and locked: none is evicted before it leaves. */
	lost = region_lock_range(p, r, 0, r->nr_folios);
	pthread_rwlock_unlock(&p->lock);
	pthread_rwlock_wrlock(&p->lock);
	for (pos = 0; pos < p->nr_regions && p->regions[pos] != r; pos++)
		;
	if (pos == p->nr_regions) { /* destroyed meanwhile */
		pthread_rwlock_unlock(&p->lock);
		return -ENOENT;
	}
	region_remove(p, pos);
	pthread_rwlock_unlock(&p->lock);
	region_release(p, r); /* unregistering lifts write protection too */
	r->map = NULL;        /* the memory is the program's again */
	region_free(r);
	return lost ? -EIO : 0;
}

void region_destroy_all(struct uswap_pager *p)
{
	while (p->nr_regions)
		uswap_region_destroy(p, p->regions[p->nr_regions - 1]->base);
}

USWAP_API long uswap_region_error(struct uswap_pager *p, void *addr, void **first)
{
	struct pager_region *r;
	long n = -ENOENT;

	if (!p)
		return -ENOENT;
	pthread_rwlock_rdlock(&p->lock);
	r = region_find(p, (uintptr_t)addr);
	if (r && r->base == addr) {
		n = atomic_load(&r->nr_errors);
		if (first)
			*first = atomic_load(&r->first_error);
	}
	pthread_rwlock_unlock(&p->lock);
	return n;
}
