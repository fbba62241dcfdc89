/* SPDX-License-Identifier: MIT */
/*
 * uswap/swap.h - the swap layer (src/swap/): devices (swapon with a backend
 * or by spec, swapoff, the backend's figures), the swap path (folios out to
 * a device and back, batches, swap queues), the swap cache, and swapoff
 * through the slot owner.
 * Part of the embedder's API; <uswap/uswap.h> includes it.
 */
#ifndef USWAP_SWAP_H
#define USWAP_SWAP_H

#include <uswap/alloc.h>
#include <uswap/dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Devices: swapon / swapoff
 *
 * The swap layer joins a backend (<uswap/dev.h>) to a device of the
 * allocator (src/swap/swapon.c); swapoff empties the device through the
 * slot owner (src/swap/swap_unuse.c).
 * ---------------------------------------------------------------------- */
struct uswap_swapon_args {
	const char *name;          /* Filename column of uswap_swaps(); copied;
				      NULL gives "dev<type>" */
	uint64_t nr_slots;         /* slots including header slot 0, i.e. the
				      header's last_page + 1; at least
				      USWAP_MIN_CLUSTERS * 512, at most
				      UINT32_MAX */
	int prio;                  /* USWAP_PRIO_DEFAULT or 0..USWAP_PRIO_MAX */
	unsigned int flags;        /* 0 or USWAP_SWAPON_DISCARD */
	const uint64_t *bad_slots; /* slots never to hand out (1..nr_slots-1),
				      or NULL; copied */
	size_t nr_bad;
	struct uswap_backend *backend; /* data store, or NULL for a device
				      that only allocates (benchmarks, lab).
				      On success swapon owns it. With a
				      backend, nr_slots 0 means "the
				      backend's size" and its header's bad
				      slots are added to bad_slots. */
	int node;                  /* emulated NUMA node of the device,
				      0..policy.nr_nodes-1 (0 when nr_nodes
				      is 0 or 1): with USWAP_SELECT_LEGACY_PRIO
				      CPUs of this node prefer it (the bdev's
				      node_id in swap_node()); else only
				      shown in uswap_device_info() */
};

/* uswap_swapon_args.flags */
#define USWAP_SWAPON_DISCARD 0x10000 /* page discard (SWP_PAGE_DISCARD;
				    SWAP_FLAG_DISCARD's value) on a device
				    without a backend: each emptied cluster
				    waits on the discard list until an
				    allocation discards it (policy.discard
				    says how many at a time); for the lab.
				    A backend's own setting is kept either
				    way. */

/*
 * uswap_swapon() - add a device and make it available for allocation.
 * Slot 0 holds the header and every bad slot is marked USWAP map BAD; they
 * are never handed out. The device joins the ring of its priority; the new
 * ring is published with RCU, so allocators never see a half-built ring.
 * The lowest free type is used, as the kernel reuses swap_info[] slots.
 * Free clusters go on the free list in ascending order (seed "remove
 * contention workaround for swap cache"; interleaved in 32 columns under
 * USWAP_FREELIST_INTERLEAVED); clusters holding a bad slot start on
 * nonfull[0], as setup_clusters() does. With USWAP_SELECT_LEGACY_PRIO a
 * USWAP_PRIO_DEFAULT device gets the next of -2, -3, ... instead of -1.
 * Return: the device type (0..31) on success; -EINVAL (@args NULL, nr_slots
 * outside the range above, prio outside -1..32767, an unknown flag, node
 * outside 0..nr_nodes-1, a bad slot of 0, past the end or listed twice), -EMFILE (all 32 types in use; the
 * kernel says -EPERM), -ENOSPC (every usable slot bad), -ENOMEM. On error
 * nothing changed.
 * Context: may sleep (an RCU grace period); serialised with swapoff.
 */
USWAP_API int uswap_swapon(struct uswap *u, const struct uswap_swapon_args *args);

/*
 * uswap_swapon_spec() - open @spec's backend and swap it on at the spec's
 * priority. Return: the type, or -errno with a reason in @err.
 */
USWAP_API int uswap_swapon_spec(struct uswap *u, const char *spec, char *err,
				size_t errlen);

/* uswap_backend_close() - close a backend no device owns. NULL is a no-op. */
USWAP_API void uswap_backend_close(struct uswap_backend *b);

/*
 * uswap_swapoff() - remove an empty device.
 * The device first leaves its ring (new ring published, grace period
 * waited), then every allocator that could still see it is waited out, so
 * once this returns no slot on @type is handed out again.
 * This is the kernel's swapoff order (clear SWP_WRITEOK, leave the avail
 * list, wait for allocators) with the RFC's ring republication (seed 5).
 * With slots in use and an owner callback (uswap_set_unuse()), every used
 * slot is handed to it until none is left (try_to_unuse()); meanwhile
 * swap-ins from the device keep working and no new slot is allocated on it.
 * Swap-outs in flight on a swap queue (uswap_swapq_out()) pin their slots
 * until their queue is reaped; reads in flight are completed (the backend
 * reaped by swapoff itself) before the backend is closed.
 * Return: 0; -ENOENT (@type not swapped on, or outside 0..31); -EBUSY
 * (slots in use and no owner callback, or 5000 sweeps, 5 to 10 s, with nothing
 * freed: the device is put back, with what was already moved staying
 * moved); the callback's -errno (device put back, likewise).
 * Context: may sleep; serialised with swapon by the instance's swapon lock.
 */
USWAP_API int uswap_swapoff(struct uswap *u, int type);

/*
 * uswap_device_zram_stat() - what zram device @type holds (zramctl's
 * columns, mm_stat's fields).
 * Return: 0; -ENOENT (no device @type); -EINVAL (not a zram device, or
 * @out NULL).
 * Thread-safety: any thread; takes the swapon lock (the device cannot go
 * meanwhile); a moving snapshot while I/O runs.
 */
USWAP_API int uswap_device_zram_stat(struct uswap *u, int type, struct uswap_zram_stat *out);

/*
 * uswap_device_print_stats() - the backend's own figures of device @type
 * to @out, one "key value" line each (the value a number or one word):
 * zram's mm_stat and io_stat fields and, with a lower device, bd_count,
 * bd_reads, bd_writes and the writeback reasons; an nbd export's
 * connections, requests, reconnects and retries; a mirror's legs
 * (leg0_state healthy or failed, leg0_errors ...) and failovers; a
 * file's queue depth and io_uring counts; a faulty wrapper's injections,
 * then its inner device's lines.
 * Return: 0; -ENOENT (no device @type); -EINVAL (@out NULL).
 * Thread-safety: any thread; takes the swapon lock.
 */
USWAP_API int uswap_device_print_stats(struct uswap *u, int type, FILE *out);

/*
 * uswap_mirror_replace() - open @spec and make it the new leg of mirror
 * device @type in place of its failed leg, while the device is in use: a
 * thread copies every slot holding data to it from the healthy leg; until
 * the copy is complete the new leg is written (in step with the copy) but
 * never read. Progress and the end show in uswap_device_print_stats()
 * (leg state "syncing", resynced_slots).
 * Return: 0 (the copy runs); -ENOENT (no device @type); -EINVAL (not a
 * mirror, no failed leg, the new one smaller than the mirror, a plain
 * one for a mirror of encrypted legs, a bad spec); -EBUSY (a copy under
 * way); -ENOSPC (replaced 8 times already); with a message in @err.
 * Thread-safety: any thread; takes the swapon lock.
 */
USWAP_API int uswap_mirror_replace(struct uswap *u, int type, const char *spec,
				   char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * The swap path: folios of 2^order pages out to a device and back
 * ---------------------------------------------------------------------- */

#define USWAP_SWAP_KEEP_CACHE 0x1 /* keep a clean copy in the swap cache */

/*
 * uswap_swap_out() - store a folio: allocate 2^@order slots (as
 * uswap_alloc()), put the folio in the swap cache under the HAS_CACHE pin,
 * write it to the device, and on completion give the caller one reference
 * to each slot. Without USWAP_SWAP_KEEP_CACHE the cached copy is dropped
 * when the write completes; with it, a clean copy stays until
 * uswap_cache_drop() or the last uswap_swap_free(), and uswap_swap_in()
 * returns it with no I/O.
 * A failed write never loses data: the failed slots are freed again (a
 * failure such as zram's memory limit is not a bad sector; the kernel
 * marks nothing bad either), the device is passed over by allocation
 * while any other device has room, for a pause (10 ms, doubled by each
 * further failure up to 1.28 s, reset by a good write; counted in
 * uswap_device_info()'s write_errors and write_pauses), and the folio is
 * retried on the next device with room, up to 4 tries in all.
 * @pages: 2^order * USWAP_PAGE_SIZE bytes; read only, not kept.
 * Return: 0 with *@entry; -E2BIG (split the folio); -ENOSPC; -EIO (a
 * write failed and no other device could take the folio, or every retry
 * failed: the caller still has its pages); -EINVAL; -ENOMEM (no memory
 * for the cached copy or for the cluster's swap table: nothing stored, the
 * caller still has its pages).
 * Context: any thread; sleeps on the device's I/O.
 */
USWAP_API int uswap_swap_out(struct uswap *u, const void *pages, unsigned int order,
			     unsigned int flags, uswap_entry_t *entry);

/*
 * uswap_swap_in() - read the folio of 2^@order pages at @entry into @buf:
 * from the swap cache when a copy is there, else from the device. The
 * caller keeps its references (free them with uswap_swap_free()).
 * Return: 1 (swap cache hit, no I/O), 0 (read from the device), -EIO (the
 * device failed: @buf holds nothing valid), -ENOENT (a slot not in use,
 * or held only by a pin: a swap-out not answered yet, slots from
 * uswap_alloc() with nothing written; there is no data to read),
 * -EINVAL.
 * Context: any thread; sleeps on I/O.
 */
USWAP_API int uswap_swap_in(struct uswap *u, uswap_entry_t entry, unsigned int order,
			    void *buf);

/* One folio of a batch call (uswap_swap_out_batch(), uswap_swap_in_batch()). */
struct uswap_swap_io {
	void *pages;          /* 2^order * USWAP_PAGE_SIZE bytes: read by
				 swap-out (not kept), filled by swap-in */
	unsigned int order;   /* 0..9 */
	uswap_entry_t entry;  /* swap-out: set when result is 0;
				 swap-in: the folio to read */
	int result;           /* set by the call, as the single call returns */
};

/*
 * uswap_swap_out_batch() - uswap_swap_out() of @nr folios in one call:
 * slots are allocated for all of them, the writes go to each device
 * together (a file: one io_uring submission per queue depth of them;
 * zram compresses on the calling thread), and the call returns when
 * every write has completed. Each folio gets its own answer in
 * ios[i].result (0 with ios[i].entry, or the -errno uswap_swap_out()
 * would return) and nothing is lost when some writes fail: those folios
 * are retried on other devices, as uswap_swap_out() retries. @flags as
 * uswap_swap_out(), for every folio.
 * Return: the number of folios stored (result 0); -EINVAL (@ios NULL, a
 * folio with no pages or order > 9, unknown flags: nothing was done).
 * Context: any thread; sleeps on the devices' I/O. Costs two cluster-lock
 * round trips per folio: allocation and the swap cache insert under one,
 * the commit after the write under the other. A swap queue
 * (uswap_swapq_create()) on the stack, submitted and reaped in this call.
 */
USWAP_API int uswap_swap_out_batch(struct uswap *u, struct uswap_swap_io *ios,
				   unsigned int nr, unsigned int flags);

/*
 * uswap_swap_in_batch() - uswap_swap_in() of @nr folios in one call: the
 * cached ones are copied from the swap cache, the rest read from their
 * devices together (swap readahead's use), and the call returns when all
 * are in. ios[i].result is 1 (swap cache hit), 0 (read from the device),
 * -EIO (that folio's read failed: its buffer holds nothing valid; the
 * others are unaffected), -ENOENT or -EINVAL (that entry).
 * Return: the number of folios read (result >= 0); -EINVAL (@ios NULL, a
 * folio with no buffer or order > 9: nothing was done).
 * Context: any thread; sleeps on I/O.
 */
USWAP_API int uswap_swap_in_batch(struct uswap *u, struct uswap_swap_io *ios,
				  unsigned int nr);

/*
 * Swap queues: swap-outs and swap-ins kept in flight across calls, so a
 * caller overlaps its own work, or the next submission, with the devices'
 * I/O (the kernel's swap writeback and readahead do not wait per folio
 * either). One thread uses a queue at a time; each thread may have its
 * own. A submitted uswap_swap_io belongs to the queue, pages included,
 * until uswap_swapq_reap() hands it back answered, exactly as the batch
 * call would have answered it (the same ->result values; failed writes
 * are retried elsewhere before the answer).
 */
struct uswap_swapq;

/*
 * uswap_swapq_create() - a queue with @depth request places (1..4096).
 * Return: 0 and *@out (free it with uswap_swapq_destroy()); -EINVAL;
 * -ENOMEM. Context: any thread.
 */
USWAP_API int uswap_swapq_create(struct uswap *u, unsigned int depth,
				 struct uswap_swapq **out);

/*
 * uswap_swapq_destroy() - wait for every request in flight (their
 * answers are written to their uswap_swap_io but not handed back), then
 * free @q. NULL is ignored. Context: the queue's thread.
 */
USWAP_API void uswap_swapq_destroy(struct uswap_swapq *q);

/*
 * uswap_swapq_out() - submit swap-outs of up to uswap_swapq_space() of
 * the @nr folios @ios points to (pointers, as uswap_swapq_reap() hands
 * them back, so answered ones can be refilled and sent again): slots are allocated and the writes sent before the call
 * returns; the commit runs in a later uswap_swapq_reap(). @flags as
 * uswap_swap_out(). The folios' pages are read until the answer comes
 * back (they are not copied unless USWAP_SWAP_KEEP_CACHE).
 * Return: how many of @ios were taken (from the first; 0 when the queue
 * is full: reap first); -EINVAL (as uswap_swap_out_batch(): none taken).
 * Context: the queue's thread; does not wait for I/O, but a file
 * backend's full ring is reaped to make room.
 */
USWAP_API int uswap_swapq_out(struct uswap_swapq *q, struct uswap_swap_io *const *ios,
			      unsigned int nr, unsigned int flags);

/*
 * uswap_swapq_in() - submit swap-ins of up to uswap_swapq_space() of the
 * @nr folios @ios points to (readahead: entries the caller expects to need). A swap cache hit
 * is copied in this call and handed back by the next reap, as every other
 * answer. Return: how many of @ios were taken; -EINVAL (as
 * uswap_swap_in_batch()). Context: the queue's thread. The entries must
 * stay referenced until their answers come back.
 */
USWAP_API int uswap_swapq_in(struct uswap_swapq *q, struct uswap_swap_io *const *ios,
			     unsigned int nr);

/*
 * uswap_swapq_reap() - poll for answers: finish what the devices
 * completed (a swap-out is committed here, under its cluster lock, or
 * placed again after a failed write) and hand back at least @min (fewer
 * only when fewer are outstanding; 0: only what is ready) and at most
 * @max answered uswap_swap_io pointers in @done, in no particular order.
 * Return: how many were handed back; -EINVAL (@q NULL, @done NULL with
 * @max > 0). Context: the queue's thread; sleeps on I/O when @min > 0.
 */
USWAP_API int uswap_swapq_reap(struct uswap_swapq *q, unsigned int min,
			       struct uswap_swap_io **done, unsigned int max);

/* Requests submitted and not yet handed back; free places. */
USWAP_API unsigned int uswap_swapq_pending(const struct uswap_swapq *q);
USWAP_API unsigned int uswap_swapq_space(const struct uswap_swapq *q);

/*
 * uswap_swap_free() - drop one reference to each slot of the folio
 * (free_swap_and_cache()): slots left without references lose any cached
 * copy, their data is discarded on the device (zram frees the memory at
 * once, as swap_slot_free_notify), and they become free. A slot whose
 * HAS_CACHE pin another caller holds (uswap_cache_pin() or uswap_alloc())
 * is left pinned with no references: it is freed when that owner calls
 * uswap_put_folio(); the device then forgets its data on reuse.
 * Return: 0; -ENOENT (a slot had no reference: nothing changed); -EINVAL.
 * Context: any thread; takes the folio's cluster lock twice.
 */
USWAP_API int uswap_swap_free(struct uswap *u, uswap_entry_t entry, unsigned int order);

/*
 * uswap_cache_drop() - drop the clean cached copy of a folio kept by
 * USWAP_SWAP_KEEP_CACHE (no I/O: the device has the data).
 * Return: 0; -ENOENT (no copy cached); -EINVAL.
 */
USWAP_API int uswap_cache_drop(struct uswap *u, uswap_entry_t entry, unsigned int order);

/*
 * uswap_unuse_fn - the slot owner's swapoff callback ("unuse").
 * Called by uswap_swapoff() for each in-use slot of the device going away,
 * @entry being that slot. The owner must stop referencing it: read the
 * data back (uswap_swap_in) and keep it in memory, or write it to another
 * device (uswap_swap_out) and switch its reference, then drop its
 * references to @entry (uswap_swap_free). Slots of one folio are offered
 * one by one; after the owner freed the whole folio the other slots are
 * no longer in use and are not offered again. A slot held only by its
 * HAS_CACHE pin (uswap_alloc() or uswap_cache_pin() with no reference
 * yet: uswap_slot_count() says 0) is offered too, once about 10 ms pass
 * with nothing freed (the swap path's own writes and frees finish without
 * the owner); the owner lets go of it with uswap_put_folio(), or finishes
 * with it and frees it. Returning 0 for a slot the owner does not know
 * is allowed: the slot is offered again on the next sweep.
 * Return: 0, or -errno to abort the swapoff (the device is put back).
 * Context: runs in the swapoff thread, without uswap locks held.
 */
typedef int (*uswap_unuse_fn)(void *ctx, uswap_entry_t entry);

/* uswap_progress_fn - swapoff progress: @left slots still in use. */
typedef void (*uswap_progress_fn)(void *ctx, uint64_t left);

/*
 * uswap_set_unuse() - register the slot owner's swapoff callback (one per
 * instance; NULL unregisters). With it, uswap_swapoff() of a busy device
 * hands every in-use slot to @fn instead of refusing with -EBUSY.
 */
USWAP_API void uswap_set_unuse(struct uswap *u, uswap_unuse_fn fn, void *ctx);

/*
 * uswap_swapoff_progress() - uswap_swapoff() that reports the slots left
 * to @progress (may be NULL) after each one is moved, as try_to_unuse()'s
 * caller could. Return: as uswap_swapoff(), plus the callback's -errno.
 */
USWAP_API int uswap_swapoff_progress(struct uswap *u, int type,
				     uswap_progress_fn progress, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_SWAP_H */
