/* SPDX-License-Identifier: MIT */
/*
 * spec.c - parse and check device specs ("zram:1G:zstd",
 * "file:/var/swap:prio=5:discard", "faulty:read=0.01:ram:64M"); printing
 * them back is spec_format.c's job.
 *
 * A spec is split into ':'-separated fields, left to right: the kind, then
 * the size or path, then options. faulty is the one recursive kind: its
 * second field holds its own comma-separated options and the rest of the
 * string is the inner spec, parsed the same way. Every error says which
 * field is wrong and what was expected; nothing here opens a device. A
 * well-formed spec that names a device this libuswap was built without
 * (meson options nbd and crypt) is refused last, with -ENOTSUP and the
 * option that brings it (features.c).
 * The grammar and the limits are in spec.h.
 */
#include "dev/spec.h"
#include "dev/dev_internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIN_SIZE_BYTES ((uint64_t)USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS * USWAP_PAGE_SIZE)
#define MAX_SIZE_BYTES ((uint64_t)UINT32_MAX * USWAP_PAGE_SIZE)
#define FIELD_MAX      (DEV_SPEC_MAX_LEN + 1)

static const char *const kind_names[DEV_KIND_MAX] = {
	[DEV_KIND_RAM] = "ram",
	[DEV_KIND_ZRAM] = "zram",
	[DEV_KIND_FILE] = "file",
	[DEV_KIND_FAULTY] = "faulty",
	[DEV_KIND_NBD] = "nbd",
	[DEV_KIND_MIRROR] = "mirror",
	[DEV_KIND_WRITEBACK] = "writeback",
	[DEV_KIND_CRYPT] = "crypt",
};

/* What each kind takes after its size or path, for "unknown option". */
static const char *const kind_options[DEV_KIND_MAX] = {
	[DEV_KIND_RAM] = "prio=N",
	[DEV_KIND_ZRAM] = "lz4, zstd, algo=ALGO, prio=N or workers=N",
	[DEV_KIND_FILE] = "prio=N, discard, direct, qd=N or sync",
	[DEV_KIND_NBD] = "prio=N, conns=N or timeout=SECONDS",
};

const char *dev_kind_name(enum dev_kind kind)
{
	return (unsigned int)kind < DEV_KIND_MAX ? kind_names[kind] : "?";
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
	c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

locale_t dev_spec_c_locale(void)
{
	pthread_once(&c_locale_once, c_locale_init);
	return c_locale ? c_locale : LC_GLOBAL_LOCALE;
}

/* ------------------------------------------------------------------------
 * Fields and numbers
 * ---------------------------------------------------------------------- */

/*
 * next_field() - copy the field at *@pos into @field (FIELD_MAX bytes),
 * turning "\:" into ':' and "\\" into '\' (any other '\' stays), and move
 * *@pos past the ':' that ends it; *@pos becomes NULL after the last field.
 * Return: false when there was no field left (*@pos NULL).
 */
static bool next_field(const char **pos, char *field)
{
	const char *s = *pos;
	size_t n = 0;

	if (!s)
		return false;
	for (; *s && *s != ':'; s++) {
		if (*s == '\\' && (s[1] == ':' || s[1] == '\\'))
			s++;
		field[n++] = *s; /* n < FIELD_MAX: the spec is shorter */
	}
	field[n] = '\0';
	*pos = *s == ':' ? s + 1 : NULL;
	return true;
}

/* A decimal number made of digits only; -EINVAL if not, -ERANGE if it
 * does not fit. @end, if given, receives the first character after it. */
static int parse_digits(const char *s, uint64_t *out, const char **end)
{
	uint64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (end)
		*end = s;
	else if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Binary suffix shift: "", K, M, G, T, optionally followed by "iB" or
 * "B", any case; -1 if not a suffix. */
static int suffix_shift(const char *s)
{
	static const char units[] = "KMGT";
	const char *u;

	if (*s == '\0')
		return 0;
	u = strchr(units, toupper((unsigned char)*s));
	if (!u)
		return -1;
	s++;
	if (*s && strcasecmp(s, "b") && strcasecmp(s, "ib"))
		return -1;
	return 10 * (int)(u - units + 1);
}

static int parse_size(const char *kind, const char *s, uint64_t *bytes,
		      char *err, size_t errlen)
{
	const char *end = s;
	uint64_t v = 0;
	int shift, rc;

	if (*s == '\0')
		return backend_errf(err, errlen, -EINVAL, "%s needs a size, e.g. %s:512M",
			    kind, kind);
	rc = parse_digits(s, &v, &end);
	shift = rc == -EINVAL ? -1 : rc ? 0 : suffix_shift(end);
	if (shift < 0)
		return backend_errf(err, errlen, -EINVAL, "bad size '%s' (a whole number "
			    "of bytes with an optional K, M, G or T suffix, e.g. "
			    "512M)", s);
	if (rc || v > (MAX_SIZE_BYTES >> shift))
		return backend_errf(err, errlen, -EINVAL, "size %s is too large: at most "
			    "%" PRIu64 " slots of %u bytes (16T - 4K)", s,
			    (uint64_t)UINT32_MAX, USWAP_PAGE_SIZE);
	v <<= shift;
	if (v % USWAP_PAGE_SIZE)
		return backend_errf(err, errlen, -EINVAL, "size %s is not a multiple of "
			    "the %u-byte page", s, USWAP_PAGE_SIZE);
	if (v < MIN_SIZE_BYTES)
		return backend_errf(err, errlen, -EINVAL, "size %s is too small: at least "
			    "4M (%d clusters of %u slots of %u bytes)", s,
			    USWAP_MIN_CLUSTERS, USWAP_CLUSTER_SLOTS, USWAP_PAGE_SIZE);
	*bytes = v;
	return 0;
}

static int parse_prio(const char *s, int *prio, char *err, size_t errlen)
{
	bool neg = *s == '-';
	uint64_t v;
	int rc;

	rc = parse_digits(s + neg, &v, NULL);
	if (rc == -EINVAL)
		return backend_errf(err, errlen, -EINVAL, "bad prio '%s' (an integer "
			    "-1..%d)", s, USWAP_PRIO_MAX);
	if (rc || (neg && v != 1) || (!neg && v > USWAP_PRIO_MAX))
		return backend_errf(err, errlen, -EINVAL, "prio %s out of range -1..%d",
			    s, USWAP_PRIO_MAX);
	*prio = neg ? -1 : (int)v;
	return 0;
}

/* An unsigned option value in [min, max]; @what names it in messages. */
static int parse_uint_opt(const char *what, const char *s, uint64_t min,
			  uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	int rc = parse_digits(s, out, NULL);

	if (rc == -EINVAL)
		return backend_errf(err, errlen, -EINVAL, "bad %s '%s' (an integer %"
			    PRIu64 "..%" PRIu64 ")", what, s, min, max);
	if (rc || *out < min || *out > max)
		return backend_errf(err, errlen, -EINVAL, "%s %s out of range %" PRIu64
			    "..%" PRIu64, what, s, min, max);
	return 0;
}

static int parse_rate(const char *what, const char *s, double *rate,
		      char *err, size_t errlen)
{
	char *end;
	double v;

	/* strtod() also takes "nan", "inf", hex and leading blanks */
	if (!isdigit((unsigned char)*s) && *s != '.')
		return backend_errf(err, errlen, -EINVAL, "bad %s rate '%s' (a fraction "
			    "0..1, e.g. 0.01)", what, s);
	v = strtod_l(s, &end, dev_spec_c_locale());
	if (end == s || *end)
		return backend_errf(err, errlen, -EINVAL, "bad %s rate '%s' (a fraction "
			    "0..1, e.g. 0.01)", what, s);
	if (!(v >= 0.0 && v <= 1.0))
		return backend_errf(err, errlen, -EINVAL, "%s rate %s out of range 0..1",
			    what, s);
	*rate = v;
	return 0;
}

/* "A+B+C" into a new array of slots 1..UINT32_MAX. */
static int parse_slot_list(const char *what, const char *s, uint64_t **slots,
			   size_t *nr, char *err, size_t errlen)
{
	const char *list = s;
	size_t cap = 1;
	uint64_t *v;

	for (const char *c = s; *c; c++)
		cap += *c == '+';
	if (cap > DEV_SPEC_MAX_SLOT_LIST)
		return backend_errf(err, errlen, -EINVAL, "%s lists %zu slots, at most %d",
			    what, cap, DEV_SPEC_MAX_SLOT_LIST);
	v = calloc(cap, sizeof(*v));
	if (!v)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < cap; i++) {
		const char *end;

		if (parse_digits(s, &v[i], &end) || v[i] == 0 ||
		    v[i] > UINT32_MAX || (*end && *end != '+')) {
			free(v);
			return backend_errf(err, errlen, -EINVAL, "bad slot list %s='%s' "
				    "(slots 1..%" PRIu32 " joined by '+', e.g. 5+17)",
				    what, list, UINT32_MAX);
		}
		s = end + (*end == '+');
	}
	*slots = v;
	*nr = cap;
	return 0;
}

/* ------------------------------------------------------------------------
 * Options of ram, zram and file
 * ---------------------------------------------------------------------- */

/* Split "key=value"; *@value is NULL without '='. The field is edited. */
static char *split_option(char *field, char **value)
{
	char *eq = strchr(field, '=');

	*value = NULL;
	if (eq) {
		*eq = '\0';
		*value = eq + 1;
	}
	return field;
}

/* The options of ram, zram and file, each a bit to refuse it twice. */
enum {
	OPT_PRIO = 1 << 0,
	OPT_ALGO = 1 << 1,
	OPT_DISCARD = 1 << 2,
	OPT_DIRECT = 1 << 3,
	OPT_QD = 1 << 4,
	OPT_SYNC = 1 << 5,
	OPT_CONNS = 1 << 6,
	OPT_WORKERS = 1 << 7,
	OPT_TIMEOUT = 1 << 8,
	OPT_MEM_LIMIT = 1 << 9,
};

static const struct kind_option {
	unsigned int kinds;  /* bit per enum dev_kind */
	const char *key;
	bool has_value;
	unsigned int bit;
} kind_option_table[] = {
	{ 1u << DEV_KIND_RAM | 1u << DEV_KIND_ZRAM | 1u << DEV_KIND_FILE |
	  1u << DEV_KIND_NBD, "prio", true, OPT_PRIO },
	{ 1u << DEV_KIND_NBD, "conns", true, OPT_CONNS },
	{ 1u << DEV_KIND_NBD, "timeout", true, OPT_TIMEOUT },
	{ 1u << DEV_KIND_ZRAM, "algo", true, OPT_ALGO },
	{ 1u << DEV_KIND_ZRAM, "lz4", false, OPT_ALGO },
	{ 1u << DEV_KIND_ZRAM, "zstd", false, OPT_ALGO },
	{ 1u << DEV_KIND_ZRAM, "workers", true, OPT_WORKERS },
	{ 1u << DEV_KIND_ZRAM, "mem_limit", true, OPT_MEM_LIMIT },
	{ 1u << DEV_KIND_FILE, "qd", true, OPT_QD },
	{ 1u << DEV_KIND_FILE, "discard", false, OPT_DISCARD },
	{ 1u << DEV_KIND_FILE, "direct", false, OPT_DIRECT },
	{ 1u << DEV_KIND_FILE, "sync", false, OPT_SYNC },
};

static const struct kind_option *find_kind_option(enum dev_kind kind, const char *key)
{
	for (size_t i = 0; i < sizeof(kind_option_table) / sizeof(kind_option_table[0]); i++)
		if ((kind_option_table[i].kinds & (1u << kind)) &&
		    !strcmp(kind_option_table[i].key, key))
			return &kind_option_table[i];
	return NULL;
}

static int apply_kind_option(struct dev_spec *spec, const struct kind_option *o,
			     const char *value, char *err, size_t errlen)
{
	uint64_t qd;

	switch (o->bit) {
	case OPT_PRIO:
		return parse_prio(value, &spec->prio, err, errlen);
	case OPT_ALGO:
		value = value ? value : o->key;
		if (strcmp(value, "lz4") && strcmp(value, "zstd"))
			return backend_errf(err, errlen, -EINVAL, "unknown compression "
				    "algorithm '%s' (lz4 or zstd)", value);
		snprintf(spec->algo, sizeof(spec->algo), "%s", value);
		return 0;
	case OPT_QD:
		if (parse_uint_opt("qd", value, 1, DEV_SPEC_MAX_QD, &qd, err, errlen))
			return -EINVAL;
		spec->file.queue_depth = (unsigned int)qd;
		return 0;
	case OPT_DISCARD:
		spec->file.discard = true;
		return 0;
	case OPT_DIRECT:
		spec->file.direct = true;
		return 0;
	case OPT_WORKERS:
		if (parse_uint_opt("workers", value, 0, ZRAM_MAX_WORKERS, &qd, err, errlen))
			return -EINVAL;
		spec->zram_workers = (unsigned int)qd;
		return 0;
	case OPT_MEM_LIMIT:
		return parse_size("mem_limit", value ? value : "", &spec->zram_mem_limit, err,
				  errlen);
	case OPT_CONNS:
		if (parse_uint_opt("conns", value, 1, DEV_SPEC_MAX_CONNS, &qd, err, errlen))
			return -EINVAL;
		spec->nbd_conns = (unsigned int)qd;
		return 0;
	case OPT_TIMEOUT: /* seconds; 0: the default */
		if (parse_uint_opt("timeout", value, 0, DEV_SPEC_NBD_MAX_TIMEOUT_S, &qd,
				   err, errlen))
			return -EINVAL;
		spec->nbd_timeout_s = (unsigned int)qd;
		return 0;
	default: /* OPT_SYNC */
		spec->file.no_uring = true;
		return 0;
	}
}

/* The fields after the size or path: each an option, at most once. */
static int parse_options(const char **pos, struct dev_spec *spec, char *field,
			 char *err, size_t errlen)
{
	const char *kind = kind_names[spec->kind];
	unsigned int seen = 0;

	while (next_field(pos, field)) {
		char *value, *key = split_option(field, &value);
		const struct kind_option *o = find_kind_option(spec->kind, key);
		int rc;

		if (*key == '\0')
			return backend_errf(err, errlen, -EINVAL, "empty option in %s spec "
				    "(a stray ':'?)", kind);
		if (!o)
			return backend_errf(err, errlen, -EINVAL, "unknown option%s '%s' "
				    "for %s (expected %s)",
				    spec->kind == DEV_KIND_ZRAM && !value ?
				    " or compression algorithm" : "", key, kind,
				    kind_options[spec->kind]);
		if (o->has_value && !value)
			return backend_errf(err, errlen, -EINVAL, "option '%s' of %s needs "
				    "a value (%s=...)", key, kind, key);
		if (!o->has_value && value)
			return backend_errf(err, errlen, -EINVAL, "option '%s' of %s takes "
				    "no value", key, kind);
		if (seen & o->bit)
			return backend_errf(err, errlen, -EINVAL, "option '%s' given twice "
				    "in %s spec", o->bit == OPT_ALGO ? "algo" : key,
				    kind);
		seen |= o->bit;
		rc = apply_kind_option(spec, o, value, err, errlen);
		if (rc)
			return rc;
	}
	spec->prio_set = seen & OPT_PRIO;
	return 0;
}

static int parse_memory(const char **pos, struct dev_spec *spec, char *field,
			char *err, size_t errlen)
{
	const char *kind = kind_names[spec->kind];
	int rc;

	if (!next_field(pos, field))
		field[0] = '\0';
	rc = parse_size(kind, field, &spec->size_bytes, err, errlen);
	if (rc)
		return rc;
	if (spec->kind == DEV_KIND_ZRAM)
		snprintf(spec->algo, sizeof(spec->algo), "lz4");
	return parse_options(pos, spec, field, err, errlen);
}

static int parse_file(const char **pos, struct dev_spec *spec, char *field,
		      char *err, size_t errlen)
{
	if (!next_field(pos, field) || field[0] == '\0')
		return backend_errf(err, errlen, -EINVAL, "file needs a path, e.g. "
			    "file:/var/swap.img");
	spec->path = strdup(field);
	if (!spec->path)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	spec->file.queue_depth = DEV_SPEC_DEFAULT_QD;
	return parse_options(pos, spec, field, err, errlen);
}

/* The URI of an nbd spec: the rest of the spec up to the first ":prio=",
 * ":conns=" or ":timeout=", colons and all (spec.h). Leaves *@pos at that
 * ':'. */
static int parse_nbd(const char **pos, struct dev_spec *spec, char *field,
		     char *err, size_t errlen)
{
	const char *s = *pos ? *pos : "", *end = s + strlen(s);
	static const char *const marks[] = { ":prio=", ":conns=", ":timeout=" };

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		const char *m = strstr(s, marks[i]);

		if (m && m < end)
			end = m;
	}
	if (end == s)
		return backend_errf(err, errlen, -EINVAL, "nbd needs a URI, e.g. "
			    "nbd:nbd+unix:///?socket=/run/nbd.sock or nbd:nbd://host/");
	if (strncmp(s, "nbd://", 6) && strncmp(s, "nbd+unix://", 11) &&
	    strncmp(s, "nbds://", 7) && strncmp(s, "nbds+unix://", 12))
		return backend_errf(err, errlen, -EINVAL, "nbd URI '%.*s' must start with "
			    "nbd:// or nbd+unix://", (int)(end - s), s);
	spec->path = strndup(s, (size_t)(end - s));
	if (!spec->path)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	spec->nbd_conns = 0; /* auto: the backend decides (multi-conn) */
	spec->nbd_timeout_s = 0; /* DEV_SPEC_NBD_TIMEOUT_S */
	*pos = *end ? end + 1 : NULL;
	return parse_options(pos, spec, field, err, errlen);
}

/* ------------------------------------------------------------------------
 * faulty
 * ---------------------------------------------------------------------- */

/* Keys of faulty options (bit = 1 << key, to refuse one given twice). */
enum faulty_key {
	FK_READ, FK_WRITE, FK_DISCARD, FK_LATENCY, FK_SEED, FK_READ_SLOTS,
	FK_WRITE_SLOTS, FK_DISCARD_SLOTS, FK_FAIL_NTH, FK_PERSISTENT, FK_PRIO,
	FK_MAX
};

static const char *const faulty_key_names[FK_MAX] = {
	"read", "write", "discard", "latency", "seed", "read_slots",
	"write_slots", "discard_slots", "fail_nth", "persistent", "prio",
};

static const char faulty_keys_hint[] =
	"read=, write=, discard=, latency=, seed=, read_slots=, write_slots=, "
	"discard_slots=, fail_nth=, persistent or prio=";

static int faulty_key(const char *key)
{
	for (int k = 0; k < FK_MAX; k++)
		if (!strcmp(key, faulty_key_names[k]))
			return k;
	return -1;
}

static int apply_faulty_option(struct dev_spec *spec, enum faulty_key key,
			       const char *value, int *prio, char *err, size_t errlen)
{
	struct faulty_opts *f = &spec->faulty;
	uint64_t v;

	switch (key) {
	case FK_READ:
		return parse_rate("read", value, &f->read_error_rate, err, errlen);
	case FK_WRITE:
		return parse_rate("write", value, &f->write_error_rate, err, errlen);
	case FK_DISCARD:
		return parse_rate("discard", value, &f->discard_error_rate, err, errlen);
	case FK_LATENCY:
		if (parse_uint_opt("latency", value, 0, DEV_SPEC_MAX_LATENCY_US,
				   &v, err, errlen))
			return -EINVAL;
		f->latency_us = (unsigned int)v;
		return 0;
	case FK_SEED:
		return parse_uint_opt("seed", value, 0, UINT64_MAX, &f->seed, err, errlen);
	case FK_READ_SLOTS:
		return parse_slot_list("read_slots", value, &spec->read_slots,
				       &f->nr_bad_read, err, errlen);
	case FK_WRITE_SLOTS:
		return parse_slot_list("write_slots", value, &spec->write_slots,
				       &f->nr_bad_write, err, errlen);
	case FK_DISCARD_SLOTS:
		return parse_slot_list("discard_slots", value, &spec->discard_slots,
				       &f->nr_bad_discard, err, errlen);
	case FK_FAIL_NTH:
		return parse_uint_opt("fail_nth", value, 1, UINT64_MAX, &f->fail_nth,
				      err, errlen);
	case FK_PERSISTENT:
		f->fail_persistent = true;
		return 0;
	default:
		return parse_prio(value, prio, err, errlen);
	}
}

/* One "key=value" (or "persistent") item of a faulty OPTS field. */
static int parse_faulty_item(char *item, struct dev_spec *spec, unsigned int *seen,
			     int *prio, char *err, size_t errlen)
{
	char *value, *name = split_option(item, &value);
	int key = faulty_key(name);

	if (*name == '\0')
		return backend_errf(err, errlen, -EINVAL, "empty faulty option (a stray "
			    "','?)");
	if (key < 0)
		return backend_errf(err, errlen, -EINVAL, "unknown faulty option '%s' "
			    "(expected %s)", name, faulty_keys_hint);
	if (key != FK_PERSISTENT && !value)
		return backend_errf(err, errlen, -EINVAL, "faulty option '%s' needs a "
			    "value (%s=...)", name, name);
	if (key == FK_PERSISTENT && value)
		return backend_errf(err, errlen, -EINVAL, "faulty option 'persistent' "
			    "takes no value");
	if (*seen & (1u << key))
		return backend_errf(err, errlen, -EINVAL, "faulty option '%s' given twice",
			    name);
	*seen |= 1u << key;
	return apply_faulty_option(spec, (enum faulty_key)key, value, prio, err, errlen);
}

/* The comma-separated OPTS field of a faulty spec (edited in place).
 * *@prio receives prio= if given, else stays as it was. */
static int parse_faulty_opts(char *opts, struct dev_spec *spec, int *prio,
			     char *err, size_t errlen)
{
	struct faulty_opts *f = &spec->faulty;
	unsigned int seen = 0;
	char *item, *next;

	f->seed = DEV_SPEC_DEFAULT_SEED;
	for (item = opts; *opts && item; item = next) {
		int rc;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		rc = parse_faulty_item(item, spec, &seen, prio, err, errlen);
		if (rc)
			return rc;
	}
	if (f->fail_persistent && !f->fail_nth)
		return backend_errf(err, errlen, -EINVAL, "faulty option 'persistent' "
			    "needs fail_nth=N (the first request to fail)");
	f->bad_read_slots = spec->read_slots;
	f->bad_write_slots = spec->write_slots;
	f->bad_discard_slots = spec->discard_slots;
	return 0;
}

static void set_prio_down(struct dev_spec *spec, int prio)
{
	for (; spec; spec = spec->inner) {
		spec->prio = prio;
		spec->prio_set = true;
	}
}

static int parse_level(const char *s, struct dev_spec *out, int depth,
		       char *err, size_t errlen);

static int parse_faulty(const char **pos, struct dev_spec *spec, char *field,
			int depth, char *err, size_t errlen)
{
	int prio = -2; /* not given */
	int rc;

	if (!next_field(pos, field) || !*pos)
		return backend_errf(err, errlen, -EINVAL, "faulty needs options and an "
			    "inner spec, e.g. faulty:read=0.01:ram:64M");
	if (depth >= DEV_SPEC_MAX_FAULTY)
		return backend_errf(err, errlen, -EINVAL, "faulty wrappers nested more "
			    "than %d deep", DEV_SPEC_MAX_FAULTY);
	rc = parse_faulty_opts(field, spec, &prio, err, errlen);
	if (rc)
		return rc;
	spec->inner = calloc(1, sizeof(*spec->inner));
	if (!spec->inner)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	rc = parse_level(*pos, spec->inner, depth + 1, err, errlen);
	if (rc)
		return rc;
	if (prio != -2 && spec->inner->prio_set)
		return backend_errf(err, errlen, -EINVAL, "prio given twice: in the "
			    "faulty options and in the inner spec");
	if (prio != -2)
		set_prio_down(spec->inner, prio);
	spec->prio = spec->inner->prio;
	spec->prio_set = spec->inner->prio_set;
	return 0;
}

/* ------------------------------------------------------------------------
 * mirror
 * ---------------------------------------------------------------------- */

static int parse_mirror_leg(const char *s, size_t len, struct dev_spec **leg, int depth,
			    char *err, size_t errlen)
{
	char *text = strndup(s, len);
	int rc;

	*leg = calloc(1, sizeof(**leg));
	if (!text || !*leg) {
		free(text);
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	}
	rc = parse_level(text, *leg, depth + 1, err, errlen);
	free(text);
	if (!rc && (*leg)->prio_set)
		rc = backend_errf(err, errlen, -EINVAL, "a mirror leg takes no prio= "
				  "(give it once: mirror:prio=N:A|B)");
	return rc;
}

/* One writeback option (idle=S, huge, budget=SIZE, prio=N). */
static int parse_wb_item(char *item, struct dev_spec *spec, unsigned int *seen,
			 char *err, size_t errlen)
{
	static const char *const keys[] = { "idle", "huge", "budget", "prio" };
	char *value, *key = split_option(item, &value);
	uint64_t v;
	unsigned int k;

	for (k = 0; k < 4 && strcmp(key, keys[k]); k++)
		;
	if (k == 4)
		return backend_errf(err, errlen, -EINVAL, "unknown writeback option '%s' "
			    "(expected idle=SECONDS, huge, budget=SIZE or prio=N)", key);
	if (*seen & (1u << k))
		return backend_errf(err, errlen, -EINVAL, "writeback option '%s' given "
			    "twice", key);
	*seen |= 1u << k;
	if ((k == 1) != !value)
		return backend_errf(err, errlen, -EINVAL, k == 1 ? "writeback option "
			    "'huge' takes no value" : "writeback option '%s' needs a value",
			    key);
	switch (k) {
	case 0:
		if (parse_uint_opt("idle", value, 1, 86400 * 365, &v, err, errlen))
			return -EINVAL;
		spec->wb.idle_s = (uint32_t)v;
		return 0;
	case 1:
		spec->wb.huge = true;
		return 0;
	case 2:
		return parse_size("writeback budget", value, &spec->wb.budget_bytes, err,
				  errlen);
	default:
		spec->prio_set = true;
		return parse_prio(value, &spec->prio, err, errlen);
	}
}

/* "writeback:" OPTS ":" ZRAM "|" LOWER */
static int parse_writeback(const char **pos, struct dev_spec *spec, char *field,
			   int depth, char *err, size_t errlen)
{
	unsigned int seen = 0;
	const char *bar;
	int rc;

	if (!next_field(pos, field) || !*pos || !(bar = strchr(*pos, '|')))
		return backend_errf(err, errlen, -EINVAL, "writeback needs options, a zram "
			    "spec and a lower spec, e.g. writeback:idle=60:zram:1G|file:/swap");
	if (depth >= DEV_SPEC_MAX_FAULTY)
		return backend_errf(err, errlen, -EINVAL, "wrappers nested more than %d "
			    "deep", DEV_SPEC_MAX_FAULTY);
	for (char *item = field, *next; *field && item; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		rc = parse_wb_item(item, spec, &seen, err, errlen);
		if (rc)
			return rc;
	}
	if (!(seen & 7))
		return backend_errf(err, errlen, -EINVAL, "writeback needs a reason: "
			    "idle=SECONDS, huge or budget=SIZE");
	rc = parse_mirror_leg(*pos, (size_t)(bar - *pos), &spec->inner, depth, err, errlen);
	if (!rc && spec->inner->kind != DEV_KIND_ZRAM)
		rc = backend_errf(err, errlen, -EINVAL, "writeback moves pages down from "
			    "a zram device: '%.*s' is not one", (int)(bar - *pos), *pos);
	if (!rc)
		rc = parse_mirror_leg(bar + 1, strlen(bar + 1), &spec->inner2, depth, err,
				      errlen);
	return rc;
}

/* Does @s encrypt everything it stores (a crypt layer at any depth of
 * its wrapper chain; a mirror only if both legs do)? */
static bool encrypted(const struct dev_spec *s)
{
	for (; s; s = s->inner) {
		if (s->kind == DEV_KIND_CRYPT)
			return true;
		if (s->kind == DEV_KIND_MIRROR)
			return encrypted(s->inner) && encrypted(s->inner2);
		if (s->kind == DEV_KIND_WRITEBACK)
			return false; /* zram in memory, the lower device below */
	}
	return false;
}

/* "crypt:" SPEC: the rest is the inner spec, whose prio is the device's. */
static int parse_crypt(const char **pos, struct dev_spec *spec, int depth, char *err,
		       size_t errlen)
{
	int rc;

	if (!*pos || !**pos)
		return backend_errf(err, errlen, -EINVAL, "crypt needs a spec to encrypt, "
			    "e.g. crypt:file:/var/swap.img");
	if (depth >= DEV_SPEC_MAX_FAULTY)
		return backend_errf(err, errlen, -EINVAL, "wrappers nested more than %d "
			    "deep", DEV_SPEC_MAX_FAULTY);
	spec->inner = calloc(1, sizeof(*spec->inner));
	if (!spec->inner)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	rc = parse_level(*pos, spec->inner, depth + 1, err, errlen);
	if (!rc && encrypted(spec->inner))
		rc = backend_errf(err, errlen, -EINVAL, "crypt over a spec that is "
			    "encrypted already: every page would be encrypted twice");
	if (!rc) {
		spec->prio = spec->inner->prio;
		spec->prio_set = spec->inner->prio_set;
	}
	return rc;
}

/* "mirror:" ["prio=" N] ":" A "|" B */
static int parse_mirror(const char **pos, struct dev_spec *spec, char *field,
			int depth, char *err, size_t errlen)
{
	const char *bar;
	int rc;

	if (!next_field(pos, field) || !*pos || !(bar = strchr(*pos, '|')))
		return backend_errf(err, errlen, -EINVAL, "mirror needs two specs, e.g. "
			    "mirror::nbd:nbd://a/|nbd:nbd://b/");
	if (depth >= DEV_SPEC_MAX_FAULTY)
		return backend_errf(err, errlen, -EINVAL, "wrappers nested more than %d "
			    "deep", DEV_SPEC_MAX_FAULTY);
	if (*field) {
		if (strncmp(field, "prio=", 5))
			return backend_errf(err, errlen, -EINVAL, "unknown mirror option "
				    "'%s' (expected prio=N or nothing)", field);
		rc = parse_prio(field + 5, &spec->prio, err, errlen);
		if (rc)
			return rc;
		spec->prio_set = true;
	}
	rc = parse_mirror_leg(*pos, (size_t)(bar - *pos), &spec->inner, depth, err, errlen);
	if (!rc)
		rc = parse_mirror_leg(bar + 1, strlen(bar + 1), &spec->inner2, depth, err,
				      errlen);
	/* Every write goes to both legs: one leg in the clear would hold
	 * what the other encrypts. */
	if (!rc && encrypted(spec->inner) != encrypted(spec->inner2))
		rc = backend_errf(err, errlen, -EINVAL, "only one mirror leg is encrypted: "
			    "the other would hold the same pages in the clear; encrypt "
			    "both legs, or the mirror (crypt:mirror::A|B)");
	return rc;
}

/* ------------------------------------------------------------------------
 * Whole specs
 * ---------------------------------------------------------------------- */

static int parse_kind(const char *field, enum dev_kind *kind, char *err, size_t errlen)
{
	for (int k = 0; k < DEV_KIND_MAX; k++) {
		if (!strcmp(field, kind_names[k])) {
			*kind = (enum dev_kind)k;
			return 0;
		}
	}
	if (*field == '\0')
		return backend_errf(err, errlen, -EINVAL, "empty device spec (expected "
			    "ram:SIZE, zram:SIZE, file:PATH, nbd:URI, faulty:OPTS:SPEC, "
			    "mirror::SPEC|SPEC, writeback:OPTS:ZRAM|SPEC or crypt:SPEC)");
	return backend_errf(err, errlen, -EINVAL, "unknown device kind '%s' (expected "
		    "ram, zram, file, nbd, faulty, mirror, writeback or crypt)", field);
}

/* One level of a spec into @out (zeroed); recursion only through faulty,
 * at most DEV_SPEC_MAX_FAULTY deep. */
static int parse_level(const char *s, struct dev_spec *out, int depth,
		       char *err, size_t errlen)
{
	const char *pos = s;
	char *field;
	int rc;

	field = malloc(FIELD_MAX);
	if (!field)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	out->prio = USWAP_PRIO_DEFAULT;
	next_field(&pos, field);
	rc = parse_kind(field, &out->kind, err, errlen);
	if (!rc && out->kind == DEV_KIND_FILE)
		rc = parse_file(&pos, out, field, err, errlen);
	else if (!rc && out->kind == DEV_KIND_NBD)
		rc = parse_nbd(&pos, out, field, err, errlen);
	else if (!rc && out->kind == DEV_KIND_MIRROR)
		rc = parse_mirror(&pos, out, field, depth, err, errlen);
	else if (!rc && out->kind == DEV_KIND_WRITEBACK)
		rc = parse_writeback(&pos, out, field, depth, err, errlen);
	else if (!rc && out->kind == DEV_KIND_CRYPT)
		rc = parse_crypt(&pos, out, depth, err, errlen);
	else if (!rc && out->kind == DEV_KIND_FAULTY)
		rc = parse_faulty(&pos, out, field, depth, err, errlen);
	else if (!rc)
		rc = parse_memory(&pos, out, field, err, errlen);
	free(field);
	return rc;
}

/* The first device of @s, outermost first, that this build left out
 * (features.c): checked once the whole spec is known to be well formed,
 * so the grammar and its messages are the same in every build. */
static int refuse_unbuilt(const struct dev_spec *s, char *err, size_t errlen)
{
	int rc;

	if (!s)
		return 0;
	rc = dev_kind_refuse(s->kind, err, errlen);
	if (!rc)
		rc = refuse_unbuilt(s->inner, err, errlen);
	if (!rc)
		rc = refuse_unbuilt(s->inner2, err, errlen);
	return rc;
}

int dev_spec_parse(const char *s, struct dev_spec *out, char *err, size_t errlen)
{
	int rc;

	if (!out)
		return backend_errf(err, errlen, -EINVAL, "no result buffer");
	memset(out, 0, sizeof(*out));
	if (!s)
		return backend_errf(err, errlen, -EINVAL, "no device spec");
	if (strnlen(s, DEV_SPEC_MAX_LEN + 1) > DEV_SPEC_MAX_LEN)
		return backend_errf(err, errlen, -EINVAL, "device spec longer than %d "
			    "bytes", DEV_SPEC_MAX_LEN);
	rc = parse_level(s, out, 0, err, errlen);
	if (!rc)
		rc = refuse_unbuilt(out, err, errlen);
	if (rc)
		dev_spec_free(out);
	return rc;
}

void dev_spec_free(struct dev_spec *spec)
{
	if (!spec)
		return;
	if (spec->inner) {
		dev_spec_free(spec->inner);
		free(spec->inner);
	}
	if (spec->inner2) {
		dev_spec_free(spec->inner2);
		free(spec->inner2);
	}
	free(spec->path);
	free(spec->read_slots);
	free(spec->write_slots);
	free(spec->discard_slots);
	memset(spec, 0, sizeof(*spec));
}
