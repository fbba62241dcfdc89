/* SPDX-License-Identifier: MIT */
/*
 * bench_io.c - `uswap bench io`: options, the swap file it may make, the
 * loop over device specs x orders x threads, and the progress line.
 *
 * Each measurement (bench_io_run.c) is followed by the raw limit of its
 * medium on the same bytes (bench_io_limit.c); bench_io_report.c prints
 * the rows. The swap file of --make-file is created with dd and mkswap
 * and removed at the end (and on SIGINT/SIGTERM/SIGHUP) unless --keep.
 * The benchmark never calls swapon(2): devices live inside the process.
 * It refuses a file or block device that /proc/swaps lists, since
 * writing to the kernel's active swap would corrupt it.
 */
#include "bench_io.h"
#include "cli.h"
#include "procswaps.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CMD "bench io"

#define DEFAULT_SIZE      (256ull << 20)
#define DEFAULT_FILE_SIZE (1ull << 30)
#define MIN_SIZE          (1ull << 20)
#define MIN_FILE_SIZE     (8ull << 20)
#define PROGRESS_AFTER_S  2.0
#define DEFAULT_REPEAT    3

/* The targets, % of the limit. */
#define TARGET_RAM_PCT       70.0 /* both directions, of memcpy */
#define TARGET_ZRAM_LZ4_PCT  80.0 /* both directions, of raw lz4 */
#define TARGET_FILE_IN_PCT   90.0 /* swap-in, of fio's sequential read */

static const char usage_text[] =
"Usage: uswap bench io [OPTIONS]\n"
"\n"
"Swap-out and swap-in throughput per backend, each beside the raw limit of\n"
"the same medium measured in the same run on the same data. For every\n"
"device x order x threads: a new swap system with that device alone;\n"
"the threads swap out their share of the data as order-k folios\n"
"(uswap_swap_out), then swap every folio back in (uswap_swap_in) in the\n"
"same order; the bytes read back are compared with the source (a\n"
"mismatch is an error, exit 1); everything is freed. MB = 10^6 bytes.\n"
"\n"
"Devices:\n"
"  --device SPEC       a device spec (see 'uswap swapon --help'); repeat\n"
"                      for more. Default: ram:1G, zram:1G, zram:1G:zstd,\n"
"                      and file:PATH when --file or --make-file is given\n"
"  --file PATH         add file:PATH to the default set (PATH must hold a\n"
"                      mkswap header)\n"
"  --make-file PATH    create PATH (it must not exist) with dd from\n"
"                      /dev/zero and mkswap, and remove it at the end; it\n"
"                      joins the default set as --file does (with --device,\n"
"                      name it there: --device file:PATH[:direct])\n"
"  --file-size SIZE    size of --make-file's file (default 1G)\n"
"  --keep              do not remove the --make-file file\n"
"  --drop-caches       for file devices, sync and drop the page cache\n"
"                      (echo 1 > /proc/sys/vm/drop_caches, root only)\n"
"                      before the swap-in phase and before fio's reads\n"
"\n"
"Workload:\n"
"  --orders LIST       folio orders, comma list of 0..9 (default 0,4)\n"
"  --threads LIST      thread counts, comma list of 1..64 (default 1,2)\n"
"  --size SIZE         bytes moved each way per measurement, suffix K/M/G\n"
"                      (default 256M; lowered to what the device holds)\n"
"  --data FILE         page contents: the bytes of FILE, repeated\n"
"                      (default /usr/share/common-licenses/GPL-3, else\n"
"                      generated text that lz4 compresses about 2-3x)\n"
"  --repeat N          measure each row and its limit N times, 1..15, and\n"
"                      report the medians (default 3)\n"
"  --batch N           folios per call, 1..256 (default 1: uswap_swap_out\n"
"                      and uswap_swap_in one folio at a time; more:\n"
"                      uswap_swap_out_batch and uswap_swap_in_batch, and\n"
"                      fio on a file runs ioengine io_uring at iodepth\n"
"                      min(N, 32), the file device's default queue depth)\n"
"  --queue             with --batch N: each thread keeps N requests in flight\n"
"                      on a swap queue (uswap_swapq_out/in, refilled as\n"
"                      answers come back) instead of calling batch by batch\n"
"  --warm              before the timed swap-out, swap the same data out and\n"
"                      free it once, untimed: the device's memory (zram's\n"
"                      pool, ram's pages) is then already faulted in, as in\n"
"                      a device that has been in use; without it every\n"
"                      measurement starts on a new device and pays the\n"
"                      kernel's first touch of each page\n"
"\n"
"Output:\n"
"  --json              print one JSON object on stdout (no progress line\n"
"                      unless stderr is a terminal)\n"
"  -h, --help          show this help\n"
"\n"
"Limits, same bytes, same threads, each thread on its own share:\n"
"  ram   memcpy of the same folios into and out of a buffer;\n"
"  zram  the backend's codec on each 4 KiB page alone: LZ4_compress_default\n"
"        and LZ4_decompress_safe, or zstd level 3 (swap-out's limit is\n"
"        compression, swap-in's decompression);\n"
"  file  fio on the same file (sequential write/read, block = folio,\n"
"        ioengine psync, or io_uring with --batch, one job per thread,\n"
"        O_DIRECT as the spec says; random 4 KiB read/write reported\n"
"        too). Null if fio is missing;\n"
"  nbd   a libnbd nbd_pwrite/nbd_pread loop on the same server, one\n"
"        connection per thread, one request at a time.\n"
"Columns ci/out and sh/out: cluster-lock and shared-lock acquisitions per\n"
"swapped-out folio. With --batch 1, swap-in latency p50/p99 per folio.\n"
"Targets: ram >= 70 % of memcpy, zram (lz4) >= 80 % of the codec, file\n"
"swap-in >= 90 % of fio's sequential read; rows below are listed.\n"
"\n"
"Exit status: 0 success, 1 runtime error (including a data mismatch),\n"
"2 usage error.\n";

enum {
	OPT_DEVICE = 256, OPT_FILE, OPT_MAKE_FILE, OPT_FILE_SIZE, OPT_KEEP,
	OPT_DROP_CACHES, OPT_ORDERS, OPT_THREADS, OPT_SIZE, OPT_DATA, OPT_REPEAT,
	OPT_BATCH, OPT_QUEUE, OPT_WARM, OPT_JSON,
};

static const struct option long_options[] = {
	{ "device",      required_argument, NULL, OPT_DEVICE },
	{ "file",        required_argument, NULL, OPT_FILE },
	{ "make-file",   required_argument, NULL, OPT_MAKE_FILE },
	{ "file-size",   required_argument, NULL, OPT_FILE_SIZE },
	{ "keep",        no_argument,       NULL, OPT_KEEP },
	{ "drop-caches", no_argument,       NULL, OPT_DROP_CACHES },
	{ "orders",      required_argument, NULL, OPT_ORDERS },
	{ "threads",     required_argument, NULL, OPT_THREADS },
	{ "size",        required_argument, NULL, OPT_SIZE },
	{ "data",        required_argument, NULL, OPT_DATA },
	{ "repeat",      required_argument, NULL, OPT_REPEAT },
	{ "batch",       required_argument, NULL, OPT_BATCH },
	{ "queue",       no_argument,       NULL, OPT_QUEUE },
	{ "warm",        no_argument,       NULL, OPT_WARM },
	{ "json",        no_argument,       NULL, OPT_JSON },
	{ "help",        no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ------------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------- */

static void opts_default(struct bench_io_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->orders[0] = 0;
	o->orders[1] = 4;
	o->nr_orders = 2;
	o->threads[0] = 1;
	o->threads[1] = 2;
	o->nr_threads = 2;
	o->size_bytes = DEFAULT_SIZE;
	o->file_size = DEFAULT_FILE_SIZE;
	o->repeat = DEFAULT_REPEAT;
	o->batch = 1;
}

static int parse_size_opt(const char *s, uint64_t min, uint64_t *out)
{
	int err = cli_parse_size(s, out);

	if (err)
		return err;
	if (*out < min || *out % USWAP_PAGE_SIZE)
		return -ERANGE;
	return 0;
}

static int spec_ok(const char *spec, char *why, size_t len)
{
	struct uswap_spec_info *si = malloc(sizeof(*si));
	int rc;

	if (!si)
		return -ENOMEM;
	rc = uswap_spec_parse(spec, si, why, len);
	free(si);
	return rc;
}

/* Apply one option. Return: 0, -EINVAL/-ERANGE (bad value), or
 * CLI_EXIT_USAGE after printing its own message. */
static int apply_option(struct bench_io_opts *o, int opt, char *arg)
{
	char why[BENCH_IO_ERR_LEN];
	int n;

	switch (opt) {
	case OPT_DEVICE:
		if (o->nr_devices == BENCH_IO_MAX_DEVICES)
			return cli_usage_error(CMD, "at most %d --device options",
					       BENCH_IO_MAX_DEVICES);
		if (spec_ok(arg, why, sizeof(why)))
			return cli_usage_error(CMD, "--device '%s': %s", arg, why);
		o->devices[o->nr_devices++] = arg;
		return 0;
	case OPT_FILE:
		o->file_path = arg;
		return *arg ? 0 : -EINVAL;
	case OPT_MAKE_FILE:
		o->make_file = arg;
		return *arg ? 0 : -EINVAL;
	case OPT_FILE_SIZE:
		return parse_size_opt(arg, MIN_FILE_SIZE, &o->file_size);
	case OPT_KEEP:
		o->keep = true;
		return 0;
	case OPT_DROP_CACHES:
		o->drop_caches = true;
		return 0;
	case OPT_ORDERS:
		n = cli_parse_int_list(arg, 0, USWAP_MAX_ORDER, o->orders, USWAP_NR_ORDERS);
		o->nr_orders = n > 0 ? n : 0;
		return n < 0 ? n : 0;
	case OPT_THREADS:
		n = cli_parse_int_list(arg, 1, BENCH_IO_MAX_THREADS, o->threads,
				       BENCH_IO_MAX_THREADS);
		o->nr_threads = n > 0 ? n : 0;
		return n < 0 ? n : 0;
	case OPT_SIZE:
		return parse_size_opt(arg, MIN_SIZE, &o->size_bytes);
	case OPT_DATA:
		o->data_path = arg;
		return *arg ? 0 : -EINVAL;
	case OPT_REPEAT:
		return cli_parse_uint(arg, 1, BENCH_IO_MAX_REPEAT, &o->repeat);
	case OPT_BATCH:
		return cli_parse_uint(arg, 1, BENCH_IO_MAX_BATCH, &o->batch);
	case OPT_QUEUE:
		o->queue = true;
		return 0;
	case OPT_WARM:
		o->warm = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	}
	return -EINVAL;
}

static const char *option_hint(int opt)
{
	switch (opt) {
	case OPT_ORDERS:    return "comma list of 0..9";
	case OPT_THREADS:   return "comma list of 1..64";
	case OPT_SIZE:      return "a multiple of 4K, at least 1M";
	case OPT_FILE_SIZE: return "a multiple of 4K, at least 8M";
	case OPT_REPEAT:    return "1..15";
	case OPT_BATCH:     return "1..256";
	}
	return "a non-empty path";
}

/* Checks between options, once all are read. */
static int finish_opts(struct bench_io_opts *o)
{
	if (o->make_file && o->file_path && strcmp(o->make_file, o->file_path))
		return cli_usage_error(CMD, "--file and --make-file name different files");
	if (!o->make_file && o->keep)
		return cli_usage_error(CMD, "--keep only applies to --make-file");
	if (!o->make_file && o->file_size != DEFAULT_FILE_SIZE)
		return cli_usage_error(CMD, "--file-size only applies to --make-file");
	if (o->queue && o->batch < 2)
		return cli_usage_error(CMD, "--queue keeps --batch N requests in flight: "
				       "give --batch N (2..%d) too", BENCH_IO_MAX_BATCH);
	if (o->file_path && o->nr_devices)
		return cli_usage_error(CMD, "--file adds to the default set; with "
				       "--device, name the file as --device file:PATH");
	/* --make-file alone adds the file to the default set; with --device
	 * the devices name it themselves. */
	if (o->make_file && !o->nr_devices)
		o->file_path = o->make_file;
	return 0;
}

/*
 * parse_opts() - fill @o from the command line.
 * Return: 0 to run; CLI_EXIT_USAGE after a message; -1 when --help was
 * printed (exit 0).
 */
static int parse_opts(int argc, char **argv, struct bench_io_opts *o)
{
	int opt, rc;

	opts_default(o);
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":h", long_options, usage_text)) > 0) {
		rc = apply_option(o, opt, optarg);
		if (rc == CLI_EXIT_USAGE)
			return rc;
		if (rc)
			return cli_usage_error(CMD, "invalid --%s value '%s' (%s)",
					       cli_option_name(long_options, opt), optarg,
					       option_hint(opt));
	}
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	return finish_opts(o);
}

/* ------------------------------------------------------------------------
 * The swap file of --make-file, and the page cache
 * ---------------------------------------------------------------------- */

static char made_file[4096]; /* removed on exit and on a fatal signal */

static void remove_made_file(void)
{
	if (made_file[0])
		unlink(made_file);
	made_file[0] = '\0';
}

static void on_fatal_signal(int sig)
{
	if (made_file[0])
		unlink(made_file); /* async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Create @path (must not exist, mode 0600), fill it with zeroes by dd and
 * run mkswap on it. Return: 0 or CLI_EXIT_RUNTIME after a message. */
static int make_swap_file(const char *path, uint64_t size)
{
	char err[4300];
	int rc;

	if (access(path, F_OK) == 0) /* before it is ours to remove */
		return cli_runtime_error(CMD, "--make-file %s: File exists (refusing to "
					 "overwrite it)", path);
	snprintf(made_file, sizeof(made_file), "%s", path);
	signal(SIGINT, on_fatal_signal);
	signal(SIGTERM, on_fatal_signal);
	signal(SIGHUP, on_fatal_signal);
	rc = cli_make_swap_file(path, size, err, sizeof(err));
	if (rc == -EEXIST)
		made_file[0] = '\0'; /* not ours: leave it */
	if (rc)
		return cli_runtime_error(CMD, "--make-file: %s", err);
	return 0;
}

int bench_io_drop_caches(char *err, size_t errlen)
{
	int fd, e;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "--drop-caches: /proc/sys/vm/drop_caches: %s",
			 strerror(e));
		return -e;
	}
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------------
 * Specs: the default set, labels, and the kernel's own swap
 * ---------------------------------------------------------------------- */

/* "file:" + @path with ':' and '\' escaped. */
static char *file_spec(const char *path)
{
	size_t len = strlen(path);
	char *s = malloc(5 + 2 * len + 1), *p;

	if (!s)
		return NULL;
	p = stpcpy(s, "file:");
	for (; *path; path++) {
		if (*path == ':' || *path == '\\')
			*p++ = '\\';
		*p++ = *path;
	}
	*p = '\0';
	return s;
}

/* Fill the row's description from its spec. Return: 0 or CLI_EXIT_*. */
static int row_describe(struct bench_io_row *row, const char *spec)
{
	struct uswap_spec_info *si = malloc(sizeof(*si));
	char why[BENCH_IO_ERR_LEN];

	if (!si)
		return cli_runtime_error(CMD, "out of memory");
	if (uswap_spec_parse(spec, si, why, sizeof(why))) {
		free(si);
		return cli_usage_error(CMD, "'%s': %s", spec, why);
	}
	const struct uswap_spec_layer *dev = uswap_spec_device(si);
	const char *algo = uswap_spec_get(dev, "algo"), *path = uswap_spec_get(dev, "path");
	const char *direct = uswap_spec_get(dev, "direct");

	if (path && procswaps_has(path)) {
		int rc = cli_runtime_error(CMD, "%s is in use as the kernel's swap "
					   "(/proc/swaps): refusing to write to it", path);

		free(si);
		return rc;
	}
	const char *nolimit = NULL;

	for (unsigned int i = 0; i + 1 < si->nr_layers; i++)
		if (!strcmp(si->layers[i].kind, "mirror") || !strcmp(si->layers[i].kind, "crypt"))
			nolimit = si->layers[i].kind;
	row->direct = direct && !strcmp(direct, "true");
	snprintf(row->spec, sizeof(row->spec), "%s", spec);
	/* A mirror has no one medium to measure a limit on, and what crypt
	 * hands its device is not the data the limit would be measured on. */
	snprintf(row->kind, sizeof(row->kind), "%s", nolimit ? nolimit : dev->kind);
	snprintf(row->algo, sizeof(row->algo), "%s", algo ? algo : "");
	snprintf(row->backend, sizeof(row->backend), "%s%s%s%s%s%s",
		 si->nr_layers > 1 ? si->layers[0].kind : "", si->nr_layers > 1 ? "+" : "",
		 dev->kind, algo ? "-" : "",
		 algo ? algo : "", row->direct ? "-direct" : "");
	row->target_out_pct = row->target_in_pct = NAN;
	if (!strcmp(dev->kind, "ram")) {
		row->target_out_pct = row->target_in_pct = TARGET_RAM_PCT;
	} else if (!strcmp(dev->kind, "zram") && algo && !strcmp(algo, "lz4")) {
		row->target_out_pct = row->target_in_pct = TARGET_ZRAM_LZ4_PCT;
	} else if (!strcmp(dev->kind, "file")) {
		row->target_in_pct = TARGET_FILE_IN_PCT;
	}
	free(si);
	return 0;
}

/* ------------------------------------------------------------------------
 * The run
 * ---------------------------------------------------------------------- */

struct progress {
	bool enabled;
	bool tty;
	bool shown;       /* a line is on the terminal, to be cleared */
	uint64_t t0_ns;
};

static void progress_step(struct progress *p, unsigned int i, unsigned int nr,
			  const struct bench_io_row *row)
{
	double s = (double)(cli_now_ns() - p->t0_ns) / 1e9;

	if (!p->enabled || s < PROGRESS_AFTER_S)
		return;
	fprintf(stderr, "%suswap " CMD ": %4.0f s  [%u/%u] %s order %u, %u thread%s%s",
		p->tty ? "\r\033[K" : "", s, i + 1, nr, row->spec, row->order,
		row->threads, row->threads == 1 ? "" : "s", p->tty ? "" : "\n");
	fflush(stderr);
	p->shown = p->tty;
}

static void progress_end(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = false;
}

/* Keep the figures of the repetition just measured. */
static void sample_save(struct bench_io_row *row)
{
	struct bench_io_sample *sm = &row->run[row->nr_runs++];

	sm->swapout_s = row->swapout_s;
	sm->swapin_s = row->swapin_s;
	sm->swapout_mbps = row->swapout_mbps;
	sm->swapin_mbps = row->swapin_mbps;
	sm->limit_out_mbps = row->limit_out_mbps;
	sm->limit_in_mbps = row->limit_in_mbps;
	sm->compress_ratio = row->compress_ratio;
	sm->memcpy_fresh_mbps = row->memcpy_fresh_mbps;
	sm->fio = row->fio;
	sm->swapin_p50_us = row->swapin_p50_us;
	sm->swapin_p99_us = row->swapin_p99_us;
	sm->limit_in_p50_us = row->limit_in_p50_us;
	sm->limit_in_p99_us = row->limit_in_p99_us;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	/* NAN (no figure) sorts last and is never the median of figures. */
	if (isnan(x) || isnan(y))
		return isnan(x) - isnan(y);
	return (x > y) - (x < y);
}

/* The median of the field at byte @off of each sample; NAN if none. */
static double median_of(const struct bench_io_row *row, size_t off)
{
	double v[BENCH_IO_MAX_REPEAT];
	unsigned int n = 0;

	for (unsigned int i = 0; i < row->nr_runs; i++) {
		double x;

		memcpy(&x, (const char *)&row->run[i] + off, sizeof(x));
		if (!isnan(x))
			v[n++] = x;
	}
	if (!n)
		return NAN;
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Each figure of the row becomes the median over its repetitions (each
 * figure on its own: the % columns divide medians). */
static void row_medians(struct bench_io_row *row)
{
#define MED(f) row->f = median_of(row, offsetof(struct bench_io_sample, f))
	MED(swapout_s);
	MED(swapin_s);
	MED(swapout_mbps);
	MED(swapin_mbps);
	MED(limit_out_mbps);
	MED(limit_in_mbps);
	MED(compress_ratio);
	MED(memcpy_fresh_mbps);
	MED(fio.seq_read_mbps);
	MED(fio.seq_write_mbps);
	MED(fio.rand_read_mbps);
	MED(fio.rand_write_mbps);
	MED(fio.loop_read_mbps);
	MED(fio.loop_write_mbps);
	MED(swapin_p50_us);
	MED(swapin_p99_us);
	MED(limit_in_p50_us);
	MED(limit_in_p99_us);
#undef MED
}

/* The device specs: the user's, or the default set. Return: the count. */
static unsigned int device_list(const struct bench_io_opts *o, const char **specs,
				char **owned)
{
	static const char *const defaults[] = { "ram:1G", "zram:1G", "zram:1G:zstd" };
	unsigned int nr = 0;

	*owned = NULL;
	if (o->nr_devices) {
		memcpy(specs, o->devices, o->nr_devices * sizeof(*specs));
		return o->nr_devices;
	}
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		specs[nr++] = defaults[i];
	if (o->file_path) {
		*owned = file_spec(o->file_path);
		if (*owned)
			specs[nr++] = *owned;
	}
	return nr;
}

static bool memory_suffices(uint64_t size)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	/* source, destination, memcpy store and codec buffer, plus the
	 * device's own copy: about five times the size. */
	return pages <= 0 || psz <= 0 || size <= (uint64_t)pages * (uint64_t)psz / 5;
}

static int bench_io(const struct bench_io_opts *o)
{
	const char *specs[BENCH_IO_MAX_DEVICES + 1];
	struct bench_io_row *rows = NULL;
	struct bench_io_data data = { 0 };
	struct bench_io_machine mach;
	struct progress prog = { 0 };
	char err[BENCH_IO_ERR_LEN] = "";
	char *owned = NULL;
	unsigned int nr_specs, nr_rows, r = 0;
	int rc;

	if (!memory_suffices(o->size_bytes))
		return cli_runtime_error(CMD, "--size %llu: needs about 5 times that in "
					 "memory", (unsigned long long)o->size_bytes);
	if (o->drop_caches && access("/proc/sys/vm/drop_caches", W_OK))
		return cli_runtime_error(CMD, "--drop-caches: cannot write "
					 "/proc/sys/vm/drop_caches: %s (run as root)",
					 strerror(errno));
	if (o->make_file) {
		rc = make_swap_file(o->make_file, o->file_size);
		if (rc)
			goto out;
	}
	nr_specs = device_list(o, specs, &owned);
	nr_rows = nr_specs * (unsigned int)o->nr_orders * (unsigned int)o->nr_threads;
	rows = calloc(nr_rows, sizeof(*rows));
	if (!rows || (o->file_path && !owned && !o->nr_devices)) {
		rc = cli_runtime_error(CMD, "out of memory");
		goto out;
	}
	for (unsigned int s = 0; s < nr_specs; s++)
		for (int k = 0; k < o->nr_orders; k++)
			for (int t = 0; t < o->nr_threads; t++, r++) {
				rc = row_describe(&rows[r], specs[s]);
				if (rc)
					goto out;
				rows[r].order = (unsigned int)o->orders[k];
				rows[r].threads = (unsigned int)o->threads[t];
				rows[r].batch = o->batch;
				rows[r].queue = o->queue;
				rows[r].warm = o->warm;
				rows[r].bytes = o->size_bytes;
			}
	rc = bench_io_data_init(&data, o->size_bytes, o->data_path, err, sizeof(err));
	if (rc) {
		rc = cli_runtime_error(CMD, "%s", err);
		goto out;
	}
	bench_io_machine_get(&mach);

	prog.tty = isatty(STDERR_FILENO);
	prog.enabled = !o->json || prog.tty;
	prog.t0_ns = cli_now_ns();
	for (r = 0; r < nr_rows; r++) {
		struct bench_io_row *row = &rows[r];
		bool drop = o->drop_caches && !strcmp(row->kind, "file");

		progress_step(&prog, r, nr_rows, row);
		/* Repetition 0 caps bytes to the device, so it measures the
		 * swap path first; after it, odd repetitions take the limit
		 * first, so neither side always finds caches (page cache,
		 * the host's cache of the virtual disk) the other warmed. */
		row->bytes = o->size_bytes;
		for (row->rep = 0; row->rep < o->repeat; row->rep++) {
			if (row->rep % 2) {
				rc = bench_io_limit(&data, row, drop, err, sizeof(err));
				if (!rc)
					rc = bench_io_measure(&data, row, drop, err,
							      sizeof(err));
			} else {
				rc = bench_io_measure(&data, row, drop, err, sizeof(err));
				if (!rc)
					rc = bench_io_limit(&data, row, drop, err,
							    sizeof(err));
			}
			if (rc) {
				progress_end(&prog);
				rc = cli_runtime_error(CMD, "%s order %u, %u thread%s: %s",
						       row->spec, row->order, row->threads,
						       row->threads == 1 ? "" : "s", err);
				goto out;
			}
			sample_save(row);
		}
		row_medians(row);
		if (row->write_errors || row->read_errors)
			fprintf(stderr, "uswap " CMD ": %s: %llu write and %llu read errors "
				"(data was verified)\n", row->spec,
				(unsigned long long)row->write_errors,
				(unsigned long long)row->read_errors);
	}
	progress_end(&prog);
	if (o->json)
		bench_io_print_json(o, &data, &mach, rows, nr_rows);
	else
		bench_io_print_table(o, &data, &mach, rows, nr_rows);
	rc = CLI_EXIT_OK;
out:
	bench_io_limit_fini();
	bench_io_data_fini(&data);
	free(rows);
	free(owned);
	if (o->make_file && !o->keep)
		remove_made_file();
	made_file[0] = '\0';
	return rc;
}

int cmd_bench_io(int argc, char **argv)
{
	struct bench_io_opts opts;
	int rc = parse_opts(argc, argv, &opts);

	if (rc < 0)
		return CLI_EXIT_OK;
	if (rc)
		return rc;
	return bench_io(&opts);
}
