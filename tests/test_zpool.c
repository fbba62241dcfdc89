/* SPDX-License-Identifier: MIT */
/*
 * Description: zram's object pool (src/dev/zpool.c). Objects of every size
 * class are disjoint and keep their bytes; freeing every object gives all
 * blocks back to the pool (none left in use) and a mass free gives memory
 * back to the kernel in whole runs; a freed block serves another class;
 * sizes out of range are refused. The stress group ("stress" argument)
 * has two threads allocate, fill, check and free objects of random sizes,
 * each against its own shadow list of what every live object must hold.
 */
#include "t_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dev/zpool.h"

/* Fill @obj with a pattern derived from @tag. */
static void obj_fill(void *obj, size_t size, uint64_t tag)
{
	unsigned char *p = obj;

	for (size_t i = 0; i < size; i++)
		p[i] = (unsigned char)(tag * 131 + i * 7);
}

/* Whether @obj still holds obj_fill(@tag)'s bytes. */
static bool obj_intact(const void *obj, size_t size, uint64_t tag)
{
	const unsigned char *p = obj;

	for (size_t i = 0; i < size; i++)
		if (p[i] != (unsigned char)(tag * 131 + i * 7))
			return false;
	return true;
}

static void test_sizes_out_of_range_are_refused(void **state)
{
	struct zpool *zp = zpool_create();

	(void)state;
	t_true(zp != NULL);
	t_true(zpool_alloc(zp, 0) == NULL);
	t_true(zpool_alloc(zp, USWAP_PAGE_SIZE + 1) == NULL);
	zpool_free(zp, NULL, 1); /* a no-op */
	zpool_destroy(zp);
	zpool_destroy(NULL);
}

struct live {
	void *obj;
	size_t size;
};

static int by_addr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct live *)a)->obj;
	uintptr_t y = (uintptr_t)((const struct live *)b)->obj;

	return (x > y) - (x < y);
}

/* Every size 1..4096 a few times: aligned, disjoint (by address order),
 * contents intact after all were written; all blocks back after the free. */
static void test_objects_of_every_class_are_disjoint_and_keep_their_bytes(void **state)
{
	enum { PER_SIZE = 3 };
	size_t n = USWAP_PAGE_SIZE * PER_SIZE, i = 0;
	struct live *v = calloc(n, sizeof(*v));
	struct zpool *zp = zpool_create();
	struct zpool_stats st;

	(void)state;
	t_true(v && zp);
	for (size_t size = 1; size <= USWAP_PAGE_SIZE; size++)
		for (int k = 0; k < PER_SIZE; k++, i++) {
			v[i].size = size;
			v[i].obj = zpool_alloc(zp, size);
			t_true(v[i].obj != NULL);
			t_eq((uintptr_t)v[i].obj % 8, 0);
			obj_fill(v[i].obj, size, i);
		}
	for (i = 0; i < n; i++)
		if (!obj_intact(v[i].obj, v[i].size, i))
			fail_msg("object %zu (%zu bytes) was overwritten", i, v[i].size);
	zpool_stats(zp, &st);
	t_true(st.blocks_used > 0);
	t_true(st.mapped >= st.blocks_used);
	qsort(v, n, sizeof(*v), by_addr);
	for (i = 1; i < n; i++)
		if ((char *)v[i - 1].obj + zpool_class_size(v[i - 1].size) > (char *)v[i].obj)
			fail_msg("objects at %p (%zu bytes) and %p overlap", v[i - 1].obj,
				 v[i - 1].size, v[i].obj);
	for (i = 0; i < n; i++)
		zpool_free(zp, v[i].obj, v[i].size);
	zpool_stats(zp, &st);
	t_eq_u64(st.blocks_used, 0);
	/* Everything was freed: all but a chunk's worth went back to the
	 * kernel (cold), and nothing is lost from the mapped total. */
	t_true(st.blocks_idle < 96 * (64u << 10)); /* keep + one trim batch */
	t_true(st.blocks_cold > 0);
	/* Every block handed out is idle or cold again; only the newest
	 * chunk's never-used blocks are in neither. */
	t_true(st.blocks_idle + st.blocks_cold <= st.mapped);
	t_true(st.blocks_idle + st.blocks_cold + (2u << 20) > st.mapped);
	free(v);
	zpool_destroy(zp);
}

/* A block emptied by one class is reused by another, and a cold block is
 * taken again before new memory is mapped. */
static void test_freed_blocks_serve_other_classes(void **state)
{
	enum { N = 4096 };
	struct zpool *zp = zpool_create();
	void **v = calloc(N, sizeof(*v));
	struct zpool_stats a, b;

	(void)state;
	t_true(zp && v);
	for (int i = 0; i < N; i++)
		t_true((v[i] = zpool_alloc(zp, 1000)) != NULL);
	for (int i = 0; i < N; i++)
		zpool_free(zp, v[i], 1000);
	zpool_stats(zp, &a);
	t_eq_u64(a.blocks_used, 0);
	for (int i = 0; i < N; i++) {
		t_true((v[i] = zpool_alloc(zp, 2000)) != NULL);
		obj_fill(v[i], 2000, (uint64_t)i);
	}
	zpool_stats(zp, &b);
	/* 4096 x 2000 bytes fit in the memory 4096 x 1000 bytes took twice
	 * over only if blocks moved between classes: no new chunk was needed
	 * beyond what the 2000-byte objects add. */
	t_true(b.mapped <= a.mapped + (uint64_t)N * 2048);
	for (int i = 0; i < N; i++) {
		t_true(obj_intact(v[i], 2000, (uint64_t)i));
		zpool_free(zp, v[i], 2000);
	}
	free(v);
	zpool_destroy(zp);
}

/* ---------------------------------------------------------------------
 * stress
 * ------------------------------------------------------------------- */

struct worker {
	struct zpool *zp;
	uint64_t seed, ops;
	unsigned int id;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	enum { LIVE = 2048 };
	struct live *v = calloc(LIVE, sizeof(*v));
	uint64_t *tags = calloc(LIVE, sizeof(*tags));
	uint64_t rs = w->seed, next_tag = (uint64_t)w->id << 48;

	if (!v || !tags) {
		t_fail_async("worker %u: out of memory", w->id);
		goto out;
	}
	for (uint64_t op = 0; op < w->ops; op++) {
		size_t i = t_rand_below(&rs, LIVE);

		if (v[i].obj) {
			if (!obj_intact(v[i].obj, v[i].size, tags[i])) {
				t_fail_async("worker %u: object of %zu bytes changed under it",
					     w->id, v[i].size);
				break;
			}
			zpool_free(w->zp, v[i].obj, v[i].size);
			v[i].obj = NULL;
			continue;
		}
		v[i].size = 1 + t_rand_below(&rs, USWAP_PAGE_SIZE);
		v[i].obj = zpool_alloc(w->zp, v[i].size);
		if (!v[i].obj) {
			t_fail_async("worker %u: alloc(%zu) failed", w->id, v[i].size);
			break;
		}
		tags[i] = next_tag++;
		obj_fill(v[i].obj, v[i].size, tags[i]);
	}
	for (size_t i = 0; i < LIVE; i++)
		if (v[i].obj)
			zpool_free(w->zp, v[i].obj, v[i].size);
out:
	free(v);
	free(tags);
	return NULL;
}

static void test_two_threads_keep_every_object_intact(void **state)
{
	struct zpool *zp = zpool_create();
	struct worker w[2];
	pthread_t tid[2];
	uint64_t seed = t_env_seed();
	struct zpool_stats st;

	(void)state;
	t_true(zp != NULL);
	t_async_reset();
	for (unsigned int i = 0; i < 2; i++) {
		w[i] = (struct worker){ .zp = zp, .seed = seed + i * 7919 + 1,
					.ops = (uint64_t)(400000 * t_env_scale()) + 1, .id = i };
		t_eq(pthread_create(&tid[i], NULL, worker_main, &w[i]), 0);
	}
	for (unsigned int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	t_assert_no_async_failure("zpool stress");
	zpool_stats(zp, &st);
	t_eq_u64(st.blocks_used, 0);
	zpool_destroy(zp);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest quick[] = {
		cmocka_unit_test(test_sizes_out_of_range_are_refused),
		cmocka_unit_test(test_objects_of_every_class_are_disjoint_and_keep_their_bytes),
		cmocka_unit_test(test_freed_blocks_serve_other_classes),
	};
	const struct CMUnitTest stress[] = {
		cmocka_unit_test(test_two_threads_keep_every_object_intact),
	};

	if (argc > 1 && strcmp(argv[1], "stress") == 0)
		return cmocka_run_group_tests_name("zpool_stress", stress, NULL, NULL);
	if (argc > 1) {
		fprintf(stderr, "usage: %s [stress]\n", argv[0]);
		return 2;
	}
	return cmocka_run_group_tests_name("zpool", quick, NULL, NULL);
}
