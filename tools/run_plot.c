// SPDX-License-Identifier: MIT
/*
 * run_plot.c - `uswap run --plot`'s samples: CMD's state as its status
 * socket (the one `uswap status` reads) tells it. Only the process
 * `uswap run` started is sampled (a forked child has a socket of its own).
 */
#include <json-c/json.h>

#include "cli.h"
#include "run_cmd.h"
#include "status_cmd.h"

static int64_t num(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

/* Pages swapped out: swpout counts folios per order. */
static uint64_t pages_out(json_object *o)
{
	json_object *a;
	uint64_t n = 0;

	if (!json_object_object_get_ex(o, "swpout", &a))
		return 0;
	for (size_t k = 0; k < json_object_array_length(a); k++)
		n += (uint64_t)json_object_get_int64(json_object_array_get_idx(a, k)) << k;
	return n;
}

static void take_devices(struct cli_plot *p, json_object *o, struct cli_plot_sample *s)
{
	json_object *devs, *d, *v;

	if (!json_object_object_get_ex(o, "devices", &devs))
		return;
	for (size_t i = 0; i < json_object_array_length(devs) && i < CLI_PLOT_MAX_DEVICES; i++) {
		d = json_object_array_get_idx(devs, i);
		s->used_mib[i] = (double)num(d, "used_kb") / 1024.0;
		if (i >= p->nr_devices && json_object_object_get_ex(d, "name", &v))
			cli_plot_device(p, (unsigned int)i, json_object_get_string(v));
	}
}

void run_plot_sample(struct cli_plot *p, long pid)
{
	json_object *o = status_ask_pid(pid);
	struct cli_plot_sample *s;

	if (!o)
		return; /* not started yet, or gone */
	s = cli_plot_next(p);
	if (s) {
		s->resident_mib = (double)num(o, "resident_bytes") / (1 << 20);
		s->limit_mib = (double)num(o, "limit_bytes") / (1 << 20);
		s->out = pages_out(o);
		s->in = (uint64_t)num(o, "swpin");
		take_devices(p, o, s);
	}
	json_object_put(o);
}

