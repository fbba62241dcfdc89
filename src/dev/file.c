// SPDX-License-Identifier: MIT
/*
 * file.c - the "file" backend: a regular file or a block device, laid out
 * as util-linux mkswap leaves it (slot n at byte n * USWAP_PAGE_SIZE,
 * slot 0 the header page, which this backend never reads or writes; the
 * header itself is parsed by src/dev/header.c).
 *
 * I/O. The synchronous read/write use pread/pwrite, looping over short
 * transfers. The asynchronous submit/reap use io_uring (one ring per
 * backend, queue_depth entries): a request is prepared with the
 * backend_io as its user_data, and reap runs done() for the completions.
 * When io_uring_queue_init() fails (or no_uring is set), submit runs the
 * request synchronously and calls done() before returning, as the memory
 * backends do; the reason is kept (file_backend_info().uring_error).
 * Short transfers are never reported as success: a short read or write
 * is retried until done, and an end of file or a failure becomes an error.
 *
 * O_DIRECT (opts.direct) needs FILE_DIO_ALIGN-aligned buffers: a caller's
 * unaligned buffer goes through an aligned bounce buffer (posix_memalign)
 * for that request; offsets and lengths are whole pages already.
 *
 * Discard follows the kernel's two swap discard modes, both switched on by
 * opts.discard (swapon --discard): the whole area except the header page
 * once at open (discard_swap() at swapon), and each range on request
 * (the per-cluster discard as clusters become free). Files punch holes
 * (fallocate PUNCH_HOLE | KEEP_SIZE: the filesystem frees the blocks, and
 * trims them where it is mounted with discard; the range then reads
 * zeroes) and block devices get BLKDISCARD. A punched range is allocated
 * again at once (fallocate mode 0: unwritten extents, nothing written,
 * still reads zeroes, counted in st_blocks), as the kernel's discard
 * under a swap file leaves the file fully mapped: the file never has
 * holes for longer than a discard takes, so a process that dies without
 * close leaves a file the next open accepts (the header check refuses a
 * sparse file). When that re-allocation fails (ENOSPC: someone took the
 * space) it is counted and warned about once and close tries again; when
 * the filesystem has no mode-0 fallocate (EOPNOTSUPP) the hole stays and
 * that is recorded (realloc_refused in the statistics). On tmpfs the
 * re-allocation takes the memory back; that is accepted: the file was
 * fully allocated when mkswap'd, and discard only has to leave it so.
 * When the filesystem or device refuses discard itself
 * (EOPNOTSUPP), discard returns -EOPNOTSUPP and the backend stops trying,
 * as the kernel clears SWP_DISCARDABLE. With discard off, a discard
 * request does nothing and returns 0 (the slots keep stale data, which
 * the backend contract allows).
 *
 * Errors: -EINVAL (slot range), -ENOSPC (the filesystem is full or over
 * quota: a write into a punched hole needs new blocks), -ENOMEM, and -EIO
 * for every other failure of the medium, including an unexpected end of
 * file.
 *
 * Locks: sq_lock covers the submission queue (get_sqe, prep, submit) and
 * cq_lock the completion queue (peek, wait, seen); they are never held
 * together and done() always runs with neither held, so a done() callback
 * may submit again.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <liburing.h>

#include "dev/dev_internal.h"
#include "dev/file.h"
#include "util/tsan.h"

struct file_backend {
	struct backend b;            /* first */
	int fd;
	bool direct;                 /* O_DIRECT: buffers must be aligned */
	bool blkdev;                 /* BLKDISCARD instead of punch hole */
	bool discard;                /* opts.discard */
	_Atomic bool discard_refused;/* EOPNOTSUPP seen: stop trying */
	int open_discard_rc;         /* the discard at open; set once */
	uint64_t size_bytes;

	bool uring;                  /* ring set up; immutable after open */
	int uring_error;             /* why not, when it failed */
	unsigned int depth;          /* ring entries, cap on inflight */
	bool wait_timeout;           /* kernel has IORING_FEAT_EXT_ARG */
	struct io_uring ring;
	pthread_mutex_t sq_lock;     /* ring's submission side */
	pthread_mutex_t cq_lock;     /* ring's completion side */
	_Atomic unsigned int inflight; /* submitted or reserved, not yet
					  harvested; <= depth but for the
					  rare submit failure */

	/* statistics; relaxed atomics */
	_Atomic uint64_t nr_read, nr_write, nr_discard;
	_Atomic uint64_t nr_async, nr_short, nr_bounce;
	_Atomic uint64_t nr_realloc_failed; /* punched, not re-allocated */
	_Atomic bool realloc_warned;        /* the one warning is out */
	_Atomic bool realloc_refused;       /* EOPNOTSUPP: holes stay */
};

/* An async request that needed a bounce buffer. Tagged with bit 0 in the
 * user_data, so plain requests cost no allocation. */
struct file_req {
	struct backend_io *io;
	void *bounce;                /* FILE_DIO_ALIGN-aligned, folio-sized */
};

#define UDATA_BOUNCE  UINT64_C(1) /* user_data bit 0: a struct file_req */
#define UDATA_NOP     UINT64_C(0) /* a cancelled submission; ignored */
#define REAP_BATCH    32

static const struct backend_ops file_ops;

static inline struct file_backend *to_file(struct backend *b)
{
	return (struct file_backend *)b;
}

static inline void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The contract's codes from a positive errno of the medium. */
static int io_errno(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
		return -ENOSPC;
	case ENOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* ------------------------------------------------------------------ */
/* Synchronous I/O */

/* Transfer all of [@off, @off + @len), retrying short transfers.
 * Return: 0, or -ENOSPC/-ENOMEM/-EIO (end of file counts as -EIO). */
static int rw_full(struct file_backend *fb, bool write, void *buf, size_t len,
		   off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write ? pwrite(fb->fd, (char *)buf + done, len - done, off + (off_t)done)
				  : pread(fb->fd, (char *)buf + done, len - done, off + (off_t)done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return io_errno(errno);
		}
		if (n == 0)
			return -EIO; /* end of file: the file shrank under us */
		done += (size_t)n;
		if (done < len)
			count(&fb->nr_short);
	}
	return 0;
}

static inline bool needs_bounce(const struct file_backend *fb, const void *buf)
{
	return fb->direct && ((uintptr_t)buf & (FILE_DIO_ALIGN - 1)) != 0;
}

/* One folio, synchronously, through a bounce buffer if O_DIRECT needs one.
 * Range already checked. */
static int file_rw(struct file_backend *fb, bool write, uint64_t slot,
		   unsigned int order, void *buf)
{
	size_t len = folio_bytes(order);
	off_t off = (off_t)(slot * USWAP_PAGE_SIZE);
	void *bounce = NULL;
	int rc;

	if (needs_bounce(fb, buf)) {
		if (posix_memalign(&bounce, FILE_DIO_ALIGN, len) != 0)
			return -ENOMEM;
		count(&fb->nr_bounce);
		if (write)
			memcpy(bounce, buf, len);
	}
	rc = rw_full(fb, write, bounce ? bounce : buf, len, off);
	if (rc == 0 && bounce != NULL && !write)
		memcpy(buf, bounce, len);
	free(bounce);
	if (rc == 0)
		count(write ? &fb->nr_write : &fb->nr_read);
	return rc;
}

/*
 * file_read() - read the 2^@order slots at @slot into @buf (pread).
 * Return: 0; -EINVAL (range); -ENOMEM (bounce buffer); -EIO.
 * Thread-safety: any thread.
 */
static int file_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	int rc = backend_check_io(b, slot, order);

	return rc ? rc : file_rw(to_file(b), false, slot, order, buf);
}

/*
 * file_write() - write @buf to the 2^@order slots at @slot (pwrite). Not
 * durable until flush().
 * Return: 0; -EINVAL (range); -ENOSPC (filesystem full); -ENOMEM; -EIO.
 * Thread-safety: any thread.
 */
static int file_write(struct backend *b, uint64_t slot, unsigned int order,
		      const void *buf)
{
	int rc = backend_check_io(b, slot, order);

	return rc ? rc : file_rw(to_file(b), true, slot, order, (void *)buf);
}

/* ------------------------------------------------------------------ */
/* Discard */

/*
 * Allocate the punched range [@off, @off + @len) again (unwritten extents)
 * so that the file has no holes. A failure does not fail the discard: the
 * range reads zeroes either way, a later write into the hole allocates
 * (or fails with -ENOSPC), and file_close() tries the whole file again.
 * The caller owns the range (the cluster being discarded is off every
 * list), so no write races with the punch or this.
 */
static void reallocate_bytes(struct file_backend *fb, uint64_t off, uint64_t len)
{
	int e;

	if (atomic_load_explicit(&fb->realloc_refused, memory_order_relaxed))
		return;
	if (fallocate(fb->fd, 0, (off_t)off, (off_t)len) == 0)
		return;
	e = errno;
	count(&fb->nr_realloc_failed);
	if (e == EOPNOTSUPP || e == ENOSYS) {
		/* Punch without preallocation (rare): the holes stay, and
		 * the next open refuses the file until it is written in full. */
		atomic_store(&fb->realloc_refused, true);
	}
	if (!atomic_exchange(&fb->realloc_warned, true))
		fprintf(stderr, "uswap: warning: %s: could not re-allocate discarded "
			"blocks: %s; the file has holes%s\n", fb->b.name, strerror(e),
			atomic_load(&fb->realloc_refused) ? " (write it in full "
			"before the next swapon)" : " until close");
}

/* Discard bytes [@off, @off + @len) of the medium. Return: 0,
 * -EOPNOTSUPP (refused: the backend stops trying), -EIO. */
static int discard_bytes(struct file_backend *fb, uint64_t off, uint64_t len)
{
	int rc;

	if (atomic_load_explicit(&fb->discard_refused, memory_order_relaxed))
		return -EOPNOTSUPP;
	if (fb->blkdev) {
		uint64_t range[2] = { off, len };

		rc = ioctl(fb->fd, BLKDISCARD, range);
	} else {
		rc = fallocate(fb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)off, (off_t)len);
		if (rc == 0)
			reallocate_bytes(fb, off, len);
	}
	if (rc == 0) {
		count(&fb->nr_discard);
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS || errno == ENOTTY) {
		atomic_store(&fb->discard_refused, true);
		return -EOPNOTSUPP;
	}
	return -EIO;
}

/*
 * file_discard() - the per-range swap discard: punch a hole over (file)
 * or BLKDISCARD (block device) the slots [slot, slot + nr). A punched
 * range reads zeroes; a discarded block device range reads what the
 * device returns (zeroes or stale data).
 * Return: 0 (also when discard is off: nothing done); -EINVAL (range);
 * -EOPNOTSUPP (the medium refused discard, now or before); -EIO.
 * Thread-safety: any thread.
 */
static int file_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct file_backend *fb = to_file(b);
	int rc = backend_check_range(b, slot, nr_slots);

	if (rc || nr_slots == 0 || !fb->discard)
		return rc;
	return discard_bytes(fb, slot * USWAP_PAGE_SIZE, nr_slots * USWAP_PAGE_SIZE);
}

/* flush: fdatasync. Return: 0 or -EIO. Thread-safety: any thread. */
static int file_flush(struct backend *b)
{
	return fdatasync(to_file(b)->fd) == 0 ? 0 : -EIO;
}

/* ------------------------------------------------------------------ */
/* Asynchronous I/O (io_uring) */

/* Finish one harvested request: copy a bounce buffer back, redo a short
 * or interrupted transfer synchronously, set io->result and call done(). */
static void complete_io(struct file_backend *fb, uint64_t udata, int res)
{
	struct file_req *req = NULL;
	struct backend_io *io;
	bool write;
	size_t len;

	/* The submitter's writes reach us through the kernel. */
	tsan_acquire((void *)(uintptr_t)(udata & ~UDATA_BOUNCE));
	if (udata & UDATA_BOUNCE) {
		req = (struct file_req *)(uintptr_t)(udata & ~UDATA_BOUNCE);
		io = req->io;
	} else {
		io = (struct backend_io *)(uintptr_t)udata;
	}
	write = io->op == BACKEND_WRITE;
	len = folio_bytes(io->order);

	if (res == -EAGAIN || res == -EINTR || (res >= 0 && (size_t)res < len)) {
		/* Short or interrupted: do the whole folio again, through the
		 * synchronous path (same data, so a repeat is harmless). */
		count(&fb->nr_short);
		io->result = file_rw(fb, write, io->slot, io->order, io->buf);
	} else if (res < 0) {
		io->result = io_errno(-res);
	} else {
		if (req != NULL && !write)
			memcpy(io->buf, req->bounce, len);
		count(write ? &fb->nr_write : &fb->nr_read);
		io->result = 0;
	}
	if (req != NULL) {
		free(req->bounce);
		free(req);
	}
	if (io->done != NULL)
		io->done(io);
}

/*
 * reap_some() - harvest completions and run their done() callbacks until
 * at least @min_complete ran (0: only what is already there). Gives up
 * waiting when nothing is in flight, so asking for more than was
 * submitted returns instead of hanging.
 * Return: the number of done() callbacks run, or -EIO if waiting failed
 * before any completion.
 * Context: takes cq_lock around each harvest, not around done().
 */
static int reap_some(struct file_backend *fb, unsigned int min_complete)
{
	struct { uint64_t udata; int res; } batch[REAP_BATCH];
	unsigned int total = 0;

	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int n = 0;
		int wait_rc = 0;

		pthread_mutex_lock(&fb->cq_lock);
		for (;;) {
			while (n < REAP_BATCH && io_uring_peek_cqe(&fb->ring, &cqe) == 0) {
				uint64_t ud = cqe->user_data;

				batch[n].udata = ud;
				batch[n].res = cqe->res;
				io_uring_cqe_seen(&fb->ring, cqe);
				if (ud == UDATA_NOP)
					continue;
				atomic_fetch_sub(&fb->inflight, 1);
				n++;
			}
			if (n > 0 || total >= min_complete ||
			    atomic_load(&fb->inflight) == 0)
				break;
			/* Wait for one. With a timeout (when the kernel takes
			 * it without an SQE) the inflight check above is
			 * repeated now and then, in case a reserved request
			 * fell back to synchronous I/O. */
			if (fb->wait_timeout) {
				struct __kernel_timespec ts = { .tv_sec = 0,
								.tv_nsec = 100 * 1000 * 1000 };

				wait_rc = io_uring_wait_cqe_timeout(&fb->ring, &cqe, &ts);
			} else {
				wait_rc = io_uring_wait_cqe(&fb->ring, &cqe);
			}
			if (wait_rc == -ETIME || wait_rc == -EINTR || wait_rc == 0) {
				wait_rc = 0;
				continue;
			}
			break;
		}
		pthread_mutex_unlock(&fb->cq_lock);

		for (unsigned int i = 0; i < n; i++)
			complete_io(fb, batch[i].udata, batch[i].res);
		total += n;
		if (wait_rc < 0 && total == 0)
			return -EIO;
		if (n == 0 || wait_rc < 0 || (total >= min_complete && n < REAP_BATCH))
			break;
	}
	return (int)total;
}

/* Reserve up to @k of the depth in-flight places, at least one, reaping
 * (and so running other requests' done()) while none is free. Keeping at
 * most depth requests in flight keeps the CQ (2 * depth) from
 * overflowing. A caller submits what it reserved before it reserves
 * again, so no reservation ever waits on another. Return: how many. */
static unsigned int reserve_inflight(struct file_backend *fb, unsigned int k)
{
	unsigned int n = atomic_load(&fb->inflight);

	for (;;) {
		if (n < fb->depth) {
			unsigned int got = fb->depth - n < k ? fb->depth - n : k;

			if (atomic_compare_exchange_weak(&fb->inflight, &n, n + got))
				return got;
			continue;
		}
		reap_some(fb, 1);
		n = atomic_load(&fb->inflight);
	}
}

#define SUBMIT_CHUNK 64 /* requests per io_uring_submit at most */

/* A request on its way to the ring: the buffer the kernel uses (the
 * caller's, or a bounce for O_DIRECT) and the user_data naming it. */
struct staged {
	struct backend_io *io;
	struct file_req *req;
	void *buf;
	uint64_t udata;
};

static void complete_now(struct backend_io *io, int rc)
{
	io->result = rc;
	if (io->done != NULL)
		io->done(io);
}

/* stage_io() - check @io and give it a bounce buffer if O_DIRECT needs
 * one. Return: true if it goes on the ring; false if it completed already
 * (outside the device, no memory for the bounce). */
static bool stage_io(struct file_backend *fb, struct backend_io *io, struct staged *st)
{
	size_t len = folio_bytes(io->order);
	int rc = backend_check_io(&fb->b, io->slot, io->order);

	if (rc) {
		complete_now(io, rc);
		return false;
	}
	st->io = io;
	st->req = NULL;
	st->buf = io->buf;
	st->udata = (uint64_t)(uintptr_t)io;
	if (!needs_bounce(fb, io->buf))
		return true;
	st->req = malloc(sizeof(*st->req));
	if (st->req == NULL || posix_memalign(&st->req->bounce, FILE_DIO_ALIGN, len) != 0) {
		free(st->req);
		complete_now(io, -ENOMEM);
		return false;
	}
	st->req->io = io;
	count(&fb->nr_bounce);
	if (io->op == BACKEND_WRITE)
		memcpy(st->req->bounce, io->buf, len);
	st->buf = st->req->bounce;
	st->udata = (uint64_t)(uintptr_t)st->req | UDATA_BOUNCE;
	return true;
}

/* A staged request the kernel did not take: give back its place and run
 * it synchronously. */
static void unstage_sync(struct file_backend *fb, struct staged *st)
{
	atomic_fetch_sub(&fb->inflight, 1);
	if (st->req != NULL) {
		free(st->req->bounce);
		free(st->req);
	}
	backend_submit_sync(&fb->b, st->io);
}

static void prep_sqe(struct file_backend *fb, struct io_uring_sqe *sqe,
		     const struct staged *st)
{
	unsigned int len = (unsigned int)folio_bytes(st->io->order);
	uint64_t pos = st->io->slot * USWAP_PAGE_SIZE;

	if (st->io->op == BACKEND_READ)
		io_uring_prep_read(sqe, fb->fd, st->buf, len, pos);
	else
		io_uring_prep_write(sqe, fb->fd, st->buf, len, pos);
	io_uring_sqe_set_data64(sqe, st->udata);
	tsan_release((void *)(uintptr_t)(st->udata & ~UDATA_BOUNCE));
}

/*
 * ring_submit_reserved() - put @n (<= SUBMIT_CHUNK) staged requests, whose
 * in-flight places are reserved, on the ring with one io_uring_submit.
 * The kernel consumes the SQ in order, so what it did not take is the
 * tail of ours: those entries become no-ops that reap ignores, and their
 * requests run synchronously here.
 */
static void ring_submit_reserved(struct file_backend *fb, struct staged *st, unsigned int n)
{
	struct io_uring_sqe *sqe[SUBMIT_CHUNK];
	unsigned int queued = 0, unsent;
	int rc;

	pthread_mutex_lock(&fb->sq_lock);
	for (; queued < n; queued++) {
		sqe[queued] = io_uring_get_sqe(&fb->ring);
		if (sqe[queued] == NULL) {
			/* Only cancelled entries can fill the SQ: push them
			 * (and ours so far) out. */
			io_uring_submit(&fb->ring);
			sqe[queued] = io_uring_get_sqe(&fb->ring);
		}
		if (sqe[queued] == NULL)
			break;
		prep_sqe(fb, sqe[queued], &st[queued]);
	}
	do {
		rc = io_uring_submit(&fb->ring);
	} while (rc == -EINTR);
	unsent = io_uring_sq_ready(&fb->ring);
	if (unsent > queued)
		unsent = queued;
	for (unsigned int i = queued - unsent; i < queued; i++) {
		io_uring_prep_nop(sqe[i]);
		io_uring_sqe_set_data64(sqe[i], UDATA_NOP);
	}
	pthread_mutex_unlock(&fb->sq_lock);

	for (unsigned int i = queued - unsent; i < n; i++)
		unstage_sync(fb, &st[i]);
	atomic_fetch_add_explicit(&fb->nr_async, queued - unsent, memory_order_relaxed);
	(void)rc; /* a failed submit shows as entries left in the SQ */
}

/* Submit @n (<= SUBMIT_CHUNK) staged requests, as many at a time as the
 * ring has room for: with a full ring, the first ones are in flight while
 * the rest wait for room. */
static void ring_submit(struct file_backend *fb, struct staged *st, unsigned int n)
{
	while (n) {
		unsigned int got = reserve_inflight(fb, n);

		ring_submit_reserved(fb, st, got);
		st += got;
		n -= got;
	}
}

/*
 * file_submit_batch() - queue @n requests on the ring, one
 * io_uring_submit per SUBMIT_CHUNK of them (more when the ring's queue
 * depth is smaller: what has room goes first); done() runs
 * in a later reap (or in this or another thread's submit, which reaps
 * while the ring is at its depth). DISCARD requests, requests outside the
 * device, and all requests when io_uring is off, complete before this
 * returns. Return: 0 (each outcome is its io->result, delivered to done()
 * exactly once); -EINVAL (a NULL request: those before it were queued).
 * Thread-safety: any thread; takes sq_lock, maybe cq_lock (not both).
 */
static int file_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n)
{
	struct file_backend *fb = to_file(b);
	struct staged st[SUBMIT_CHUNK];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct backend_io *io = ios[i];

		if (io == NULL) {
			if (k)
				ring_submit(fb, st, k);
			return -EINVAL;
		}
		if (!fb->uring || (io->op != BACKEND_READ && io->op != BACKEND_WRITE))
			backend_submit_sync(b, io);
		else if (stage_io(fb, io, &st[k]))
			k++;
		if (k == SUBMIT_CHUNK || (k && i + 1 == n)) {
			ring_submit(fb, st, k);
			k = 0;
		}
	}
	return 0;
}

/* file_submit() - file_submit_batch() of one request. */
static int file_submit(struct backend *b, struct backend_io *io)
{
	return file_submit_batch(b, &io, 1);
}

/*
 * file_reap() - run done() for at least @min_complete finished requests
 * (0: only those already finished); returns early if nothing more is in
 * flight. With io_uring off, nothing is ever pending: returns 0.
 * Return: how many done() callbacks ran; -EIO (waiting on the ring failed).
 * Thread-safety: any thread; several reapers share the completions.
 */
static int file_reap(struct backend *b, unsigned int min_complete)
{
	struct file_backend *fb = to_file(b);

	if (!fb->uring)
		return 0;
	return reap_some(fb, min_complete);
}

/* ------------------------------------------------------------------ */

int file_backend_info(struct backend *b, struct file_backend_info *info)
{
	struct file_backend *fb = to_file(b);

	if (b == NULL || b->ops != &file_ops || info == NULL)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->uring = fb->uring;
	info->uring_error = fb->uring_error;
	info->direct = fb->direct;
	info->blkdev = fb->blkdev;
	info->discard = fb->discard;
	info->discard_refused = atomic_load(&fb->discard_refused);
	info->open_discard_rc = fb->open_discard_rc;
	info->queue_depth = fb->depth;
	info->size_bytes = fb->size_bytes;
	info->reads = atomic_load(&fb->nr_read);
	info->writes = atomic_load(&fb->nr_write);
	info->discards = atomic_load(&fb->nr_discard);
	info->async_submitted = atomic_load(&fb->nr_async);
	info->short_retries = atomic_load(&fb->nr_short);
	info->bounces = atomic_load(&fb->nr_bounce);
	return 0;
}

static void file_print_stats(struct backend *b, FILE *out)
{
	struct file_backend_info fi;

	file_backend_info(b, &fi);
	fprintf(out, "path %s\n", b->name);
	fprintf(out, "type %s\n", fi.blkdev ? "block" : "file");
	fprintf(out, "size_bytes %llu\n", (unsigned long long)fi.size_bytes);
	fprintf(out, "io %s\n", fi.uring ? "io_uring" : "pread");
	fprintf(out, "uring_error %d\n", fi.uring_error);
	fprintf(out, "queue_depth %u\n", fi.queue_depth);
	fprintf(out, "direct %d\n", fi.direct);
	fprintf(out, "discard %d\n", fi.discard && !fi.discard_refused);
	fprintf(out, "discard_refused %d\n", fi.discard_refused);
	fprintf(out, "open_discard_rc %d\n", fi.open_discard_rc);
#define P(f) fprintf(out, #f " %llu\n", (unsigned long long)fi.f)
	P(reads);
	P(writes);
	P(discards);
	P(async_submitted);
	P(short_retries);
	P(bounces);
#undef P
	fprintf(out, "realloc_failed %llu\n",
		(unsigned long long)atomic_load(&to_file(b)->nr_realloc_failed));
	fprintf(out, "realloc_refused %d\n", atomic_load(&to_file(b)->realloc_refused));
}

/* Context: no other thread may use @b. Requests still in flight are
 * waited for and their done() run first. */
static void file_close(struct backend *b)
{
	struct file_backend *fb = to_file(b);

	if (b == NULL)
		return;
	if (fb->uring) {
		while (atomic_load(&fb->inflight) > 0)
			if (reap_some(fb, atomic_load(&fb->inflight)) < 0)
				break;
		io_uring_queue_exit(&fb->ring);
	}
	pthread_mutex_destroy(&fb->sq_lock);
	pthread_mutex_destroy(&fb->cq_lock);
	/* Every punched range was allocated again at once; this is the
	 * second chance for a re-allocation that failed then (ENOSPC), so
	 * the next open does not refuse the file ("has holes"). */
	if (!fb->blkdev && atomic_load(&fb->nr_realloc_failed) &&
	    !atomic_load(&fb->realloc_refused) &&
	    fallocate(fb->fd, 0, 0, (off_t)fb->size_bytes))
		fprintf(stderr, "uswap: warning: %s: could not re-allocate discarded blocks: %s\n",
			b->name, strerror(errno));
	close(fb->fd);
	backend_release(b);
	free(fb);
}

static const struct backend_ops file_ops = {
	.kind = "file",
	.read = file_read,
	.write = file_write,
	.discard = file_discard,
	.flush = file_flush,
	.submit = file_submit,
	.submit_batch = file_submit_batch,
	.reap = file_reap,
	.print_stats = file_print_stats,
	.close = file_close,
};

/*
 * claim_area() - take @path's inode for this backend alone, as the
 * kernel's swapon claims it (S_SWAPFILE on a file, an exclusive open of
 * a block device): a second open of the same area, through any path,
 * hard link or symlink, in this process or another, is refused. A file
 * gets an exclusive flock() on @fd, held until the fd is closed; a block
 * device is opened again with O_EXCL (the kernel's exclusive claim, which
 * also refuses a mounted device or one the kernel swaps on), and that fd
 * replaces @fd. Return: 0; -EBUSY (in use); another -errno.
 */
static int claim_area(const char *path, int *fd, const struct stat *st, int flags,
		      char *err, size_t errlen)
{
	struct stat st2;
	int excl, rc;

	if (S_ISREG(st->st_mode)) {
		if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		return backend_errf(err, errlen, rc, "%s: %s", path,
				    rc == -EBUSY ? "already in use as a swap area"
						 : strerror(-rc));
	}
	excl = open(path, flags | O_EXCL);
	if (excl < 0) {
		rc = -errno;
		return backend_errf(err, errlen, rc, "%s: %s", path,
				    rc == -EBUSY ? "block device already in use (swap area, mount or another exclusive user)"
						 : strerror(-rc));
	}
	if (fstat(excl, &st2) != 0 || st2.st_rdev != st->st_rdev) {
		close(excl); /* the path was replaced between the two opens */
		return backend_errf(err, errlen, -EBUSY, "%s: changed while being opened", path);
	}
	close(*fd);
	*fd = excl;
	return 0;
}

/*
 * backend_file_open() - open @path, a regular file or a block device,
 * read-write (O_DIRECT with opts.direct), as a swap backend of
 * size / USWAP_PAGE_SIZE slots (BLKGETSIZE64 for a block device), slot 0
 * being the header page (first_slot 1). The header is not read here; the
 * caller sets bad_slots from it. The file is never resized.
 * @opts: NULL for the defaults (queue depth 32, buffered, no discard,
 *        io_uring); copied.
 * io_uring: a ring of opts.queue_depth entries (0 = 32, clamped to
 * FILE_MAX_QUEUE_DEPTH) unless opts.no_uring; if io_uring_queue_init()
 * fails the backend falls back to pread/pwrite and records why.
 * Discard: with opts.discard, the whole area but the header page is
 * discarded now (the kernel's discard at swapon); a refusal switches
 * discard off and is recorded, it does not fail the open.
 * The area is claimed (claim_area()) until the backend is closed.
 * @out: receives the backend; the caller closes it with ops->close().
 * Return: 0; -EINVAL (@path or @out NULL, not a file or block device,
 * smaller than 2 pages, O_DIRECT refused by the filesystem); -EBUSY (the
 * same file or block device is already open as a backend, here or in
 * another process, or the block device is mounted); the -errno of open(2)
 * (-ENOENT, -EACCES, -ETXTBSY for the kernel's own active swap file, ...);
 * -ENOMEM. A message is put in @err.
 * Thread-safety: any thread.
 */
int backend_file_open(const char *path, const struct file_backend_opts *opts,
		      struct backend **out, char *err, size_t errlen)
{
	struct file_backend_opts o = { 0 };
	struct file_backend *fb;
	uint64_t size, nr_slots;
	struct stat st;
	int fd, flags, rc;

	if (path == NULL || out == NULL)
		return backend_errf(err, errlen, -EINVAL, "file: no path or output pointer");
	if (opts != NULL)
		o = *opts;
	if (o.queue_depth == 0)
		o.queue_depth = FILE_DEFAULT_QUEUE_DEPTH;
	if (o.queue_depth > FILE_MAX_QUEUE_DEPTH)
		o.queue_depth = FILE_MAX_QUEUE_DEPTH;

	flags = O_RDWR | O_CLOEXEC | (o.direct ? O_DIRECT : 0);
	fd = open(path, flags);
	if (fd < 0) {
		rc = -errno;
		if (rc == -EINVAL && o.direct)
			return backend_errf(err, errlen, rc,
					    "%s: O_DIRECT is not supported here", path);
		return backend_errf(err, errlen, rc, "%s: cannot open: %s", path,
				    strerror(-rc));
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		close(fd);
		return backend_errf(err, errlen, rc, "%s: fstat: %s", path, strerror(-rc));
	}
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) != 0) {
			rc = -errno;
			close(fd);
			return backend_errf(err, errlen, rc, "%s: BLKGETSIZE64: %s",
					    path, strerror(-rc));
		}
	} else {
		close(fd);
		return backend_errf(err, errlen, -EINVAL,
				    "%s: not a regular file or block device", path);
	}
	rc = claim_area(path, &fd, &st, flags, err, errlen);
	if (rc) {
		close(fd);
		return rc;
	}
	nr_slots = size / USWAP_PAGE_SIZE;
	if (nr_slots < 2) {
		close(fd);
		return backend_errf(err, errlen, -EINVAL,
				    "%s: %llu bytes: need 2 pages at least", path,
				    (unsigned long long)size);
	}

	fb = calloc(1, sizeof(*fb));
	if (fb == NULL) {
		close(fd);
		return backend_errf(err, errlen, -ENOMEM, "file: out of memory");
	}
	fb->fd = fd;
	fb->direct = o.direct;
	fb->blkdev = S_ISBLK(st.st_mode);
	fb->discard = o.discard;
	fb->size_bytes = size;
	fb->depth = o.queue_depth;
	pthread_mutex_init(&fb->sq_lock, NULL);
	pthread_mutex_init(&fb->cq_lock, NULL);
	if (!o.no_uring) {
		rc = io_uring_queue_init(fb->depth, &fb->ring, 0);
		if (rc == 0) {
			fb->uring = true;
			fb->wait_timeout = (fb->ring.features & IORING_FEAT_EXT_ARG) != 0;
		} else {
			fb->uring_error = rc; /* e.g. -EPERM (io_uring_disabled), -ENOSYS */
		}
	}
	backend_init(&fb->b, &file_ops, path, nr_slots, 1);
	fb->b.is_file = !fb->blkdev;

	if (fb->discard)
		fb->open_discard_rc = discard_bytes(fb, USWAP_PAGE_SIZE,
						    (nr_slots - 1) * USWAP_PAGE_SIZE);
	fb->b.discard_clusters = fb->discard &&
		!atomic_load(&fb->discard_refused); /* page discard too */
	*out = &fb->b;
	return 0;
}
