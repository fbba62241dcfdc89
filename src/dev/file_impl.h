/* SPDX-License-Identifier: MIT */
/*
 * file_impl.h - the file backend's insides, shared by file.c (the device,
 * its synchronous I/O and discard) and file_uring.c (its asynchronous I/O
 * through io_uring), which is built only with liburing (meson option
 * io_uring: USWAP_HAVE_LIBURING). Without it the file_ring_*() calls
 * below are stand-ins that say so, and every request takes the
 * synchronous path, as when io_uring_queue_init() fails. Nothing outside
 * src/dev/ includes it.
 */
#ifndef USWAP_DEV_FILE_IMPL_H
#define USWAP_DEV_FILE_IMPL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dev/dev_internal.h"
#include "dev/file.h"

struct file_ring; /* file_uring.c: the ring, its locks, what is in flight */

struct file_backend {
	struct backend b;            /* first */
	int fd;
	bool direct;                 /* O_DIRECT: buffers must be aligned */
	bool blkdev;                 /* BLKDISCARD instead of punch hole */
	bool discard;                /* opts.discard */
	_Atomic bool discard_refused;/* EOPNOTSUPP seen: stop trying */
	int open_discard_rc;         /* the discard at open; set once */
	uint64_t size_bytes;

	struct file_ring *ring;      /* NULL: pread/pwrite; immutable after open */
	int uring_error;             /* why no ring, when setting it up failed */
	unsigned int depth;          /* ring entries, cap on inflight */

	/* statistics; relaxed atomics */
	_Atomic uint64_t nr_read, nr_write, nr_discard;
	_Atomic uint64_t nr_async, nr_short, nr_bounce;
	_Atomic uint64_t nr_realloc_failed; /* punched, not re-allocated */
	_Atomic bool realloc_warned;        /* the one warning is out */
	_Atomic bool realloc_refused;       /* EOPNOTSUPP: holes stay */
};

static inline struct file_backend *to_file(struct backend *b)
{
	return (struct file_backend *)b;
}

static inline void file_count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static inline bool file_needs_bounce(const struct file_backend *fb, const void *buf)
{
	return fb->direct && ((uintptr_t)buf & (FILE_DIO_ALIGN - 1)) != 0;
}

/* file.c: the contract's code (-ENOSPC, -ENOMEM, -EIO) for a positive
 * errno of the medium. */
int file_io_errno(int e);

/* file.c: one folio, synchronously (pread/pwrite, short transfers
 * retried), through a bounce buffer if O_DIRECT needs one; the range is
 * checked already. Return: 0; -ENOSPC, -ENOMEM, -EIO. */
int file_rw(struct file_backend *fb, bool write, uint64_t slot, unsigned int order,
	    void *buf);

#if USWAP_HAVE_LIBURING
/*
 * file_ring_open() - a ring of fb->depth entries for @fb (fb->ring).
 * Return: 0; io_uring_queue_init()'s -errno (-EPERM where io_uring is
 * disabled, -ENOSYS, -ENOMEM), when @fb stays on pread/pwrite.
 */
int file_ring_open(struct file_backend *fb);

/*
 * file_ring_submit_batch() - the file backend's submit_batch with a ring:
 * reads and writes go on it, anything else completes before the return.
 * Return: 0; -EINVAL (a NULL request: those before it were queued).
 */
int file_ring_submit_batch(struct file_backend *fb, struct backend_io **ios,
			   unsigned int n);

/* file_ring_reap() - the file backend's reap with a ring. Return: the
 * done() callbacks run; -EIO (waiting on the ring failed). */
int file_ring_reap(struct file_backend *fb, unsigned int min_complete);

/* file_ring_close() - wait for what is in flight (running its done()),
 * then tear the ring down. Context: no other thread uses @fb. */
void file_ring_close(struct file_backend *fb);
#else
/* Built without liburing: there is never a ring, so only the open is
 * called, and it says why (file_backend_info().uring_error). */
static inline int file_ring_open(struct file_backend *fb)
{
	(void)fb;
	return -ENOTSUP;
}

static inline int file_ring_submit_batch(struct file_backend *fb,
					 struct backend_io **ios, unsigned int n)
{
	(void)fb, (void)ios, (void)n;
	return -ENOTSUP;
}

static inline int file_ring_reap(struct file_backend *fb, unsigned int min_complete)
{
	(void)fb, (void)min_complete;
	return 0;
}

static inline void file_ring_close(struct file_backend *fb)
{
	(void)fb;
}
#endif /* USWAP_HAVE_LIBURING */

#endif /* USWAP_DEV_FILE_IMPL_H */
