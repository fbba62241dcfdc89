/* SPDX-License-Identifier: MIT */
/*
 * cli.c - argument parsing and error reporting shared by the subcommands.
 *
 * Every parser takes the whole string (no trailing junk, no empty input)
 * and returns 0, -EINVAL (malformed) or -ERANGE (outside the bounds); the
 * caller turns that into a usage error naming the option.
 */
#include "cli.h"
#include "lab/lab_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <time.h>

#include <uswap/uswap.h>

/* strtoull() accepts "-1" and wraps it; refuse any sign for unsigned. */
static int parse_u64_raw(const char *s, uint64_t *out, char **end)
{
	unsigned long long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	char *end;
	int err;

	err = parse_u64_raw(s, &v, &end);
	if (err)
		return err;
	if (*end != '\0')
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_uint(const char *s, unsigned int min, unsigned int max,
		   unsigned int *out)
{
	uint64_t v;
	int err;

	err = cli_parse_u64(s, min, max, &v);
	if (!err)
		*out = (unsigned int)v;
	return err;
}

/* One signed decimal at @s, ending at *@end. */
static int parse_long_raw(const char *s, long *out, char **end)
{
	long v;

	if (*s == '\0' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, end, 10);
	if (*end == s)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;
	int err;

	err = parse_long_raw(s, &v, &end);
	if (err)
		return err;
	if (*end != '\0')
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = (int)v;
	return 0;
}

/* The shift of a binary unit suffix ("", "K", "KiB", "kb", "M", ...). */
static int size_suffix_shift(const char *suffix)
{
	static const char units[] = "KMGT";
	const char *unit;

	if (*suffix == '\0' || !strcasecmp(suffix, "b"))
		return 0;
	unit = strchr(units, toupper((unsigned char)*suffix));
	if (!unit)
		return -EINVAL;
	suffix++;
	if (*suffix != '\0' && strcasecmp(suffix, "b") && strcasecmp(suffix, "ib"))
		return -EINVAL;
	return 10 * (int)(unit - units + 1);
}

/* The digits after a decimal point at @p (at most 9 count): the fraction
 * as @num / @den. Return: the first byte after them, or NULL if none. */
static const char *parse_fraction(const char *p, uint64_t *num, uint64_t *den)
{
	*num = 0;
	*den = 1;
	if (!isdigit((unsigned char)*p))
		return NULL;
	for (; isdigit((unsigned char)*p); p++) {
		if (*den < 1000000000u) {
			*num = *num * 10 + (uint64_t)(*p - '0');
			*den *= 10;
		}
	}
	return p;
}

/* A decimal number "12" or "12.5" at @s: @whole, and the fraction as
 * @num / @den; *@rest the byte after it. Return: 0 or -EINVAL/-ERANGE. */
static int parse_decimal(const char *s, uint64_t *whole, uint64_t *num, uint64_t *den,
			 const char **rest)
{
	char *end;
	int err = parse_u64_raw(s, whole, &end);

	*num = 0;
	*den = 1;
	if (err)
		return err;
	*rest = end;
	if (*end == '.' && !(*rest = parse_fraction(end + 1, num, den)))
		return -EINVAL;
	return 0;
}

int cli_parse_size(const char *s, uint64_t *bytes)
{
	uint64_t v, num, den;
	const char *suffix;
	int shift, err;

	err = parse_decimal(s, &v, &num, &den, &suffix);
	if (err)
		return err;
	shift = size_suffix_shift(suffix);
	if (shift < 0)
		return shift;
	if (den > 1 && !shift)
		return -EINVAL; /* "1.5" bytes */
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*bytes = v << shift;
	/* The fraction of the unit, rounded down to bytes. */
	uint64_t part = (uint64_t)(((unsigned __int128)num << shift) / den);

	if (*bytes > UINT64_MAX - part)
		return -ERANGE;
	*bytes += part;
	return 0;
}

int cli_parse_mem_size(const char *s, uint64_t *bytes)
{
	size_t len = strlen(s);
	uint64_t whole, num, den, ram;
	const char *rest;
	int err;

	if (!len || s[len - 1] != '%')
		return cli_parse_size(s, bytes);
	err = parse_decimal(s, &whole, &num, &den, &rest);
	if (err)
		return err;
	if (rest != s + len - 1)
		return -EINVAL;
	if (whole > 100 || (whole == 100 && num))
		return -ERANGE;
	ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	/* ram * (whole + num / den) / 100, in 128 bits: no overflow. */
	*bytes = (uint64_t)(((unsigned __int128)ram * (whole * den + num)) / (den * 100));
	*bytes -= *bytes % (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

int cli_parse_seconds(const char *s, double *seconds)
{
	char *end;
	double v;

	if (*s == '\0' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		return -EINVAL;
	if (errno == ERANGE || !isfinite(v) || v <= 0.0)
		return -ERANGE;
	*seconds = v;
	return 0;
}

int cli_parse_int_list(const char *s, int min, int max, int *vals, int cap)
{
	int nr = 0;

	for (;;) {
		char *end;
		long v;
		int err;

		err = parse_long_raw(s, &v, &end);
		if (err)
			return err;
		if (*end != ',' && *end != '\0')
			return -EINVAL;
		if (v < min || v > max || nr == cap)
			return -ERANGE;
		vals[nr++] = (int)v;
		if (*end == '\0')
			return nr;
		s = end + 1;
	}
}

static void vreport(const char *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "uswap%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

const char *cli_option_name(const struct option *opts, int val)
{
	for (const struct option *o = opts; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

int cli_check_spec(const char *cmd, const char *opt, const char *spec)
{
	struct uswap_spec_info *si = malloc(sizeof(*si));
	char why[256] = "";
	int rc;

	if (!si)
		return cli_runtime_error(cmd, "out of memory");
	rc = uswap_spec_parse(spec, si, why, sizeof(why));
	free(si);
	if (rc == -ENOMEM)
		return cli_runtime_error(cmd, "out of memory");
	return rc ? cli_usage_error(cmd, "%s '%s': %s", opt, spec, why) : 0;
}

int cli_next_option(const char *cmd, int argc, char **argv, const char *shortopts,
		    const struct option *longopts, const char *usage)
{
	int opt;

	opterr = 0;
	opt = getopt_long(argc, argv, shortopts, longopts, NULL);
	switch (opt) {
	case -1:
		return CLI_OPT_END;
	case 'h':
		fputs(usage, stdout);
		return CLI_OPT_HELP;
	case ':':
		cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		return CLI_OPT_ERROR;
	case '?':
		cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		return CLI_OPT_ERROR;
	}
	return opt;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cmd, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'uswap%s%s --help' for more information.\n",
		cmd ? " " : "", cmd ? cmd : "");
	return CLI_EXIT_USAGE;
}

int cli_runtime_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(cmd, fmt, ap);
	va_end(ap);
	return CLI_EXIT_RUNTIME;
}

const char *cli_errno_name(int err)
{
	const char *name = err < 0 ? strerrorname_np(-err) : NULL;

	return name ? name : "unknown error";
}

uint64_t cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Plots are SVG only (cli.h). */
int cli_plot_name(const char *cmd, const char *opt, const char *path)
{
	const char *base = strrchr(path, '/'), *ext;

	if (!*path || !strcmp(path, "--"))
		return cli_usage_error(cmd, "%s needs a FILE.svg", opt);
	/* A name without an extension (a FIFO, /dev/stdout) is taken. */
	ext = strrchr(base ? base + 1 : path, '.');
	if (ext && ext != (base ? base + 1 : path) && strcasecmp(ext, ".svg"))
		return cli_usage_error(cmd, "%s %s: plots are drawn as SVG only; name the file "
				       "FILE.svg", opt, path);
	return 0;
}

int cli_svg_draw(const char *cmd, const char *path, bool made,
		 int (*data_fn)(FILE *f, void *ctx),
		 void (*script_fn)(FILE *g, const char *data, const char *path, void *ctx),
		 void *ctx)
{
	int rc;

	if (!lab_have_gnuplot()) {
		fprintf(stderr, "uswap %s: --svg %s skipped: gnuplot not found (Debian: "
			"gnuplot-nox)\n", cmd, path);
		if (made)
			unlink(path); /* no empty file left behind */
		return CLI_EXIT_OK;
	}
	rc = lab_gnuplot_svg(path, data_fn, script_fn, ctx);
	if (rc)
		return cli_runtime_error(cmd, "--svg %s: %s", path, strerror(-rc));
	return CLI_EXIT_OK;
}

int cli_svg_open(const char *cmd, const char *opt, const char *path, bool *made)
{
	int fd, rc = cli_plot_name(cmd, opt, path);

	if (rc)
		return rc;
	*made = access(path, F_OK) != 0;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644); /* a FIFO: no wait */
	if (fd < 0)
		return cli_usage_error(cmd, "%s %s: %s", opt, path, errno == ENXIO ?
				       "a FIFO that no process reads" : strerror(errno));
	close(fd);
	return 0;
}
