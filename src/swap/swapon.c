// SPDX-License-Identifier: MIT
/*
 * swapon.c - uswap_swapon(): a device with or without a backend holding
 * its data. The allocator (alloc/device.c) keeps the backend as an opaque
 * pointer; here its size and the bad slots of its swap header are folded
 * into the swapon arguments.
 */
#include <stdlib.h>
#include <string.h>

#include "swap/swap.h"

static void backend_close_opaque(void *b)
{
	struct backend *be = b;

	be->ops->close(be);
}

USWAP_API void uswap_backend_close(struct uswap_backend *b)
{
	if (b)
		backend_close_opaque(b);
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
		return device_swapon(u, args, NULL, NULL, 0);
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
	err = device_swapon(u, &a, b, backend_close_opaque,
			    (b->is_file ? DEV_FLAG_FILE : 0) |
			    (b->discard_clusters ? DEV_FLAG_PAGE_DISCARD : 0));
	free(bad);
	return err;
}
