// SPDX-License-Identifier: MIT
/*
 * pager.c - uswap_pager_create()/destroy(), the fault-handler threads and
 * their wait strategy, statistics.
 *
 * Handler threads all read the one userfaultfd (non-blocking); the kernel
 * gives each message to one reader. A handler that finds the queue empty
 * keeps reading without sleeping for spin_us, then blocks in poll() on
 * the userfaultfd and an eventfd that says "stop". Measured on the
 * 2-vCPU machine of docs/design.md, a fault costs about 40 us when the handler
 * sleeps in poll() or read() and about 15 us when it spins: the wake-up of
 * a sleeping handler is most of a 4 KiB fault. Under a steady stream of
 * faults the spin keeps the handler awake between them; when the program
 * stops faulting, the handler sleeps after spin_us and costs nothing.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pager/pager_internal.h"

#define MAX_HANDLERS     64
#define HANDLER_MSGS     4    /* messages read at once */
#define DEFAULT_BATCH    256  /* pages per reclaim pass: above the kernel's
			       * 33-page single-flush ceiling, see docs/pager.md */

uint64_t pager_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * Latency histogram
 * ---------------------------------------------------------------------- */

static unsigned int lat_bucket(uint64_t ns)
{
	unsigned int msb, b;

	if (ns < (1u << LAT_SUB_BITS))
		return (unsigned int)ns;
	msb = 63u - (unsigned int)__builtin_clzll(ns);
	b = (msb - LAT_SUB_BITS + 1) * (1u << LAT_SUB_BITS) +
	    (unsigned int)((ns >> (msb - LAT_SUB_BITS)) & ((1u << LAT_SUB_BITS) - 1));
	return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

/* The middle of bucket @b's range. */
static uint64_t lat_value(unsigned int b)
{
	unsigned int sub = 1u << LAT_SUB_BITS, shift;
	uint64_t lo;

	if (b < sub)
		return b;
	shift = b / sub - 1;
	lo = (uint64_t)(sub + b % sub) << shift;
	return lo + ((1ull << shift) >> 1);
}

void pager_record_latency(struct pager_handler *h, uint64_t ns)
{
	uint64_t max = atomic_load_explicit(&h->lat_max, memory_order_relaxed);

	atomic_fetch_add_explicit(&h->lat[lat_bucket(ns)], 1, memory_order_relaxed);
	if (ns > max)
		atomic_store_explicit(&h->lat_max, ns, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * Handler threads
 * ---------------------------------------------------------------------- */

/* Sleep until the userfaultfd has a message or the pager stops. */
static void handler_sleep(struct uswap_pager *p)
{
	struct pollfd fds[2] = {
		{ .fd = p->uffd, .events = POLLIN },
		{ .fd = p->stop_fd, .events = POLLIN },
	};

	while (poll(fds, 2, -1) < 0 && errno == EINTR)
		;
}

/* Whether @m is a fault of the thread inside uswap_pager_fork_prepare()'s
 * window (@fork_tid, 0: none). */
static bool from_fork(const struct uffd_msg *m, pid_t fork_tid)
{
	return fork_tid && m->event == UFFD_EVENT_PAGEFAULT &&
	       m->arg.pagefault.feat.ptid == (uint32_t)fork_tid;
}

/*
 * A fault of the forking thread during its fork (glibc runs the program's
 * libc between the atfork handlers and the copy of the page tables) is
 * served without p->lock: that thread holds it for writing and waits in
 * this fault, so nothing else changes pager state meanwhile, and waiting
 * for the lock would never end. The fault is served so that nothing is
 * left half done when the thread goes on to the copy (h->for_fork).
 */
static void serve_fork_thread(struct uswap_pager *p, struct pager_handler *h,
			      const struct uffd_msg *m, uint64_t t0)
{
	h->for_fork = true;
	fault_handle(p, h, (uintptr_t)m->arg.pagefault.address, m->arg.pagefault.flags, t0);
	h->for_fork = false;
	pager_count(p, fork_window);
}

static void handler_dispatch(struct uswap_pager *p, struct pager_handler *h,
			     const struct uffd_msg *msg, size_t nr)
{
	pid_t fork_tid = atomic_load_explicit(&p->fork_tid, memory_order_acquire);
	uint64_t t0 = pager_now_ns();
	size_t left = nr;

	for (size_t i = 0; fork_tid && i < nr; i++)
		if (from_fork(&msg[i], fork_tid)) {
			serve_fork_thread(p, h, &msg[i], t0);
			left--;
		}
	if (!left)
		return;
	pthread_rwlock_rdlock(&p->lock);
	for (size_t i = 0; i < nr; i++) {
		if (msg[i].event != UFFD_EVENT_PAGEFAULT || from_fork(&msg[i], fork_tid))
			continue; /* no other event was asked for; served above */
		fault_handle(p, h, (uintptr_t)msg[i].arg.pagefault.address,
			     msg[i].arg.pagefault.flags, t0);
	}
	pthread_rwlock_unlock(&p->lock);
}

static void *handler_main(void *arg)
{
	struct pager_handler *h = arg;
	struct uswap_pager *p = h->p;
	struct uffd_msg msg[HANDLER_MSGS];
	uint64_t idle_since = 0;

	while (!atomic_load_explicit(&p->stopping, memory_order_acquire)) {
		ssize_t n = read(p->uffd, msg, sizeof(msg));

		if (n > 0) {
			handler_dispatch(p, h, msg, (size_t)n / sizeof(msg[0]));
			idle_since = 0;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			WARN_ONCE(1, "pager: read(userfaultfd) failed: %s", strerror(errno));
			break;
		}
		if (p->spin_ns) {
			uint64_t now = pager_now_ns();

			if (!idle_since)
				idle_since = now;
			if (now - idle_since < p->spin_ns) {
				/* Polite: a runnable worker or the reclaim
				 * thread gets this CPU if it needs it. */
				sched_yield();
				continue;
			}
		}
		handler_sleep(p);
		idle_since = 0;
	}
	return NULL;
}

static void handlers_stop(struct uswap_pager *p);

/* Start the handlers with every signal blocked: the program's signals
 * belong to its own threads. On failure the ones started are stopped. */
static int handlers_start(struct uswap_pager *p)
{
	unsigned int want = p->nr_handlers;
	sigset_t all, old;
	int err = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned int i = 0; i < want; i++) {
		err = -pthread_create(&p->handlers[i].tid, NULL, handler_main,
				      &p->handlers[i]);
		if (err) {
			p->nr_handlers = i; /* only these get joined */
			handlers_stop(p);
			p->nr_handlers = want;
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static void handlers_stop(struct uswap_pager *p)
{
	uint64_t one = 1;

	atomic_store_explicit(&p->stopping, true, memory_order_release);
	if (write(p->stop_fd, &one, sizeof(one)) < 0)
		WARN_ONCE(1, "pager: eventfd write failed");
	for (unsigned int i = 0; i < p->nr_handlers; i++)
		pthread_join(p->handlers[i].tid, NULL);
}

/* ------------------------------------------------------------------------
 * Create / destroy
 * ---------------------------------------------------------------------- */

#define KNOWN_FLAGS (USWAP_PAGER_KERNEL_FAULTS | USWAP_PAGER_NO_POISON | \
		     USWAP_PAGER_NO_KEEP_CLEAN | USWAP_PAGER_NO_ZEROPAGE | \
		     USWAP_PAGER_NO_SPIN | USWAP_PAGER_NO_KSWAPD | USWAP_PAGER_FORKABLE | \
		     USWAP_PAGER_NO_MOVE | USWAP_PAGER_NO_WORKINGSET | \
		     USWAP_PAGER_NO_PAGEMAP_SCAN)

/* Check @cfg and fill in the defaults. Return: 0 or -EINVAL. */
/* Join @cfg->group (if any): the limit is the group's. A group needs each
 * member's kswapd, which is what evicts when another member needs room. */
static int group_apply(struct uswap_pager *p, const struct uswap_pager_config *cfg)
{
	if (!cfg->group)
		return 0;
	p->group = group_check(cfg->group);
	if (!p->group || (cfg->flags & USWAP_PAGER_NO_KSWAPD)) {
		p->group = NULL;
		return -EINVAL;
	}
	p->gslot = group_join(p->group);
	if (!p->gslot) {
		p->group = NULL;
		return -EUSERS;
	}
	p->group_seq = group_pressure_seq(p->group);
	return 0;
}

static int config_apply(struct uswap_pager *p, const struct uswap_pager_config *cfg)
{
	uint64_t min_pages;

	if (cfg->order > USWAP_PAGER_MAX_ORDER || (cfg->flags & ~KNOWN_FLAGS) ||
	    (cfg->swap_flags & ~USWAP_SWAP_KEEP_CACHE) || cfg->nr_handlers > MAX_HANDLERS)
		return -EINVAL;
	p->cfg = *cfg;
	p->order = cfg->order;
	p->nr = 1u << cfg->order;
	p->folio_bytes = (size_t)p->nr * USWAP_PAGE_SIZE;
	p->nr_handlers = cfg->nr_handlers ? cfg->nr_handlers : 1;
	p->limit_pages = cfg->limit_bytes / p->folio_bytes * p->nr;
	/* Each handler may hold one charged folio that is not evictable yet
	 * (being mapped); the rest must leave room to evict. */
	min_pages = (uint64_t)USWAP_PAGER_MIN_LIMIT_FOLIOS * p->nr_handlers * p->nr;
	if (p->limit_pages < min_pages)
		return -EINVAL;
	p->spin_ns = (uint64_t)(cfg->spin_us ? cfg->spin_us : USWAP_PAGER_SPIN_DEFAULT) * 1000;
	if (cfg->flags & USWAP_PAGER_NO_SPIN)
		p->spin_ns = 0;
	unsigned int batch = cfg->reclaim_batch ? cfg->reclaim_batch : DEFAULT_BATCH;

	p->batch_folios = (batch + p->nr - 1) / p->nr;
	/* A pass never takes more than a quarter of the limit. */
	if ((uint64_t)p->batch_folios * p->nr > p->limit_pages / 4)
		p->batch_folios = (unsigned int)(p->limit_pages / 4 / p->nr);
	if (!p->batch_folios)
		p->batch_folios = 1;
	/* Readahead: whole folios, at most PAGER_MAX_RA_PAGES, and never
	 * more than an eighth of the limit over all handlers at once. */
	p->ra_folios = (cfg->readahead_pages < PAGER_MAX_RA_PAGES ? cfg->readahead_pages :
			PAGER_MAX_RA_PAGES) / p->nr;
	while (p->ra_folios &&
	       (uint64_t)(1 + p->ra_folios) * p->nr * p->nr_handlers > p->limit_pages / 8)
		p->ra_folios /= 2;
	p->kswapd_on = !(cfg->flags & USWAP_PAGER_NO_KSWAPD);
	p->wmark_low = 2 * (uint64_t)p->batch_folios * p->nr;
	p->wmark_high = 4 * (uint64_t)p->batch_folios * p->nr;
	if (p->wmark_high > p->limit_pages / 4)
		p->wmark_high = p->limit_pages / 4;
	if (p->wmark_low > p->wmark_high / 2)
		p->wmark_low = p->wmark_high / 2;
	return group_apply(p, cfg);
}

static void pager_free(struct uswap_pager *p)
{
	stage_fini(p);
	target_close(p);
	if (p->group) /* its folios are gone with it: their charge too */
		group_leave(p->group, p->gslot);
	if (p->uffd >= 0)
		close(p->uffd);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	if (p->handlers) {
		for (unsigned int i = 0; i < p->nr_handlers; i++)
			free(p->handlers[i].buf);
		free(p->handlers);
	}
	rmap_free(p);
	free(p->zero);
	free(p->unuse_buf);
	free(p->regions);
	free(p->by_id);
	pthread_rwlock_destroy(&p->lock);
	pthread_mutex_destroy(&p->hand_lock);
	pthread_mutex_destroy(&p->unuse_lock);
	pthread_mutex_destroy(&p->kswapd_lock);
	pthread_cond_destroy(&p->kswapd_cond);
	free(p);
}

static int pager_alloc_buffers(struct uswap_pager *p)
{
	size_t span = (size_t)(1 + p->ra_folios) * p->folio_bytes;

	p->zero = aligned_alloc(USWAP_PAGE_SIZE, span);
	p->unuse_buf = aligned_alloc(USWAP_PAGE_SIZE, p->folio_bytes);
	p->handlers = aligned_alloc(CACHELINE, p->nr_handlers * sizeof(*p->handlers));
	if (!p->zero || !p->unuse_buf || !p->handlers)
		return -ENOMEM;
	memset(p->zero, 0, span);
	memset(p->handlers, 0, p->nr_handlers * sizeof(*p->handlers));
	for (unsigned int i = 0; i < p->nr_handlers; i++) {
		p->handlers[i].p = p;
		p->handlers[i].id = i;
		p->handlers[i].buf = aligned_alloc(USWAP_PAGE_SIZE, span);
		if (!p->handlers[i].buf)
			return -ENOMEM;
	}
	return 0;
}

USWAP_API int uswap_pager_create(struct uswap *u, const struct uswap_pager_config *cfg,
				 struct uswap_pager **out)
{
	pthread_rwlockattr_t attr;
	struct uffd_info info;
	struct uswap_pager *p;
	int err;

	if (!u || !cfg || !out)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->uffd = -1;
	p->stop_fd = -1;
	p->pagemap = -1;
	p->u = u;
	/* Writers first: region create/destroy must not starve behind a
	 * steady stream of faults. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&p->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&p->hand_lock, NULL);
	pthread_mutex_init(&p->unuse_lock, NULL);
	pthread_mutex_init(&p->kswapd_lock, NULL);
	pthread_condattr_t cattr; /* kswapd's group poll: a monotonic timeout */

	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&p->kswapd_cond, &cattr);
	pthread_condattr_destroy(&cattr);
	err = config_apply(p, cfg);
	if (!err)
		err = pager_alloc_buffers(p);
	if (err) {
		p->nr_handlers = p->handlers ? p->nr_handlers : 0;
		pager_free(p);
		return err;
	}
	if (cfg->target) {
		err = target_open(p, cfg->target);
	} else {
		p->uffd = uffd_open(cfg->flags, &info);
		err = p->uffd < 0 ? p->uffd : 0;
		p->user_mode_only = info.user_mode_only;
		p->use_poison = info.poison;
		p->has_move = info.move;
		p->thread_id = info.thread_id;
	}
	if (err) {
		pager_free(p);
		return err;
	}
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->stop_fd < 0) {
		pager_free(p);
		return -ENOMEM;
	}
	err = stage_init(p);
	if (err) {
		pager_free(p);
		return err;
	}
	err = handlers_start(p);
	if (!err && (err = kswapd_start(p)))
		handlers_stop(p);
	if (err) {
		pager_free(p);
		return err == -ENOMEM ? err : -EAGAIN;
	}
	if (!p->remote) /* one owner per instance; a target's pagers share it */
		uswap_set_unuse(u, pager_unuse, p);
	*out = p;
	return 0;
}

USWAP_API void uswap_pager_destroy(struct uswap_pager *p)
{
	if (!p)
		return;
	region_destroy_all(p);
	if (!p->remote)
		uswap_set_unuse(p->u, NULL, NULL);
	atomic_store_explicit(&p->stopping, true, memory_order_release);
	kswapd_stop(p);
	handlers_stop(p);
	pager_free(p);
}

USWAP_API void uswap_pager_forget(struct uswap_pager *p)
{
	if (!p)
		return;
	/* Not freed: its locks may be held by threads the child lacks. The
	 * child's copy of the memory costs nothing until written. */
	close(p->uffd);
	close(p->stop_fd);
	if (p->stage_pagemap >= 0)
		close(p->stage_pagemap);
}

/* ------------------------------------------------------------------------
 * Statistics
 * ---------------------------------------------------------------------- */

static void latency_summary(struct uswap_pager *p, struct uswap_pager_stats *st)
{
	uint64_t total = 0, p50 = 0, p99 = 0, seen = 0, max = 0;
	uint64_t *hist = calloc(LAT_BUCKETS, sizeof(*hist));

	if (!hist)
		return;
	for (unsigned int i = 0; i < p->nr_handlers; i++) {
		struct pager_handler *h = &p->handlers[i];
		uint64_t m = atomic_load_explicit(&h->lat_max, memory_order_relaxed);

		for (unsigned int b = 0; b < LAT_BUCKETS; b++)
			hist[b] += atomic_load_explicit(&h->lat[b], memory_order_relaxed);
		if (m > max)
			max = m;
	}
	for (unsigned int b = 0; b < LAT_BUCKETS; b++)
		total += hist[b];
	for (unsigned int b = 0; b < LAT_BUCKETS && total; b++) {
		seen += hist[b];
		if (!p50 && seen * 2 >= total)
			p50 = lat_value(b);
		if (!p99 && seen * 100 >= total * 99) {
			p99 = lat_value(b);
			break;
		}
	}
	free(hist);
	st->fault_count = total;
	st->fault_ns_p50 = p50;
	st->fault_ns_p99 = p99;
	st->fault_ns_max = max;
}

USWAP_API int uswap_pager_stats_get(struct uswap_pager *p, struct uswap_pager_stats *st)
{
	struct uswap_pager_stats full;
	uint32_t size;

	if (!p || !st || st->size < 2 * sizeof(uint32_t))
		return -EINVAL;
	size = st->size < sizeof(full) ? st->size : (uint32_t)sizeof(full);
	memset(&full, 0, sizeof(full));
	full.size = size;
	full.version = USWAP_PAGER_STATS_VERSION;
	full.limit_bytes = p->limit_pages * USWAP_PAGE_SIZE;
	full.resident_bytes = atomic_load(&p->resident) * USWAP_PAGE_SIZE;
	full.resident_peak_bytes = atomic_load(&p->resident_peak) * USWAP_PAGE_SIZE;
	full.locked_bytes = atomic_load(&p->locked_apart) * USWAP_PAGE_SIZE;
	pthread_rwlock_rdlock(&p->lock);
	full.regions = p->nr_regions;
	pthread_rwlock_unlock(&p->lock);
#define X(name) full.name = atomic_load_explicit(&p->cnt.name, memory_order_relaxed);
	PAGER_COUNTERS(X)
#undef X
	full.kswapd = p->kswapd_on;
	latency_summary(p, &full);
	full.uffd_user_mode_only = p->user_mode_only;
	full.uffd_poison = p->use_poison;
	full.uffd_move = p->stage != NULL;
	memcpy(st, &full, size);
	return 0;
}

USWAP_API void uswap_pager_reset_latency(struct uswap_pager *p)
{
	if (!p)
		return;
	for (unsigned int i = 0; i < p->nr_handlers; i++) {
		struct pager_handler *h = &p->handlers[i];

		for (unsigned int b = 0; b < LAT_BUCKETS; b++)
			atomic_store_explicit(&h->lat[b], 0, memory_order_relaxed);
		atomic_store_explicit(&h->lat_max, 0, memory_order_relaxed);
	}
}
