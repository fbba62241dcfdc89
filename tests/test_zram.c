/* SPDX-License-Identifier: MIT */
/*
 * Description: the zram backend's memory figures (mm_stat) equal what was
 * stored, as the kernel's zram counts them: same-filled pages (zero
 * included) are counted in same_pages and use no memory; compressed pages
 * add their compressed length (checked against lz4/zstd run here on the
 * same page) to compr_data_size; pages that do not compress below
 * ZRAM_HUGE_THRESHOLD are stored raw and counted in huge_pages; an order-k
 * folio is compressed page by page; overwriting a slot and discarding it
 * give the old copy's memory back at once; the disksize bounds the slots.
 */
#include "t_dev.h"

#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "dev/zram.h"

static const char *const algos[] = { "lz4", "zstd" };

static struct backend *open_zram(const char *algo, uint64_t nr_slots)
{
	struct backend *b = NULL;
	char err[256] = "";
	int rc = backend_zram_open(nr_slots * USWAP_PAGE_SIZE, algo, &b, err, sizeof(err));

	if (rc != 0)
		fail_msg("zram open (%s): %d %s", algo, rc, err);
	return b;
}

static struct zram_mm_stat mm(struct backend *b)
{
	struct zram_mm_stat st;

	t_eq(zram_mm_stat(b, &st), 0);
	return st;
}

/* What one page should add to compr_data_size, computed independently:
 * 0 for a same-filled page, USWAP_PAGE_SIZE for a huge one. */
struct expect {
	uint64_t pages, same, huge, compr, objects;
};

static bool same_filled(const unsigned char *p)
{
	for (size_t i = 8; i < USWAP_PAGE_SIZE; i += 8)
		if (memcmp(p, p + i, 8) != 0)
			return false;
	return true;
}

static void expect_page(struct expect *e, const char *algo, const unsigned char *page)
{
	static unsigned char tmp[2 * USWAP_PAGE_SIZE];
	size_t len;

	e->pages++;
	if (same_filled(page)) {
		e->same++;
		return;
	}
	if (strcmp(algo, "lz4") == 0) {
		int n = LZ4_compress_default((const char *)page, (char *)tmp,
					     USWAP_PAGE_SIZE, sizeof(tmp));
		t_true(n > 0);
		len = (size_t)n;
	} else {
		len = ZSTD_compress(tmp, sizeof(tmp), page, USWAP_PAGE_SIZE, ZRAM_ZSTD_LEVEL);
		t_true(!ZSTD_isError(len));
	}
	e->objects++;
	if (len >= ZRAM_HUGE_THRESHOLD) {
		e->huge++;
		e->compr += USWAP_PAGE_SIZE;
	} else {
		e->compr += len;
	}
}

static void assert_mm_equals(struct backend *b, const struct expect *e, const char *what)
{
	struct zram_mm_stat st = mm(b);

	if (st.pages_stored != e->pages || st.same_pages != e->same ||
	    st.huge_pages != e->huge || st.compr_data_size != e->compr ||
	    st.orig_data_size != e->pages * USWAP_PAGE_SIZE)
		fail_msg("%s: mm_stat pages %llu same %llu huge %llu compr %llu orig %llu; "
			 "expected pages %llu same %llu huge %llu compr %llu",
			 what, (unsigned long long)st.pages_stored,
			 (unsigned long long)st.same_pages, (unsigned long long)st.huge_pages,
			 (unsigned long long)st.compr_data_size,
			 (unsigned long long)st.orig_data_size,
			 (unsigned long long)e->pages, (unsigned long long)e->same,
			 (unsigned long long)e->huge, (unsigned long long)e->compr);
	/* Each object is one malloc: its usable size is its length plus at
	 * most one allocator granule. */
	t_true(st.mem_used_total >= st.compr_data_size);
	t_true(st.mem_used_total <= st.compr_data_size + 32 * e->objects);
	t_true(st.mem_used_max >= st.mem_used_total);
	t_eq_u64(st.mem_limit, 0);
}

static void test_mm_stat_counts_exactly_what_was_stored(void **state)
{
	unsigned char *buf = t_buf_alloc(USWAP_PAGE_SIZE, false);

	(void)state;
	for (size_t a = 0; a < T_ARRAY_SIZE(algos); a++) {
		struct backend *b = open_zram(algos[a], 4 * USWAP_CLUSTER_SLOTS);
		struct expect e = { 0 };
		uint64_t rng = 1000 + a;

		assert_mm_equals(b, &e, "empty");
		for (uint64_t slot = 1; slot < 600; slot++) {
			t_fill_page(buf, (enum t_page_kind)(slot % T_PAGE_KINDS), &rng);
			t_bwrite(b, slot, 0, buf);
			expect_page(&e, algos[a], buf);
		}
		printf("# %s: %llu pages, %llu same, %llu huge, %llu compressed bytes\n",
		       algos[a], (unsigned long long)e.pages, (unsigned long long)e.same,
		       (unsigned long long)e.huge, (unsigned long long)e.compr);
		t_true(e.same > 0 && e.huge > 0 && e.compr > 0);
		assert_mm_equals(b, &e, algos[a]);
		t_eq_u64(mm(b).huge_pages_since, e.huge);
		b->ops->close(b);
	}
	t_buf_free(buf, false);
}

static void test_same_filled_pages_take_no_memory(void **state)
{
	unsigned char *buf = t_buf_alloc(USWAP_PAGE_SIZE, true);
	unsigned char *got = t_buf_alloc(USWAP_PAGE_SIZE, true);
	const uint64_t words[] = { 0, 1, UINT64_MAX, UINT64_C(0x0102030405060708),
				   UINT64_C(0xdeadbeefcafef00d) };

	(void)state;
	for (size_t a = 0; a < T_ARRAY_SIZE(algos); a++) {
		struct backend *b = open_zram(algos[a], 2 * USWAP_CLUSTER_SLOTS);
		struct zram_mm_stat st;

		for (size_t i = 0; i < T_ARRAY_SIZE(words); i++) {
			for (size_t off = 0; off < USWAP_PAGE_SIZE; off += 8)
				memcpy(buf + off, &words[i], 8);
			t_bwrite(b, 10 + i, 0, buf);
			memset(got, 0x77, USWAP_PAGE_SIZE);
			t_bread(b, 10 + i, 0, got);
			t_assert_same_bytes(got, buf, USWAP_PAGE_SIZE, "same-filled page");
		}
		/* Equal words but a different last byte: not same-filled. */
		memset(buf, 0, USWAP_PAGE_SIZE);
		buf[USWAP_PAGE_SIZE - 1] = 1;
		t_bwrite(b, 20, 0, buf);
		t_bread(b, 20, 0, got);
		t_assert_same_bytes(got, buf, USWAP_PAGE_SIZE, "almost-zero page");

		st = mm(b);
		t_eq_u64(st.same_pages, T_ARRAY_SIZE(words));
		t_eq_u64(st.pages_stored, T_ARRAY_SIZE(words) + 1);
		t_eq_u64(st.huge_pages, 0);
		t_true(st.compr_data_size > 0 && st.compr_data_size < 100);
		t_true(st.mem_used_total < 128); /* one small object only */
		b->ops->close(b);
	}
	t_buf_free(buf, true);
	t_buf_free(got, true);
}

static void test_incompressible_pages_are_stored_huge(void **state)
{
	unsigned char *buf = t_buf_alloc(folio_bytes(4), false);
	unsigned char *got = t_buf_alloc(folio_bytes(4), false);

	(void)state;
	for (size_t a = 0; a < T_ARRAY_SIZE(algos); a++) {
		struct backend *b = open_zram(algos[a], 2 * USWAP_CLUSTER_SLOTS);
		struct zram_mm_stat st;
		uint64_t rng = 77;

		for (int i = 0; i < 16; i++)
			t_fill_page(buf + i * USWAP_PAGE_SIZE, T_PAGE_RANDOM, &rng);
		t_bwrite(b, 16, 4, buf);
		t_bread(b, 16, 4, got);
		t_assert_same_bytes(got, buf, folio_bytes(4), "huge pages");
		st = mm(b);
		t_eq_u64(st.huge_pages, 16);
		t_eq_u64(st.huge_pages_since, 16);
		t_eq_u64(st.pages_stored, 16);
		t_eq_u64(st.compr_data_size, 16 * USWAP_PAGE_SIZE);
		t_true(st.mem_used_total >= 16 * USWAP_PAGE_SIZE);
		b->ops->close(b);
	}
	t_buf_free(buf, false);
	t_buf_free(got, false);
}

static void test_order_k_folio_is_compressed_page_by_page(void **state)
{
	static const enum t_page_kind kinds[8] = {
		T_PAGE_ZERO, T_PAGE_SAME, T_PAGE_TEXT, T_PAGE_RANDOM,
		T_PAGE_TEXT, T_PAGE_ZERO, T_PAGE_MIXED, T_PAGE_RANDOM,
	};
	unsigned char *buf = t_buf_alloc(folio_bytes(3), false);
	unsigned char *got = t_buf_alloc(folio_bytes(3), false);

	(void)state;
	for (size_t a = 0; a < T_ARRAY_SIZE(algos); a++) {
		struct backend *b = open_zram(algos[a], 2 * USWAP_CLUSTER_SLOTS);
		struct expect e = { 0 };
		uint64_t rng = 3;

		for (int i = 0; i < 8; i++) {
			t_fill_page(buf + i * USWAP_PAGE_SIZE, kinds[i], &rng);
			expect_page(&e, algos[a], buf + i * USWAP_PAGE_SIZE);
		}
		t_eq_u64(e.same, 3);
		t_eq_u64(e.huge, 2);
		t_bwrite(b, 8, 3, buf);
		assert_mm_equals(b, &e, "order-3 folio");
		t_bread(b, 8, 3, got);
		t_assert_same_bytes(got, buf, folio_bytes(3), "order-3 folio");
		/* Each page on its own: reading one page of the folio works. */
		t_bread(b, 10, 0, got);
		t_assert_same_bytes(got, buf + 2 * USWAP_PAGE_SIZE, USWAP_PAGE_SIZE,
				    "page 2 of the folio");
		b->ops->close(b);
	}
	t_buf_free(buf, false);
	t_buf_free(got, false);
}

static void test_overwrite_frees_the_old_copy(void **state)
{
	unsigned char *buf = t_buf_alloc(USWAP_PAGE_SIZE, false);

	(void)state;
	for (size_t a = 0; a < T_ARRAY_SIZE(algos); a++) {
		struct backend *b = open_zram(algos[a], 2 * USWAP_CLUSTER_SLOTS);
		struct zram_mm_stat st;
		struct expect e = { 0 };
		uint64_t rng = 5;

		t_fill_page(buf, T_PAGE_RANDOM, &rng);
		t_bwrite(b, 7, 0, buf);
		st = mm(b);
		t_eq_u64(st.huge_pages, 1);
		t_true(st.mem_used_total >= USWAP_PAGE_SIZE);

		/* Huge -> same-filled: the raw page is freed. */
		t_fill_page(buf, T_PAGE_ZERO, &rng);
		t_bwrite(b, 7, 0, buf);
		st = mm(b);
		t_eq_u64(st.pages_stored, 1);
		t_eq_u64(st.huge_pages, 0);
		t_eq_u64(st.huge_pages_since, 1);
		t_eq_u64(st.same_pages, 1);
		t_eq_u64(st.compr_data_size, 0);
		t_eq_u64(st.mem_used_total, 0);
		t_true(st.mem_used_max >= USWAP_PAGE_SIZE);

		/* Same-filled -> compressed text. */
		t_fill_page(buf, T_PAGE_TEXT, &rng);
		t_bwrite(b, 7, 0, buf);
		expect_page(&e, algos[a], buf);
		assert_mm_equals(b, &e, "overwritten with text");

		/* Text -> other text, many times: memory does not grow. */
		for (int i = 0; i < 100; i++) {
			t_fill_page(buf, T_PAGE_TEXT, &rng);
			t_bwrite(b, 7, 0, buf);
		}
		memset(&e, 0, sizeof(e));
		expect_page(&e, algos[a], buf);
		assert_mm_equals(b, &e, "overwritten 100 times");
		b->ops->close(b);
	}
	t_buf_free(buf, false);
}

static void test_discard_gives_memory_back(void **state)
{
	unsigned char *buf = t_buf_alloc(folio_bytes(9), false);

	(void)state;
	for (size_t a = 0; a < T_ARRAY_SIZE(algos); a++) {
		struct backend *b = open_zram(algos[a], 3 * USWAP_CLUSTER_SLOTS);
		struct zram_io_stat io;
		struct zram_mm_stat st;
		struct expect e = { 0 };
		uint64_t rng = 9;

		t_fill_folio(buf, 9, &rng);
		t_bwrite(b, USWAP_CLUSTER_SLOTS, 9, buf);
		for (unsigned int i = 0; i < USWAP_CLUSTER_SLOTS; i++)
			expect_page(&e, algos[a], buf + (size_t)i * USWAP_PAGE_SIZE);
		assert_mm_equals(b, &e, "full cluster");

		/* Half, then the rest plus never-written slots around it. */
		t_eq(b->ops->discard(b, USWAP_CLUSTER_SLOTS, 256), 0);
		st = mm(b);
		t_eq_u64(st.pages_stored, USWAP_CLUSTER_SLOTS - 256);
		t_eq(b->ops->discard(b, 1, 2 * USWAP_CLUSTER_SLOTS + 100), 0);
		st = mm(b);
		t_eq_u64(st.pages_stored, 0);
		t_eq_u64(st.orig_data_size, 0);
		t_eq_u64(st.compr_data_size, 0);
		t_eq_u64(st.mem_used_total, 0);
		t_eq_u64(st.same_pages, 0);
		t_eq_u64(st.huge_pages, 0);
		t_eq_u64(st.huge_pages_since, e.huge);
		t_true(st.mem_used_max >= e.compr);
		t_eq(zram_io_stat(b, &io), 0);
		t_eq_u64(io.notify_free, USWAP_CLUSTER_SLOTS);
		t_eq_u64(io.num_writes, USWAP_CLUSTER_SLOTS);
		b->ops->close(b);
	}
	t_buf_free(buf, false);
}

/* mem_limit: a write that would take the pool past it stores nothing and
 * fails with -ENOMEM, what was stored reads back, a same-filled page is
 * still taken, and a discard makes room again. */
static void test_mem_limit_refuses_writes_past_it(void **state)
{
	const uint64_t limit = 64 * USWAP_PAGE_SIZE;
	unsigned char *buf = t_buf_alloc(USWAP_PAGE_SIZE, false);
	unsigned char *got = t_buf_alloc(USWAP_PAGE_SIZE, false);

	(void)state;
	for (size_t a = 0; a < T_ARRAY_SIZE(algos); a++) {
		struct backend *b = open_zram(algos[a], 2 * USWAP_CLUSTER_SLOTS);
		struct zram_mm_stat st;
		uint64_t rng = 5, stored = 0, slot;
		int rc = 0;

		t_eq(zram_set_mem_limit(b, limit), 0);
		t_eq_u64(mm(b).mem_limit, limit);
		for (slot = 1; slot < 200 && !rc; slot++) {
			t_fill_page(buf, T_PAGE_RANDOM, &rng); /* huge: a page each */
			rc = b->ops->write(b, slot, 0, buf);
			stored += rc == 0;
		}
		t_eq(rc, -ENOMEM);
		st = mm(b);
		t_eq_u64(st.pages_stored, stored);
		t_true(stored >= 60 && stored <= 64);
		t_true(st.mem_used_total <= limit);
		/* The refused slot holds nothing: it reads zeroes. */
		t_eq(b->ops->read(b, slot - 1, 0, got), 0);
		t_true(same_filled(got) && got[0] == 0);
		/* A same-filled page needs no memory. */
		memset(buf, 0x5a, USWAP_PAGE_SIZE);
		t_eq(b->ops->write(b, 300, 0, buf), 0);
		t_eq(b->ops->discard(b, 1, 8), 0);
		t_fill_page(buf, T_PAGE_RANDOM, &rng);
		t_eq(b->ops->write(b, 1, 0, buf), 0);
		t_eq(b->ops->read(b, 1, 0, got), 0);
		t_assert_same_bytes(got, buf, USWAP_PAGE_SIZE, "a page written after a discard");
		b->ops->close(b);
	}
	t_eq(zram_set_mem_limit(NULL, 1), -EINVAL);
	t_buf_free(buf, false);
	t_buf_free(got, false);
}

static void test_disksize_bounds_the_device(void **state)
{
	unsigned char *buf = t_buf_alloc(folio_bytes(9), false);
	struct backend *b = NULL;
	char err[256] = "";

	(void)state;
	memset(buf, 1, folio_bytes(9));
	/* Rounded up to whole pages, as zram's disksize. */
	t_eq(backend_zram_open(10 * 1024 * 1024 + 1, NULL, &b, err, sizeof(err)), 0);
	t_eq_u64(b->nr_slots, 2561);
	t_eq(strcmp(zram_algo(b), "lz4"), 0);
	t_eq(strcmp(b->ops->kind, "zram"), 0);
	t_eq(strncmp(b->name, "zram", 4), 0);
	t_bwrite(b, 2560, 0, buf);
	t_eq(b->ops->write(b, 2561, 0, buf), -EINVAL);
	t_bwrite(b, 2048, 9, buf);
	t_eq(b->ops->write(b, 2560, 9, buf), -EINVAL);
	t_eq(b->ops->discard(b, 2560, 2), -EINVAL);
	b->ops->close(b);

	t_eq(backend_zram_open(USWAP_PAGE_SIZE, "lz4", &b, err, sizeof(err)), -EINVAL);
	t_eq(backend_zram_open(1 << 20, "lzo", &b, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "lzo") != NULL);
	t_eq(backend_zram_open(1 << 20, "ZSTD", &b, err, sizeof(err)), 0);
	t_eq(strcmp(zram_algo(b), "zstd"), 0);
	b->ops->close(b);
	t_buf_free(buf, false);
}

/* A new device takes the lowest number free, as the kernel's zram_add():
 * `uswap run` checks the devices (open, close) before it opens them for
 * good, and its devices were named zram4..zram7 after the check's. */
static void test_a_device_takes_the_lowest_free_number(void **state)
{
	struct backend *a = NULL, *b = NULL, *c = NULL;
	char err[256] = "", want[16];
	int n;

	(void)state;
	t_eq(backend_zram_open(1 << 20, NULL, &a, err, sizeof(err)), 0);
	t_eq(sscanf(a->name, "zram%d", &n), 1);
	t_eq(backend_zram_open(1 << 20, NULL, &b, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "zram%d", n + 1);
	t_eq(strcmp(b->name, want), 0);
	a->ops->close(a);
	t_eq(backend_zram_open(1 << 20, NULL, &c, err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "zram%d", n);
	t_eq(strcmp(c->name, want), 0); /* a's number again */
	b->ops->close(b);
	c->ops->close(c);
	t_eq(backend_zram_open(1 << 20, NULL, &a, err, sizeof(err)), 0);
	t_eq(strcmp(a->name, want), 0);
	a->ops->close(a);
}

static void test_print_stats_lists_mm_stat_and_accessors_check_the_kind(void **state)
{
	struct backend *b = open_zram("lz4", 2 * USWAP_CLUSTER_SLOTS);
	struct backend *ram = NULL;
	struct zram_mm_stat st;
	char *text = NULL, err[128];
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	static const char *const keys[] = {
		"comp_algorithm lz4\n", "orig_data_size ", "compr_data_size ",
		"mem_used_total ", "mem_used_max ", "same_pages ", "huge_pages ",
		"huge_pages_since ", "pages_stored ", "notify_free ",
	};

	(void)state;
	b->ops->print_stats(b, out);
	fclose(out);
	for (size_t i = 0; i < T_ARRAY_SIZE(keys); i++)
		if (strstr(text, keys[i]) == NULL)
			fail_msg("print_stats lacks '%s':\n%s", keys[i], text);
	free(text);
	t_eq(backend_ram_open(1 << 20, &ram, err, sizeof(err)), 0);
	t_eq(zram_mm_stat(ram, &st), -EINVAL);
	t_eq(zram_mm_stat(b, NULL), -EINVAL);
	t_true(zram_algo(ram) == NULL);
	ram->ops->close(ram);
	b->ops->close(b);
}

/* The public figure (uswap_device_zram_stat) of a swapped-on device is
 * its backend's mm_stat, through the swap path. */
static void test_device_zram_stat_matches_the_swap_path(void **state)
{
	struct uswap *u = t_create(1, 0);
	unsigned char *buf = t_buf_alloc(USWAP_PAGE_SIZE, false);
	struct uswap_zram_stat zs;
	struct expect e = { 0 };
	uswap_entry_t ent[64];
	char err[128];
	uint64_t rng = 77;
	int tz = uswap_swapon_spec(u, "zram:16M:zstd:prio=10", err, sizeof(err));
	int tr = uswap_swapon_spec(u, "ram:8M:prio=0", err, sizeof(err));

	(void)state;
	t_true(tz >= 0 && tr >= 0);
	for (int i = 0; i < 64; i++) {
		t_fill_page(buf, (enum t_page_kind)(i % T_PAGE_KINDS), &rng);
		t_eq(uswap_swap_out(u, buf, 0, 0, &ent[i]), 0);
		t_eq((int)uswap_entry_type(ent[i]), tz);
		expect_page(&e, "zstd", buf);
	}
	t_eq(uswap_device_zram_stat(u, tz, &zs), 0);
	t_true(!strcmp(zs.algo, "zstd"));
	t_eq_u64(zs.disksize, (16u << 20));
	t_eq_u64(zs.orig_data_size, 64 * USWAP_PAGE_SIZE);
	t_eq_u64(zs.compr_data_size, e.compr);
	t_eq_u64(zs.same_pages, e.same);
	t_eq_u64(zs.huge_pages, e.huge);
	t_true(zs.mem_used_total >= zs.compr_data_size);
	t_eq(uswap_device_zram_stat(u, tr, &zs), -EINVAL); /* ram */
	t_eq(uswap_device_zram_stat(u, 30, &zs), -ENOENT);
	t_eq(uswap_device_zram_stat(u, tz, NULL), -EINVAL);
	for (int i = 0; i < 64; i++)
		t_eq(uswap_swap_free(u, ent[i], 0), 0);
	t_eq(uswap_device_zram_stat(u, tz, &zs), 0);
	t_eq_u64(zs.orig_data_size, 0);
	uswap_destroy(u);
	t_buf_free(buf, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mm_stat_counts_exactly_what_was_stored),
		cmocka_unit_test(test_same_filled_pages_take_no_memory),
		cmocka_unit_test(test_incompressible_pages_are_stored_huge),
		cmocka_unit_test(test_mem_limit_refuses_writes_past_it),
		cmocka_unit_test(test_order_k_folio_is_compressed_page_by_page),
		cmocka_unit_test(test_overwrite_frees_the_old_copy),
		cmocka_unit_test(test_discard_gives_memory_back),
		cmocka_unit_test(test_disksize_bounds_the_device),
		cmocka_unit_test(test_a_device_takes_the_lowest_free_number),
		cmocka_unit_test(test_print_stats_lists_mm_stat_and_accessors_check_the_kind),
		cmocka_unit_test(test_device_zram_stat_matches_the_swap_path),
	};

	return t_run(tests);
}
