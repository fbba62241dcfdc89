/* SPDX-License-Identifier: MIT */
/*
 * bench_usemem.c - `uswap bench usemem`: options, the swap system and the
 * pager, the main thread's part of a run (progress, sampling of device
 * use), and the checks after it.
 *
 * vm-scalability's usemem maps memory and dirties it; here each worker
 * thread gets a pager region of --size bytes, writes every page, then
 * reads every page back and checks it, while the pager keeps the regions
 * together under --limit resident bytes by swapping to the devices.
 * --no-pager runs the same workload on plain anonymous memory, for
 * comparing with the kernel's own swap (bench/compare-kernel.sh runs it
 * inside a memory cgroup).
 */
#include "bench_usemem.h"
#include "cli.h"
#include "procswaps.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD "bench usemem"

#define NS_PER_SEC       1000000000ull
#define TICK_NS          (100 * 1000000ull)
#define PROGRESS_AFTER_S 3
#define MAX_SIZE         ((uint64_t)1 << 44)
#define MAX_DATA_BYTES   ((uint64_t)1 << 30)

static const char usage_text[] =
"Usage: uswap bench usemem [OPTIONS] [SIZE]\n"
"\n"
"vm-scalability's usemem on the userfaultfd pager: N worker threads each\n"
"map SIZE bytes in pager regions, write every page, then read every page\n"
"back and check every byte, while the pager keeps all regions together\n"
"under --limit resident bytes by swapping to the devices.\n"
"\n"
"Workload:\n"
"  -n, --workers N     worker threads (default 2; at most 255)\n"
"  -s, --size SIZE     bytes per worker, suffix K/M/G (default 256M); may\n"
"                      be given as the last argument instead\n"
"  --repeat N          write+read rounds (default 1)\n"
"  --random            touch the pages of a pass in random order (default:\n"
"                      sequential)\n"
"  --read-only         read passes only, over memory never written (reads\n"
"                      as zeroes: the pager's zero-page path)\n"
"  --read-again        a second read pass after each read-back\n"
"  --data FILE         page contents are the bytes of FILE, repeated over\n"
"                      all workers' memory (first 8 bytes of each page: a\n"
"                      tag); default: every 8-byte word holds its index\n"
"  --seed N            seed of --random (default 1)\n"
"\n"
"Pager and swap:\n"
"  --limit SIZE        resident bytes of all regions together (the memory\n"
"                      cgroup's memory.max; default half the working set)\n"
"  --device SPEC       a swap device (repeatable): ram:SIZE, zram:SIZE[:zstd],\n"
"                      file:PATH, faulty:OPTS:SPEC, each with [:prio=N]\n"
"                      (default: 4 zram devices of equal default priority,\n"
"                      together 1.25 x the working set)\n"
"  --order K           folio order 0..4: 2^K pages evicted and brought\n"
"                      back together (default 0 = 4 KiB)\n"
"  --handlers N        fault-handler threads (default 1: with the reclaim\n"
"                      thread, the fastest on 2 CPUs; see docs/pager.md)\n"
"  --spin-us US        a handler spins this long for the next fault before\n"
"                      it sleeps (default 50)\n"
"  --no-spin           handlers sleep as soon as there is nothing to do\n"
"  --no-kswapd         no background reclaim thread: faults reclaim for\n"
"                      themselves when the limit is reached\n"
"  --no-move           evict by write-protect and unmap, not UFFDIO_MOVE\n"
"                      (not safe for pinned pages; for comparisons)\n"
"  --readahead PAGES   a fault continuing a sequential stream also maps up\n"
"                      to PAGES pages of the folios after it (0..64,\n"
"                      default 0: off)\n"
"  --batch PAGES       pages evicted per reclaim pass (default 256)\n"
"  --keep-cache        keep a clean copy of each evicted folio in the swap\n"
"                      cache (memory outside the limit; no I/O on refault)\n"
"  --no-keep-clean     free the slots of every folio read back\n"
"  --uffd-kernel-faults  never use user-mode-only userfaultfd (system calls\n"
"                      on region memory then fault pages in; needs root,\n"
"                      vm.unprivileged_userfaultfd=1 or /dev/userfaultfd)\n"
"  --no-pager          plain anonymous memory, no pager and no devices: for\n"
"                      comparing with the kernel's own swap in a memory\n"
"                      cgroup (bench/compare-kernel.sh)\n"
"\n"
"Output:\n"
"  --json              one JSON object on stdout\n"
"  -h, --help          show this help\n"
"\n"
"Output: one line per worker in usemem's form 'N bytes / U usecs = K KB/s'\n"
"(bytes touched over all its passes; KB = 1024 bytes), their sum, the\n"
"write and read throughput, user/sys/wall seconds (getrusage, every\n"
"thread of the process), the devices at their peak use (sampled every\n"
"100 ms), swpout/swpout_fallback per order, swap-ins, and the pager's\n"
"fault service time (median, p99: from reading the fault message to the\n"
"ioctl that maps the folio). Runs longer than 3 s print progress on\n"
"stderr.\n"
"\n"
"Exit status: 0 success, 1 runtime error or a page read back wrong,\n"
"2 usage error.\n";

enum {
	OPT_REPEAT = 256, OPT_RANDOM, OPT_READ_ONLY, OPT_READ_AGAIN, OPT_DATA,
	OPT_SEED, OPT_LIMIT, OPT_DEVICE, OPT_ORDER, OPT_HANDLERS, OPT_SPIN_US,
	OPT_NO_SPIN, OPT_BATCH, OPT_KEEP_CACHE, OPT_NO_KEEP_CLEAN,
	OPT_KERNEL_FAULTS, OPT_NO_PAGER, OPT_JSON, OPT_NO_KSWAPD, OPT_READAHEAD,
	OPT_NO_MOVE,
};

static const struct option long_options[] = {
	{ "workers",            required_argument, NULL, 'n' },
	{ "size",               required_argument, NULL, 's' },
	{ "repeat",             required_argument, NULL, OPT_REPEAT },
	{ "random",             no_argument,       NULL, OPT_RANDOM },
	{ "read-only",          no_argument,       NULL, OPT_READ_ONLY },
	{ "read-again",         no_argument,       NULL, OPT_READ_AGAIN },
	{ "data",               required_argument, NULL, OPT_DATA },
	{ "seed",               required_argument, NULL, OPT_SEED },
	{ "limit",              required_argument, NULL, OPT_LIMIT },
	{ "device",             required_argument, NULL, OPT_DEVICE },
	{ "order",              required_argument, NULL, OPT_ORDER },
	{ "handlers",           required_argument, NULL, OPT_HANDLERS },
	{ "spin-us",            required_argument, NULL, OPT_SPIN_US },
	{ "no-spin",            no_argument,       NULL, OPT_NO_SPIN },
	{ "no-kswapd",          no_argument,       NULL, OPT_NO_KSWAPD },
	{ "no-move",            no_argument,       NULL, OPT_NO_MOVE },
	{ "readahead",          required_argument, NULL, OPT_READAHEAD },
	{ "batch",              required_argument, NULL, OPT_BATCH },
	{ "keep-cache",         no_argument,       NULL, OPT_KEEP_CACHE },
	{ "no-keep-clean",      no_argument,       NULL, OPT_NO_KEEP_CLEAN },
	{ "uffd-kernel-faults", no_argument,       NULL, OPT_KERNEL_FAULTS },
	{ "no-pager",           no_argument,       NULL, OPT_NO_PAGER },
	{ "json",               no_argument,       NULL, OPT_JSON },
	{ "help",               no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ------------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------- */

static void opts_default(struct usemem_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->workers = 2;
	o->size = 256ull << 20;
	o->repeat = 1;
	o->seed = 1;
}

static int parse_page_size(const char *s, uint64_t min, uint64_t *out)
{
	uint64_t v;
	int err = cli_parse_size(s, &v);

	if (err)
		return err;
	if (v % USWAP_PAGE_SIZE)
		return -EINVAL;
	if (v < min || v > MAX_SIZE)
		return -ERANGE;
	*out = v;
	return 0;
}

static int apply_option(struct usemem_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 'n':
		return cli_parse_uint(arg, 1, USEMEM_MAX_WORKERS, &o->workers);
	case 's':
		return parse_page_size(arg, USWAP_PAGE_SIZE, &o->size);
	case OPT_REPEAT:
		return cli_parse_uint(arg, 1, USEMEM_MAX_REPEAT, &o->repeat);
	case OPT_RANDOM:
		o->random = true;
		return 0;
	case OPT_READ_ONLY:
		o->read_only = true;
		return 0;
	case OPT_READ_AGAIN:
		o->read_again = true;
		return 0;
	case OPT_DATA:
		o->data = arg;
		return 0;
	case OPT_SEED:
		return cli_parse_u64(arg, 0, UINT64_MAX, &o->seed);
	case OPT_LIMIT:
		return parse_page_size(arg, USWAP_PAGE_SIZE, &o->limit);
	case OPT_DEVICE:
		if (o->nr_devices == USEMEM_MAX_DEVICES)
			return -ERANGE;
		o->devices[o->nr_devices++] = arg;
		return 0;
	case OPT_ORDER:
		return cli_parse_uint(arg, 0, USWAP_PAGER_MAX_ORDER, &o->order);
	case OPT_HANDLERS:
		return cli_parse_uint(arg, 1, 64, &o->handlers);
	case OPT_SPIN_US:
		return cli_parse_uint(arg, 1, 10000000, &o->spin_us);
	case OPT_NO_SPIN:
		o->no_spin = true;
		return 0;
	case OPT_NO_KSWAPD:
		o->no_kswapd = true;
		return 0;
	case OPT_NO_MOVE:
		o->no_move = true;
		return 0;
	case OPT_READAHEAD:
		return cli_parse_uint(arg, 0, 64, &o->readahead);
	case OPT_BATCH:
		return cli_parse_uint(arg, 1, 65536, &o->batch);
	case OPT_KEEP_CACHE:
		o->keep_cache = true;
		return 0;
	case OPT_NO_KEEP_CLEAN:
		o->no_keep_clean = true;
		return 0;
	case OPT_KERNEL_FAULTS:
		o->kernel_faults = true;
		return 0;
	case OPT_NO_PAGER:
		o->no_pager = true;
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
	case 'n':           return "1..255";
	case 's':           return "a multiple of 4K, up to 16T";
	case OPT_REPEAT:    return "1..85";
	case OPT_SEED:      return "0..18446744073709551615";
	case OPT_LIMIT:     return "a multiple of 4K";
	case OPT_DEVICE:    return "at most 32 devices";
	case OPT_ORDER:     return "0..4";
	case OPT_HANDLERS:  return "1..64";
	case OPT_SPIN_US:   return "1..10000000";
	case OPT_BATCH:     return "1..65536";
	case OPT_READAHEAD: return "0..64 pages";
	}
	return "see --help";
}

/* Return: 0 to run; CLI_EXIT_USAGE after a message; -1 after --help. */
static int parse_opts(int argc, char **argv, struct usemem_opts *o)
{
	bool size_given = false;
	int opt;

	opts_default(o);
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":hn:s:", long_options, usage_text)) > 0) {
		size_given |= opt == 's';
		if (apply_option(o, opt, optarg))
			return cli_usage_error(CMD, "invalid --%s value '%s' (%s)",
					       cli_option_name(long_options, opt), optarg, option_hint(opt));
	}
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (optind < argc) {
		if (size_given)
			return cli_usage_error(CMD, "SIZE given twice (--size and '%s')",
					       argv[optind]);
		if (parse_page_size(argv[optind], USWAP_PAGE_SIZE, &o->size))
			return cli_usage_error(CMD, "invalid SIZE '%s' (a multiple of "
					       "4K, up to 16T)", argv[optind]);
		optind++;
	}
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	for (unsigned int i = 0; i < o->nr_devices; i++)
		if (cli_check_spec(CMD, "--device", o->devices[i]))
			return CLI_EXIT_USAGE;
	if (o->read_only && o->data)
		return cli_usage_error(CMD, "--read-only reads memory never written: "
				       "--data does not apply");
	if (o->no_pager && o->nr_devices)
		return cli_usage_error(CMD, "--no-pager uses the kernel's swap: "
				       "--device does not apply");
	if ((uint64_t)o->workers * o->size / USWAP_PAGE_SIZE > ((uint64_t)1 << 40))
		return cli_usage_error(CMD, "working set too large");
	return 0;
}

/* ------------------------------------------------------------------------
 * Page contents (--data)
 * ---------------------------------------------------------------------- */

/* The file repeated to at least its length + one page, so every page's
 * bytes are contiguous from any offset below the length. */
int usemem_load_data(const char *cmd, const char *path, struct usemem_content *c)
{
	struct stat st;
	uint64_t len, total;
	uint8_t *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_runtime_error(cmd, "--data %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > MAX_DATA_BYTES) {
		close(fd);
		return cli_runtime_error(cmd, "--data %s: not a regular file of 1 byte "
					 "to 1 GiB", path);
	}
	len = (uint64_t)st.st_size;
	total = (len + USWAP_PAGE_SIZE + len - 1) / len * len;
	buf = malloc(total);
	if (!buf) {
		close(fd);
		return cli_runtime_error(cmd, "out of memory for --data");
	}
	for (uint64_t got = 0; got < len;) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0) {
			free(buf);
			close(fd);
			return cli_runtime_error(cmd, "--data %s: short read", path);
		}
		got += (uint64_t)n;
	}
	close(fd);
	for (uint64_t off = len; off < total; off += len)
		memcpy(buf + off, buf, len);
	c->pat = buf;
	c->pat_len = len;
	return 0;
}

/* ------------------------------------------------------------------------
 * The swap system and the pager
 * ---------------------------------------------------------------------- */

struct usemem_run {
	const struct usemem_opts *o;
	struct usemem_content content;
	struct uswap *u;
	struct uswap_pager *pager;
	int types[USEMEM_MAX_DEVICES];
	unsigned int nr_types;
	struct usemem_sync sync;
	struct usemem_worker *w;
	struct usemem_result res;
	struct uswap_stats before;
	uint64_t k_pswpout0, k_pswpin0;
};

static uint64_t working_set(const struct usemem_opts *o)
{
	return (uint64_t)o->workers * o->size;
}

static int swapon_all(struct usemem_run *r)
{
	const struct usemem_opts *o = r->o;
	char specs[4][64];
	const char *list[USEMEM_MAX_DEVICES];
	unsigned int n = o->nr_devices;

	if (n) {
		memcpy(list, o->devices, n * sizeof(list[0]));
	} else {
		/* 4 zram devices of equal default priority holding the whole
		 * working set with a quarter to spare (clean folios keep slots). */
		uint64_t each = working_set(o) / 4 + working_set(o) / 16;

		each = (each + (1u << 20) - 1) >> 20;
		if (each < 4)
			each = 4;
		for (n = 0; n < 4; n++) {
			snprintf(specs[n], sizeof(specs[n]), "zram:%lluM",
				 (unsigned long long)each);
			list[n] = specs[n];
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		char err[256];
		int type = uswap_swapon_spec(r->u, list[i], err, sizeof(err));

		if (type < 0)
			return cli_runtime_error(CMD, "--device %s: %s (%s)", list[i], err,
						 cli_errno_name(type));
		r->types[r->nr_types++] = type;
	}
	return 0;
}

int usemem_explain_eperm(const char *cmd)
{
	fprintf(stderr,
		"uswap %s: userfaultfd is not permitted for this user (EPERM).\n"
		"To allow it, do one of:\n"
		"  - run as root (or with CAP_SYS_PTRACE);\n"
		"  - sysctl vm.unprivileged_userfaultfd=1 (as root; lets every user\n"
		"    handle faults, kernel-mode ones included);\n"
		"  - drop --uffd-kernel-faults: the pager then asks for\n"
		"    user-mode-only faults (UFFD_USER_MODE_ONLY, Linux 5.11+), which\n"
		"    need no privilege;\n"
		"  - give the user read-write access to /dev/userfaultfd (Linux 6.1+).\n",
		cmd);
	return CLI_EXIT_RUNTIME;
}

static int start_pager(struct usemem_run *r)
{
	const struct usemem_opts *o = r->o;
	struct uswap_pager_config cfg = {
		.limit_bytes = r->res.limit_bytes,
		.nr_handlers = o->handlers ? o->handlers : 1,
		.order = o->order,
		.spin_us = o->spin_us,
		.reclaim_batch = o->batch,
		.swap_flags = o->keep_cache ? USWAP_SWAP_KEEP_CACHE : 0,
		.readahead_pages = o->readahead,
	};
	int err;

	if (o->no_spin)
		cfg.flags |= USWAP_PAGER_NO_SPIN;
	if (o->no_kswapd)
		cfg.flags |= USWAP_PAGER_NO_KSWAPD;
	if (o->no_move)
		cfg.flags |= USWAP_PAGER_NO_MOVE;
	if (o->no_keep_clean)
		cfg.flags |= USWAP_PAGER_NO_KEEP_CLEAN;
	if (o->kernel_faults)
		cfg.flags |= USWAP_PAGER_KERNEL_FAULTS;
	err = uswap_pager_create(r->u, &cfg, &r->pager);
	if (err == -EPERM)
		return usemem_explain_eperm(CMD);
	if (err == -ENOSYS)
		return cli_runtime_error(CMD, "this kernel has no userfaultfd with "
					 "write-protection of anonymous memory "
					 "(Linux 5.7+ with CONFIG_USERFAULTFD)");
	if (err == -EINVAL)
		return cli_runtime_error(CMD, "--limit %llu is too small for %u "
					 "handler(s) of order-%u folios (at least %u "
					 "folios each)", (unsigned long long)cfg.limit_bytes,
					 cfg.nr_handlers, cfg.order,
					 USWAP_PAGER_MIN_LIMIT_FOLIOS);
	if (err)
		return cli_runtime_error(CMD, "uswap_pager_create: %s", cli_errno_name(err));
	return 0;
}

static int setup(struct usemem_run *r)
{
	const struct usemem_opts *o = r->o;
	int err;

	r->res.limit_bytes = o->limit ? o->limit : working_set(o) / 2;
	if (o->data && (err = usemem_load_data(CMD, o->data, &r->content)))
		return err;
	if (o->no_pager)
		return 0;
	err = uswap_create(NULL, &r->u);
	if (err)
		return cli_runtime_error(CMD, "uswap_create: %s", cli_errno_name(err));
	err = swapon_all(r);
	if (!err)
		err = start_pager(r);
	return err;
}

static int map_memory(struct usemem_run *r, struct usemem_worker *w)
{
	const struct usemem_opts *o = r->o;
	void *m;
	int err;

	if (!o->no_pager) {
		err = uswap_region_create(r->pager, o->size, &m);
		if (err)
			return cli_runtime_error(CMD, "uswap_region_create(%llu): %s",
						 (unsigned long long)o->size,
						 cli_errno_name(err));
	} else {
		m = mmap(NULL, o->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return cli_runtime_error(CMD, "mmap(%llu): %s",
						 (unsigned long long)o->size, strerror(errno));
		/* Order 0 compares with 4 KiB pages; with --order the kernel's
		 * mTHP settings (sysfs) decide, as for any program. */
		madvise(m, o->size, o->order ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	}
	w->mem = m;
	return 0;
}

static int workers_create(struct usemem_run *r)
{
	const struct usemem_opts *o = r->o;

	r->w = aligned_alloc(64, o->workers * sizeof(*r->w));
	if (!r->w)
		return cli_runtime_error(CMD, "out of memory");
	memset(r->w, 0, o->workers * sizeof(*r->w));
	for (unsigned int i = 0; i < o->workers; i++) {
		struct usemem_worker *w = &r->w[i];
		int err;

		w->opts = o;
		w->content = &r->content;
		w->sync = &r->sync;
		w->id = i;
		w->nr_pages = o->size / USWAP_PAGE_SIZE;
		w->rng = o->seed * 0x9e3779b97f4a7c15ull + i;
		usemem_worker_plan(w);
		if (o->random && !(w->perm = malloc(w->nr_pages * sizeof(*w->perm))))
			return cli_runtime_error(CMD, "out of memory for --random");
		err = map_memory(r, w);
		if (err)
			return err;
	}
	return 0;
}

static void workers_free(struct usemem_run *r)
{
	if (!r->w)
		return;
	for (unsigned int i = 0; i < r->o->workers; i++) {
		struct usemem_worker *w = &r->w[i];

		if (w->mem && r->pager)
			uswap_region_destroy(r->pager, w->mem);
		else if (w->mem)
			munmap(w->mem, r->o->size);
		free(w->perm);
	}
	free(r->w);
	r->w = NULL;
}

/* ------------------------------------------------------------------------
 * Sampling while the workers run
 * ---------------------------------------------------------------------- */

/* /proc/vmstat counter @name, or 0. */
static uint64_t vmstat(const char *name)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char key[64];
	unsigned long long v;
	uint64_t out = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (!strcmp(key, name)) {
			out = v;
			break;
		}
	}
	fclose(f);
	return out;
}

/* The kernel's swap: keep /proc/swaps when its Used total is highest. */
static void sample_kernel_swaps(struct usemem_run *r, uint64_t *peak_total)
{
	static struct procswaps_row rows[32];
	char buf[sizeof(r->res.kswaps)];
	uint64_t total = 0;
	int n = procswaps_read(buf, sizeof(buf), rows, 32);

	for (int i = 0; i < n && i < 32; i++)
		total += rows[i].used_kb;
	if (n >= 0 && total >= *peak_total) {
		*peak_total = total;
		memcpy(r->res.kswaps, buf, strlen(buf) + 1);
	}
}

static void sample_devices(struct usemem_run *r)
{
	for (unsigned int i = 0; i < r->nr_types; i++) {
		struct uswap_device_info info;

		if (uswap_device_info(r->u, r->types[i], &info))
			continue;
		if (info.used_kb > r->res.dev[i].used_kb_peak)
			r->res.dev[i].used_kb_peak = info.used_kb;
	}
}

static uint64_t pages_done(const struct usemem_run *r)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < r->o->workers; i++)
		sum += atomic_load_explicit(&r->w[i].progress, memory_order_relaxed);
	return sum;
}

static void progress_line(struct usemem_run *r, uint64_t t0, uint64_t now,
			  uint64_t *last_ns, uint64_t *last_pages)
{
	uint64_t pages = pages_done(r), total = 0, resident = 0;
	double dt = (double)(now - *last_ns) / NS_PER_SEC;

	for (unsigned int i = 0; i < r->o->workers; i++)
		total += r->w[i].nr_pages * r->w[i].nr_passes;
	if (r->pager) {
		struct uswap_pager_stats st = { .size = sizeof(st) };

		if (!uswap_pager_stats_get(r->pager, &st))
			resident = st.resident_bytes;
	}
	fprintf(stderr, "uswap " CMD ": %4.0f s  %3.0f %%  %8.1f MB/s  resident %llu MiB\n",
		(double)(now - t0) / NS_PER_SEC, 100.0 * (double)pages / (double)total,
		dt > 0 ? (double)(pages - *last_pages) * USWAP_PAGE_SIZE / 1e6 / dt : 0.0,
		(unsigned long long)(resident >> 20));
	*last_ns = now;
	*last_pages = pages;
}

static void wait_workers(struct usemem_run *r, uint64_t t0)
{
	bool progress = !r->o->json || isatty(STDERR_FILENO);
	uint64_t next = t0 + (PROGRESS_AFTER_S + 1) * NS_PER_SEC, last_ns = t0,
		 last_pages = 0, kpeak = 0;
	struct timespec tick = { 0, (long)TICK_NS };

	while (atomic_load(&r->sync.done) < r->o->workers) {
		uint64_t now;

		nanosleep(&tick, NULL);
		now = cli_now_ns();
		if (r->u)
			sample_devices(r);
		else
			sample_kernel_swaps(r, &kpeak);
		if (progress && now >= next) {
			progress_line(r, t0, now, &last_ns, &last_pages);
			next += NS_PER_SEC;
		}
	}
	if (r->u)
		sample_devices(r);
	else
		sample_kernel_swaps(r, &kpeak);
}

/* ------------------------------------------------------------------------
 * The run
 * ---------------------------------------------------------------------- */

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static int read_swap_stats(struct uswap *u, struct uswap_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return uswap_stats_get(u, st);
}

static void swap_delta(struct uswap_stats *d, const struct uswap_stats *a,
		       const struct uswap_stats *b)
{
	for (int k = 0; k < USWAP_NR_ORDERS; k++) {
		d->swpout[k] = a->swpout[k] - b->swpout[k];
		d->swpout_fallback[k] = a->swpout_fallback[k] - b->swpout_fallback[k];
	}
	d->swpin = a->swpin - b->swpin;
	d->swpin_cached = a->swpin_cached - b->swpin_cached;
	d->read_errors = a->read_errors - b->read_errors;
	d->write_errors = a->write_errors - b->write_errors;
}

static int run_workers(struct usemem_run *r)
{
	const struct usemem_opts *o = r->o;
	struct rusage ru0, ru1;
	uint64_t t0;

	struct sigaction sa = { .sa_sigaction = usemem_on_sigbus, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	pthread_barrier_init(&r->sync.start, NULL, o->workers + 1);
	atomic_init(&r->sync.done, 0);
	for (unsigned int i = 0; i < o->workers; i++) {
		int err = pthread_create(&r->w[i].tid, NULL, usemem_worker_main, &r->w[i]);

		if (err) {
			cli_runtime_error(CMD, "pthread_create: %s", strerror(err));
			exit(CLI_EXIT_RUNTIME);
		}
	}
	if (r->u)
		read_swap_stats(r->u, &r->before);
	else {
		r->k_pswpout0 = vmstat("pswpout");
		r->k_pswpin0 = vmstat("pswpin");
	}
	getrusage(RUSAGE_SELF, &ru0);
	t0 = cli_now_ns();
	pthread_barrier_wait(&r->sync.start);
	wait_workers(r, t0);
	for (unsigned int i = 0; i < o->workers; i++)
		pthread_join(r->w[i].tid, NULL);
	r->res.wall_s = (double)(cli_now_ns() - t0) / NS_PER_SEC;
	getrusage(RUSAGE_SELF, &ru1);
	r->res.user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
	r->res.sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	pthread_barrier_destroy(&r->sync.start);
	return 0;
}

static void collect(struct usemem_run *r)
{
	struct usemem_result *res = &r->res;
	double pass_bytes[USEMEM_PASS_MAX] = { 0 }, pass_s[USEMEM_PASS_MAX] = { 0 };

	res->nr_workers = r->o->workers;
	res->w = r->w;
	for (unsigned int i = 0; i < r->o->workers; i++) {
		const struct usemem_worker *w = &r->w[i];

		res->bad_pages += w->bad_pages;
		for (unsigned int p = 0; p < w->nr_passes; p++) {
			pass_bytes[w->pass_kind[p]] += (double)w->nr_pages * USWAP_PAGE_SIZE;
			pass_s[w->pass_kind[p]] += (double)w->pass_ns[p] / NS_PER_SEC;
		}
	}
	/* Per pass kind: the sum over workers of each worker's rate. With
	 * equal workers this is bytes / (time / workers). */
	for (int k = 0; k < USEMEM_PASS_MAX; k++)
		res->pass_kbps[k] = pass_s[k] > 0 ? pass_bytes[k] / 1024.0 /
				    (pass_s[k] / r->o->workers) : 0;
	if (!r->u) {
		res->k_pswpout = vmstat("pswpout") - r->k_pswpout0;
		res->k_pswpin = vmstat("pswpin") - r->k_pswpin0;
		return;
	}
	struct uswap_stats after;

	read_swap_stats(r->u, &after);
	swap_delta(&res->swap, &after, &r->before);
	res->pager.size = sizeof(res->pager);
	uswap_pager_stats_get(r->pager, &res->pager);
	res->nr_devices = r->nr_types;
	for (unsigned int i = 0; i < r->nr_types; i++)
		uswap_device_info(r->u, r->types[i], &res->dev[i].info);
}

static int report_bad(const struct usemem_run *r)
{
	int rc = r->res.bad_pages ? CLI_EXIT_RUNTIME : 0;

	for (unsigned int i = 0; i < r->o->workers; i++) {
		const struct usemem_worker *w = &r->w[i];

		if (w->sigbus) {
			long lost = r->pager ? uswap_region_error(r->pager, w->mem, NULL) : -1;

			rc = cli_runtime_error(CMD, "worker %u: SIGBUS at offset %llu of its "
					       "memory in pass %u: the page could not be "
					       "read back from swap (a device read error; "
					       "%ld folios of this region lost)", w->id,
					       (unsigned long long)((char *)w->bus_addr -
								    (char *)w->mem),
					       w->cur_pass + 1, lost);
		}
		if (!w->bad_pages)
			continue;
		cli_runtime_error(CMD, "worker %u: %llu pages read back wrong; first: "
				  "page %llu in pass %u, tag %#llx instead of %#llx",
				  w->id, (unsigned long long)w->bad_pages,
				  (unsigned long long)w->first_bad_page, w->first_bad_pass + 1,
				  (unsigned long long)w->first_bad_got,
				  (unsigned long long)w->first_bad_want);
	}
	return rc;
}

/* Freeing the regions must leave every device empty. */
static int check_empty(struct usemem_run *r)
{
	int rc = 0;

	workers_free(r);
	for (unsigned int i = 0; r->u && i < r->nr_types; i++) {
		struct uswap_device_info info;

		if (uswap_device_info(r->u, r->types[i], &info) || !info.inuse)
			continue;
		rc = cli_runtime_error(CMD, "device %s: %llu slots still in use after "
				       "the regions were freed", info.name,
				       (unsigned long long)info.inuse);
	}
	return rc;
}

/* The run finished, but not as asked: say so on stderr (the figures are
 * still printed; the exit status stays 0 since every page was right). */
static void warn_pressure(const struct usemem_run *r)
{
	const struct uswap_pager_stats *ps = &r->res.pager;

	if (r->o->no_pager)
		return;
	if (r->res.swap.write_errors)
		fprintf(stderr, "uswap " CMD ": warning: %llu device writes failed (the "
			"folios were retried on other slots or kept in memory)\n",
			(unsigned long long)r->res.swap.write_errors);
	if (ps->over_limit)
		fprintf(stderr, "uswap " CMD ": warning: the limit could not be kept: %llu "
			"folios were mapped over it because nothing could be evicted "
			"(swap full or failing; resident peak %llu MiB for a %llu MiB "
			"limit)\n", (unsigned long long)ps->over_limit,
			(unsigned long long)(ps->resident_peak_bytes >> 20),
			(unsigned long long)(r->res.limit_bytes >> 20));
}

static int bench_usemem(const struct usemem_opts *o)
{
	struct usemem_run r = { .o = o };
	int rc;

	rc = setup(&r);
	if (!rc)
		rc = workers_create(&r);
	if (!rc)
		rc = run_workers(&r);
	if (!rc) {
		collect(&r);
		if (o->json)
			usemem_print_json(o, &r.res);
		else
			usemem_print_text(o, &r.res);
		warn_pressure(&r);
		rc = report_bad(&r);
	}
	if (!rc)
		rc = check_empty(&r);
	workers_free(&r);
	uswap_pager_destroy(r.pager);
	uswap_destroy(r.u);
	free((void *)r.content.pat);
	return rc;
}

int cmd_bench_usemem(int argc, char **argv)
{
	struct usemem_opts opts;
	int rc = parse_opts(argc, argv, &opts);

	if (rc < 0)
		return CLI_EXIT_OK;
	if (rc)
		return rc;
	return bench_usemem(&opts);
}
