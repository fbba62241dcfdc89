/* SPDX-License-Identifier: MIT */
/*
 * bench_io_run.c - the data of `uswap bench io` and the uswap part of one
 * measurement.
 *
 * A measurement: a fresh instance (uswap_create), the spec swapped on
 * alone (uswap_swapon_spec), then two timed phases on the same threads
 * layout. Swap-out: thread i stores its share of the data, folio by folio
 * in ascending order, with uswap_swap_out(flags 0), keeping the entries.
 * Swap-in: thread i reads the same folios back in the same order with
 * uswap_swap_in() into the destination buffer. The destination is cleared
 * before the phase and compared with the source after it (outside the
 * clock, so the check costs the figures nothing); then every folio is
 * freed (uswap_swap_free), the device must be empty, and the instance is
 * destroyed. Buffers are page aligned and already faulted in, so neither
 * phase pays for the benchmark's own page faults.
 */
#include "bench_io.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_DATA_FILE "/usr/share/common-licenses/GPL-3"
#define MAX_DATA_FILE     (64u << 20) /* bytes of --data read; repeated */

/* ------------------------------------------------------------------------
 * Threads released together
 * ---------------------------------------------------------------------- */

struct run_thread {
	pthread_t tid;
	unsigned int id;
	struct run_threads *rt;
	uint64_t end_ns;
};

struct run_threads {
	pthread_barrier_t ready;  /* every thread exists */
	pthread_barrier_t go;     /* the clock has been read: start */
	bench_io_thread_fn fn;
	void *arg;
};

static void *run_thread_main(void *p)
{
	struct run_thread *t = p;

	pthread_barrier_wait(&t->rt->ready);
	pthread_barrier_wait(&t->rt->go);
	t->rt->fn(t->rt->arg, t->id);
	t->end_ns = cli_now_ns();
	return NULL;
}

double bench_io_run_threads(unsigned int threads, bench_io_thread_fn fn, void *arg)
{
	struct run_thread t[BENCH_IO_MAX_THREADS];
	struct run_threads rt = { .fn = fn, .arg = arg };
	uint64_t t0, end;

	pthread_barrier_init(&rt.ready, NULL, threads + 1);
	pthread_barrier_init(&rt.go, NULL, threads + 1);
	for (unsigned int i = 0; i < threads; i++) {
		int err;

		t[i].id = i;
		t[i].rt = &rt;
		err = pthread_create(&t[i].tid, NULL, run_thread_main, &t[i]);
		if (err) {
			/* The barriers count every thread: nothing sane to
			 * fall back to. */
			cli_runtime_error("bench io", "pthread_create: %s", strerror(err));
			exit(CLI_EXIT_RUNTIME);
		}
	}
	pthread_barrier_wait(&rt.ready);
	t0 = cli_now_ns();
	pthread_barrier_wait(&rt.go);
	end = t0;
	for (unsigned int i = 0; i < threads; i++) {
		pthread_join(t[i].tid, NULL);
		if (t[i].end_ns > end)
			end = t[i].end_ns;
	}
	pthread_barrier_destroy(&rt.ready);
	pthread_barrier_destroy(&rt.go);
	return (double)(end - t0) / 1e9;
}

/* ------------------------------------------------------------------------
 * The data
 * ---------------------------------------------------------------------- */

static void *map_buffer(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * generate_text() - @len bytes of pseudo-random text that lz4 compresses
 * about 2-3x per 4 KiB page: words drawn from a vocabulary of 1024 random
 * lower-case words, some capitalised, with punctuation, line breaks and
 * now and then a random hexadecimal number (which does not compress).
 */
static void generate_text(unsigned char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char vocab[1024][12];
	uint64_t rng = 0x5eed;
	size_t pos = 0, col = 0;

	for (int w = 0; w < 1024; w++) {
		int n = 2 + (int)(splitmix64(&rng) % 9);

		for (int c = 0; c < n; c++)
			vocab[w][c] = (char)('a' + splitmix64(&rng) % 26);
		vocab[w][n] = '\0';
	}
	while (pos < len) {
		uint64_t r = splitmix64(&rng);
		char word[24];
		size_t n;

		if (r % 7 == 0) {
			n = 8;
			for (size_t c = 0; c < n; c++)
				word[c] = hex[(r >> (8 + 4 * c)) & 15];
			word[n] = '\0';
		} else {
			n = strlen(vocab[(r >> 8) % 1024]);
			memcpy(word, vocab[(r >> 8) % 1024], n + 1);
			if ((r >> 20) % 10 == 0)
				word[0] = (char)(word[0] - 'a' + 'A');
		}
		for (size_t c = 0; c < n && pos < len; c++)
			out[pos++] = (unsigned char)word[c];
		col += n + 1;
		if (pos < len && (r >> 24) % 12 == 0)
			out[pos++] = (r >> 28) & 1 ? ',' : '.';
		if (pos < len) {
			out[pos++] = col > 72 ? '\n' : ' ';
			if (col > 72)
				col = 0;
		}
	}
}

/* Read up to MAX_DATA_FILE bytes of @path into a new buffer. */
static int read_file(const char *path, unsigned char **out, size_t *len,
		     char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t have = 0, cap = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "--data %s: %s", path, strerror(e));
		return -e;
	}
	for (;;) {
		ssize_t n;

		if (have == cap) {
			unsigned char *nb;

			if (cap >= MAX_DATA_FILE)
				break;
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				close(fd);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			close(fd);
			snprintf(err, errlen, "--data %s: read: %s", path, strerror(e));
			return -e;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	if (have == 0) {
		free(buf);
		snprintf(err, errlen, "--data %s: the file is empty", path);
		return -EINVAL;
	}
	*out = buf;
	*len = have;
	return 0;
}

int bench_io_data_init(struct bench_io_data *d, size_t size, const char *path,
		       char *err, size_t errlen)
{
	unsigned char *file = NULL;
	size_t file_len = 0;
	int rc;

	memset(d, 0, sizeof(*d));
	if (!path && access(DEFAULT_DATA_FILE, R_OK) == 0)
		path = DEFAULT_DATA_FILE;
	if (path) {
		rc = read_file(path, &file, &file_len, err, errlen);
		if (rc)
			return rc;
	}
	d->size = size;
	d->src = map_buffer(size);
	d->dst = map_buffer(size);
	if (!d->src || !d->dst) {
		free(file);
		bench_io_data_fini(d);
		snprintf(err, errlen, "cannot map 2 x %zu bytes", size);
		return -ENOMEM;
	}
	if (file) {
		for (size_t off = 0; off < size; off += file_len)
			memcpy(d->src + off, file,
			       size - off < file_len ? size - off : file_len);
		snprintf(d->source, sizeof(d->source), "%s", path);
		free(file);
	} else {
		generate_text(d->src, size);
		snprintf(d->source, sizeof(d->source),
			 "generated text (" DEFAULT_DATA_FILE " not found)");
		d->generated = true;
	}
	memset(d->dst, 0, size); /* fault it in now */
	return 0;
}

void bench_io_data_fini(struct bench_io_data *d)
{
	if (d->src)
		munmap(d->src, d->size);
	if (d->dst)
		munmap(d->dst, d->size);
	if (d->store)
		munmap(d->store, d->size);
	if (d->comp)
		munmap(d->comp, d->size / USWAP_PAGE_SIZE * BENCH_IO_COMP_STRIDE);
	free(d->comp_len);
	memset(d, 0, sizeof(*d));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void bench_io_percentiles(uint64_t *ns, size_t n, double *p50_us, double *p99_us)
{
	if (!n) {
		*p50_us = *p99_us = NAN;
		return;
	}
	qsort(ns, n, sizeof(*ns), cmp_u64);
	*p50_us = (double)ns[n / 2] / 1e3;
	*p99_us = (double)ns[n * 99 / 100 < n ? n * 99 / 100 : n - 1] / 1e3;
}

/* ------------------------------------------------------------------------
 * One measurement
 * ---------------------------------------------------------------------- */

/* Shared by the threads of one measurement. */
struct measure {
	struct uswap *u;
	const struct bench_io_data *d;
	unsigned int order;
	unsigned int threads;
	unsigned int batch;           /* folios per call, or queue depth */
	bool queue;                   /* a swap queue kept full */
	size_t folio_bytes;
	uint64_t nr_folios;
	uint64_t *entries;            /* uswap_entry_t.val per folio */
	uint64_t *lat_ns;             /* batch 1: each swap-in's time */
	atomic_bool failed;
	_Atomic uint64_t cached;      /* swap-ins that hit the swap cache */
	struct {
		int err;              /* first error of the thread */
		uint64_t folio;
	} t[BENCH_IO_MAX_THREADS];
};

static void share(const struct measure *m, unsigned int i, uint64_t *first,
		  uint64_t *end)
{
	*first = m->nr_folios * i / m->threads;
	*end = m->nr_folios * (i + 1) / m->threads;
}

/* Note a thread's first error; it ends every thread's share. */
static void thread_failed(struct measure *m, unsigned int i, int err, uint64_t folio)
{
	m->t[i].err = err;
	m->t[i].folio = folio;
	atomic_store(&m->failed, true);
}

/* Folios [f, f + n) of the thread's share, out in one batch call. */
static bool swap_out_batch(struct measure *m, unsigned int i, uint64_t f, unsigned int n)
{
	struct uswap_swap_io io[BENCH_IO_MAX_BATCH];

	for (unsigned int j = 0; j < n; j++)
		io[j] = (struct uswap_swap_io){
			.pages = m->d->src + (f + j) * m->folio_bytes, .order = m->order,
		};
	if (uswap_swap_out_batch(m->u, io, n, 0) != (int)n) {
		for (unsigned int j = 0; j < n; j++)
			if (io[j].result) {
				thread_failed(m, i, io[j].result, f + j);
				return false;
			}
	}
	for (unsigned int j = 0; j < n; j++)
		m->entries[f + j] = io[j].entry.val;
	return true;
}

/*
 * queue_share() - the thread's share out (@out) or in through a swap
 * queue of depth m->batch, refilled whenever answers come back: the
 * devices never wait for the caller. Return: swap cache hits.
 */
static uint64_t queue_share(struct measure *m, unsigned int i, bool out)
{
	struct uswap_swap_io *io = calloc(m->batch, sizeof(*io)), **done;
	unsigned int *idle = calloc(m->batch, sizeof(*idle)), nr_idle = m->batch;
	struct uswap_swapq *q = NULL;
	uint64_t f, end, cached = 0;
	int rc;

	done = calloc(m->batch, sizeof(*done));
	rc = io && idle && done ? uswap_swapq_create(m->u, m->batch, &q) : -ENOMEM;
	if (rc) {
		thread_failed(m, i, rc, 0);
		goto out;
	}
	for (unsigned int j = 0; j < m->batch; j++)
		idle[j] = j;
	for (share(m, i, &f, &end); f < end || uswap_swapq_pending(q);) {
		unsigned int k = 0;

		/* Refill in one call once a quarter of the queue is answered:
		 * the file's ring then gets one io_uring_submit for them. */
		while (f < end && nr_idle && (nr_idle >= (m->batch + 3) / 4 || k)) {
			struct uswap_swap_io *r = &io[idle[--nr_idle]];

			*r = (struct uswap_swap_io){
				.pages = (out ? m->d->src : m->d->dst) + f * m->folio_bytes,
				.order = m->order, .entry = { out ? 0 : m->entries[f] },
			};
			f++;
			done[k++] = r;
		}
		if (k) {
			rc = out ? uswap_swapq_out(q, done, k, 0) : uswap_swapq_in(q, done, k);
			if (rc != (int)k) { /* cannot: the room was there */
				thread_failed(m, i, rc < 0 ? rc : -EAGAIN, f - k);
				goto out;
			}
		}
		rc = uswap_swapq_reap(q, 1, done, m->batch);
		for (int j = 0; j < rc; j++) {
			struct uswap_swap_io *r = done[j];
			uint64_t folio = (uint64_t)(((char *)r->pages - (char *)(out ? m->d->src
						: m->d->dst)) / (ptrdiff_t)m->folio_bytes);

			if (r->result < 0) {
				thread_failed(m, i, r->result, folio);
				goto out;
			}
			if (out)
				m->entries[folio] = r->entry.val;
			cached += r->result == 1;
			idle[nr_idle++] = (unsigned int)(r - io);
		}
	}
out:
	uswap_swapq_destroy(q);
	free(done);
	free(idle);
	free(io);
	return cached;
}

static void swap_out_share(void *arg, unsigned int i)
{
	struct measure *m = arg;
	uint64_t f, end;

	if (m->queue) {
		queue_share(m, i, true);
		return;
	}
	for (share(m, i, &f, &end); f < end;) {
		uint64_t n = end - f < m->batch ? end - f : m->batch;

		if (m->batch > 1) {
			if (!swap_out_batch(m, i, f, (unsigned int)n))
				return;
		} else {
			uswap_entry_t e;
			int rc = uswap_swap_out(m->u, m->d->src + f * m->folio_bytes,
						m->order, 0, &e);

			if (rc) {
				thread_failed(m, i, rc, f);
				return;
			}
			m->entries[f] = e.val;
		}
		f += n;
		if (atomic_load_explicit(&m->failed, memory_order_relaxed))
			return;
	}
}

/* Folios [f, f + n) back in one batch call. Return: swap cache hits, or
 * -1 after an error. */
static int swap_in_batch(struct measure *m, unsigned int i, uint64_t f, unsigned int n)
{
	struct uswap_swap_io io[BENCH_IO_MAX_BATCH];
	int cached = 0;

	for (unsigned int j = 0; j < n; j++)
		io[j] = (struct uswap_swap_io){
			.pages = m->d->dst + (f + j) * m->folio_bytes, .order = m->order,
			.entry = { m->entries[f + j] },
		};
	uswap_swap_in_batch(m->u, io, n);
	for (unsigned int j = 0; j < n; j++) {
		if (io[j].result < 0) {
			thread_failed(m, i, io[j].result, f + j);
			return -1;
		}
		cached += io[j].result == 1;
	}
	return cached;
}

static void swap_in_share(void *arg, unsigned int i)
{
	struct measure *m = arg;
	uint64_t f, end, cached = 0;

	if (m->queue) {
		atomic_fetch_add(&m->cached, queue_share(m, i, false));
		return;
	}
	for (share(m, i, &f, &end); f < end;) {
		uint64_t n = end - f < m->batch ? end - f : m->batch;

		if (m->batch > 1) {
			int rc = swap_in_batch(m, i, f, (unsigned int)n);

			if (rc < 0)
				break;
			cached += (uint64_t)rc;
		} else {
			uswap_entry_t e = { m->entries[f] };
			uint64_t t0 = cli_now_ns();
			int rc = uswap_swap_in(m->u, e, m->order,
					       m->d->dst + f * m->folio_bytes);

			m->lat_ns[f] = cli_now_ns() - t0;

			if (rc < 0) {
				thread_failed(m, i, rc, f);
				break;
			}
			cached += rc == 1;
		}
		f += n;
	}
	atomic_fetch_add(&m->cached, cached);
}

/* The first thread error as a message. Return: the error. */
static int thread_error(const struct measure *m, const char *call, char *err,
			size_t errlen)
{
	for (unsigned int i = 0; i < m->threads; i++) {
		if (!m->t[i].err)
			continue;
		snprintf(err, errlen, "%s(order %u) of folio %llu (thread %u): %s", call,
			 m->order, (unsigned long long)m->t[i].folio, i,
			 cli_errno_name(m->t[i].err));
		return m->t[i].err;
	}
	return 0;
}

/* Compare the swapped-in bytes with the source, naming the first bad folio. */
static int verify(const struct measure *m, char *err, size_t errlen)
{
	const unsigned char *s = m->d->src, *d = m->d->dst;
	size_t fb = m->folio_bytes;

	if (!memcmp(s, d, m->nr_folios * fb))
		return 0;
	for (uint64_t f = 0; f < m->nr_folios; f++) {
		size_t off;

		if (!memcmp(s + f * fb, d + f * fb, fb))
			continue;
		for (off = 0; s[f * fb + off] == d[f * fb + off]; off++)
			;
		snprintf(err, errlen, "data mismatch: folio %llu (entry 0x%llx, order "
			 "%u) differs from the source at byte %zu", (unsigned long long)f,
			 (unsigned long long)m->entries[f], m->order, off);
		break;
	}
	return -EIO;
}

/* Bytes the device surely takes in folios of any order from @threads
 * threads: its whole clusters less the header slot's cluster (no order-9
 * run there) and, per thread, one cluster that a CPU's cache may leave
 * partly used. */
static uint64_t device_capacity(const struct uswap_device_info *info,
				unsigned int threads)
{
	uint64_t clusters = info->nr_slots / USWAP_CLUSTER_SLOTS;
	uint64_t reserve = (uint64_t)threads + 1;
	uint64_t slots;

	if (clusters <= reserve)
		return 0;
	slots = (clusters - reserve) * USWAP_CLUSTER_SLOTS;
	if (info->nr_slots - info->pages > USWAP_CLUSTER_SLOTS) /* bad slots */
		slots = slots > info->nr_slots - info->pages ?
			slots - (info->nr_slots - info->pages) : 0;
	return slots * USWAP_PAGE_SIZE;
}

static int stats(struct uswap *u, struct uswap_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return uswap_stats_get(u, st);
}

/* Lock acquisitions per swapped-out folio between two snapshots. */
static void lock_counts(struct bench_io_row *row, const struct uswap_stats *a,
			const struct uswap_stats *b, uint64_t folios)
{
	const struct uswap_lock_stats *la = a->locks, *lb = b->locks;
	uint64_t shared = lb[USWAP_LOCK_DEVICE].acquired - la[USWAP_LOCK_DEVICE].acquired +
			  lb[USWAP_LOCK_GLOBAL].acquired - la[USWAP_LOCK_GLOBAL].acquired;

	row->cluster_locks_out = (double)(lb[USWAP_LOCK_CLUSTER].acquired -
					  la[USWAP_LOCK_CLUSTER].acquired) / (double)folios;
	row->shared_locks_out = (double)shared / (double)folios;
}

static int free_all(struct measure *m, char *err, size_t errlen)
{
	for (uint64_t f = 0; f < m->nr_folios; f++) {
		uswap_entry_t e = { m->entries[f] };
		int rc = uswap_swap_free(m->u, e, m->order);

		if (rc) {
			snprintf(err, errlen, "swap_free(order %u) of folio %llu: %s",
				 m->order, (unsigned long long)f, cli_errno_name(rc));
			return rc;
		}
	}
	return 0;
}

int bench_io_measure(struct bench_io_data *d, struct bench_io_row *row,
		     bool drop_caches, char *err, size_t errlen)
{
	struct measure *m;
	struct uswap_device_info info;
	struct uswap_stats before, mid, after;
	uint64_t cap;
	int type, rc;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->d = d;
	m->order = row->order;
	m->threads = row->threads;
	m->batch = row->batch ? row->batch : 1;
	m->queue = row->queue && m->batch > 1;
	m->folio_bytes = (size_t)USWAP_PAGE_SIZE << row->order;

	rc = uswap_create(NULL, &m->u);
	if (rc) {
		snprintf(err, errlen, "uswap_create: %s", cli_errno_name(rc));
		free(m);
		return rc;
	}
	type = uswap_swapon_spec(m->u, row->spec, err, errlen);
	if (type < 0) {
		char why[BENCH_IO_ERR_LEN];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "swapon %s: %s", row->spec, why);
		rc = type;
		goto out;
	}
	rc = uswap_device_info(m->u, type, &info);
	if (rc) {
		snprintf(err, errlen, "uswap_device_info: %s", cli_errno_name(rc));
		goto out;
	}
	cap = device_capacity(&info, row->threads);
	if (row->bytes > cap)
		row->bytes = cap;
	row->bytes -= row->bytes % m->folio_bytes;
	m->nr_folios = row->bytes / m->folio_bytes;
	if (m->nr_folios < row->threads) {
		snprintf(err, errlen, "%s: too small for %u threads of order-%u folios",
			 row->spec, row->threads, row->order);
		rc = -ENOSPC;
		goto out;
	}
	m->entries = calloc(m->nr_folios, sizeof(*m->entries));
	m->lat_ns = calloc(m->nr_folios, sizeof(*m->lat_ns));
	if (!m->entries || !m->lat_ns) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (row->warm) {
		bench_io_run_threads(row->threads, swap_out_share, m);
		rc = thread_error(m, "swap_out (warm-up)", err, errlen);
		if (!rc)
			rc = free_all(m, err, errlen);
		if (rc)
			goto out;
	}
	rc = stats(m->u, &before);
	if (rc) {
		snprintf(err, errlen, "uswap_stats_get: %s", cli_errno_name(rc));
		goto out;
	}

	row->swapout_s = bench_io_run_threads(row->threads, swap_out_share, m);
	rc = thread_error(m, "swap_out", err, errlen);
	if (rc)
		goto out; /* uswap_destroy() drops what was swapped out */
	rc = stats(m->u, &mid);
	if (rc) {
		snprintf(err, errlen, "uswap_stats_get: %s", cli_errno_name(rc));
		goto out;
	}
	lock_counts(row, &before, &mid, m->nr_folios);

	memset(d->dst, 0, row->bytes);
	row->drop_caches = drop_caches;
	if (drop_caches) {
		rc = bench_io_drop_caches(err, errlen);
		if (rc)
			goto out;
	}
	row->swapin_s = bench_io_run_threads(row->threads, swap_in_share, m);
	rc = thread_error(m, "swap_in", err, errlen);
	if (!rc)
		rc = verify(m, err, errlen);
	if (rc)
		goto out;
	rc = stats(m->u, &after);
	if (rc) {
		snprintf(err, errlen, "uswap_stats_get: %s", cli_errno_name(rc));
		goto out;
	}
	row->swpin_cached += atomic_load(&m->cached);
	row->swapin_p50_us = row->swapin_p99_us = NAN;
	if (m->batch == 1)
		bench_io_percentiles(m->lat_ns, m->nr_folios, &row->swapin_p50_us,
				     &row->swapin_p99_us);
	row->write_errors += after.write_errors - before.write_errors;
	row->read_errors += after.read_errors - before.read_errors;
	row->swapout_mbps = (double)row->bytes / 1e6 / row->swapout_s;
	row->swapin_mbps = (double)row->bytes / 1e6 / row->swapin_s;

	rc = free_all(m, err, errlen);
	if (!rc && !uswap_device_info(m->u, type, &info) && info.inuse) {
		snprintf(err, errlen, "%s: %llu slots still in use after every folio "
			 "was freed", row->spec, (unsigned long long)info.inuse);
		rc = -EUCLEAN;
	}
out:
	uswap_destroy(m->u);
	free(m->entries);
	free(m->lat_ns);
	free(m);
	return rc;
}
