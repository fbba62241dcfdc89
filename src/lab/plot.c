// SPDX-License-Identifier: MIT
/*
 * plot.c - per-device use over the run as an SVG, drawn by gnuplot.
 *
 * Seeds 4 and 5 argue with device use (seed 4's swapon snapshots, seed
 * 5's largest/smallest peak ratio), so their experiments draw it: one
 * panel per arm, one curve per device, x = folios swapped out so far, y =
 * MiB in use. The samples go to a temporary data file; the script goes
 * to gnuplot's standard input. gnuplot is optional (Debian gnuplot-nox):
 * without it nothing is drawn and the caller says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/lab.h"

bool lab_have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path && *path) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);

		if (len && len < sizeof(buf) - 10) {
			snprintf(buf, sizeof(buf), "%.*s/gnuplot", (int)len, path);
			if (!access(buf, X_OK))
				return true;
		}
		path = colon ? colon + 1 : NULL;
	}
	return false;
}

/* Both arms into one file: gnuplot's "index" picks a block (blocks are
 * separated by two blank lines). Columns: ops, then MiB per device. */
static int write_data(FILE *f, const struct lab_result *res)
{
	const struct lab_arm *arms[2] = { &res->before, &res->after };

	for (int a = 0; a < 2; a++) {
		const struct lab_series *s = arms[a]->series;

		for (unsigned int i = 0; s && i < s->nr_samples; i++) {
			fprintf(f, "%llu", (unsigned long long)s->ops[i]);
			for (unsigned int d = 0; d < s->nr_devices; d++)
				fprintf(f, " %.2f", (double)s->used[i][d] *
					USWAP_PAGE_SIZE / (1024.0 * 1024.0));
			fputc('\n', f);
		}
		fputs("\n\n", f);
	}
	return ferror(f) ? -EIO : 0;
}

static void write_panel(FILE *g, const char *data, int idx, const char *title,
			unsigned int nr_devices)
{
	fprintf(g, "set title \"%s\"\nplot ", title);
	for (unsigned int d = 0; d < nr_devices; d++)
		fprintf(g, "%s'%s' index %d using 1:%u with lines lw 2 title 'dev %u'",
			d ? ", " : "", data, idx, d + 2, d);
	fputc('\n', g);
}

static void lab_script(FILE *g, const char *data, const char *path, void *ctx)
{
	const struct lab_result *res = ctx;
	char before[160], after[160], title[256];
	unsigned int nr = res->before.series->nr_devices;

	lab_policy_format(&res->before.policy, before, sizeof(before));
	lab_policy_format(&res->after.policy, after, sizeof(after));
	fprintf(g, "set terminal svg size 900,700 dynamic background rgb 'white'\n"
		   "set output '%s'\nset multiplot layout 2,1 title '%s: per-device use'\n"
		   "set xlabel 'folios swapped out'\nset ylabel 'MiB in use'\n"
		   "set key outside right\nset grid\n", path, res->exp->name);
	snprintf(title, sizeof(title), "before: %s", before);
	write_panel(g, data, 0, title, nr);
	snprintf(title, sizeof(title), "after: %s", after);
	write_panel(g, data, 1, title, nr);
	fprintf(g, "unset multiplot\n");
}

static int lab_data(FILE *f, void *ctx)
{
	return write_data(f, ctx);
}

int lab_plot_svg(const struct lab_result *res, const char *path)
{
	if (!lab_have_gnuplot())
		return -ENOENT;
	if (!res->before.series || !res->after.series ||
	    !res->before.series->nr_samples || !res->after.series->nr_samples)
		return -ENODATA;
	return lab_gnuplot_svg(path, lab_data, lab_script, (void *)res);
}

int lab_gnuplot_svg(const char *path, int (*data_fn)(FILE *f, void *ctx),
		    void (*script_fn)(FILE *g, const char *data, const char *path, void *ctx),
		    void *ctx)
{
	char data[] = "/tmp/uswap-plot-XXXXXX";
	FILE *f, *g;
	int fd, err;

	if (!lab_have_gnuplot())
		return -ENOENT;
	/* gnuplot reads the name single-quoted in a script: a quote or a
	 * control character (a newline starts a new command) could break
	 * out of it. */
	if (!*path)
		return -EINVAL;
	for (const char *c = path; *c; c++)
		if (*c == '\'' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return -EINVAL;
	/* Fail here, with the reason, rather than in gnuplot. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	fd = mkstemp(data);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		unlink(data);
		return err;
	}
	err = data_fn(f, ctx);
	if (fclose(f) && !err)
		err = -EIO;
	if (!err) {
		g = popen("gnuplot >/dev/null 2>&1", "w"); /* never onto our stdout */
		if (!g) {
			err = -EIO;
		} else {
			script_fn(g, data, path, ctx);
			err = pclose(g) == 0 ? 0 : -EIO;
		}
	}
	unlink(data);
	return err;
}
