/* SPDX-License-Identifier: MIT */
/*
 * Description: devices (alloc/device.c): what swapon reports, what the
 * /proc/swaps-style table lists, and that an empty device can be swapped
 * off, is gone afterwards (no slot on it handed out) and its type reused.
 * The concurrent swapon/swapoff case is test_swapoff_race.c.
 */
#include "t_util.h"

#include <stdlib.h>
#include <string.h>

static struct uswap *new_instance(void **state)
{
	struct uswap *u = t_create(2, 0);

	*state = u;
	return u;
}

static void test_swapon_reports_the_device_as_given(void **state)
{
	struct uswap *u = new_instance(state);
	char name[32] = "zram0";
	const uint64_t bad[] = { 3, 4000 };
	const uint64_t nr_slots = 10 * USWAP_CLUSTER_SLOTS + 7;
	struct uswap_swapon_args args = {
		.name = name, .nr_slots = nr_slots, .prio = 42,
		.bad_slots = bad, .nr_bad = 2,
	};
	int type = uswap_swapon(u, &args);
	struct uswap_device_info info;

	t_skip_if_missing(type, "uswap_swapon");
	t_true(type >= 0 && type < USWAP_MAX_DEVICES);
	/* Name and bad-slot list are copied, not kept. */
	strcpy(name, "changed");
	info = t_info(u, type);
	t_eq(info.type, type);
	t_eq(info.prio, 42);
	t_true(strcmp(info.name, "zram0") == 0);
	t_eq_u64(info.nr_slots, nr_slots);
	t_eq_u64(info.pages, nr_slots - 1 - 2);
	t_eq_u64(info.size_kb, info.pages * (USWAP_PAGE_SIZE / 1024));
	t_eq_u64(info.inuse, 0);
	t_eq_u64(info.used_kb, 0);
	t_eq(info.nr_clusters, 11);
	/* Cluster 0 (header, bad 3), 7 (bad 4000) and 10 (partial) are never
	 * free; the other 8 are. */
	t_eq(info.free_clusters, 8);
	t_true(info.metadata_bytes > 0);

	uswap_entry_t e = t_alloc(u, 3);
	info = t_info(u, type);
	t_eq_u64(info.inuse, 8);
	t_eq_u64(info.used_kb, 8 * (USWAP_PAGE_SIZE / 1024));
	t_put(u, e, 3);
	t_check(u);
}

static void test_unnamed_device_is_called_dev_type(void **state)
{
	struct uswap *u = new_instance(state);
	int type = t_swapon(u, 2 * USWAP_CLUSTER_SLOTS, USWAP_PRIO_DEFAULT);
	char expect[16];

	snprintf(expect, sizeof(expect), "dev%d", type);
	t_true(strcmp(t_info(u, type).name, expect) == 0);
}

static void test_swaps_lists_one_row_per_device(void **state)
{
	struct uswap *u = new_instance(state);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	struct uswap_swapon_args args = {
		.name = "first-dev", .nr_slots = 4 * USWAP_CLUSTER_SLOTS, .prio = 5,
	};

	t_true(uswap_swapon(u, &args) >= 0);
	args.name = "second-dev";
	args.prio = USWAP_PRIO_DEFAULT;
	t_true(uswap_swapon(u, &args) >= 0);
	f = open_memstream(&buf, &len);
	t_true(f != NULL);
	t_eq(uswap_swaps(u, f), 2);
	fclose(f);
	t_true(strstr(buf, "Filename") != NULL);
	t_true(strstr(buf, "first-dev") != NULL);
	t_true(strstr(buf, "second-dev") != NULL);
	free(buf);
}

/*
 * Swap an empty device off: it disappears, the other device serves every
 * later allocation (even the whole of it), and the type can be reused.
 */
static void test_swapoff_of_empty_device_removes_it_for_good(void **state)
{
	struct uswap *u = new_instance(state);
	int gone = t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 20);
	int stays = t_swapon(u, 4 * USWAP_CLUSTER_SLOTS, 10);
	uint64_t pages = t_info(u, stays).pages;
	uswap_entry_t *e = calloc(pages, sizeof(*e));
	struct uswap_device_info info;
	uswap_entry_t x;

	t_true(e != NULL);
	/* Used once, so its per-CPU caches point at it, then emptied. */
	x = t_alloc(u, 0);
	t_eq(uswap_entry_type(x), gone);
	t_put(u, x, 0);
	x = t_alloc(u, 4);
	t_put(u, x, 4);

	t_eq(uswap_swapoff(u, gone), 0);
	t_eq(uswap_device_info(u, gone, &info), -ENOENT);
	for (uint64_t i = 0; i < pages; i++) {
		e[i] = t_alloc(u, 0);
		t_eq(uswap_entry_type(e[i]), stays);
	}
	t_eq(uswap_alloc(u, 0, &x), -ENOSPC);
	for (uint64_t i = 0; i < pages; i++)
		t_put(u, e[i], 0);
	t_check(u);

	int again = t_swapon(u, 2 * USWAP_CLUSTER_SLOTS, 30);
	x = t_alloc(u, 0);
	t_eq(uswap_entry_type(x), again);
	t_put(u, x, 0);
	t_eq(uswap_swapoff(u, again), 0);
	t_eq(uswap_swapoff(u, stays), 0);
	t_eq(t_total_inuse(u), 0);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_swapon_reports_the_device_as_given, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_unnamed_device_is_called_dev_type, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_swaps_lists_one_row_per_device, t_setup_cpu0, t_teardown_instance),
		cmocka_unit_test_setup_teardown(test_swapoff_of_empty_device_removes_it_for_good, t_setup_cpu0, t_teardown_instance),
	};

	return t_run(tests);
}
