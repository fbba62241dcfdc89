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

#include "lab/lab_internal.h"

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

/* Copy all of file @from (an open descriptor, read from its start) to
 * @to. Return: 0; -EIO when @from is empty (gnuplot drew nothing);
 * -errno of a read or write (ENOSPC of a full disk). */
static int copy_fd(int from, int to)
{
	char buf[65536];
	size_t total = 0;
	ssize_t n;
	int err = 0;

	if (lseek(from, 0, SEEK_SET) < 0)
		return -errno;
	while (!err && (n = read(from, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			err = errno == EINTR ? 0 : -errno;
			continue;
		}
		for (ssize_t off = 0, w; !err && off < n; off += w > 0 ? w : 0) {
			w = write(to, buf + off, (size_t)(n - off));
			if (w < 0 && errno != EINTR)
				err = -errno;
		}
		total += (size_t)n;
	}
	return err ? err : total ? 0 : -EIO;
}

/* A temporary file with no name left: nothing stays behind however the
 * process ends (an interrupted plot left its files in /tmp). gnuplot, our
 * child, inherits it and reaches it as /dev/fd/N (@name). Return: the
 * descriptor, or -errno. */
static int anon_tmp(char *name, size_t len)
{
	char path[] = "/tmp/uswap-plot-XXXXXX";
	int fd = mkstemp(path); /* no O_CLOEXEC: gnuplot's */

	if (fd < 0)
		return -errno;
	unlink(path);
	snprintf(name, len, "/dev/fd/%d", fd);
	return fd;
}

/* Feed gnuplot @script_fn's script drawing @data into @svg. */
static int run_gnuplot(const char *data, const char *svg,
		       void (*script_fn)(FILE *g, const char *data, const char *path, void *ctx),
		       void *ctx)
{
	FILE *g = popen("gnuplot >/dev/null 2>&1", "w"); /* never onto our stdout */

	if (!g)
		return -EIO;
	script_fn(g, data, svg, ctx);
	return pclose(g) == 0 ? 0 : -EIO;
}

/* Open the plot's destination @path: without blocking (a FIFO that no
 * process reads is -ENXIO, not a wait forever) and without emptying it
 * yet (an interrupted plot leaves the old file). Return: fd or -errno. */
static int open_dest(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);

	if (fd < 0)
		return -errno;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int lab_gnuplot_svg(const char *path, int (*data_fn)(FILE *f, void *ctx),
		    void (*script_fn)(FILE *g, const char *data, const char *path, void *ctx),
		    void *ctx)
{
	char data[32], svg[32];
	int out, dfd = -1, sfd = -1, err;
	struct stat st;
	FILE *f = NULL;

	if (!lab_have_gnuplot())
		return -ENOENT;
	out = open_dest(path); /* fail here, with the reason, not in gnuplot */
	if (out < 0)
		return out;
	err = (dfd = anon_tmp(data, sizeof(data))) < 0 ? dfd
	      : (sfd = anon_tmp(svg, sizeof(svg))) < 0 ? sfd : 0;
	if (!err && !(f = fdopen(dup(dfd), "w")))
		err = -errno;
	if (!err)
		err = data_fn(f, ctx);
	if (f && fclose(f) && !err)
		err = -EIO;
	/* gnuplot draws into a file of ours: it takes the name quoted, and
	 * it says nothing of a failed write, which copy_fd() sees. */
	if (!err)
		err = run_gnuplot(data, svg, script_fn, ctx);
	if (!err && fstat(out, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(out, 0))
		err = -errno;
	if (!err)
		err = copy_fd(sfd, out);
	if (close(out) && !err)
		err = -errno;
	if (dfd >= 0)
		close(dfd);
	if (sfd >= 0)
		close(sfd);
	return err;
}
