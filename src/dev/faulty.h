/* SPDX-License-Identifier: MIT */
/*
 * faulty.h - what the fault-injecting backend exposes beyond backend.h:
 * counts of what it injected, and re-arming the fail-Nth counter for
 * SQLite-style fault loops (STYLE.md "For uswap" 14).
 */
#ifndef USWAP_DEV_FAULTY_H
#define USWAP_DEV_FAULTY_H

#include "dev/backend.h"

/* A read made to fail leaves this byte in every byte of the caller's
 * buffer, so a caller that uses the buffer anyway sees garbage, never old
 * data that looks valid. */
#define FAULTY_POISON 0xa5

/* Requests counted once each, whatever their order or length. Requests
 * refused for their range (-EINVAL) are not counted and never injected. */
struct faulty_stats {
	uint64_t reads, writes, discards;       /* requests seen (sync + async) */
	uint64_t read_errors;                   /* reads failed by injection */
	uint64_t write_errors;
	uint64_t discard_errors;
	uint64_t nth_errors;    /* of the above, failed by the fail-Nth rule */
	uint64_t slot_errors;   /* ... because they touched a listed slot */
	uint64_t rate_errors;   /* ... by the random rate */
	uint64_t nth_counter;   /* requests counted since the last arming */
};

/*
 * faulty_stats() - the counts of faulty backend @b into @st.
 * Return: 0; -EINVAL (@b not a faulty backend, or @st NULL).
 * Thread-safety: any thread, while I/O runs (fields read one by one).
 */
int faulty_stats(struct backend *b, struct faulty_stats *st);

/*
 * faulty_fail_nth() - re-arm the fail-Nth rule: counting restarts at 0,
 * the @nth-th request from now (1-based) fails, and with @persistent all
 * after it too; @nth 0 switches the rule off. The other rules (rates,
 * slot lists) are unaffected.
 * Return: 0; -EINVAL (@b not a faulty backend).
 * Context: exact only while no I/O runs on @b (a request racing with the
 * re-arm may count under the old or the new setting).
 */
int faulty_fail_nth(struct backend *b, uint64_t nth, bool persistent);

/* faulty_inner() - the wrapped backend (still owned by @b), or NULL if @b
 * is not a faulty backend. */
struct backend *faulty_inner(struct backend *b);

#endif /* USWAP_DEV_FAULTY_H */
