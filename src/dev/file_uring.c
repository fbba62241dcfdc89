// SPDX-License-Identifier: MIT
/*
 * file_uring.c - the file backend's asynchronous I/O through io_uring
 * (file.c is the device, its synchronous I/O and discard; file_impl.h
 * what the two share). Built only with liburing (meson option io_uring);
 * without it the backend has no ring and every request takes the
 * synchronous path, as when io_uring_queue_init() fails here.
 *
 * One ring per backend, of the backend's queue depth: a request is
 * prepared with its backend_io (or, for an O_DIRECT bounce, a struct
 * file_req tagged in bit 0) as the user_data, and reap runs done() for
 * the completions. At most depth requests are in flight, so the CQ
 * (2 * depth) never overflows. A short or interrupted transfer is redone
 * whole through the synchronous path (file_rw()), so a short transfer is
 * never reported as success.
 *
 * Locks: sq_lock covers the submission queue (get_sqe, prep, submit) and
 * cq_lock the completion queue (peek, wait, seen); they are never held
 * together and done() always runs with neither held, so a done() callback
 * may submit again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <liburing.h>

#include "dev/file_impl.h"
#include "util/tsan.h"

struct file_ring {
	struct io_uring ring;
	bool wait_timeout;           /* kernel has IORING_FEAT_EXT_ARG */
	pthread_mutex_t sq_lock;     /* ring's submission side */
	pthread_mutex_t cq_lock;     /* ring's completion side */
	_Atomic unsigned int inflight; /* submitted or reserved, not yet
					  harvested; <= depth but for the
					  rare submit failure */
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
		file_count(&fb->nr_short);
		io->result = file_rw(fb, write, io->slot, io->order, io->buf);
	} else if (res < 0) {
		io->result = file_io_errno(-res);
	} else {
		if (req != NULL && !write)
			memcpy(io->buf, req->bounce, len);
		file_count(write ? &fb->nr_write : &fb->nr_read);
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
	struct file_ring *r = fb->ring;
	struct { uint64_t udata; int res; } batch[REAP_BATCH];
	unsigned int total = 0;

	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int n = 0;
		int wait_rc = 0;

		pthread_mutex_lock(&r->cq_lock);
		for (;;) {
			while (n < REAP_BATCH && io_uring_peek_cqe(&r->ring, &cqe) == 0) {
				uint64_t ud = cqe->user_data;

				batch[n].udata = ud;
				batch[n].res = cqe->res;
				io_uring_cqe_seen(&r->ring, cqe);
				if (ud == UDATA_NOP)
					continue;
				atomic_fetch_sub(&r->inflight, 1);
				n++;
			}
			if (n > 0 || total >= min_complete ||
			    atomic_load(&r->inflight) == 0)
				break;
			/* Wait for one. With a timeout (when the kernel takes
			 * it without an SQE) the inflight check above is
			 * repeated now and then, in case a reserved request
			 * fell back to synchronous I/O. */
			if (r->wait_timeout) {
				struct __kernel_timespec ts = { .tv_sec = 0,
								.tv_nsec = 100 * 1000 * 1000 };

				wait_rc = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
			} else {
				wait_rc = io_uring_wait_cqe(&r->ring, &cqe);
			}
			if (wait_rc == -ETIME || wait_rc == -EINTR || wait_rc == 0) {
				wait_rc = 0;
				continue;
			}
			break;
		}
		pthread_mutex_unlock(&r->cq_lock);

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
	struct file_ring *r = fb->ring;
	unsigned int n = atomic_load(&r->inflight);

	for (;;) {
		if (n < fb->depth) {
			unsigned int got = fb->depth - n < k ? fb->depth - n : k;

			if (atomic_compare_exchange_weak(&r->inflight, &n, n + got))
				return got;
			continue;
		}
		reap_some(fb, 1);
		n = atomic_load(&r->inflight);
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
	if (!file_needs_bounce(fb, io->buf))
		return true;
	st->req = malloc(sizeof(*st->req));
	if (st->req == NULL || posix_memalign(&st->req->bounce, FILE_DIO_ALIGN, len) != 0) {
		free(st->req);
		complete_now(io, -ENOMEM);
		return false;
	}
	st->req->io = io;
	file_count(&fb->nr_bounce);
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
	struct file_ring *r = fb->ring;

	atomic_fetch_sub(&r->inflight, 1);
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
	struct file_ring *r = fb->ring;
	struct io_uring_sqe *sqe[SUBMIT_CHUNK];
	unsigned int queued = 0, unsent;
	int rc;

	pthread_mutex_lock(&r->sq_lock);
	for (; queued < n; queued++) {
		sqe[queued] = io_uring_get_sqe(&r->ring);
		if (sqe[queued] == NULL) {
			/* Only cancelled entries can fill the SQ: push them
			 * (and ours so far) out. */
			io_uring_submit(&r->ring);
			sqe[queued] = io_uring_get_sqe(&r->ring);
		}
		if (sqe[queued] == NULL)
			break;
		prep_sqe(fb, sqe[queued], &st[queued]);
	}
	do {
		rc = io_uring_submit(&r->ring);
	} while (rc == -EINTR);
	unsent = io_uring_sq_ready(&r->ring);
	if (unsent > queued)
		unsent = queued;
	for (unsigned int i = queued - unsent; i < queued; i++) {
		io_uring_prep_nop(sqe[i]);
		io_uring_sqe_set_data64(sqe[i], UDATA_NOP);
	}
	pthread_mutex_unlock(&r->sq_lock);

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
 * file_ring_submit_batch() - queue @n requests on the ring, one
 * io_uring_submit per SUBMIT_CHUNK of them (more when the ring's queue
 * depth is smaller: what has room goes first); done() runs
 * in a later reap (or in this or another thread's submit, which reaps
 * while the ring is at its depth). DISCARD requests and requests outside
 * the device complete before this returns. Return: 0 (each outcome is its
 * io->result, delivered to done() exactly once); -EINVAL (a NULL request:
 * those before it were queued).
 * Thread-safety: any thread; takes sq_lock, maybe cq_lock (not both).
 */
int file_ring_submit_batch(struct file_backend *fb, struct backend_io **ios,
			   unsigned int n)
{
	struct staged st[SUBMIT_CHUNK];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		struct backend_io *io = ios[i];

		if (io == NULL) {
			if (k)
				ring_submit(fb, st, k);
			return -EINVAL;
		}
		if (io->op != BACKEND_READ && io->op != BACKEND_WRITE)
			backend_submit_sync(&fb->b, io);
		else if (stage_io(fb, io, &st[k]))
			k++;
		if (k == SUBMIT_CHUNK || (k && i + 1 == n)) {
			ring_submit(fb, st, k);
			k = 0;
		}
	}
	return 0;
}

/* Thread-safety: any thread; several reapers share the completions. */
int file_ring_reap(struct file_backend *fb, unsigned int min_complete)
{
	return reap_some(fb, min_complete);
}

int file_ring_open(struct file_backend *fb)
{
	struct file_ring *r = calloc(1, sizeof(*r));
	int rc;

	if (r == NULL)
		return -ENOMEM;
	rc = io_uring_queue_init(fb->depth, &r->ring, 0);
	if (rc) {
		free(r);
		return rc;
	}
	r->wait_timeout = (r->ring.features & IORING_FEAT_EXT_ARG) != 0;
	pthread_mutex_init(&r->sq_lock, NULL);
	pthread_mutex_init(&r->cq_lock, NULL);
	fb->ring = r;
	return 0;
}

void file_ring_close(struct file_backend *fb)
{
	struct file_ring *r = fb->ring;

	if (r == NULL)
		return;
	while (atomic_load(&r->inflight) > 0)
		if (reap_some(fb, atomic_load(&r->inflight)) < 0)
			break;
	io_uring_queue_exit(&r->ring);
	pthread_mutex_destroy(&r->sq_lock);
	pthread_mutex_destroy(&r->cq_lock);
	free(r);
	fb->ring = NULL;
}
