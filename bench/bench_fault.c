/* SPDX-License-Identifier: MIT */
/*
 * bench_fault.c - `uswap bench fault`: the pager's fault round trip as the
 * application sees it.
 *
 * A region is written once (every folio swapped out on the way, the
 * resident limit being a handful of folios), then each folio is touched
 * once in random order with readahead off. The time from the load to its
 * return is one round trip: the trap, the userfaultfd message, a handler
 * waking or spinning, the swap cache lookup, the device read (zram:
 * decompression), UFFDIO_COPY and the wake-up. Issue 4 asks for its median
 * and p99 for a 4 KiB page and a 64 KiB folio from zram; the pager's own
 * service time (message read to ioctl) is printed beside it, so the rest
 * is the kernel's part.
 */
#include "bench_usemem.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "bench fault"

static const char usage_text[] =
"Usage: uswap bench fault [OPTIONS]\n"
"\n"
"Fault round trip of the userfaultfd pager as the application sees it:\n"
"a region of --size bytes is written (swapped out as it goes, the\n"
"resident limit being 8 folios per handler), then every folio is read\n"
"once in random order, readahead off, and each first access is timed\n"
"from the load until it returns. Every page is checked afterwards.\n"
"\n"
"Options:\n"
"  -s, --size SIZE     region bytes, suffix K/M/G (default 128M)\n"
"  --order K           folio order 0..4 (default 0 = 4 KiB; 4 = 64 KiB)\n"
"  --device SPEC       the swap device; it must hold the whole region\n"
"                      (default zram:SIZE+25%, lz4)\n"
"  --data FILE         page contents are the bytes of FILE (default: every\n"
"                      8-byte word holds its index)\n"
"  --handlers N        fault-handler threads (default 1)\n"
"  --spin-us US        a handler spins this long before it sleeps\n"
"                      (default 50)\n"
"  --no-spin           handlers sleep as soon as there is nothing to do\n"
"  --seed N            seed of the access order (default 1)\n"
"  --json              one JSON object on stdout\n"
"  -h, --help          show this help\n"
"\n"
"Output: accesses timed, swap-ins (and how many the swap cache served),\n"
"round trip median / p90 / p99 / max in us, and the pager's fault\n"
"service time (message read to the mapping ioctl) median and p99.\n"
"\n"
"Exit status: 0 success; 1 runtime error, a page read back wrong, a folio\n"
"lost to a device read error (SIGBUS), or fewer than 90 % of the accesses\n"
"were swap-ins (writes to the device failed); 2 usage error.\n";

struct fault_opts {
	uint64_t size;
	unsigned int order;
	const char *device;
	const char *data;
	unsigned int handlers;
	unsigned int spin_us;
	bool no_spin;
	uint64_t seed;
	bool json;
};

struct fault_result {
	uint64_t folios, swapins, swapins_cached, bad_pages;
	uint64_t lost;         /* folios whose read failed (SIGBUS) */
	uint64_t timed;        /* folios with a round trip (folios - lost) */
	double rt_us[4];       /* round trip p50, p90, p99, max */
	double svc_us[2];      /* pager service time p50, p99 */
	char device[96];
};

enum { OPT_ORDER = 256, OPT_DEVICE, OPT_DATA, OPT_HANDLERS, OPT_SPIN_US,
       OPT_NO_SPIN, OPT_SEED, OPT_JSON };

static const struct option long_options[] = {
	{ "size",     required_argument, NULL, 's' },
	{ "order",    required_argument, NULL, OPT_ORDER },
	{ "device",   required_argument, NULL, OPT_DEVICE },
	{ "data",     required_argument, NULL, OPT_DATA },
	{ "handlers", required_argument, NULL, OPT_HANDLERS },
	{ "spin-us",  required_argument, NULL, OPT_SPIN_US },
	{ "no-spin",  no_argument,       NULL, OPT_NO_SPIN },
	{ "seed",     required_argument, NULL, OPT_SEED },
	{ "json",     no_argument,       NULL, OPT_JSON },
	{ "help",     no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int apply_option(struct fault_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 's':
		if (cli_parse_size(arg, &o->size) || o->size < (1u << 20) ||
		    o->size > ((uint64_t)1 << 36))
			return cli_usage_error(CMD, "--size '%s': want 1M..64G", arg);
		return 0;
	case OPT_ORDER:
		if (cli_parse_uint(arg, 0, USWAP_PAGER_MAX_ORDER, &o->order))
			return cli_usage_error(CMD, "--order '%s': want 0..%d", arg,
					       USWAP_PAGER_MAX_ORDER);
		return 0;
	case OPT_DEVICE: o->device = arg; return 0;
	case OPT_DATA: o->data = arg; return 0;
	case OPT_HANDLERS:
		if (cli_parse_uint(arg, 1, 64, &o->handlers))
			return cli_usage_error(CMD, "--handlers '%s': want 1..64", arg);
		return 0;
	case OPT_SPIN_US:
		if (cli_parse_uint(arg, 1, 1000000, &o->spin_us))
			return cli_usage_error(CMD, "--spin-us '%s': want 1..1000000", arg);
		return 0;
	case OPT_NO_SPIN: o->no_spin = true; return 0;
	case OPT_SEED:
		if (cli_parse_u64(arg, 0, UINT64_MAX, &o->seed))
			return cli_usage_error(CMD, "--seed '%s': want a number", arg);
		return 0;
	case OPT_JSON: o->json = true; return 0;
	}
	return cli_usage_error(CMD, "unknown option");
}

static int parse_opts(int argc, char **argv, struct fault_opts *o)
{
	int opt, err;

	*o = (struct fault_opts){ .size = 128u << 20, .handlers = 1, .seed = 1 };
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":s:h", long_options, usage_text)) > 0)
		if ((err = apply_option(o, opt, optarg)))
			return err;
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (o->device && cli_check_spec(CMD, "--device", o->device))
		return CLI_EXIT_USAGE;
	return 0;
}

/* ------------------------------------------------------------------------
 * Page contents: the --data bytes (or word indices), the page number in
 * the first word so a page read back at the wrong place is seen.
 * ---------------------------------------------------------------------- */

static void page_expect(const struct usemem_content *c, uint64_t page, uint64_t *dst)
{
	const size_t words = USWAP_PAGE_SIZE / 8;

	if (c->pat)
		memcpy(dst, c->pat + page * USWAP_PAGE_SIZE % c->pat_len,
		       USWAP_PAGE_SIZE);
	else
		for (size_t i = 0; i < words; i++)
			dst[i] = page * words + i;
	dst[0] = page;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: the random access order, reproducible by --seed. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static double pct_us(const uint64_t *sorted, uint64_t n, unsigned int pct)
{
	uint64_t i = (n * pct + 99) / 100;

	return sorted[i ? i - 1 : 0] / 1e3;
}

/* ------------------------------------------------------------------------
 * The run
 * ---------------------------------------------------------------------- */

struct fault_run {
	const struct fault_opts *o;
	struct usemem_content content;
	struct uswap *u;
	struct uswap_pager *pager;
	uint8_t *mem;
	uint64_t folio_bytes, nr_folios;
	uint64_t *lat;         /* ns per folio, in access order */
	uint64_t *order;       /* folio indices, shuffled */
};

/* Every folio must fit on the device, or most stay resident and the
 * "round trips" are memory loads. */
static int check_room(struct uswap *u, int type, uint64_t size, const char *spec)
{
	struct uswap_device_info info;

	if (uswap_device_info(u, type, &info))
		return cli_runtime_error(CMD, "--device %s: no device info", spec);
	if (info.pages * USWAP_PAGE_SIZE < size)
		return cli_usage_error(CMD, "--device %s holds %llu KiB, less than --size "
				       "(%llu KiB): the whole region must fit on it", spec,
				       (unsigned long long)info.size_kb,
				       (unsigned long long)(size >> 10));
	return 0;
}

static int start(struct fault_run *r, struct fault_result *res)
{
	const struct fault_opts *o = r->o;
	struct uswap_pager_config cfg = {
		.nr_handlers = o->handlers,
		.order = o->order,
		.spin_us = o->spin_us,
	};
	char spec[64], err_msg[256];
	int err, type;

	r->folio_bytes = (uint64_t)USWAP_PAGE_SIZE << o->order;
	r->nr_folios = o->size / r->folio_bytes;
	cfg.limit_bytes = (uint64_t)USWAP_PAGER_MIN_LIMIT_FOLIOS * o->handlers *
			  r->folio_bytes;
	if (o->no_spin)
		cfg.flags |= USWAP_PAGER_NO_SPIN;
	if (!o->device)
		snprintf(spec, sizeof(spec), "zram:%lluM",
			 (unsigned long long)((o->size + o->size / 4) >> 20));
	snprintf(res->device, sizeof(res->device), "%s", o->device ? o->device : spec);
	if (o->data && (err = usemem_load_data(CMD, o->data, &r->content)))
		return err;
	if ((err = uswap_create(NULL, &r->u)))
		return cli_runtime_error(CMD, "uswap_create: %s", cli_errno_name(err));
	type = uswap_swapon_spec(r->u, res->device, err_msg, sizeof(err_msg));
	if (type < 0)
		return cli_runtime_error(CMD, "--device %s: %s (%s)", res->device,
					 err_msg, cli_errno_name(type));
	if ((err = check_room(r->u, type, o->size, res->device)))
		return err;
	err = uswap_pager_create(r->u, &cfg, &r->pager);
	if (err == -EPERM)
		return usemem_explain_eperm(CMD);
	if (err)
		return cli_runtime_error(CMD, "uswap_pager_create: %s", cli_errno_name(err));
	if ((err = uswap_region_create(r->pager, o->size, (void **)&r->mem)))
		return cli_runtime_error(CMD, "uswap_region_create(%llu): %s",
					 (unsigned long long)o->size, cli_errno_name(err));
	r->lat = calloc(r->nr_folios, sizeof(*r->lat));
	r->order = calloc(r->nr_folios, sizeof(*r->order));
	if (!r->lat || !r->order)
		return cli_runtime_error(CMD, "out of memory");
	return 0;
}

static void write_all(struct fault_run *r)
{
	uint64_t pages = r->o->size / USWAP_PAGE_SIZE;

	for (uint64_t p = 0; p < pages; p++)
		page_expect(&r->content, p, (uint64_t *)(r->mem + p * USWAP_PAGE_SIZE));
}

static void shuffle(struct fault_run *r)
{
	uint64_t s = r->o->seed * 0x9e3779b97f4a7c15ull + 1;

	for (uint64_t i = 0; i < r->nr_folios; i++)
		r->order[i] = i;
	for (uint64_t i = r->nr_folios - 1; i > 0; i--) {
		uint64_t j = rnd(&s) % (i + 1), t = r->order[i];

		r->order[i] = r->order[j];
		r->order[j] = t;
	}
}

/* A device read error reaches the program as SIGBUS (UFFDIO_POISON): the
 * access that took it jumps back to touch_one(). Main thread only. */
static sigjmp_buf *volatile bus_env;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (bus_env)
		siglongjmp(*bus_env, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Time the first load of folio @f into *@ns, then check its pages (the
 * clock stopped). Return: pages read back wrong, or -EIO after SIGBUS. */
static int touch_one(struct fault_run *r, uint64_t f, uint64_t *ns)
{
	uint64_t want[USWAP_PAGE_SIZE / 8], t0;
	unsigned int nr = 1u << r->o->order, bad = 0;
	const volatile uint64_t *p = (const uint64_t *)(r->mem + f * r->folio_bytes);
	sigjmp_buf env;

	if (sigsetjmp(env, 1)) {
		bus_env = NULL;
		return -EIO;
	}
	bus_env = &env;
	t0 = now_ns();
	(void)*p;
	*ns = now_ns() - t0;
	for (unsigned int k = 0; k < nr; k++) {
		uint64_t page = f * nr + k;

		page_expect(&r->content, page, want);
		if (memcmp(r->mem + page * USWAP_PAGE_SIZE, want, USWAP_PAGE_SIZE))
			bad++;
	}
	bus_env = NULL;
	return (int)bad;
}

/* Touch each folio once; round trips of the folios read go to r->lat. */
static void touch_all(struct fault_run *r, struct fault_result *res)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO }, old;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	for (uint64_t i = 0; i < r->nr_folios; i++) {
		uint64_t ns = 0;
		int rc = touch_one(r, r->order[i], &ns);

		if (rc < 0) {
			res->lost++;
			continue;
		}
		res->bad_pages += (uint64_t)rc;
		r->lat[res->timed++] = ns;
	}
	sigaction(SIGBUS, &old, NULL);
}

static int measure(struct fault_run *r, struct fault_result *res)
{
	struct uswap_pager_stats a = { .size = sizeof(a) }, b = { .size = sizeof(b) };

	write_all(r);
	shuffle(r);
	uswap_pager_reset_latency(r->pager);
	uswap_pager_stats_get(r->pager, &a);
	touch_all(r, res);
	uswap_pager_stats_get(r->pager, &b);
	res->folios = r->nr_folios;
	res->swapins = b.swapins - a.swapins;
	res->swapins_cached = b.swapins_cached - a.swapins_cached;
	res->svc_us[0] = b.fault_ns_p50 / 1e3;
	res->svc_us[1] = b.fault_ns_p99 / 1e3;
	if (!res->timed)
		return 0;
	qsort(r->lat, res->timed, sizeof(*r->lat), cmp_u64);
	res->rt_us[0] = pct_us(r->lat, res->timed, 50);
	res->rt_us[1] = pct_us(r->lat, res->timed, 90);
	res->rt_us[2] = pct_us(r->lat, res->timed, 99);
	res->rt_us[3] = r->lat[res->timed - 1] / 1e3;
	return 0;
}

static void finish(struct fault_run *r)
{
	if (r->mem)
		uswap_region_destroy(r->pager, r->mem);
	uswap_pager_destroy(r->pager);
	uswap_destroy(r->u);
	free(r->lat);
	free(r->order);
	free((void *)r->content.pat);
}

static void print_text(const struct fault_opts *o, const struct fault_result *res)
{
	printf("fault round trip: %llu folios of %u KiB from %s, random order, "
	       "readahead off\n", (unsigned long long)res->folios,
	       4u << o->order, res->device);
	printf("swap-ins: %llu (%llu from the swap cache)\n",
	       (unsigned long long)res->swapins, (unsigned long long)res->swapins_cached);
	printf("round trip (us):     median %.1f  p90 %.1f  p99 %.1f  max %.1f\n",
	       res->rt_us[0], res->rt_us[1], res->rt_us[2], res->rt_us[3]);
	printf("pager service (us):  median %.1f  p99 %.1f\n", res->svc_us[0],
	       res->svc_us[1]);
	printf("pages read back wrong: %llu; folios lost to read errors: %llu\n",
	       (unsigned long long)res->bad_pages, (unsigned long long)res->lost);
}

static void print_json(const struct fault_opts *o, const struct fault_result *res)
{
	struct cli_json j;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_u64(&j, "order", o->order);
	cli_json_u64(&j, "folio_kb", 4u << o->order);
	cli_json_string(&j, "device", res->device);
	cli_json_u64(&j, "folios", res->folios);
	cli_json_u64(&j, "swpin", res->swapins);
	cli_json_u64(&j, "swpin_cached", res->swapins_cached);
	cli_json_double(&j, "round_trip_us_p50", res->rt_us[0]);
	cli_json_double(&j, "round_trip_us_p90", res->rt_us[1]);
	cli_json_double(&j, "round_trip_us_p99", res->rt_us[2]);
	cli_json_double(&j, "round_trip_us_max", res->rt_us[3]);
	cli_json_double(&j, "service_us_p50", res->svc_us[0]);
	cli_json_double(&j, "service_us_p99", res->svc_us[1]);
	cli_json_u64(&j, "bad_pages", res->bad_pages);
	cli_json_u64(&j, "lost_folios", res->lost);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

/* Exit status: a wrong page, a lost folio, or too few swap-ins for the
 * figures to be round trips (writes that failed keep folios resident)
 * make the run fail. */
static int verdict(const struct fault_result *res)
{
	if (res->bad_pages)
		return cli_runtime_error(CMD, "%llu pages read back wrong",
					 (unsigned long long)res->bad_pages);
	if (res->lost)
		return cli_runtime_error(CMD, "%llu of %llu folios could not be read back "
					 "(device read errors, delivered as SIGBUS)",
					 (unsigned long long)res->lost,
					 (unsigned long long)res->folios);
	if (res->swapins < res->folios * 9 / 10)
		return cli_runtime_error(CMD, "only %llu of %llu accesses were swap-ins "
					 "(did writes to the device fail?): the times are "
					 "not swap-in round trips",
					 (unsigned long long)res->swapins,
					 (unsigned long long)res->folios);
	return CLI_EXIT_OK;
}

int cmd_bench_fault(int argc, char **argv)
{
	struct fault_opts o;
	struct fault_result res = { 0 };
	struct fault_run r = { .o = &o };
	int err = parse_opts(argc, argv, &o);

	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	err = start(&r, &res);
	if (!err)
		err = measure(&r, &res);
	finish(&r);
	if (err)
		return err;
	if (o.json)
		print_json(&o, &res);
	else
		print_text(&o, &res);
	return verdict(&res);
}
