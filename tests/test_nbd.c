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
 * Issue 29: an export holds one instance's claim in block 0, so a second
 * open (same process or a forked child) is refused with -EBUSY naming
 * the owner's pid until the first closes, and a dead pid's claim is taken
 * over; a server restarted empty (claim gone) makes every read -EIO,
 * never zeroes; a stopped server makes a read with timeout=1 answer -EIO
 * instead of hanging; with fds 0-2 closed the backend's sockets land on
 * fds >= 3, at open and at a reconnect.
 * Skips when nbdkit is not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Open @spec as a bare backend (no device). Return: uswap_backend_open()'s
 * result; the backend in *@b on success. */
static int open_backend(const char *spec, struct backend **b, char *err, size_t errlen)
{
	struct uswap_backend *ub = NULL;
	int rc = uswap_backend_open(spec, &ub, NULL, err, errlen);

	*b = (struct backend *)ub;
	return rc;
}

/* Does @b's print_stats output hold the line @line? */
static bool stats_have(struct backend *b, const char *line)
{
	char buf[4096] = { 0 }, want[128];
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	t_true(f != NULL);
	b->ops->print_stats(b, f);
	fclose(f);
	snprintf(want, sizeof(want), "%s\n", line);
	return strstr(buf, want) != NULL;
}

/* Fork a child that runs @fn(@arg) and _exits with its result; return
 * the child's exit status (-1: it did not exit normally). */
static int in_child(int (*fn)(void *arg), void *arg)
{
	pid_t pid = fork();
	int st;

	t_true(pid >= 0);
	if (pid == 0)
		_exit(fn(arg));
	t_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Child: open the spec @arg; exit 0 if refused with -EBUSY naming the
 * parent's pid, else 1. */
static int child_expects_busy(void *arg)
{
	char err[512], want[96];
	struct backend *b;
	int rc = open_backend(arg, &b, err, sizeof(err));

	snprintf(want, sizeof(want), "in use by another uswap instance (pid %d)",
		 (int)getppid());
	if (rc == 0)
		b->ops->close(b);
	return rc == -EBUSY && strstr(err, want) ? 0 : 1;
}

/* Child: open the spec @arg and exit without closing: its claim stays in
 * block 0 with a pid that is gone once reaped. */
static int child_opens_and_dies(void *arg)
{
	char err[512];
	struct backend *b;

	return open_backend(arg, &b, err, sizeof(err)) ? 1 : 0;
}

static void test_nbd_second_open_is_refused_until_the_first_closes(void **state)
{
	struct t_nbdkit s = { 0 };
	struct backend *b1, *b2;
	char err[512], want[96];

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start(&s, "64M", false);
	if (open_backend(s.uri, &b1, err, sizeof(err)))
		fail_msg("open %s: %s", s.uri, err);
	/* The same process again, and a forked child: both refused. */
	t_eq(open_backend(s.uri, &b2, err, sizeof(err)), -EBUSY);
	snprintf(want, sizeof(want), "in use by another uswap instance (pid %d)",
		 (int)getpid());
	if (!strstr(err, want) || !strstr(err, s.sock))
		fail_msg("message '%s' lacks '%s' or the URI", err, want);
	t_eq(in_child(child_expects_busy, s.uri), 0);
	b1->ops->close(b1); /* clears the claim */
	if (open_backend(s.uri, &b2, err, sizeof(err)))
		fail_msg("open after close: %s", err);
	b2->ops->close(b2);
	t_nbdkit_stop(&s);
}

static void test_nbd_claim_of_a_dead_pid_is_taken_over(void **state)
{
	struct t_nbdkit s = { 0 };
	struct backend *b, *b2;
	char err[512];

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start(&s, "64M", false);
	t_eq(in_child(child_opens_and_dies, s.uri), 0); /* reaped: pid gone */
	if (open_backend(s.uri, &b, err, sizeof(err)))
		fail_msg("stale claim not taken over: %s", err);
	/* ... and the claim is ours now. */
	t_eq(open_backend(s.uri, &b2, err, sizeof(err)), -EBUSY);
	b->ops->close(b);
	t_nbdkit_stop(&s);
}

/* Swap out @n pages of text on @u: io[i] holds their entries. */
static void swap_out_pages(struct uswap *u, struct uswap_swap_io *io,
			   unsigned char (*page)[USWAP_PAGE_SIZE], unsigned int n,
			   uint64_t seed)
{
	for (unsigned int i = 0; i < n; i++) {
		t_fill_page(page[i], T_PAGE_TEXT, &seed);
		io[i] = (struct uswap_swap_io){ .pages = page[i], .order = 0 };
	}
	t_eq(uswap_swap_out_batch(u, io, n, 0), n);
}

/* Every page of @io on the failed device reads -EIO, one by one and as a
 * batch (an error, not the restarted server's zeroes); then each is
 * freed. */
static void reads_all_fail(struct uswap *u, struct uswap_swap_io *io, unsigned int n)
{
	static unsigned char back[64][USWAP_PAGE_SIZE];

	t_true(n <= 64);
	for (unsigned int i = 0; i < n / 2; i++)
		t_eq(uswap_swap_in(u, io[i].entry, 0, back[i]), -EIO);
	for (unsigned int i = n / 2; i < n; i++)
		io[i].pages = back[i];
	uswap_swap_in_batch(u, io + n / 2, n - n / 2);
	for (unsigned int i = n / 2; i < n; i++)
		t_eq(io[i].result, -EIO);
	for (unsigned int i = 0; i < n; i++) {
		t_eq(uswap_swap_free(u, io[i].entry, 0), 0);
	}
}

/* A new page swaps out to the ram device below and reads back. */
static void writes_go_elsewhere(struct uswap *u, int ram)
{
	static unsigned char page[USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];
	uint64_t seed = 3;
	uswap_entry_t e;

	t_fill_page(page, T_PAGE_TEXT, &seed);
	t_eq(uswap_swap_out(u, page, 0, 0, &e), 0);
	t_eq(uswap_entry_type(e), ram);
	t_eq(uswap_swap_in(u, e, 0, back), 0);
	t_assert_same_bytes(back, page, USWAP_PAGE_SIZE, "on ram");
	t_eq(uswap_swap_free(u, e, 0), 0);
}

static void test_nbd_server_restarted_empty_reads_eio_never_zeroes(void **state)
{
	enum { N = 32 };
	static unsigned char page[N][USWAP_PAGE_SIZE];
	struct uswap_swap_io io[N];
	struct t_nbdkit s = { 0 };
	char spec[256];
	struct backend *b;
	struct uswap *u;
	int ram;

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start(&s, "64M", false);
	u = t_create(2, 0);
	snprintf(spec, sizeof(spec), "%s:prio=10", s.uri);
	t_swapon_spec(u, spec, &b);
	ram = t_swapon_spec(u, "ram:16M:prio=0", NULL);
	swap_out_pages(u, io, page, N, 21);

	t_nbdkit_restart(&s); /* memory plugin: comes back empty */
	reads_all_fail(u, io, N);
	t_true(stats_have(b, "failed claim-lost"));
	writes_go_elsewhere(u, ram);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
	t_nbdkit_stop(&s);
}

static void test_nbd_stopped_server_times_out_with_eio(void **state)
{
	enum { N = 16 };
	static unsigned char page[N][USWAP_PAGE_SIZE];
	struct uswap_swap_io io[N];
	struct t_nbdkit s = { 0 };
	char spec[256], err[512];
	struct backend *b;
	struct uswap *u;
	int ram;

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start(&s, "64M", false);
	snprintf(spec, sizeof(spec), "%s:timeout=3601", s.uri);
	t_eq(open_backend(spec, &b, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "timeout") != NULL);

	u = t_create(2, 0);
	snprintf(spec, sizeof(spec), "%s:prio=10:timeout=1", s.uri);
	t_swapon_spec(u, spec, &b);
	ram = t_swapon_spec(u, "ram:16M:prio=0", NULL);
	t_true(stats_have(b, "timeout_s 1"));
	swap_out_pages(u, io, page, N, 22);

	t_nbdkit_pause(&s); /* hangs without a bounded wait */
	reads_all_fail(u, io, N);
	t_true(stats_have(b, "failed timeout"));
	writes_go_elsewhere(u, ram);
	t_nbdkit_resume(&s);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
	t_nbdkit_stop(&s);
}

/* Is every one of fds 0, 1, 2 closed? */
static bool stdio_closed(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			return false;
	return true;
}

struct stdio_child {
	const char *spec;
	int ready[2], go[2]; /* pipes: child -> parent, parent -> child */
};

/* Child with fds 0-2 closed: open, tell the parent, wait for its restart
 * of the server, write and read a page (a reconnect). Exit: 0, or the
 * step that failed. */
static int child_with_stdio_closed(void *arg)
{
	struct stdio_child *c = arg;
	static unsigned char page[USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];
	struct backend *b;
	char err[512], ch = 0;
	int rc;

	close(0);
	close(1);
	close(2);
	if (open_backend(c->spec, &b, err, sizeof(err)))
		return 2;
	if (!stdio_closed())
		return 3; /* a socket of the first connect took fd 0, 1 or 2 */
	memset(page, 0x5a, sizeof(page));
	if (b->ops->write(b, 1, 0, page) || write(c->ready[1], &ch, 1) != 1 ||
	    read(c->go[0], &ch, 1) != 1)
		return 4;
	rc = b->ops->read(b, 1, 0, back); /* connects again */
	if (rc || memcmp(back, page, sizeof(page)))
		return 5;
	if (!stdio_closed())
		return 6; /* a reconnect's socket took one */
	b->ops->close(b);
	return 0;
}

static void test_nbd_sockets_never_take_fds_0_to_2(void **state)
{
	struct t_nbdkit s = { 0 };
	struct stdio_child c = { 0 };
	pid_t pid;
	char ch;
	int st;

	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start_file(&s, 64u << 20); /* keeps the claim over a restart */
	c.spec = s.uri;
	t_eq(pipe(c.ready), 0);
	t_eq(pipe(c.go), 0);
	pid = fork();
	t_true(pid >= 0);
	if (pid == 0)
		_exit(child_with_stdio_closed(&c));
	close(c.ready[1]);
	close(c.go[0]);
	if (read(c.ready[0], &ch, 1) == 1) { /* else the child failed early */
		t_nbdkit_restart(&s);
		t_eq(write(c.go[1], &ch, 1), 1);
	}
	close(c.ready[0]);
	close(c.go[1]);
	t_eq(waitpid(pid, &st, 0), pid);
	t_nbdkit_stop(&s);
	t_true(WIFEXITED(st));
	if (WEXITSTATUS(st))
		fail_msg("child with fds 0-2 closed failed at step %d (3, 6: a socket "
			 "on fd 0-2)", WEXITSTATUS(st));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nbd_round_trips_through_the_swap_path),
		cmocka_unit_test(test_nbd_refuses_bad_exports_with_a_reason),
		cmocka_unit_test(test_nbd_server_killed_fails_cleanly),
		cmocka_unit_test(test_nbd_connects_again_after_the_server_restarts),
		cmocka_unit_test(test_nbd_second_open_is_refused_until_the_first_closes),
		cmocka_unit_test(test_nbd_claim_of_a_dead_pid_is_taken_over),
		cmocka_unit_test(test_nbd_server_restarted_empty_reads_eio_never_zeroes),
		cmocka_unit_test(test_nbd_stopped_server_times_out_with_eio),
		cmocka_unit_test(test_nbd_sockets_never_take_fds_0_to_2),
	};
	return t_run(tests);
}
