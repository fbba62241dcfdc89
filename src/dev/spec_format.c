/* SPDX-License-Identifier: MIT */
/*
 * spec_format.c - device specs back to strings (dev_spec_format()), and
 * the exported uswap_spec_parse(), which describes a parsed spec in the
 * public, backend-neutral struct uswap_spec_info: a list of layers (the
 * wrappers, then the device), each a kind and its options as text.
 *
 * The canonical string is the shortest spelling that parses back to the
 * same spec: options in spec.h's grammar order, defaults left out, sizes
 * in the largest binary unit that divides them. It is what tools print
 * and what a config file can store.
 */
#include "dev/spec.h"

#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * The canonical string
 * ---------------------------------------------------------------------- */

struct sbuf {
	char *buf;
	size_t len;  /* bytes of @buf */
	size_t used; /* characters wanted so far, may exceed len - 1 */
};

static void __attribute__((format(printf, 2, 3)))
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	size_t room = b->used < b->len ? b->len - b->used : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? b->buf + b->used : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->used += (size_t)n;
}

/* The largest binary unit that divides @bytes exactly. */
static void sb_size(struct sbuf *b, uint64_t bytes)
{
	static const char units[] = "TGMK";

	for (int i = 0; i < 4; i++) {
		unsigned int shift = 10 * (unsigned int)(4 - i);

		if (bytes && !(bytes & ((UINT64_C(1) << shift) - 1))) {
			sb_printf(b, "%" PRIu64 "%c", bytes >> shift, units[i]);
			return;
		}
	}
	sb_printf(b, "%" PRIu64, bytes);
}

/* The shortest %g form that reads back to the same double, with a '.'
 * whatever the program's locale (uselocale() is per thread). */
static void sb_double(struct sbuf *b, double v)
{
	locale_t c = dev_spec_c_locale(), old = uselocale(c);
	char tmp[40];

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod_l(tmp, NULL, c) == v)
			break;
	}
	uselocale(old);
	sb_printf(b, "%s", tmp);
}

static void sb_path(struct sbuf *b, const char *path)
{
	for (const char *c = path; *c; c++)
		sb_printf(b, "%s%c", *c == ':' || *c == '\\' ? "\\" : "", *c);
}

static void sb_slots(struct sbuf *b, const uint64_t *slots, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		sb_printf(b, "%s%" PRIu64, i ? "+" : "", slots[i]);
}

/* OPTS of a faulty spec, without prio (it is printed with the device). */
static void sb_faulty_opts(struct sbuf *b, const struct faulty_opts *f)
{
	const double rates[] = { f->read_error_rate, f->write_error_rate,
				 f->discard_error_rate };
	static const char *const rate_names[] = { "read", "write", "discard" };
	const char *sep = "";

	for (int i = 0; i < 3; i++) {
		if (rates[i] == 0.0)
			continue;
		sb_printf(b, "%s%s=", sep, rate_names[i]);
		sb_double(b, rates[i]);
		sep = ",";
	}
	if (f->latency_us)
		sb_printf(b, "%slatency=%u", sep, f->latency_us), sep = ",";
	if (f->seed != DEV_SPEC_DEFAULT_SEED)
		sb_printf(b, "%sseed=%" PRIu64, sep, f->seed), sep = ",";
	if (f->nr_bad_read) {
		sb_printf(b, "%sread_slots=", sep), sep = ",";
		sb_slots(b, f->bad_read_slots, f->nr_bad_read);
	}
	if (f->nr_bad_write) {
		sb_printf(b, "%swrite_slots=", sep), sep = ",";
		sb_slots(b, f->bad_write_slots, f->nr_bad_write);
	}
	if (f->nr_bad_discard) {
		sb_printf(b, "%sdiscard_slots=", sep), sep = ",";
		sb_slots(b, f->bad_discard_slots, f->nr_bad_discard);
	}
	if (f->fail_nth)
		sb_printf(b, "%sfail_nth=%" PRIu64 "%s", sep, f->fail_nth,
			  f->fail_persistent ? ",persistent" : "");
}

static int sb_spec(struct sbuf *b, const struct dev_spec *spec)
{
	const struct file_backend_opts *fo = &spec->file;

	if ((unsigned int)spec->kind >= DEV_KIND_MAX)
		return -EINVAL;
	sb_printf(b, "%s:", dev_kind_name(spec->kind));
	if (spec->kind == DEV_KIND_FAULTY) {
		if (!spec->inner)
			return -EINVAL;
		sb_faulty_opts(b, &spec->faulty);
		sb_printf(b, ":");
		return sb_spec(b, spec->inner);
	}
	if (spec->kind == DEV_KIND_CRYPT)
		return spec->inner ? sb_spec(b, spec->inner) : -EINVAL;
	if (spec->kind == DEV_KIND_MIRROR || spec->kind == DEV_KIND_WRITEBACK) {
		const char *sep = "";
		int rc;

		if (!spec->inner || !spec->inner2)
			return -EINVAL;
		if (spec->kind == DEV_KIND_WRITEBACK) {
			if (spec->wb.idle_s)
				sb_printf(b, "idle=%u", spec->wb.idle_s), sep = ",";
			if (spec->wb.huge)
				sb_printf(b, "%shuge", sep), sep = ",";
			if (spec->wb.budget_bytes) {
				sb_printf(b, "%sbudget=", sep);
				sb_size(b, spec->wb.budget_bytes);
				sep = ",";
			}
		}
		if (spec->prio != USWAP_PRIO_DEFAULT)
			sb_printf(b, "%sprio=%d", sep, spec->prio);
		sb_printf(b, ":");
		rc = sb_spec(b, spec->inner);
		sb_printf(b, "|");
		return rc ? rc : sb_spec(b, spec->inner2);
	}
	if (spec->kind == DEV_KIND_FILE)
		sb_path(b, spec->path ? spec->path : "");
	else if (spec->kind == DEV_KIND_NBD)
		sb_printf(b, "%s", spec->path ? spec->path : ""); /* as given */
	else
		sb_size(b, spec->size_bytes);
	if (spec->kind == DEV_KIND_ZRAM && strcmp(spec->algo, "lz4"))
		sb_printf(b, ":%s", spec->algo);
	if (spec->kind == DEV_KIND_ZRAM && spec->zram_workers)
		sb_printf(b, ":workers=%u", spec->zram_workers);
	if (spec->kind == DEV_KIND_ZRAM && spec->zram_mem_limit) {
		sb_printf(b, ":mem_limit=");
		sb_size(b, spec->zram_mem_limit);
	}
	if (spec->prio != USWAP_PRIO_DEFAULT)
		sb_printf(b, ":prio=%d", spec->prio);
	if (spec->kind == DEV_KIND_NBD && spec->nbd_conns)
		sb_printf(b, ":conns=%u", spec->nbd_conns);
	if (spec->kind == DEV_KIND_NBD && spec->nbd_timeout_s)
		sb_printf(b, ":timeout=%u", spec->nbd_timeout_s);
	if (spec->kind != DEV_KIND_FILE)
		return 0;
	if (fo->discard)
		sb_printf(b, ":discard");
	if (fo->direct)
		sb_printf(b, ":direct");
	if (fo->queue_depth != DEV_SPEC_DEFAULT_QD)
		sb_printf(b, ":qd=%u", fo->queue_depth);
	if (fo->no_uring)
		sb_printf(b, ":sync");
	return 0;
}

int dev_spec_format(const struct dev_spec *spec, char *buf, size_t len)
{
	struct sbuf b = { .buf = buf, .len = len, .used = 0 };
	int rc;

	if (buf && len)
		buf[0] = '\0';
	if (!spec)
		return -EINVAL;
	rc = sb_spec(&b, spec);
	if (rc)
		return rc;
	if (!buf || b.used >= len || b.used > INT32_MAX)
		return -ENOSPC;
	return (int)b.used;
}

/* ------------------------------------------------------------------------
 * Exported name (include/uswap/uswap.h)
 * ---------------------------------------------------------------------- */

/* Appends layers and options to a struct uswap_spec_info, the strings
 * into its pool. */
struct describer {
	struct uswap_spec_info *out;
	size_t used;   /* bytes of out->strings taken */
	bool overflow; /* the pool or a layer's option array ran out */
};

static const char *pool_add(struct describer *d, const char *text)
{
	size_t len = strlen(text) + 1;
	char *at = d->out->strings + d->used;

	if (d->used + len > sizeof(d->out->strings)) {
		d->overflow = true;
		return "";
	}
	memcpy(at, text, len);
	d->used += len;
	return at;
}

static void layer_begin(struct describer *d, const char *kind)
{
	struct uswap_spec_layer *l = &d->out->layers[d->out->nr_layers++];

	l->kind = kind; /* a string constant of dev_kind_name() */
	l->nr_options = 0;
}

static void __attribute__((format(printf, 3, 4)))
opt(struct describer *d, const char *key, const char *fmt, ...)
{
	struct uswap_spec_layer *l = &d->out->layers[d->out->nr_layers - 1];
	char value[USWAP_SPEC_MAX_LEN + 1];
	va_list ap;

	if (l->nr_options == USWAP_SPEC_MAX_OPTIONS) {
		d->overflow = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	l->options[l->nr_options].key = key;
	l->options[l->nr_options++].value = pool_add(d, value);
}

static const char *tf(bool v)
{
	return v ? "true" : "false";
}

/* A value written by one of the sb_ helpers (doubles, slot lists). */
static void opt_sb(struct describer *d, const char *key, double v,
		   const uint64_t *slots, size_t nr, bool is_double)
{
	char tmp[USWAP_SPEC_MAX_LEN + 1];
	struct sbuf b = { tmp, sizeof(tmp), 0 };

	tmp[0] = '\0';
	if (is_double)
		sb_double(&b, v);
	else
		sb_slots(&b, slots, nr);
	opt(d, key, "%s", tmp);
}

static void describe_faulty(struct describer *d, const struct faulty_opts *f)
{
	layer_begin(d, "faulty");
	opt_sb(d, "read", f->read_error_rate, NULL, 0, true);
	opt_sb(d, "write", f->write_error_rate, NULL, 0, true);
	opt_sb(d, "discard", f->discard_error_rate, NULL, 0, true);
	opt(d, "latency", "%u", f->latency_us);
	opt(d, "seed", "%" PRIu64, f->seed);
	opt_sb(d, "read_slots", 0, f->bad_read_slots, f->nr_bad_read, false);
	opt_sb(d, "write_slots", 0, f->bad_write_slots, f->nr_bad_write, false);
	opt_sb(d, "discard_slots", 0, f->bad_discard_slots, f->nr_bad_discard, false);
	opt(d, "fail_nth", "%" PRIu64, f->fail_nth);
	opt(d, "persistent", "%s", tf(f->fail_persistent));
}

static void describe_device(struct describer *d, const struct dev_spec *s)
{
	layer_begin(d, dev_kind_name(s->kind));
	switch (s->kind) {
	case DEV_KIND_ZRAM:
		opt(d, "algo", "%s", s->algo);
		if (s->zram_workers)
			opt(d, "workers", "%u", s->zram_workers);
		if (s->zram_mem_limit)
			opt(d, "mem_limit", "%" PRIu64, s->zram_mem_limit);
		/* fall through */
	case DEV_KIND_RAM:
		opt(d, "size", "%" PRIu64, s->size_bytes);
		d->out->size_bytes = s->size_bytes;
		d->out->nr_slots = s->size_bytes / USWAP_PAGE_SIZE;
		break;
	case DEV_KIND_FILE:
		opt(d, "path", "%s", s->path ? s->path : "");
		opt(d, "qd", "%u", s->file.queue_depth);
		opt(d, "discard", "%s", tf(s->file.discard));
		opt(d, "direct", "%s", tf(s->file.direct));
		opt(d, "sync", "%s", tf(s->file.no_uring));
		break;
	case DEV_KIND_NBD:
		opt(d, "uri", "%s", s->path ? s->path : "");
		if (s->nbd_conns)
			opt(d, "conns", "%u", s->nbd_conns);
		else
			opt(d, "conns", "auto");
		opt(d, "timeout", "%u", s->nbd_timeout_s ? s->nbd_timeout_s :
		    DEV_SPEC_NBD_TIMEOUT_S);
		break;
	default:
		break;
	}
}

/* A mirror layer names its second leg, a writeback layer its options and
 * lower device; the first leg, or the zram device, is described as the
 * layers that follow. */
static void describe_mirror(struct describer *d, const struct dev_spec *s)
{
	char leg[2 * USWAP_SPEC_MAX_LEN];

	layer_begin(d, dev_kind_name(s->kind));
	if (s->kind == DEV_KIND_WRITEBACK) {
		opt(d, "idle", "%u", s->wb.idle_s);
		opt(d, "huge", "%s", tf(s->wb.huge));
		opt(d, "budget", "%" PRIu64, s->wb.budget_bytes);
	}
	if (dev_spec_format(s->inner2, leg, sizeof(leg)) < 0)
		d->overflow = true;
	else
		opt(d, s->kind == DEV_KIND_WRITEBACK ? "lower" : "second", "%s", leg);
}

USWAP_API const char *uswap_spec_get(const struct uswap_spec_layer *layer, const char *key)
{
	for (unsigned int i = 0; layer && key && i < layer->nr_options; i++)
		if (!strcmp(layer->options[i].key, key))
			return layer->options[i].value;
	return NULL;
}

USWAP_API int uswap_spec_parse(const char *spec, struct uswap_spec_info *out,
			       char *err, size_t errlen)
{
	struct dev_spec ds;
	const struct dev_spec *d;
	int rc;

	if (!out) {
		if (err && errlen)
			snprintf(err, errlen, "no result buffer");
		return -EINVAL;
	}
	rc = dev_spec_parse(spec, &ds, err, errlen);
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	rc = dev_spec_format(&ds, out->canonical, sizeof(out->canonical));
	if (rc < 0) {
		dev_spec_free(&ds);
		if (err && errlen)
			snprintf(err, errlen, "device spec too long to print");
		return -EINVAL;
	}
	out->prio = ds.prio;
	struct describer desc = { .out = out };

	for (d = &ds; d->kind == DEV_KIND_FAULTY || d->kind == DEV_KIND_MIRROR ||
		      d->kind == DEV_KIND_WRITEBACK || d->kind == DEV_KIND_CRYPT; d = d->inner)
		if (d->kind == DEV_KIND_FAULTY)
			describe_faulty(&desc, &d->faulty);
		else if (d->kind == DEV_KIND_CRYPT)
			layer_begin(&desc, "crypt");
		else
			describe_mirror(&desc, d);
	describe_device(&desc, d);
	dev_spec_free(&ds);
	if (desc.overflow) {
		if (err && errlen)
			snprintf(err, errlen, "device spec too long to describe");
		return -EINVAL;
	}
	return 0;
}
