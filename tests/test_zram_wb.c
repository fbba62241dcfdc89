// SPDX-License-Identifier: MIT
/*
 * Description: zram writeback to a lower device (src/dev/zram_wb.c),
 * through the swap path: incompressible pages go down (huge) and exactly
 * they; pages nobody touched for idle= seconds go down while pages read
 * all along stay (idle), counted exactly; over budget= pages go down
 * until the pool is under it; every page reads back intact, from zram or
 * from the lower device; a lower device whose writes fail keeps every
 * page in zram; an NBD export works as the lower device (skipped without
 * nbdkit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dev/backend.h"
#include "dev/zram.h"
#include "t_dev.h"

#define N 128

static unsigned char pages[N][USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];
static uswap_entry_t entry[N];

static struct backend *swapon_wb(struct uswap *u, const char *spec)
{
	struct backend *b;

	t_swapon_spec(u, spec, &b);
	return b;
}

static struct zram_wb_stat wb_stat(struct backend *b)
{
	struct zram_wb_stat st;

	t_eq(zram_wb_stat(b, &st), 0);
	return st;
}

/* Wait (up to @secs) until the lower device holds @want pages. */
static bool wait_bd_count(struct backend *b, uint64_t want, int secs)
{
	for (int i = 0; i < secs * 20; i++) {
		if (wb_stat(b).bd_count >= want)
			return true;
		usleep(50000);
	}
	return false;
}

/* Even pages random (incompressible), odd pages text. */
static void fill_mixed(uint64_t seed)
{
	for (unsigned int i = 0; i < N; i++)
		t_fill_page(pages[i], i % 2 ? T_PAGE_TEXT : T_PAGE_RANDOM, &seed);
}

static void swap_out_all(struct uswap *u)
{
	for (unsigned int i = 0; i < N; i++)
		t_eq(uswap_swap_out(u, pages[i], 0, 0, &entry[i]), 0);
}

static void check_and_free_all(struct uswap *u)
{
	for (unsigned int i = 0; i < N; i++) {
		t_eq(uswap_swap_in(u, entry[i], 0, back), 0);
		t_assert_same_bytes(back, pages[i], USWAP_PAGE_SIZE, "after writeback");
		t_eq(uswap_swap_free(u, entry[i], 0), 0);
	}
	t_eq_u64(t_total_inuse(u), 0);
}

static void test_incompressible_pages_and_only_they_go_down(void **state)
{
	struct uswap *u = t_create(2, 0);
	struct backend *b = swapon_wb(u, "writeback:huge:zram:16M|ram:16M");
	struct zram_wb_stat st;

	fill_mixed(1);
	swap_out_all(u);
	t_true(wait_bd_count(b, N / 2, 10));
	usleep(500000); /* more scans: nothing else may follow */
	st = wb_stat(b);
	t_eq_u64(st.bd_count, N / 2);
	t_eq_u64(st.huge, N / 2);
	t_eq_u64(st.idle + st.budget + st.failed, 0);
	check_and_free_all(u);
	st = wb_stat(b);
	t_eq_u64(st.bd_reads, N / 2);
	t_eq_u64(st.bd_count, 0); /* freed slots forget their copy */
	uswap_destroy(u);
}

/* Half the pages are read every 100 ms; after idle=2 seconds exactly the
 * other half has gone down. */
static void test_idle_pages_go_down_and_used_ones_stay(void **state)
{
	struct uswap *u = t_create(2, 0);
	struct backend *b = swapon_wb(u, "writeback:idle=2:zram:16M|ram:16M");
	struct zram_wb_stat st;
	uint64_t seed = 2;

	for (unsigned int i = 0; i < N; i++)
		t_fill_page(pages[i], T_PAGE_TEXT, &seed);
	swap_out_all(u);
	for (int round = 0; round < 45; round++) { /* 4.5 s */
		for (unsigned int i = 0; i < N; i += 2)
			t_eq(uswap_swap_in(u, entry[i], 0, back), 0);
		usleep(100000);
	}
	st = wb_stat(b);
	t_eq_u64(st.idle, N / 2);
	t_eq_u64(st.bd_count, N / 2);
	t_eq_u64(st.bd_reads, 0); /* none of the read pages was down */
	check_and_free_all(u);
	uswap_destroy(u);
}

static void test_over_budget_pages_go_down_until_under_it(void **state)
{
	enum { M = 4096 }; /* 16 MiB of text, the budget 4 MiB */
	struct uswap *u = t_create(2, 0);
	struct backend *b = swapon_wb(u, "writeback:budget=4M:zram:32M|ram:32M");
	unsigned char *data = malloc((size_t)M * USWAP_PAGE_SIZE);
	uswap_entry_t *e = calloc(M, sizeof(*e));
	struct zram_mm_stat mm;
	uint64_t seed = 3;

	for (unsigned int i = 0; i < M; i++) {
		t_fill_page(data + (size_t)i * USWAP_PAGE_SIZE, T_PAGE_TEXT, &seed);
		t_eq(uswap_swap_out(u, data + (size_t)i * USWAP_PAGE_SIZE, 0, 0, &e[i]), 0);
	}
	for (int i = 0; i < 100; i++) {
		t_eq(zram_mm_stat(b, &mm), 0);
		if (mm.mem_used_total <= (4u << 20))
			break;
		usleep(50000);
	}
	t_true(mm.mem_used_total <= (4u << 20));
	t_true(wb_stat(b).budget > 0);
	for (unsigned int i = 0; i < M; i++) {
		t_eq(uswap_swap_in(u, e[i], 0, back), 0);
		t_assert_same_bytes(back, data + (size_t)i * USWAP_PAGE_SIZE,
				    USWAP_PAGE_SIZE, "over budget");
		t_eq(uswap_swap_free(u, e[i], 0), 0);
	}
	uswap_destroy(u);
	free(data);
	free(e);
}

static void test_a_failing_lower_device_keeps_pages_in_zram(void **state)
{
	struct uswap *u = t_create(2, 0);
	struct backend *b = swapon_wb(u, "writeback:huge:zram:16M|faulty:write=1:ram:16M");
	struct zram_wb_stat st;

	fill_mixed(4);
	swap_out_all(u);
	for (int i = 0; i < 100 && wb_stat(b).failed < N / 2; i++)
		usleep(50000);
	st = wb_stat(b);
	t_true(st.failed >= N / 2);
	t_eq_u64(st.bd_count, 0);
	check_and_free_all(u);
	uswap_destroy(u);
}

static void test_an_nbd_export_as_the_lower_device(void **state)
{
	struct t_nbdkit s = { 0 };
	char spec[512];
	struct uswap *u;
	struct backend *b;

	t_need_kind(DEV_KIND_NBD);
	if (!t_have_nbdkit()) {
		t_skip("nbdkit not installed (Debian package nbdkit)");
		return;
	}
	t_nbdkit_start(&s, "64M", false);
	snprintf(spec, sizeof(spec), "writeback:huge:zram:16M|%s", s.uri);
	u = t_create(2, 0);
	b = swapon_wb(u, spec);
	fill_mixed(5);
	swap_out_all(u);
	t_true(wait_bd_count(b, N / 2, 10));
	check_and_free_all(u);
	t_eq_u64(wb_stat(b).bd_reads, N / 2);
	uswap_destroy(u);
	t_nbdkit_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incompressible_pages_and_only_they_go_down),
		cmocka_unit_test(test_idle_pages_go_down_and_used_ones_stay),
		cmocka_unit_test(test_over_budget_pages_go_down_until_under_it),
		cmocka_unit_test(test_a_failing_lower_device_keeps_pages_in_zram),
		cmocka_unit_test(test_an_nbd_export_as_the_lower_device),
	};
	return t_run(tests);
}
