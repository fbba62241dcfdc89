// SPDX-License-Identifier: MIT
/*
 * Description: memory the program maps for itself, adopted as a region
 * and kept right while the program changes its mapping, the way the JVM
 * and V8 do (issue 23, item 2): a PROT_NONE reservation committed with
 * mprotect() or mmap(MAP_FIXED), uncommitted with MAP_FIXED PROT_NONE,
 * ranges made PROT_NONE while they hold data, munmap() of a part, and
 * mremap() of the whole. Each test swaps the memory several times over
 * under a 2 MiB limit and checks every page's bytes.
 *
 * Needs userfaultfd usable for kernel faults (root); skips otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "t_util.h"

#define PAGE  USWAP_PAGE_SIZE
#define LIMIT (2u << 20)
#define SPAN  (16u << 20) /* the reservation: 8x the limit */

static struct uswap *u;
static struct uswap_pager *pg;

static int setup(void **state)
{
	char err[256];
	int type;

	u = t_create(0, 0);
	type = uswap_swapon_spec(u, "zram:128M", err, sizeof(err));
	if (type < 0)
		fail_msg("swapon zram:128M = %d: %s", type, err);
	pg = NULL;
	return 0;
}

static int teardown(void **state)
{
	uswap_pager_destroy(pg);
	pg = NULL;
	uswap_destroy(u);
	u = NULL;
	return 0;
}

static struct uswap_pager_stats pstats(void)
{
	struct uswap_pager_stats st = { .size = sizeof(st) };

	t_eq(uswap_pager_stats_get(pg, &st), 0);
	return st;
}

static void pager_start(void)
{
	struct uswap_pager_config c = {
		.limit_bytes = LIMIT, .nr_handlers = 1, .reclaim_batch = 64,
		.flags = USWAP_PAGER_KERNEL_FAULTS,
	};
	int rc;

	if (getenv("T_PAGER_NO_MOVE"))
		c.flags |= USWAP_PAGER_NO_MOVE;
	rc = uswap_pager_create(u, &c, &pg);
	if (rc == -EPERM || rc == -ENOSYS)
		t_skip("no userfaultfd for kernel faults here (run as root, kernel 5.7+)");
	t_eq(rc, 0);
}

/* A PROT_NONE reservation of SPAN bytes, adopted: what `uswap run` does
 * with the JVM's heap reservation. */
static char *reserve(void)
{
	char *m = mmap(NULL, SPAN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	t_true(m != MAP_FAILED);
	t_eq(uswap_region_adopt(pg, m, SPAN), 0);
	return m;
}

/* Each page of [@a, @a + @len) gets its own bytes: its address and @gen. */
static void fill(char *a, size_t len, unsigned int gen)
{
	for (size_t off = 0; off < len; off += PAGE) {
		uint64_t *w = (uint64_t *)(a + off);

		w[0] = (uint64_t)(uintptr_t)(a + off);
		w[1] = gen;
		w[PAGE / 8 - 1] = ~(uint64_t)gen;
	}
}

/* Pages of [@a, @a + @len) that do not hold fill(@gen)'s bytes. */
static size_t bad_pages(const char *a, size_t len, unsigned int gen)
{
	size_t bad = 0;

	for (size_t off = 0; off < len; off += PAGE) {
		const uint64_t *w = (const uint64_t *)(a + off);

		bad += w[0] != (uint64_t)(uintptr_t)(a + off) || w[1] != gen ||
		       w[PAGE / 8 - 1] != ~(uint64_t)gen;
	}
	return bad;
}

/* Pages of [@a, @a + @len) with a byte that is not zero. */
static size_t nonzero_pages(const char *a, size_t len)
{
	size_t bad = 0;

	for (size_t off = 0; off < len; off += PAGE)
		for (size_t i = 0; i < PAGE; i += 8)
			if (*(const uint64_t *)(a + off + i)) {
				bad++;
				break;
			}
	return bad;
}

/* Replace [@a, @a + @len) with a fresh private anonymous mapping of
 * @prot, as the agent forwards a program's mmap(MAP_FIXED). */
static void map_fixed(char *a, size_t len, int prot)
{
	t_eq(uswap_region_replaced(pg, a, len, false), 0);
	t_true(mmap(a, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == a);
	t_eq(uswap_region_replaced(pg, a, len, true), 0);
}

/* Committed with mprotect() (V8) or MAP_FIXED (the JVM), the reservation
 * swaps like any region: 8 MiB under a 2 MiB limit, twice round. */
static void test_mapping_reservation_commits_and_swaps(void **state)
{
	char *m;

	pager_start();
	m = reserve();
	t_eq(mprotect(m, SPAN / 2, PROT_READ | PROT_WRITE), 0);
	map_fixed(m + SPAN / 2, SPAN / 2, PROT_READ | PROT_WRITE);
	fill(m, SPAN, 1);
	t_eq_u64(bad_pages(m, SPAN, 1), 0);
	fill(m, SPAN, 2);
	t_eq_u64(bad_pages(m, SPAN, 2), 0);
	t_true(pstats().evictions > 0);
	t_true(pstats().resident_bytes <= LIMIT);
	t_eq(uswap_region_destroy(pg, m), 0);
}

/* MAP_FIXED over swapped-out memory: the new pages read as zeros, the
 * old ones' slots and charge are gone, the rest keeps its bytes; an
 * uncommit (MAP_FIXED PROT_NONE) and a recommit read zeros too. */
static void test_mapping_map_fixed_replaces_swapped_pages(void **state)
{
	const size_t part = 4u << 20;
	uint64_t used_before, used_after;
	char *m;

	pager_start();
	m = reserve();
	t_eq(mprotect(m, SPAN, PROT_READ | PROT_WRITE), 0);
	fill(m, SPAN, 3);
	used_before = t_total_inuse(u);
	map_fixed(m, part, PROT_READ | PROT_WRITE);
	used_after = t_total_inuse(u);
	t_true(used_after < used_before); /* the replaced part's slots freed */
	t_eq_u64(nonzero_pages(m, part), 0);
	t_eq_u64(bad_pages(m + part, SPAN - part, 3), 0);
	map_fixed(m + part, part, PROT_NONE); /* uncommit */
	t_eq(mprotect(m + part, part, PROT_READ | PROT_WRITE), 0); /* recommit */
	t_eq_u64(nonzero_pages(m + part, part), 0);
	fill(m, 2 * part, 4);
	t_eq_u64(bad_pages(m + 2 * part, SPAN - 2 * part, 3), 0);
	t_eq_u64(bad_pages(m, 2 * part, 4), 0);
	t_true(pstats().resident_bytes <= LIMIT);
	t_eq(uswap_region_destroy(pg, m), 0);
}

/* A range made PROT_NONE while it holds data (V8 decommit, JVM guard
 * pages): mlocked first, it is read in and never picked, so the evictor
 * neither faults on it nor loses it; once read-write and munlocked it
 * swaps again with its bytes. */
static void test_mapping_mlock_keeps_protnone_data(void **state)
{
	const size_t part = 1u << 20;
	unsigned char vec[(1u << 20) / PAGE];
	char *m;

	pager_start();
	m = reserve();
	t_eq(mprotect(m, SPAN, PROT_READ | PROT_WRITE), 0);
	fill(m, SPAN, 5);
	t_eq(uswap_region_mlock(pg, m, part), 0);
	t_eq(mincore(m, part, vec), 0);
	for (size_t i = 0; i < part / PAGE; i++)
		t_true(vec[i] & 1);
	t_eq(mprotect(m, part, PROT_NONE), 0);
	fill(m + part, SPAN - part, 6); /* 7x the limit past the locked part */
	t_eq_u64(bad_pages(m + part, SPAN - part, 6), 0);
	t_eq(mincore(m, part, vec), 0);
	for (size_t i = 0; i < part / PAGE; i++)
		t_true(vec[i] & 1);
	t_eq(mprotect(m, part, PROT_READ | PROT_WRITE), 0);
	t_eq(uswap_region_munlock(pg, m, part), 0);
	t_eq_u64(bad_pages(m, part, 5), 0);
	fill(m + part, SPAN - part, 7); /* the unlocked part may go now */
	t_eq_u64(bad_pages(m, part, 5), 0);
	t_eq_u64(bad_pages(m + part, SPAN - part, 7), 0);
	t_eq(uswap_region_destroy(pg, m), 0);
}

/* A locked range twice the limit: it can give no room back, so its
 * charge leaves the limit (locked_bytes) instead of leaving every fault
 * waiting for room; the rest still swaps within the limit. A discard
 * inside it and the munlock bring the charge back where it belongs. */
static void test_mapping_mlock_over_limit_goes_on(void **state)
{
	const size_t part = 2 * LIMIT;
	struct uswap_pager_stats st;
	char *m;

	pager_start();
	m = reserve();
	t_eq(mprotect(m, SPAN, PROT_READ | PROT_WRITE), 0);
	fill(m, SPAN, 8);
	t_eq(uswap_region_mlock(pg, m, part), 0);
	t_eq(mprotect(m, part, PROT_READ), 0);
	st = pstats();
	t_eq_u64(st.locked_bytes, part);
	t_true(st.resident_bytes <= LIMIT);
	fill(m + part, SPAN - part, 9);
	t_eq_u64(bad_pages(m, part, 8), 0);
	t_eq_u64(bad_pages(m + part, SPAN - part, 9), 0);
	t_true(pstats().resident_bytes <= LIMIT + 64 * PAGE);
	/* MADV_DONTNEED of a locked quarter: gone, and out of locked_bytes. */
	t_eq(uswap_region_discard(pg, m, part / 4), 0);
	t_eq_u64(pstats().locked_bytes, part - part / 4);
	t_eq(mprotect(m, part, PROT_READ | PROT_WRITE), 0);
	t_eq(uswap_region_munlock(pg, m, part), 0);
	t_eq_u64(pstats().locked_bytes, 0);
	fill(m, SPAN, 10);
	t_eq_u64(bad_pages(m, SPAN, 10), 0);
	t_eq(uswap_region_destroy(pg, m), 0);
	t_eq_u64(pstats().resident_bytes, 0);
}

/* munmap() of a part: its slots and charge go (replaced, not anonymous),
 * and the rest keeps swapping. */
static void test_mapping_munmap_part_frees_its_slots(void **state)
{
	const size_t part = 8u << 20;
	uint64_t used_before;
	char *m;

	pager_start();
	m = reserve();
	t_eq(mprotect(m, SPAN, PROT_READ | PROT_WRITE), 0);
	fill(m, SPAN, 8);
	used_before = t_total_inuse(u);
	t_eq(uswap_region_replaced(pg, m + part, SPAN - part, false), 0);
	t_eq(munmap(m + part, SPAN - part), 0);
	t_true(t_total_inuse(u) < used_before);
	fill(m, part, 9);
	t_eq_u64(bad_pages(m, part, 9), 0);
	t_eq(uswap_region_destroy(pg, m), 0);
}

/* mremap() moves pages where the pager has no bookkeeping: disowned
 * first, every byte comes along and the region's slots are all freed. */
static void test_mapping_disown_then_mremap_keeps_bytes(void **state)
{
	char *m, *n;

	pager_start();
	m = reserve();
	t_eq(mprotect(m, SPAN, PROT_READ | PROT_WRITE), 0);
	fill(m, SPAN, 10);
	t_true(t_total_inuse(u) > 0);
	t_eq(uswap_region_disown(pg, m), 0);
	t_eq_u64(t_total_inuse(u), 0);
	t_eq_u64(pstats().resident_bytes, 0);
	n = mremap(m, SPAN, 2 * SPAN, MREMAP_MAYMOVE);
	t_true(n != MAP_FAILED);
	for (size_t off = 0; off < SPAN; off += PAGE) /* fill() wrote m's addresses */
		((uint64_t *)(n + off))[0] -= (uint64_t)(uintptr_t)m - (uint64_t)(uintptr_t)n;
	t_eq_u64(bad_pages(n, SPAN, 10), 0);
	t_eq(uswap_region_disown(pg, m), -ENOENT);
	munmap(n, 2 * SPAN);
}

/* Bad ranges are refused and change nothing. */
static void test_mapping_bad_ranges(void **state)
{
	char *m;

	pager_start();
	m = reserve();
	t_eq(uswap_region_mlock(pg, m + 1, PAGE), -EINVAL);
	t_eq(uswap_region_mlock(pg, m, SPAN + PAGE), -EINVAL);
	t_eq(uswap_region_munlock(pg, m - SPAN, PAGE), -ENOENT);
	t_eq(uswap_region_replaced(pg, m, 0, true), -EINVAL);
	t_eq(uswap_region_replaced(NULL, m, PAGE, true), -EINVAL);
	t_eq(uswap_region_disown(pg, m + PAGE), -ENOENT);
	t_eq(mprotect(m, PAGE, PROT_READ | PROT_WRITE), 0);
	fill(m, PAGE, 11);
	t_eq_u64(bad_pages(m, PAGE, 11), 0);
	t_eq(uswap_region_destroy(pg, m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mapping_reservation_commits_and_swaps,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapping_map_fixed_replaces_swapped_pages,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapping_mlock_over_limit_goes_on, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mapping_mlock_keeps_protnone_data,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapping_munmap_part_frees_its_slots,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapping_disown_then_mremap_keeps_bytes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_mapping_bad_ranges, setup, teardown),
	};

	return t_run(tests);
}
