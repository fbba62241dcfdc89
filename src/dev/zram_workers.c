// SPDX-License-Identifier: MIT
/*
 * zram_workers.c - zram's asynchronous submit: with workers=N, a batch's
 * writes are compressed by N threads of the device's own and by the
 * submitter itself while it reaps, instead of one after another on the
 * submitting thread. Reads are decompressed at once on the submitting
 * thread, as without workers: a read left queued could run after its
 * caller freed the slot (zram forgets a freed slot's data at once), and
 * handing reads over measured slower anyway (docs/benchmarks.md). The kernel's zram has no such workers (its
 * writes compress in the caller's context); this is the option the batched
 * swap path (#9) measures against that (docs/benchmarks.md).
 *
 * A request queue of fixed capacity under one mutex: submit_batch appends
 * (running at once what does not fit), workers take from the head, and
 * reap takes from the head too, so a thread waiting for its batch helps
 * finish it. done() runs on whichever thread ran the request.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "dev/zram_impl.h"

#define WQ_CAP 1024 /* requests queued at most; more run at once */

struct zram_workers {
	pthread_mutex_t lock;
	pthread_cond_t work;         /* queue not empty, or stop */
	pthread_cond_t done;         /* a request finished */
	struct backend_io *q[WQ_CAP];
	unsigned int head, len;      /* lock */
	unsigned int running;        /* taken, not finished; lock */
	bool stop;                   /* lock */
	unsigned int nr;
	pthread_t th[ZRAM_MAX_WORKERS];
	_Atomic uint64_t by_workers; /* requests run on a worker */
};

static void run_io(struct backend *b, struct backend_io *io)
{
	backend_run_sync(b, io);
	if (io->done)
		io->done(io);
}

/* Take the oldest queued request. Context: w->lock held. */
static struct backend_io *take(struct zram_workers *w)
{
	struct backend_io *io;

	if (!w->len)
		return NULL;
	io = w->q[w->head];
	w->head = (w->head + 1) % WQ_CAP;
	w->len--;
	w->running++;
	return io;
}

/* Run @io (taken with take()) and say so. Context: w->lock not held. */
static void finish(struct zram_backend *zb, struct backend_io *io)
{
	struct zram_workers *w = zb->workers;

	run_io(&zb->b, io);
	pthread_mutex_lock(&w->lock);
	w->running--;
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->lock);
}

static void *worker(void *arg)
{
	struct zram_backend *zb = arg;
	struct zram_workers *w = zb->workers;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct backend_io *io;

		while (!w->len && !w->stop)
			pthread_cond_wait(&w->work, &w->lock);
		if (!w->len)
			break; /* stopping, and nothing left */
		io = take(w);
		pthread_mutex_unlock(&w->lock);
		finish(zb, io);
		atomic_fetch_add_explicit(&w->by_workers, 1, memory_order_relaxed);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int zram_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n)
{
	struct zram_backend *zb = to_zram(b);
	struct zram_workers *w = zb->workers;
	unsigned int queued = 0;

	for (unsigned int i = 0; i < n; i++)
		if (!ios[i])
			return -EINVAL;
	if (w && n > 1) {
		pthread_mutex_lock(&w->lock);
		for (unsigned int i = 0; i < n && w->len < WQ_CAP; i++) {
			if (ios[i]->op == BACKEND_WRITE) {
				w->q[(w->head + w->len++) % WQ_CAP] = ios[i];
				queued++;
			}
		}
		if (queued)
			pthread_cond_broadcast(&w->work);
		pthread_mutex_unlock(&w->lock);
	}
	/* The rest here: reads, and the writes past the first @queued. */
	for (unsigned int i = 0, writes = 0; i < n; i++)
		if (ios[i]->op != BACKEND_WRITE || writes++ >= queued)
			run_io(b, ios[i]);
	return 0;
}

/* Help with the queue until @min requests ran here; then, if @min is not
 * reached and workers still run requests, wait for one of them. Return:
 * requests run here, plus 1 when a worker finished one while we waited. */
int zram_reap(struct backend *b, unsigned int min_complete)
{
	struct zram_backend *zb = to_zram(b);
	struct zram_workers *w = zb->workers;
	unsigned int ran = 0;

	if (!w)
		return 0; /* every request completed in its submit */
	pthread_mutex_lock(&w->lock);
	while (ran < min_complete) {
		struct backend_io *io = take(w);

		if (io) {
			pthread_mutex_unlock(&w->lock);
			finish(zb, io);
			ran++;
			pthread_mutex_lock(&w->lock);
			continue;
		}
		if (w->running) {
			pthread_cond_wait(&w->done, &w->lock);
			ran++; /* one finished (done() ran on a worker) */
		}
		break;
	}
	pthread_mutex_unlock(&w->lock);
	return (int)ran;
}

int zram_workers_start(struct backend *b, unsigned int n, char *err, size_t errlen)
{
	struct zram_backend *zb = to_zram(b);
	struct zram_workers *w;

	if (n == 0)
		return 0;
	if (n > ZRAM_MAX_WORKERS)
		return backend_errf(err, errlen, -EINVAL, "zram: workers=%u: at most %d",
				    n, ZRAM_MAX_WORKERS);
	w = calloc(1, sizeof(*w));
	if (!w)
		return backend_errf(err, errlen, -ENOMEM, "zram: out of memory");
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->done, NULL);
	zb->workers = w;
	for (; w->nr < n; w->nr++) {
		int rc = pthread_create(&w->th[w->nr], NULL, worker, zb);

		if (rc) {
			zram_workers_stop(zb);
			return backend_errf(err, errlen, -rc, "zram: cannot start a "
					    "compression worker");
		}
	}
	return 0;
}

void zram_workers_stop(struct zram_backend *zb)
{
	struct zram_workers *w = zb->workers;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true; /* workers empty the queue first */
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->lock);
	for (unsigned int i = 0; i < w->nr; i++)
		pthread_join(w->th[i], NULL);
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->work);
	pthread_mutex_destroy(&w->lock);
	free(w);
	zb->workers = NULL;
}

unsigned int zram_nr_workers(const struct backend *b, uint64_t *by_workers)
{
	const struct zram_backend *zb = (const struct zram_backend *)b;

	if (by_workers)
		*by_workers = zb->workers ? atomic_load(&zb->workers->by_workers) : 0;
	return zb->workers ? zb->workers->nr : 0;
}
