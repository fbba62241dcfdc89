// SPDX-License-Identifier: MIT
/*
 * stress.c - `uswap stress`: options, the run (start, checkpoints,
 * stop, drain, final oracle) and the report. See stress.h for the parts.
 */
#include "cli.h"
#include "stress.h"
#include "stress_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uswap/lab.h>

#define CMD "stress"

static const char usage_text[] =
"Usage: uswap stress [OPTIONS]\n"
"\n"
"Drive the whole stack at once against a shadow model, with read and write\n"
"errors injected, and check that nothing is lost. Worker threads swap\n"
"folios of orders 0..4 out and in, dup (fork) and free them, every page\n"
"stamped; pager threads write and read a userfaultfd region under a\n"
"resident limit; a churn thread swaps random devices off and on (the last\n"
"of a priority too). Devices: ram, zram lz4 and zstd, mkswap'd files, and\n"
"faulty: wrappers. At each checkpoint the run is quiesced and every slot's\n"
"count is compared with the model; at the end every page is read back and\n"
"every device must be empty.\n"
"\n"
"Options:\n"
"  -d, --duration SECONDS  run this long (default 10, or until --ops)\n"
"  --ops N                 stop after N swap-path operations\n"
"  -t, --threads N         swap-path workers (default 2)\n"
"  --objects N             swap-path folios in the model (default 4096)\n"
"  --pager-threads N       pager threads (default 1; 0: no pager)\n"
"  --pager-size SIZE       pager region (default 32M)\n"
"  --pager-limit SIZE      its resident limit (default 8M)\n"
"  --read-errors RATE      fraction of reads the faulty devices fail\n"
"                          (default 0.001)\n"
"  --write-errors RATE     the same for writes (default 0.001)\n"
"  --checkpoint SECONDS    between oracle runs (default 1)\n"
"  --churn SECONDS         between swapoff/swapon of a random device, one\n"
"                          time in four a pager device (default 0.5; 0:\n"
"                          never)\n"
"  --migrate               workers hop between CPUs (uswap_thread_set_cpu)\n"
"  --processes N           also a tree of N processes (2..16) sharing one\n"
"                          swap subsystem under uswap run --daemon with\n"
"                          --pager-limit: forked, exec'd and SIGKILLed\n"
"                          children, each checking its pages against its\n"
"                          own model; no slot may be left once it ends\n"
"                          (default 0: none)\n"
"  --tree-worker SPEC      what the tree's processes run; not for direct use\n"
"  --dir DIR               where the swap files go (default $TMPDIR or /tmp)\n"
"  --seed N                replay a run (default: from the clock, printed)\n"
"  --mutate KIND           check the oracle: flip-byte (flip a byte of a\n"
"                          swapped page in a swap file) or skip-free (skip\n"
"                          one free); the run must then fail, naming it\n"
"  --json                  one JSON object on stdout\n"
"  --plot FILE.svg         draw the pager's resident memory, each device's\n"
"                          use and the swap-out/swap-in rates over the run\n"
"                          (read every 0.2 s) with gnuplot; skipped with a\n"
"                          note if gnuplot is missing\n"
"  -q, --quiet             no progress lines on stderr\n"
"  -h, --help              show this help\n"
"\n"
"Exit status: 0 nothing lost, wrong, doubly allocated or leaked, and every\n"
"read error injected surfaced as -EIO (or a lost pager page); 1 a\n"
"violation (the seed is printed to replay it) or a runtime error; 2 usage\n"
"error.\n";

enum {
	OPT_OPS = 256, OPT_OBJECTS, OPT_PAGER_THREADS, OPT_PAGER_SIZE, OPT_PAGER_LIMIT,
	OPT_READ, OPT_WRITE, OPT_CHECKPOINT, OPT_CHURN, OPT_MIGRATE, OPT_DIR, OPT_SEED,
	OPT_MUTATE, OPT_JSON, OPT_PLOT, OPT_PROCESSES, OPT_TREE_WORKER,
};

static const struct option long_options[] = {
	{ "duration",      required_argument, NULL, 'd' },
	{ "ops",           required_argument, NULL, OPT_OPS },
	{ "threads",       required_argument, NULL, 't' },
	{ "objects",       required_argument, NULL, OPT_OBJECTS },
	{ "pager-threads", required_argument, NULL, OPT_PAGER_THREADS },
	{ "pager-size",    required_argument, NULL, OPT_PAGER_SIZE },
	{ "pager-limit",   required_argument, NULL, OPT_PAGER_LIMIT },
	{ "read-errors",   required_argument, NULL, OPT_READ },
	{ "write-errors",  required_argument, NULL, OPT_WRITE },
	{ "checkpoint",    required_argument, NULL, OPT_CHECKPOINT },
	{ "churn",         required_argument, NULL, OPT_CHURN },
	{ "migrate",       no_argument,       NULL, OPT_MIGRATE },
	{ "dir",           required_argument, NULL, OPT_DIR },
	{ "seed",          required_argument, NULL, OPT_SEED },
	{ "mutate",        required_argument, NULL, OPT_MUTATE },
	{ "json",          no_argument,       NULL, OPT_JSON },
	{ "plot",          required_argument, NULL, OPT_PLOT },
	{ "processes",     required_argument, NULL, OPT_PROCESSES },
	{ "tree-worker",   required_argument, NULL, OPT_TREE_WORKER }, /* internal */
	{ "quiet",         no_argument,       NULL, 'q' },
	{ "help",          no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_rate(const char *opt, const char *arg, double *rate)
{
	char *end;

	errno = 0;
	*rate = strtod(arg, &end);
	if (end == arg || *end || errno || !(*rate >= 0.0 && *rate <= 0.5))
		return cli_usage_error(CMD, "%s '%s': want a fraction 0..0.5", opt, arg);
	return 0;
}

static int parse_seconds_or_zero(const char *opt, const char *arg, double *v)
{
	if (!strcmp(arg, "0")) {
		*v = 0;
		return 0;
	}
	if (cli_parse_seconds(arg, v) || *v > 1e6)
		return cli_usage_error(CMD, "%s '%s': want seconds (0 or more)", opt, arg);
	return 0;
}

static int parse_size_opt(const char *opt, const char *arg, uint64_t *v)
{
	if (cli_parse_size(arg, v) || *v < (1u << 20) || *v > ((uint64_t)1 << 36))
		return cli_usage_error(CMD, "%s '%s': want 1M..64G", opt, arg);
	return 0;
}

static int apply_option(struct stress_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 'd':
		if (cli_parse_seconds(arg, &o->duration) || o->duration > 1e6)
			return cli_usage_error(CMD, "--duration '%s': want seconds > 0", arg);
		return 0;
	case OPT_OPS:
		if (cli_parse_u64(arg, 1, UINT64_MAX, &o->ops))
			return cli_usage_error(CMD, "--ops '%s': want a count >= 1", arg);
		return 0;
	case 't':
		if (cli_parse_uint(arg, 1, 64, &o->threads))
			return cli_usage_error(CMD, "--threads '%s': want 1..64", arg);
		return 0;
	case OPT_OBJECTS:
		/* The owner's swapoff callback looks at every object. */
		if (cli_parse_uint(arg, 16, 1u << 16, &o->objects))
			return cli_usage_error(CMD, "--objects '%s': want 16..65536", arg);
		return 0;
	case OPT_PAGER_THREADS:
		if (cli_parse_uint(arg, 0, 16, &o->pager_threads))
			return cli_usage_error(CMD, "--pager-threads '%s': want 0..16", arg);
		return 0;
	case OPT_PAGER_SIZE: return parse_size_opt("--pager-size", arg, &o->pager_size);
	case OPT_PAGER_LIMIT: return parse_size_opt("--pager-limit", arg, &o->pager_limit);
	case OPT_READ: return parse_rate("--read-errors", arg, &o->read_rate);
	case OPT_WRITE: return parse_rate("--write-errors", arg, &o->write_rate);
	case OPT_CHECKPOINT:
		if (cli_parse_seconds(arg, &o->checkpoint) || o->checkpoint > 1e6)
			return cli_usage_error(CMD, "--checkpoint '%s': want seconds > 0", arg);
		return 0;
	case OPT_CHURN: return parse_seconds_or_zero("--churn", arg, &o->churn);
	case OPT_MIGRATE: o->migrate = true; return 0;
	case OPT_DIR: o->dir = arg; return 0;
	case OPT_SEED:
		if (cli_parse_u64(arg, 0, UINT64_MAX, &o->seed))
			return cli_usage_error(CMD, "--seed '%s': want a number", arg);
		return 0;
	case OPT_MUTATE:
		if (!strcmp(arg, "flip-byte"))
			o->mutate = STRESS_MUTATE_FLIP_BYTE;
		else if (!strcmp(arg, "skip-free"))
			o->mutate = STRESS_MUTATE_SKIP_FREE;
		else
			return cli_usage_error(CMD, "--mutate '%s': want flip-byte or skip-free",
					       arg);
		return 0;
	case OPT_JSON: o->json = true; return 0;
	case OPT_PLOT: o->plot = arg; return 0;
	case OPT_PROCESSES:
		if (cli_parse_uint(arg, 0, STRESS_MAX_PROCESSES, &o->processes) ||
		    o->processes == 1)
			return cli_usage_error(CMD, "--processes '%s': want 0 or 2..%d", arg,
					       STRESS_MAX_PROCESSES);
		return 0;
	case OPT_TREE_WORKER: o->tree_worker = arg; return 0;
	case 'q': o->quiet = true; return 0;
	}
	return cli_usage_error(CMD, "unknown option");
}

static int parse_opts(int argc, char **argv, struct stress_opts *o)
{
	const char *tmp = getenv("TMPDIR");
	bool seeded = false;
	int opt, err;

	*o = (struct stress_opts){
		.threads = 2, .objects = 4096, .pager_threads = 1,
		.pager_size = 32u << 20, .pager_limit = 8u << 20,
		.read_rate = 0.001, .write_rate = 0.001, .checkpoint = 1, .churn = 0.5,
		.dir = tmp && *tmp ? tmp : "/tmp",
	};
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":d:t:qh", long_options,
				      usage_text)) > 0) {
		seeded |= opt == OPT_SEED;
		if ((err = apply_option(o, opt, optarg)))
			return err;
	}
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (!o->duration && !o->ops)
		o->duration = 10;
	if (o->pager_threads && o->pager_limit >= o->pager_size)
		return cli_usage_error(CMD, "--pager-limit must be below --pager-size, or "
				       "nothing is ever swapped");
	struct stat st;

	if (stat(o->dir, &st))
		return cli_usage_error(CMD, "--dir '%s': %s", o->dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_usage_error(CMD, "--dir '%s': not a directory", o->dir);
	if (access(o->dir, W_OK | X_OK))
		return cli_usage_error(CMD, "--dir '%s': %s", o->dir, strerror(errno));
	if (!seeded)
		o->seed = cli_now_ns() ^ (uint64_t)getpid() << 32;
	return 0;
}

/* ------------------------------------------------------------------------
 * Violations and latency
 * ---------------------------------------------------------------------- */

void stress_violation(struct stress *s, _Atomic uint64_t *counter, const char *fmt, ...)
{
	va_list ap;

	char msg[sizeof(s->reports[0])];
	bool seen = false;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&s->report_lock);
	/* A leak is seen again at every checkpoint: count it once. */
	for (unsigned int i = 0; i < s->nr_reports && !seen; i++)
		seen = !strcmp(s->reports[i], msg);
	if (!seen) {
		atomic_fetch_add(counter, 1);
		if (s->nr_reports < STRESS_MAX_REPORTS)
			memcpy(s->reports[s->nr_reports++], msg, sizeof(msg));
	}
	pthread_mutex_unlock(&s->report_lock);
}

void stress_latency(struct stress *s, uint64_t ns)
{
	uint64_t max = atomic_load_explicit(&s->c.max_latency_ns, memory_order_relaxed);

	while (ns > max && !atomic_compare_exchange_weak(&s->c.max_latency_ns, &max, ns))
		;
}

static uint64_t violations(const struct stress *s)
{
	return s->c.wrong + s->c.lost + s->c.double_alloc + s->c.leaks + s->c.bad_refs;
}

/* ------------------------------------------------------------------------
 * The run
 * ---------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void checkpoint(struct stress *s)
{
	pthread_rwlock_wrlock(&s->quiesce);
	stress_swap_checkpoint(s);
	stress_pager_checkpoint(s);
	atomic_fetch_add(&s->c.checkpoints, 1);
	pthread_rwlock_unlock(&s->quiesce);
}

static bool run_over(struct stress *s)
{
	const struct stress_opts *o = s->o;
	double elapsed = (double)(cli_now_ns() - s->start_ns) / 1e9;

	return interrupted || (o->duration && elapsed >= o->duration) ||
	       (o->ops && atomic_load(&s->ops_done) >= o->ops);
}

static void progress(struct stress *s)
{
	double t = (double)(cli_now_ns() - s->start_ns) / 1e9;

	fprintf(stderr, "uswap stress: %6.0f s  %llu ops  %llu swapoffs  %llu read errors  "
		"%llu violations\n", t, (unsigned long long)atomic_load(&s->ops_done),
		(unsigned long long)atomic_load(&s->c.swapoffs),
		(unsigned long long)(s->c.read_eio + s->c.pager_lost),
		(unsigned long long)violations(s));
}

/* Run checkpoints until the end; a progress line every 10 s; with
 * @plot, a sample every CLI_PLOT_PERIOD_MS. */
static void supervise(struct stress *s, struct cli_plot *plot)
{
	uint64_t next_cp = s->start_ns + (uint64_t)(s->o->checkpoint * 1e9);
	uint64_t next_line = s->start_ns + 10 * UINT64_C(1000000000);
	uint64_t next_sample = s->start_ns;

	while (!run_over(s)) {
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
		if (plot && cli_now_ns() >= next_sample) {
			stress_plot_sample(s, plot);
			next_sample = cli_now_ns() + CLI_PLOT_PERIOD_MS * UINT64_C(1000000);
		}
		if (cli_now_ns() >= next_cp) {
			checkpoint(s);
			next_cp = cli_now_ns() + (uint64_t)(s->o->checkpoint * 1e9);
		}
		if (!s->o->quiet && cli_now_ns() >= next_line) {
			progress(s);
			next_line += 10 * UINT64_C(1000000000);
		}
	}
}

static int make_instance(struct stress_devset *ds)
{
	return uswap_create(NULL, &ds->u);
}

/* Every device of @ds must be empty; then it is swapped off. */
static void finish_set(struct stress *s, struct stress_devset *ds)
{
	struct uswap_device_info info;
	int rc;

	for (unsigned int i = 0; i < ds->nr; i++) {
		struct stress_dev *d = &ds->dev[i];

		if (d->type < 0)
			continue;
		if (uswap_device_info(ds->u, d->type, &info) == 0 && info.inuse)
			stress_violation(s, &s->c.leaks, "leak: %s still has %llu slot(s) in use "
					 "at the end", d->label, (unsigned long long)info.inuse);
	}
	if ((rc = uswap_check(ds->u)))
		stress_violation(s, &s->c.bad_refs, "uswap_check (%s set): %s", ds->name,
				 cli_errno_name(rc));
	uswap_set_unuse(ds->u, NULL, NULL); /* a leaked slot: -EBUSY at once */
	for (unsigned int i = 0; i < ds->nr; i++)
		if (ds->dev[i].type >= 0)
			stress_dev_swapoff(s, ds, i);
}

/* Injected read errors must all have surfaced; injected write errors on
 * the swap-path set must all have been seen (and retried) by the library. */
static void check_faults(struct stress *s, struct uswap_fault_counts *f)
{
	struct uswap_stats st;

	memset(f, 0, 2 * sizeof(*f));
	stress_devset_faults(&s->sets[0], &f[0]);
	if (s->nr_sets > 1)
		stress_devset_faults(&s->sets[1], &f[1]);
	if (f[0].read_errors != s->c.read_eio)
		stress_violation(s, &s->c.lost, "%llu read errors injected on the swap-path "
				 "devices, %llu surfaced as -EIO",
				 (unsigned long long)f[0].read_errors,
				 (unsigned long long)s->c.read_eio);
	if (s->nr_sets > 1 && f[1].read_errors != s->c.pager_lost)
		stress_violation(s, &s->c.lost, "%llu read errors injected on the pager's "
				 "devices, %llu pages reported lost",
				 (unsigned long long)f[1].read_errors,
				 (unsigned long long)s->c.pager_lost);
	st.size = sizeof(st);
	if (uswap_stats_get(s->sets[0].u, &st) == 0 &&
	    st.write_errors != f[0].write_errors)
		stress_violation(s, &s->c.lost, "%llu write errors injected on the swap-path "
				 "devices, the library saw %llu",
				 (unsigned long long)f[0].write_errors,
				 (unsigned long long)st.write_errors);
}

static void report_text(const struct stress *s, const struct uswap_fault_counts *f,
			double secs, const char *pager_note, const char *tree_note)
{
	const struct stress_counts *c = &s->c;

	printf("uswap stress: seed %llu, %.1f s, %u+%u threads\n",
	       (unsigned long long)s->o->seed, secs, s->o->threads,
	       s->pager_ran ? s->o->pager_threads : 0);
	printf("  swap path  %llu swap-outs (%llu kept in memory), %llu swap-ins, %llu dups, "
	       "%llu frees, %llu writes, %llu drops\n", (unsigned long long)c->swap_out,
	       (unsigned long long)c->out_kept, (unsigned long long)c->swap_in,
	       (unsigned long long)c->dup, (unsigned long long)c->free,
	       (unsigned long long)c->rewrite, (unsigned long long)c->drop);
	printf("  bytes      %.1f MiB out, %.1f MiB in\n", (double)c->bytes_out / (1 << 20),
	       (double)c->bytes_in / (1 << 20));
	if (s->pager_ran)
		printf("  pager      %llu page writes, %llu page reads\n",
		       (unsigned long long)c->pager_writes, (unsigned long long)c->pager_reads);
	else
		printf("  pager      not run: %s\n", pager_note);
	if (s->tree_ran)
		printf("  processes  %u in the tree (%u forked, %u exec'd, %u killed), %llu pages "
		       "checked by its root\n", s->tree_counts[0], s->tree_counts[1],
		       s->tree_counts[2], s->tree_counts[3],
		       (unsigned long long)s->tree_pages_checked);
	else
		printf("  processes  not run: %s\n", tree_note);
	printf("  devices    %llu swapoffs (%llu of the last device of a priority, %llu "
	       "refused), %llu swapons, %llu unuse calls, %llu checkpoints\n",
	       (unsigned long long)c->swapoffs, (unsigned long long)c->swapoff_last_of_prio,
	       (unsigned long long)c->swapoff_failed, (unsigned long long)c->swapons,
	       (unsigned long long)c->unuse_calls, (unsigned long long)c->checkpoints);
	printf("  faults     swap path: %llu read and %llu write errors injected in %llu "
	       "reads and %llu writes; %llu surfaced as -EIO swap-ins, %llu swap-outs gave "
	       "-EIO after retries\n", (unsigned long long)f[0].read_errors,
	       (unsigned long long)f[0].write_errors, (unsigned long long)f[0].reads,
	       (unsigned long long)f[0].writes, (unsigned long long)c->read_eio,
	       (unsigned long long)c->write_eio);
	if (s->pager_ran)
		printf("             pager: %llu read and %llu write errors injected in %llu "
		       "reads and %llu writes; %llu pages reported lost\n",
		       (unsigned long long)f[1].read_errors, (unsigned long long)f[1].write_errors,
		       (unsigned long long)f[1].reads, (unsigned long long)f[1].writes,
		       (unsigned long long)c->pager_lost);
	printf("  latency    max %.0f us (swap path), %.0f us (pager fault)\n",
	       (double)c->max_latency_ns / 1e3,
	       (double)s->pager_fault_ns_max / 1e3);
	printf("  violations %llu wrong, %llu lost, %llu double allocations, %llu leaks, "
	       "%llu other\n", (unsigned long long)c->wrong, (unsigned long long)c->lost,
	       (unsigned long long)c->double_alloc, (unsigned long long)c->leaks,
	       (unsigned long long)c->bad_refs);
	for (unsigned int i = 0; i < s->nr_reports; i++)
		printf("    %s\n", s->reports[i]);
}

static void report_json(const struct stress *s, const struct uswap_fault_counts *f,
			double secs, const char *pager_note, const char *tree_note)
{
	const struct stress_counts *c = &s->c;
	struct cli_json j;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_u64(&j, "seed", s->o->seed);
	cli_json_double(&j, "seconds", secs);
	cli_json_bool(&j, "ok", violations(s) == 0);
	cli_json_object_open(&j, "ops", false);
	cli_json_u64(&j, "swap_out", c->swap_out);
	cli_json_u64(&j, "swap_out_kept", c->out_kept);
	cli_json_u64(&j, "swap_in", c->swap_in);
	cli_json_u64(&j, "dup", c->dup);
	cli_json_u64(&j, "free", c->free);
	cli_json_u64(&j, "write", c->rewrite);
	cli_json_u64(&j, "drop", c->drop);
	cli_json_u64(&j, "pager_write", c->pager_writes);
	cli_json_u64(&j, "pager_read", c->pager_reads);
	cli_json_u64(&j, "swapoff", c->swapoffs);
	cli_json_u64(&j, "swapoff_last_of_prio", c->swapoff_last_of_prio);
	cli_json_u64(&j, "swapoff_refused", c->swapoff_failed);
	cli_json_u64(&j, "swapon", c->swapons);
	cli_json_u64(&j, "unuse_calls", c->unuse_calls);
	cli_json_u64(&j, "checkpoints", c->checkpoints);
	cli_json_object_close(&j);
	cli_json_object_open(&j, "bytes", true);
	cli_json_u64(&j, "out", c->bytes_out);
	cli_json_u64(&j, "in", c->bytes_in);
	cli_json_object_close(&j);
	cli_json_object_open(&j, "faults_injected", true);
	cli_json_u64(&j, "swap_read", f[0].read_errors);
	cli_json_u64(&j, "swap_write", f[0].write_errors);
	cli_json_u64(&j, "pager_read", f[1].read_errors);
	cli_json_u64(&j, "pager_write", f[1].write_errors);
	cli_json_object_close(&j);
	cli_json_object_open(&j, "errors_surfaced", true);
	cli_json_u64(&j, "swap_in_eio", c->read_eio);
	cli_json_u64(&j, "pager_pages_lost", c->pager_lost);
	cli_json_u64(&j, "swap_out_eio", c->write_eio);
	cli_json_object_close(&j);
	cli_json_object_open(&j, "violations", true);
	cli_json_u64(&j, "wrong", c->wrong);
	cli_json_u64(&j, "lost", c->lost);
	cli_json_u64(&j, "double_alloc", c->double_alloc);
	cli_json_u64(&j, "leaks", c->leaks);
	cli_json_u64(&j, "other", c->bad_refs);
	cli_json_object_close(&j);
	cli_json_double(&j, "max_latency_us", (double)c->max_latency_ns / 1e3);
	cli_json_double(&j, "max_pager_fault_us", (double)s->pager_fault_ns_max / 1e3);
	cli_json_bool(&j, "pager", s->pager_ran);
	if (!s->pager_ran)
		cli_json_string(&j, "pager_not_run", pager_note);
	cli_json_object_open(&j, "processes", true);
	cli_json_bool(&j, "ran", s->tree_ran);
	if (s->tree_ran) {
		cli_json_u64(&j, "processes", s->tree_counts[0]);
		cli_json_u64(&j, "forked", s->tree_counts[1]);
		cli_json_u64(&j, "execd", s->tree_counts[2]);
		cli_json_u64(&j, "killed", s->tree_counts[3]);
		cli_json_u64(&j, "pages_checked", s->tree_pages_checked);
	} else {
		cli_json_string(&j, "not_run", tree_note);
	}
	cli_json_object_close(&j);
	cli_json_array_open(&j, "reports", false);
	for (unsigned int i = 0; i < s->nr_reports; i++)
		cli_json_string(&j, NULL, s->reports[i]);
	cli_json_array_close(&j);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

/* Set up both instances, their devices, the pager and the threads. */
static int start(struct stress *s, pthread_t *churn, bool *churning, char *note,
		 size_t notelen)
{
	char err[4400];
	int rc;

	s->nr_sets = s->o->pager_threads ? 2 : 1;
	if (make_instance(&s->sets[0]) || (s->nr_sets > 1 && make_instance(&s->sets[1])))
		return cli_runtime_error(CMD, "uswap_create failed");
	if ((rc = stress_swap_start(s, err, sizeof(err))) ||
	    (rc = stress_devset_init(s, &s->sets[0], "swap", false, err, sizeof(err))))
		return cli_runtime_error(CMD, "%s", err);
	if (s->nr_sets > 1) {
		if ((rc = stress_devset_init(s, &s->sets[1], "pager", true, err, sizeof(err))))
			return cli_runtime_error(CMD, "%s", err);
		rc = stress_pager_start(s, err, sizeof(err));
		if (rc == -EPERM || rc == -ENOSYS) {
			snprintf(note, notelen, "userfaultfd is not available here (%s)",
				 cli_errno_name(rc));
			fprintf(stderr, "uswap stress: pager part skipped: %s\n", note);
			stress_pager_free(s);
		} else if (rc) {
			return cli_runtime_error(CMD, "%s", err);
		} else {
			s->pager_ran = true;
		}
	}
	s->start_ns = cli_now_ns();
	if ((rc = stress_swap_run(s, err, sizeof(err))))
		return cli_runtime_error(CMD, "%s", err);
	if (s->o->churn > 0) {
		*churning = pthread_create(churn, NULL, stress_churn_main, s) == 0;
		if (!*churning)
			return cli_runtime_error(CMD, "cannot start the churn thread");
	}
	return 0;
}

static void stop_and_drain(struct stress *s, pthread_t churn, bool churning)
{
	atomic_store(&s->stop, true);
	if (churning)
		pthread_join(churn, NULL);
	stress_swap_join(s);
	stress_pager_join(s);
	stress_swap_checkpoint(s); /* the last look before the drain */
	stress_pager_checkpoint(s);
	stress_swap_drain(s);
	stress_pager_drain(s);
}

static void teardown(struct stress *s)
{
	for (unsigned int i = 0; i < s->nr_sets; i++) {
		stress_devset_teardown(&s->sets[i]);
		uswap_destroy(s->sets[i].u);
	}
	stress_swap_free(s);
	pthread_rwlock_destroy(&s->quiesce);
}

int cmd_stress(int argc, char **argv)
{
	struct stress_opts o;
	struct stress s = { .o = &o };
	struct uswap_fault_counts f[2];
	pthread_rwlockattr_t ra;
	pthread_t churn;
	bool churning = false;
	char note[128] = "--pager-threads 0";
	struct cli_plot *plot = NULL;
	double secs;
	char tree_note[160] = "--processes 0";
	int rc = parse_opts(argc, argv, &o);

	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (o.tree_worker) /* a process of --processes' tree */
		return stress_tree_worker(o.tree_worker);
	if (o.plot) { /* writable, before anything runs */
		bool made;

		if ((rc = cli_plot_open(CMD, o.plot, &made)))
			return rc;
		plot = cli_plot_new(o.plot, made, "uswap stress", "swap-outs (folios)",
				    "swap-ins (folios)");
		if (!plot)
			return cli_runtime_error(CMD, "out of memory");
	}
	pthread_rwlockattr_init(&ra);
	/* The checkpoint must not starve behind a stream of workers. */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s.quiesce, &ra);
	pthread_mutex_init(&s.report_lock, NULL);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!o.quiet)
		fprintf(stderr, "uswap stress: seed %llu (replay with --seed %llu)\n",
			(unsigned long long)o.seed, (unsigned long long)o.seed);
	rc = start(&s, &churn, &churning, note, sizeof(note));
	if (!rc && o.processes) {
		char err[256];

		if (stress_tree_start(&s, err, sizeof(err)))
			rc = cli_runtime_error(CMD, "%s", err);
	}
	if (rc) {
		atomic_store(&s.stop, true);
		stress_swap_join(&s);
		stress_pager_free(&s);
		teardown(&s);
		free(plot);
		return rc;
	}
	supervise(&s, plot);
	stress_tree_finish(&s, tree_note, sizeof(tree_note));
	stop_and_drain(&s, churn, churning);
	secs = (double)(cli_now_ns() - s.start_ns) / 1e9;
	check_faults(&s, f);
	s.pager_fault_ns_max = stress_pager_fault_ns_max(&s);
	stress_pager_free(&s); /* region gone: the pager set must be empty */
	for (unsigned int i = 0; i < s.nr_sets; i++)
		finish_set(&s, &s.sets[i]);
	if (plot)
		cli_plot_finish(plot, "stress"); /* a failure is said; the verdict stands */
	if (o.json)
		report_json(&s, f, secs, note, tree_note);
	else
		report_text(&s, f, secs, note, tree_note);
	if (interrupted)
		fprintf(stderr, "uswap stress: stopped by signal %d; all checks ran\n",
			(int)interrupted);
	if (violations(&s)) {
		fprintf(stderr, "uswap stress: FAILED: %llu violation(s); replay with --seed %llu\n",
			(unsigned long long)violations(&s), (unsigned long long)o.seed);
		rc = CLI_EXIT_RUNTIME;
	}
	teardown(&s);
	return rc;
}
