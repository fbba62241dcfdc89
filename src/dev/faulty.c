// SPDX-License-Identifier: MIT
/*
 * faulty.c - the "faulty" backend: wraps another backend and makes its
 * requests fail with -EIO, or slow, on purpose, for testing the swap path
 * (the role of the kernel's dm-flakey / dm-dust and of SQLite's fault
 * injection loops).
 *
 * Each read, write or discard request (sync or async) is checked against
 * three rules, in this order; the first that matches fails the request:
 *   1. fail-Nth: the Nth request counted since arming fails (transient),
 *      or the Nth and all after it (persistent);
 *   2. slot lists: a request touching a listed slot fails (reads, writes
 *      and discards each have their own list);
 *   3. rates: a request fails with the configured probability, drawn from
 *      a seeded PRNG shared by all threads (a splitmix64 stream indexed by
 *      an atomic counter, so the sequence of draws is fixed by the seed;
 *      which thread gets which draw depends on the interleaving).
 * A request that fails is not forwarded: a failed write leaves the inner
 * backend's data at those slots as it was, a failed discard discards
 * nothing, and a failed read fills the caller's buffer with FAULTY_POISON
 * (backend.h: the buffer is garbage on error). Latency (latency_us) is
 * added before every request, failed or not, by sleeping in the calling
 * thread (in submit for async requests).
 *
 * Flush, print_stats and close go to the inner backend; reap is the
 * inner backend's own, since accepted async requests are handed to it
 * with their backend_io untouched.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dev/dev_internal.h"
#include "dev/faulty.h"

struct slot_list {
	uint64_t *slots;             /* sorted ascending; malloc */
	size_t nr;
};

struct faulty_backend {
	struct backend b;            /* first */
	struct backend *inner;       /* owned */
	double rate[3];              /* by enum backend_op; immutable */
	struct slot_list bad[3];     /* by enum backend_op; immutable */
	unsigned int latency_us;     /* immutable */
	uint64_t seed;               /* immutable */
	_Atomic uint64_t draws;      /* PRNG stream position */

	_Atomic uint64_t nth;        /* 0 = off */
	_Atomic bool persistent;
	_Atomic uint64_t nth_counter;/* requests since arming */

	_Atomic uint64_t seen[3];    /* requests, by op */
	_Atomic uint64_t failed[3];  /* injected, by op */
	_Atomic uint64_t nth_errors, slot_errors, rate_errors;
};

enum fault_why { FAULT_NONE, FAULT_NTH, FAULT_SLOT, FAULT_RATE };

static const struct backend_ops faulty_ops;

static inline struct faulty_backend *to_faulty(struct backend *b)
{
	return (struct faulty_backend *)b;
}

static inline void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The next draw in [0, 1): splitmix64 of seed + k * golden ratio. */
static double next_uniform(struct faulty_backend *fy)
{
	uint64_t k = atomic_fetch_add_explicit(&fy->draws, 1, memory_order_relaxed);
	uint64_t z = fy->seed + (k + 1) * UINT64_C(0x9e3779b97f4a7c15);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53;
}

/* Does [@slot, @slot + @nr) contain a listed slot? */
static bool list_hits(const struct slot_list *l, uint64_t slot, uint64_t nr)
{
	size_t lo = 0, hi = l->nr;

	while (lo < hi) { /* first listed slot >= @slot */
		size_t mid = lo + (hi - lo) / 2;

		if (l->slots[mid] < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->nr && l->slots[lo] - slot < nr;
}

static void sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * inject() - apply latency and decide whether request @op on
 * [@slot, @slot + @nr) fails; counts it either way.
 * Return: true if the request must fail with -EIO (not forwarded).
 */
static bool inject(struct faulty_backend *fy, enum backend_op op, uint64_t slot,
		   uint64_t nr)
{
	enum fault_why why = FAULT_NONE;
	uint64_t n, nth;

	if (fy->latency_us)
		sleep_us(fy->latency_us);
	count(&fy->seen[op]);
	n = atomic_fetch_add(&fy->nth_counter, 1) + 1;
	nth = atomic_load(&fy->nth);
	if (nth != 0 && (n == nth || (n > nth && atomic_load(&fy->persistent))))
		why = FAULT_NTH;
	else if (list_hits(&fy->bad[op], slot, nr))
		why = FAULT_SLOT;
	else if (fy->rate[op] > 0 && next_uniform(fy) < fy->rate[op])
		why = FAULT_RATE;

	switch (why) {
	case FAULT_NONE:
		return false;
	case FAULT_NTH:
		count(&fy->nth_errors);
		break;
	case FAULT_SLOT:
		count(&fy->slot_errors);
		break;
	case FAULT_RATE:
		count(&fy->rate_errors);
		break;
	}
	count(&fy->failed[op]);
	return true;
}

/*
 * faulty_read() - read through to the inner backend unless a rule fails
 * the request: then -EIO and @buf is filled with FAULTY_POISON.
 * Return: 0; -EINVAL (range; not counted); -EIO (injected); or the inner
 * backend's error. Thread-safety: as the inner backend.
 */
static int faulty_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	struct faulty_backend *fy = to_faulty(b);
	int rc = backend_check_io(b, slot, order);

	if (rc)
		return rc;
	if (inject(fy, BACKEND_READ, slot, UINT64_C(1) << order)) {
		memset(buf, FAULTY_POISON, folio_bytes(order));
		return -EIO;
	}
	return fy->inner->ops->read(fy->inner, slot, order, buf);
}

/*
 * faulty_write() - write through unless a rule fails the request: then
 * -EIO and the inner backend is not touched (its old data stays).
 * Return: 0; -EINVAL (range; not counted); -EIO (injected); or the inner
 * backend's error. Thread-safety: as the inner backend.
 */
static int faulty_write(struct backend *b, uint64_t slot, unsigned int order,
			const void *buf)
{
	struct faulty_backend *fy = to_faulty(b);
	int rc = backend_check_io(b, slot, order);

	if (rc)
		return rc;
	if (inject(fy, BACKEND_WRITE, slot, UINT64_C(1) << order))
		return -EIO;
	return fy->inner->ops->write(fy->inner, slot, order, buf);
}

/* faulty_discard() - as faulty_write(), for discards; nr 0 is a no-op
 * that is not counted. */
static int faulty_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct faulty_backend *fy = to_faulty(b);
	int rc = backend_check_range(b, slot, nr_slots);

	if (rc || nr_slots == 0)
		return rc;
	if (inject(fy, BACKEND_DISCARD, slot, nr_slots))
		return -EIO;
	return fy->inner->ops->discard(fy->inner, slot, nr_slots);
}

static int faulty_flush(struct backend *b)
{
	struct backend *inner = to_faulty(b)->inner;

	return inner->ops->flush(inner);
}

/*
 * faulty_decide() - decide @io's fate now. A failed request completes at
 * once (io->result -EIO, done() called, buffer poisoned for a read), as
 * does a bad or empty one. Return: true if it goes to the inner backend
 * unchanged.
 */
static bool faulty_decide(struct faulty_backend *fy, struct backend_io *io)
{
	uint64_t nr;
	int rc;

	switch (io->op) {
	case BACKEND_READ:
	case BACKEND_WRITE:
		rc = backend_check_io(&fy->b, io->slot, io->order);
		nr = UINT64_C(1) << (io->order <= USWAP_MAX_ORDER ? io->order : 0);
		break;
	case BACKEND_DISCARD:
		rc = backend_check_range(&fy->b, io->slot, io->nr_slots);
		nr = io->nr_slots;
		if (rc == 0 && nr == 0)
			rc = 1; /* a no-op: complete it, uncounted */
		break;
	default:
		rc = -EINVAL;
		nr = 0;
		break;
	}
	if (rc == 0 && !inject(fy, io->op, io->slot, nr))
		return true;
	if (rc == 0) {
		if (io->op == BACKEND_READ)
			memset(io->buf, FAULTY_POISON, folio_bytes(io->order));
		rc = -EIO;
	}
	io->result = rc > 0 ? 0 : rc;
	if (io->done != NULL)
		io->done(io);
	return false;
}

/*
 * faulty_submit() - decide now (faulty_decide()); an accepted request
 * goes to the inner backend's submit.
 * Return: 0; -EINVAL (@io NULL); or the inner submit's return.
 */
static int faulty_submit(struct backend *b, struct backend_io *io)
{
	struct faulty_backend *fy = to_faulty(b);

	if (io == NULL)
		return -EINVAL;
	if (faulty_decide(fy, io))
		return fy->inner->ops->submit(fy->inner, io);
	return 0;
}

/* faulty_submit_batch() - decide each request; the accepted ones go to
 * the inner backend as one batch, in their order. */
static int faulty_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n)
{
	struct faulty_backend *fy = to_faulty(b);
	struct backend_io *pass[64];
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (ios[i] == NULL)
			return -EINVAL;
		if (faulty_decide(fy, ios[i]))
			pass[k++] = ios[i];
		if (k == 64 || (i + 1 == n && k)) {
			int rc = backend_submit_batch(fy->inner, pass, k);

			if (rc)
				return rc;
			k = 0;
		}
	}
	return 0;
}

static int faulty_reap(struct backend *b, unsigned int min_complete)
{
	struct backend *inner = to_faulty(b)->inner;

	return inner->ops->reap(inner, min_complete);
}

int faulty_stats(struct backend *b, struct faulty_stats *st)
{
	struct faulty_backend *fy = to_faulty(b);

	if (b == NULL || b->ops != &faulty_ops || st == NULL)
		return -EINVAL;
	st->reads = atomic_load(&fy->seen[BACKEND_READ]);
	st->writes = atomic_load(&fy->seen[BACKEND_WRITE]);
	st->discards = atomic_load(&fy->seen[BACKEND_DISCARD]);
	st->read_errors = atomic_load(&fy->failed[BACKEND_READ]);
	st->write_errors = atomic_load(&fy->failed[BACKEND_WRITE]);
	st->discard_errors = atomic_load(&fy->failed[BACKEND_DISCARD]);
	st->nth_errors = atomic_load(&fy->nth_errors);
	st->slot_errors = atomic_load(&fy->slot_errors);
	st->rate_errors = atomic_load(&fy->rate_errors);
	st->nth_counter = atomic_load(&fy->nth_counter);
	return 0;
}

USWAP_API int uswap_backend_faults(struct uswap_backend *ub, struct uswap_fault_counts *out)
{
	struct faulty_stats st;
	int rc = out ? faulty_stats((struct backend *)ub, &st) : -EINVAL;

	if (rc)
		return rc;
	*out = (struct uswap_fault_counts){
		.reads = st.reads, .writes = st.writes, .discards = st.discards,
		.read_errors = st.read_errors, .write_errors = st.write_errors,
		.discard_errors = st.discard_errors,
	};
	return 0;
}

int faulty_fail_nth(struct backend *b, uint64_t nth, bool persistent)
{
	struct faulty_backend *fy = to_faulty(b);

	if (b == NULL || b->ops != &faulty_ops)
		return -EINVAL;
	atomic_store(&fy->nth, 0);
	atomic_store(&fy->nth_counter, 0);
	atomic_store(&fy->persistent, persistent);
	atomic_store(&fy->nth, nth);
	return 0;
}

struct backend *faulty_inner(struct backend *b)
{
	if (b == NULL || b->ops != &faulty_ops)
		return NULL;
	return to_faulty(b)->inner;
}

/* Own counters as "key value" lines, then the inner backend's with an
 * "inner." prefix on the kind line only (their keys are the inner's). */
static void faulty_print_stats(struct backend *b, FILE *out)
{
	struct faulty_backend *fy = to_faulty(b);
	struct faulty_stats st;

	faulty_stats(b, &st);
#define P(f) fprintf(out, #f " %llu\n", (unsigned long long)st.f)
	P(reads);
	P(writes);
	P(discards);
	P(read_errors);
	P(write_errors);
	P(discard_errors);
	P(nth_errors);
	P(slot_errors);
	P(rate_errors);
	P(nth_counter);
#undef P
	fprintf(out, "inner.kind %s\n", fy->inner->ops->kind);
	if (fy->inner->ops->print_stats != NULL)
		fy->inner->ops->print_stats(fy->inner, out);
}

/* Closes the inner backend too. Context: no other thread may use @b. */
static void faulty_close(struct backend *b)
{
	struct faulty_backend *fy = to_faulty(b);

	if (b == NULL)
		return;
	fy->inner->ops->close(fy->inner);
	for (int i = 0; i < 3; i++)
		free(fy->bad[i].slots);
	backend_release(b);
	free(fy);
}

static const struct backend_ops faulty_ops = {
	.kind = "faulty",
	.read = faulty_read,
	.write = faulty_write,
	.discard = faulty_discard,
	.flush = faulty_flush,
	.submit = faulty_submit,
	.submit_batch = faulty_submit_batch,
	.reap = faulty_reap,
	.print_stats = faulty_print_stats,
	.close = faulty_close,
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Copy and sort @nr slots of @src into @l. Return: 0 or -ENOMEM. */
static int list_copy(struct slot_list *l, const uint64_t *src, size_t nr)
{
	if (src == NULL || nr == 0)
		return 0;
	l->slots = malloc(nr * sizeof(*src));
	if (l->slots == NULL)
		return -ENOMEM;
	memcpy(l->slots, src, nr * sizeof(*src));
	qsort(l->slots, nr, sizeof(*src), cmp_u64);
	l->nr = nr;
	return 0;
}

static bool rate_ok(double r)
{
	return r >= 0.0 && r <= 1.0; /* also false for NaN */
}

/*
 * backend_faulty_open() - wrap @inner: the new backend has @inner's name,
 * geometry and file flag, and injects what @opts says (copied, slot lists
 * included; NULL = inject nothing). The fail-Nth rule starts armed with
 * opts->fail_nth; faulty_fail_nth() re-arms it.
 * Ownership: on success the new backend owns @inner and closes it on
 * close; on failure @inner stays the caller's, untouched.
 * Return: 0; -EINVAL (@inner or @out NULL, a rate outside 0..1; with a
 * message in @err); -ENOMEM.
 * Thread-safety: any thread; the result is as thread-safe as @inner.
 */
int backend_faulty_open(struct backend *inner, const struct faulty_opts *opts,
			struct backend **out, char *err, size_t errlen)
{
	struct faulty_opts o = { 0 };
	struct faulty_backend *fy;

	if (inner == NULL || out == NULL)
		return backend_errf(err, errlen, -EINVAL, "faulty: no inner backend or output pointer");
	if (opts != NULL)
		o = *opts;
	if (!rate_ok(o.read_error_rate) || !rate_ok(o.write_error_rate) ||
	    !rate_ok(o.discard_error_rate))
		return backend_errf(err, errlen, -EINVAL,
				    "faulty: error rates must be in 0..1 (read %g write %g discard %g)",
				    o.read_error_rate, o.write_error_rate,
				    o.discard_error_rate);
	fy = calloc(1, sizeof(*fy));
	if (fy == NULL)
		return backend_errf(err, errlen, -ENOMEM, "faulty: out of memory");
	if (list_copy(&fy->bad[BACKEND_READ], o.bad_read_slots, o.nr_bad_read) ||
	    list_copy(&fy->bad[BACKEND_WRITE], o.bad_write_slots, o.nr_bad_write) ||
	    list_copy(&fy->bad[BACKEND_DISCARD], o.bad_discard_slots, o.nr_bad_discard)) {
		for (int i = 0; i < 3; i++)
			free(fy->bad[i].slots);
		free(fy);
		return backend_errf(err, errlen, -ENOMEM, "faulty: out of memory");
	}
	fy->inner = inner;
	fy->rate[BACKEND_READ] = o.read_error_rate;
	fy->rate[BACKEND_WRITE] = o.write_error_rate;
	fy->rate[BACKEND_DISCARD] = o.discard_error_rate;
	fy->latency_us = o.latency_us;
	fy->seed = o.seed;
	fy->nth = o.fail_nth;
	fy->persistent = o.fail_persistent;
	backend_init(&fy->b, &faulty_ops, inner->name, inner->nr_slots, inner->first_slot);
	fy->b.is_file = inner->is_file;
	fy->b.free_notify = inner->free_notify;
	fy->b.discard_clusters = inner->discard_clusters;
	fy->b.encrypted = inner->encrypted;
	*out = &fy->b;
	return 0;
}
