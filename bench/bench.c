// SPDX-License-Identifier: MIT
/*
 * bench.c - `uswap-bench`, the benchmark harness: its own program, so the
 * uswap CLI links neither the raw codecs (lz4, zstd) the harness measures
 * against nor the harness itself. `uswap bench BENCHMARK ...` runs it.
 *
 * `uswap-bench [--help] BENCHMARK [OPTIONS]`; each benchmark takes its own
 * argv (argv[0] = its name) and returns 0, 1 (runtime error) or 2 (usage).
 */
#include "bench_alloc.h"
#include "bench_io.h"
#include "bench_usemem.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct benchmark {
	const char *name;
	cli_cmd_fn fn;
	const char *summary;
};

static const struct benchmark benchmarks[] = {
	{ "alloc", cmd_bench_alloc, "slot allocator: throughput, fallback, balance, lock traffic" },
	{ "io", cmd_bench_io, "swap-out/swap-in MB/s per backend beside its raw limit" },
	{ "usemem", cmd_bench_usemem, "vm-scalability's usemem on the userfaultfd pager" },
	{ "fault", cmd_bench_fault, "the pager's fault round trip (swap-in latency)" },
	{ "lock", cmd_bench_lock, "lock and cache-line costs (the lab's cost table)" },
	{ "uffd", cmd_bench_uffd, "a fault served by a thread against another process" },
	{ "zap", cmd_bench_zap, "a batch of ranges unmapped: madvise() each, or one call" },
	{ NULL, NULL, NULL },
};

static void usage(void)
{
	printf("Usage: uswap bench BENCHMARK [OPTIONS]\n"
	       "   or: uswap-bench BENCHMARK [OPTIONS]\n\nBenchmarks:\n");
	for (const struct benchmark *b = benchmarks; b->name; b++)
		printf("  %-10s %s\n", b->name, b->summary);
	printf("\nRun 'uswap bench BENCHMARK --help' for its options.\n"
	       "Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("bench", "missing benchmark name");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage();
		return CLI_EXIT_OK;
	}
	for (const struct benchmark *b = benchmarks; b->name; b++) {
		int rc;

		if (strcmp(b->name, argv[1]))
			continue;
		rc = b->fn(argc - 1, argv + 1);
		/* A report that did not reach its reader is a failure, as
		 * in uswap itself (`uswap bench alloc > /dev/full`). */
		if ((fflush(stdout) || ferror(stdout)) && rc == CLI_EXIT_OK)
			return cli_runtime_error("bench", "standard output: %s",
						 strerror(errno ? errno : EIO));
		return rc;
	}
	return cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
}
