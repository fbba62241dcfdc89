// SPDX-License-Identifier: MIT
/*
 * run_plot.c - `uswap run --plot FILE.svg`: while CMD runs, its state is
 * read from its status socket (the one `uswap status` reads) every
 * PLOT_PERIOD_MS; when it ends, gnuplot draws three panels over time:
 * resident heap against the limit, each device's use, and the swap-out
 * and swap-in rates. Only the process `uswap run` started is sampled
 * (a forked child has a socket of its own).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "lab/lab.h"
#include "run_cmd.h"
#include "status_cmd.h"

#define PLOT_MAX_DEVICES 8

struct plot_sample {
	double t;                      /* seconds since the start */
	double resident_mib, limit_mib;
	uint64_t pswpout, pswpin;      /* pages out (all orders), folios in */
	double used_mib[PLOT_MAX_DEVICES];
};

struct run_plot {
	const char *path;
	uint64_t t0;
	struct plot_sample *s;
	size_t nr, cap;
	unsigned int nr_devices;
	char names[PLOT_MAX_DEVICES][64];
};

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

static void take_devices(struct run_plot *p, json_object *o, struct plot_sample *s)
{
	json_object *devs, *d, *v;

	if (!json_object_object_get_ex(o, "devices", &devs))
		return;
	for (size_t i = 0; i < json_object_array_length(devs) && i < PLOT_MAX_DEVICES; i++) {
		d = json_object_array_get_idx(devs, i);
		s->used_mib[i] = (double)num(d, "used_kb") / 1024.0;
		if (i >= p->nr_devices && json_object_object_get_ex(d, "name", &v)) {
			snprintf(p->names[i], sizeof(p->names[i]), "%s", json_object_get_string(v));
			p->nr_devices = (unsigned int)i + 1;
		}
	}
}

struct run_plot *run_plot_new(const char *path)
{
	struct run_plot *p = calloc(1, sizeof(*p));

	if (p) {
		p->path = path;
		p->t0 = cli_now_ns();
	}
	return p;
}

void run_plot_sample(struct run_plot *p, long pid)
{
	json_object *o = status_ask_pid(pid);
	struct plot_sample *s;

	if (!o)
		return; /* not started yet, or gone */
	if (p->nr == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		struct plot_sample *ns = realloc(p->s, cap * sizeof(*ns));

		if (!ns) {
			json_object_put(o);
			return;
		}
		p->s = ns;
		p->cap = cap;
	}
	s = &p->s[p->nr++];
	memset(s, 0, sizeof(*s));
	s->t = (double)(cli_now_ns() - p->t0) / 1e9;
	s->resident_mib = (double)num(o, "resident_bytes") / (1 << 20);
	s->limit_mib = (double)num(o, "limit_bytes") / (1 << 20);
	s->pswpout = pages_out(o);
	s->pswpin = (uint64_t)num(o, "swpin");
	take_devices(p, o, s);
	json_object_put(o);
}

/* Columns: t, resident, limit, pages out/s, folios in/s, MiB per device. */
static int write_samples(FILE *f, void *ctx)
{
	const struct run_plot *p = ctx;

	for (size_t i = 0; i < p->nr; i++) {
		const struct plot_sample *s = &p->s[i], *prev = i ? &p->s[i - 1] : s;
		double dt = s->t - prev->t;

		fprintf(f, "%.3f %.2f %.2f %.1f %.1f", s->t, s->resident_mib, s->limit_mib,
			dt > 0 ? (double)(s->pswpout - prev->pswpout) / dt : 0.0,
			dt > 0 ? (double)(s->pswpin - prev->pswpin) / dt : 0.0);
		for (unsigned int d = 0; d < p->nr_devices; d++)
			fprintf(f, " %.2f", s->used_mib[d]);
		fputc('\n', f);
	}
	return ferror(f) ? -EIO : 0;
}

/* A device name as a gnuplot title: single quotes would end it. */
static void put_title(FILE *g, const char *name)
{
	for (; *name; name++)
		fputc(*name == '\'' || (unsigned char)*name < 0x20 ? '_' : *name, g);
}

static void write_script(FILE *g, const char *data, const char *path, void *ctx)
{
	const struct run_plot *p = ctx;

	fprintf(g, "set terminal svg size 900,900 dynamic background rgb 'white'\n"
		   "set output '%s'\nset multiplot layout 3,1 title 'uswap run'\n"
		   "set xlabel 'seconds'\nset key outside right\nset grid\n", path);
	fprintf(g, "set title 'resident heap'\nset ylabel 'MiB'\n"
		   "plot '%s' using 1:2 with lines lw 2 title 'resident', "
		   "'%s' using 1:3 with lines dt 2 title 'limit'\n", data, data);
	fprintf(g, "set title 'device use'\nset ylabel 'MiB'\nplot ");
	for (unsigned int d = 0; d < p->nr_devices; d++) {
		fprintf(g, "%s'%s' using 1:%u with lines lw 2 title '", d ? ", " : "", data, 6 + d);
		put_title(g, p->names[d]);
		fputc('\'', g);
	}
	if (!p->nr_devices)
		fprintf(g, "'%s' using 1:(0) with lines title 'no devices'", data);
	fprintf(g, "\nset title 'swap traffic'\nset ylabel 'per second'\n"
		   "plot '%s' using 1:4 with lines lw 2 title 'pswpout (pages)', "
		   "'%s' using 1:5 with lines lw 2 title 'swpin (folios)'\n"
		   "unset multiplot\n", data, data);
}

int run_plot_finish(struct run_plot *p)
{
	int rc;

	if (!lab_have_gnuplot()) {
		fprintf(stderr, "uswap run: --plot %s skipped: gnuplot not found (Debian: "
			"gnuplot-nox)\n", p->path);
		rc = 0;
	} else if (!p->nr) {
		fprintf(stderr, "uswap run: --plot %s: no sample (CMD ended before its first "
			"%d ms)\n", p->path, PLOT_PERIOD_MS);
		rc = 0;
	} else if ((rc = lab_gnuplot_svg(p->path, write_samples, write_script, p))) {
		fprintf(stderr, "uswap run: --plot %s: %s\n", p->path, strerror(-rc));
	}
	free(p->s);
	free(p);
	return rc;
}
