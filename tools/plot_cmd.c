// SPDX-License-Identifier: MIT
/*
 * plot_cmd.c - the time series `uswap run --plot` and `uswap stress --plot`
 * draw: resident memory against its limit, each device's use, and the
 * swap-out and swap-in rates, three panels of one SVG, by gnuplot (the
 * lab's plumbing, lab_gnuplot_svg()). The callers sample; this file keeps
 * the samples and draws them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "lab/lab_internal.h"

int cli_plot_open(const char *cmd, const char *path, bool *made)
{
	return cli_svg_open(cmd, "--plot", path, made);
}

struct cli_plot *cli_plot_new(const char *path, bool made, const char *title,
			      const char *out_label, const char *in_label)
{
	struct cli_plot *p = calloc(1, sizeof(*p));

	if (p) {
		p->path = path;
		p->title = title;
		p->out_label = out_label;
		p->in_label = in_label;
		p->made = made;
		p->t0 = cli_now_ns();
	}
	return p;
}

struct cli_plot_sample *cli_plot_next(struct cli_plot *p)
{
	struct cli_plot_sample *s;

	if (p->nr == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		struct cli_plot_sample *ns = realloc(p->s, cap * sizeof(*ns));

		if (!ns)
			return NULL;
		p->s = ns;
		p->cap = cap;
	}
	s = &p->s[p->nr++];
	memset(s, 0, sizeof(*s));
	s->t = (double)(cli_now_ns() - p->t0) / 1e9;
	return s;
}

void cli_plot_device(struct cli_plot *p, unsigned int i, const char *name)
{
	if (i >= CLI_PLOT_MAX_DEVICES)
		return;
	snprintf(p->names[i], sizeof(p->names[i]), "%s", name);
	if (i >= p->nr_devices)
		p->nr_devices = i + 1;
}

/* Columns: t, resident, limit, out/s, in/s, MiB per device. */
static int write_samples(FILE *f, void *ctx)
{
	const struct cli_plot *p = ctx;

	for (size_t i = 0; i < p->nr; i++) {
		const struct cli_plot_sample *s = &p->s[i], *prev = i ? &p->s[i - 1] : s;
		double dt = s->t - prev->t;

		fprintf(f, "%.3f %.2f %.2f %.1f %.1f", s->t, s->resident_mib, s->limit_mib,
			dt > 0 ? (double)(s->out - prev->out) / dt : 0.0,
			dt > 0 ? (double)(s->in - prev->in) / dt : 0.0);
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
	const struct cli_plot *p = ctx;

	fprintf(g, "set terminal svg size 900,900 dynamic background rgb 'white'\n"
		   "set output '%s'\nset multiplot layout 3,1 title '%s'\n"
		   "set xlabel 'seconds'\nset key outside right\nset grid\n", path, p->title);
	fprintf(g, "set title 'resident memory'\nset ylabel 'MiB'\n"
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
		   "plot '%s' using 1:4 with lines lw 2 title '%s', "
		   "'%s' using 1:5 with lines lw 2 title '%s'\n"
		   "unset multiplot\n", data, p->out_label, data, p->in_label);
}

int cli_plot_finish(struct cli_plot *p, const char *cmd)
{
	int rc;

	if (!lab_have_gnuplot()) {
		fprintf(stderr, "uswap %s: --plot %s skipped: gnuplot not found (Debian: "
			"gnuplot-nox)\n", cmd, p->path);
		rc = 0;
	} else if (!p->nr) {
		fprintf(stderr, "uswap %s: --plot %s: no sample (it ended before the first "
			"%d ms), nothing drawn\n", cmd, p->path, CLI_PLOT_PERIOD_MS);
		if (p->made)
			unlink(p->path); /* no empty SVG left behind */
		rc = 0;
	} else if ((rc = lab_gnuplot_svg(p->path, write_samples, write_script, p))) {
		fprintf(stderr, "uswap %s: --plot %s: %s\n", cmd, p->path, strerror(-rc));
	}
	free(p->s);
	free(p);
	return rc;
}
