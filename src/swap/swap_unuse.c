// SPDX-License-Identifier: MIT
/*
 * swap_unuse.c - swapoff: of an empty device at once; of a busy one by handing
 * every slot in use to the owner's callback until none is left (the
 * kernel's try_to_unuse(), with the page-table walk replaced by the owner,
 * who alone knows where its entries are).
 *
 * Order, as the kernel's swapoff: stop allocation on the device (writeok
 * off, rings republished, grace period), move the slots away, then
 * unpublish and free it. Swap-ins from the device keep working throughout.
 * The instance's swapon lock is dropped while the callback runs, so the
 * owner may swap out to the other devices and readers may list devices;
 * si->unusing keeps a second swapoff of the same device away.
 */
#include <time.h>

#include "swap/swap_internal.h"

#define UNUSE_PIN_GRACE 10   /* idle passes (~1 ms each) before pins are offered */
#define UNUSE_IDLE_MAX  5000 /* idle passes before giving up: 5 to 10 s (each
				  sleeps 1 ms, plus its sweep) */

/* Collect the offsets of slots in use in cluster @idx: those holding a
 * reference, and with @pinned also those held only by a HAS_CACHE pin. */
static unsigned int cluster_used_slots(struct swap_device *si, uint32_t idx,
				       uint32_t *offs, bool pinned,
				       struct pcpu_stats *st)
{
	struct swap_cluster_info *ci = &si->cluster_info[idx];
	uint32_t base = idx * CLUSTER_SLOTS;
	unsigned int n = 0;

	ci_lock(ci, st);
	for (uint32_t s = 0; ci->count && s < CLUSTER_SLOTS; s++) {
		if (slot_in_use(ci, s) && (pinned || slot_count(ci, s)))
			offs[n++] = base + s;
	}
	ci_unlock(ci);
	return n;
}

/* One sweep over the device. Return: slots handed over, or -errno. */
static long unuse_pass(struct uswap *u, struct swap_device *si, bool pinned,
		       uswap_progress_fn progress, void *ctx)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	uint32_t offs[CLUSTER_SLOTS];
	long moved = 0;

	for (uint32_t idx = 0; idx < si->nr_clusters; idx++) {
		unsigned int n = cluster_used_slots(si, idx, offs, pinned, st);

		for (unsigned int i = 0; i < n; i++) {
			uswap_entry_t e = uswap_entry((unsigned int)si->type, offs[i]);
			long count = uswap_slot_count(u, e, NULL);
			int err;

			if (count < 0 || (count == 0 && !pinned))
				continue; /* the owner freed it with its folio */
			err = u->unuse(u->unuse_ctx, e);
			if (err)
				return err;
			stat_inc(&st->unuse_slots);
			if (progress && ++moved % 256 == 0)
				progress(ctx, device_inuse(si, st));
		}
	}
	return moved;
}

/*
 * unuse_device() - hand slots to the owner until the device is empty.
 * A slot held only by its HAS_CACHE pin is mostly a swap-out or a free of
 * the swap path finishing: those need no owner, so they are waited for.
 * Once about 10 ms pass with nothing freed, the pins left are the owner's
 * own (uswap_alloc() or uswap_cache_pin() with nothing written yet) and
 * are offered too. 5000 idle sweeps (5 to 10 s) with nothing freed is -EBUSY.
 */
static int unuse_device(struct uswap *u, struct swap_device *si,
			uswap_progress_fn progress, void *ctx)
{
	struct pcpu_stats *st = this_cpu_stats(u);
	const struct timespec pause = { 0, 1000000 }; /* 1 ms */
	unsigned int idle = 0;
	uint64_t left, now;

	while ((left = device_inuse(si, st)) != 0) {
		long moved = unuse_pass(u, si, idle >= UNUSE_PIN_GRACE, progress, ctx);

		if (moved < 0)
			return (int)moved;
		now = device_inuse(si, st);
		if (progress)
			progress(ctx, now);
		if (now < left) {
			idle = 0;
			continue;
		}
		if (++idle > UNUSE_IDLE_MAX)
			return -EBUSY; /* pins nobody releases */
		nanosleep(&pause, NULL);
	}
	return 0;
}

USWAP_API void uswap_set_unuse(struct uswap *u, uswap_unuse_fn fn, void *ctx)
{
	global_lock(u);
	u->unuse = fn;
	u->unuse_ctx = ctx;
	global_unlock(u);
}

USWAP_API int uswap_swapoff_progress(struct uswap *u, int type,
				     uswap_progress_fn progress, void *ctx)
{
	struct swap_device *si;
	bool busy;
	int err;

	if (type < 0 || type >= USWAP_MAX_DEVICES)
		return -ENOENT;
	global_lock(u);
	si = u->devs[type];
	err = !si ? -ENOENT : si->unusing ? -EBUSY : 0;
	if (err)
		goto out;
	busy = device_inuse(si, this_cpu_stats(u)) != 0;
	if (busy && !u->unuse) {
		err = -EBUSY;
		goto out;
	}
	err = device_disable(u, si);
	if (err)
		goto out;
	busy = device_inuse(si, this_cpu_stats(u)) != 0;
	if (busy && !u->unuse) { /* an allocation won the race */
		device_reenable(u, si);
		err = -EBUSY;
		goto out;
	}
	if (busy) {
		si->unusing = true;
		global_unlock(u);
		err = unuse_device(u, si, progress, ctx);
		global_lock(u);
		si->unusing = false;
		if (err) {
			device_reenable(u, si);
			goto out;
		}
	}
	device_remove(u, si);
out:
	global_unlock(u);
	return err;
}

USWAP_API int uswap_swapoff(struct uswap *u, int type)
{
	return uswap_swapoff_progress(u, type, NULL, NULL);
}
