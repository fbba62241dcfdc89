/* SPDX-License-Identifier: MIT */
/*
 * swapon_cmd.c - `uswap swapon --dry-run SPEC [--json]`: check a device spec
 * and, for a file or block device, its mkswap header, and print what
 * swapon would use, or why it would refuse. `uswap swapon --show` is
 * swapon --show's table of the running programs' devices (status_cmd.c).
 *
 * A swapon that adds the device to a swap system needs a process that
 * runs one (a benchmark, the pager); this command runs none, so without
 * --dry-run it says so and exits 2. Exit status: 0 the device would be
 * accepted, 1 it would be refused (bad header, missing file), 2 usage
 * error (including a malformed spec).
 */
#include "cli.h"
#include "status_cmd.h"
#include "table.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uswap/uswap.h>

#define CMD "swapon"
#define MAX_BADPAGES_SHOWN 16 /* text output lists this many, then "..." */

static const char usage_text[] =
"Usage: uswap swapon --dry-run SPEC [--json]\n"
"       uswap swapon --show[=COLS] [--bytes] [--noheadings] [--raw] [--json]\n"
"\n"
"--show prints the devices of every running 'uswap run' program of this\n"
"user as swapon --show prints the kernel's (uswap status --show).\n"
"\n"
"Check a swap device spec without swapping on: parse SPEC and, for a file\n"
"or block device, read and check its swap header as swapon would (made by\n"
"util-linux mkswap: SWAPSPACE2, version 1, 4 KiB pages, no holes, at least\n"
"1024 slots). Prints the device, its slots, bad pages, uuid, label and\n"
"warnings (permissions wider than 0600, not owned by root), or the reason\n"
"it would be refused.\n"
"\n"
"SPEC:\n"
"  ram:SIZE[:prio=N]                 memory\n"
"  zram:SIZE[:lz4|:zstd][:prio=N][:workers=N][:mem_limit=SIZE]\n"
"                                    compressed memory (default lz4);\n"
"                                    workers 0..8 compress batches on\n"
"                                    threads of its own (default 0);\n"
"                                    mem_limit caps the memory its pages\n"
"                                    take (writes past it fail)\n"
"  file:PATH[:prio=N][:discard][:direct][:qd=N][:sync]\n"
"                                    mkswap'd file or block device\n"
"                                    (':' in PATH written as '\\:')\n"
"  nbd:URI[:prio=N][:conns=N][:timeout=S]\n"
"                                    an NBD export (nbd://HOST[:PORT]/NAME,\n"
"                                    nbd+unix:///NAME?socket=PATH); conns\n"
"                                    1..16 needs the server's multi-conn;\n"
"                                    timeout 1..3600 s (default 30), then\n"
"                                    the device fails with EIO; block 0\n"
"                                    holds the one user's claim\n"
"  mirror:[prio=N]:SPEC|SPEC         writes to both, reads from either; a\n"
"                                    failing leg is dropped, nothing lost\n"
"  writeback:OPTS:ZRAM|SPEC          zram moving pages down to SPEC; OPTS:\n"
"                                    idle=SECONDS, huge, budget=SIZE, prio=N\n"
"  crypt:SPEC                        pages encrypted and authenticated, a\n"
"                                    key per cluster wiped when it is freed\n"
"  faulty:OPTS:SPEC                  fault injection around SPEC; OPTS is\n"
"                                    comma-separated read=R, write=R,\n"
"                                    discard=R (0..1), latency=MICROSECONDS,\n"
"                                    seed=N, read_slots=A+B, write_slots=A+B,\n"
"                                    discard_slots=A+B, fail_nth=N,\n"
"                                    persistent, prio=N\n"
"  SIZE takes K, M, G or T (powers of 1024), at least 4M; prio is -1\n"
"  (default) to 32767.\n"
"\n"
"Options:\n"
"  --dry-run   check only (required: swapon into a running swap system\n"
"              needs a command that runs one, such as 'uswap bench')\n"
"  --json      print one JSON object instead of text\n"
"  --show[=COLS]  the running programs' devices; COLS from PID, NAME,\n"
"              TYPE, SIZE, USED, PRIO, READ-ERRORS, WRITE-ERRORS\n"
"  --bytes     (--show) sizes in bytes, not K/M/G\n"
"  --noheadings  (--show) no header line\n"
"  --raw       (--show) columns separated by one space, not aligned\n"
"  -h, --help  show this help\n"
"\n"
"Examples:\n"
"  dd if=/dev/zero of=/var/swap.img bs=1M count=64 && chmod 600 /var/swap.img\n"
"  mkswap /var/swap.img && uswap swapon --dry-run file:/var/swap.img:prio=5\n"
"  uswap swapon --dry-run faulty:read=0.01,seed=7:zram:1G:zstd --json\n"
"\n"
"Exit status: 0 would be accepted, 1 would be refused, 2 usage error.\n";

struct swapon_opts {
	bool dry_run;
	bool json;
	bool show;
	struct cli_table_opts t; /* --show's */
	const char *spec;
};

/* What the check found: the spec, and the header for a file. */
struct swapon_result {
	struct uswap_spec_info spec;
	struct uswap_header_info hdr;
	bool has_hdr;
	char warn[1024];
};

/*
 * parse_opts() - fill @o from the command line.
 * Return: 0 to run; CLI_EXIT_USAGE after a message; -1 when --help was
 * printed (exit 0).
 */
static int parse_opts(int argc, char **argv, struct swapon_opts *o)
{
	static const struct option long_options[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "json",    no_argument, NULL, 'j' },
		{ "show",    optional_argument, NULL, 's' },
		{ "bytes",   no_argument, NULL, 'b' },
		{ "noheadings", no_argument, NULL, 'H' },
		{ "raw",     no_argument, NULL, 'r' },
		{ "help",    no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	memset(o, 0, sizeof(*o));
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":h", long_options, usage_text)) > 0) {
		if (opt == 'n')
			o->dry_run = true;
		else if (opt == 'j')
			o->json = o->t.json = true;
		else if (opt == 's')
			o->show = true, o->t.output = optarg;
		else if (opt == 'b')
			o->t.bytes = true;
		else if (opt == 'H')
			o->t.noheadings = true;
		else if (opt == 'r')
			o->t.raw = true;
	}
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (o->show && o->dry_run)
		return cli_usage_error(CMD, "--show and --dry-run: one at a time");
	if (o->show && optind < argc)
		return cli_usage_error(CMD, "--show takes no SPEC, got '%s'", argv[optind]);
	if (o->show)
		return 0;
	if (optind >= argc)
		return cli_usage_error(CMD, "missing device spec");
	o->spec = argv[optind++];
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* ------------------------------------------------------------------------
 * Text
 * ---------------------------------------------------------------------- */

static void field(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void field(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%-14s", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* "67108864 bytes (64 MiB)"; the unit only when exact. */
static void field_bytes(const char *name, uint64_t bytes)
{
	static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };

	for (int i = 0; i < 4; i++) {
		unsigned int shift = 10 * (unsigned int)(4 - i);

		if (bytes && !(bytes & ((UINT64_C(1) << shift) - 1))) {
			field(name, "%" PRIu64 " bytes (%" PRIu64 " %s)", bytes,
			      bytes >> shift, units[i]);
			return;
		}
	}
	field(name, "%" PRIu64 " bytes", bytes);
}

/* "key=value, key=value" of a layer's options. */
static void layer_options_text(const struct uswap_spec_layer *l, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < l->nr_options && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s=%s", i ? ", " : "",
					 l->options[i].key, l->options[i].value);
}

/* Every wrapper, outermost first, with all its options. */
static void print_wrappers_text(const struct uswap_spec_info *s)
{
	char name[24], opts[4 * USWAP_SPEC_MAX_LEN];

	for (unsigned int i = 0; i + 1 < s->nr_layers; i++) {
		snprintf(name, sizeof(name), "%s[%u]:", s->layers[i].kind, i);
		layer_options_text(&s->layers[i], opts, sizeof(opts));
		field(name, "%s", opts);
	}
}

static void print_badpages_text(const struct uswap_header_info *h)
{
	char list[MAX_BADPAGES_SHOWN * 12 + 8] = "";
	size_t used = 0;

	if (!h->nr_badpages) {
		field("bad pages:", "none");
		return;
	}
	for (uint32_t i = 0; i < h->nr_badpages && i < MAX_BADPAGES_SHOWN; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, " %" PRIu64,
					 h->badpages[i]);
	field("bad pages:", "%" PRIu32 ":%s%s", h->nr_badpages, list,
	      h->nr_badpages > MAX_BADPAGES_SHOWN ? " ..." : "");
}

static void print_file_text(const struct swapon_result *r)
{
	const struct uswap_spec_info *s = &r->spec;
	const struct uswap_header_info *h = &r->hdr;

	const struct uswap_spec_layer *dev = uswap_spec_device(s);

	field("path:", "%s", uswap_spec_get(dev, "path"));
	field("type:", "%s, mode %04" PRIo32 ", uid %" PRIu32,
	      h->is_block_device ? "block device" : "regular file", h->mode, h->uid);
	field_bytes("size:", h->file_size);
	field("page size:", "%" PRIu32 " bytes", h->page_size);
	field("version:", "%" PRIu32 " (SWAPSPACE2, %s)", h->version, h->byte_order);
	field("last_page:", "%" PRIu32, h->last_page);
	field("slots:", "%" PRIu64 " (including header slot 0)", h->nr_slots);
	field("usable slots:", "%" PRIu64 " (%" PRIu64 " KiB)", h->usable_slots,
	      h->usable_slots * (USWAP_PAGE_SIZE / 1024));
	print_badpages_text(h);
	field("uuid:", "%s", h->uuid_str);
	field("label:", "%s", h->label[0] ? h->label : "(none)");
	char opts[4 * USWAP_SPEC_MAX_LEN];

	layer_options_text(dev, opts, sizeof(opts));
	field("options:", "%s", opts);
}

static void print_text(const struct swapon_result *r)
{
	const struct uswap_spec_info *s = &r->spec;
	const char *w = r->warn;

	field("spec:", "%s", s->canonical);
	field("priority:", "%d%s", s->prio, s->prio == USWAP_PRIO_DEFAULT ? " (default)" : "");
	print_wrappers_text(s);
	field("device:", "%s", uswap_spec_device(s)->kind);
	if (r->has_hdr) {
		print_file_text(r);
	} else if (!s->nr_slots) {
		/* nbd: the server says the size when it is connected. */
		field("uri:", "%s", uswap_spec_get(uswap_spec_device(s), "uri"));
		field("size:", "%s", "the export's (known once connected)");
	} else {
		field_bytes("size:", s->size_bytes);
		field("slots:", "%" PRIu64 " (including slot 0, never used)", s->nr_slots);
		field("usable slots:", "%" PRIu64, s->nr_slots - 1);
		const char *algo = uswap_spec_get(uswap_spec_device(s), "algo");
		const char *cap = uswap_spec_get(uswap_spec_device(s), "mem_limit");

		if (algo)
			field("algorithm:", "%s", algo);
		if (cap)
			field("mem limit:", "%s bytes of memory for its pages at most", cap);
	}
	while (*w) {
		int len = (int)strcspn(w, "\n");

		field("warning:", "%.*s", len, w);
		w += len + (w[len] == '\n');
	}
	field("result:", "would be accepted (dry run: nothing was swapped on)");
}

/* ------------------------------------------------------------------------
 * JSON
 * ---------------------------------------------------------------------- */

/* A layer's options as one JSON object: a decimal count as a number,
 * anything else (an algorithm, a path, a rate) as the string given. */
static void json_options(struct cli_json *j, const struct uswap_spec_layer *l)
{
	cli_json_object_open(j, "options", true);
	for (unsigned int i = 0; i < l->nr_options; i++) {
		const char *v = l->options[i].value;
		uint64_t n;

		if (v[0] != '-' && !cli_parse_u64(v, 0, UINT64_MAX, &n) && (v[0] != '0' || !v[1]))
			cli_json_u64(j, l->options[i].key, n);
		else
			cli_json_string(j, l->options[i].key, v);
	}
	cli_json_object_close(j);
}

/* The wrappers, outermost first: [{"kind": ..., "options": {...}}]. */
static void json_wrappers(struct cli_json *j, const struct uswap_spec_info *s)
{
	cli_json_array_open(j, "wrappers", false);
	for (unsigned int i = 0; i + 1 < s->nr_layers; i++) {
		cli_json_object_open(j, NULL, false);
		cli_json_string(j, "kind", s->layers[i].kind);
		json_options(j, &s->layers[i]);
		cli_json_object_close(j);
	}
	cli_json_array_close(j);
}

static void json_header(struct cli_json *j, const struct uswap_header_info *h)
{
	char mode[8];

	snprintf(mode, sizeof(mode), "%04" PRIo32, h->mode);
	cli_json_object_open(j, "header", false);
	cli_json_string(j, "type", h->is_block_device ? "block" : "file");
	cli_json_u64(j, "file_size", h->file_size);
	cli_json_string(j, "mode", mode);
	cli_json_u64(j, "uid", h->uid);
	cli_json_u64(j, "page_size", h->page_size);
	cli_json_u64(j, "version", h->version);
	cli_json_string(j, "byte_order", h->byte_order);
	cli_json_u64(j, "last_page", h->last_page);
	cli_json_u64(j, "nr_slots", h->nr_slots);
	cli_json_u64(j, "usable_slots", h->usable_slots);
	cli_json_u64(j, "nr_badpages", h->nr_badpages);
	cli_json_array_open(j, "badpages", true);
	for (uint32_t i = 0; i < h->nr_badpages; i++)
		cli_json_u64(j, NULL, h->badpages[i]);
	cli_json_array_close(j);
	cli_json_string(j, "uuid", h->uuid_str);
	cli_json_string(j, "label", h->label);
	cli_json_object_close(j);
}

static void json_device(struct cli_json *j, const struct swapon_result *r)
{
	const struct uswap_spec_info *s = &r->spec;
	const struct uswap_spec_layer *dev = uswap_spec_device(s);
	bool file = r->has_hdr;

	cli_json_object_open(j, "device", false);
	cli_json_string(j, "kind", dev->kind);
	cli_json_u64(j, "size_bytes", file ? r->hdr.file_size : s->size_bytes);
	cli_json_u64(j, "nr_slots", file ? r->hdr.nr_slots : s->nr_slots);
	/* 0 when the device says its size (nbd: the export's) */
	cli_json_u64(j, "usable_slots", file ? r->hdr.usable_slots :
		     s->nr_slots ? s->nr_slots - 1 : 0);
	json_options(j, dev);
	cli_json_object_close(j);
}

static void print_json(const struct swapon_result *r)
{
	struct cli_json j;
	const char *w = r->warn;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_bool(&j, "ok", true);
	cli_json_string(&j, "spec", r->spec.canonical);
	cli_json_i64(&j, "prio", r->spec.prio);
	json_wrappers(&j, &r->spec);
	json_device(&j, r);
	if (r->has_hdr)
		json_header(&j, &r->hdr);
	cli_json_array_open(&j, "warnings", false);
	while (*w) {
		char line[512];
		size_t len = strcspn(w, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)len, w);
		cli_json_string(&j, NULL, line);
		w += len + (w[len] == '\n');
	}
	cli_json_array_close(&j);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

/* The refusal: on stderr always, and as a JSON object with --json. */
static int report_refusal(const struct swapon_opts *o, int exit_code, int rc,
			  const char *what, const char *msg)
{
	if (o->json) {
		struct cli_json j;

		cli_json_init(&j, stdout);
		cli_json_object_open(&j, NULL, false);
			cli_json_bool(&j, "ok", false);
		cli_json_string(&j, "spec", o->spec);
		cli_json_string(&j, "error", msg);
		cli_json_string(&j, "errno", cli_errno_name(rc));
		cli_json_object_close(&j);
		cli_json_finish(&j);
	}
	if (exit_code == CLI_EXIT_USAGE)
		return cli_usage_error(CMD, "%s: %s", what, msg);
	return cli_runtime_error(CMD, "%s: %s", what, msg);
}

int cmd_swapon(int argc, char **argv)
{
	struct swapon_result *r;
	struct swapon_opts o;
	char err[512];
	int rc, code;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (o.show)
		return status_swapon_show(CMD, &o.t);
	if (!o.dry_run)
		return cli_usage_error(CMD, "swapon into a running swap system "
				       "needs a command that runs one (e.g. 'uswap "
				       "bench'); use --dry-run to check SPEC");
	r = calloc(1, sizeof(*r));
	if (!r)
		return cli_runtime_error(CMD, "out of memory");
	rc = uswap_spec_parse(o.spec, &r->spec, err, sizeof(err));
	if (rc) {
		code = report_refusal(&o, CLI_EXIT_USAGE, rc, "bad device spec", err);
		goto out;
	}
	if (!strcmp(uswap_spec_device(&r->spec)->kind, "file")) {
		const char *path = uswap_spec_get(uswap_spec_device(&r->spec), "path");

		rc = uswap_header_read_file(path, &r->hdr, err, sizeof(err), r->warn,
					    sizeof(r->warn));
		if (rc) {
			code = report_refusal(&o, CLI_EXIT_RUNTIME, rc, path, err);
			goto out;
		}
		r->has_hdr = true;
	}
	if (o.json)
		print_json(r);
	else
		print_text(r);
	code = CLI_EXIT_OK;
out:
	free(r);
	return code;
}
