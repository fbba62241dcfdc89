/* SPDX-License-Identifier: MIT */
/*
 * procswaps.h - the kernel's /proc/swaps, read once for the benchmarks
 * (procswaps.c): `bench io` refuses to write to an area the kernel swaps
 * on, `bench usemem --no-pager` samples the kernel's use.
 */
#ifndef USWAP_BENCH_PROCSWAPS_H
#define USWAP_BENCH_PROCSWAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct procswaps_row {
	char name[4096];  /* Filename, octal escapes (\040) undone */
	char type[16];    /* "partition" or "file" */
	uint64_t size_kb, used_kb;
	int prio;
};

/*
 * procswaps_read() - read /proc/swaps: its text into @text (NUL-terminated,
 * may be NULL) and up to @cap rows into @rows (may be NULL).
 * Return: the number of areas (rows past @cap are counted, not stored), or
 * -errno (no /proc/swaps).
 */
int procswaps_read(char *text, size_t textlen, struct procswaps_row *rows, int cap);

/* Whether @path is (or is the device of) an area in /proc/swaps. */
bool procswaps_has(const char *path);

#endif /* USWAP_BENCH_PROCSWAPS_H */
