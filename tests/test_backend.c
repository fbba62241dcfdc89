/* SPDX-License-Identifier: MIT */
/*
 * Description: every swap backend of src/dev/ (ram, zram with lz4 and
 * zstd, file through io_uring, through pread/pwrite and with O_DIRECT,
 * faulty over ram) keeps what it is given: folios of every order 0..9
 * holding real text, random bytes, zero and same-filled pages come back
 * byte for byte through the synchronous and the asynchronous interface;
 * requests outside the device are refused; discard frees what it covers
 * (zram memory, file blocks through punched holes, allocated again at
 * once so the file never stays sparse) and the range reads zeroes; a
 * file discarded by a process that died without close opens again; a mkswap'ed file keeps its header page when the whole area is
 * discarded at open.
 *
 * Usage: test_backend [stress [threads [scale [seed]]]]
 *   With "stress", runs only the concurrent round trip (meson suite
 *   'stress'): 2 threads per backend on disjoint slots, mixed orders,
 *   sync and async, discards, every page checked against a checksum
 *   shadow; 10^5 operations in all at scale 1 ($USWAP_STRESS_SCALE).
 */
#include "t_dev.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dev/faulty.h"
#include "dev/file.h"
#include "dev/zram.h"

enum {
	DEV_CLUSTERS = 2,                      /* quick tests: header + 1 */
	DEV_SLOTS = DEV_CLUSTERS * USWAP_CLUSTER_SLOTS,
	AREA = USWAP_CLUSTER_SLOTS,            /* cluster 1 holds the data */
	AREA_BYTES = USWAP_CLUSTER_SLOTS * USWAP_PAGE_SIZE,
};

static struct {
	bool stress;
	int threads;
	double scale;
	uint64_t seed;
} opt;

/* ------------------------------------------------------------------
 * Async helpers
 * ------------------------------------------------------------------ */

struct t_batch {
	_Atomic unsigned int done;
	_Atomic int first_error;
};

static void t_io_done(struct backend_io *io)
{
	struct t_batch *bt = io->priv;
	int zero = 0;

	if (io->result != 0)
		atomic_compare_exchange_strong(&bt->first_error, &zero, io->result);
	atomic_fetch_add(&bt->done, 1);
}

static void t_io_init(struct backend_io *io, struct t_batch *bt, enum backend_op op,
		      uint64_t slot, unsigned int order, void *buf)
{
	memset(io, 0, sizeof(*io));
	io->op = op;
	io->slot = slot;
	io->order = order;
	io->nr_slots = op == BACKEND_DISCARD ? (UINT64_C(1) << order) : 0;
	io->buf = buf;
	io->result = 1; /* must be overwritten */
	io->done = t_io_done;
	io->priv = bt;
}

/* Reap until @bt saw @n completions. Return: 0, or the reap error, or
 * -ETIMEDOUT when reap keeps returning nothing while requests of @bt are
 * missing (a lost completion). Usable from worker threads. */
static int t_wait(struct backend *b, struct t_batch *bt, unsigned int n)
{
	unsigned long idle = 0;

	while (atomic_load(&bt->done) < n) {
		int rc = b->ops->reap(b, 1);

		if (rc < 0)
			return rc;
		if (rc == 0 && ++idle > 100000) {
			/* Another thread may be reaping ours: give it time. */
			if (idle > 200000)
				return -ETIMEDOUT;
			usleep(10);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------
 * Quick tests
 * ------------------------------------------------------------------ */

/*
 * Fill the data cluster with folios of @order (2^(9-order) of them, buffers
 * alternately aligned and misaligned), write them, read them back into
 * fresh buffers, compare. @async picks submit/reap over read/write.
 */
static void round_trip_order(struct backend *b, const char *name, unsigned int order,
			     bool async, uint64_t *rng)
{
	const size_t fb = folio_bytes(order);
	const unsigned int nr = USWAP_CLUSTER_SLOTS >> order;
	unsigned char *want = t_buf_alloc(AREA_BYTES, false);
	void **bufs = calloc(nr, sizeof(*bufs));
	struct backend_io *ios = calloc(nr, sizeof(*ios));
	struct t_batch wb = { 0 }, rb = { 0 };
	char what[128];

	t_true(bufs != NULL && ios != NULL);
	for (unsigned int i = 0; i < nr; i++)
		t_fill_folio(want + i * fb, order, rng);

	/* Write. */
	for (unsigned int i = 0; i < nr; i++) {
		uint64_t slot = AREA + (uint64_t)i * (1u << order);

		bufs[i] = t_buf_alloc(fb, i & 1);
		memcpy(bufs[i], want + i * fb, fb);
		if (!async) {
			t_bwrite(b, slot, order, bufs[i]);
			continue;
		}
		t_io_init(&ios[i], &wb, BACKEND_WRITE, slot, order, bufs[i]);
		t_eq(b->ops->submit(b, &ios[i]), 0);
	}
	if (async) {
		t_eq(t_wait(b, &wb, nr), 0);
		t_eq(atomic_load(&wb.first_error), 0);
		for (unsigned int i = 0; i < nr; i++)
			t_eq(ios[i].result, 0);
	}

	/* Read into poisoned buffers. */
	for (unsigned int i = 0; i < nr; i++) {
		uint64_t slot = AREA + (uint64_t)i * (1u << order);

		memset(bufs[i], 0x5a, fb);
		if (!async) {
			t_bread(b, slot, order, bufs[i]);
			continue;
		}
		t_io_init(&ios[i], &rb, BACKEND_READ, slot, order, bufs[i]);
		t_eq(b->ops->submit(b, &ios[i]), 0);
	}
	if (async) {
		t_eq(t_wait(b, &rb, nr), 0);
		t_eq(atomic_load(&rb.first_error), 0);
	}
	for (unsigned int i = 0; i < nr; i++) {
		snprintf(what, sizeof(what), "%s %s order %u folio %u", name,
			 async ? "async" : "sync", order, i);
		t_assert_same_bytes(bufs[i], want + i * fb, fb, what);
		t_buf_free(bufs[i], i & 1);
	}
	free(ios);
	free(bufs);
	t_buf_free(want, false);
}

static void round_trip_every_order(bool async)
{
	uint64_t rng = opt.seed;

	for (int k = 0; k < T_NR_BACKENDS; k++) {
		struct backend *b = t_backend_open(k, DEV_SLOTS, false);

		for (unsigned int order = 0; order <= USWAP_MAX_ORDER; order++)
			round_trip_order(b, t_backend_name(k), order, async, &rng);
		t_eq(b->ops->flush(b), 0);
		b->ops->close(b);
	}
}

static void test_every_backend_round_trips_every_order_sync(void **state)
{
	(void)state;
	round_trip_every_order(false);
}

static void test_every_backend_round_trips_every_order_async(void **state)
{
	(void)state;
	round_trip_every_order(true);
}

/* The whole text corpus, page by page from its start, as one order-k
 * folio per chunk: real file contents survive every backend. */
static void test_every_backend_round_trips_a_real_file(void **state)
{
	size_t len, pages;
	const unsigned char *text = t_text(&len);
	unsigned char *src, *got;

	(void)state;
	pages = len / USWAP_PAGE_SIZE + 1;
	if (pages > AREA)
		pages = AREA;
	src = t_buf_alloc(AREA_BYTES, false);
	got = t_buf_alloc(AREA_BYTES, true);
	memset(src, 0, AREA_BYTES);
	memcpy(src, text, len < pages * USWAP_PAGE_SIZE ? len : pages * USWAP_PAGE_SIZE);
	for (int k = 0; k < T_NR_BACKENDS; k++) {
		struct backend *b = t_backend_open(k, DEV_SLOTS, false);

		/* Write as order-4 folios, read back as one order-9 folio. */
		for (unsigned int i = 0; i < USWAP_CLUSTER_SLOTS; i += 16)
			t_bwrite(b, AREA + i, 4, src + (size_t)i * USWAP_PAGE_SIZE);
		t_bread(b, AREA, 9, got);
		t_assert_same_bytes(got, src, AREA_BYTES, t_backend_name(k));
		b->ops->close(b);
	}
	t_buf_free(src, false);
	t_buf_free(got, true);
}

static void test_unwritten_slots_read_zero(void **state)
{
	unsigned char *buf = t_buf_alloc(folio_bytes(3), false);
	unsigned char zero[USWAP_PAGE_SIZE] = { 0 };

	(void)state;
	for (int k = 0; k < T_NR_BACKENDS; k++) {
		struct backend *b = t_backend_open(k, DEV_SLOTS, false);

		memset(buf, 0xee, folio_bytes(3));
		t_bread(b, 8, 3, buf);
		for (int i = 0; i < 8; i++)
			t_assert_same_bytes(buf + i * USWAP_PAGE_SIZE, zero,
					    USWAP_PAGE_SIZE, t_backend_name(k));
		b->ops->close(b);
	}
	t_buf_free(buf, false);
}

static int collect_error;

static void collect_done(struct backend_io *io)
{
	collect_error = io->result;
}

static void test_requests_outside_the_device_are_refused(void **state)
{
	unsigned char *buf = t_buf_alloc(folio_bytes(USWAP_MAX_ORDER) * 2, false);

	(void)state;
	for (int k = 0; k < T_NR_BACKENDS; k++) {
		struct backend *b = t_backend_open(k, DEV_SLOTS, false);
		struct backend_io io;

		/* Slot 0 is the header page. */
		t_eq(b->ops->write(b, 0, 0, buf), -EINVAL);
		t_eq(b->ops->read(b, 0, 0, buf), -EINVAL);
		/* Past the end, and straddling it. */
		t_eq(b->ops->write(b, DEV_SLOTS, 0, buf), -EINVAL);
		t_eq(b->ops->read(b, DEV_SLOTS - 1, 1, buf), -EINVAL);
		t_eq(b->ops->write(b, UINT64_MAX, 0, buf), -EINVAL);
		/* Misaligned folio, order too large. */
		t_eq(b->ops->write(b, AREA + 1, 1, buf), -EINVAL);
		t_eq(b->ops->read(b, AREA, USWAP_MAX_ORDER + 1, buf), -EINVAL);
		/* Discard ranges. */
		t_eq(b->ops->discard(b, 0, 1), -EINVAL);
		t_eq(b->ops->discard(b, DEV_SLOTS - 1, 2), -EINVAL);
		t_eq(b->ops->discard(b, AREA, 0), 0);
		/* Async: the error arrives through done(). */
		memset(&io, 0, sizeof(io));
		io.op = BACKEND_WRITE;
		io.slot = DEV_SLOTS;
		io.buf = buf;
		io.done = collect_done;
		collect_error = 1;
		t_eq(b->ops->submit(b, &io), 0);
		t_eq(b->ops->reap(b, 0), 0);
		t_eq(collect_error, -EINVAL);
		t_eq(io.result, -EINVAL);
		/* The last slot itself is fine. */
		t_bwrite(b, DEV_SLOTS - 1, 0, buf);
		b->ops->close(b);
	}
	t_buf_free(buf, false);
}

/*
 * Discard [AREA + 40, AREA + 40 + 100) of a written cluster, once through
 * discard() and once through submit(): those slots read zero, the rest is
 * intact; on zram the memory is given back.
 */
static void test_discard_makes_ranges_read_zero(void **state)
{
	unsigned char *want = t_buf_alloc(AREA_BYTES, false);
	unsigned char *got = t_buf_alloc(AREA_BYTES, false);
	uint64_t rng = opt.seed ^ 0xd15c;

	(void)state;
	for (int k = 0; k < T_NR_BACKENDS; k++) {
		struct backend *b = t_backend_open(k, DEV_SLOTS, true /* discard */);
		struct zram_mm_stat before, after;
		struct t_batch bt = { 0 };
		struct backend_io io;

		for (unsigned int i = 0; i < USWAP_CLUSTER_SLOTS; i++)
			t_fill_page(want + (size_t)i * USWAP_PAGE_SIZE, T_PAGE_TEXT, &rng);
		t_bwrite(b, AREA, 9, want);
		zram_mm_stat(b, &before);

		t_eq(b->ops->discard(b, AREA + 40, 60), 0);
		t_io_init(&io, &bt, BACKEND_DISCARD, AREA + 100, 0, NULL);
		io.nr_slots = 40;
		t_eq(b->ops->submit(b, &io), 0);
		t_eq(t_wait(b, &bt, 1), 0);
		t_eq(io.result, 0);

		memset(want + 40 * USWAP_PAGE_SIZE, 0, 100 * USWAP_PAGE_SIZE);
		t_bread(b, AREA, 9, got);
		t_assert_same_bytes(got, want, AREA_BYTES, t_backend_name(k));

		if (zram_mm_stat(b, &after) == 0) {
			t_eq_u64(after.pages_stored, before.pages_stored - 100);
			t_true(after.mem_used_total < before.mem_used_total);
			t_true(after.compr_data_size < before.compr_data_size);
		}
		if (k == T_FILE_URING || k == T_FILE_PREAD || k == T_FILE_DIRECT) {
			struct file_backend_info fi;

			t_eq(file_backend_info(b, &fi), 0);
			t_true(fi.discard && !fi.discard_refused);
			t_eq(fi.open_discard_rc, 0);
			t_true(fi.discards >= 3); /* at open, and the two above */
		}
		b->ops->close(b);
	}
	t_buf_free(want, false);
	t_buf_free(got, false);
}

/* Make @path's blocks all allocated, as a file written in full for mkswap
 * is (t_dev_file() leaves it sparse). */
static void allocate_in_full(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDWR);

	t_true(fd >= 0);
	t_eq(fstat(fd, &st), 0);
	t_eq(fallocate(fd, 0, 0, st.st_size), 0);
	close(fd);
}

/* A discard punches the range out (it reads zeroes) and allocates it again
 * at once: the file stays fully allocated, as a swap file under the
 * kernel's discard does, so it is never left with holes. */
static void test_file_discard_zeroes_and_keeps_the_file_allocated(void **state)
{
	struct file_backend_opts fo = { .discard = true };
	unsigned char *buf = t_buf_alloc(AREA_BYTES, false);
	unsigned char *zero = t_buf_alloc(AREA_BYTES, false);
	char *path = t_dev_file(DEV_SLOTS, false, NULL);
	struct backend *b = NULL;
	struct file_backend_info fi;
	struct stat st1, st2;
	uint64_t rng = 7;
	char err[256];

	(void)state;
	allocate_in_full(path);
	t_eq(backend_file_open(path, &fo, &b, err, sizeof(err)), 0);
	t_fill_folio(buf, 9, &rng);
	t_bwrite(b, AREA, 9, buf);
	t_eq(b->ops->flush(b), 0);
	t_eq(stat(path, &st1), 0);
	t_eq(b->ops->discard(b, AREA, USWAP_CLUSTER_SLOTS), 0);
	t_eq(b->ops->discard(b, AREA + 3, 5), 0); /* a part of it, again */
	t_eq(stat(path, &st2), 0);
	printf("# %s: %lld blocks before discard, %lld after, %lld bytes\n", path,
	       (long long)st1.st_blocks, (long long)st2.st_blocks,
	       (long long)st2.st_size);
	memset(zero, 0, AREA_BYTES);
	t_bread(b, AREA, 9, buf);
	t_assert_same_bytes(buf, zero, AREA_BYTES, "discarded range");
	t_eq(st2.st_size, st1.st_size); /* KEEP_SIZE */
	t_true((uint64_t)st2.st_blocks * 512 >= (uint64_t)st2.st_size);
	t_eq(file_backend_info(b, &fi), 0);
	t_eq_u64(fi.discards, 3); /* at open and the two above */
	b->ops->close(b);
	free(path);
	t_buf_free(buf, false);
	t_buf_free(zero, false);
}

/* A process that dies without closing its swap file (`uswap run`'s agent
 * just exits with its program) leaves a file the next open accepts: the
 * child opens the spec with :discard (whole area discarded), writes,
 * discards and _exit()s; the parent then opens the same spec again,
 * through the header's checks (holes included). */
static char *child_swapfile;

static int child_discards_and_dies(void)
{
	static unsigned char page[USWAP_PAGE_SIZE];
	struct uswap_backend *ub = NULL;
	struct backend *b;
	char spec[600], err[512] = "";
	int prio;

	snprintf(spec, sizeof(spec), "file:%s:discard", child_swapfile);
	if (uswap_backend_open(spec, &ub, &prio, err, sizeof(err))) {
		fprintf(stderr, "child: open %s: %s\n", spec, err);
		return 1;
	}
	b = (struct backend *)ub;
	memset(page, 0x5a, sizeof(page));
	for (uint64_t s = AREA; s < AREA + 64; s++)
		if (b->ops->write(b, s, 0, page))
			return 1;
	if (b->ops->discard(b, AREA, 32) || b->ops->discard(b, AREA + 40, 8))
		return 1;
	return 0; /* no close */
}

static void test_file_discarded_without_close_opens_again(void **state)
{
	struct uswap_backend *ub = NULL;
	struct stat st;
	char spec[600], err[512] = "";
	int status = 0, prio;
	pid_t pid;

	(void)state;
	child_swapfile = t_dev_swapfile(DEV_SLOTS);
	if (child_swapfile == NULL)
		t_skip("mkswap is not available");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	t_true(pid >= 0);
	if (pid == 0)
		_exit(child_discards_and_dies());
	t_eq(waitpid(pid, &status, 0), pid);
	t_true(WIFEXITED(status));
	t_eq(WEXITSTATUS(status), 0);
	t_eq(stat(child_swapfile, &st), 0);
	printf("# %s: %lld of %lld bytes allocated after the child\n", child_swapfile,
	       (long long)st.st_blocks * 512, (long long)st.st_size);
	t_true((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size);
	snprintf(spec, sizeof(spec), "file:%s:discard", child_swapfile);
	if (uswap_backend_open(spec, &ub, &prio, err, sizeof(err)))
		fail_msg("open %s again: %s", spec, err);
	uswap_backend_close(ub);
	free(child_swapfile);
}

/* With discard off a discard request does nothing (the kernel issues no
 * discard without swapon --discard): the data stays. */
static void test_file_discard_off_keeps_data(void **state)
{
	struct file_backend_opts fo = { .discard = false };
	unsigned char *buf = t_buf_alloc(folio_bytes(2), false);
	unsigned char *got = t_buf_alloc(folio_bytes(2), false);
	char *path = t_dev_file(DEV_SLOTS, false, NULL);
	struct backend *b = NULL;
	struct file_backend_info fi;
	uint64_t rng = 9;
	char err[256];

	(void)state;
	t_eq(backend_file_open(path, &fo, &b, err, sizeof(err)), 0);
	t_fill_folio(buf, 2, &rng);
	t_bwrite(b, AREA, 2, buf);
	t_eq(b->ops->discard(b, AREA, 4), 0);
	t_bread(b, AREA, 2, got);
	t_assert_same_bytes(got, buf, folio_bytes(2), "discard off");
	t_eq(file_backend_info(b, &fi), 0);
	t_eq_u64(fi.discards, 0);
	b->ops->close(b);
	free(path);
	t_buf_free(buf, false);
	t_buf_free(got, false);
}

/* The kernel's discard at swapon covers everything but the header page. */
static void test_file_discard_at_open_spares_the_header(void **state)
{
	const uint64_t nr_slots = 3 * USWAP_CLUSTER_SLOTS;
	struct file_backend_opts fo = { .discard = true };
	unsigned char *hdr = t_buf_alloc(USWAP_PAGE_SIZE, false);
	unsigned char *hdr2 = t_buf_alloc(USWAP_PAGE_SIZE, false);
	unsigned char *buf = t_buf_alloc(AREA_BYTES, false);
	unsigned char *zero = t_buf_alloc(AREA_BYTES, false);
	bool made_swap = false;
	char *path = t_dev_file(nr_slots, true /* mkswap */, &made_swap);
	struct backend *b = NULL;
	uint64_t rng = 11;
	char err[256];
	int fd;

	(void)state;
	printf("# %s header by mkswap: %s\n", path, made_swap ? "yes" : "no (zeroed file)");
	fd = open(path, O_RDWR);
	t_true(fd >= 0);
	if (!made_swap) { /* stand-in header: something non-zero */
		memset(hdr, 0x11, USWAP_PAGE_SIZE);
		t_eq(pwrite(fd, hdr, USWAP_PAGE_SIZE, 0), USWAP_PAGE_SIZE);
	}
	t_eq(pread(fd, hdr, USWAP_PAGE_SIZE, 0), USWAP_PAGE_SIZE);
	if (made_swap)
		t_true(memcmp(hdr + USWAP_PAGE_SIZE - 10, "SWAPSPACE2", 10) == 0);
	/* Old data all over the area, as a reused swap file has. */
	for (uint64_t s = 1; s < nr_slots; s += USWAP_CLUSTER_SLOTS) {
		uint64_t n = nr_slots - s < USWAP_CLUSTER_SLOTS ? nr_slots - s
								 : USWAP_CLUSTER_SLOTS;

		t_fill_folio(buf, 9, &rng);
		t_eq(pwrite(fd, buf, n * USWAP_PAGE_SIZE, (off_t)(s * USWAP_PAGE_SIZE)),
		     (ssize_t)(n * USWAP_PAGE_SIZE));
	}
	fsync(fd);

	t_eq(backend_file_open(path, &fo, &b, err, sizeof(err)), 0);
	t_eq_u64(b->nr_slots, nr_slots);
	t_eq(pread(fd, hdr2, USWAP_PAGE_SIZE, 0), USWAP_PAGE_SIZE);
	t_assert_same_bytes(hdr2, hdr, USWAP_PAGE_SIZE, "header page after discard at open");
	memset(zero, 0, AREA_BYTES);
	for (uint64_t s = USWAP_CLUSTER_SLOTS; s < nr_slots; s += USWAP_CLUSTER_SLOTS) {
		t_bread(b, s, 9, buf);
		t_assert_same_bytes(buf, zero, AREA_BYTES, "area after discard at open");
	}
	t_bread(b, 1, 0, buf);
	t_assert_same_bytes(buf, zero, USWAP_PAGE_SIZE, "slot 1 after discard at open");
	b->ops->close(b);
	close(fd);
	free(path);
	t_buf_free(hdr, false);
	t_buf_free(hdr2, false);
	t_buf_free(buf, false);
	t_buf_free(zero, false);
}

static void test_file_geometry_and_io_mode(void **state)
{
	struct file_backend_opts uring = { .queue_depth = 8 };
	struct file_backend_opts pread_only = { .no_uring = true };
	struct backend *b = NULL;
	struct file_backend_info fi;
	char err[256] = "";
	char *path = t_dev_file(3000, false, NULL);
	char *text = NULL;
	size_t text_len = 0;
	FILE *out;
	int fd;

	(void)state;
	/* A tail shorter than a page is not a slot. */
	fd = open(path, O_RDWR);
	t_true(fd >= 0);
	t_eq(ftruncate(fd, 3000 * USWAP_PAGE_SIZE + 100), 0);
	close(fd);

	t_eq(backend_file_open(path, &uring, &b, err, sizeof(err)), 0);
	t_eq_u64(b->nr_slots, 3000);
	t_eq_u64(b->first_slot, 1);
	t_true(b->is_file);
	t_true(strcmp(b->name, path) == 0 || strlen(path) >= sizeof(b->name));
	t_eq(strcmp(b->ops->kind, "file"), 0);
	t_eq(file_backend_info(b, &fi), 0);
	if (!USWAP_HAVE_LIBURING) /* meson -Dio_uring=disabled: no ring, ever */
		t_true(!fi.uring && fi.uring_error == -ENOTSUP);
	if (!fi.uring)
		printf("# io_uring unavailable here (%d): the async path falls back to pread\n",
		       fi.uring_error);
	else
		t_eq(fi.uring_error, 0);
	t_eq(fi.queue_depth, 8);
	t_eq_u64(fi.size_bytes, 3000 * USWAP_PAGE_SIZE + 100);
	out = open_memstream(&text, &text_len);
	b->ops->print_stats(b, out);
	fclose(out);
	t_true(strstr(text, fi.uring ? "io io_uring\n" : "io pread\n") != NULL);
	free(text);
	b->ops->close(b);

	t_eq(backend_file_open(path, &pread_only, &b, err, sizeof(err)), 0);
	t_eq(file_backend_info(b, &fi), 0);
	t_true(!fi.uring);
	t_eq(fi.uring_error, 0);
	t_eq(fi.queue_depth, FILE_DEFAULT_QUEUE_DEPTH);
	b->ops->close(b);

	/* Refusals. */
	t_eq(backend_file_open("/nonexistent/uswap", NULL, &b, err, sizeof(err)), -ENOENT);
	t_eq(backend_file_open("/dev/null", NULL, &b, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "not a regular file") != NULL);
	fd = open(path, O_RDWR);
	t_eq(ftruncate(fd, USWAP_PAGE_SIZE + 10), 0);
	close(fd);
	t_eq(backend_file_open(path, NULL, &b, err, sizeof(err)), -EINVAL);
	free(path);
}

/* The async path really goes through io_uring when it is there, and
 * bounce buffers serve O_DIRECT for unaligned buffers in both paths. */
static void test_file_async_uses_io_uring_and_bounces_unaligned_direct_io(void **state)
{
	struct file_backend_opts fo = { .direct = true, .queue_depth = 4 };
	struct backend *b = NULL;
	struct file_backend_info fi;
	struct backend_io ios[16];
	struct t_batch bt = { 0 }, rb = { 0 };
	unsigned char *buf = t_buf_alloc(16 * folio_bytes(2), true);
	unsigned char *got = t_buf_alloc(16 * folio_bytes(2), true);
	char *path = t_dev_file(DEV_SLOTS, false, NULL);
	uint64_t rng = 5;
	char err[256];
	int rc;

	(void)state;
	rc = backend_file_open(path, &fo, &b, err, sizeof(err));
	if (rc == -EINVAL) {
		free(path);
		t_buf_free(buf, true);
		t_buf_free(got, true);
		t_skip("O_DIRECT refused here");
	}
	t_eq(rc, 0);
	t_eq(file_backend_info(b, &fi), 0);
	if (!fi.uring) { /* a skip leaves at once: nothing may leak (ASan) */
		b->ops->close(b);
		free(path);
		t_buf_free(buf, true);
		t_buf_free(got, true);
		t_skip("io_uring is not available here");
	}
	t_fill_folio(buf, 6, &rng);
	/* 16 requests on a ring of depth 4: submit reaps to make room. */
	for (int i = 0; i < 16; i++) {
		t_io_init(&ios[i], &bt, BACKEND_WRITE, AREA + 4 * i, 2, buf + i * folio_bytes(2));
		t_eq(b->ops->submit(b, &ios[i]), 0);
	}
	t_eq(t_wait(b, &bt, 16), 0);
	for (int i = 0; i < 16; i++) {
		t_io_init(&ios[i], &rb, BACKEND_READ, AREA + 4 * i, 2, got + i * folio_bytes(2));
		t_eq(b->ops->submit(b, &ios[i]), 0);
	}
	t_eq(t_wait(b, &rb, 16), 0);
	t_eq(atomic_load(&bt.first_error), 0);
	t_eq(atomic_load(&rb.first_error), 0);
	t_assert_same_bytes(got, buf, 16 * folio_bytes(2), "O_DIRECT async");
	/* Nothing left: reap(0) and reap(5) return at once. */
	t_eq(b->ops->reap(b, 0), 0);
	t_eq(b->ops->reap(b, 5), 0);
	t_eq(file_backend_info(b, &fi), 0);
	t_eq_u64(fi.async_submitted, 32);
	t_eq_u64(fi.bounces, 32);
	t_eq_u64(fi.reads, 16);
	t_eq_u64(fi.writes, 16);
	b->ops->close(b);
	free(path);
	t_buf_free(buf, true);
	t_buf_free(got, true);
}

/* A file that shrinks under the backend: the read past the new end gets
 * part of the folio, and that is an error (-EIO), never a success, on the
 * pread path, the io_uring path and with O_DIRECT. */
static void test_file_short_transfer_is_an_error(void **state)
{
	static const struct file_backend_opts cfg[] = {
		{ .no_uring = true }, { .queue_depth = 4 }, { .direct = true },
	};
	unsigned char *buf = t_buf_alloc(folio_bytes(2), false);

	(void)state;
	for (size_t c = 0; c < T_ARRAY_SIZE(cfg); c++) {
		char *path = t_dev_file(DEV_SLOTS, false, NULL);
		struct backend *b = NULL;
		struct t_batch bt = { 0 };
		struct backend_io io;
		char err[256];
		int fd, rc;

		rc = backend_file_open(path, &cfg[c], &b, err, sizeof(err));
		if (rc == -EINVAL && cfg[c].direct) {
			free(path);
			continue; /* O_DIRECT refused here */
		}
		t_eq(rc, 0);
		memset(buf, 0x61, folio_bytes(2));
		t_bwrite(b, AREA, 2, buf);
		fd = open(path, O_RDWR);
		t_true(fd >= 0);
		t_eq(ftruncate(fd, (off_t)(AREA + 2) * USWAP_PAGE_SIZE), 0);
		close(fd);

		t_eq(b->ops->read(b, AREA, 2, buf), -EIO);
		t_io_init(&io, &bt, BACKEND_READ, AREA, 2, buf);
		t_eq(b->ops->submit(b, &io), 0);
		t_eq(t_wait(b, &bt, 1), 0);
		t_eq(io.result, -EIO);
		/* The first two pages are still there. */
		t_bread(b, AREA, 1, buf);
		t_eq(buf[0], 0x61);
		b->ops->close(b);
		free(path);
	}
	t_buf_free(buf, false);
}

#if defined(__x86_64__)
#define T_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define T_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#define T_AUDIT_ARCH 0
#endif

/* Run @fn in a child under the seccomp filter @prog; skip where filters
 * are not allowed. @fn returns 0 or prints what failed and returns 1. */
static void run_under_seccomp(const struct sock_fprog *prog, int (*fn)(void))
{
	int status = 0;
	pid_t pid;

	if (T_AUDIT_ARCH == 0)
		t_skip("no seccomp architecture constant for this machine");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	t_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog) != 0) {
			fprintf(stderr, "seccomp: %s\n", strerror(errno));
			_exit(T_EXIT_SKIP);
		}
		_exit(fn());
	}
	t_eq(waitpid(pid, &status, 0), pid);
	t_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == T_EXIT_SKIP)
		t_skip("seccomp filters are not allowed here");
	t_eq(WEXITSTATUS(status), 0);
}

/*
 * Run @fn in a child whose io_uring_setup(2) fails with ENOSYS and whose
 * fallocate(2) fails with EOPNOTSUPP (a seccomp filter), as on a kernel
 * without io_uring and a filesystem without punch-hole.
 */
static void run_without_uring_and_punch_hole(int (*fn)(void))
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, T_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fallocate, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EOPNOTSUPP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = T_ARRAY_SIZE(filter), .filter = filter };

	run_under_seccomp(&prog, fn);
}

/*
 * Run @fn in a child whose fallocate(2) with mode 0 (allocate) fails with
 * EOPNOTSUPP while PUNCH_HOLE works: a filesystem that can punch but not
 * preallocate. The mode is the low word of the second argument (both
 * machines named above are little-endian).
 */
static void run_without_preallocation(int (*fn)(void))
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, T_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fallocate, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EOPNOTSUPP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = T_ARRAY_SIZE(filter), .filter = filter };

	run_under_seccomp(&prog, fn);
}

#define CHILD_CHECK(cond)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: child: expected %s\n",        \
				__FILE__, __LINE__, #cond);                   \
			return 1;                                             \
		}                                                             \
	} while (0)

static char *child_path;

static int child_falls_back(void)
{
	struct file_backend_opts fo = { .discard = true };
	struct backend *b = NULL;
	struct file_backend_info fi;
	struct t_batch bt = { 0 };
	struct backend_io io[4];
	static unsigned char buf[4][USWAP_PAGE_SIZE], got[USWAP_PAGE_SIZE];
	char err[256] = "";

	CHILD_CHECK(backend_file_open(child_path, &fo, &b, err, sizeof(err)) == 0);
	CHILD_CHECK(file_backend_info(b, &fi) == 0);
	CHILD_CHECK(!fi.uring);
	/* A build without liburing never asks the kernel for a ring. */
	CHILD_CHECK(fi.uring_error == (USWAP_HAVE_LIBURING ? -ENOSYS : -ENOTSUP));
	/* The discard at open was refused: discard is off from then on. */
	CHILD_CHECK(fi.open_discard_rc == -EOPNOTSUPP);
	CHILD_CHECK(fi.discard_refused);
	CHILD_CHECK(b->ops->discard(b, AREA, 8) == -EOPNOTSUPP);
	CHILD_CHECK(b->ops->discard(b, AREA, 8) == -EOPNOTSUPP);
	/* Async requests complete in submit, through pread/pwrite. */
	for (int i = 0; i < 4; i++) {
		memset(buf[i], 'a' + i, USWAP_PAGE_SIZE);
		t_io_init(&io[i], &bt, BACKEND_WRITE, AREA + (uint64_t)i, 0, buf[i]);
		CHILD_CHECK(b->ops->submit(b, &io[i]) == 0);
		CHILD_CHECK(atomic_load(&bt.done) == (unsigned int)i + 1);
	}
	CHILD_CHECK(b->ops->reap(b, 1) == 0);
	CHILD_CHECK(atomic_load(&bt.first_error) == 0);
	CHILD_CHECK(b->ops->read(b, AREA + 3, 0, got) == 0);
	CHILD_CHECK(memcmp(got, buf[3], USWAP_PAGE_SIZE) == 0);
	CHILD_CHECK(file_backend_info(b, &fi) == 0);
	CHILD_CHECK(fi.async_submitted == 0 && fi.writes == 4 && fi.discards == 0);
	b->ops->close(b);
	return 0;
}

static void test_file_falls_back_without_io_uring_and_stops_discarding_when_refused(void **state)
{
	(void)state;
	child_path = t_dev_file(DEV_SLOTS, false, NULL);
	run_without_uring_and_punch_hole(child_falls_back);
	free(child_path);
}

static int child_keeps_holes_without_preallocation(void)
{
	struct file_backend_opts fo = { .discard = true };
	static unsigned char page[USWAP_PAGE_SIZE], zero[USWAP_PAGE_SIZE];
	struct backend *b = NULL;
	struct file_backend_info fi;
	char err[256] = "", *stats = NULL;
	size_t len = 0;
	FILE *mem;

	CHILD_CHECK(backend_file_open(child_path, &fo, &b, err, sizeof(err)) == 0);
	CHILD_CHECK(file_backend_info(b, &fi) == 0);
	CHILD_CHECK(fi.open_discard_rc == 0 && !fi.discard_refused);
	memset(page, 0x77, sizeof(page));
	CHILD_CHECK(b->ops->write(b, AREA + 1, 0, page) == 0);
	CHILD_CHECK(b->ops->discard(b, AREA, 4) == 0);
	CHILD_CHECK(b->ops->read(b, AREA + 1, 0, page) == 0);
	CHILD_CHECK(memcmp(page, zero, sizeof(page)) == 0);
	/* Writing into the hole allocates it; the data comes back. */
	memset(page, 0x78, sizeof(page));
	CHILD_CHECK(b->ops->write(b, AREA + 2, 0, page) == 0);
	CHILD_CHECK(b->ops->read(b, AREA + 2, 0, zero) == 0);
	CHILD_CHECK(memcmp(page, zero, sizeof(page)) == 0);
	mem = open_memstream(&stats, &len);
	CHILD_CHECK(mem != NULL);
	b->ops->print_stats(b, mem);
	fclose(mem);
	CHILD_CHECK(strstr(stats, "\nrealloc_refused 1\n") != NULL);
	CHILD_CHECK(strstr(stats, "\nrealloc_failed 1\n") != NULL); /* tried once */
	free(stats);
	b->ops->close(b);
	return 0;
}

static void test_file_discard_without_preallocation_keeps_the_hole(void **state)
{
	(void)state;
	child_path = t_dev_file(DEV_SLOTS, false, NULL);
	run_without_preallocation(child_keeps_holes_without_preallocation);
	free(child_path);
}

/* A done() callback may submit again (reap runs done() without locks). */
struct chain {
	struct backend *b;
	struct backend_io io;
	unsigned char *buf;
	int left;
	_Atomic int completed;
	int error;
};

static void chain_done(struct backend_io *io)
{
	struct chain *c = io->priv;

	if (io->result != 0)
		c->error = io->result;
	atomic_fetch_add(&c->completed, 1);
	if (--c->left > 0) {
		io->slot += 1;
		io->result = 1;
		if (c->b->ops->submit(c->b, io) != 0)
			c->error = -EFAULT;
	}
}

static void test_done_callbacks_may_submit_again(void **state)
{
	(void)state;
	for (int k = 0; k < T_NR_BACKENDS; k++) {
		struct chain c = { .left = 50 };

		c.b = t_backend_open(k, DEV_SLOTS, false);
		c.buf = t_buf_alloc(USWAP_PAGE_SIZE, false);
		memset(c.buf, 0x42, USWAP_PAGE_SIZE);
		memset(&c.io, 0, sizeof(c.io));
		c.io.op = BACKEND_WRITE;
		c.io.slot = AREA;
		c.io.buf = c.buf;
		c.io.done = chain_done;
		c.io.priv = &c;
		t_eq(c.b->ops->submit(c.b, &c.io), 0);
		for (int spins = 0; atomic_load(&c.completed) < 50 && spins < 1000000; spins++)
			t_true(c.b->ops->reap(c.b, 1) >= 0);
		t_eq(atomic_load(&c.completed), 50);
		t_eq(c.error, 0);
		t_bread(c.b, AREA + 49, 0, c.buf);
		t_eq(c.buf[100], 0x42);
		c.b->ops->close(c.b);
		t_buf_free(c.buf, false);
	}
}

/* ------------------------------------------------------------------
 * Stress: 2 threads per backend, disjoint slots, checksum shadow
 * ------------------------------------------------------------------ */

enum {
	S_CLUSTERS = 9,                 /* cluster 0 (header) + 4 per thread */
	S_SLOTS = S_CLUSTERS * USWAP_CLUSTER_SLOTS,
	S_BATCH = 8,                    /* async requests submitted together */
	S_BASE_OPS = 100000,            /* operations in all at scale 1 */
};

struct s_shared {
	struct backend *b;
	const char *name;
	uint64_t *sum;                  /* per slot: checksum of its page;
					   written only by the owner thread */
	uint64_t zero_sum;
};

struct s_worker {
	pthread_t tid;
	struct s_shared *sh;
	int id, nr_threads;
	uint64_t rng;
	uint64_t ops, target;
	uint64_t reads, writes, discards, async_ios;
	unsigned char *buf[S_BATCH], *chk[S_BATCH];
};

/* Thread @id owns clusters 1 + id, 1 + id + nr_threads, ... */
static uint64_t s_pick_slot(struct s_worker *w, unsigned int order)
{
	unsigned int per = (S_CLUSTERS - 1) / w->nr_threads;
	unsigned int c = 1 + w->id + w->nr_threads * (unsigned int)t_rand_below(&w->rng, per);
	unsigned int nr = USWAP_CLUSTER_SLOTS >> order;

	return (uint64_t)c * USWAP_CLUSTER_SLOTS +
	       (t_rand_below(&w->rng, nr) << order);
}

static unsigned int s_pick_order(struct s_worker *w)
{
	unsigned int r = (unsigned int)t_rand_below(&w->rng, 100);

	if (r < 50)
		return 0;
	if (r < 90)
		return 1 + (unsigned int)t_rand_below(&w->rng, 3);
	if (r < 99)
		return 4 + (unsigned int)t_rand_below(&w->rng, 3);
	return 7 + (unsigned int)t_rand_below(&w->rng, 3);
}

static bool s_verify(struct s_worker *w, uint64_t slot, unsigned int order,
		     const unsigned char *buf, const char *how)
{
	for (uint64_t i = 0; i < (UINT64_C(1) << order); i++) {
		uint64_t got = t_checksum(buf + i * USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);

		if (got != w->sh->sum[slot + i]) {
			t_fail_async("%s: thread %d: %s read of slot %llu (folio %llu order %u): "
				     "checksum %016llx, expected %016llx (seed %llu)",
				     w->sh->name, w->id, how,
				     (unsigned long long)(slot + i), (unsigned long long)slot,
				     order, (unsigned long long)got,
				     (unsigned long long)w->sh->sum[slot + i],
				     (unsigned long long)opt.seed);
			return false;
		}
	}
	return true;
}

static void s_record(struct s_worker *w, uint64_t slot, unsigned int order,
		     const unsigned char *buf)
{
	for (uint64_t i = 0; i < (UINT64_C(1) << order); i++)
		w->sh->sum[slot + i] = t_checksum(buf + i * USWAP_PAGE_SIZE, USWAP_PAGE_SIZE);
}

static bool s_sync_op(struct s_worker *w)
{
	struct backend *b = w->sh->b;
	unsigned int r = (unsigned int)t_rand_below(&w->rng, 100);
	unsigned int order = s_pick_order(w);
	uint64_t slot = s_pick_slot(w, order);
	int rc;

	if (r < 45) {
		t_fill_folio(w->buf[0], order, &w->rng);
		rc = b->ops->write(b, slot, order, w->buf[0]);
		if (rc == 0)
			s_record(w, slot, order, w->buf[0]);
		w->writes++;
	} else if (r < 95) {
		rc = b->ops->read(b, slot, order, w->buf[0]);
		if (rc == 0 && !s_verify(w, slot, order, w->buf[0], "sync"))
			return false;
		w->reads++;
	} else {
		uint64_t nr = 1 + t_rand_below(&w->rng, 1u << order);

		rc = b->ops->discard(b, slot, nr);
		if (rc == 0)
			for (uint64_t i = 0; i < nr; i++)
				w->sh->sum[slot + i] = w->sh->zero_sum;
		w->discards++;
	}
	if (rc != 0) {
		t_fail_async("%s: thread %d: sync op on slot %llu order %u = %d (%s)",
			     w->sh->name, w->id, (unsigned long long)slot, order, rc,
			     t_errname(rc));
		return false;
	}
	w->ops++;
	return true;
}

/* Up to S_BATCH writes to distinct folios, then reads of them, async. */
static bool s_async_batch(struct s_worker *w)
{
	struct backend *b = w->sh->b;
	struct backend_io ios[S_BATCH];
	uint64_t slots[S_BATCH];
	unsigned int orders[S_BATCH];
	struct t_batch wb = { 0 }, rb = { 0 };
	unsigned int n = 0;
	int rc;

	for (unsigned int tries = 0; tries < S_BATCH; tries++) {
		unsigned int order = s_pick_order(w);
		uint64_t slot = s_pick_slot(w, order);
		bool overlap = false;

		if (order > 6)
			order = 6; /* keep batches of eight affordable */
		slot &= ~((UINT64_C(1) << order) - 1);
		for (unsigned int j = 0; j < n; j++)
			if (slot < slots[j] + (UINT64_C(1) << orders[j]) &&
			    slots[j] < slot + (UINT64_C(1) << order))
				overlap = true;
		if (overlap)
			continue;
		slots[n] = slot;
		orders[n] = order;
		t_fill_folio(w->buf[n], order, &w->rng);
		n++;
	}
	for (unsigned int i = 0; i < n; i++) {
		t_io_init(&ios[i], &wb, BACKEND_WRITE, slots[i], orders[i], w->buf[i]);
		rc = b->ops->submit(b, &ios[i]);
		if (rc != 0) {
			t_fail_async("%s: submit = %d", w->sh->name, rc);
			return false;
		}
	}
	rc = t_wait(b, &wb, n);
	if (rc != 0 || atomic_load(&wb.first_error) != 0) {
		t_fail_async("%s: thread %d: async writes: wait %d, first error %d",
			     w->sh->name, w->id, rc, atomic_load(&wb.first_error));
		return false;
	}
	for (unsigned int i = 0; i < n; i++) {
		s_record(w, slots[i], orders[i], w->buf[i]);
		t_io_init(&ios[i], &rb, BACKEND_READ, slots[i], orders[i], w->chk[i]);
		rc = b->ops->submit(b, &ios[i]);
		if (rc != 0) {
			t_fail_async("%s: submit = %d", w->sh->name, rc);
			return false;
		}
	}
	rc = t_wait(b, &rb, n);
	if (rc != 0 || atomic_load(&rb.first_error) != 0) {
		t_fail_async("%s: thread %d: async reads: wait %d, first error %d",
			     w->sh->name, w->id, rc, atomic_load(&rb.first_error));
		return false;
	}
	for (unsigned int i = 0; i < n; i++)
		if (!s_verify(w, slots[i], orders[i], w->chk[i], "async"))
			return false;
	w->ops += 2 * n;
	w->async_ios += 2 * n;
	return true;
}

static void *s_worker_main(void *arg)
{
	struct s_worker *w = arg;

	while (w->ops < w->target && !t_async_failed()) {
		bool ok = t_rand_below(&w->rng, 16) == 0 ? s_async_batch(w) : s_sync_op(w);

		if (!ok)
			break;
	}
	return NULL;
}

static void test_two_threads_round_trip_with_checksums_on_every_backend(void **state)
{
	const uint64_t total = (uint64_t)(S_BASE_OPS * opt.scale) + 1;
	const uint64_t per_backend = total / T_NR_BACKENDS + 1;
	unsigned char zero[USWAP_PAGE_SIZE] = { 0 };
	uint64_t all_ops = 0;
	char context[96];

	(void)state;
	printf("# seed %llu, %d threads, %llu operations in all\n",
	       (unsigned long long)opt.seed, opt.threads, (unsigned long long)total);
	t_async_reset();
	for (int k = 0; k < T_NR_BACKENDS; k++) {
		struct s_shared sh = { .name = t_backend_name(k) };
		struct s_worker *w = calloc((size_t)opt.threads, sizeof(*w));
		unsigned char *buf = t_buf_alloc(AREA_BYTES, false);
		uint64_t reads = 0, writes = 0, discards = 0, async_ios = 0;

		t_true(w != NULL);
		sh.b = t_backend_open(k, S_SLOTS, true /* discard */);
		sh.sum = calloc(S_SLOTS, sizeof(*sh.sum));
		t_true(sh.sum != NULL);
		sh.zero_sum = t_checksum(zero, sizeof(zero));
		for (uint64_t s = 0; s < S_SLOTS; s++)
			sh.sum[s] = sh.zero_sum;

		for (int i = 0; i < opt.threads; i++) {
			w[i].sh = &sh;
			w[i].id = i;
			w[i].nr_threads = opt.threads;
			w[i].rng = opt.seed + (uint64_t)k * 1000 + (uint64_t)i;
			w[i].target = per_backend / (uint64_t)opt.threads + 1;
			for (int j = 0; j < S_BATCH; j++) {
				w[i].buf[j] = t_buf_alloc(AREA_BYTES, j & 1);
				w[i].chk[j] = t_buf_alloc(AREA_BYTES, !(j & 1));
			}
			t_eq(pthread_create(&w[i].tid, NULL, s_worker_main, &w[i]), 0);
		}
		for (int i = 0; i < opt.threads; i++) {
			pthread_join(w[i].tid, NULL);
			all_ops += w[i].ops;
			reads += w[i].reads;
			writes += w[i].writes;
			discards += w[i].discards;
			async_ios += w[i].async_ios;
			for (int j = 0; j < S_BATCH; j++) {
				t_buf_free(w[i].buf[j], j & 1);
				t_buf_free(w[i].chk[j], !(j & 1));
			}
		}
		printf("# %s: %llu sync reads, %llu sync writes, %llu discards, %llu async\n",
		       sh.name, (unsigned long long)reads, (unsigned long long)writes,
		       (unsigned long long)discards, (unsigned long long)async_ios);
		snprintf(context, sizeof(context), "%s (seed %llu)", sh.name,
			 (unsigned long long)opt.seed);
		t_assert_no_async_failure(context);

		/* Quiescent: every slot of every data cluster as recorded. */
		for (uint64_t c = 1; c < S_CLUSTERS; c++) {
			uint64_t slot = c * USWAP_CLUSTER_SLOTS;

			t_bread(sh.b, slot, 9, buf);
			for (uint64_t i = 0; i < USWAP_CLUSTER_SLOTS; i++)
				if (t_checksum(buf + i * USWAP_PAGE_SIZE, USWAP_PAGE_SIZE) !=
				    sh.sum[slot + i])
					fail_msg("%s: slot %llu differs at the end (seed %llu)",
						 sh.name, (unsigned long long)(slot + i),
						 (unsigned long long)opt.seed);
		}
		sh.b->ops->close(sh.b);
		free(sh.sum);
		free(w);
		t_buf_free(buf, false);
	}
	t_true(all_ops >= total);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest quick[] = {
		cmocka_unit_test(test_every_backend_round_trips_every_order_sync),
		cmocka_unit_test(test_every_backend_round_trips_every_order_async),
		cmocka_unit_test(test_every_backend_round_trips_a_real_file),
		cmocka_unit_test(test_unwritten_slots_read_zero),
		cmocka_unit_test(test_requests_outside_the_device_are_refused),
		cmocka_unit_test(test_discard_makes_ranges_read_zero),
		cmocka_unit_test(test_file_discard_zeroes_and_keeps_the_file_allocated),
		cmocka_unit_test(test_file_discarded_without_close_opens_again),
		cmocka_unit_test(test_file_discard_off_keeps_data),
		cmocka_unit_test(test_file_discard_at_open_spares_the_header),
		cmocka_unit_test(test_file_geometry_and_io_mode),
		cmocka_unit_test(test_file_async_uses_io_uring_and_bounces_unaligned_direct_io),
		cmocka_unit_test(test_file_short_transfer_is_an_error),
		cmocka_unit_test(test_file_falls_back_without_io_uring_and_stops_discarding_when_refused),
		cmocka_unit_test(test_file_discard_without_preallocation_keeps_the_hole),
		cmocka_unit_test(test_done_callbacks_may_submit_again),
	};
	const struct CMUnitTest stress[] = {
		cmocka_unit_test(test_two_threads_round_trip_with_checksums_on_every_backend),
	};

	opt.stress = argc > 1 && strcmp(argv[1], "stress") == 0;
	opt.threads = argc > 2 ? atoi(argv[2]) : 2;
	opt.scale = argc > 3 ? strtod(argv[3], NULL) : t_env_scale();
	opt.seed = argc > 4 ? strtoull(argv[4], NULL, 0) : t_env_seed();
	if ((argc > 1 && !opt.stress) || opt.threads < 1 || opt.threads > S_CLUSTERS - 1 ||
	    opt.scale <= 0) {
		fprintf(stderr, "usage: %s [stress [threads [scale [seed]]]]\n", argv[0]);
		return 2;
	}
	printf("# seed %llu\n", (unsigned long long)opt.seed);
	return opt.stress ? t_run(stress) : t_run(quick);
}
