// SPDX-License-Identifier: MIT
/*
 * Description: the batched swap path (src/swap/swap_out.c, swap_in.c,
 * swapq.c): uswap_swap_out_batch() and uswap_swap_in_batch() round-trip
 * folios of mixed orders byte-identical on every backend kind, a file's
 * batch really goes through io_uring, a batch where some writes fail
 * stores every folio elsewhere, a batch where some reads fail answers
 * -EIO for exactly those folios, each swapped-out folio costs two
 * cluster-lock round trips, and bad arguments change nothing. Swap
 * queues (uswap_swapq_*) keep a file's requests in flight across calls,
 * answer as the batch calls do, and swapoff waits for a read in flight.
 */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc/alloc_internal.h"
#include "dev/backend.h"
#include "dev/file.h"
#include "t_dev.h"

#define DEV_SLOTS (16 * USWAP_CLUSTER_SLOTS) /* 32 MiB per device */
#define NR        48                         /* folios per batch */

static int swapon_backend(struct uswap *u, struct backend *b, int prio)
{
	struct uswap_swapon_args a = { .prio = prio, .backend = (struct uswap_backend *)b };
	int type = uswap_swapon(u, &a);

	t_true(type >= 0);
	return type;
}

/* A batch of NR folios, orders 0, 2 and 4 in turn, filled from @seed. */
struct batch {
	struct uswap_swap_io io[NR];
	unsigned char *want[NR];
	unsigned char *got[NR];
};

static void batch_make(struct batch *b, uint64_t seed)
{
	static const unsigned int orders[] = { 0, 2, 4 };

	for (unsigned int i = 0; i < NR; i++) {
		unsigned int order = orders[i % 3];

		b->want[i] = t_buf_alloc(folio_bytes(order), false);
		b->got[i] = t_buf_alloc(folio_bytes(order), false);
		t_fill_folio(b->want[i], order, &seed);
		b->io[i] = (struct uswap_swap_io){ .pages = b->want[i], .order = order };
	}
}

static void batch_free(struct batch *b)
{
	for (unsigned int i = 0; i < NR; i++) {
		t_buf_free(b->want[i], false);
		t_buf_free(b->got[i], false);
	}
}

/* Turn the swapped-out batch into its swap-in: same entries, fresh
 * buffers cleared. */
static void batch_for_swap_in(struct batch *b)
{
	for (unsigned int i = 0; i < NR; i++) {
		memset(b->got[i], 0, folio_bytes(b->io[i].order));
		b->io[i].pages = b->got[i];
		b->io[i].result = -1000; /* must be overwritten */
	}
}

/* Pointers to @b's folios [from, from + n), as the queue calls take. */
static struct uswap_swap_io **batch_ptrs(struct batch *b, struct uswap_swap_io **p,
					 unsigned int from, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = &b->io[from + i];
	return p;
}

static void batch_free_slots(struct uswap *u, struct batch *b)
{
	for (unsigned int i = 0; i < NR; i++)
		t_eq(uswap_swap_free(u, b->io[i].entry, b->io[i].order), 0);
}

static void round_trip(enum t_backend_kind k, unsigned int flags)
{
	struct backend *be = t_backend_open(k, DEV_SLOTS, false);
	struct uswap *u = t_create(2, 0);
	struct file_backend_info fi;
	struct batch b;

	swapon_backend(u, be, 0);
	batch_make(&b, 77 + k);
	t_eq(uswap_swap_out_batch(u, b.io, NR, flags), NR);
	for (unsigned int i = 0; i < NR; i++) {
		t_eq(b.io[i].result, 0);
		t_eq_u64(uswap_entry_offset(b.io[i].entry) % (1u << b.io[i].order), 0);
		for (unsigned int j = 0; j < i; j++)
			t_true(b.io[j].entry.val != b.io[i].entry.val);
	}
	batch_for_swap_in(&b);
	t_eq(uswap_swap_in_batch(u, b.io, NR), NR);
	for (unsigned int i = 0; i < NR; i++) {
		/* A kept clean copy answers from the swap cache. */
		t_eq(b.io[i].result, (flags & USWAP_SWAP_KEEP_CACHE) ? 1 : 0);
		t_assert_same_bytes(b.got[i], b.want[i], folio_bytes(b.io[i].order),
				    t_backend_name(k));
	}
	if ((k == T_FILE_URING || k == T_FILE_DIRECT) && file_backend_info(be, &fi) == 0 &&
	    fi.uring)
	{
		printf("# %s: %llu requests through io_uring\n", t_backend_name(k),
		       (unsigned long long)fi.async_submitted);
		/* The writes, and the reads a cached copy did not spare. */
		t_eq_u64(fi.async_submitted, (flags & USWAP_SWAP_KEEP_CACHE) ? NR : 2 * NR);
	}
	batch_free_slots(u, &b);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	uswap_destroy(u);
	batch_free(&b);
}

static void test_batch_round_trips_on_every_backend_kind(void **state)
{
	for (int k = 0; k < T_NR_BACKENDS; k++) {
		round_trip((enum t_backend_kind)k, 0);
		round_trip((enum t_backend_kind)k, USWAP_SWAP_KEEP_CACHE);
	}
}

static struct backend *faulty_ram(const struct faulty_opts *fo)
{
	struct backend *inner, *b;
	char err[128];

	t_eq(backend_ram_open(DEV_SLOTS * USWAP_PAGE_SIZE, &inner, err, sizeof(err)), 0);
	t_eq(backend_faulty_open(inner, fo, &b, err, sizeof(err)), 0);
	return b;
}

/* A third of the writes on the first device fail: every folio of the
 * batch is stored all the same, those on the device below. */
static void test_batch_with_failed_writes_stores_every_folio(void **state)
{
	struct faulty_opts fo = { .write_error_rate = 0.33, .seed = t_env_seed() };
	struct uswap *u = t_create(2, 0);
	int bad = swapon_backend(u, faulty_ram(&fo), 10);
	int good = swapon_backend(u, t_backend_open(T_RAM, DEV_SLOTS, false), 0);
	unsigned int below = 0;
	struct batch b;

	batch_make(&b, 5);
	t_eq(uswap_swap_out_batch(u, b.io, NR, 0), NR);
	for (unsigned int i = 0; i < NR; i++) {
		t_eq(b.io[i].result, 0);
		below += uswap_entry_type(b.io[i].entry) == (unsigned int)good;
	}
	t_true(t_info(u, bad).write_errors > 0);
	t_true(below > 0); /* the failed ones went to the device below */
	t_eq_u64(t_info(u, bad).inuse + t_info(u, good).inuse,
		 16 * 1 + 16 * 4 + 16 * 16);
	batch_for_swap_in(&b);
	t_eq(uswap_swap_in_batch(u, b.io, NR), NR);
	for (unsigned int i = 0; i < NR; i++)
		t_assert_same_bytes(b.got[i], b.want[i], folio_bytes(b.io[i].order),
				    "after failed writes");
	batch_free_slots(u, &b);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	uswap_destroy(u);
	batch_free(&b);
}

static bool folio_touches(const struct uswap_swap_io *io, const uint64_t *bad, size_t nr)
{
	uint64_t first = uswap_entry_offset(io->entry);

	for (size_t j = 0; j < nr; j++)
		if (bad[j] >= first && bad[j] < first + (1u << io->order))
			return true;
	return false;
}

/* Reads of every 37th slot fail: exactly the folios holding one answer
 * -EIO, the others come back intact in the same batch. */
static void test_batch_failed_reads_are_eio_for_exactly_those_folios(void **state)
{
	static uint64_t bad[DEV_SLOTS / 37];
	struct faulty_opts fo = { .bad_read_slots = bad, .nr_bad_read = DEV_SLOTS / 37 };
	struct uswap *u = t_create(2, 0);
	unsigned int failed = 0, want_failed = 0;
	struct batch b;

	for (size_t j = 0; j < DEV_SLOTS / 37; j++)
		bad[j] = 37 * (j + 1);
	swapon_backend(u, faulty_ram(&fo), 0);
	batch_make(&b, 9);
	t_eq(uswap_swap_out_batch(u, b.io, NR, 0), NR);
	batch_for_swap_in(&b);
	for (unsigned int i = 0; i < NR; i++)
		want_failed += folio_touches(&b.io[i], bad, DEV_SLOTS / 37);
	t_true(want_failed > 0 && want_failed < NR);
	t_eq(uswap_swap_in_batch(u, b.io, NR), NR - want_failed);
	for (unsigned int i = 0; i < NR; i++) {
		if (folio_touches(&b.io[i], bad, DEV_SLOTS / 37)) {
			t_eq(b.io[i].result, -EIO);
			failed++;
			continue;
		}
		t_eq(b.io[i].result, 0);
		t_assert_same_bytes(b.got[i], b.want[i], folio_bytes(b.io[i].order),
				    "beside failed reads");
	}
	t_eq(failed, want_failed);
	t_eq_u64(t_stats(u).read_errors, want_failed);
	batch_free_slots(u, &b); /* the slots are still the caller's */
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
	batch_free(&b);
}

static uint64_t cluster_locks(struct uswap *u)
{
	return t_stats(u).locks[USWAP_LOCK_CLUSTER].acquired;
}

/* Allocation and the swap cache insert share one cluster lock, the commit
 * takes it once more: two per folio, batch or not, cached or not (plus
 * the few a new cluster costs the slow path). */
static void test_a_swapped_out_folio_costs_two_cluster_locks(void **state)
{
	enum { N = 256 };
	static unsigned char pages[N][USWAP_PAGE_SIZE];
	struct uswap_swap_io io[N];
	struct uswap *u = t_create(1, 0);
	uswap_entry_t e;

	swapon_backend(u, t_backend_open(T_RAM, DEV_SLOTS, false), 0);
	for (unsigned int flags = 0; flags <= USWAP_SWAP_KEEP_CACHE; flags++) {
		uint64_t before = cluster_locks(u), spent;

		for (unsigned int i = 0; i < N; i++)
			io[i] = (struct uswap_swap_io){ .pages = pages[i], .order = 0 };
		t_eq(uswap_swap_out_batch(u, io, N, flags), N);
		spent = cluster_locks(u) - before;
		printf("# batch, flags %u: %llu cluster locks for %d folios\n", flags,
		       (unsigned long long)spent, N);
		t_true(spent >= 2 * N && spent <= 2 * N + 8);

		before = cluster_locks(u);
		t_eq(uswap_swap_out(u, pages[0], 0, flags, &e), 0);
		t_eq_u64(cluster_locks(u) - before, 2);
		t_eq(uswap_swap_free(u, e, 0), 0);
		for (unsigned int i = 0; i < N; i++)
			t_eq(uswap_swap_free(u, io[i].entry, 0), 0);
	}
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

static void test_batch_bad_arguments_change_nothing(void **state)
{
	unsigned char page[USWAP_PAGE_SIZE] = { 1 };
	struct uswap_swap_io io[3] = {
		{ .pages = page, .order = 0 },
		{ .pages = NULL, .order = 0 },
		{ .pages = page, .order = 0 },
	};
	struct uswap *u = t_create(2, 0);

	swapon_backend(u, t_backend_open(T_RAM, DEV_SLOTS, false), 0);
	t_eq(uswap_swap_out_batch(u, NULL, 1, 0), -EINVAL);
	t_eq(uswap_swap_out_batch(u, io, 3, 0), -EINVAL);
	io[1].pages = page;
	io[1].order = USWAP_MAX_ORDER + 1;
	t_eq(uswap_swap_out_batch(u, io, 3, 0), -EINVAL);
	t_eq(uswap_swap_out_batch(u, io, 1, 0x80), -EINVAL);
	t_eq_u64(t_total_inuse(u), 0);
	t_eq(uswap_swap_out_batch(u, io, 0, 0), 0);
	t_eq(uswap_swap_in_batch(u, NULL, 1), -EINVAL);
	t_eq(uswap_swap_in_batch(u, io, 3), -EINVAL);

	/* A swap-in batch with an entry not in use: that one is -ENOENT. */
	io[1].order = 0;
	t_eq(uswap_swap_out_batch(u, io, 3, 0), 3);
	t_eq(uswap_swap_free(u, io[1].entry, 0), 0);
	t_eq(uswap_swap_in_batch(u, io, 3), 2);
	t_eq(io[0].result, 0);
	t_eq(io[1].result, -ENOENT);
	t_eq(io[2].result, 0);
	t_eq(uswap_swap_free(u, io[0].entry, 0), 0);
	t_eq(uswap_swap_free(u, io[2].entry, 0), 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* Swap-outs and swap-ins stay in flight on an io_uring file between
 * calls (a file's completions run only when someone reaps), a full queue
 * takes nothing more, and every answer comes back exactly once. */
static void test_queue_keeps_requests_in_flight_across_calls(void **state)
{
	struct backend *be = t_backend_open(T_FILE_URING, DEV_SLOTS, false);
	struct uswap_swap_io extra = { .pages = NULL }, *done[NR], *p[NR], *pe = &extra;
	struct uswap *u = t_create(2, 0);
	int type = swapon_backend(u, be, 0);
	struct file_backend_info fi;
	struct uswap_swapq *q;
	unsigned int seen = 0;
	struct batch b;
	int got;

	t_eq(uswap_swapq_create(u, NR, &q), 0);
	batch_make(&b, 31);
	extra.pages = b.want[0];
	t_eq(uswap_swapq_out(q, batch_ptrs(&b, p, 0, NR), NR, 0), NR);
	t_eq(uswap_swapq_pending(q), NR);
	t_eq(uswap_swapq_space(q), 0);
	t_eq(uswap_swapq_out(q, &pe, 1, 0), 0); /* full: nothing taken */
	if (file_backend_info(be, &fi) == 0 && fi.uring)
		t_true(atomic_load(&u->devs[type]->io_inflight) > 0);
	while (seen < NR) {
		got = uswap_swapq_reap(q, 1, done, NR);
		t_true(got >= 1);
		for (int i = 0; i < got; i++) {
			t_true(done[i] >= b.io && done[i] < b.io + NR);
			t_eq(done[i]->result, 0);
		}
		seen += (unsigned int)got;
	}
	t_eq(uswap_swapq_pending(q), 0);
	t_eq(uswap_swapq_reap(q, 1, done, NR), 0); /* nothing outstanding */
	t_eq_u64(atomic_load(&u->devs[type]->io_inflight), 0);
	for (unsigned int i = 0; i < NR; i++)
		for (unsigned int j = 0; j < i; j++)
			t_true(b.io[j].entry.val != b.io[i].entry.val);

	batch_for_swap_in(&b);
	t_eq(uswap_swapq_in(q, batch_ptrs(&b, p, 0, NR), NR), NR);
	t_eq(uswap_swapq_reap(q, NR, done, NR), NR);
	for (unsigned int i = 0; i < NR; i++) {
		t_eq(b.io[i].result, 0);
		t_assert_same_bytes(b.got[i], b.want[i], folio_bytes(b.io[i].order), "queued");
	}
	if (file_backend_info(be, &fi) == 0 && fi.uring)
		t_eq_u64(fi.async_submitted, 2 * NR);
	uswap_swapq_destroy(q);
	batch_free_slots(u, &b);
	t_eq_u64(t_total_inuse(u), 0);
	t_check(u);
	uswap_destroy(u);
	batch_free(&b);
}

/* A queue answers as the batch calls do: writes failing on the first
 * device are stored below, an entry not in use is -ENOENT, and bad
 * arguments take nothing. */
static void test_queue_answers_as_the_batch_calls(void **state)
{
	struct faulty_opts fo = { .write_error_rate = 1.0, .seed = t_env_seed() };
	struct uswap *u = t_create(2, 0);
	int bad = swapon_backend(u, faulty_ram(&fo), 10);
	int good = swapon_backend(u, t_backend_open(T_RAM, DEV_SLOTS, false), 0);
	struct uswap_swap_io *done[NR], nopage = { .pages = NULL }, *pn = &nopage, *p[NR];
	struct uswap_swapq *q;
	struct batch b;

	t_eq(uswap_swapq_create(u, 0, &q), -EINVAL);
	t_eq(uswap_swapq_create(u, 4097, &q), -EINVAL);
	t_eq(uswap_swapq_create(NULL, 8, &q), -EINVAL);
	t_eq(uswap_swapq_create(u, 16, &q), 0);
	t_eq(uswap_swapq_out(q, &pn, 1, 0), -EINVAL);
	t_eq(uswap_swapq_in(q, &pn, 1), -EINVAL);
	t_eq(uswap_swapq_out(NULL, &pn, 1, 0), -EINVAL);
	t_eq(uswap_swapq_out(q, NULL, 1, 0), -EINVAL);
	t_eq(uswap_swapq_reap(q, 0, NULL, 1), -EINVAL);
	t_eq(uswap_swapq_pending(q), 0);

	batch_make(&b, 13);
	for (unsigned int i = 0; i < NR; i += 16) {
		t_eq(uswap_swapq_out(q, batch_ptrs(&b, p, i, 16), 16, 0), 16);
		t_eq(uswap_swapq_reap(q, 16, done, 16), 16);
	}
	for (unsigned int i = 0; i < NR; i++) {
		t_eq(b.io[i].result, 0);
		t_eq(uswap_entry_type(b.io[i].entry), (unsigned int)good);
	}
	t_true(t_info(u, bad).write_errors > 0);
	t_eq_u64(t_info(u, bad).inuse, 0);

	t_eq(uswap_swap_free(u, b.io[1].entry, b.io[1].order), 0);
	batch_for_swap_in(&b);
	t_eq(uswap_swapq_in(q, batch_ptrs(&b, p, 0, 3), 3), 3);
	t_eq(uswap_swapq_reap(q, 3, done, NR), 3);
	t_eq(b.io[0].result, 0);
	t_eq(b.io[1].result, -ENOENT);
	t_eq(b.io[2].result, 0);
	t_assert_same_bytes(b.got[2], b.want[2], folio_bytes(b.io[2].order), "queued in");
	uswap_swapq_destroy(q);
	for (unsigned int i = 0; i < NR; i++)
		if (i != 1)
			t_eq(uswap_swap_free(u, b.io[i].entry, b.io[i].order), 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
	batch_free(&b);
}

/* A read in flight on a device whose last entry is freed meanwhile:
 * swapoff completes the read before the backend goes, and the queue's
 * later reap finds it answered with the data, touching nothing freed
 * (ASan). */
static void test_swapoff_waits_for_a_read_in_flight(void **state)
{
	unsigned char *want = t_buf_alloc(folio_bytes(4), false);
	unsigned char *got = t_buf_alloc(folio_bytes(4), false);
	struct uswap *u = t_create(2, 0);
	int type = swapon_backend(u, t_backend_open(T_FILE_URING, DEV_SLOTS, false), 0);
	struct uswap_swap_io io = { .pages = got, .order = 4 }, *done[1], *pio = &io;
	struct uswap_swapq *q;
	uint64_t seed = 3;

	t_fill_folio(want, 4, &seed);
	t_eq(uswap_swap_out(u, want, 4, 0, &io.entry), 0);
	t_eq(uswap_swapq_create(u, 4, &q), 0);
	t_eq(uswap_swapq_in(q, &pio, 1), 1);
	t_eq(uswap_swap_free(u, io.entry, 4), 0);
	t_eq(uswap_swapoff(u, type), 0);
	t_eq(uswap_swapq_reap(q, 1, done, 1), 1);
	t_true(done[0] == &io);
	t_eq(io.result, 0);
	t_assert_same_bytes(got, want, folio_bytes(4), "read across swapoff");
	uswap_swapq_destroy(q);
	uswap_destroy(u);
	t_buf_free(want, false);
	t_buf_free(got, false);
}

/* A swap-out not yet answered holds its slots by a pin alone: a swap-in
 * of its entry (swapoff's owner may try one) is -ENOENT, never the
 * device's empty slot read as data; after the reap it reads the folio. On
 * zram with workers the write may not even have run yet. */
static void in_flight_write_reads_enoent(const char *spec)
{
	struct uswap *u = t_create(2, 0);
	unsigned char *want = t_buf_alloc(folio_bytes(0), false);
	unsigned char *got = t_buf_alloc(folio_bytes(0), false);
	struct uswap_swap_io io = { .pages = want, .order = 0 }, *p = &io, *done[1];
	struct uswap_swapq *q;
	char err[256];
	uint64_t seed = 21;

	t_true(uswap_swapon_spec(u, spec, err, sizeof(err)) >= 0);
	t_fill_folio(want, 0, &seed);
	t_eq(uswap_swapq_create(u, 4, &q), 0);
	t_eq(uswap_swapq_out(q, &p, 1, 0), 1);
	t_eq(uswap_swap_in(u, io.entry, 0, got), -ENOENT);
	t_eq(uswap_swapq_reap(q, 1, done, 1), 1);
	t_eq(io.result, 0);
	t_eq(uswap_swap_in(u, io.entry, 0, got), 0);
	t_assert_same_bytes(got, want, folio_bytes(0), spec);
	t_eq(uswap_swap_free(u, io.entry, 0), 0);
	uswap_swapq_destroy(q);
	uswap_destroy(u);
	t_buf_free(want, false);
	t_buf_free(got, false);
}

static void test_an_unanswered_swap_out_is_not_read_as_data(void **state)
{
	in_flight_write_reads_enoent("ram:16M");
	in_flight_write_reads_enoent("zram:16M:workers=2");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_round_trips_on_every_backend_kind),
		cmocka_unit_test(test_batch_with_failed_writes_stores_every_folio),
		cmocka_unit_test(test_batch_failed_reads_are_eio_for_exactly_those_folios),
		cmocka_unit_test(test_a_swapped_out_folio_costs_two_cluster_locks),
		cmocka_unit_test(test_batch_bad_arguments_change_nothing),
		cmocka_unit_test(test_queue_keeps_requests_in_flight_across_calls),
		cmocka_unit_test(test_queue_answers_as_the_batch_calls),
		cmocka_unit_test(test_swapoff_waits_for_a_read_in_flight),
		cmocka_unit_test(test_an_unanswered_swap_out_is_not_read_as_data),
	};
	return t_run(tests);
}
