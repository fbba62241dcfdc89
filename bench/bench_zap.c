/* SPDX-License-Identifier: MIT */
/*
 * bench_zap.c - `uswap bench zap`: unmapping a batch of ranges of the
 * calling process, the pager's and the agent's zap, by madvise() once per
 * range against uswap_pager_zap_self() (one process_madvise() for the
 * batch where the kernel takes it).
 *
 * MADV_DONTNEED of memory that other threads of the process may hold in
 * their TLB flushes it on each CPU running them: an IPI per call, so a
 * loop pays one per range. Since 6.16 process_madvise() flushes once for
 * the batch. A thread per --threads keeps reading the mapping meanwhile,
 * as a program's threads do while its pager evicts.
 */
#include "cli.h"

#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <uswap/pager.h>

#define CMD "bench zap"
#define PAGE 4096u

static const char usage_text[] =
"Usage: uswap bench zap [OPTIONS]\n"
"\n"
"Unmap (MADV_DONTNEED) a batch of separate one-page ranges of this\n"
"process: madvise() once per range, then uswap_pager_zap_self() (one\n"
"process_madvise() for the batch where the kernel takes it), alternating,\n"
"--repeat times, while --threads threads read the mapping.\n"
"\n"
"Options:\n"
"  --ranges N          ranges per batch, 1..1024 (default 1024)\n"
"  --threads T         threads reading the mapping meanwhile (default 1)\n"
"  --repeat R          batches of each way, alternating (default 20)\n"
"  --json              one JSON object on stdout\n"
"  -h, --help          show this help\n"
"\n"
"Output: each way's median batch time in us, and their ratio.\n"
"Exit status: 0 success, 1 runtime error, 2 usage error.\n";

struct zap_opts {
	unsigned int ranges, threads, repeat;
	bool json;
};

struct zap_reader {
	volatile const char *m;
	size_t len;
	volatile bool *stop;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A thread of the program: its CPU caches the mapping's translations. */
static void *reader(void *arg)
{
	struct zap_reader *r = arg;
	unsigned int sum = 0;

	while (!*r->stop)
		for (size_t i = 0; i < r->len && !*r->stop; i += PAGE)
			sum += (unsigned char)r->m[i];
	return (void *)(uintptr_t)sum;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int parse(int argc, char **argv, struct zap_opts *o)
{
	static const struct option opts[] = {
		{ "ranges", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (cli_parse_uint(optarg, 1, 1024, &o->ranges))
				return cli_usage_error(CMD, "--ranges: expected 1..1024, got '%s'",
						       optarg);
			break;
		case 't':
			if (cli_parse_uint(optarg, 0, 64, &o->threads))
				return cli_usage_error(CMD, "--threads: expected 0..64, got '%s'",
						       optarg);
			break;
		case 'r':
			if (cli_parse_uint(optarg, 1, 1000, &o->repeat))
				return cli_usage_error(CMD, "--repeat: expected 1..1000, got '%s'",
						       optarg);
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return cli_usage_error(CMD, "unknown option or missing value: '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* One batch of @way (0: madvise() per range, 1: uswap_pager_zap_self())
 * over @r, its pages written first. Return: ns, or 0 on an error. */
static uint64_t batch(int way, char *m, size_t len, const struct iovec *r, unsigned int n)
{
	uint64_t t0;
	int err = 0;

	memset(m, 1, len);
	t0 = now_ns();
	if (way == 0) {
		for (unsigned int i = 0; i < n && !err; i++)
			err = madvise(r[i].iov_base, r[i].iov_len, MADV_DONTNEED);
	} else {
		err = uswap_pager_zap_self(r, n);
	}
	t0 = now_ns() - t0;
	return err ? 0 : (t0 ? t0 : 1);
}

static void report(const struct zap_opts *o, uint64_t *ns[2])
{
	static const char *const name[2] = { "madvise per range", "uswap_pager_zap_self" };
	double med[2];
	struct cli_json j;

	for (int w = 0; w < 2; w++) {
		qsort(ns[w], o->repeat, sizeof(uint64_t), cmp_u64);
		med[w] = (double)ns[w][o->repeat / 2] / 1e3;
	}
	if (!o->json) {
		printf("%u one-page ranges per batch, %u reading threads, %u batches each\n",
		       o->ranges, o->threads, o->repeat);
		for (int w = 0; w < 2; w++)
			printf("%-22s %10.1f us\n", name[w], med[w]);
		printf("%-22s %10.2f\n", "ratio", med[0] / med[1]);
		return;
	}
	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_string(&j, "benchmark", "zap");
	cli_json_u64(&j, "ranges", o->ranges);
	cli_json_u64(&j, "threads", o->threads);
	cli_json_u64(&j, "repeat", o->repeat);
	cli_json_double(&j, "madvise_us", med[0]);
	cli_json_double(&j, "zap_self_us", med[1]);
	cli_json_double(&j, "ratio", med[0] / med[1]);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

int cmd_bench_zap(int argc, char **argv)
{
	struct zap_opts o = { .ranges = 1024, .threads = 1, .repeat = 20 };
	int err = parse(argc, argv, &o), rc = CLI_EXIT_OK;
	volatile bool stop = false;
	pthread_t th[64];
	unsigned int started = 0;
	uint64_t *ns[2];
	struct iovec *r;
	size_t len;
	char *m;

	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	len = (size_t)o.ranges * 2 * PAGE;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = calloc(o.ranges, sizeof(*r));
	ns[0] = calloc(o.repeat, sizeof(uint64_t));
	ns[1] = calloc(o.repeat, sizeof(uint64_t));
	if (m == MAP_FAILED || !r || !ns[0] || !ns[1]) {
		rc = cli_runtime_error(CMD, "out of memory");
		goto out;
	}
	madvise(m, len, MADV_NOHUGEPAGE); /* one page per range, not a THP split */
	for (unsigned int i = 0; i < o.ranges; i++)
		r[i] = (struct iovec){ m + (2 * (size_t)i + 1) * PAGE, PAGE };
	struct zap_reader rd = { m, len, &stop };

	for (; started < o.threads; started++)
		if (pthread_create(&th[started], NULL, reader, &rd))
			break;
	for (unsigned int i = 0; i < o.repeat && rc == CLI_EXIT_OK; i++)
		for (int w = 0; w < 2; w++)
			if (!(ns[w][i] = batch(w, m, len, r, o.ranges)))
				rc = cli_runtime_error(CMD, "%s failed",
						       w ? "uswap_pager_zap_self" : "madvise");
	stop = true;
	for (unsigned int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (rc == CLI_EXIT_OK)
		report(&o, ns);
out:
	if (m != MAP_FAILED)
		munmap(m, len);
	free(r);
	free(ns[0]);
	free(ns[1]);
	return rc;
}
