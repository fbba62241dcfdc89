/* SPDX-License-Identifier: MIT */
/*
 * compiler.h - branch hints, cache-line alignment, assertion tiers and the
 * "impossible but survivable" warning, shared by every layer.
 *
 * Assertions come in three tiers selected by USWAP_DEBUG (meson option
 * debug_level): 1 uswap_assert, 2 uswap_assert_internal, 3
 * uswap_assert_expensive (full scans). Release benchmarks build with 1.
 */
#ifndef USWAP_UTIL_COMPILER_H
#define USWAP_UTIL_COMPILER_H

#include <stdio.h>
#include <stdlib.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define __cold      __attribute__((cold, noinline))
#define CACHELINE   64
#define __cacheline_aligned __attribute__((aligned(CACHELINE)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifndef USWAP_DEBUG
#define USWAP_DEBUG 1
#endif

__cold void uswap_assert_fail(const char *expr, const char *file, int line)
	__attribute__((noreturn));

#define uswap_assert_tier(tier, expr)                                        \
	do {                                                                 \
		if (USWAP_DEBUG >= (tier) && unlikely(!(expr)))              \
			uswap_assert_fail(#expr, __FILE__, __LINE__);        \
	} while (0)
#define uswap_assert(expr)           uswap_assert_tier(1, expr)
#define uswap_assert_internal(expr)  uswap_assert_tier(2, expr)
#define uswap_assert_expensive(expr) uswap_assert_tier(3, expr)

/* WARN_ON_ONCE: report a survivable "cannot happen" once per call site and
 * evaluate to the condition, so callers can write
 * `if (WARN_ONCE(x, "...")) return -EINVAL;`. */
#define WARN_ONCE(cond, ...)                                                 \
	({                                                                   \
		static int warned__;                                         \
		int c__ = !!(cond);                                          \
		if (unlikely(c__) &&                                         \
		    !__atomic_exchange_n(&warned__, 1, __ATOMIC_RELAXED)) {  \
			fprintf(stderr, "uswap: warning: " __VA_ARGS__);     \
			fputc('\n', stderr);                                 \
		}                                                            \
		c__;                                                         \
	})

#endif /* USWAP_UTIL_COMPILER_H */
