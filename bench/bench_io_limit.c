/* SPDX-License-Identifier: MIT */
/*
 * bench_io_limit.c - the raw limits `uswap bench io` puts beside each
 * measurement, taken in the same run on the same bytes with the same
 * threads, each thread on its own share:
 *
 *   ram   memcpy of the same folios (folio-sized calls) into a buffer of
 *         the same size (swap-out) and back out of it (swap-in); both
 *         buffers already faulted in;
 *   zram  the codec the backend uses, on each 4 KiB page alone as zram
 *         compresses, the outputs packed one after another in each
 *         thread's part of a buffer (as zram's objects are compact, so
 *         decompression reads as many bytes as zram's does):
 *         LZ4_compress_default / LZ4_decompress_safe, or
 *         ZSTD_compressCCtx at USWAP_ZRAM_ZSTD_LEVEL, the backend's level
 *         / ZSTD_decompressDCtx with one context per thread made before
 *         the clock starts; swap-out's limit is compression, swap-in's
 *         decompression (checked against the source afterwards);
 *   file  fio on the same file: sequential write and read with the folio
 *         as block size, ioengine psync (pwrite/pread, as the swap path
 *         does), one job per thread, each on its own share starting past
 *         the header page, O_DIRECT as the spec says; random 4 KiB read
 *         and write too (reported, not used as limits). The page cache is
 *         dropped before fio's reads when --drop-caches is given, and fio
 *         is told not to invalidate it otherwise, so both sides read from
 *         the same place. Without fio the limits are null ("fio not
 *         installed").
 *
 * Beside the limits, two figures that explain a gap without being one:
 * for ram, memcpy into never-touched memory (what a store that faults its
 * pages in can reach); for file, the benchmark's own pwrite/pread loop on
 * the same buffers (fio reuses one cache-hot buffer per job, the swap
 * path moves distinct memory).
 *
 * Limits that cannot differ between rows of one repetition (the codecs do
 * not depend on the folio order; random 4 KiB fio not either) are
 * measured once per repetition and reused.
 */
#include "bench_io.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>
#include <lz4.h>
#include <zstd.h>


#define COMP_STRIDE BENCH_IO_COMP_STRIDE
_Static_assert(COMP_STRIDE >= LZ4_COMPRESSBOUND(USWAP_PAGE_SIZE) &&
	       COMP_STRIDE >= ZSTD_COMPRESSBOUND(USWAP_PAGE_SIZE),
	       "a compressed page fits its stride");

#define FIO_SEQ_RUNTIME_S  60 /* cap per sequential job set */
#define FIO_RAND_RUNTIME_S 5  /* cap per random job set */
#define FIO_OUTPUT_MAX     (1u << 20)

/* ------------------------------------------------------------------------
 * Cache of limits already measured
 * ---------------------------------------------------------------------- */

struct limit_key {
	char what[USWAP_SPEC_MAX_LEN + 16]; /* "lz4", "zstd", "rand:PATH:direct" */
	unsigned int threads;
	uint64_t bytes;
	unsigned int rep;     /* each repetition measures anew */
};

struct limit_val {
	double a, b;          /* compress/decompress, or randread/randwrite */
	double ratio;
	char note[96];
};

struct limit_entry {
	struct limit_key key;
	struct limit_val val;
};

static struct limit_entry *cache;
static size_t cache_nr;

static const struct limit_val *cache_find(const struct limit_key *k)
{
	for (size_t i = 0; i < cache_nr; i++)
		if (!strcmp(cache[i].key.what, k->what) &&
		    cache[i].key.threads == k->threads && cache[i].key.bytes == k->bytes &&
		    cache[i].key.rep == k->rep)
			return &cache[i].val;
	return NULL;
}

static void cache_add(const struct limit_key *k, const struct limit_val *v)
{
	struct limit_entry *n = realloc(cache, (cache_nr + 1) * sizeof(*cache));

	if (!n)
		return; /* measured again next time */
	cache = n;
	cache[cache_nr].key = *k;
	cache[cache_nr].val = *v;
	cache_nr++;
}

void bench_io_limit_fini(void)
{
	free(cache);
	cache = NULL;
	cache_nr = 0;
}

/* ------------------------------------------------------------------------
 * memcpy
 * ---------------------------------------------------------------------- */

struct copy_job {
	const unsigned char *from;
	unsigned char *to;
	size_t chunk;
	uint64_t nr_chunks;
	unsigned int threads;
};

static void copy_share(void *arg, unsigned int i)
{
	const struct copy_job *j = arg;
	uint64_t c = j->nr_chunks * i / j->threads;
	uint64_t end = j->nr_chunks * (i + 1) / j->threads;

	for (; c < end; c++)
		memcpy(j->to + c * j->chunk, j->from + c * j->chunk, j->chunk);
}

static int limit_memcpy(struct bench_io_data *d, struct bench_io_row *row,
			char *err, size_t errlen)
{
	struct copy_job j = {
		.chunk = (size_t)USWAP_PAGE_SIZE << row->order,
		.threads = row->threads,
	};
	void *fresh;

	if (!d->store) {
		void *p = mmap(NULL, d->size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			snprintf(err, errlen, "cannot map %zu bytes", d->size);
			return -ENOMEM;
		}
		d->store = p;
		memset(d->store, 0, d->size);
	}
	j.nr_chunks = row->bytes / j.chunk;
	j.from = d->src;
	j.to = d->store;
	row->limit_out_mbps = (double)row->bytes / 1e6 /
			      bench_io_run_threads(row->threads, copy_share, &j);
	j.from = d->store;
	j.to = d->dst;
	row->limit_in_mbps = (double)row->bytes / 1e6 /
			     bench_io_run_threads(row->threads, copy_share, &j);
	row->limit_out_what = "memcpy";
	row->limit_in_what = "memcpy";

	/* Not a limit, an explanation: the same copy into memory never
	 * touched, as the ram backend's anonymous mapping is on every write
	 * to a slot that is new or was discarded (MADV_DONTNEED). */
	fresh = mmap(NULL, row->bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fresh != MAP_FAILED) {
		j.from = d->src;
		j.to = fresh;
		row->memcpy_fresh_mbps = (double)row->bytes / 1e6 /
			bench_io_run_threads(row->threads, copy_share, &j);
		munmap(fresh, row->bytes);
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Codecs, per 4 KiB page
 * ---------------------------------------------------------------------- */

struct codec_job {
	struct bench_io_data *d;
	bool zstd;
	uint64_t nr_pages;
	unsigned int threads;
	ZSTD_CCtx *cctx[BENCH_IO_MAX_THREADS];
	ZSTD_DCtx *dctx[BENCH_IO_MAX_THREADS];
	int failed[BENCH_IO_MAX_THREADS]; /* a page that did not round-trip */
};

static void compress_share(void *arg, unsigned int i)
{
	struct codec_job *j = arg;
	const unsigned char *src = j->d->src;
	unsigned char *comp = j->d->comp;
	uint64_t p = j->nr_pages * i / j->threads;
	uint64_t end = j->nr_pages * (i + 1) / j->threads;

	uint64_t pos = p * COMP_STRIDE; /* packed from the share's start */

	for (; p < end; p++) {
		const void *in = src + p * USWAP_PAGE_SIZE;
		void *out = comp + pos;
		long len;

		if (j->zstd) {
			size_t n = ZSTD_compressCCtx(j->cctx[i], out, COMP_STRIDE, in,
						     USWAP_PAGE_SIZE, USWAP_ZRAM_ZSTD_LEVEL);
			len = ZSTD_isError(n) ? -1 : (long)n;
		} else {
			len = LZ4_compress_default(in, out, USWAP_PAGE_SIZE, COMP_STRIDE);
		}
		if (len <= 0) {
			j->failed[i] = 1;
			return;
		}
		j->d->comp_len[p] = (uint32_t)len;
		pos += (uint64_t)len;
	}
}

static void decompress_share(void *arg, unsigned int i)
{
	struct codec_job *j = arg;
	unsigned char *dst = j->d->dst;
	const unsigned char *comp = j->d->comp;
	uint64_t p = j->nr_pages * i / j->threads;
	uint64_t end = j->nr_pages * (i + 1) / j->threads;

	uint64_t pos = p * COMP_STRIDE;

	for (; p < end; p++) {
		const void *in = comp + pos;
		void *out = dst + p * USWAP_PAGE_SIZE;
		long n;

		if (j->zstd) {
			size_t r = ZSTD_decompressDCtx(j->dctx[i], out, USWAP_PAGE_SIZE, in,
						       j->d->comp_len[p]);
			n = ZSTD_isError(r) ? -1 : (long)r;
		} else {
			n = LZ4_decompress_safe(in, out, (int)j->d->comp_len[p],
						USWAP_PAGE_SIZE);
		}
		if (n != USWAP_PAGE_SIZE) {
			j->failed[i] = 1;
			return;
		}
		pos += j->d->comp_len[p];
	}
}

static int codec_buffers(struct bench_io_data *d, char *err, size_t errlen)
{
	size_t pages = d->size / USWAP_PAGE_SIZE;

	void *p;

	if (d->comp)
		return 0;
	/* mmap, not malloc: the compiler turns malloc + memset(0) into
	 * calloc, which leaves fresh pages unfaulted, and a page fault costs
	 * several microseconds here, more than compressing the page. */
	p = mmap(NULL, pages * COMP_STRIDE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	d->comp_len = calloc(pages, sizeof(*d->comp_len));
	if (p == MAP_FAILED || !d->comp_len) {
		if (p != MAP_FAILED)
			munmap(p, pages * COMP_STRIDE);
		free(d->comp_len);
		d->comp_len = NULL;
		snprintf(err, errlen, "out of memory for the codec limit");
		return -ENOMEM;
	}
	d->comp = p;
	memset(d->comp, 0, pages * COMP_STRIDE); /* fault it in now */
	return 0;
}

static int codec_measure(struct bench_io_data *d, bool zstd, unsigned int threads,
			 uint64_t bytes, struct limit_val *v, char *err, size_t errlen)
{
	struct codec_job *j;
	uint64_t comp_bytes = 0;
	int rc = codec_buffers(d, err, errlen);

	if (rc)
		return rc;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->d = d;
	j->zstd = zstd;
	j->threads = threads;
	j->nr_pages = bytes / USWAP_PAGE_SIZE;
	for (unsigned int i = 0; zstd && i < threads; i++) {
		j->cctx[i] = ZSTD_createCCtx();
		j->dctx[i] = ZSTD_createDCtx();
		if (!j->cctx[i] || !j->dctx[i]) {
			snprintf(err, errlen, "out of memory for zstd contexts");
			rc = -ENOMEM;
			goto out;
		}
	}
	memset(d->dst, 0, bytes);
	v->a = (double)bytes / 1e6 / bench_io_run_threads(threads, compress_share, j);
	v->b = (double)bytes / 1e6 / bench_io_run_threads(threads, decompress_share, j);
	for (unsigned int i = 0; i < threads; i++)
		rc |= j->failed[i];
	if (rc || memcmp(d->dst, d->src, bytes)) {
		snprintf(err, errlen, "%s limit: a page did not round-trip through the "
			 "codec", zstd ? "zstd" : "lz4");
		rc = -EIO;
		goto out;
	}
	for (uint64_t p = 0; p < j->nr_pages; p++)
		comp_bytes += d->comp_len[p];
	v->ratio = comp_bytes ? (double)bytes / (double)comp_bytes : NAN;
out:
	for (unsigned int i = 0; i < threads; i++) {
		ZSTD_freeCCtx(j->cctx[i]);
		ZSTD_freeDCtx(j->dctx[i]);
	}
	free(j);
	return rc;
}

static int limit_codec(struct bench_io_data *d, struct bench_io_row *row,
		       char *err, size_t errlen)
{
	bool zstd = !strcmp(row->algo, "zstd");
	struct limit_key k = { .threads = row->threads, .bytes = row->bytes,
			       .rep = row->rep };
	const struct limit_val *c;
	struct limit_val v = { 0 };
	int rc;

	snprintf(k.what, sizeof(k.what), "%s", zstd ? "zstd" : "lz4");
	c = cache_find(&k);
	if (!c) {
		rc = codec_measure(d, zstd, row->threads, row->bytes, &v, err, errlen);
		if (rc)
			return rc;
		cache_add(&k, &v);
		c = &v;
	}
	row->limit_out_mbps = c->a;
	row->limit_in_mbps = c->b;
	row->compress_ratio = c->ratio;
	row->limit_out_what = zstd ? "ZSTD_compressCCtx level 3" : "LZ4_compress_default";
	row->limit_in_what = zstd ? "ZSTD_decompressDCtx" : "LZ4_decompress_safe";
	return 0;
}

/* ------------------------------------------------------------------------
 * fio
 * ---------------------------------------------------------------------- */

const char *bench_io_fio_path(void)
{
	static char found[512];
	static bool searched;
	const char *path;
	char *dirs, *save = NULL;

	if (searched)
		return found[0] ? found : NULL;
	searched = true;
	path = getenv("PATH");
	dirs = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *dir = dirs ? strtok_r(dirs, ":", &save) : NULL; dir;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(found, sizeof(found), "%s/fio", *dir ? dir : ".");
		if (access(found, X_OK) == 0) {
			free(dirs);
			return found;
		}
	}
	free(dirs);
	found[0] = '\0';
	return NULL;
}

/* The bandwidth of direction @dir ("read" or "write") of fio's first job:
 * jobs[0].@dir.bw_bytes of its --output-format=json document, which may
 * follow lines of its own messages. NAN if absent or not JSON. */
static double fio_bw_bytes(const char *out, const char *dir)
{
	const char *doc = out;
	json_object *root, *jobs, *d, *bw;
	double v = NAN;

	while (*doc && *doc != '{')
		doc = strchr(doc, '\n') ? strchr(doc, '\n') + 1 : doc + strlen(doc);
	root = json_tokener_parse(doc);
	if (json_object_object_get_ex(root, "jobs", &jobs) &&
	    json_object_is_type(jobs, json_type_array) && json_object_array_length(jobs) &&
	    json_object_object_get_ex(json_object_array_get_idx(jobs, 0), dir, &d) &&
	    json_object_object_get_ex(d, "bw_bytes", &bw))
		v = json_object_get_double(bw);
	json_object_put(root);
	return v;
}

/* First line of @out that is not JSON, for an error note. */
static void first_line(const char *out, char *note, size_t len)
{
	const char *s = out;

	while (*s == '{' || *s == ' ' || *s == '\n')
		s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s);
	snprintf(note, len, "%.*s", (int)strcspn(s, "\n"), s);
}

#define FILE_QUEUE_DEPTH 32u /* file devices' default (dev/file.h) */

struct fio_job {
	const char *path;
	bool direct;
	bool cold;            /* invalidate the page cache first (fio's default) */
	const char *rw;       /* read, write, randread, randwrite */
	size_t bs;
	unsigned int threads;
	uint64_t share;       /* bytes per job */
	unsigned int runtime_s;
	unsigned int iodepth; /* 1: psync; more: io_uring at this depth */
};

/* One fio run. Return: MB/s, or NAN with @note set. */
static double fio_run(const struct fio_job *j, char *note, size_t notelen)
{
	const char *fio = bench_io_fio_path();
	char a[12][96], filename[USWAP_SPEC_MAX_LEN + 16];
	char *argv[20], *out = NULL;
	int n = 0, status;
	double bw;

	if (!fio) {
		snprintf(note, notelen, "fio not installed");
		return NAN;
	}
	snprintf(filename, sizeof(filename), "--filename=%s", j->path);
	snprintf(a[0], sizeof(a[0]), "--rw=%s", j->rw);
	snprintf(a[1], sizeof(a[1]), "--bs=%zu", j->bs);
	snprintf(a[2], sizeof(a[2]), "--size=%llu", (unsigned long long)j->share);
	snprintf(a[3], sizeof(a[3]), "--offset=%u", USWAP_PAGE_SIZE);
	snprintf(a[4], sizeof(a[4]), "--offset_increment=%llu",
		 (unsigned long long)j->share);
	snprintf(a[5], sizeof(a[5]), "--numjobs=%u", j->threads);
	snprintf(a[6], sizeof(a[6]), "--direct=%d", j->direct);
	snprintf(a[7], sizeof(a[7]), "--invalidate=%d", j->cold);
	snprintf(a[8], sizeof(a[8]), "--runtime=%u", j->runtime_s);
	argv[n++] = (char *)fio;
	argv[n++] = "--name=uswap-bench-io";
	argv[n++] = filename;
	for (int i = 0; i < 9; i++)
		argv[n++] = a[i];
	if (j->iodepth > 1) {
		snprintf(a[9], sizeof(a[9]), "--iodepth=%u", j->iodepth);
		argv[n++] = "--ioengine=io_uring";
		argv[n++] = a[9];
	} else {
		argv[n++] = "--ioengine=psync";
	}
	argv[n++] = "--group_reporting";
	argv[n++] = "--allow_file_create=0";
	argv[n++] = "--output-format=json";
	argv[n] = NULL;

	status = cli_run(argv, &out, FIO_OUTPUT_MAX);
	if (status < 0) {
		snprintf(note, notelen, "fio: %s", strerror(-status));
		return NAN;
	}
	bw = fio_bw_bytes(out, strstr(j->rw, "read") ? "read" : "write");
	if (status != 0 || !isfinite(bw) || bw <= 0) {
		char line[64];

		first_line(out, line, sizeof(line));
		snprintf(note, notelen, "fio %s failed (exit %d): %s", j->rw, status, line);
		bw = NAN;
	}
	free(out);
	return bw / 1e6;
}

struct loop_job {
	int fd;
	bool write;
	unsigned char *buf;   /* the source (write) or destination (read) */
	size_t chunk;
	uint64_t nr_chunks;
	unsigned int threads;
	int err[BENCH_IO_MAX_THREADS];
};

static void loop_share(void *arg, unsigned int i)
{
	struct loop_job *j = arg;
	uint64_t c = j->nr_chunks * i / j->threads;
	uint64_t end = j->nr_chunks * (i + 1) / j->threads;

	for (; c < end; c++) {
		unsigned char *b = j->buf + c * j->chunk;
		off_t off = (off_t)(USWAP_PAGE_SIZE + c * j->chunk);
		ssize_t n = j->write ? pwrite(j->fd, b, j->chunk, off)
				     : pread(j->fd, b, j->chunk, off);

		if (n != (ssize_t)j->chunk) {
			j->err[i] = n < 0 ? errno : EIO;
			return;
		}
	}
}

/*
 * loop_io() - pwrite the folios of the source to the file past its header
 * page, sequentially, each thread its share, then pread them back into the
 * destination (dropping the page cache in between with @drop_caches): the
 * swap path's system calls on the same memory, without the library.
 * Return: 0, or -errno with @err set.
 */
static int loop_io(struct bench_io_data *d, struct bench_io_row *row, const char *path,
		   bool drop_caches, char *err, size_t errlen)
{
	struct loop_job *j = calloc(1, sizeof(*j));
	int rc = 0;

	if (!j)
		return -ENOMEM;
	j->chunk = (size_t)USWAP_PAGE_SIZE << row->order;
	j->nr_chunks = row->bytes / j->chunk;
	j->threads = row->threads;
	j->fd = open(path, O_RDWR | O_CLOEXEC | (row->direct ? O_DIRECT : 0));
	if (j->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		free(j);
		return rc;
	}
	j->write = true;
	j->buf = d->src;
	row->fio.loop_write_mbps = (double)row->bytes / 1e6 /
				   bench_io_run_threads(row->threads, loop_share, j);
	if (drop_caches)
		rc = bench_io_drop_caches(err, errlen);
	j->write = false;
	j->buf = d->dst;
	if (!rc)
		row->fio.loop_read_mbps = (double)row->bytes / 1e6 /
					  bench_io_run_threads(row->threads, loop_share, j);
	for (unsigned int i = 0; i < row->threads && !rc; i++)
		if (j->err[i]) {
			rc = -j->err[i];
			snprintf(err, errlen, "%s: pwrite/pread loop: %s", path,
				 strerror(j->err[i]));
		}
	close(j->fd);
	free(j);
	return rc;
}

static int limit_fio(struct bench_io_data *d, struct bench_io_row *row,
		     const char *path, bool drop_caches, char *err, size_t errlen)
{
	struct fio_job j = {
		.path = path,
		.direct = row->direct,
		.cold = drop_caches,
		.bs = (size_t)USWAP_PAGE_SIZE << row->order,
		.threads = row->threads,
		.runtime_s = FIO_SEQ_RUNTIME_S,
		/* The file device's default queue depth caps a batch's
		 * requests in flight. */
		.iodepth = row->batch > FILE_QUEUE_DEPTH ? FILE_QUEUE_DEPTH : row->batch,
	};
	struct limit_key k = { .threads = row->threads, .bytes = row->bytes,
			       .rep = row->rep };
	const struct limit_val *c;
	struct limit_val v = { NAN, NAN, NAN, "" };
	int rc;

	row->limit_out_what = "fio seq write";
	row->limit_in_what = "fio seq read";
	j.share = row->bytes / row->threads / j.bs * j.bs;
	snprintf(row->fio.params, sizeof(row->fio.params),
		 "ioengine=%s iodepth=%u numjobs=%u bs=%zu (random: 4096) size=%llu "
		 "per job direct=%d invalidate=%d", j.iodepth > 1 ? "io_uring" : "psync",
		 j.iodepth ? j.iodepth : 1, row->threads, j.bs,
		 (unsigned long long)j.share, row->direct, drop_caches);
	rc = loop_io(d, row, path, drop_caches, err, errlen);
	if (rc)
		return rc;
	if (!bench_io_fio_path()) {
		snprintf(row->limit_note, sizeof(row->limit_note), "fio not installed");
		return 0;
	}
	/* Write first: the read then finds data fio wrote (in the page cache,
	 * unless it is dropped), as the swap-in found the swap-out's. */
	j.rw = "write";
	row->fio.seq_write_mbps = fio_run(&j, row->limit_note, sizeof(row->limit_note));
	if (drop_caches && (rc = bench_io_drop_caches(err, errlen)))
		return rc;
	j.rw = "read";
	row->fio.seq_read_mbps = fio_run(&j, row->limit_note, sizeof(row->limit_note));
	row->limit_out_mbps = row->fio.seq_write_mbps;
	row->limit_in_mbps = row->fio.seq_read_mbps;

	snprintf(k.what, sizeof(k.what), "rand:%s:%d", path, row->direct);
	c = cache_find(&k);
	if (!c) {
		j.bs = USWAP_PAGE_SIZE;
		j.share = row->bytes / row->threads / j.bs * j.bs;
		j.runtime_s = FIO_RAND_RUNTIME_S;
		j.rw = "randwrite";
		v.b = fio_run(&j, v.note, sizeof(v.note));
		if (drop_caches && (rc = bench_io_drop_caches(err, errlen)))
			return rc;
		j.rw = "randread";
		v.a = fio_run(&j, v.note, sizeof(v.note));
		cache_add(&k, &v);
		c = &v;
	}
	row->fio.rand_read_mbps = c->a;
	row->fio.rand_write_mbps = c->b;
	if (!row->limit_note[0] && c->note[0])
		snprintf(row->limit_note, sizeof(row->limit_note), "%s", c->note);
	return 0;
}

/* ------------------------------------------------------------------------ */

int bench_io_limit(struct bench_io_data *d, struct bench_io_row *row,
		   bool drop_caches, char *err, size_t errlen)
{
	struct uswap_spec_info *si;
	int rc;

	row->limit_out_mbps = row->limit_in_mbps = NAN;
	row->compress_ratio = NAN;
	row->memcpy_fresh_mbps = NAN;
	row->fio.seq_read_mbps = row->fio.seq_write_mbps = NAN;
	row->fio.rand_read_mbps = row->fio.rand_write_mbps = NAN;
	row->fio.loop_read_mbps = row->fio.loop_write_mbps = NAN;
	row->limit_out_what = row->limit_in_what = "";
	row->limit_in_p50_us = row->limit_in_p99_us = NAN;
	if (!strcmp(row->kind, "ram"))
		return limit_memcpy(d, row, err, errlen);
	if (!strcmp(row->kind, "zram"))
		return limit_codec(d, row, err, errlen);
	if (strcmp(row->kind, "file") && strcmp(row->kind, "nbd"))
		return 0;
	si = malloc(sizeof(*si));
	if (!si)
		return -ENOMEM;
	rc = uswap_spec_parse(row->spec, si, err, errlen);
	if (!rc && !strcmp(row->kind, "nbd"))
		rc = bench_io_limit_nbd(d, row, uswap_spec_get(uswap_spec_device(si), "uri"),
					err, errlen);
	else if (!rc)
		rc = limit_fio(d, row, uswap_spec_get(uswap_spec_device(si), "path"),
			       drop_caches, err, errlen);
	free(si);
	return rc;
}
