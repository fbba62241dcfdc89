// SPDX-License-Identifier: MIT
/*
 * bench_lock.c - `uswap bench lock`: what a lock and a cache line cost on
 * this machine, the numbers the lab's virtual-time cost table is
 * calibrated from (docs/lab.md, "The cost table").
 *
 *  - uncontended: one thread takes and releases a spinlock, as
 *    src/util/lock.h does (an exchange to take, a release store to give);
 *  - line: two threads on two CPUs take turns writing one shared word, so
 *    each write moves the line from the other CPU (the `line` key);
 *  - handover: two threads take turns holding a lock and bumping a
 *    counter on another line, so each turn moves the lock's line and the
 *    data's line (`lock` + `handover_lines` x `line`).
 *
 * Each figure is the median of --repeat runs. With one CPU the two
 * threads cannot run at once and the turn-taking figures are scheduler
 * figures: the benchmark says so.
 */
#include "bench_alloc.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD "bench lock"

static const char usage_text[] =
"Usage: uswap bench lock [--ops N] [--repeat N] [--json]\n"
"\n"
"What a lock and a cache line cost here: an uncontended spinlock\n"
"acquisition and release, a cache line moved between two CPUs, and a\n"
"lock handed over between two CPUs with the data it protects. These are\n"
"the measured entries of the lab's virtual-time cost table (docs/lab.md).\n"
"\n"
"  --ops N      turns per run (default 1000000)\n"
"  --repeat N   runs; each figure is their median (default 5)\n"
"  --json       one JSON object on stdout\n"
"  -h, --help   show this help\n";

struct lock_opts {
	uint64_t ops;
	unsigned int repeat;
	bool json;
};

/* Two lines apart, so the lock and the data each have their own. */
struct shared {
	_Alignas(64) _Atomic uint32_t lock;
	_Alignas(64) _Atomic uint64_t word;
	_Alignas(64) _Atomic int go;
};

struct turn_arg {
	struct shared *sh;
	uint64_t ops;
	unsigned int id;     /* 0 or 1: whose turn is word % 2 == id */
	bool use_lock;
	int cpu;             /* pin here, or -1 */
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void lock_take(_Atomic uint32_t *l)
{
	while (atomic_exchange_explicit(l, 1, memory_order_acquire))
		while (atomic_load_explicit(l, memory_order_relaxed))
			__builtin_ia32_pause();
}

static void lock_give(_Atomic uint32_t *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

static double run_uncontended(uint64_t ops)
{
	_Atomic uint32_t l = 0;
	double t = now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		lock_take(&l);
		lock_give(&l);
	}
	return (now_ns() - t) / (double)ops;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
}

/* Take turns: wait for word % 2 == id, then bump it (under the lock). */
static void *turns(void *p)
{
	struct turn_arg *a = p;
	struct shared *sh = a->sh;

	pin(a->cpu);
	atomic_fetch_add(&sh->go, 1);
	while (atomic_load(&sh->go) < 2)
		;
	for (uint64_t i = 0; i < a->ops; i++) {
		for (;;) {
			if (a->use_lock)
				lock_take(&sh->lock);
			if (atomic_load_explicit(&sh->word, memory_order_relaxed) % 2 == a->id)
				break;
			if (a->use_lock)
				lock_give(&sh->lock);
			__builtin_ia32_pause();
		}
		atomic_store_explicit(&sh->word,
				      atomic_load_explicit(&sh->word, memory_order_relaxed) + 1,
				      memory_order_release);
		if (a->use_lock)
			lock_give(&sh->lock);
	}
	return NULL;
}

/* ns per turn of two threads on CPUs @c0 and @c1. Return: < 0 on error. */
static double run_turns(uint64_t ops, bool use_lock, int c0, int c1)
{
	struct shared *sh = aligned_alloc(64, sizeof(*sh));
	struct turn_arg a[2];
	pthread_t tid;
	double t;

	if (!sh)
		return -ENOMEM;
	memset(sh, 0, sizeof(*sh));
	a[0] = (struct turn_arg){ sh, ops, 0, use_lock, c0 };
	a[1] = (struct turn_arg){ sh, ops, 1, use_lock, c1 };
	t = now_ns();
	if (pthread_create(&tid, NULL, turns, &a[1])) {
		free(sh);
		return -EAGAIN;
	}
	turns(&a[0]);
	pthread_join(tid, NULL);
	t = (now_ns() - t) / (2.0 * (double)ops);
	free(sh);
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse(int argc, char **argv, struct lock_opts *o)
{
	static const struct option opts[] = {
		{ "ops", required_argument, NULL, 'o' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_parse_u64(optarg, 1000, 1000000000, &o->ops))
				return cli_usage_error(CMD, "--ops: expected 1000..1e9, got '%s'",
						       optarg);
			break;
		case 'r':
			if (cli_parse_uint(optarg, 1, 101, &o->repeat))
				return cli_usage_error(CMD, "--repeat: expected 1..101, got '%s'",
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

int cmd_bench_lock(int argc, char **argv)
{
	struct lock_opts o = { .ops = 1000000, .repeat = 5 };
	double un[101], line[101], hand[101], m_un, m_line, m_hand;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int c1 = cpus > 1 ? 1 : -1, err = parse(argc, argv, &o);

	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	if (cpus < 2)
		fprintf(stderr, "uswap %s: one CPU: the two threads take turns through "
			"the scheduler, so 'line' and 'handover' are not cache figures\n", CMD);
	/* Alternate the three, run after run, so drift hits each alike. */
	for (unsigned int r = 0; r < o.repeat; r++) {
		un[r] = run_uncontended(o.ops);
		line[r] = run_turns(o.ops / 4, false, 0, c1);
		hand[r] = run_turns(o.ops / 4, true, 0, c1);
		if (line[r] < 0 || hand[r] < 0)
			return cli_runtime_error(CMD, "cannot start a thread");
	}
	m_un = median(un, o.repeat);
	m_line = median(line, o.repeat);
	m_hand = median(hand, o.repeat);
	if (o.json) {
		struct cli_json j;

		cli_json_init(&j, stdout);
		cli_json_object_open(&j, NULL, false);
		cli_json_string(&j, "benchmark", "lock");
		cli_json_u64(&j, "cpus", (uint64_t)cpus);
		cli_json_u64(&j, "ops", o.ops);
		cli_json_u64(&j, "repeat", o.repeat);
		cli_json_double(&j, "uncontended_ns", m_un);
		cli_json_double(&j, "line_ns", m_line);
		cli_json_double(&j, "handover_ns", m_hand);
		cli_json_object_close(&j);
		cli_json_finish(&j);
		return CLI_EXIT_OK;
	}
	printf("%-34s %10s\n", "what (median of runs)", "ns");
	printf("%-34s %10.1f\n", "uncontended take + release", m_un);
	printf("%-34s %10.1f\n", "cache line moved between CPUs", m_line);
	printf("%-34s %10.1f\n", "lock + data handed over", m_hand);
	printf("\nlab cost keys: lock=%.0f line=%.0f handover_lines=%.1f\n", m_un, m_line,
	       m_line > 0 ? (m_hand - m_un) / m_line : 0.0);
	return CLI_EXIT_OK;
}
