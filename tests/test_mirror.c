// SPDX-License-Identifier: MIT
/*
 * Description: the mirror wrapper (src/dev/mirror.c) under the swap path:
 * folios round-trip one by one and in batches; when one leg starts
 * failing, every folio still reads back intact from the other, the leg is
 * marked failed and the failover counted, and the swap path sees no
 * error; when both legs fail, swap-outs answer -EIO (the caller keeps its
 * pages) and swap-ins -EIO, never other bytes. Over two nbdkit servers
 * (skipped without nbdkit): one killed in the middle loses nothing, both
 * killed give errors and no hang.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dev/backend.h"
#include "t_dev.h"

#define N 96

static unsigned char pages[N][USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];

/* Swap on @spec; its backend in *@b. */
static int swapon_mirror(struct uswap *u, const char *spec, struct backend **b)
{
	struct uswap_backend *ub;
	char err[512];
	int prio, type;

	if (uswap_backend_open(spec, &ub, &prio, err, sizeof(err)))
		fail_msg("open %s: %s", spec, err);
	struct uswap_swapon_args a = { .prio = prio, .backend = ub };

	type = uswap_swapon(u, &a);
	t_true(type >= 0);
	*b = (struct backend *)ub;
	return type;
}

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

	swapon_mirror(u, "mirror::ram:16M|zram:16M", &b);
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

	type = swapon_mirror(u, "mirror::faulty:fail_nth=40,persistent:ram:16M|ram:16M", &b);
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

	swapon_mirror(u, "mirror::faulty:fail_nth=20,persistent:ram:16M|"
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

static void test_mirror_of_two_nbd_servers_survives_one(void **state)
{
	struct t_nbdkit s[2] = { { 0 } };
	struct uswap_swap_io io[N];
	char spec[512];
	struct uswap *u;
	struct backend *b;
	bool failed[2];
	uint64_t failovers;

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start(&s[0], "64M", false);
	t_nbdkit_start(&s[1], "64M", false);
	snprintf(spec, sizeof(spec), "mirror::%s|%s", s[0].uri, s[1].uri);
	u = t_create(2, 0);
	swapon_mirror(u, spec, &b);
	fill_all(4);
	t_eq(swap_out_all(u, io, 0), N);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mirror_round_trips_and_reads_both_legs),
		cmocka_unit_test(test_mirror_fails_over_to_the_healthy_leg),
		cmocka_unit_test(test_mirror_with_both_legs_failed_answers_eio),
		cmocka_unit_test(test_mirror_of_two_nbd_servers_survives_one),
	};
	return t_run(tests);
}
