// SPDX-License-Identifier: MIT
/*
 * Description: the mirror wrapper (src/dev/mirror.c) under the swap path:
 * folios round-trip one by one and in batches; when one leg starts
 * failing, every folio still reads back intact from the other, the leg is
 * marked failed and the failover counted, and the swap path sees no
 * error; when both legs fail, swap-outs answer -EIO (the caller keeps its
 * pages) and swap-ins -EIO, never other bytes. A failed leg replaced
 * while another thread writes is copied to in step with the writes: once
 * the copy is done it alone serves every page; a mirror of crypt legs
 * takes a crypt replacement only, and resyncs it. Over two nbdkit servers
 * (skipped without nbdkit): one killed in the middle loses nothing, both
 * killed give errors and no hang; one restarted empty (its claim gone,
 * so it fails with -EIO rather than read zeroes) loses nothing either:
 * every page comes from the other leg, and the restarted leg is failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>

#include "dev/backend.h"
#include "dev/faulty.h"
#include "t_dev.h"

#define N 96

static unsigned char pages[N][USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];


static void fill_all(uint64_t seed)
{
	for (unsigned int i = 0; i < N; i++)
		t_fill_page(pages[i], T_PAGE_TEXT, &seed);
}

/* Half the folios one by one, half in one batch. Return: how many were
 * stored (the rest answered @fail_rc). */
static unsigned int swap_out_all(struct uswap *u, struct uswap_swap_io *io, int fail_rc)
{
	unsigned int stored = 0;

	for (unsigned int i = 0; i < N; i++)
		io[i] = (struct uswap_swap_io){ .pages = pages[i], .order = 0 };
	for (unsigned int i = 0; i < N / 2; i++)
		io[i].result = uswap_swap_out(u, pages[i], 0, 0, &io[i].entry);
	uswap_swap_out_batch(u, io + N / 2, N / 2, 0);
	for (unsigned int i = 0; i < N; i++) {
		if (io[i].result == 0)
			stored++;
		else
			t_eq(io[i].result, fail_rc);
	}
	return stored;
}

/* Every stored folio reads back its own bytes (@want_rc 0), or fails
 * with -EIO (@want_rc -EIO); then it is freed. */
static void read_back_all(struct uswap *u, struct uswap_swap_io *io, int want_rc)
{
	for (unsigned int i = 0; i < N; i++) {
		int rc;

		if (io[i].result)
			continue;
		rc = uswap_swap_in(u, io[i].entry, 0, back);
		t_eq(rc, want_rc);
		if (rc == 0)
			t_assert_same_bytes(back, pages[i], USWAP_PAGE_SIZE, "mirror");
		t_eq(uswap_swap_free(u, io[i].entry, 0), 0);
	}
}

static void test_mirror_round_trips_and_reads_both_legs(void **state)
{
	struct uswap_swap_io io[N];
	struct uswap *u = t_create(2, 0);
	struct backend *b;
	bool failed[2];
	uint64_t failovers;

	t_swapon_spec(u, "mirror::ram:16M|zram:16M", &b);
	fill_all(1);
	t_eq(swap_out_all(u, io, 0), N);
	read_back_all(u, io, 0);
	t_eq(mirror_info(b, failed, &failovers), 0);
	t_true(!failed[0] && !failed[1]);
	t_eq_u64(failovers, 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* Leg 0 fails from its 40th request on: the mirror goes on from leg 1. */
static void test_mirror_fails_over_to_the_healthy_leg(void **state)
{
	struct uswap_swap_io io[N];
	struct uswap *u = t_create(2, 0);
	struct backend *b;
	bool failed[2];
	uint64_t failovers;
	int type;

	type = t_swapon_spec(u, "mirror::faulty:fail_nth=40,persistent:ram:16M|ram:16M", &b);
	fill_all(2);
	t_eq(swap_out_all(u, io, 0), N);
	t_eq(mirror_info(b, failed, &failovers), 0);
	t_true(failed[0] && !failed[1]);
	t_eq_u64(failovers, 1);
	t_eq_u64(t_info(u, type).write_errors, 0); /* the swap path saw none */
	read_back_all(u, io, 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

static void test_mirror_with_both_legs_failed_answers_eio(void **state)
{
	struct uswap_swap_io io[N];
	struct uswap *u = t_create(2, 0);
	struct backend *b;
	bool failed[2];
	uint64_t failovers;

	t_swapon_spec(u, "mirror::faulty:fail_nth=20,persistent:ram:16M|"
		      "faulty:fail_nth=30,persistent:ram:16M", &b);
	fill_all(3);
	/* Leg 0 fails at its 20th write, leg 1 at its 30th: the first folios
	 * are stored, the later ones are refused with -EIO. */
	t_true(swap_out_all(u, io, -EIO) < N);
	t_eq(mirror_info(b, failed, &failovers), 0);
	t_true(failed[0] && failed[1]);
	read_back_all(u, io, -EIO); /* no healthy leg: no bytes */
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* A mirror of two fresh nbdkit exports, swapped on with every page
 * filled with @seed's pattern and swapped out into @io. */
static struct uswap *nbd_mirror_swapped_out(struct t_nbdkit s[2], struct backend **b,
					    struct uswap_swap_io *io, int seed)
{
	char spec[512];
	struct uswap *u;

	t_nbdkit_start(&s[0], "64M", false);
	t_nbdkit_start(&s[1], "64M", false);
	snprintf(spec, sizeof(spec), "mirror::%s|%s", s[0].uri, s[1].uri);
	u = t_create(2, 0);
	t_swapon_spec(u, spec, b);
	fill_all(seed);
	t_eq(swap_out_all(u, io, 0), N);
	return u;
}

static void test_mirror_of_two_nbd_servers_survives_one(void **state)
{
	struct t_nbdkit s[2] = { { 0 } };
	struct uswap_swap_io io[N];
	struct uswap *u;
	struct backend *b;
	bool failed[2];
	uint64_t failovers;

	t_need_kind(DEV_KIND_NBD);
	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	u = nbd_mirror_swapped_out(s, &b, io, 4);
	t_nbdkit_stop(&s[0]); /* one server gone mid-use */
	read_back_all(u, io, 0);
	t_eq(mirror_info(b, failed, &failovers), 0);
	t_eq_u64(failovers, 1);
	t_true(failed[0] != failed[1]);

	fill_all(5);
	t_eq(swap_out_all(u, io, 0), N); /* on the one left */
	t_nbdkit_stop(&s[1]);            /* and now that one too */
	read_back_all(u, io, -EIO);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

static void test_mirror_of_two_nbd_servers_survives_one_restarted_empty(void **state)
{
	struct t_nbdkit s[2] = { { 0 } };
	struct uswap_swap_io io[N];
	struct uswap *u;
	struct backend *b;
	bool failed[2];
	uint64_t failovers;

	t_need_kind(DEV_KIND_NBD);
	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	u = nbd_mirror_swapped_out(s, &b, io, 6);
	t_nbdkit_restart(&s[0]); /* memory plugin: back, but empty */
	read_back_all(u, io, 0);  /* reads alternate: half hit leg 0 first */
	t_eq(mirror_info(b, failed, &failovers), 0);
	t_true(failed[0] && !failed[1]);
	t_eq_u64(failovers, 1);

	fill_all(7);
	t_eq(swap_out_all(u, io, 0), N); /* on leg 1 alone */
	read_back_all(u, io, 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
	t_nbdkit_stop(&s[0]);
	t_nbdkit_stop(&s[1]);
}

struct writer {
	struct uswap *u;
	unsigned char page[N][USWAP_PAGE_SIZE];
	uswap_entry_t entry[N];
	unsigned int rounds;
};

/* Rewrites its N pages (new slots each time, old ones freed) while the
 * resync runs: every write races the copy. */
static void *rewrite_loop(void *arg)
{
	struct writer *w = arg;
	uint64_t seed = 77;

	for (w->rounds = 0; w->rounds < 20; w->rounds++)
		for (unsigned int i = 0; i < N; i++) {
			uswap_entry_t old = w->entry[i];

			t_fill_page(w->page[i], T_PAGE_TEXT, &seed);
			if (uswap_swap_out(w->u, w->page[i], 0, 0, &w->entry[i]))
				t_fail_async("swap-out during the resync");
			if (old.val)
				uswap_swap_free(w->u, old, 0);
		}
	return NULL;
}

/* Leg 0 fails; a new leg replaces it while another thread keeps writing;
 * once the copy is done, the old leg 1 fails too, and every page still
 * reads back from the new leg alone. */
static void test_a_replaced_leg_is_resynced_while_in_use(void **state)
{
	static struct writer w;
	struct uswap_swap_io io[N];
	struct uswap *u = t_create(2, 0);
	struct backend *b;
	char err[512];
	pthread_t th;
	int type;

	t_async_reset();
	type = t_swapon_spec(u, "mirror::faulty::ram:64M|faulty::ram:64M", &b);
	fill_all(6);
	t_eq(swap_out_all(u, io, 0), N);
	t_eq(faulty_fail_nth(mirror_leg(b, 0), 1, true), 0);
	for (unsigned int i = 0; i < N; i++) /* fails over to leg 1 */
		t_eq(uswap_swap_in(u, io[i].entry, 0, back), 0);
	t_eq(uswap_mirror_replace(u, type, "zram:4M", err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "holds") != NULL); /* smaller than the mirror */

	memset(&w, 0, sizeof(w));
	w.u = u;
	t_eq(uswap_mirror_replace(u, type, "ram:64M", err, sizeof(err)), 0);
	pthread_create(&th, NULL, rewrite_loop, &w);
	for (int i = 0; i < 400 && mirror_syncing(b); i++)
		usleep(10000);
	pthread_join(th, NULL);
	t_assert_no_async_failure("writes during the resync");
	t_true(!mirror_syncing(b));
	t_eq(uswap_mirror_replace(u, type, "ram:64M", err, sizeof(err)), -EINVAL);

	t_eq(faulty_fail_nth(mirror_leg(b, 1), 1, true), 0); /* only the new leg now */
	read_back_all(u, io, 0);
	for (unsigned int i = 0; i < N; i++) {
		t_eq(uswap_swap_in(u, w.entry[i], 0, back), 0);
		t_assert_same_bytes(back, w.page[i], USWAP_PAGE_SIZE, "written during resync");
		t_eq(uswap_swap_free(u, w.entry[i], 0), 0);
	}
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* A mirror of encrypted legs takes only an encrypted replacement (the
 * resync would copy the pages, opened, onto a plain one), and the resync
 * copies the slots holding data alone: reading an empty slot of a crypt
 * leg fails, which once failed the healthy leg and lost every page. */
static void test_an_encrypted_mirror_resyncs_onto_an_encrypted_leg_only(void **state)
{
	struct uswap_swap_io io[N];
	struct uswap *u;
	struct backend *b;
	char err[512];
	int type;

	t_need_kind(DEV_KIND_CRYPT);
	u = t_create(2, 0);
	type = t_swapon_spec(u, "mirror::faulty::crypt:ram:64M|faulty::crypt:ram:64M", &b);
	t_true(b->encrypted);
	fill_all(7);
	t_eq(swap_out_all(u, io, 0), N);
	t_eq(faulty_fail_nth(mirror_leg(b, 0), 1, true), 0);
	for (unsigned int i = 0; i < N; i++) /* fails over to leg 1 */
		t_eq(uswap_swap_in(u, io[i].entry, 0, back), 0);
	t_eq(uswap_mirror_replace(u, type, "ram:64M", err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "in the clear") != NULL);
	t_eq(uswap_mirror_replace(u, type, "crypt:ram:64M", err, sizeof(err)), 0);
	for (int i = 0; i < 400 && mirror_syncing(b); i++)
		usleep(10000);
	t_true(!mirror_syncing(b));
	t_true(b->encrypted);
	t_eq(faulty_fail_nth(mirror_leg(b, 1), 1, true), 0); /* only the new leg now */
	read_back_all(u, io, 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* Churn on a full crypt mirror: objects swapped out and in (checked) and
 * freed by CHURN_THREADS threads, more than the device holds. */
#define CHURN_THREADS 8
#define CHURN_OBJS    512

struct churn {
	struct uswap *u;
	_Atomic bool *stop;
	uint64_t rng;
	uswap_entry_t entry[CHURN_OBJS];
	uint64_t version[CHURN_OBJS];
	bool out[CHURN_OBJS];
	unsigned char page[USWAP_PAGE_SIZE];
};

static void churn_stamp(struct churn *c, unsigned int i)
{
	uint64_t seed = (uint64_t)(uintptr_t)c ^ i * 0x9e3779b97f4a7c15ull ^ c->version[i];

	t_fill_page(c->page, T_PAGE_RANDOM, &seed);
}

/* Swap object @i back in and check it; on success it is in memory. */
static void churn_in(struct churn *c, unsigned int i)
{
	unsigned char got[USWAP_PAGE_SIZE];

	if (uswap_swap_in(c->u, c->entry[i], 0, got)) {
		t_fail_async("object %u: swap-in failed: a page lost", i);
		return;
	}
	churn_stamp(c, i);
	if (memcmp(got, c->page, sizeof(got)))
		t_fail_async("object %u: WRONG DATA", i);
	uswap_swap_free(c->u, c->entry[i], 0);
	c->out[i] = false;
	c->version[i]++;
}

static void *churn_main(void *arg)
{
	struct churn *c = arg;

	while (!atomic_load(c->stop) && !t_async_failed()) {
		unsigned int i = (unsigned int)t_rand_below(&c->rng, CHURN_OBJS);

		if (c->out[i]) {
			churn_in(c, i);
			continue;
		}
		churn_stamp(c, i);
		c->out[i] = uswap_swap_out(c->u, c->page, 0, 0, &c->entry[i]) == 0;
	}
	return NULL;
}

/* Legs of a full crypt mirror replaced in turn, four times, while threads
 * free, write and read: each resync copies from the leg the last one
 * filled, and no page is lost. Each of these once failed the source leg
 * (a crypt read of what it never stored) or left the new leg stale, and
 * every page was lost: a discard under way as a resync began; a retired
 * leg's late error failing its replacement; a read or write that chose a
 * leg before a replacement and used it after; a write stored nowhere
 * leaving its slot marked; a write begun under one resync and finished
 * under the next. */
static void test_crypt_mirror_replaced_in_turn_under_churn_loses_nothing(void **state)
{
	static struct churn c[CHURN_THREADS];
	pthread_t th[CHURN_THREADS];
	_Atomic bool stop = false;
	struct uswap *u;
	struct backend *b;
	char err[512];
	bool failed[2];
	uint64_t failovers;
	int type, leg = 0;

	t_need_kind(DEV_KIND_CRYPT);
	u = t_create(2, 0);
	t_async_reset();
	type = t_swapon_spec(u, "mirror::faulty::crypt:ram:8M|faulty::crypt:ram:8M", &b);
	for (int i = 0; i < CHURN_THREADS; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i] = (struct churn){ .u = u, .stop = &stop, .rng = t_env_seed() + (uint64_t)i };
		pthread_create(&th[i], NULL, churn_main, &c[i]);
	}
	for (int round = 0; round < 4 && !t_async_failed(); round++, leg = !leg) {
		t_eq(faulty_fail_nth(mirror_leg(b, leg), 1, true), 0);
		for (int i = 0; i < 1000; i++) { /* the traffic meets the fault */
			t_eq(mirror_info(b, failed, &failovers), 0);
			if (failed[leg])
				break;
			usleep(1000);
		}
		t_true(failed[leg]);
		t_eq(uswap_mirror_replace(u, type, "faulty::crypt:ram:8M", err, sizeof(err)), 0);
		for (int i = 0; i < 2000 && mirror_syncing(b); i++)
			usleep(1000);
		t_true(!mirror_syncing(b));
		t_eq(mirror_info(b, failed, &failovers), 0);
		t_true(!failed[0] && !failed[1]);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < CHURN_THREADS; i++)
		pthread_join(th[i], NULL);
	t_assert_no_async_failure("churn during the resyncs");
	for (int i = 0; i < CHURN_THREADS; i++)
		for (unsigned int k = 0; k < CHURN_OBJS; k++)
			if (c[i].out[k])
				churn_in(&c[i], k);
	t_assert_no_async_failure("read back");
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mirror_round_trips_and_reads_both_legs),
		cmocka_unit_test(test_mirror_fails_over_to_the_healthy_leg),
		cmocka_unit_test(test_mirror_with_both_legs_failed_answers_eio),
		cmocka_unit_test(test_mirror_of_two_nbd_servers_survives_one),
		cmocka_unit_test(test_mirror_of_two_nbd_servers_survives_one_restarted_empty),
		cmocka_unit_test(test_a_replaced_leg_is_resynced_while_in_use),
		cmocka_unit_test(test_an_encrypted_mirror_resyncs_onto_an_encrypted_leg_only),
		cmocka_unit_test(test_crypt_mirror_replaced_in_turn_under_churn_loses_nothing),
	};
	return t_run(tests);
}
