// SPDX-License-Identifier: MIT
/*
 * Description: the nbd backend (src/dev/nbd.c) against a real NBD server,
 * nbdkit's memory plugin on a unix socket in a private directory, started
 * by each test and killed at its end (--exit-with-parent as well): folios
 * of orders 0 and 4 round-trip through the swap path one by one and in
 * batches, over one connection and two; a read-only, a too small and an
 * unreachable export are refused with a message; when the server is
 * killed under use, swap-outs go to the device below, swap-ins of what
 * was on it answer -EIO (never other bytes), and nothing hangs; when the
 * server restarts with its data, reads and writes connect again.
 * Skips when nbdkit is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dev/backend.h"
#include "t_dev.h"

static int swapon_spec(struct uswap *u, const char *spec, char *err, size_t errlen)
{
	return uswap_swapon_spec(u, spec, err, errlen);
}

/* Out and back, single calls and a batch, orders 0 and 4; every byte
 * compared, everything freed. */
static void round_trip(struct uswap *u)
{
	enum { N = 32 };
	struct uswap_swap_io io[N];
	unsigned char *want[N], *got[N];
	uint64_t rng = 11;

	for (unsigned int i = 0; i < N; i++) {
		unsigned int order = i % 2 ? 4 : 0;

		want[i] = t_buf_alloc(folio_bytes(order), false);
		got[i] = t_buf_alloc(folio_bytes(order), false);
		t_fill_folio(want[i], order, &rng);
		io[i] = (struct uswap_swap_io){ .pages = want[i], .order = order };
	}
	/* The first half one by one, the second half as one batch. */
	for (unsigned int i = 0; i < N / 2; i++)
		t_eq(uswap_swap_out(u, want[i], io[i].order, 0, &io[i].entry), 0);
	t_eq(uswap_swap_out_batch(u, io + N / 2, N / 2, 0), N / 2);
	for (unsigned int i = 0; i < N; i++) {
		memset(got[i], 0, folio_bytes(io[i].order));
		io[i].pages = got[i];
	}
	for (unsigned int i = 0; i < N / 2; i++)
		t_eq(uswap_swap_in(u, io[i].entry, io[i].order, got[i]), 0);
	t_eq(uswap_swap_in_batch(u, io + N / 2, N / 2), N / 2);
	for (unsigned int i = 0; i < N; i++) {
		if (i >= N / 2)
			t_eq(io[i].result, 0); /* read from the server */
		t_assert_same_bytes(got[i], want[i], folio_bytes(io[i].order), "nbd");
		t_eq(uswap_swap_free(u, io[i].entry, io[i].order), 0);
		t_buf_free(want[i], false);
		t_buf_free(got[i], false);
	}
	t_eq_u64(t_total_inuse(u), 0);
}

static void test_nbd_round_trips_through_the_swap_path(void **state)
{
	struct t_nbdkit s = { 0 };
	char spec[256], err[512];
	struct uswap *u;
	int type;

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start(&s, "64M", false);
	for (int conns = 1; conns <= 2; conns++) {
		u = t_create(2, 0);
		snprintf(spec, sizeof(spec), "%s:conns=%d", s.uri, conns);
		type = swapon_spec(u, spec, err, sizeof(err));
		if (type < 0)
			fail_msg("swapon %s: %s", spec, err);
		/* 64 MiB export: its slots, slot 0 unused */
		t_eq_u64(t_info(u, type).nr_slots, (64u << 20) / USWAP_PAGE_SIZE);
		round_trip(u);
		t_check(u);
		t_eq(uswap_swapoff(u, type), 0);
		uswap_destroy(u);
	}
	t_nbdkit_stop(&s);
}

static void test_nbd_refuses_bad_exports_with_a_reason(void **state)
{
	struct t_nbdkit s = { 0 };
	struct uswap *u;
	char err[512];

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	u = t_create(2, 0);
	t_nbdkit_start(&s, "64M", true);
	t_eq(swapon_spec(u, s.uri, err, sizeof(err)), -EROFS);
	t_true(strstr(err, "read-only") != NULL);
	t_nbdkit_stop(&s);

	t_nbdkit_start(&s, "1M", false);
	t_eq(swapon_spec(u, s.uri, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "smaller than") != NULL);
	t_nbdkit_stop(&s); /* the socket is gone now: nobody there */

	t_true(swapon_spec(u, s.uri, err, sizeof(err)) < 0);
	t_true(strstr(err, "cannot connect") != NULL);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* The server dies while it holds folios: later swap-outs land on the
 * device below, reads of what it held are -EIO, nothing else changes. */
static void test_nbd_server_killed_fails_cleanly(void **state)
{
	enum { N = 64 };
	static unsigned char page[N][USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];
	struct uswap_swap_io io[N];
	struct t_nbdkit s = { 0 };
	struct uswap *u;
	char spec[256], err[512];
	int nbd, ram;
	uint64_t rng = 5;

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	u = t_create(2, 0);
	t_nbdkit_start(&s, "64M", false);
	snprintf(spec, sizeof(spec), "%s:prio=10", s.uri);
	nbd = swapon_spec(u, spec, err, sizeof(err));
	if (nbd < 0)
		fail_msg("swapon %s: %s", spec, err);
	ram = swapon_spec(u, "ram:16M:prio=0", err, sizeof(err));
	t_true(ram >= 0);
	for (unsigned int i = 0; i < N; i++) {
		t_fill_page(page[i], T_PAGE_TEXT, &rng);
		io[i] = (struct uswap_swap_io){ .pages = page[i], .order = 0 };
	}
	t_eq(uswap_swap_out_batch(u, io, N / 2, 0), N / 2);
	for (unsigned int i = 0; i < N / 2; i++)
		t_eq(uswap_entry_type(io[i].entry), nbd);

	t_nbdkit_stop(&s);
	t_eq(uswap_swap_out_batch(u, io + N / 2, N / 2, 0), N / 2);
	for (unsigned int i = N / 2; i < N; i++)
		t_eq(uswap_entry_type(io[i].entry), ram); /* failed over */
	t_true(t_info(u, nbd).write_errors > 0);
	for (unsigned int i = 0; i < N; i++) {
		int rc = uswap_swap_in(u, io[i].entry, 0, back);

		if (i < N / 2) {
			t_eq(rc, -EIO); /* gone with the server: an error, no bytes */
		} else {
			t_eq(rc, 0);
			t_assert_same_bytes(back, page[i], USWAP_PAGE_SIZE, "after failover");
		}
		t_eq(uswap_swap_free(u, io[i].entry, 0), 0);
	}
	t_eq_u64(t_total_inuse(u), 0);
	t_eq(uswap_swapoff(u, nbd), 0);
	uswap_destroy(u);
}

/* The server restarts (every connection dropped) and comes back with its
 * data (nbdkit's file plugin): single and batched swap-ins connect again
 * and read every folio back; so do swap-outs after it. */
static void test_nbd_connects_again_after_the_server_restarts(void **state)
{
	enum { N = 64 };
	static unsigned char page[N][USWAP_PAGE_SIZE], back[N][USWAP_PAGE_SIZE];
	struct uswap_swap_io io[N];
	struct t_nbdkit s = { 0 };
	char err[512];
	struct uswap *u;
	uint64_t rng = 9;
	int type;

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start_file(&s, 64u << 20);
	u = t_create(2, 0);
	type = swapon_spec(u, s.uri, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon %s: %s", s.uri, err);
	for (unsigned int i = 0; i < N; i++) {
		t_fill_page(page[i], T_PAGE_TEXT, &rng);
		io[i] = (struct uswap_swap_io){ .pages = page[i], .order = 0 };
	}
	t_eq(uswap_swap_out_batch(u, io, N, 0), N);

	t_nbdkit_restart(&s);
	for (unsigned int i = 0; i < N; i++)
		io[i].pages = back[i];
	t_eq(uswap_swap_in_batch(u, io, N / 2), N / 2); /* queued, cut off, redone */
	t_nbdkit_restart(&s);
	for (unsigned int i = N / 2; i < N; i++) /* synchronous, redone */
		t_eq(uswap_swap_in(u, io[i].entry, 0, back[i]), 0);
	for (unsigned int i = 0; i < N; i++) {
		t_assert_same_bytes(back[i], page[i], USWAP_PAGE_SIZE, "after a restart");
		t_eq(uswap_swap_free(u, io[i].entry, 0), 0);
	}
	t_nbdkit_restart(&s);
	for (unsigned int i = 0; i < N; i++)
		io[i] = (struct uswap_swap_io){ .pages = page[i], .order = 0 };
	t_eq(uswap_swap_out_batch(u, io, N, 0), N); /* writes after a drop */
	t_eq_u64(t_info(u, type).write_errors, 0);
	for (unsigned int i = 0; i < N; i++)
		t_eq(uswap_swap_free(u, io[i].entry, 0), 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
	t_nbdkit_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nbd_round_trips_through_the_swap_path),
		cmocka_unit_test(test_nbd_refuses_bad_exports_with_a_reason),
		cmocka_unit_test(test_nbd_server_killed_fails_cleanly),
		cmocka_unit_test(test_nbd_connects_again_after_the_server_restarts),
	};
	return t_run(tests);
}
