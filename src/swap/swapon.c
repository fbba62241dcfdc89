// SPDX-License-Identifier: MIT
/*
 * swapon.c - uswap_swapon(): a device with or without a backend holding
 * its data, and uswap_swapon_spec(): a backend opened from a spec by the
 * dev layer, then swapped on. The allocator (alloc/device.c) keeps the backend as an opaque
 * pointer; here its size and the bad slots of its swap header are folded
 * into the swapon arguments.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "dev/dev_internal.h"
#include "dev/zram.h"
#include "swap/swap_internal.h"

static void hook_close(void *b)
{
	struct backend *be = b;

	be->ops->close(be);
}

/* Only a backend that asked for page discard (file:...:discard) is told;
 * zram hears of each freed slot from the swap path instead. */
static int hook_discard(void *b, uint64_t first, uint64_t nr)
{
	struct backend *be = b;

	return be->discard_clusters ? be->ops->discard(be, first, nr) : 0;
}

static void hook_reap(void *b)
{
	struct backend *be = b;

	be->ops->reap(be, 0);
}

/* What the allocator needs done for a device, done here (alloc/ knows
 * neither backends nor the swap cache). */
static const struct device_hooks swap_device_hooks = {
	.close = hook_close,
	.discard = hook_discard,
	.reap = hook_reap,
	.release_cluster = scache_release_cluster,
};

USWAP_API void uswap_backend_close(struct uswap_backend *b)
{
	if (b)
		hook_close(b);
}

/* The caller's bad slots plus the backend's (from its swap header), in one
 * array the caller frees. Return: 0 or -ENOMEM. */
static int merge_bad_slots(const struct uswap_swapon_args *a, const struct backend *b,
			   uint64_t **out, size_t *nr)
{
	*nr = a->nr_bad + b->nr_bad;
	*out = NULL;
	if (!*nr)
		return 0;
	*out = malloc(*nr * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	if (a->nr_bad)
		memcpy(*out, a->bad_slots, a->nr_bad * sizeof(**out));
	if (b->nr_bad)
		memcpy(*out + a->nr_bad, b->bad_slots, b->nr_bad * sizeof(**out));
	return 0;
}

USWAP_API int uswap_swapon(struct uswap *u, const struct uswap_swapon_args *args)
{
	struct uswap_swapon_args a;
	struct backend *b;
	uint64_t *bad;
	int err;

	if (!args)
		return -EINVAL;
	if (!args->backend)
		return device_swapon(u, args, NULL, &swap_device_hooks, 0);
	b = (struct backend *)args->backend;
	a = *args;
	if (!a.nr_slots)
		a.nr_slots = b->nr_slots;
	if (a.nr_slots > b->nr_slots)
		return -EINVAL; /* more slots than the backend can hold */
	if (!a.name)
		a.name = b->name;
	err = merge_bad_slots(args, b, &bad, &a.nr_bad);
	if (err)
		return err;
	a.bad_slots = bad;
	err = device_swapon(u, &a, b, &swap_device_hooks,
			    (b->is_file ? DEV_FLAG_FILE : 0) |
			    (b->discard_clusters ? DEV_FLAG_PAGE_DISCARD : 0));
	free(bad);
	return err;
}

USWAP_API int uswap_swapon_spec(struct uswap *u, const char *spec, char *err,
				size_t errlen)
{
	struct uswap_swapon_args a = { 0 };
	struct uswap_backend *b;
	int type, rc = uswap_backend_open(spec, &b, &a.prio, err, errlen);

	if (rc)
		return rc;
	a.backend = b;
	type = uswap_swapon(u, &a);
	if (type < 0) {
		uswap_backend_close(b);
		return backend_errf(err, errlen, type, "swapon failed: %s",
				    type == -EMFILE ? "all 32 device types in use"
				    : type == -EINVAL ? "device too small (needs two clusters, 4 MiB)"
				    : "see errno");
	}
	return type;
}

/* Run @fn on device @type's backend (NULL for a device without one) with
 * the global lock held, which keeps the device and its backend from going.
 * Return: @fn's; -ENOENT (no device @type). */
static int with_backend(struct uswap *u, int type, int (*fn)(struct backend *b, void *ctx),
			void *ctx)
{
	int rc = -ENOENT;

	if (!u || type < 0 || type >= USWAP_MAX_DEVICES)
		return -ENOENT;
	global_lock(u);
	if (u->devs[type])
		rc = fn(u->devs[type]->backend, ctx);
	global_unlock(u);
	return rc;
}

struct replace_ctx {
	struct backend *nb;
	char *err;
	size_t errlen;
};

static int replace_leg(struct backend *b, void *ctx)
{
	struct replace_ctx *c = ctx;

	return b ? mirror_replace(b, c->nb, c->err, c->errlen) : -ENOENT;
}

USWAP_API int uswap_mirror_replace(struct uswap *u, int type, const char *spec,
				   char *err, size_t errlen)
{
	struct replace_ctx c = { .err = err, .errlen = errlen };
	struct uswap_backend *nb;
	int rc;

	if (!u || type < 0 || type >= USWAP_MAX_DEVICES)
		return backend_errf(err, errlen, -ENOENT, "no device %d", type);
	rc = uswap_backend_open(spec, &nb, NULL, err, errlen);
	if (rc)
		return rc;
	c.nb = (struct backend *)nb;
	rc = with_backend(u, type, replace_leg, &c);
	if (rc == -ENOENT)
		backend_errf(err, errlen, -ENOENT, "no device %d", type);
	if (rc)
		uswap_backend_close(nb);
	return rc;
}

static int print_backend_stats(struct backend *b, void *out)
{
	if (b && b->ops->print_stats)
		b->ops->print_stats(b, out);
	return 0;
}

USWAP_API int uswap_device_print_stats(struct uswap *u, int type, FILE *out)
{
	if (!out && u && type >= 0 && type < USWAP_MAX_DEVICES)
		return -EINVAL;
	return with_backend(u, type, print_backend_stats, out);
}

static int zram_stat_of(struct backend *b, void *ctx)
{
	struct uswap_zram_stat *out = ctx;
	struct zram_mm_stat mm;
	int rc = b && zram_algo(b) ? zram_mm_stat(b, &mm) : -EINVAL;

	if (rc)
		return rc;
	*out = (struct uswap_zram_stat){
		.disksize = b->nr_slots * USWAP_PAGE_SIZE,
		.orig_data_size = mm.orig_data_size,
		.compr_data_size = mm.compr_data_size,
		.mem_used_total = mm.mem_used_total,
		.mem_limit = mm.mem_limit,
		.mem_used_max = mm.mem_used_max,
		.same_pages = mm.same_pages,
		.pages_compacted = mm.pages_compacted,
		.huge_pages = mm.huge_pages,
	};
	snprintf(out->algo, sizeof(out->algo), "%s", zram_algo(b));
	return 0;
}

USWAP_API int uswap_device_zram_stat(struct uswap *u, int type, struct uswap_zram_stat *out)
{
	if (!out && u && type >= 0 && type < USWAP_MAX_DEVICES)
		return -EINVAL;
	return with_backend(u, type, zram_stat_of, out);
}
