/* SPDX-License-Identifier: MIT */
/*
 * tsan.h - happens-before that ThreadSanitizer cannot see for itself:
 * through liburcu's grace periods (rcu.h) and through the kernel, as from
 * an io_uring submission to the thread that reaps its completion.
 * Nothing in other builds.
 */
#ifndef USWAP_UTIL_TSAN_H
#define USWAP_UTIL_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define USWAP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define USWAP_TSAN 1
#endif
#endif

#ifdef USWAP_TSAN
#include <sanitizer/tsan_interface.h>
#define tsan_release(p) __tsan_release(p)
#define tsan_acquire(p) __tsan_acquire(p)
#else
#define tsan_release(p) ((void)(p))
#define tsan_acquire(p) ((void)(p))
#endif

#endif /* USWAP_UTIL_TSAN_H */
