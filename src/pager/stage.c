// SPDX-License-Identifier: MIT
/*
 * stage.c - the staging area of move-out eviction: where a dirty folio's
 * pages go (UFFDIO_MOVE) while they are written to swap.
 *
 * Why move and not write-protect, copy and zap: the kernel never frees a
 * page it holds pinned (an io_uring registered buffer, an O_DIRECT read in
 * flight, an RDMA registration). MADV_DONTNEED does not know about pins:
 * it unmaps the page, the I/O lands in a page no one maps any more, and
 * the program later faults the copy taken before the I/O back in: wrong
 * bytes returned as success. UFFDIO_MOVE refuses a pinned page with
 * EBUSY (mm/userfaultfd.c, move_present_pte(): folio_maybe_dma_pinned(),
 * checked again after the entry is cleared, in case a pin raced in; seen
 * here by shared/probes/uffdio-move-pinned.c), so a folio that cannot be moved
 * stays resident, as the kernel's reclaim keeps it. Moving is atomic
 * against the program's threads as well: a thread that touches the folio
 * afterwards faults as missing and waits for the eviction to end, so no
 * write-protection is needed while the copy is written.
 *
 * EBUSY has a second cause: a page shared copy-on-write with a fork()
 * child (or left so after the child went) is not exclusive, and only
 * exclusive anonymous pages move. A pinned page is always exclusive (the
 * kernel unshares before it pins), so on EBUSY the evictor lifts any
 * write protection of the page, asks for a private copy
 * (MADV_POPULATE_WRITE: a write fault without a write, which reuses the
 * page when no one else maps it) and tries once more; a second EBUSY is a
 * pin.
 *
 * A failed UFFDIO_MOVE is not taken at its word. On the 6.18 kernel, a
 * move right after such an unshare has been seen to move the first page
 * and answer -EEXIST with no progress; the evictor, believing the folio
 * still in place, write-protected and read it there, and faulted on the
 * hole it had made itself: a handler that waits for itself (a python job
 * forking while threads allocate hung about once in a hundred runs). So
 * after a failure the page tables are read (pagemap): a source page gone
 * and a destination page present is a page moved.
 *
 * The area is one mapping registered with the pager's userfaultfd
 * (UFFDIO_MOVE moves only between ranges of one userfaultfd), cut into
 * slots of one reclaim pass each (p->batch_folios folios); each thread
 * that reclaims holds one slot for its pass. Slots are empty between
 * passes: the pass zaps what it moved in before it gives the slot back.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pager/pager_internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define STAGE_MAX_SLOTS 64 /* bits of p->stage_busy */

int stage_init(struct uswap_pager *p)
{
	unsigned int slots = p->nr_handlers + 2; /* kswapd, a swapoff caller */
	size_t len;
	void *m;
	int err;

	p->stage_pagemap = -1;
	if (!p->remote && (!p->has_move || (p->cfg.flags & USWAP_PAGER_NO_MOVE)))
		return 0;
	if (slots > STAGE_MAX_SLOTS)
		slots = STAGE_MAX_SLOTS;
	p->stage_slot_bytes = (size_t)p->batch_folios * p->folio_bytes;
	len = slots * p->stage_slot_bytes;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	madvise(m, len, MADV_NOHUGEPAGE);
	madvise(m, len, MADV_DONTFORK); /* a child has no eviction in flight */
	p->stage = m;
	p->nr_stage = slots;
	if (p->remote) /* read into (mm_read()), in this process: kept mapped */
		return 0;
	err = uffd_register(p->uffd, m, len);
	if (err) {
		munmap(m, len);
		p->stage = NULL;
		return err;
	}
	/* Without it (no /proc), a failed move is believed as before. */
	p->stage_pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	return 0;
}

void stage_fini(struct uswap_pager *p)
{
	if (!p->stage)
		return;
	if (p->stage_pagemap >= 0)
		close(p->stage_pagemap);
	munmap(p->stage, p->nr_stage * p->stage_slot_bytes);
	p->stage = NULL;
}

char *stage_get(struct uswap_pager *p, unsigned int *slot)
{
	for (;;) {
		uint64_t busy = atomic_load_explicit(&p->stage_busy, memory_order_relaxed);

		for (unsigned int i = 0; i < p->nr_stage; i++) {
			if (busy & (1ull << i))
				continue;
			if (atomic_compare_exchange_weak_explicit(&p->stage_busy, &busy,
								  busy | (1ull << i),
								  memory_order_acquire,
								  memory_order_relaxed)) {
				*slot = i;
				return p->stage + i * p->stage_slot_bytes;
			}
			break; /* changed under us: look again */
		}
		/* More reclaimers than slots (several swapoff callers): the
		 * holders finish their pass without waiting for anyone. */
		sched_yield();
	}
}

void stage_put(struct uswap_pager *p, unsigned int slot, size_t used)
{
	char *base = p->stage + slot * p->stage_slot_bytes;

	if (used)
		madvise(base, used, MADV_DONTNEED);
	atomic_fetch_and_explicit(&p->stage_busy, ~(1ull << slot), memory_order_release);
}

/* The page at @addr could not move (EBUSY): make it exclusive if it only
 * is shared with a fork()'s child. Return: whether moving may be tried
 * again. */
static bool page_unshare(struct uswap_pager *p, char *addr)
{
	/* A protection left by an undone eviction would turn the populate
	 * into a write-protect fault that waits for this very thread. */
	if (uffd_writeprotect(p->uffd, addr, USWAP_PAGE_SIZE, false))
		return false;
	return madvise(addr, USWAP_PAGE_SIZE, MADV_POPULATE_WRITE) == 0;
}

/* The pagemap entry of @addr (bit 63 present, bit 62 swapped; 0: no
 * page), or UINT64_MAX when it cannot be read. */
static uint64_t pagemap_entry(struct uswap_pager *p, const char *addr)
{
	uint64_t e;
	off_t off = (off_t)((uintptr_t)addr / USWAP_PAGE_SIZE * sizeof(e));

	if (p->stage_pagemap < 0 || pread(p->stage_pagemap, &e, sizeof(e), off) != sizeof(e))
		return UINT64_MAX;
	return e;
}

/* After a failed move: did the page at @src go to @dst all the same? */
static bool page_moved(struct uswap_pager *p, const char *dst, const char *src)
{
	uint64_t s = pagemap_entry(p, src), d = pagemap_entry(p, dst);

	return s == 0 && d != UINT64_MAX && (d >> 63) & 1;
}

/* uffd_move() of [@src, @src + @len) to @dst, with the pages a failure
 * moved anyway counted as moved. Return, *@moved: as uffd_move(). */
static int move_checked(struct uswap_pager *p, char *dst, char *src, size_t len,
			size_t *moved)
{
	*moved = 0;
	for (;;) {
		size_t n = 0;
		int err = uffd_move(p->uffd, dst + *moved, src + *moved, len - *moved, &n);

		*moved += n;
		if (!err)
			return 0;
		if (!page_moved(p, dst + *moved, src + *moved))
			return err;
		*moved += USWAP_PAGE_SIZE; /* moved, whatever the answer said */
		if (*moved == len)
			return 0;
	}
}

long stage_move_out(struct uswap_pager *p, char *dst, char *src, size_t len, int *errp)
{
	size_t done = 0;
	char *retried = NULL;

	for (;;) {
		size_t moved = 0;
		int err = move_checked(p, dst + done, src + done, len - done, &moved);

		done += moved;
		if (!err)
			return (long)done;
		if (err == -EBUSY && retried != src + done && page_unshare(p, src + done)) {
			retried = src + done;
			continue;
		}
		*errp = err;
		return (long)done;
	}
}

int stage_move_back(struct uswap_pager *p, char *dst, char *src, size_t len)
{
	size_t moved = 0;
	int err;

	if (!len)
		return 0;
	err = move_checked(p, dst, src, len, &moved);
	if (!err)
		return 0;
	/* Not expected (the program's threads wait while the pages are
	 * away): keep the data all the same, as a copy. */
	err = uffd_copy(p->uffd, dst + moved, src + moved, len - moved, false);
	WARN_ONCE(err, "pager: putting a staged folio back failed: %d", err);
	return err;
}
