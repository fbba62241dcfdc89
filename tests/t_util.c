/* SPDX-License-Identifier: MIT */
/*
 * t_util.c - helpers shared by the uswap cmocka programs (see t_util.h).
 */
#include "t_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *t_errname(long long v)
{
	switch (v) {
	case 0: return "0";
	case -EINVAL: return "-EINVAL";
	case -ENOENT: return "-ENOENT";
	case -ENOSPC: return "-ENOSPC";
	case -E2BIG: return "-E2BIG";
	case -EBUSY: return "-EBUSY";
	case -EEXIST: return "-EEXIST";
	case -EMFILE: return "-EMFILE";
	case -ENOMEM: return "-ENOMEM";
	case -EOVERFLOW: return "-EOVERFLOW";
	case -EIO: return "-EIO";
	case -EUCLEAN: return "-EUCLEAN";
	case -ENOSYS: return "-ENOSYS";
	case -EOPNOTSUPP: return "-EOPNOTSUPP";
	default: return v < 0 ? "-errno?" : "value";
	}
}

struct uswap *t_create(unsigned int nr_cpus, unsigned int ring_quota)
{
	struct uswap_config cfg = { .nr_cpus = nr_cpus, .ring_quota = ring_quota };
	struct uswap *u = NULL;
	int rc = uswap_create(&cfg, &u);

	t_skip_if_missing(rc, "uswap_create");
	t_eq(rc, 0);
	t_true(u != NULL);
	return u;
}

int t_swapon_bad(struct uswap *u, uint64_t nr_slots, int prio,
		 const uint64_t *bad_slots, size_t nr_bad)
{
	struct uswap_swapon_args args = {
		.name = NULL,
		.nr_slots = nr_slots,
		.prio = prio,
		.flags = 0,
		.bad_slots = bad_slots,
		.nr_bad = nr_bad,
	};
	int type = uswap_swapon(u, &args);

	t_skip_if_missing(type, "uswap_swapon");
	if (type < 0 || type >= USWAP_MAX_DEVICES)
		fail_msg("swapon(nr_slots=%llu, prio=%d, nr_bad=%zu) = %d (%s)",
			 (unsigned long long)nr_slots, prio, nr_bad, type,
			 t_errname(type));
	return type;
}

int t_swapon(struct uswap *u, uint64_t nr_slots, int prio)
{
	return t_swapon_bad(u, nr_slots, prio, NULL, 0);
}

struct uswap_device_info t_info(struct uswap *u, int type)
{
	struct uswap_device_info info;
	int rc;

	memset(&info, 0, sizeof(info));
	rc = uswap_device_info(u, type, &info);
	t_skip_if_missing(rc, "uswap_device_info");
	if (rc != 0)
		fail_msg("uswap_device_info(type %d) = %d (%s)", type, rc,
			 t_errname(rc));
	return info;
}

struct uswap_stats t_stats(struct uswap *u)
{
	struct uswap_stats st;
	int rc;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	rc = uswap_stats_get(u, &st);
	t_skip_if_missing(rc, "uswap_stats_get");
	t_eq(rc, 0);
	return st;
}

void t_check(struct uswap *u)
{
	int rc = uswap_check(u);

	t_skip_if_missing(rc, "uswap_check");
	if (rc != 0)
		fail_msg("uswap_check() = %d (%s): see stderr", rc, t_errname(rc));
}

uswap_entry_t t_alloc(struct uswap *u, unsigned int order)
{
	uswap_entry_t e = { 0 };
	int rc = uswap_alloc(u, order, &e);

	t_skip_if_missing(rc, "uswap_alloc");
	if (rc != 0)
		fail_msg("uswap_alloc(order %u) = %d (%s)", order, rc,
			 t_errname(rc));
	return e;
}

void t_put(struct uswap *u, uswap_entry_t e, unsigned int order)
{
	int rc = uswap_put_folio(u, e, order);

	if (rc != 0)
		fail_msg("uswap_put_folio(type %u offset %llu order %u) = %d (%s)",
			 uswap_entry_type(e),
			 (unsigned long long)uswap_entry_offset(e), order, rc,
			 t_errname(rc));
}

uint64_t t_total_inuse(struct uswap *u)
{
	uint64_t sum = 0;

	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		struct uswap_device_info info;

		if (uswap_device_info(u, type, &info) == 0)
			sum += info.inuse;
	}
	return sum;
}

/* ------------------------------------------------------------------ */

static size_t t_nr_skipped;

void t_skip(const char *why)
{
	fprintf(stderr, "SKIP: %s\n", why);
	t_nr_skipped++;
	skip();
}

int t_run_group(const char *name, const struct CMUnitTest *tests, size_t n)
{
	int failed;

	t_nr_skipped = 0;
	failed = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
	if (failed)
		return 1;
	if (n > 0 && t_nr_skipped == n)
		return T_EXIT_SKIP;
	return 0;
}

/* ------------------------------------------------------------------ */

static pthread_mutex_t t_fail_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool t_fail_flag;
static unsigned long t_fail_count; /* t_fail_lock */
static char t_fail_text[1024];     /* t_fail_lock */

void t_fail_async(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&t_fail_lock);
	if (t_fail_count++ == 0) {
		va_start(ap, fmt);
		vsnprintf(t_fail_text, sizeof(t_fail_text), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&t_fail_lock);
	atomic_store(&t_fail_flag, true);
}

bool t_async_failed(void)
{
	return atomic_load_explicit(&t_fail_flag, memory_order_relaxed);
}

void t_async_reset(void)
{
	pthread_mutex_lock(&t_fail_lock);
	t_fail_count = 0;
	t_fail_text[0] = '\0';
	pthread_mutex_unlock(&t_fail_lock);
	atomic_store(&t_fail_flag, false);
}

void t_assert_no_async_failure(const char *context)
{
	char text[sizeof(t_fail_text)];
	unsigned long count;

	if (!atomic_load(&t_fail_flag))
		return;
	pthread_mutex_lock(&t_fail_lock);
	memcpy(text, t_fail_text, sizeof(text));
	count = t_fail_count;
	pthread_mutex_unlock(&t_fail_lock);
	fail_msg("%s: %s (%lu failure%s in all)", context, text, count,
		 count == 1 ? "" : "s");
}

/* ------------------------------------------------------------------ */

double t_env_scale(void)
{
	const char *s = getenv("USWAP_STRESS_SCALE");
	double scale;

	if (s == NULL || *s == '\0')
		return 1.0;
	scale = strtod(s, NULL);
	return scale > 0 ? scale : 1.0;
}

uint64_t t_env_seed(void)
{
	const char *s = getenv("USWAP_TEST_SEED");
	struct timespec ts;
	uint64_t mix;

	if (s != NULL && *s != '\0')
		return strtoull(s, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	mix = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
	      ((uint64_t)getpid() << 16);
	return t_rand(&mix);
}

int t_setup_cpu0(void **state)
{
	uswap_thread_set_cpu(0);
	*state = NULL;
	return 0;
}

int t_teardown_instance(void **state)
{
	uswap_destroy(*state);
	uswap_thread_set_cpu(-1);
	return 0;
}
