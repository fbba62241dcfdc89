// SPDX-License-Identifier: MIT
/*
 * open.c - from a device spec to an open backend (uswap_backend_open()).
 * A file must carry a valid mkswap header: its size and bad pages come
 * from there, as swapon(2) takes them from read_swap_header(). Swapping
 * the backend on is the swap layer's (uswap_swapon_spec(), swap/swapon.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev/dev_internal.h"
#include "dev/spec.h"
#include "dev/header.h"

static int open_spec(const struct dev_spec *s, struct backend **out, char *err,
		     size_t errlen);

/* Read the header, then open the file for I/O and give it the header's
 * geometry: slots past last_page are not part of the area. */
static int open_file(const struct dev_spec *s, struct backend **out, char *err,
		     size_t errlen)
{
	struct uswap_header_info *info = malloc(sizeof(*info));
	char warn[512] = "";
	uint64_t *bad = NULL;
	int rc;

	if (!info)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	rc = swap_header_read_file(s->path, info, err, errlen, warn, sizeof(warn));
	if (rc)
		goto out;
	for (char *line = warn, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
		nl = strchr(line, '\n');
		fprintf(stderr, "uswap: warning: %s: %.*s\n", s->path,
			(int)(nl ? nl - line : (long)strlen(line)), line);
	}
	if (info->nr_badpages) {
		bad = malloc(info->nr_badpages * sizeof(*bad));
		if (!bad) {
			rc = backend_errf(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		memcpy(bad, info->badpages, info->nr_badpages * sizeof(*bad));
	}
	rc = backend_file_open(s->path, &s->file, out, err, errlen);
	if (rc) {
		free(bad);
		goto out;
	}
	if ((*out)->nr_slots > info->nr_slots)
		(*out)->nr_slots = info->nr_slots;
	(*out)->bad_slots = bad; /* freed by backend_release() */
	(*out)->nr_bad = info->nr_badpages;
out:
	free(info);
	return rc;
}

static int open_faulty(const struct dev_spec *s, struct backend **out, char *err,
		       size_t errlen)
{
	struct backend *inner;
	int rc = open_spec(s->inner, &inner, err, errlen);

	if (rc)
		return rc;
	rc = backend_faulty_open(inner, &s->faulty, out, err, errlen);
	if (rc)
		inner->ops->close(inner);
	return rc;
}

static int open_crypt(const struct dev_spec *s, struct backend **out, char *err,
		      size_t errlen)
{
	struct backend *inner;
	int rc = open_spec(s->inner, &inner, err, errlen);

	if (!rc && (rc = backend_crypt_open(inner, out, err, errlen)))
		inner->ops->close(inner);
	return rc;
}

/* Both inner specs of a mirror or writeback spec, or neither. */
static int open_pair(const struct dev_spec *s, struct backend **a, struct backend **b,
		     char *err, size_t errlen)
{
	int rc = open_spec(s->inner, a, err, errlen);

	if (rc)
		return rc;
	rc = open_spec(s->inner2, b, err, errlen);
	if (rc)
		(*a)->ops->close(*a);
	return rc;
}

static int open_mirror(const struct dev_spec *s, struct backend **out, char *err,
		       size_t errlen)
{
	struct backend *a, *b;
	int rc = open_pair(s, &a, &b, err, errlen);

	if (!rc && (rc = backend_mirror_open(a, b, out, err, errlen))) {
		a->ops->close(a);
		b->ops->close(b);
	}
	return rc;
}

/* A zram device and its compression workers. */
static int open_zram(const struct dev_spec *s, struct backend **out, char *err,
		     size_t errlen)
{
	int rc = backend_zram_open(s->size_bytes, s->algo, out, err, errlen);

	if (!rc)
		zram_set_mem_limit(*out, s->zram_mem_limit);
	if (!rc && (rc = zram_workers_start(*out, s->zram_workers, err, errlen)))
		(*out)->ops->close(*out);
	return rc;
}

/* The zram device, then its lower device handed to it. */
static int open_writeback(const struct dev_spec *s, struct backend **out, char *err,
			  size_t errlen)
{
	struct backend *z, *lower;
	int rc = open_pair(s, &z, &lower, err, errlen);

	if (!rc && (rc = zram_writeback_start(z, lower, &s->wb, err, errlen))) {
		lower->ops->close(lower);
		z->ops->close(z);
	}
	if (!rc)
		*out = z;
	return rc;
}

static int open_spec(const struct dev_spec *s, struct backend **out, char *err,
		     size_t errlen)
{
	switch (s->kind) {
	case DEV_KIND_RAM:
		return backend_ram_open(s->size_bytes, out, err, errlen);
	case DEV_KIND_ZRAM:
		return open_zram(s, out, err, errlen);
	case DEV_KIND_FILE:
		return open_file(s, out, err, errlen);
	case DEV_KIND_FAULTY:
		return open_faulty(s, out, err, errlen);
	case DEV_KIND_CRYPT:
		return open_crypt(s, out, err, errlen);
	case DEV_KIND_MIRROR:
		return open_mirror(s, out, err, errlen);
	case DEV_KIND_WRITEBACK:
		return open_writeback(s, out, err, errlen);
	case DEV_KIND_NBD:
		return backend_nbd_open(s->path, s->nbd_conns, s->nbd_timeout_s, out,
					err, errlen);
	default:
		return backend_errf(err, errlen, -EINVAL, "unknown device kind");
	}
}

USWAP_API int uswap_backend_open(const char *spec, struct uswap_backend **out,
				 int *prio, char *err, size_t errlen)
{
	struct dev_spec s;
	struct backend *b;
	int rc;

	if (!spec || !out)
		return backend_errf(err, errlen, -EINVAL, "no spec");
	rc = dev_spec_parse(spec, &s, err, errlen);
	if (rc)
		return rc;
	rc = open_spec(&s, &b, err, errlen);
	if (!rc) {
		*out = (struct uswap_backend *)b;
		if (prio)
			*prio = s.prio;
	}
	dev_spec_free(&s);
	return rc;
}

/* Does @s keep its data outside the process (a file, a block device, an
 * NBD export) at any depth: under wrappers, a mirror leg, a writeback's
 * lower device? */
static bool stores_outside(const struct dev_spec *s)
{
	if (!s)
		return false;
	if (s->kind == DEV_KIND_FILE || s->kind == DEV_KIND_NBD)
		return true;
	return stores_outside(s->inner) || stores_outside(s->inner2);
}

USWAP_API int uswap_spec_external(const char *spec)
{
	struct dev_spec s;
	int rc;

	if (!spec)
		return -EINVAL;
	rc = dev_spec_parse(spec, &s, NULL, 0);
	if (rc)
		return rc;
	rc = stores_outside(&s);
	dev_spec_free(&s);
	return rc;
}
