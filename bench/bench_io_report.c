/* SPDX-License-Identifier: MIT */
/*
 * bench_io_report.c - the results of `uswap bench io`: a table for people
 * or one JSON object for scripts, from the same rows.
 *
 *   swapout/swapin MB/s   bytes / 10^6 / wall time of the phase, all
 *                         threads together
 *   limit                 the medium's raw figure on the same bytes and
 *                         threads (bench_io_limit.c); null when none
 *   %                     100 * uswap / limit
 * Each figure is the median of its --repeat runs (each on its own, so
 * the % divides two medians); JSON lists the runs too.
 * A row meets its target when its % is at least the target (ram 70,
 * zram lz4 80 in both directions; file swap-in 90).
 */
#include "bench_io.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void bench_io_machine_get(struct bench_io_machine *m)
{
	struct utsname u;
	char line[256];
	FILE *f;

	memset(m, 0, sizeof(*m));
	m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
	if (!uname(&u)) {
		snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
		snprintf(m->arch, sizeof(m->arch), "%s", u.machine);
	}
	f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(m->cpu, sizeof(m->cpu), "%s", colon);
		break;
	}
	if (f)
		fclose(f);
}

static double pct(double v, double limit)
{
	return isfinite(v) && isfinite(limit) && limit > 0 ? 100.0 * v / limit : NAN;
}

/* 1 met, 0 missed, -1 no target or no limit. */
static int target_met(double v, double limit, double target)
{
	double p = pct(v, limit);

	if (!isfinite(target) || !isfinite(p))
		return -1;
	return p >= target;
}

/* A number in a column of @w, or "-" when there is none. */
static void cell(double v, int w, int prec)
{
	if (isfinite(v))
		printf(" %*.*f", w, prec, v);
	else
		printf(" %*s", w, "-");
}

static bool any_row(const struct bench_io_row *rows, unsigned int nr, const char *kind)
{
	for (unsigned int i = 0; i < nr; i++)
		if (!strcmp(rows[i].kind, kind))
			return true;
	return false;
}

static void print_limits(const struct bench_io_row *rows, unsigned int nr)
{
	printf("\nLimits (same bytes, same threads, each thread on its own share):\n");
	if (any_row(rows, nr, "ram"))
		printf("  ram   memcpy of the same folios into a buffer (swap-out) and "
		       "out of it (swap-in)\n");
	for (unsigned int i = 0; i < nr; i++)
		if (!strcmp(rows[i].kind, "ram"))
			printf("        order %u, %u thr: memcpy into never-touched memory "
			       "(page faults, as the ram backend's stores) %.1f MB/s\n",
			       rows[i].order, rows[i].threads, rows[i].memcpy_fresh_mbps);
	for (unsigned int i = 0; i < nr; i++) {
		const struct bench_io_row *r = &rows[i];
		bool seen = false;

		if (strcmp(r->kind, "zram"))
			continue;
		for (unsigned int j = 0; j < i; j++)
			seen |= !strcmp(rows[j].kind, "zram") && !strcmp(rows[j].algo, r->algo);
		if (!seen)
			printf("  zram  %s / %s per 4 KiB page; pages compress %.2fx\n",
			       r->limit_out_what, r->limit_in_what, r->compress_ratio);
	}
	for (unsigned int i = 0; i < nr; i++) {
		const struct bench_io_row *r = &rows[i];

		if (strcmp(r->kind, "file"))
			continue;
		if (!strcmp(r->limit_note, "fio not installed")) {
			printf("  file  fio not installed: no limit\n");
			break;
		}
		printf("  %-11s order %u, %u thr: fio seq write %.1f, seq read %.1f, "
		       "rand 4K write %.1f, rand 4K read %.1f MB/s\n", r->backend,
		       r->order, r->threads, r->fio.seq_write_mbps, r->fio.seq_read_mbps,
		       r->fio.rand_write_mbps, r->fio.rand_read_mbps);
		printf("        pwrite/pread loop on the same buffers: %.1f / %.1f MB/s\n",
		       r->fio.loop_write_mbps, r->fio.loop_read_mbps);
		if (i + 1 == nr || strcmp(rows[i + 1].kind, "file"))
			printf("        fio: %s, one job per thread on its "
			       "share, block = folio;\n        page cache %s before "
			       "swap-in and fio's reads\n", r->fio.params, r->drop_caches ?
			       "dropped" : "NOT dropped (no --drop-caches)");
	}
}

/* Per-call swap-in latency (measured with --batch 1), beside the limit's
 * per-read latency where there is one (nbd). */
static void print_latency(const struct bench_io_row *rows, unsigned int nr)
{
	bool header = false;

	for (unsigned int i = 0; i < nr; i++) {
		const struct bench_io_row *r = &rows[i];

		if (!isfinite(r->swapin_p50_us))
			continue;
		if (!header)
			printf("\nSwap-in latency per folio, µs (p50 / p99)%s:\n",
			       any_row(rows, nr, "nbd") ? "; nbd: beside one nbd_pread "
			       "of the folio on the same server" : "");
		header = true;
		printf("  %-16.16s order %u, %u thr: %.1f / %.1f", r->backend, r->order,
		       r->threads, r->swapin_p50_us, r->swapin_p99_us);
		if (isfinite(r->limit_in_p50_us))
			printf("   (raw %.1f / %.1f)", r->limit_in_p50_us, r->limit_in_p99_us);
		printf("\n");
	}
}

static void print_misses(const struct bench_io_row *rows, unsigned int nr)
{
	bool header = false;

	for (unsigned int i = 0; i < nr; i++) {
		const struct bench_io_row *r = &rows[i];
		int out = target_met(r->swapout_mbps, r->limit_out_mbps, r->target_out_pct);
		int in = target_met(r->swapin_mbps, r->limit_in_mbps, r->target_in_pct);

		if (out != 0 && in != 0)
			continue;
		if (!header)
			printf("\nBelow target:\n");
		header = true;
		printf("  %s order %u, %u thr:", r->backend, r->order, r->threads);
		if (out == 0)
			printf(" swap-out %.0f %% < %.0f %%", pct(r->swapout_mbps,
			       r->limit_out_mbps), r->target_out_pct);
		if (in == 0)
			printf("%s swap-in %.0f %% < %.0f %%", out == 0 ? "," : "",
			       pct(r->swapin_mbps, r->limit_in_mbps), r->target_in_pct);
		printf("\n");
	}
}

void bench_io_print_table(const struct bench_io_opts *opts,
			  const struct bench_io_data *d,
			  const struct bench_io_machine *m,
			  const struct bench_io_row *rows, unsigned int nr)
{
	bool short_rows = false;

	printf("uswap bench io: %.1f MB each way per measurement (MB = 10^6 bytes), "
	       "data verified on swap-in;\n", (double)opts->size_bytes / 1e6);
	if (opts->repeat > 1)
		printf("every figure is the median of %u runs\n", opts->repeat);
	else
		printf("every figure is from one run (--repeat 1)\n");
	printf("data: %s%s\n", d->source, d->generated ? "" : ", repeated");
	printf("calls: %s\n", opts->batch > 1 && opts->queue
	       ? "uswap_swapq_out / uswap_swapq_in / uswap_swapq_reap"
	       : opts->batch > 1 ? "uswap_swap_out_batch / uswap_swap_in_batch"
	       : "uswap_swap_out / uswap_swap_in, one folio each");
	if (opts->batch > 1)
		printf("%s: %u folios\n", opts->queue ? "queue depth" : "batch per call",
		       opts->batch);
	printf("device: %s\n", opts->warm ? "warmed by an untimed swap-out and free of the "
	       "same data (--warm)" : "new for each measurement (first touch of its memory "
	       "timed)");
	printf("machine: %ld CPUs, Linux %s %s%s%s\n\n", m->nproc, m->kernel, m->arch,
	       m->cpu[0] ? ", " : "", m->cpu);
	printf("%-16s %5s %7s %12s %9s %6s %12s %9s %6s %7s %6s\n", "backend", "order",
	       "threads", "swapout MB/s", "limit", "%", "swapin MB/s", "limit", "%",
	       "ci/out", "sh/out");
	for (unsigned int i = 0; i < nr; i++) {
		const struct bench_io_row *r = &rows[i];
		bool is_short = r->bytes < opts->size_bytes;

		short_rows |= is_short;
		printf("%-16.16s %5u %7u", r->backend, r->order, r->threads);
		cell(r->swapout_mbps, 12, 1);
		cell(r->limit_out_mbps, 9, 1);
		cell(pct(r->swapout_mbps, r->limit_out_mbps), 6, 1);
		cell(r->swapin_mbps, 12, 1);
		cell(r->limit_in_mbps, 9, 1);
		cell(pct(r->swapin_mbps, r->limit_in_mbps), 6, 1);
		cell(r->cluster_locks_out, 7, 2);
		cell(r->shared_locks_out, 6, 2);
		printf("%s%s%s\n", is_short ? " *" : "", r->swpin_cached ? " (cache hits)" : "",
		       r->limit_note[0] && strcmp(r->limit_note, "fio not installed") ?
		       " !" : "");
	}
	printf("ci/out, sh/out: cluster-lock and shared-lock (device, global) "
	       "acquisitions per swapped-out folio\n");
	if (short_rows)
		printf("* moved less than --size: the device holds less\n");
	for (unsigned int i = 0; i < nr; i++)
		if (rows[i].limit_note[0] && strcmp(rows[i].limit_note, "fio not installed"))
			printf("! %s order %u, %u thr: %s\n", rows[i].backend, rows[i].order,
			       rows[i].threads, rows[i].limit_note);
	print_latency(rows, nr);
	print_limits(rows, nr);
	print_misses(rows, nr);
}

/* cli_json writes a non-finite double as null: the one way to say null. */
static void json_null(struct cli_json *j, const char *key)
{
	cli_json_double(j, key, NAN);
}

static void json_met(struct cli_json *j, const char *key, int met)
{
	if (met < 0)
		json_null(j, key);
	else
		cli_json_bool(j, key, met);
}

static void json_row(struct cli_json *j, const struct bench_io_row *r)
{
	cli_json_object_open(j, NULL, false);
	cli_json_string(j, "backend", r->backend);
	cli_json_string(j, "spec", r->spec);
	cli_json_string(j, "kind", r->kind);
	if (r->algo[0])
		cli_json_string(j, "algo", r->algo);
	if (!strcmp(r->kind, "file"))
		cli_json_bool(j, "direct", r->direct);
	cli_json_u64(j, "order", r->order);
	cli_json_u64(j, "threads", r->threads);
	cli_json_u64(j, "bytes", r->bytes);
	cli_json_double(j, "swapout_s", r->swapout_s);
	cli_json_double(j, "swapin_s", r->swapin_s);
	cli_json_double(j, "swapout_mbps", r->swapout_mbps);
	cli_json_double(j, "swapin_mbps", r->swapin_mbps);
	cli_json_object_open(j, "limit_mbps", true);
	cli_json_double(j, "swapout", r->limit_out_mbps);
	cli_json_double(j, "swapin", r->limit_in_mbps);
	cli_json_object_close(j);
	cli_json_object_open(j, "limit_source", true);
	cli_json_string(j, "swapout", r->limit_out_what);
	cli_json_string(j, "swapin", r->limit_in_what);
	cli_json_object_close(j);
	if (r->limit_note[0])
		cli_json_string(j, "limit_note", r->limit_note);
	else
		json_null(j, "limit_note");
	cli_json_double(j, "swapout_pct_of_limit", pct(r->swapout_mbps, r->limit_out_mbps));
	cli_json_double(j, "swapin_pct_of_limit", pct(r->swapin_mbps, r->limit_in_mbps));
	cli_json_object_open(j, "target_pct", true);
	cli_json_double(j, "swapout", r->target_out_pct);
	cli_json_double(j, "swapin", r->target_in_pct);
	cli_json_object_close(j);
	cli_json_object_open(j, "target_met", true);
	json_met(j, "swapout", target_met(r->swapout_mbps, r->limit_out_mbps,
					  r->target_out_pct));
	json_met(j, "swapin", target_met(r->swapin_mbps, r->limit_in_mbps,
					 r->target_in_pct));
	cli_json_object_close(j);
	if (!strcmp(r->kind, "zram"))
		cli_json_double(j, "compress_ratio", r->compress_ratio);
	if (!strcmp(r->kind, "ram"))
		cli_json_double(j, "memcpy_fresh_mbps", r->memcpy_fresh_mbps);
	if (!strcmp(r->kind, "file")) {
		cli_json_bool(j, "drop_caches", r->drop_caches);
		cli_json_object_open(j, "fio", false);
		cli_json_double(j, "seq_read_mbps", r->fio.seq_read_mbps);
		cli_json_double(j, "seq_write_mbps", r->fio.seq_write_mbps);
		cli_json_double(j, "rand_read_4k_mbps", r->fio.rand_read_mbps);
		cli_json_double(j, "rand_write_4k_mbps", r->fio.rand_write_mbps);
		cli_json_double(j, "loop_pwrite_mbps", r->fio.loop_write_mbps);
		cli_json_double(j, "loop_pread_mbps", r->fio.loop_read_mbps);
		cli_json_string(j, "params", r->fio.params);
		cli_json_object_close(j);
	}
	cli_json_u64(j, "batch", r->batch);
	cli_json_bool(j, "queue", r->queue);
	cli_json_double(j, "swapin_p50_us", r->swapin_p50_us);
	cli_json_double(j, "swapin_p99_us", r->swapin_p99_us);
	cli_json_double(j, "limit_swapin_p50_us", r->limit_in_p50_us);
	cli_json_double(j, "limit_swapin_p99_us", r->limit_in_p99_us);
	cli_json_bool(j, "warm", r->warm);
	cli_json_double(j, "cluster_locks_per_swapout", r->cluster_locks_out);
	cli_json_double(j, "shared_locks_per_swapout", r->shared_locks_out);
	cli_json_u64(j, "swpin_cached", r->swpin_cached);
	cli_json_u64(j, "write_errors", r->write_errors);
	cli_json_u64(j, "read_errors", r->read_errors);
	cli_json_bool(j, "verified", true); /* a mismatch ends the run */
	cli_json_array_open(j, "runs", false);
	for (unsigned int i = 0; i < r->nr_runs; i++) {
		const struct bench_io_sample *sm = &r->run[i];

		cli_json_object_open(j, NULL, true);
		cli_json_double(j, "swapout_mbps", sm->swapout_mbps);
		cli_json_double(j, "swapin_mbps", sm->swapin_mbps);
		cli_json_double(j, "limit_swapout_mbps", sm->limit_out_mbps);
		cli_json_double(j, "limit_swapin_mbps", sm->limit_in_mbps);
		cli_json_object_close(j);
	}
	cli_json_array_close(j);
	cli_json_object_close(j);
}

void bench_io_print_json(const struct bench_io_opts *opts,
			 const struct bench_io_data *d,
			 const struct bench_io_machine *m,
			 const struct bench_io_row *rows, unsigned int nr)
{
	const char *fio = bench_io_fio_path();
	struct cli_json j;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_string(&j, "benchmark", "io");
	cli_json_u64(&j, "size_bytes", opts->size_bytes);
	cli_json_u64(&j, "repeat", opts->repeat);
	cli_json_string(&j, "statistic", "median");
	cli_json_u64(&j, "mb_bytes", 1000000);
	cli_json_object_open(&j, "data", true);
	cli_json_string(&j, "source", d->source);
	cli_json_bool(&j, "generated", d->generated);
	cli_json_object_close(&j);
	cli_json_object_open(&j, "machine", true);
	cli_json_i64(&j, "nproc", m->nproc);
	cli_json_string(&j, "kernel", m->kernel);
	cli_json_string(&j, "arch", m->arch);
	cli_json_string(&j, "cpu", m->cpu);
	cli_json_object_close(&j);
	cli_json_bool(&j, "drop_caches", opts->drop_caches);
	if (fio)
		cli_json_string(&j, "fio", fio);
	else
		json_null(&j, "fio");
	cli_json_array_open(&j, "rows", false);
	for (unsigned int i = 0; i < nr; i++)
		json_row(&j, &rows[i]);
	cli_json_array_close(&j);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}
