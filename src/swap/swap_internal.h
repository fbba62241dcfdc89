/* SPDX-License-Identifier: MIT */
/*
 * swap_internal.h - the swap path's internals: the swap cache kept per cluster
 * (cache.c) and helpers shared by swap.c and swap_unuse.c.
 *
 * The swap cache maps a slot to an in-memory copy of its folio while the
 * folio is being written, and afterwards for clean copies kept on purpose.
 * Each cluster has its own table, reached from the cluster descriptor and
 * guarded by the cluster lock, as the kernel's swap table (6.18+): a
 * lookup never takes a device-wide lock. A cached slot always holds the
 * HAS_CACHE pin in its table entry, so the slot cannot be freed under it.
 */
#ifndef USWAP_SWAP_SWAP_INTERNAL_H
#define USWAP_SWAP_SWAP_INTERNAL_H

#include "alloc/alloc_internal.h"
#include "dev/backend.h"

/* A folio's data in the cache. Shared by the table entries of its slots
 * and by readers copying it out; freed when the last one lets go. */
struct scache_folio {
	unsigned int order;
	unsigned int refs;     /* table entries + readers; ci->lock */
	unsigned char data[];  /* 2^order pages */
};

/* cache.c. Context for all: ci->lock held. */
struct scache_folio *scache_folio_new(const void *pages, unsigned int order);
int scache_insert(struct swap_cluster_info *ci, uint32_t ci_off,
		  struct scache_folio *folio);
struct scache_folio *scache_lookup(struct swap_cluster_info *ci, uint32_t ci_off);
void scache_get(struct scache_folio *folio);
void scache_put(struct scache_folio *folio);
bool scache_remove(struct swap_cluster_info *ci, uint32_t ci_off, unsigned int nr);
void scache_release_cluster(struct swap_cluster_info *ci);

/*
 * swapq.c: requests in flight. A swap queue owns @depth request places;
 * one thread uses it at a time (the caller's, as an io_uring). A request
 * is submitted (its backend I/O on the way, counted in si->io_inflight),
 * then completed by the backend in done() on whatever thread reaps the
 * backend, then finished by the queue's owner in swapq_reap(): for a
 * swap-out the commit, or a retry elsewhere after a failed write. The
 * batch calls are a queue on the stack, filled and reaped in one call.
 */
#define SWAP_BATCH 128 /* request places of a batch call's queue */

enum swap_req_state { REQ_FREE, REQ_INFLIGHT, REQ_DONE, REQ_READY };

struct swap_req {
	struct backend_io io;
	struct backend *b;          /* where io goes */
	_Atomic int state;          /* enum swap_req_state; DONE set by done() */
	bool out;                   /* swap-out (else swap-in) */
	struct uswap_swap_io *user; /* the caller's, answered at READY */
	/* swap-out only */
	struct alloc_hook hook;
	unsigned int flags;         /* USWAP_SWAP_* */
	struct scache_folio *folio; /* KEEP_CACHE: the copy (creator's ref) */
	struct swap_device *si;     /* where the slots are */
	struct swap_cluster_info *ci;
	uint32_t off;
	bool cached;                /* folio is in ci's table */
	unsigned int tries;         /* writes attempted */
	int write_err;              /* the last failed write, for the answer */
};

struct swap_queue {
	struct uswap *u;
	unsigned int depth;
	bool sync_single;           /* a lone request: synchronous op */
	struct swap_req *req;       /* [depth] */
	unsigned int *busy;         /* [depth]: places not FREE */
	unsigned int nr_busy;
	unsigned int *free;         /* [depth]: FREE places */
	unsigned int nr_free;
};

void swapq_init(struct swap_queue *q, struct uswap *u, struct swap_req *req,
		unsigned int *busy, unsigned int *free, unsigned int depth);
struct swap_req *swapq_get(struct swap_queue *q);
int swapq_reap(struct swap_queue *q, unsigned int min, struct uswap_swap_io **done,
	       unsigned int max);
int swapq_submit(struct swap_queue *q, struct uswap_swap_io *const *ios, unsigned int nr,
		 bool out, unsigned int flags);
/* A batch call: @nr requests through a queue on the stack, submitted and
 * reaped until every one is answered. */
void swap_batch_run(struct uswap *u, struct uswap_swap_io *ios, unsigned int nr,
		    bool out, unsigned int flags);
/* Requests of one submit call, sent to the backends together. */
struct swapq_batch {
	struct swap_req *r[SWAP_BATCH];
	unsigned int n;
};
void swapq_add(struct swap_queue *q, struct swapq_batch *sb, struct swap_req *r);
void swapq_flush(struct swap_queue *q, struct swapq_batch *sb);

/* swap_out.c and swap_in.c, for swapq.c. prepare: 0 (r->io is ready to
 * submit) or 1 (answered: r->user->result set, nothing to submit).
 * complete: the same after the backend's done(); 0 means resubmit.
 * Context: inside an RCU read section; no lock held. */
int out_prepare(struct uswap *u, struct swap_req *r, struct pcpu_stats *st);
int out_complete(struct uswap *u, struct swap_req *r, struct pcpu_stats *st);
/* A folio the calls can take: pages, an order the allocator knows. */
static inline bool swap_io_ok(const struct uswap_swap_io *io)
{
	return io && io->pages && io->order < NR_ORDERS;
}
int in_prepare(struct uswap *u, struct swap_req *r, struct pcpu_stats *st);
int in_complete(struct swap_req *r, struct pcpu_stats *st);

/* swap.c: the cluster checks shared by the swap-in and free paths. */
bool range_in_use(struct swap_cluster_info *ci, uint32_t off, unsigned int nr);
/* Every slot of the range holds a reference (not only a pin).
 * Context: ci->lock held. */
bool range_referenced(struct swap_cluster_info *ci, uint32_t off, unsigned int nr);

static inline struct backend *device_backend(struct swap_device *si)
{
	return si->backend;
}

#endif /* USWAP_SWAP_SWAP_INTERNAL_H */
