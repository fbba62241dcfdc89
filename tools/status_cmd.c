// SPDX-License-Identifier: MIT
/*
 * status_cmd.c - `uswap status [PID]`: the live state of running `uswap run`
 * programs, read from their status sockets (<uswap/status.h>), as
 * util-linux shows the kernel's: the device table with swapon --show's
 * columns (NAME TYPE SIZE USED PRIO), zramctl's for zram devices (NAME
 * ALGORITHM DISKSIZE DATA COMPR TOTAL), vmstat's counter names (pswpout,
 * swpout and swpout_fallback per order, swpin), resident bytes against
 * the limit. --json prints the objects as one array; --watch repeats.
 * A socket of ours nobody listens on (its process was killed) is removed;
 * one that does not answer within 2 s, or not with a status, is skipped
 * and reported. The directory is read only if it is this user's alone.
 */
#include "cli.h"
#include "status_cmd.h"
#include "table.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <uswap/status.h>

#define CMD "status"

static const char usage_text[] =
"Usage: uswap status [options] [PID]\n"
"\n"
"Show the swap state of running 'uswap run' programs (all of this user's,\n"
"or PID's). By default, a block per process of a program's tree that has\n"
"a pager: resident memory against the limit, its devices as swapon --show\n"
"prints them, its zram devices as zramctl does, and vmstat's counters\n"
"(pswpout in pages; swpout and swpout_fallback per order, and swpin, in\n"
"folios). --show, --zram and --processes print one table over every\n"
"process instead. Under 'uswap run --daemon' the devices and counters are\n"
"the tree's, on CMD's block.\n"
"\n"
"Options:\n"
"      --show[=COLS]   the devices, one table (swapon --show)\n"
"      --zram          the zram devices, one table (zramctl)\n"
"      --processes     the processes, a line each\n"
"  -o, --output COLS   the table's columns, comma-separated\n"
"      --output-all    every column\n"
"  -b, --bytes         sizes in bytes, not K/M/G\n"
"  -n, --noheadings    no header line\n"
"  -r, --raw           columns separated by one space, not aligned\n"
"      --json          JSON: with a table, {\"version\": 1, NAME: [rows]};\n"
"                      else every process's full state, {\"version\": 1,\n"
"                      \"processes\": [...]} (uswap-status(1))\n"
"      --watch SECONDS print again every SECONDS until interrupted\n"
"  -h, --help          show this help\n"
"\n"
"Columns (default ones first; sizes in bytes in JSON):\n"
"  --show       PID NAME TYPE SIZE USED PRIO, READ-ERRORS WRITE-ERRORS\n"
"  --zram       PID NAME ALGORITHM DISKSIZE DATA COMPR TOTAL, MEM-LIMIT\n"
"               MEM-USED ZERO-PAGES MIGRATED (zramctl's meanings)\n"
"  --processes  PID COMMAND RESIDENT LIMIT PEAK PSWPOUT SWPIN, FAULTS\n"
"               FAULT-P50 FAULT-P99 (us) EVICTIONS ZERO PINNED\n"
"\n"
"The sockets are in $XDG_RUNTIME_DIR/uswap, else /run/uswap for root, else\n"
"/tmp/uswap-UID; only their owner (and root) can read them.\n"
"\n"
"Exit status: 0; 1 no such process publishes, a socket did not answer\n"
"(within 2 s) or not with a status, or the directory is not this user's\n"
"alone; 2 usage error.\n";

enum { OPT_JSON = 256, OPT_WATCH, OPT_SHOW, OPT_ZRAM, OPT_PROCESSES, OPT_OUTPUT_ALL };

static const struct option long_options[] = {
	{ "show",       optional_argument, NULL, OPT_SHOW },
	{ "zram",       no_argument,       NULL, OPT_ZRAM },
	{ "processes",  no_argument,       NULL, OPT_PROCESSES },
	{ "output",     required_argument, NULL, 'o' },
	{ "output-all", no_argument,       NULL, OPT_OUTPUT_ALL },
	{ "bytes",      no_argument,       NULL, 'b' },
	{ "noheadings", no_argument,       NULL, 'n' },
	{ "raw",        no_argument,       NULL, 'r' },
	{ "json",       no_argument,       NULL, OPT_JSON },
	{ "watch",      required_argument, NULL, OPT_WATCH },
	{ "help",       no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

enum status_table { STATUS_BLOCKS = -1, STATUS_DEVICES, STATUS_ZRAM, STATUS_PROCESSES };

struct status_opts {
	struct cli_table_opts t;
	int table;        /* enum status_table */
	double watch;     /* seconds; 0 = once */
	long pid;         /* 0 = all */
};

/* ------------------------------------------------------------------------
 * Reading one socket
 * ---------------------------------------------------------------------- */

/* @o if it has the shape the agent writes (agent.c), else NULL (freed):
 * an object with a positive pid, arrays where arrays go, numbers >= 0. */
static json_object *valid(json_object *o)
{
	static const char *const arrays[] = { "swpout", "swpout_fallback", "devices" };
	json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "pid", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) <= 0)
		goto bad;
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		if (!json_object_object_get_ex(o, arrays[i], &v) ||
		    !json_object_is_type(v, json_type_array))
			goto bad;
		for (size_t k = 0; i < 2 && k < json_object_array_length(v); k++) {
			json_object *e = json_object_array_get_idx(v, k);

			if (!json_object_is_type(e, json_type_int) || json_object_get_int64(e) < 0)
				goto bad;
		}
		for (size_t k = 0; i == 2 && k < json_object_array_length(v); k++)
			if (!json_object_is_type(json_object_array_get_idx(v, k),
						 json_type_object))
				goto bad;
	}
	return o;
bad:
	json_object_put(o);
	return NULL;
}

/* The object @path serves, or NULL with errno (ECONNREFUSED: nobody
 * listens there any more; ENOENT: removed since; ESRCH: closed with no
 * answer, its process ending meanwhile). */
static json_object *ask(const char *path)
{
	const struct timeval timeout = { .tv_sec = 1 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t deadline = cli_now_ns() + 2000000000ull;
	char buf[1 << 18];
	size_t len = 0;
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return NULL;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		errno = ENAMETOOLONG;
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A process that does not answer within a second is skipped: one
	 * stuck server must not hold up the others. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = errno;

		close(fd);
		errno = err;
		return NULL;
	}
	/* One line: a connection a forked child still holds open never
	 * ends, so the newline ends the read, not EOF. */
	n = -1;
	while (len < sizeof(buf) - 1 && !memchr(buf, '\n', len) && cli_now_ns() < deadline &&
	       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	errno = len || n != 0 ? EPROTO : ESRCH; /* ESRCH: closed with nothing said */
	return len ? valid(json_tokener_parse(buf)) : NULL;
}

json_object *status_ask_pid(long pid)
{
	char dir[4096], path[4200];

	if (uswap_status_dir(dir, sizeof(dir)))
		return NULL;
	snprintf(path, sizeof(path), "%s/%ld.sock", dir, pid);
	return ask(path);
}

/* ------------------------------------------------------------------------
 * Printing
 * ---------------------------------------------------------------------- */

static int64_t num(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static const char *str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "?";
}

/* Σ per-order folio counts in pages (pswpout). */
static int64_t pages_of(json_object *o, const char *key)
{
	json_object *a;
	int64_t pages = 0;

	if (json_object_object_get_ex(o, key, &a))
		for (size_t i = 0; i < json_object_array_length(a) && i < 10; i++)
			pages += json_object_get_int64(json_object_array_get_idx(a, i)) << i;
	return pages;
}

static void print_orders(json_object *o, const char *key)
{
	json_object *a;

	printf("  %-16s", key);
	if (json_object_object_get_ex(o, key, &a))
		for (size_t i = 0; i < json_object_array_length(a) && i < 5; i++)
			printf("%s%lld", i ? " " : "",
			       (long long)json_object_get_int64(json_object_array_get_idx(a, i)));
	printf("   (folios, orders 0..4)\n");
}

/* ------------------------------------------------------------------------
 * The tables: swapon --show's, zramctl's, and one line per process
 * ---------------------------------------------------------------------- */

enum { DC_PID, DC_NAME, DC_TYPE, DC_SIZE, DC_USED, DC_PRIO, DC_RERR, DC_WERR, DC_NR };
static const struct cli_col dev_cols[DC_NR] = {
	[DC_PID]  = { "PID", CLI_COL_NUM, "the process of the program's tree that swaps to it" },
	[DC_NAME] = { "NAME", CLI_COL_STR, "device name (zram0, a file's path, an export)" },
	[DC_TYPE] = { "TYPE", CLI_COL_STR, "partition or file, as in /proc/swaps" },
	[DC_SIZE] = { "SIZE", CLI_COL_SIZE, "size of the swap area" },
	[DC_USED] = { "USED", CLI_COL_SIZE, "swap in use" },
	[DC_PRIO] = { "PRIO", CLI_COL_NUM, "priority (higher first; -1 default)" },
	[DC_RERR] = { "READ-ERRORS", CLI_COL_NUM, "reads that failed" },
	[DC_WERR] = { "WRITE-ERRORS", CLI_COL_NUM, "writes that failed" },
};

enum { ZC_PID, ZC_NAME, ZC_ALGO, ZC_DISKSIZE, ZC_DATA, ZC_COMPR, ZC_TOTAL, ZC_LIMIT,
       ZC_USED, ZC_ZERO, ZC_MIGRATED, ZC_NR };
static const struct cli_col zram_cols[ZC_NR] = {
	[ZC_PID]      = { "PID", CLI_COL_NUM, "the process the device lives in" },
	[ZC_NAME]     = { "NAME", CLI_COL_STR, "zram device name" },
	[ZC_ALGO]     = { "ALGORITHM", CLI_COL_STR, "compression algorithm" },
	[ZC_DISKSIZE] = { "DISKSIZE", CLI_COL_SIZE, "limit on the uncompressed data" },
	[ZC_DATA]     = { "DATA", CLI_COL_SIZE, "uncompressed size of the stored data" },
	[ZC_COMPR]    = { "COMPR", CLI_COL_SIZE, "compressed size of the stored data" },
	[ZC_TOTAL]    = { "TOTAL", CLI_COL_SIZE, "all memory the pool uses, metadata included" },
	[ZC_LIMIT]    = { "MEM-LIMIT", CLI_COL_SIZE, "cap on the pool's memory (0: none)" },
	[ZC_USED]     = { "MEM-USED", CLI_COL_SIZE, "most memory the pool has used" },
	[ZC_ZERO]     = { "ZERO-PAGES", CLI_COL_NUM, "pages of one repeated word, stored as it" },
	[ZC_MIGRATED] = { "MIGRATED", CLI_COL_NUM, "pages moved by compaction" },
};

enum { PC_PID, PC_CMD, PC_RES, PC_LIMIT, PC_PEAK, PC_PSWPOUT, PC_SWPIN, PC_FAULTS,
       PC_P50, PC_P99, PC_EVICT, PC_ZERO, PC_PINNED, PC_NR };
static const struct cli_col proc_cols[PC_NR] = {
	[PC_PID]     = { "PID", CLI_COL_NUM, "process ID" },
	[PC_CMD]     = { "COMMAND", CLI_COL_STR, "its program's name" },
	[PC_RES]     = { "RESIDENT", CLI_COL_SIZE, "resident memory its pager holds" },
	[PC_LIMIT]   = { "LIMIT", CLI_COL_SIZE, "the resident limit (the tree's)" },
	[PC_PEAK]    = { "PEAK", CLI_COL_SIZE, "highest RESIDENT so far" },
	[PC_PSWPOUT] = { "PSWPOUT", CLI_COL_NUM, "pages swapped out" },
	[PC_SWPIN]   = { "SWPIN", CLI_COL_NUM, "folios swapped in" },
	[PC_FAULTS]  = { "FAULTS", CLI_COL_NUM, "faults its pager served" },
	[PC_P50]     = { "FAULT-P50", CLI_COL_FLOAT, "median fault service time, us" },
	[PC_P99]     = { "FAULT-P99", CLI_COL_FLOAT, "99th percentile of it, us" },
	[PC_EVICT]   = { "EVICTIONS", CLI_COL_NUM, "folios evicted" },
	[PC_ZERO]    = { "ZERO", CLI_COL_NUM, "evicted folios of zeroes, not written" },
	[PC_PINNED]  = { "PINNED", CLI_COL_NUM, "evictions refused: pinned by the kernel" },
};

#define DEV_DEFAULTS  "NAME,TYPE,SIZE,USED,PRIO"
#define ZRAM_DEFAULTS "NAME,ALGORITHM,DISKSIZE,DATA,COMPR,TOTAL"
#define PROC_DEFAULTS "PID,COMMAND,RESIDENT,LIMIT,PEAK,PSWPOUT,SWPIN"

static double dbl(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

static void device_rows(struct cli_table *t, json_object *o)
{
	json_object *devs;

	if (!json_object_object_get_ex(o, "devices", &devs))
		return;
	for (size_t i = 0; i < json_object_array_length(devs); i++) {
		json_object *d = json_object_array_get_idx(devs, i);

		cli_table_row(t);
		cli_table_num(t, DC_PID, num(o, "pid"));
		cli_table_str(t, DC_NAME, str(d, "name"));
		cli_table_str(t, DC_TYPE, str(d, "type"));
		cli_table_size(t, DC_SIZE, (uint64_t)num(d, "size_kb") << 10);
		cli_table_size(t, DC_USED, (uint64_t)num(d, "used_kb") << 10);
		cli_table_num(t, DC_PRIO, num(d, "prio"));
		cli_table_num(t, DC_RERR, num(d, "read_errors"));
		cli_table_num(t, DC_WERR, num(d, "write_errors"));
	}
}

/* Return: how many zram devices @o has. */
static int zram_rows(struct cli_table *t, json_object *o, long pid)
{
	json_object *devs;
	int n = 0;

	if (!json_object_object_get_ex(o, "devices", &devs))
		return 0;
	for (size_t i = 0; i < json_object_array_length(devs); i++) {
		json_object *d = json_object_array_get_idx(devs, i), *z;

		if (!json_object_object_get_ex(d, "zram", &z))
			continue;
		n++;
		cli_table_row(t);
		cli_table_num(t, ZC_PID, pid);
		cli_table_str(t, ZC_NAME, str(d, "name"));
		cli_table_str(t, ZC_ALGO, str(z, "algorithm"));
		cli_table_size(t, ZC_DISKSIZE, (uint64_t)num(z, "disksize"));
		cli_table_size(t, ZC_DATA, (uint64_t)num(z, "orig_data_size"));
		cli_table_size(t, ZC_COMPR, (uint64_t)num(z, "compr_data_size"));
		cli_table_size(t, ZC_TOTAL, (uint64_t)num(z, "mem_used_total"));
		cli_table_size(t, ZC_LIMIT, (uint64_t)num(z, "mem_limit"));
		cli_table_size(t, ZC_USED, (uint64_t)num(z, "mem_used_max"));
		cli_table_num(t, ZC_ZERO, num(z, "same_pages"));
		cli_table_num(t, ZC_MIGRATED, num(z, "pages_compacted"));
	}
	return n;
}

static void process_row(struct cli_table *t, json_object *o)
{
	cli_table_row(t);
	cli_table_num(t, PC_PID, num(o, "pid"));
	cli_table_str(t, PC_CMD, str(o, "cmd"));
	cli_table_size(t, PC_RES, (uint64_t)num(o, "resident_bytes"));
	cli_table_size(t, PC_LIMIT, (uint64_t)num(o, "limit_bytes"));
	cli_table_size(t, PC_PEAK, (uint64_t)num(o, "resident_peak_bytes"));
	cli_table_num(t, PC_PSWPOUT, pages_of(o, "swpout"));
	cli_table_num(t, PC_SWPIN, num(o, "swpin"));
	cli_table_num(t, PC_FAULTS, num(o, "fault_count"));
	cli_table_float(t, PC_P50, dbl(o, "fault_us_p50"), 1);
	cli_table_float(t, PC_P99, dbl(o, "fault_us_p99"), 1);
	cli_table_num(t, PC_EVICT, num(o, "evictions"));
	cli_table_num(t, PC_ZERO, num(o, "evict_zero"));
	cli_table_num(t, PC_PINNED, num(o, "evict_pinned"));
}

/* One table over every process in @all; its rows from @rows. */
static int print_table(const struct status_opts *so, json_object *all)
{
	static const struct {
		const char *name;        /* the JSON key: swapon's, zramctl's */
		const struct cli_col *cols;
		size_t nr;
		const char *defaults;
	} kinds[] = {
		[STATUS_DEVICES]   = { "swapdevices", dev_cols, DC_NR, "PID," DEV_DEFAULTS },
		[STATUS_ZRAM]      = { "zramdevices", zram_cols, ZC_NR, "PID," ZRAM_DEFAULTS },
		[STATUS_PROCESSES] = { "processes", proc_cols, PC_NR, PROC_DEFAULTS },
	};
	const __typeof__(kinds[0]) *k = &kinds[so->table];
	struct cli_table *t = cli_table_new(k->name, k->cols, k->nr, k->defaults, &so->t);
	int rc;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		json_object *o = json_object_array_get_idx(all, i);

		if (so->table == STATUS_DEVICES)
			device_rows(t, o);
		else if (so->table == STATUS_ZRAM)
			zram_rows(t, o, (long)num(o, "pid"));
		else
			process_row(t, o);
	}
	rc = cli_table_print(t, stdout, NULL);
	cli_table_free(t);
	return rc;
}

int status_print_devices(FILE *out, json_object *o, const char *indent,
			 const struct cli_table_opts *to)
{
	struct cli_table *t = cli_table_new("swapdevices", dev_cols, DC_NR, DEV_DEFAULTS, to);
	int rc;

	if (!t)
		return -ENOMEM;
	device_rows(t, o);
	rc = cli_table_print(t, out, indent);
	cli_table_free(t);
	return rc;
}

int status_print_zram(FILE *out, json_object *o, const char *indent,
		      const struct cli_table_opts *to)
{
	struct cli_table *t = cli_table_new("zramdevices", zram_cols, ZC_NR, ZRAM_DEFAULTS, to);
	int rc = 0;

	if (!t)
		return -ENOMEM;
	if (zram_rows(t, o, 0))
		rc = cli_table_print(t, out, indent);
	cli_table_free(t);
	return rc;
}

/* Each device's own figures (nbd, mirror, writeback, file, faulty) as
 * key=value, wrapped; zram's mm_stat ones are in the table above. */
static void print_backend(json_object *devs)
{
	for (size_t i = 0; devs && i < json_object_array_length(devs); i++) {
		json_object *d = json_object_array_get_idx(devs, i), *bk;
		int col = 0;

		if (!json_object_object_get_ex(d, "backend", &bk))
			continue;
		json_object_object_foreach(bk, key, val) {
			const char *v = json_object_get_string(val);

			if (json_object_object_get_ex(d, "zram", NULL) && strncmp(key, "bd_", 3) &&
			    strncmp(key, "wb_", 3))
				continue; /* zramctl's columns have those */
			if (!col)
				col = printf("  %s:", str(d, "name"));
			else if (col + (int)(strlen(key) + strlen(v)) + 2 > 78)
				col = printf("\n   ") - 1;
			col += printf(" %s=%s", key, v);
		}
		if (col)
			printf("\n");
	}
}

static bool flag(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* The default view: a block per process, its tables in util-linux's
 * shape (with -b, -n, -r) and vmstat's counters below them. Under uswap
 * run --daemon the devices and the swap counters are the tree's, on
 * CMD's block; another process's block has its own figures only. */
static int print_one(const struct status_opts *so, json_object *o)
{
	json_object *devs = NULL;
	char a[32], b[32], c[32];
	int rc;

	printf("PID %lld (%s): resident %s of a %s limit, peak %s\n", (long long)num(o, "pid"),
	       str(o, "cmd"), cli_human_size((uint64_t)num(o, "resident_bytes"), a, sizeof(a)),
	       cli_human_size((uint64_t)num(o, "limit_bytes"), b, sizeof(b)),
	       cli_human_size((uint64_t)num(o, "resident_peak_bytes"), c, sizeof(c)));
	if (flag(o, "daemon") && !flag(o, "root")) {
		printf("  %-16s%lld\n", "evictions", (long long)num(o, "evictions"));
		printf("  (uswap run --daemon: the tree's devices and counters are on CMD's block)\n");
		return 0;
	}
	if (flag(o, "daemon"))
		printf("  (uswap run --daemon: the devices and counters are the whole tree's)\n");
	if ((rc = status_print_devices(stdout, o, "  ", &so->t)) ||
	    (rc = status_print_zram(stdout, o, "  ", &so->t)))
		return rc;
	json_object_object_get_ex(o, "devices", &devs);
	print_backend(devs);
	printf("  %-16s%lld pages\n", "pswpout", (long long)pages_of(o, "swpout"));
	printf("  %-16s%lld folios\n", "swpin", (long long)num(o, "swpin"));
	print_orders(o, "swpout");
	print_orders(o, "swpout_fallback");
	printf("  %-16s%lld\n", "evictions", (long long)num(o, "evictions"));
	return 0;
}

/* ------------------------------------------------------------------------
 * The directory
 * ---------------------------------------------------------------------- */

/* Every answering process's object (or @pid's) into @all. Return: how
 * many answered; sockets nobody listens on are removed. */
static int collect(const char *dir, long pid, json_object *all, int *unreadable)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	*unreadable = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[8192], *end;
		long p = strtol(e->d_name, &end, 10);
		json_object *o;

		if (p <= 0 || strcmp(end, ".sock") || (pid && p != pid))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		o = ask(path);
		if (!o) {
			struct stat st;

			/* A socket of ours nobody listens on: its process is
			 * gone. Nothing else is ever removed. */
			if (errno == ECONNREFUSED && !lstat(path, &st) && S_ISSOCK(st.st_mode) &&
			    st.st_uid == geteuid())
				unlink(path);
			else if (errno != ECONNREFUSED && errno != ENOENT && errno != ESRCH)
				(*unreadable)++; /* not a process that ended meanwhile */
			continue;
		}
		json_object_array_add(all, o);
		found++;
	}
	closedir(d);
	return found;
}

static int show(const struct status_opts *o, const char *dir)
{
	json_object *all = json_object_new_array();
	int unreadable, found = collect(dir, o->pid, all, &unreadable), rc = 0;

	if (o->table != STATUS_BLOCKS && (found || o->t.json)) {
		rc = print_table(o, all);
	} else if (o->t.json) {
		json_object *doc = json_object_new_object();

		json_object_object_add(doc, "version", json_object_new_int(STATUS_JSON_VERSION));
		json_object_object_add(doc, "processes", json_object_get(all));
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
		json_object_put(doc);
	} else if (!found && o->pid) {
		printf("no uswap run program with PID %ld publishes its status in %s\n",
		       o->pid, dir);
	} else if (!found && o->table == STATUS_BLOCKS) {
		printf("no uswap run program publishes its status in %s\n", dir);
	} else {
		/* A table of nobody prints nothing, as swapon --show does. */
		for (size_t i = 0; !rc && i < json_object_array_length(all); i++)
			rc = print_one(o, json_object_array_get_idx(all, i));
	}
	if (rc)
		fprintf(stderr, "uswap status: %s\n", strerror(-rc));
	if (unreadable)
		fprintf(stderr, "uswap status: %d socket%s in %s did not answer, or not with "
			"a uswap status\n", unreadable, unreadable > 1 ? "s" : "", dir);
	json_object_put(all);
	fflush(stdout);
	if (unreadable || rc)
		return CLI_EXIT_RUNTIME;
	return found || !o->pid ? 0 : CLI_EXIT_RUNTIME;
}

/* The directory must be what the agents make (<uswap/status.h>): ours,
 * a real directory, closed to others; a missing one just has nobody. */
static int check_dir(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st))
		return errno == ENOENT ? 0 : cli_runtime_error(CMD, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_runtime_error(CMD, "%s is not a directory (a symlink?): not read", dir);
	if (st.st_uid != geteuid() || (st.st_mode & 077))
		return cli_runtime_error(CMD, "%s is not this user's alone (owner uid %u, mode "
					 "%04o): not read", dir, (unsigned int)st.st_uid,
					 (unsigned int)(st.st_mode & 07777));
	return 0;
}

/* ------------------------------------------------------------------------
 * The command
 * ---------------------------------------------------------------------- */

static int run(const struct status_opts *so)
{
	struct status_opts o = *so;
	char dir[4096];
	int rc;

	if (uswap_status_dir(dir, sizeof(dir)))
		return cli_runtime_error(CMD, "the status directory's path is too long");
	if ((rc = check_dir(dir)))
		return rc;
	for (;;) {
		if (o.watch && !o.t.json)
			printf("--- %s", ctime(&(time_t){ time(NULL) }));
		rc = show(&o, dir);
		if (!o.watch)
			return rc;
		struct timespec ts = { (time_t)o.watch,
				       (long)((o.watch - (double)(time_t)o.watch) * 1e9) };

		nanosleep(&ts, NULL);
	}
}

static int set_table(struct status_opts *o, int table)
{
	if (o->table != STATUS_BLOCKS && o->table != table)
		return cli_usage_error(CMD, "--show, --zram and --processes: one at a time");
	o->table = table;
	return 0;
}

/* --output names columns of the table asked for. */
static int check_output(const struct status_opts *o)
{
	static const size_t nr[] = { DC_NR, ZC_NR, PC_NR };
	const struct cli_col *cols[] = { dev_cols, zram_cols, proc_cols };

	if (!o->t.output)
		return 0;
	if (o->table == STATUS_BLOCKS)
		return cli_usage_error(CMD, "--output names the columns of --show, --zram or "
				       "--processes");
	return cli_table_check_output(CMD, cols[o->table], nr[o->table], o->t.output);
}

static int parse_opts(int argc, char **argv, struct status_opts *o)
{
	int opt, rc = 0;

	*o = (struct status_opts){ .table = STATUS_BLOCKS };
	optind = 0;
	while (!rc && (opt = cli_next_option(CMD, argc, argv, ":ho:bnr", long_options,
					     usage_text)) > 0) {
		if (opt == OPT_JSON)
			o->t.json = true;
		else if (opt == OPT_WATCH && (cli_parse_seconds(optarg, &o->watch) ||
					      o->watch <= 0 || o->watch > 86400))
			return cli_usage_error(CMD, "--watch '%s': want seconds, 0 to 86400", optarg);
		else if (opt == OPT_SHOW && !(rc = set_table(o, STATUS_DEVICES)) && optarg)
			o->t.output = optarg;
		else if (opt == OPT_ZRAM)
			rc = set_table(o, STATUS_ZRAM);
		else if (opt == OPT_PROCESSES)
			rc = set_table(o, STATUS_PROCESSES);
		else if (opt == 'o')
			o->t.output = optarg;
		else if (opt == OPT_OUTPUT_ALL)
			o->t.output_all = true;
		else if (opt == 'b')
			o->t.bytes = true;
		else if (opt == 'n')
			o->t.noheadings = true;
		else if (opt == 'r')
			o->t.raw = true;
	}
	if (rc)
		return rc;
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if ((rc = check_output(o)))
		return rc;
	if (optind < argc) {
		char *end;

		errno = 0;
		o->pid = strtol(argv[optind], &end, 10);
		if (*end || errno || o->pid <= 0 || o->pid > INT32_MAX || optind + 1 < argc ||
		    argv[optind][0] < '0' || argv[optind][0] > '9')
			return cli_usage_error(CMD, "want at most one PID, got '%s'", argv[optind]);
	}
	return 0;
}

int cmd_status(int argc, char **argv)
{
	struct status_opts o;
	int rc = parse_opts(argc, argv, &o);

	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	return run(&o);
}

int status_swapon_show(const char *cmd, const struct cli_table_opts *t)
{
	struct status_opts o = { .t = *t, .table = STATUS_DEVICES };
	int rc;

	if (t->output && (rc = cli_table_check_output(cmd, dev_cols, DC_NR, t->output)))
		return rc;
	return run(&o);
}
