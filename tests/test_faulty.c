/* SPDX-License-Identifier: MIT */
/*
 * Description: the faulty backend injects exactly what it is configured
 * to: per-operation error rates (seeded, so a seed replays the same
 * failures; counted exactly by faulty_stats), slot lists (a request
 * fails iff it touches a listed slot), fail-the-Nth-request (transient:
 * only the Nth; persistent: the Nth and all after), and latency. A write
 * made to fail leaves the inner backend's data as it was; a read made to
 * fail returns a poisoned buffer. An SQLite-style fault loop (fail
 * request N = 1, 2, ... until the operation succeeds) never loses a page.
 * With its latency on a swap file's discard: the allocator discards with
 * the CPU's lock dropped, so another allocation goes on meanwhile.
 */
#include "t_dev.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dev/faulty.h"
#include "dev/file.h"

enum { NR_SLOTS = 2 * USWAP_CLUSTER_SLOTS };

static struct backend *open_faulty(const struct faulty_opts *o)
{
	struct backend *inner = NULL, *b = NULL;
	char err[256] = "";

	t_eq(backend_ram_open(NR_SLOTS * USWAP_PAGE_SIZE, &inner, err, sizeof(err)), 0);
	if (backend_faulty_open(inner, o, &b, err, sizeof(err)) != 0)
		fail_msg("faulty open: %s", err);
	t_eq(strcmp(b->ops->kind, "faulty"), 0);
	t_eq_u64(b->nr_slots, inner->nr_slots);
	t_eq_u64(b->first_slot, inner->first_slot);
	t_eq(strcmp(b->name, inner->name), 0);
	t_true(faulty_inner(b) == inner);
	return b;
}

static struct faulty_stats fstats(struct backend *b)
{
	struct faulty_stats st;

	t_eq(faulty_stats(b, &st), 0);
	return st;
}

static void test_nothing_is_injected_by_default(void **state)
{
	struct backend *b = open_faulty(NULL);
	unsigned char buf[USWAP_PAGE_SIZE];
	struct faulty_stats st;

	(void)state;
	memset(buf, 3, sizeof(buf));
	for (uint64_t s = 1; s < 1000; s++) {
		t_bwrite(b, s, 0, buf);
		t_bread(b, s, 0, buf);
	}
	t_eq(b->ops->discard(b, 1, 999), 0);
	t_eq(b->ops->flush(b), 0);
	st = fstats(b);
	t_eq_u64(st.reads, 999);
	t_eq_u64(st.writes, 999);
	t_eq_u64(st.discards, 1);
	t_eq_u64(st.read_errors + st.write_errors + st.discard_errors, 0);
	t_eq_u64(st.nth_counter, 999 * 2 + 1);
	b->ops->close(b);
}

/* Run @n order-0 reads; return how many failed (and check each is -EIO).
 * @fails, if not NULL, gets one byte per read: 1 = failed. */
static uint64_t run_reads(struct backend *b, uint64_t n, unsigned char *fails)
{
	unsigned char buf[USWAP_PAGE_SIZE];
	uint64_t failed = 0;

	for (uint64_t i = 0; i < n; i++) {
		int rc = b->ops->read(b, 1 + i % (NR_SLOTS - 1), 0, buf);

		t_eq_either(rc, 0, -EIO);
		failed += rc != 0;
		if (fails != NULL)
			fails[i] = rc != 0;
	}
	return failed;
}

static void test_error_rates_inject_the_configured_fraction_and_replay_by_seed(void **state)
{
	const uint64_t n = 20000;
	struct faulty_opts o = { .read_error_rate = 0.25, .seed = 12345 };
	unsigned char *f1 = malloc(n), *f2 = malloc(n), *f3 = malloc(n);
	unsigned char buf[USWAP_PAGE_SIZE] = { 0 };
	struct backend *b;
	struct faulty_stats st;
	uint64_t failed;
	double frac;

	(void)state;
	t_true(f1 && f2 && f3);
	b = open_faulty(&o);
	failed = run_reads(b, n, f1);
	st = fstats(b);
	t_eq_u64(st.read_errors, failed);
	t_eq_u64(st.rate_errors, failed);
	t_eq_u64(st.reads, n);
	frac = (double)failed / (double)n;
	printf("# read rate 0.25: %llu of %llu reads failed (%.4f)\n",
	       (unsigned long long)failed, (unsigned long long)n, frac);
	/* 0.25 +- 0.02 is more than 6 standard deviations. */
	t_true(frac > 0.23 && frac < 0.27);
	/* Writes and discards have their own rate: 0 here. */
	for (uint64_t s = 1; s < 500; s++)
		t_bwrite(b, s, 0, buf);
	t_eq(b->ops->discard(b, 1, 100), 0);
	t_eq_u64(fstats(b).write_errors, 0);
	b->ops->close(b);

	/* Same seed: the same reads fail. Another seed: others do. */
	b = open_faulty(&o);
	run_reads(b, n, f2);
	b->ops->close(b);
	t_true(memcmp(f1, f2, n) == 0);
	o.seed = 54321;
	b = open_faulty(&o);
	run_reads(b, n, f3);
	b->ops->close(b);
	t_true(memcmp(f1, f3, n) != 0);

	/* Rates 1 and 0. */
	o.read_error_rate = 1.0;
	o.write_error_rate = 1.0;
	o.discard_error_rate = 1.0;
	b = open_faulty(&o);
	t_eq_u64(run_reads(b, 100, NULL), 100);
	t_eq(b->ops->write(b, 1, 0, buf), -EIO);
	t_eq(b->ops->discard(b, 1, 1), -EIO);
	st = fstats(b);
	t_eq_u64(st.read_errors, 100);
	t_eq_u64(st.write_errors, 1);
	t_eq_u64(st.discard_errors, 1);
	b->ops->close(b);
	free(f1);
	free(f2);
	free(f3);
}

/* A write made to fail is not forwarded: the inner backend keeps the old
 * data; a read made to fail poisons the buffer. */
static void test_failed_writes_leave_old_data_and_failed_reads_poison(void **state)
{
	struct faulty_opts o = { .write_error_rate = 0.5, .seed = 99 };
	struct backend *b = open_faulty(&o);
	struct backend *inner = faulty_inner(b);
	unsigned char old[USWAP_PAGE_SIZE], new[USWAP_PAGE_SIZE], got[USWAP_PAGE_SIZE];
	unsigned char poison[USWAP_PAGE_SIZE];
	uint64_t failed = 0;

	(void)state;
	memset(old, 0x0a, sizeof(old));
	memset(new, 0x0b, sizeof(new));
	for (uint64_t s = 1; s < 1000; s++)
		t_bwrite(inner, s, 0, old);
	for (uint64_t s = 1; s < 1000; s++) {
		int rc = b->ops->write(b, s, 0, new);

		t_eq_either(rc, 0, -EIO);
		t_bread(inner, s, 0, got);
		t_assert_same_bytes(got, rc ? old : new, sizeof(got),
				    rc ? "after failed write" : "after write");
		failed += rc != 0;
	}
	t_eq_u64(fstats(b).write_errors, failed);
	t_true(failed > 400 && failed < 600);
	b->ops->close(b);

	o = (struct faulty_opts){ .read_error_rate = 1.0 };
	b = open_faulty(&o);
	memset(poison, FAULTY_POISON, sizeof(poison));
	t_bwrite(faulty_inner(b), 5, 0, old);
	memcpy(got, old, sizeof(got));
	t_eq(b->ops->read(b, 5, 0, got), -EIO);
	t_assert_same_bytes(got, poison, sizeof(got), "buffer of a failed read");
	b->ops->close(b);
}

static void test_slot_lists_fail_exactly_the_requests_touching_them(void **state)
{
	const uint64_t bad_read[] = { 100, 13 }; /* unsorted on purpose */
	const uint64_t bad_write[] = { 600 };
	const uint64_t bad_discard[] = { 700, 701 };
	struct faulty_opts o = {
		.bad_read_slots = bad_read, .nr_bad_read = 2,
		.bad_write_slots = bad_write, .nr_bad_write = 1,
		.bad_discard_slots = bad_discard, .nr_bad_discard = 2,
	};
	unsigned char *buf = t_buf_alloc(folio_bytes(9), false);
	struct backend *b = open_faulty(&o);
	struct faulty_stats st;

	(void)state;
	memset(buf, 1, folio_bytes(9));
	/* Reads. */
	t_eq(b->ops->read(b, 13, 0, buf), -EIO);
	t_eq(b->ops->read(b, 12, 0, buf), 0);
	t_eq(b->ops->read(b, 14, 0, buf), 0);
	t_eq(b->ops->read(b, 12, 2, buf), -EIO);  /* 12..15 */
	t_eq(b->ops->read(b, 8, 2, buf), 0);      /* 8..11 */
	t_eq(b->ops->read(b, 8, 3, buf), -EIO);   /* 8..15 */
	t_eq(b->ops->read(b, 96, 5, buf), -EIO);  /* 96..127: 100 */
	t_eq(b->ops->read(b, 32, 5, buf), 0);     /* 32..63 */
	t_eq(b->ops->read(b, 101, 0, buf), 0);
	t_eq(b->ops->read(b, 512, 9, buf), 0);
	/* The read list does not touch writes, and vice versa. */
	t_eq(b->ops->write(b, 13, 0, buf), 0);
	t_eq(b->ops->write(b, 512, 9, buf), -EIO); /* 600 inside */
	t_eq(b->ops->write(b, 600, 0, buf), -EIO);
	t_eq(b->ops->write(b, 601, 0, buf), 0);
	t_eq(b->ops->read(b, 600, 0, buf), 0);
	/* Discards. */
	t_eq(b->ops->discard(b, 690, 10), 0);     /* 690..699 */
	t_eq(b->ops->discard(b, 690, 11), -EIO);
	t_eq(b->ops->discard(b, 701, 1), -EIO);
	t_eq(b->ops->discard(b, 702, 300), 0);
	st = fstats(b);
	t_eq_u64(st.read_errors, 4);
	t_eq_u64(st.write_errors, 2);
	t_eq_u64(st.discard_errors, 2);
	t_eq_u64(st.slot_errors, 8);
	t_eq_u64(st.rate_errors + st.nth_errors, 0);
	/* Out of range: -EINVAL, neither counted nor injected. */
	t_eq(b->ops->read(b, 0, 0, buf), -EINVAL);
	t_eq_u64(fstats(b).reads, st.reads);
	b->ops->close(b);
	t_buf_free(buf, false);
}

static void test_fail_nth_transient_fails_only_the_nth(void **state)
{
	struct faulty_opts o = { .fail_nth = 3 };
	struct backend *b = open_faulty(&o);
	unsigned char buf[USWAP_PAGE_SIZE] = { 0 };

	(void)state;
	/* Reads, writes and discards count together. */
	t_eq(b->ops->write(b, 1, 0, buf), 0);
	t_eq(b->ops->read(b, 1, 0, buf), 0);
	t_eq(b->ops->discard(b, 1, 1), -EIO);
	for (int i = 0; i < 20; i++)
		t_eq(b->ops->read(b, 1, 0, buf), 0);
	t_eq_u64(fstats(b).nth_errors, 1);
	t_eq_u64(fstats(b).discard_errors, 1);

	/* Re-armed: counting starts again. */
	t_eq(faulty_fail_nth(b, 1, false), 0);
	t_eq(b->ops->read(b, 1, 0, buf), -EIO);
	t_eq(b->ops->read(b, 1, 0, buf), 0);
	t_eq(faulty_fail_nth(b, 0, false), 0);
	for (int i = 0; i < 5; i++)
		t_eq(b->ops->write(b, 1, 0, buf), 0);
	t_eq_u64(fstats(b).nth_errors, 2);
	t_eq_u64(fstats(b).nth_counter, 5);
	b->ops->close(b);
}

static void test_fail_nth_persistent_fails_the_nth_and_all_after(void **state)
{
	struct faulty_opts o = { .fail_nth = 4, .fail_persistent = true };
	struct backend *b = open_faulty(&o);
	unsigned char buf[USWAP_PAGE_SIZE] = { 0 };

	(void)state;
	for (int i = 1; i <= 3; i++)
		t_eq(b->ops->write(b, (uint64_t)i, 0, buf), 0);
	for (int i = 4; i <= 30; i++)
		t_eq(b->ops->read(b, 1, 0, buf), -EIO);
	t_eq(b->ops->write(b, 1, 0, buf), -EIO);
	t_eq_u64(fstats(b).nth_errors, 28);
	t_eq(faulty_fail_nth(b, 0, false), 0);
	t_eq(b->ops->read(b, 1, 0, buf), 0);
	b->ops->close(b);
}

/*
 * SQLite-style fault loop. The operation: write 8 order-2 folios, then
 * read all 8 back (16 requests). For N = 1, 2, ... the Nth request fails
 * (transiently, then persistently); the operation stops at its first
 * error. Afterwards every folio holds either its old contents (write
 * failed or never issued) or the new ones (write succeeded): no page is
 * lost or torn. The loop must end, at N = 17, with a clean run.
 */
static void fault_loop(bool persistent)
{
	enum { NR = 8, ORDER = 2 };
	const size_t fb = folio_bytes(ORDER);
	unsigned char *old = t_buf_alloc(NR * fb, false);
	unsigned char *new = t_buf_alloc(NR * fb, false);
	unsigned char *got = t_buf_alloc(fb, false);
	struct backend *b = open_faulty(NULL);
	struct backend *inner = faulty_inner(b);
	uint64_t rng = 2024;
	uint64_t n;

	t_fill_folio(old, ORDER + 3, &rng);
	t_fill_folio(new, ORDER + 3, &rng);
	for (n = 1; n < 100; n++) {
		bool written[NR] = { false };
		int first_error = 0;

		for (int i = 0; i < NR; i++)
			t_bwrite(inner, 16 + (uint64_t)i * 4, ORDER, old + i * fb);
		t_eq(faulty_fail_nth(b, n, persistent), 0);
		for (int i = 0; i < NR && !first_error; i++) {
			first_error = b->ops->write(b, 16 + (uint64_t)i * 4, ORDER, new + i * fb);
			written[i] = first_error == 0;
		}
		for (int i = 0; i < NR && !first_error; i++) {
			first_error = b->ops->read(b, 16 + (uint64_t)i * 4, ORDER, got);
			if (!first_error)
				t_assert_same_bytes(got, new + i * fb, fb, "read in the loop");
		}
		t_eq_either(first_error, 0, -EIO);
		t_eq(faulty_fail_nth(b, 0, false), 0);
		for (int i = 0; i < NR; i++) {
			t_bread(inner, 16 + (uint64_t)i * 4, ORDER, got);
			t_assert_same_bytes(got, (written[i] ? new : old) + i * fb, fb,
					    "folio after the fault loop step");
		}
		if (first_error == 0)
			break;
	}
	t_eq_u64(n, 2 * NR + 1);
	t_eq_u64(fstats(b).nth_errors, 2 * NR);
	b->ops->close(b);
	t_buf_free(old, false);
	t_buf_free(new, false);
	t_buf_free(got, false);
}

static void test_fault_loop_transient_never_loses_a_page(void **state)
{
	(void)state;
	fault_loop(false);
}

static void test_fault_loop_persistent_never_loses_a_page(void **state)
{
	(void)state;
	fault_loop(true);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_latency_is_added_to_every_request(void **state)
{
	struct faulty_opts o = { .latency_us = 2000 };
	struct backend *b = open_faulty(&o);
	unsigned char buf[USWAP_PAGE_SIZE] = { 0 };
	double t0 = now_s();

	(void)state;
	for (int i = 0; i < 5; i++)
		t_bwrite(b, 1, 0, buf);
	t_true(now_s() - t0 >= 5 * 0.002);
	b->ops->close(b);
}

struct async_rec {
	int result;
	int calls;
};

static void async_done(struct backend_io *io)
{
	struct async_rec *r = io->priv;

	r->result = io->result;
	r->calls++;
}

/* Over a file with io_uring: injected failures complete in submit,
 * accepted requests go to the ring and complete in reap. */
static void test_async_requests_are_injected_or_forwarded(void **state)
{
	const uint64_t bad[] = { 40 };
	struct faulty_opts o = { .bad_read_slots = bad, .nr_bad_read = 1,
				 .bad_write_slots = bad, .nr_bad_write = 1 };
	struct file_backend_opts fo = { .queue_depth = 4 };
	char *path = t_dev_file(NR_SLOTS, false, NULL);
	struct backend *inner = NULL, *b = NULL;
	unsigned char *buf = t_buf_alloc(folio_bytes(3) * 8, false);
	struct backend_io ios[8];
	struct async_rec rec[8];
	char err[256];
	int reaped = 0;

	(void)state;
	t_eq(backend_file_open(path, &fo, &inner, err, sizeof(err)), 0);
	t_eq(backend_faulty_open(inner, &o, &b, err, sizeof(err)), 0);
	t_true(b->is_file);
	memset(buf, 0x3c, folio_bytes(3) * 8);
	for (int i = 0; i < 8; i++) {
		memset(&ios[i], 0, sizeof(ios[i]));
		memset(&rec[i], 0, sizeof(rec[i]));
		ios[i].op = BACKEND_WRITE;
		ios[i].slot = 8 + 8 * (uint64_t)i; /* 8..71; folio 4 holds 40 */
		ios[i].order = 3;
		ios[i].buf = buf + i * folio_bytes(3);
		ios[i].done = async_done;
		ios[i].priv = &rec[i];
		t_eq(b->ops->submit(b, &ios[i]), 0);
	}
	t_eq(rec[4].calls, 1); /* failed at once, in submit */
	t_eq(rec[4].result, -EIO);
	for (int spins = 0; spins < 1000; spins++) {
		int done = 0;

		for (int i = 0; i < 8; i++)
			done += rec[i].calls;
		if (done == 8)
			break;
		int rc = b->ops->reap(b, 1);

		t_true(rc >= 0);
		reaped += rc;
	}
	for (int i = 0; i < 8; i++) {
		t_eq(rec[i].calls, 1);
		t_eq(rec[i].result, i == 4 ? -EIO : 0);
	}
	{
		struct file_backend_info fi;

		t_eq(file_backend_info(inner, &fi), 0);
		if (fi.uring)
			t_true(reaped > 0);
	}
	t_eq_u64(fstats(b).write_errors, 1);
	b->ops->close(b); /* closes the file backend too */
	free(path);
	t_buf_free(buf, false);
}

static void test_open_refuses_bad_rates_and_leaves_inner_to_the_caller(void **state)
{
	struct faulty_opts o = { .read_error_rate = 1.5 };
	struct backend *inner = NULL, *b = NULL;
	unsigned char buf[USWAP_PAGE_SIZE] = { 0 };
	char err[256] = "";

	(void)state;
	t_eq(backend_ram_open(NR_SLOTS * USWAP_PAGE_SIZE, &inner, err, sizeof(err)), 0);
	t_eq(backend_faulty_open(inner, &o, &b, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "rate") != NULL);
	o.read_error_rate = -0.1;
	t_eq(backend_faulty_open(inner, &o, &b, err, sizeof(err)), -EINVAL);
	t_eq(backend_faulty_open(NULL, NULL, &b, err, sizeof(err)), -EINVAL);
	t_bwrite(inner, 1, 0, buf); /* still ours, still usable */
	t_eq(faulty_stats(inner, &(struct faulty_stats){ 0 }), -EINVAL);
	t_eq(faulty_fail_nth(inner, 1, false), -EINVAL);
	t_true(faulty_inner(inner) == NULL);
	inner->ops->close(inner);
}

/* Two threads reading at rate 0.5: every injected error is counted once. */
struct rate_worker {
	pthread_t tid;
	struct backend *b;
	uint64_t failed, n;
};

static void *rate_worker_main(void *arg)
{
	struct rate_worker *w = arg;
	unsigned char buf[USWAP_PAGE_SIZE];

	for (uint64_t i = 0; i < w->n; i++)
		w->failed += w->b->ops->read(w->b, 1 + (i % 100), 0, buf) != 0;
	return NULL;
}

static void test_counts_are_exact_under_two_threads(void **state)
{
	struct faulty_opts o = { .read_error_rate = 0.5, .seed = 7 };
	struct backend *b = open_faulty(&o);
	struct rate_worker w[2] = { { .b = b, .n = 20000 }, { .b = b, .n = 20000 } };
	struct faulty_stats st;

	(void)state;
	for (int i = 0; i < 2; i++)
		t_eq(pthread_create(&w[i].tid, NULL, rate_worker_main, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i].tid, NULL);
	st = fstats(b);
	t_eq_u64(st.reads, 40000);
	t_eq_u64(st.read_errors, w[0].failed + w[1].failed);
	t_true(st.read_errors > 19000 && st.read_errors < 21000);
	b->ops->close(b);
}

/* ------------------------------------------------------------------------
 * A slow discard does not hold the allocating CPU's lock
 * ---------------------------------------------------------------------- */

struct slow_alloc {
	struct uswap *u;
	_Atomic int *done_order; /* finishing order, shared */
	int rc, order_done;
	uswap_entry_t e;
};

static void *alloc_one(void *arg)
{
	struct slow_alloc *a = arg;

	a->rc = uswap_alloc(a->u, 0, &a->e);
	a->order_done = atomic_fetch_add(a->done_order, 1);
	return NULL;
}

/*
 * One CPU (nr_cpus 1), a swap file behind a 1 s latency at priority 10
 * whose only room is a cluster waiting for discard, and ram at 0. An
 * allocation discards that cluster (1 s); another allocation started
 * meanwhile is served by the ram device and finishes first: the discard
 * runs with the CPU's lock dropped (as the kernel discards after dropping
 * its local lock). Holding it, the second would wait the whole second.
 */
static void test_slow_discard_leaves_the_cpu_lock_free(void **state)
{
	struct uswap_config cfg = { .nr_cpus = 1 };
	const uint64_t nr = USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS;
	uswap_entry_t *held = calloc(nr + 1, sizeof(*held));
	struct slow_alloc a[2];
	_Atomic int done = 0;
	pthread_t tid[2];
	char spec[512], err[256];
	struct uswap *u;
	bool made;
	char *path = t_dev_file(nr + 1, true, &made);
	int tf, tr;
	size_t n = 0;

	(void)state;
	if (!made) {
		unlink(path);
		free(path);
		free(held);
		t_skip("mkswap not found");
	}
	int fd = open(path, O_RDWR); /* swapon refuses holes: fill them */

	t_true(fd >= 0);
	if (posix_fallocate(fd, 0, (off_t)((nr + 1) * USWAP_PAGE_SIZE))) {
		close(fd);
		unlink(path);
		free(path);
		free(held);
		t_skip("fallocate is not supported in the temp dir");
	}
	close(fd);
	t_eq(uswap_create(&cfg, &u), 0);
	snprintf(spec, sizeof(spec), "faulty:latency=1000000:file:%s:discard:prio=10", path);
	tf = uswap_swapon_spec(u, spec, err, sizeof(err));
	if (tf < 0)
		fail_msg("swapon %s: %s", spec, err);
	tr = uswap_swapon_spec(u, "ram:8M:prio=0", err, sizeof(err));
	t_true(tr >= 0);
	/* Fill the file, then free a whole cluster: it waits for discard. */
	while (n <= nr && uswap_alloc(u, 0, &held[n]) == 0 && (int)uswap_entry_type(held[n]) == tf)
		n++;
	t_true(n > USWAP_CLUSTER_SLOTS && n <= nr);
	t_true((int)uswap_entry_type(held[n]) == tr); /* the file is full */
	t_put(u, held[n], 0);
	for (size_t i = 0; i < n; i++) /* cluster 1: cluster 0 holds the header */
		if (uswap_entry_offset(held[i]) / USWAP_CLUSTER_SLOTS == 1)
			t_put(u, held[i], 0);
	struct uswap_device_info info;

	t_eq(uswap_device_info(u, tf, &info), 0);
	t_eq(info.discard_clusters, 1);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct slow_alloc){ .u = u, .done_order = &done };
		t_eq(pthread_create(&tid[i], NULL, alloc_one, &a[i]), 0);
		if (i == 0)
			usleep(200000); /* the first is in its discard now */
	}
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	t_eq(a[0].rc, 0);
	t_eq(a[1].rc, 0);
	t_eq(uswap_entry_type(a[0].e), tf);  /* the discarded cluster */
	t_eq(uswap_entry_type(a[1].e), tr);
	t_eq(a[1].order_done, 0);            /* done while the discard ran */
	uswap_destroy(u);
	unlink(path);
	free(path);
	free(held);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_is_injected_by_default),
		cmocka_unit_test(test_error_rates_inject_the_configured_fraction_and_replay_by_seed),
		cmocka_unit_test(test_failed_writes_leave_old_data_and_failed_reads_poison),
		cmocka_unit_test(test_slot_lists_fail_exactly_the_requests_touching_them),
		cmocka_unit_test(test_fail_nth_transient_fails_only_the_nth),
		cmocka_unit_test(test_fail_nth_persistent_fails_the_nth_and_all_after),
		cmocka_unit_test(test_fault_loop_transient_never_loses_a_page),
		cmocka_unit_test(test_fault_loop_persistent_never_loses_a_page),
		cmocka_unit_test(test_latency_is_added_to_every_request),
		cmocka_unit_test(test_async_requests_are_injected_or_forwarded),
		cmocka_unit_test(test_open_refuses_bad_rates_and_leaves_inner_to_the_caller),
		cmocka_unit_test(test_counts_are_exact_under_two_threads),
		cmocka_unit_test(test_slow_discard_leaves_the_cpu_lock_free),
	};

	return t_run(tests);
}
