/* SPDX-License-Identifier: MIT */
/*
 * dev_internal.h - helpers shared by the backends of src/dev/ (not part of the
 * backend interface itself, which is backend.h). Grouped by defining file.
 */
#ifndef USWAP_DEV_DEV_INTERNAL_H
#define USWAP_DEV_DEV_INTERNAL_H

#include <stdarg.h>

#include "dev/backend.h"

/* ------------------------------------------------------------------ */
/* backend.c */

/*
 * backend_check_io() - validate a READ/WRITE request against @b.
 * The folio must lie wholly in [b->first_slot, b->nr_slots), start at a
 * slot aligned to 2^@order (backend.h: folios are naturally aligned) and
 * have @order <= USWAP_MAX_ORDER. Slots below first_slot (the header page)
 * are refused so that no backend can overwrite a mkswap header.
 * Return: 0 or -EINVAL. Thread-safe (reads only immutable fields).
 */
int backend_check_io(const struct backend *b, uint64_t slot, unsigned int order);

/*
 * backend_check_range() - validate a DISCARD range [@slot, @slot + @nr).
 * Same bounds as backend_check_io(); no alignment is required and @nr 0
 * is accepted (a no-op for every backend).
 * Return: 0 or -EINVAL. Thread-safe.
 */
int backend_check_range(const struct backend *b, uint64_t slot, uint64_t nr);

/*
 * backend_init() - fill the common part of a new backend: ops, name
 * (truncated to fit), geometry; no bad slots, not a file.
 */
void backend_init(struct backend *b, const struct backend_ops *ops,
		  const char *name, uint64_t nr_slots, uint64_t first_slot);

/*
 * backend_release() - free what the common part owns (bad_slots, with
 * free()). Each backend's close() calls it last-but-one, before freeing
 * its own structure.
 */
void backend_release(struct backend *b);

/*
 * backend_errf() - write a printf-style message into @err (if not NULL
 * and @errlen > 0) and return @rc, so constructors can write
 * `return backend_errf(err, errlen, -EINVAL, "...")`.
 */
int backend_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * backend_run_sync() - perform @io with @b's synchronous ops and set
 * io->result (does not call done()). Used by backend_submit_sync() and by
 * backends that fall back to synchronous I/O for one request.
 */
void backend_run_sync(struct backend *b, struct backend_io *io);

/*
 * page_same_filled() - true if every 8-byte word of the USWAP_PAGE_SIZE
 * bytes at @page equals the first one, which is stored in *@word
 * (zram's page_same_filled(): such pages are kept as the word alone).
 */
bool page_same_filled(const void *page, uint64_t *word);

/* page_fill_word() - write @word into every 8-byte word of @page. */
void page_fill_word(void *page, uint64_t word);

#endif /* USWAP_DEV_DEV_INTERNAL_H */
