/* SPDX-License-Identifier: MIT */
/*
 * t_util.h - helpers shared by the uswap cmocka programs.
 *
 * Every program in tests/ is one module's cmocka group. These helpers keep
 * the tests short: set-up calls that must succeed (t_create, t_swapon,
 * t_alloc ...) fail the running test with the negative errno spelled out,
 * and t_eq() prints both sides as signed numbers, which cmocka's own
 * assert_int_equal() does not (it shows -28 as 0xffffffffffffffe4).
 *
 * Worker threads must not call cmocka asserts (they longjmp into the main
 * thread's test): they report with t_fail_async() and the main thread
 * turns that into a test failure with t_assert_no_async_failure().
 *
 * Only include/uswap/uswap.h is used: the tests check the public contract.
 */
#ifndef USWAP_TESTS_T_UTIL_H
#define USWAP_TESTS_T_UTIL_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include <uswap/lab.h>
#include <uswap/slots.h>
#include <uswap/uswap.h>

#define T_EXIT_SKIP 77 /* what meson counts as a skipped test */

#define T_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------------
 * Assertions with readable errnos
 * ------------------------------------------------------------------- */

/* "-ENOSPC" for -28, "0" for 0; "-errno?" or "value" for anything else
 * (the number itself is printed beside it). */
const char *t_errname(long long v);

#define t_eq(actual, expected)                                               \
	do {                                                                 \
		long long t_a_ = (long long)(actual);                        \
		long long t_e_ = (long long)(expected);                      \
		if (t_a_ != t_e_)                                            \
			fail_msg("%s:%d: %s is %lld (%s), expected %s = %lld", \
				 __FILE__, __LINE__, #actual, t_a_,          \
				 t_errname(t_a_), #expected, t_e_);          \
	} while (0)

/* One of two accepted answers (where the contract allows both). */
#define t_eq_either(actual, one, other)                                      \
	do {                                                                 \
		long long t_a_ = (long long)(actual);                        \
		if (t_a_ != (long long)(one) && t_a_ != (long long)(other))  \
			fail_msg("%s:%d: %s is %lld (%s), expected %s or %s", \
				 __FILE__, __LINE__, #actual, t_a_,          \
				 t_errname(t_a_), #one, #other);             \
	} while (0)

/* Unsigned 64-bit compare (counters, entry values). */
#define t_eq_u64(actual, expected)                                           \
	do {                                                                 \
		unsigned long long t_a_ = (unsigned long long)(actual);      \
		unsigned long long t_e_ = (unsigned long long)(expected);    \
		if (t_a_ != t_e_)                                            \
			fail_msg("%s:%d: %s is %llu, expected %s = %llu",    \
				 __FILE__, __LINE__, #actual, t_a_,          \
				 #expected, t_e_);                           \
	} while (0)

#define t_true(cond)                                                         \
	do {                                                                 \
		if (!(cond))                                                 \
			fail_msg("%s:%d: expected %s", __FILE__, __LINE__,   \
				 #cond);                                     \
	} while (0)

/* ---------------------------------------------------------------------
 * Set-up helpers: each must succeed, or the test fails right there
 * ------------------------------------------------------------------- */

/* A new instance; nr_cpus/ring_quota 0 mean the library defaults. */
struct uswap *t_create(unsigned int nr_cpus, unsigned int ring_quota);

/* swapon with no bad slots and a NULL name; returns the type. */
int t_swapon(struct uswap *u, uint64_t nr_slots, int prio);

/* swapon with a bad-slot list; returns the type. */
int t_swapon_bad(struct uswap *u, uint64_t nr_slots, int prio,
		 const uint64_t *bad_slots, size_t nr_bad);

struct uswap_device_info t_info(struct uswap *u, int type);
struct uswap_stats t_stats(struct uswap *u);

/* cmocka fixtures of the allocator tests: the test thread runs as CPU 0
 * (per-CPU state is then deterministic) and *state is the test's
 * instance, if it made one, destroyed even when the test failed. */
int t_setup_cpu0(void **state);
int t_teardown_instance(void **state);

/* uswap_check() == 0: the full consistency check, at quiescent points. */
void t_check(struct uswap *u);

/* uswap_alloc() that must succeed. */
uswap_entry_t t_alloc(struct uswap *u, unsigned int order);

/* uswap_put_folio() that must succeed. */
void t_put(struct uswap *u, uswap_entry_t e, unsigned int order);

/* Number of slots in use summed over every device. */
uint64_t t_total_inuse(struct uswap *u);

/* ---------------------------------------------------------------------
 * Skips (exit 77 when every test of a program skipped)
 * ------------------------------------------------------------------- */

/* Print why and skip the running test. */
void t_skip(const char *why);

/* A library call answering -ENOSYS/-EOPNOTSUPP means the feature is not
 * there yet: skip instead of failing. */
#define t_skip_if_missing(rc, what)                                          \
	do {                                                                 \
		long long t_r_ = (long long)(rc);                            \
		if (t_r_ == -ENOSYS || t_r_ == -EOPNOTSUPP)                  \
			t_skip(what " is not implemented (" #rc ")");        \
	} while (0)

/* Run a group; returns 1 if a test failed, 77 if all skipped, else 0. */
int t_run_group(const char *name, const struct CMUnitTest *tests, size_t n);
#define t_run(tests) t_run_group(#tests, tests, T_ARRAY_SIZE(tests))

/* ---------------------------------------------------------------------
 * Failures from worker threads
 * ------------------------------------------------------------------- */

/* Record the first failure (later ones are counted only); thread-safe. */
void t_fail_async(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool t_async_failed(void);
/* Forget earlier failures (call at the start of a threaded test). */
void t_async_reset(void);
/* fail_msg() with the first recorded message, prefixed by @context. */
void t_assert_no_async_failure(const char *context);

/* ---------------------------------------------------------------------
 * Seeded PRNG (splitmix64) and test scale
 * ------------------------------------------------------------------- */

static inline uint64_t t_rand(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in 0..n-1 (n > 0); the modulo bias is irrelevant here. */
static inline uint64_t t_rand_below(uint64_t *state, uint64_t n)
{
	return t_rand(state) % n;
}

/* USWAP_STRESS_SCALE from the environment (default 1.0, must be > 0). */
double t_env_scale(void);

/* A seed: USWAP_TEST_SEED if set, else time and pid mixed. */
uint64_t t_env_seed(void);

#endif /* USWAP_TESTS_T_UTIL_H */
