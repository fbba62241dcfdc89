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

/* Every arm into one file: gnuplot's "index" picks a block (blocks are
 * separated by two blank lines). Columns: ops, then MiB per device. */
static int write_data(FILE *f, const struct lab_result *res)
{
	for (unsigned int a = 0; a < res->nr_arms; a++) {
		const struct lab_series *s = res->arm[a].series;

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

static void write_panel(FILE *g, const char *data, unsigned int idx, const char *title,
			unsigned int nr_devices)
{
	fprintf(g, "set title \"%s\"\nplot ", title);
	for (unsigned int d = 0; d < nr_devices; d++)
		fprintf(g, "%s'%s' index %u using 1:%u with lines lw 2 title 'dev %u'",
			d ? ", " : "", data, idx, d + 2, d);
	fputc('\n', g);
}

/* One panel per arm, one curve per device. */
static void lab_script(FILE *g, const char *data, const char *path, void *ctx)
{
	const struct lab_result *res = ctx;
	unsigned int nr = res->arm[0].series->nr_devices;

	fprintf(g, "set terminal svg size 900,%u dynamic background rgb 'white'\n"
		   "set output '%s'\nset multiplot layout %u,1 title '%s: per-device use'\n"
		   "set xlabel 'folios swapped out'\nset ylabel 'MiB in use'\n"
		   "set key outside right\nset grid\n", 350 * res->nr_arms, path,
		res->nr_arms, res->exp->name);
	for (unsigned int a = 0; a < res->nr_arms; a++) {
		char policy[160], title[256];

		lab_policy_format(&res->arm[a].policy, policy, sizeof(policy));
		snprintf(title, sizeof(title), "%s: %s", res->exp->arms[a].name, policy);
		write_panel(g, data, a, title, nr);
	}
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
	for (unsigned int a = 0; a < res->nr_arms; a++)
		if (!res->arm[a].series || !res->arm[a].series->nr_samples)
			return -ENODATA;
	if (!res->nr_arms)
		return -ENODATA;
	return lab_gnuplot_svg(path, lab_data, lab_script, (void *)res);
}

bool lab_svg_path_ok(const char *path)
{
	/* gnuplot reads the name single-quoted in a script: a single quote
	 * or a control character (a newline starts a new command) could
	 * break out of it. */
	if (!path || !*path)
		return false;
	for (const char *c = path; *c; c++)
		if (*c == '\'' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
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
	if (!lab_svg_path_ok(path))
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
