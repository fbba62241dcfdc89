// SPDX-License-Identifier: MIT
/*
 * ram.c - the "ram" backend: plain memory, one buffer of nr_slots pages,
 * the user-space counterpart of the kernel's brd ramdisk.
 *
 * The buffer is an anonymous private mapping made with MAP_NORESERVE, so
 * memory is only used by slots that were written: a slot never written
 * reads as zeroes, and a discarded slot is handed back to the kernel with
 * MADV_DONTNEED and reads as zeroes again (brd frees pages on discard the
 * same way). Reads and writes are memcpy; slots are independent, so no
 * lock is needed and different slots proceed in parallel.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dev/dev_internal.h"

struct ram_backend {
	struct backend b;        /* first: struct backend * casts to this */
	unsigned char *mem;      /* nr_slots * USWAP_PAGE_SIZE bytes, mmap'ed */
	size_t mem_bytes;        /* length of the mapping */
	size_t os_page;          /* sysconf(_SC_PAGESIZE): madvise granule */
	_Atomic uint64_t nr_read;    /* folios read; statistics only */
	_Atomic uint64_t nr_write;   /* folios written */
	_Atomic uint64_t nr_discard; /* slots discarded */
};

static _Atomic unsigned int ram_ids; /* next default name "ram<N>" */

static inline struct ram_backend *to_ram(struct backend *b)
{
	return (struct ram_backend *)b;
}

static inline unsigned char *slot_addr(struct ram_backend *rb, uint64_t slot)
{
	return rb->mem + slot * USWAP_PAGE_SIZE;
}

/* Return: 0 or -EINVAL (range). Thread-safe for different slots. */
static int ram_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	struct ram_backend *rb = to_ram(b);
	int rc = backend_check_io(b, slot, order);

	if (rc)
		return rc;
	memcpy(buf, slot_addr(rb, slot), folio_bytes(order));
	atomic_fetch_add_explicit(&rb->nr_read, 1, memory_order_relaxed);
	return 0;
}

/* Return: 0 or -EINVAL (range). Thread-safe for different slots. */
static int ram_write(struct backend *b, uint64_t slot, unsigned int order,
		     const void *buf)
{
	struct ram_backend *rb = to_ram(b);
	int rc = backend_check_io(b, slot, order);

	if (rc)
		return rc;
	memcpy(slot_addr(rb, slot), buf, folio_bytes(order));
	atomic_fetch_add_explicit(&rb->nr_write, 1, memory_order_relaxed);
	return 0;
}

/*
 * ram_discard() - give the memory of [slot, slot + nr) back; the slots
 * read as zeroes afterwards. Whole OS pages inside the range are dropped
 * with MADV_DONTNEED; a partial OS page at either end (only when the OS
 * page is larger than a slot) is zeroed in place instead.
 * Return: 0 or -EINVAL (range). Thread-safe for different slots.
 */
static int ram_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct ram_backend *rb = to_ram(b);
	int rc = backend_check_range(b, slot, nr_slots);
	uintptr_t start, end, astart, aend;

	if (rc || nr_slots == 0)
		return rc;
	start = (uintptr_t)slot_addr(rb, slot);
	end = start + nr_slots * USWAP_PAGE_SIZE;
	astart = (start + rb->os_page - 1) & ~(uintptr_t)(rb->os_page - 1);
	aend = end & ~(uintptr_t)(rb->os_page - 1);
	if (astart >= aend) {
		memset((void *)start, 0, end - start);
	} else {
		memset((void *)start, 0, astart - start);
		memset((void *)aend, 0, end - aend);
		/* Cannot fail on a private anonymous mapping we own; if it
		 * ever did, zero the range so the contract still holds. */
		if (madvise((void *)astart, aend - astart, MADV_DONTNEED) != 0)
			memset((void *)astart, 0, aend - astart);
	}
	atomic_fetch_add_explicit(&rb->nr_discard, nr_slots, memory_order_relaxed);
	return 0;
}

static int ram_flush(struct backend *b)
{
	(void)b;
	return 0;
}

static void ram_print_stats(struct backend *b, FILE *out)
{
	struct ram_backend *rb = to_ram(b);

	fprintf(out, "nr_slots %llu\n", (unsigned long long)b->nr_slots);
	fprintf(out, "reads %llu\n", (unsigned long long)atomic_load(&rb->nr_read));
	fprintf(out, "writes %llu\n", (unsigned long long)atomic_load(&rb->nr_write));
	fprintf(out, "discarded_slots %llu\n",
		(unsigned long long)atomic_load(&rb->nr_discard));
}

static void ram_close(struct backend *b)
{
	struct ram_backend *rb = to_ram(b);

	if (b == NULL)
		return;
	munmap(rb->mem, rb->mem_bytes);
	backend_release(b);
	free(rb);
}

static const struct backend_ops ram_ops = {
	.kind = "ram",
	.read = ram_read,
	.write = ram_write,
	.discard = ram_discard,
	.flush = ram_flush,
	.submit = backend_submit_sync,
	.reap = backend_reap_sync,
	.print_stats = ram_print_stats,
	.close = ram_close,
};

/*
 * backend_ram_open() - a memory backend of @size_bytes, rounded up to
 * whole pages (as zram rounds its disksize), slot 0 included; first_slot
 * is 1. The memory is reserved as address space only and used as slots
 * are written.
 * @out: receives the backend; the caller closes it with ops->close().
 * Return: 0; -EINVAL (@out NULL or fewer than 2 slots, with a message in
 * @err); -ENOMEM (the mapping failed).
 * Thread-safety: any thread.
 */
int backend_ram_open(uint64_t size_bytes, struct backend **out, char *err, size_t errlen)
{
	struct ram_backend *rb;
	uint64_t nr_slots;
	char name[32];
	long os_page;

	if (out == NULL)
		return backend_errf(err, errlen, -EINVAL, "ram: no output pointer");
	nr_slots = size_bytes / USWAP_PAGE_SIZE + (size_bytes % USWAP_PAGE_SIZE != 0);
	if (nr_slots < 2 || nr_slots > SIZE_MAX / USWAP_PAGE_SIZE)
		return backend_errf(err, errlen, -EINVAL,
				    "ram: size %llu bytes: need 2 pages at least",
				    (unsigned long long)size_bytes);
	rb = calloc(1, sizeof(*rb));
	if (rb == NULL)
		return backend_errf(err, errlen, -ENOMEM, "ram: out of memory");
	os_page = sysconf(_SC_PAGESIZE);
	rb->os_page = os_page > 0 ? (size_t)os_page : USWAP_PAGE_SIZE;
	rb->mem_bytes = nr_slots * USWAP_PAGE_SIZE;
	rb->mem = mmap(NULL, rb->mem_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rb->mem == MAP_FAILED) {
		free(rb);
		return backend_errf(err, errlen, -ENOMEM,
				    "ram: cannot map %llu bytes",
				    (unsigned long long)nr_slots * USWAP_PAGE_SIZE);
	}
	/* Transparent huge pages where the system allows them: one fault per
	 * 2 MiB instead of per 4 KiB, which made first writes 30x slower than
	 * memcpy (docs/benchmarks.md). A refusal only costs speed. */
	(void)madvise(rb->mem, rb->mem_bytes, MADV_HUGEPAGE);
	snprintf(name, sizeof(name), "ram%u", atomic_fetch_add(&ram_ids, 1));
	backend_init(&rb->b, &ram_ops, name, nr_slots, 1);
	*out = &rb->b;
	return 0;
}
