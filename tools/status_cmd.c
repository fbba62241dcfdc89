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
"Usage: uswap status [--json] [--watch SECONDS] [PID]\n"
"\n"
"Show the swap state of running 'uswap run' programs (all of this user's,\n"
"or PID's): the devices as swapon --show does (NAME TYPE SIZE USED PRIO)\n"
"and zram's as zramctl does (NAME ALGORITHM DISKSIZE DATA COMPR TOTAL),\n"
"vmstat's counters (pswpout in pages; swpout and swpout_fallback per\n"
"order, and swpin, in folios) and resident memory against the limit. Each\n"
"process of a program's tree that has a pager (a forked child has its\n"
"own) is shown on its own.\n"
"\n"
"Options:\n"
"  --json              print one JSON array of the processes' objects\n"
"  --watch SECONDS     print again every SECONDS until interrupted\n"
"  -h, --help          show this help\n"
"\n"
"The sockets are in $XDG_RUNTIME_DIR/uswap, else /run/uswap for root, else\n"
"/tmp/uswap-UID; only their owner (and root) can read them.\n"
"\n"
"Exit status: 0; 1 no such process publishes, a socket did not answer\n"
"(within 2 s) or not with a status, or the directory is not this user's\n"
"alone; 2 usage error.\n";

enum { OPT_JSON = 256, OPT_WATCH };

static const struct option long_options[] = {
	{ "json",  no_argument,       NULL, OPT_JSON },
	{ "watch", required_argument, NULL, OPT_WATCH },
	{ "help",  no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct status_opts {
	bool json;
	double watch;     /* seconds; 0 = once */
	long pid;         /* 0 = all */
};

static int parse_opts(int argc, char **argv, struct status_opts *o)
{
	int opt;

	*o = (struct status_opts){ 0 };
	optind = 0;
	while ((opt = cli_next_option(CMD, argc, argv, ":h", long_options, usage_text)) > 0) {
		if (opt == OPT_JSON)
			o->json = true;
		else if (opt == OPT_WATCH && (cli_parse_seconds(optarg, &o->watch) ||
					      o->watch <= 0 || o->watch > 86400))
			return cli_usage_error(CMD, "--watch '%s': want seconds, 0 to 86400", optarg);
	}
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
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
 * listens there any more). */
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
	while (len < sizeof(buf) - 1 && !memchr(buf, '\n', len) && cli_now_ns() < deadline &&
	       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	errno = EPROTO;
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

/* Sizes as swapon --show prints them: K, M, G with one decimal. */
static const char *human_kb(int64_t kb, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	double v = (double)kb;
	int u = 0;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v == (int64_t)v ? "%.0f%c" : "%.1f%c", v, units[u]);
	return buf;
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

void status_print_zram(FILE *out, json_object *devs, const char *head, const char *lead)
{
	bool header = false;
	char s[4][32];

	for (size_t i = 0; devs && i < json_object_array_length(devs); i++) {
		json_object *d = json_object_array_get_idx(devs, i), *z;

		if (!json_object_object_get_ex(d, "zram", &z))
			continue;
		if (!header)
			fprintf(out, "%s%-16s%-10s%8s %8s %8s %8s\n", head, "NAME", "ALGORITHM",
				"DISKSIZE", "DATA", "COMPR", "TOTAL");
		header = true;
		fprintf(out, "%s%-16s%-10s%8s %8s %8s %8s\n", lead, str(d, "name"),
		       str(z, "algorithm"),
		       human_kb(num(z, "disksize") / 1024, s[0], sizeof(s[0])),
		       human_kb(num(z, "orig_data_size") / 1024, s[1], sizeof(s[1])),
		       human_kb(num(z, "compr_data_size") / 1024, s[2], sizeof(s[2])),
		       human_kb(num(z, "mem_used_total") / 1024, s[3], sizeof(s[3])));
	}
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

static void print_one(json_object *o)
{
	json_object *devs = NULL;
	char a[32], b[32];

	printf("PID %lld (%s): resident %s of a %s limit, peak %s\n", (long long)num(o, "pid"),
	       str(o, "cmd"), human_kb(num(o, "resident_bytes") / 1024, a, sizeof(a)),
	       human_kb(num(o, "limit_bytes") / 1024, b, sizeof(b)),
	       human_kb(num(o, "resident_peak_bytes") / 1024, (char[32]){ 0 }, 32));
	printf("  %-15s %-10s%8s %8s %5s\n", "NAME", "TYPE", "SIZE", "USED", "PRIO");
	if (json_object_object_get_ex(o, "devices", &devs))
		for (size_t i = 0; i < json_object_array_length(devs); i++) {
			json_object *d = json_object_array_get_idx(devs, i);

			printf("  %-15s %-10s%8s %8s %5lld\n", str(d, "name"), str(d, "type"),
			       human_kb(num(d, "size_kb"), a, sizeof(a)),
			       human_kb(num(d, "used_kb"), b, sizeof(b)), (long long)num(d, "prio"));
		}
	status_print_zram(stdout, devs, "  ", "  ");
	print_backend(devs);
	printf("  %-16s%lld pages\n", "pswpout", (long long)pages_of(o, "swpout"));
	printf("  %-16s%lld folios\n", "swpin", (long long)num(o, "swpin"));
	print_orders(o, "swpout");
	print_orders(o, "swpout_fallback");
	printf("  %-16s%lld\n", "evictions", (long long)num(o, "evictions"));
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
			else if (errno != ECONNREFUSED)
				(*unreadable)++;
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
	int unreadable, found = collect(dir, o->pid, all, &unreadable);

	if (o->json) {
		printf("%s\n", json_object_to_json_string_ext(all, JSON_C_TO_STRING_PLAIN));
	} else if (!found && o->pid) {
		printf("no uswap run program with PID %ld publishes its status in %s\n",
		       o->pid, dir);
	} else if (!found) {
		printf("no uswap run program publishes its status in %s\n", dir);
	} else {
		for (size_t i = 0; i < json_object_array_length(all); i++)
			print_one(json_object_array_get_idx(all, i));
	}
	if (unreadable)
		fprintf(stderr, "uswap status: %d socket%s in %s did not answer, or not with "
			"a uswap status\n", unreadable, unreadable > 1 ? "s" : "", dir);
	json_object_put(all);
	fflush(stdout);
	if (unreadable)
		return CLI_EXIT_RUNTIME;
	return found || (!o->pid && o->json) ? 0 : CLI_EXIT_RUNTIME;
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

int cmd_status(int argc, char **argv)
{
	struct status_opts o;
	char dir[4096];
	int rc = parse_opts(argc, argv, &o);

	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (uswap_status_dir(dir, sizeof(dir)))
		return cli_runtime_error(CMD, "the status directory's path is too long");
	if ((rc = check_dir(dir)))
		return rc;
	for (;;) {
		if (o.watch && !o.json)
			printf("--- %s", ctime(&(time_t){ time(NULL) }));
		rc = show(&o, dir);
		if (!o.watch)
			return rc;
		struct timespec ts = { (time_t)o.watch,
				       (long)((o.watch - (double)(time_t)o.watch) * 1e9) };

		nanosleep(&ts, NULL);
	}
}
