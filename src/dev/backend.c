// SPDX-License-Identifier: MIT
/*
 * backend.c - what every backend shares: argument checks, the common
 * part's set-up and release, and the synchronous form of the asynchronous
 * interface (backend_submit_sync / backend_reap_sync) for backends whose
 * I/O completes at once (ram, zram, and file when io_uring is off).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev/dev_internal.h"

int backend_check_io(const struct backend *b, uint64_t slot, unsigned int order)
{
	uint64_t nr;

	if (order > USWAP_MAX_ORDER)
		return -EINVAL;
	nr = UINT64_C(1) << order;
	if (slot & (nr - 1))
		return -EINVAL;
	if (slot < b->first_slot || slot >= b->nr_slots || nr > b->nr_slots - slot)
		return -EINVAL;
	return 0;
}

int backend_check_range(const struct backend *b, uint64_t slot, uint64_t nr)
{
	if (nr == 0)
		return 0;
	if (slot < b->first_slot || slot >= b->nr_slots || nr > b->nr_slots - slot)
		return -EINVAL;
	return 0;
}

void backend_init(struct backend *b, const struct backend_ops *ops,
		  const char *name, uint64_t nr_slots, uint64_t first_slot)
{
	b->ops = ops;
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->nr_slots = nr_slots;
	b->first_slot = first_slot;
	b->bad_slots = NULL;
	b->nr_bad = 0;
	b->is_file = false;
	b->free_notify = false;
	b->discard_clusters = false;
	b->encrypted = false;
}

void backend_release(struct backend *b)
{
	free((void *)b->bad_slots);
	b->bad_slots = NULL;
	b->nr_bad = 0;
}

int backend_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void backend_run_sync(struct backend *b, struct backend_io *io)
{
	switch (io->op) {
	case BACKEND_READ:
		io->result = b->ops->read(b, io->slot, io->order, io->buf);
		break;
	case BACKEND_WRITE:
		io->result = b->ops->write(b, io->slot, io->order, io->buf);
		break;
	case BACKEND_DISCARD:
		io->result = b->ops->discard(b, io->slot, io->nr_slots);
		break;
	default:
		io->result = -EINVAL;
		break;
	}
}

/*
 * backend_submit_sync() - the submit op of a backend without real async
 * I/O: run @io now through the synchronous ops, set io->result and call
 * io->done (if not NULL) before returning.
 * Return: 0 (the request's own outcome is io->result); -EINVAL if @io is
 * NULL (done is then not called).
 * Thread-safety: as the synchronous ops (different slots in parallel).
 */
int backend_submit_sync(struct backend *b, struct backend_io *io)
{
	if (io == NULL)
		return -EINVAL;
	backend_run_sync(b, io);
	if (io->done != NULL)
		io->done(io);
	return 0;
}

/*
 * backend_reap_sync() - the reap op of a backend without real async I/O.
 * Every request completed inside its submit, so nothing is ever pending:
 * returns 0 at once whatever @min_complete is. Callers count completions
 * in done(), not by reap's return value.
 */
int backend_reap_sync(struct backend *b, unsigned int min_complete)
{
	(void)b;
	(void)min_complete;
	return 0;
}

int backend_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n)
{
	if (b->ops->submit_batch)
		return b->ops->submit_batch(b, ios, n);
	for (unsigned int i = 0; i < n; i++) {
		int rc = b->ops->submit(b, ios[i]);

		if (rc)
			return rc;
	}
	return 0;
}

/* Buffers come from callers and need not be 8-byte aligned: load and
 * store words through memcpy (one mov each once compiled). */
static inline uint64_t load_word(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

bool page_same_filled(const void *page, uint64_t *word)
{
	const unsigned char *p = page;
	uint64_t first = load_word(p);

	/* Compare the last word first: most pages that are not same-filled
	 * differ there already (zram does the same). */
	if (load_word(p + USWAP_PAGE_SIZE - 8) != first)
		return false;
	for (size_t off = 8; off < USWAP_PAGE_SIZE - 8; off += 8)
		if (load_word(p + off) != first)
			return false;
	*word = first;
	return true;
}

void page_fill_word(void *page, uint64_t word)
{
	unsigned char *p = page;

	if (word == 0) {
		memset(page, 0, USWAP_PAGE_SIZE);
		return;
	}
	for (size_t off = 0; off < USWAP_PAGE_SIZE; off += 8)
		memcpy(p + off, &word, sizeof(word));
}
