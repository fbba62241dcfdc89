// SPDX-License-Identifier: MIT
/*
 * run_config.c - uswap.conf(5): the defaults of `uswap run` (devices,
 * limit, order, heap, readahead) in an INI file, read with libinih. The system file
 * (SYSCONFDIR/uswap.conf) first, then the user's ($XDG_CONFIG_HOME, else
 * ~/.config, /uswap.conf), then the command line: each later one wins,
 * setting by setting; the device list is replaced whole by the last place
 * that names any device. Each value goes through the command line's own
 * checks (run_apply_option()), so a file cannot hold what --limit would
 * refuse. In secure-execution mode (a set-user-ID uswap) the user's file
 * is not read: its environment is not trusted.
 */
#include "cli.h"
#include "run_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#define CMD "run"

struct load {
	struct run_options *o;
	struct run_config *c;
	enum run_source src;
	bool devices_seen;  /* this file replaced the device list already */
	bool failed;        /* said once: later lines are not applied */
};

static const char *const source_name[] = { "built-in default", "system file", "user file",
					   "command line" };

static int setting(void *user, const char *section, const char *name, const char *value)
{
	struct load *l = user;
	int opt, rc;

	if (l->failed)
		return 0;
	if (strcmp(section, "run")) {
		fprintf(stderr, "uswap run: '%s' is outside the [run] section\n", name);
		goto bad;
	}
	if (!strcmp(name, "limit")) {
		opt = 'l';
		l->c->limit = l->src;
	} else if (!strcmp(name, "order")) {
		opt = OPT_ORDER;
		l->c->order = l->src;
	} else if (!strcmp(name, "heap")) {
		opt = OPT_HEAP;
		l->c->heap = l->src;
	} else if (!strcmp(name, "readahead")) {
		opt = OPT_READAHEAD;
		l->c->readahead = l->src;
	} else if (!strcmp(name, "device")) {
		opt = OPT_DEVICE;
		if (!l->devices_seen)
			l->o->nr_devices = 0; /* this file's list replaces the last */
		l->devices_seen = true;
		l->c->devices = l->src;
		/* The options keep the pointer, for the whole run: kept here
		 * too, so it stays reachable (it is never freed). */
		static char *kept[MAX_DEVICES * 2];
		static unsigned int nr_kept;

		if (nr_kept == MAX_DEVICES * 2 || !(kept[nr_kept] = strdup(value)))
			goto bad;
		value = kept[nr_kept++];
	} else {
		fprintf(stderr, "uswap run: unknown setting '%s' (limit, order, heap, readahead, "
			"device)\n", name);
		goto bad;
	}
	rc = run_apply_option(l->o, opt, value);
	if (!rc)
		return 1;
bad:
	l->failed = true;
	return 0;
}

static void user_path(char *buf, size_t len)
{
	const char *xdg = secure_getenv("XDG_CONFIG_HOME"), *home = secure_getenv("HOME");

	buf[0] = 0;
	if (xdg && *xdg == '/')
		snprintf(buf, len, "%s/uswap.conf", xdg);
	else if (home && *home == '/')
		snprintf(buf, len, "%s/.config/uswap.conf", home);
}

/* Apply @path (a missing file is no error). Return: 0 or the usage
 * error's status. */
static int load_file(struct run_options *o, struct run_config *c, const char *path,
		     enum run_source src)
{
	struct load l = { .o = o, .c = c, .src = src };
	FILE *f;
	int line;

	if (!*path || !(f = fopen(path, "re")))
		return 0;
	line = ini_parse_file(f, setting, &l);
	fclose(f);
	if (!line && !l.failed)
		return 0;
	fprintf(stderr, "uswap run: %s: line %d: %s\n", path, line > 0 ? line : 0,
		l.failed ? "the setting said above" : "not a line of an INI file");
	return CLI_EXIT_USAGE;
}

int run_config_load(struct run_options *o, struct run_config *c)
{
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->path[0], sizeof(c->path[0]), "%s/uswap.conf", USWAP_SYSCONFDIR);
	user_path(c->path[1], sizeof(c->path[1]));
	if ((rc = load_file(o, c, c->path[0], RUN_SRC_SYSTEM)))
		return rc;
	return load_file(o, c, c->path[1], RUN_SRC_USER);
}

static void print_one(const char *key, const char *value, const struct run_config *c,
		      enum run_source src)
{
	const char *where = src == RUN_SRC_SYSTEM ? c->path[0] :
			    src == RUN_SRC_USER ? c->path[1] : "";

	printf("%-9s %-24s %s%s%s%s\n", key, value, source_name[src], *where ? " (" : "",
	       where, *where ? ")" : "");
}

void run_config_print(const struct run_options *o, const struct run_config *c)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->limit);
	print_one("limit", buf, c, c->limit);
	snprintf(buf, sizeof(buf), "%u", o->order);
	print_one("order", buf, c, c->order);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->heap);
	print_one("heap", buf, c, c->heap);
	snprintf(buf, sizeof(buf), "%u", run_readahead(o));
	print_one("readahead", buf, c, c->readahead);
	for (unsigned int i = 0; i < o->nr_devices; i++)
		print_one("device", o->devices[i], c, c->devices);
	printf("# files: %s (%s), %s (%s)\n", c->path[0],
	       access(c->path[0], R_OK) ? "none" : "read", *c->path[1] ? c->path[1] : "-",
	       *c->path[1] && !access(c->path[1], R_OK) ? "read" : "none");
}
