// SPDX-License-Identifier: MIT
/*
 * run_daemon_line.c - one process's line of `uswap run --daemon`: the
 * object `uswap status` reads live and the stats file gets at the end,
 * with the same keys as the agent's own line (src/agent/agent.c), so
 * that --stats, --json, --plot and `uswap status` read either.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <uswap/uswap.h>

#include "run_daemon.h"

static json_object *num(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

static void put(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *orders(const uint64_t *v)
{
	json_object *a = json_object_new_array();

	for (int o = 0; o < USWAP_NR_ORDERS; o++)
		json_object_array_add(a, num((uint64_t)v[o]));
	return a;
}

/* A zram device's mm_stat (NULL for the other kinds). */
static json_object *zram(struct uswap *u, int type)
{
	struct uswap_zram_stat z;
	json_object *o;

	if (uswap_device_zram_stat(u, type, &z))
		return NULL;
	o = json_object_new_object();
	put(o, "algorithm", json_object_new_string(z.algo));
	put(o, "disksize", num((uint64_t)z.disksize));
	put(o, "orig_data_size", num((uint64_t)z.orig_data_size));
	put(o, "compr_data_size", num((uint64_t)z.compr_data_size));
	put(o, "mem_used_total", num((uint64_t)z.mem_used_total));
	put(o, "mem_limit", num((uint64_t)z.mem_limit));
	put(o, "mem_used_max", num((uint64_t)z.mem_used_max));
	put(o, "same_pages", num((uint64_t)z.same_pages));
	put(o, "pages_compacted", num((uint64_t)z.pages_compacted));
	put(o, "huge_pages", num((uint64_t)z.huge_pages));
	return o;
}

/* The backend's own figures (uswap_device_print_stats(): "key value"
 * lines) as {"key": value}: a count as a number, the rest as a string
 * (a mirror's "leg0_state failed", nbd's reconnects), as the agent's. */
static json_object *backend(struct uswap *u, int type)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	json_object *o;

	if (!m)
		return NULL;
	if (uswap_device_print_stats(u, type, m)) {
		fclose(m);
		free(text);
		return NULL;
	}
	fclose(m);
	o = json_object_new_object();
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, ' '), *end;
		long long n;

		if (!v)
			continue;
		*v++ = '\0';
		n = strtoll(v, &end, 10);
		put(o, line, isdigit((unsigned char)*v) && !*end ? json_object_new_int64(n)
							: json_object_new_string(v));
	}
	free(text);
	return o;
}

json_object *run_daemon_devices(struct uswap *u)
{
	json_object *a = json_object_new_array(), *z, *b;
	struct uswap_device_info info;

	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		json_object *o;

		if (uswap_device_info(u, type, &info))
			continue;
		o = json_object_new_object();
		put(o, "name", json_object_new_string(info.name));
		put(o, "type", json_object_new_string(info.kind));
		put(o, "prio", json_object_new_int(info.prio));
		put(o, "size_kb", num((uint64_t)info.size_kb));
		put(o, "used_kb", num((uint64_t)info.used_kb));
		put(o, "write_errors", num((uint64_t)info.write_errors));
		put(o, "read_errors", num((uint64_t)info.read_errors));
		if ((z = zram(u, type)))
			put(o, "zram", z);
		if ((b = backend(u, type)))
			put(o, "backend", b);
		json_object_array_add(a, o);
	}
	return a;
}

json_object *run_client_line(const struct run_client *c, const struct uswap_pager_stats *ps,
			     uint64_t resident, bool root)
{
	json_object *o = json_object_new_object();
	struct uswap_stats st = { .size = sizeof(st) };

	if (!root || uswap_stats_get(c->d->u, &st))
		memset(&st, 0, sizeof(st));
	put(o, "pid", json_object_new_int(c->pid));
	put(o, "image_ns", num(c->image_ns));
	put(o, "root", json_object_new_boolean(root));
	put(o, "daemon", json_object_new_boolean(true));
	put(o, "cmd", json_object_new_string(c->comm));
	put(o, "resident_bytes", num(resident));
	put(o, "swpout", orders(st.swpout));
	put(o, "swpout_fallback", orders(st.swpout_fallback));
	put(o, "swpin", num(st.swpin));
	put(o, "resident_peak_bytes", num(ps->resident_peak_bytes));
	put(o, "limit_bytes", num(ps->limit_bytes));
	put(o, "fault_count", num(ps->fault_count));
	put(o, "fault_us_p50", json_object_new_double(ps->fault_ns_p50 / 1e3));
	put(o, "fault_us_p99", json_object_new_double(ps->fault_ns_p99 / 1e3));
	put(o, "evictions", num(ps->evictions));
	put(o, "evict_zero", num(ps->evict_zero));
	put(o, "evict_pinned", num(ps->evict_pinned));
	put(o, "over_limit", num(ps->over_limit));
	put(o, "read_errors", num(ps->read_errors));
	put(o, "heap_fallbacks", num(atomic_load(&c->fallbacks)));
	put(o, "faults", num(ps->faults));
	put(o, "wp_faults", num(ps->wp_faults));
	put(o, "zero_fills", num(ps->zero_fills));
	put(o, "readahead", num(ps->readahead));
	put(o, "reclaim_waits", num(ps->reclaim_waits));
	put(o, "workingset_refault", num(ps->workingset_refault));
	put(o, "workingset_activate", num(ps->workingset_activate));
	put(o, "zero_written", num(ps->zero_written));
	put(o, "devices", !root ? json_object_new_array()
			  : c->devices ? json_object_get(c->devices)
				       : run_daemon_devices(c->d->u));
	return o;
}

