// SPDX-License-Identifier: MIT
/*
 * Description: the swap path on real backends (src/swap/swap.c): folios of
 * every order go out and come back byte-identical, the swap cache serves
 * clean copies with no I/O, frees leave nothing in use, and injected write
 * and read errors lose no data and never return wrong data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dev/backend.h"
#include "dev/zram.h"
#include "t_util.h"

#define DEV_SLOTS (64 * USWAP_CLUSTER_SLOTS) /* 128 MiB per device */

static struct uswap *u;

/* A ram device swapped on at @prio; returns its type. */
static int swapon_ram(uint64_t slots, int prio)
{
	struct backend *b;
	char err[128];
	int type;

	t_eq(backend_ram_open(slots * USWAP_PAGE_SIZE, &b, err, sizeof(err)), 0);
	struct uswap_swapon_args a = { .prio = prio,
				       .backend = (struct uswap_backend *)b };
	type = uswap_swapon(u, &a);
	t_true(type >= 0);
	return type;
}

/* Fill a folio with a pattern derived from @seed so corruption shows. */
static void fill(void *buf, unsigned int order, uint64_t seed)
{
	uint64_t *w = buf, s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < folio_bytes(order) / 8; i++)
		w[i] = t_rand(&s);
}

static int setup(void **state)
{
	u = t_create(2, 0);
	return 0;
}

static int teardown(void **state)
{
	uswap_destroy(u);
	u = NULL;
	return 0;
}

static void test_swap_out_in_round_trips_every_order(void **state)
{
	void *in = malloc(folio_bytes(9)), *out = malloc(folio_bytes(9));
	uswap_entry_t e;
	int type = swapon_ram(DEV_SLOTS, -1);

	for (unsigned int order = 0; order < USWAP_NR_ORDERS; order++) {
		fill(out, order, order);
		t_eq(uswap_swap_out(u, out, order, 0, &e), 0);
		t_eq(uswap_entry_type(e), (unsigned int)type);
		t_eq(uswap_entry_offset(e) % (1u << order), 0);
		memset(in, 0, folio_bytes(order));
		t_eq(uswap_swap_in(u, e, order, in), 0); /* from the device */
		t_true(memcmp(in, out, folio_bytes(order)) == 0);
		t_eq(uswap_swap_free(u, e, order), 0);
	}
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
	free(in);
	free(out);
}

static void test_clean_copy_comes_back_from_cache_without_io(void **state)
{
	char out[USWAP_PAGE_SIZE * 4], in[sizeof(out)];
	uswap_entry_t e;
	bool cached;
	int type = swapon_ram(DEV_SLOTS, -1);

	fill(out, 2, 7);
	t_eq(uswap_swap_out(u, out, 2, USWAP_SWAP_KEEP_CACHE, &e), 0);
	t_eq(uswap_slot_count(u, e, &cached), 1);
	t_true(cached);
	t_eq(uswap_swap_in(u, e, 2, in), 1); /* 1: swap cache hit */
	t_true(memcmp(in, out, sizeof(in)) == 0);
	t_eq(uswap_cache_drop(u, e, 2), 0);
	t_eq(uswap_cache_drop(u, e, 2), -ENOENT);
	memset(in, 0, sizeof(in));
	t_eq(uswap_swap_in(u, e, 2, in), 0); /* now from the device */
	t_true(memcmp(in, out, sizeof(in)) == 0);
	t_eq(uswap_swap_free(u, e, 2), 0);
	t_eq(uswap_swap_free(u, e, 2), -ENOENT);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

static void test_free_of_cached_folio_drops_copy_and_slots(void **state)
{
	char out[USWAP_PAGE_SIZE];
	uswap_entry_t e;
	int type = swapon_ram(DEV_SLOTS, -1);

	fill(out, 0, 3);
	t_eq(uswap_swap_out(u, out, 0, USWAP_SWAP_KEEP_CACHE, &e), 0);
	t_eq(uswap_dup(u, e), 0); /* a second owner (fork) */
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_eq(uswap_slot_count(u, e, NULL), 1);
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_eq(uswap_slot_count(u, e, NULL), -ENOENT);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

static void test_swap_in_of_free_slot_is_refused(void **state)
{
	char buf[USWAP_PAGE_SIZE];
	int type = swapon_ram(DEV_SLOTS, -1);

	t_eq(uswap_swap_in(u, uswap_entry((unsigned int)type, 600), 0, buf), -ENOENT);
	t_eq(uswap_swap_in(u, uswap_entry((unsigned int)type, 601), 1, buf), -EINVAL);
	t_eq(uswap_swap_in(u, uswap_entry(31, 600), 0, buf), -EINVAL);
}

/* Every write of the first N fails: swap_out retries on fresh slots and
 * retires the failed ones; the data lands intact. */
static void test_failed_write_retires_slots_and_loses_nothing(void **state)
{
	struct faulty_opts fo = { .write_error_rate = 1.0, .seed = 1 };
	struct backend *ram, *bad;
	char err[128], out[USWAP_PAGE_SIZE], in[USWAP_PAGE_SIZE];
	uswap_entry_t e;

	/* A device whose every write fails, at the higher priority, and a
	 * good one below it: swap_out must end up on the good one. */
	t_eq(backend_ram_open((uint64_t)DEV_SLOTS * USWAP_PAGE_SIZE, &ram, err, sizeof(err)), 0);
	t_eq(backend_faulty_open(ram, &fo, &bad, err, sizeof(err)), 0);
	struct uswap_swapon_args a = { .prio = 10, .backend = (struct uswap_backend *)bad };
	int bad_type = uswap_swapon(u, &a);
	t_true(bad_type >= 0);
	int good_type = swapon_ram(DEV_SLOTS, 5);
	uint64_t pages_before = t_info(u, bad_type).pages;

	fill(out, 0, 11);
	int rc = uswap_swap_out(u, out, 0, 0, &e);
	/* 4 tries, all on the failing device (it stays available): -EIO and
	 * the caller keeps its page... */
	t_eq(rc, -EIO);
	t_eq_u64(t_info(u, bad_type).pages, pages_before - 4);
	t_eq_u64(t_stats(u).write_errors, 4);
	/* ...and once it is gone, the good device takes the page. */
	t_eq(uswap_swapoff(u, bad_type), 0);
	t_eq(uswap_swap_out(u, out, 0, 0, &e), 0);
	t_eq(uswap_entry_type(e), (unsigned int)good_type);
	t_eq(uswap_swap_in(u, e, 0, in), 0);
	t_true(memcmp(in, out, sizeof(in)) == 0);
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_check(u);
}

/* Folios of orders 0..4 through every kind of device a spec can name. */
static void round_trip_spec(const char *spec, bool is_file)
{
	char err[256], out[USWAP_PAGE_SIZE * 16], in[sizeof(out)];
	struct uswap_device_info info;
	uswap_entry_t e[5];
	int type = uswap_swapon_spec(u, spec, err, sizeof(err));

	if (type < 0)
		fail_msg("swapon %s: %s (%s)", spec, err, t_errname(type));
	t_eq(uswap_device_info(u, type, &info), 0);
	t_true(strcmp(info.kind, is_file ? "file" : "partition") == 0);
	for (unsigned int order = 0; order < 5; order++) {
		fill(out, order, order + 100);
		t_eq(uswap_swap_out(u, out, order, 0, &e[order]), 0);
		t_eq(uswap_entry_type(e[order]), (unsigned int)type);
	}
	for (unsigned int order = 0; order < 5; order++) {
		fill(out, order, order + 100);
		memset(in, 0, sizeof(in));
		t_eq(uswap_swap_in(u, e[order], order, in), 0);
		if (memcmp(in, out, folio_bytes(order)))
			fail_msg("%s: order %u read back different bytes", spec, order);
		t_eq(uswap_swap_free(u, e[order], order), 0);
	}
	t_eq(uswap_swapoff(u, type), 0);
}

static void test_specs_round_trip_on_every_backend_kind(void **state)
{
	round_trip_spec("ram:16M", false); /* 8 clusters: one per order used */
	round_trip_spec("zram:16M", false);
	round_trip_spec("zram:16M:zstd", false);
	round_trip_spec("faulty:seed=3:ram:16M", false);
}

static void test_mkswap_file_round_trips_through_swap_path(void **state)
{
	char path[] = "/tmp/uswap-test-swapfile-XXXXXX", cmd[256], spec[300];
	int fd = mkstemp(path);

	t_true(fd >= 0);
	t_eq(ftruncate(fd, 16 << 20), 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "mkswap -q %s >/dev/null 2>&1", path);
	if (access("/usr/sbin/mkswap", X_OK) || system(cmd)) {
		unlink(path);
		t_skip("util-linux mkswap is not available");
		return;
	}
	/* mkswap on a truncated file leaves holes, which swapon refuses, so
	 * fill it for real first, as one does for a swap file. */
	snprintf(cmd, sizeof(cmd),
		 "dd if=/dev/zero of=%s bs=1M count=16 status=none && mkswap -q -L t %s >/dev/null",
		 path, path);
	t_eq(system(cmd), 0);
	snprintf(spec, sizeof(spec), "file:%s", path);
	round_trip_spec(spec, true);
	snprintf(spec, sizeof(spec), "file:%s:sync", path);
	round_trip_spec(spec, true);
	unlink(path);
}

/* swapon --discard on a file: a cluster that empties is punched out of the
 * file before reuse, the data of live folios survives, and the file is
 * whole again (no holes: swapon would refuse it) after swapoff. */
static void test_file_discard_punches_freed_clusters(void **state)
{
	char path[] = "/tmp/uswap-test-discard-XXXXXX", cmd[300], spec[300], err[256];
	char out[USWAP_PAGE_SIZE * 16], in[sizeof(out)];
	struct stat st_full, st_punched;
	uswap_entry_t big, small;
	int fd = mkstemp(path);
	void *cluster = malloc(folio_bytes(9));

	t_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "dd if=/dev/zero of=%s bs=1M count=16 status=none && mkswap -q %s >/dev/null 2>&1",
		 path, path);
	if (access("/usr/sbin/mkswap", X_OK) || system(cmd)) {
		unlink(path);
		t_skip("util-linux mkswap is not available");
		return;
	}
	snprintf(spec, sizeof(spec), "file:%s:discard", path);
	int type = uswap_swapon_spec(u, spec, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon %s: %s", spec, err);
	fill(out, 4, 5);
	t_eq(uswap_swap_out(u, out, 4, 0, &small), 0);
	fill(cluster, 9, 6);
	t_eq(uswap_swap_out(u, cluster, 9, 0, &big), 0);
	t_eq(stat(path, &st_full), 0);
	uint32_t free_before = t_info(u, type).free_clusters;
	t_eq(uswap_swap_free(u, big, 9), 0);
	t_eq(stat(path, &st_punched), 0);
	/* The 2 MiB cluster went back to the file system... */
	if (st_punched.st_blocks + 4096 > st_full.st_blocks)
		fail_msg("blocks %lld -> %lld: the freed cluster was not discarded",
			 (long long)st_full.st_blocks, (long long)st_punched.st_blocks);
	/* ...and is free again, not stuck on the discard list. */
	t_eq(t_info(u, type).free_clusters, free_before + 1);
	t_eq(uswap_swap_in(u, small, 4, in), 0);
	t_true(memcmp(in, out, folio_bytes(4)) == 0);
	t_eq(uswap_swap_free(u, small, 4), 0);
	t_check(u);
	t_eq(uswap_swapoff(u, type), 0);
	/* Whole again: the header check (holes) accepts it. */
	snprintf(spec, sizeof(spec), "file:%s", path);
	type = uswap_swapon_spec(u, spec, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon after discard: %s", err);
	t_eq(uswap_swapoff(u, type), 0);
	unlink(path);
	free(cluster);
}

/* zram through the swap path: what is stored is accounted, and a freed
 * folio's memory goes back at once (swap_slot_free_notify). */
static void test_zram_memory_follows_swap_out_and_free(void **state)
{
	struct zram_mm_stat ms;
	struct backend *b;
	char err[128], page[USWAP_PAGE_SIZE * 16];
	uswap_entry_t same, text;

	t_eq(backend_zram_open((uint64_t)DEV_SLOTS * USWAP_PAGE_SIZE, "lz4", &b, err,
			       sizeof(err)), 0);
	struct uswap_swapon_args a = { .prio = -1, .backend = (struct uswap_backend *)b };
	t_true(uswap_swapon(u, &a) >= 0);

	memset(page, 0, sizeof(page)); /* 16 same-filled pages */
	t_eq(uswap_swap_out(u, page, 4, 0, &same), 0);
	for (size_t i = 0; i < sizeof(page); i++) /* compressible text */
		page[i] = "the quick brown fox jumps over the lazy dog "[i % 44];
	t_eq(uswap_swap_out(u, page, 4, 0, &text), 0);
	t_eq(zram_mm_stat(b, &ms), 0);
	t_eq_u64(ms.pages_stored, 32);
	t_eq_u64(ms.same_pages, 16);
	t_eq_u64(ms.orig_data_size, 32 * USWAP_PAGE_SIZE);
	t_true(ms.compr_data_size > 0 && ms.compr_data_size < 16 * USWAP_PAGE_SIZE / 4);

	t_eq(uswap_swap_free(u, text, 4), 0);
	t_eq(zram_mm_stat(b, &ms), 0);
	t_eq_u64(ms.pages_stored, 16);
	t_eq_u64(ms.compr_data_size, 0);
	t_eq_u64(ms.mem_used_total, 0);
	t_eq(uswap_swap_free(u, same, 4), 0);
	t_eq(zram_mm_stat(b, &ms), 0);
	t_eq_u64(ms.pages_stored, 0);
	t_eq_u64(ms.same_pages, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_swap_out_in_round_trips_every_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clean_copy_comes_back_from_cache_without_io, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_of_cached_folio_drops_copy_and_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swap_in_of_free_slot_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_retires_slots_and_loses_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_specs_round_trip_on_every_backend_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zram_memory_follows_swap_out_and_free, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkswap_file_round_trips_through_swap_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_discard_punches_freed_clusters, setup, teardown),
	};
	return t_run(tests);
}
