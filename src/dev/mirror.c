// SPDX-License-Identifier: MIT
/*
 * mirror.c - the "mirror" wrapper: two devices holding the same slots
 * (RAID 1 for swap, meant for two independent NBD exports).
 *
 * Writes go to both legs; reads come from one, alternating between the
 * healthy legs, and a read that fails is tried on the other. A leg whose
 * write or read fails is marked failed: it holds stale data from then on,
 * so it is written and read no more, and the device carries on from the
 * other with nothing lost (the failure is counted and the failed leg
 * named in the statistics). A write is good when it reached at least one
 * healthy leg; only when both legs have failed do requests fail (-EIO).
 *
 * A failed leg can be replaced while the mirror is in use
 * (mirror_replace()): the new leg is "syncing" until a thread has copied
 * every slot that holds data (written since its last discard: a bit per
 * slot) from the healthy leg, chunk by chunk; an empty slot is not even
 * read, which a crypt leg could not do. It is read from only
 * once the copy is complete. Writes meanwhile are made synchronously under
 * the lock of their chunk, which the copy holds while it copies that
 * chunk: a write to a chunk already copied goes to both legs, a write to
 * one not yet copied to the healthy leg only (the copy brings it over
 * later), so the copy never overwrites newer data; a discard takes the
 * chunk's lock too, so a slot freed meanwhile is not brought over. A
 * write or discard that began under one resync and takes its chunk's
 * lock under the next (sync_gen) starts again; one that was under way
 * outside the locks when the resync began is waited for (writers). The
 * replaced leg is closed with the mirror (a request to it may still be
 * in flight); its late errors are its own: a leg is failed only through
 * the backend it holds now, and a leg's backend is read before its
 * health and again after (healthy_backend()).
 *
 * The geometry is the smaller leg's: nr_slots the smaller, first_slot the
 * larger of the two. Asynchronous requests are split into one request
 * per leg and completed when the legs' completions are in (reap reaps
 * both legs); a failed read is resubmitted to the other leg from its
 * done(), which the backend contract allows.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dev/dev_internal.h"

#define MIRROR_CHUNK       512u /* slots copied at once; a folio never spans two */
#define MIRROR_LOCKS       64u  /* chunk locks, by chunk index modulo */
#define MIRROR_MAX_RETIRED 8u   /* replacements per mirror */

struct mirror_backend {
	struct backend b;            /* first */
	struct backend *leg[2];      /* owned */
	_Atomic bool failed[2];
	_Atomic unsigned int turn;   /* which leg reads next */
	_Atomic uint64_t nr_failover, nr_leg_errors[2];
	_Atomic unsigned int inflight[2]; /* children submitted, not done */

	/* Resync of a replaced leg */
	_Atomic unsigned int writers; /* writes and discards under way outside
					chunk locks (sync, or async until
					complete) */
	_Atomic int sync_leg;        /* the leg being copied to, or -1 */
	_Atomic uint64_t sync_gen;   /* resyncs begun: a write or discard
					that saw another resync's leg does
					its work again */
	_Atomic uint64_t synced_upto; /* slots below this are copied */
	_Atomic uint64_t nr_resynced; /* slots copied, all resyncs */
	_Atomic uint64_t *stored;    /* bit per slot: written since its last
					discard, what a resync copies */
	pthread_t sync_thread;
	bool sync_started;           /* sync_thread to join */
	_Atomic bool sync_stop;
	pthread_mutex_t chunk_lock[MIRROR_LOCKS];
	struct backend *retired[MIRROR_MAX_RETIRED]; /* replaced legs, owned */
	unsigned int nr_retired;
};

/* One request on its way through the legs. */
struct mirror_req {
	struct mirror_backend *mb;
	struct backend_io *parent;
	struct backend_io child[2];
	_Atomic unsigned int pending;
	int leg_result[2];
	bool skip[2];                /* WRITE: leg failed before, not written */
	int read_leg;                /* READ: the leg being read */
	struct backend *lb[2];       /* the legs' backends it went to */
	bool retried;                /* READ: the other leg was tried too */
};

static inline struct mirror_backend *to_mirror(struct backend *b)
{
	return (struct mirror_backend *)b;
}

/* The stored bits of slots [@slot, @slot + @nr): set before a write
 * reaches a leg, cleared by a discard before it does. */
static void stored_mark(struct mirror_backend *mb, uint64_t slot, uint64_t nr, bool on)
{
	for (uint64_t s = slot; s < slot + nr; s++) {
		uint64_t bit = UINT64_C(1) << (s % 64);

		if (on)
			atomic_fetch_or_explicit(&mb->stored[s / 64], bit, memory_order_relaxed);
		else
			atomic_fetch_and_explicit(&mb->stored[s / 64], ~bit, memory_order_relaxed);
	}
}

static bool stored(struct mirror_backend *mb, uint64_t s)
{
	return atomic_load_explicit(&mb->stored[s / 64], memory_order_relaxed) >> (s % 64) & 1;
}

static bool healthy(struct mirror_backend *mb, int leg)
{
	return !atomic_load_explicit(&mb->failed[leg], memory_order_relaxed) &&
	       atomic_load_explicit(&mb->sync_leg, memory_order_acquire) != leg;
}

static int syncing_leg(struct mirror_backend *mb)
{
	return atomic_load_explicit(&mb->sync_leg, memory_order_acquire);
}

/* The backend of leg @leg while a resync or the caller holds it still. */
static struct backend *leg_backend(struct mirror_backend *mb, int leg)
{
	return __atomic_load_n(&mb->leg[leg], __ATOMIC_SEQ_CST);
}

/* Leg @leg failed, on its backend @lb: from now on it is stale. Counted
 * once. A backend replaced meanwhile (mirror_replace()) fails alone: its
 * late errors must not fail the leg that took its place. */
static void leg_failed(struct mirror_backend *mb, int leg, const struct backend *lb)
{
	if (leg_backend(mb, leg) != lb)
		return;
	atomic_fetch_add_explicit(&mb->nr_leg_errors[leg], 1, memory_order_relaxed);
	if (!atomic_exchange(&mb->failed[leg], true))
		atomic_fetch_add_explicit(&mb->nr_failover, 1, memory_order_relaxed);
}

/* Leg @leg's backend if the leg is healthy, else NULL. The backend is
 * loaded before the health check and again after it: a replacement
 * stores sync_leg before the new backend, so a pair of equal loads
 * around a healthy check names the backend that was healthy, never one
 * replaced meanwhile (which may have gone through a whole resync while
 * this thread was not running) nor a new one still being copied to. */
static struct backend *healthy_backend(struct mirror_backend *mb, int leg)
{
	for (;;) {
		struct backend *lb = leg_backend(mb, leg);

		if (!healthy(mb, leg))
			return NULL;
		if (leg_backend(mb, leg) == lb)
			return lb;
	}
}

/* Synchronous I/O on leg @leg's backend @lb; a failure fails the leg. */
static int leg_read(struct mirror_backend *mb, int leg, struct backend *lb, uint64_t slot,
		    unsigned int order, void *buf)
{
	int rc = lb->ops->read(lb, slot, order, buf);

	if (rc)
		leg_failed(mb, leg, lb);
	return rc;
}

static int leg_write(struct mirror_backend *mb, int leg, struct backend *lb, uint64_t slot,
		     unsigned int order, const void *buf)
{
	int rc = lb->ops->write(lb, slot, order, buf);

	if (rc)
		leg_failed(mb, leg, lb);
	return rc;
}

/* The leg to read first, the healthy ones in turn, and its backend in
 * *@lb. -1: none. */
static int read_leg(struct mirror_backend *mb, struct backend **lb)
{
	int first = (int)(atomic_fetch_add_explicit(&mb->turn, 1, memory_order_relaxed) & 1);

	if ((*lb = healthy_backend(mb, first)))
		return first;
	return (*lb = healthy_backend(mb, !first)) ? !first : -1;
}

/* ------------------------------------------------------------------ */
/* Synchronous I/O */

static int mirror_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	struct mirror_backend *mb = to_mirror(b);
	int rc = backend_check_io(b, slot, order);
	struct backend *lb;
	int leg;

	if (rc)
		return rc;
	leg = read_leg(mb, &lb);
	for (int tries = 0; leg >= 0 && tries < 2; tries++) {
		if (!leg_read(mb, leg, lb, slot, order, buf))
			return 0;
		leg = (lb = healthy_backend(mb, !leg)) ? !leg : -1;
	}
	return -EIO;
}

/* A write while a leg is being copied to (see the file comment). */
/* A write while leg @sleg is being copied to by resync @gen (see the file
 * comment). Return: 0, -EIO, or -EAGAIN: another resync began before or
 * while we wrote, so the legs we wrote may not be the ones that count
 * now: the caller writes again. Context: not counted in mb->writers
 * (the resync must not wait for us): the generation, checked under the
 * chunk's lock before and after the writes, orders us instead. */
static int write_syncing(struct mirror_backend *mb, int sleg, uint64_t gen, uint64_t slot,
			 unsigned int order, const void *buf)
{
	pthread_mutex_t *lock = &mb->chunk_lock[(slot / MIRROR_CHUNK) % MIRROR_LOCKS];
	int other = !sleg, rc = -EIO;
	struct backend *lb;

	pthread_mutex_lock(lock);
	if (atomic_load(&mb->sync_gen) != gen) {
		pthread_mutex_unlock(lock);
		return -EAGAIN;
	}
	stored_mark(mb, slot, UINT64_C(1) << order, true);
	lb = healthy_backend(mb, other);
	if (lb && leg_write(mb, other, lb, slot, order, buf) == 0)
		rc = 0;
	if (!rc && slot < atomic_load_explicit(&mb->synced_upto, memory_order_acquire))
		(void)leg_write(mb, sleg, leg_backend(mb, sleg), slot, order,
				buf); /* a failure stops the resync */
	if (!rc && atomic_load(&mb->sync_gen) != gen)
		rc = -EAGAIN;
	if (rc) /* stored nowhere (yet): nothing for a resync to copy */
		stored_mark(mb, slot, UINT64_C(1) << order, false);
	pthread_mutex_unlock(lock);
	return rc;
}

static int mirror_write(struct backend *b, uint64_t slot, unsigned int order,
			const void *buf)
{
	struct mirror_backend *mb = to_mirror(b);
	int rc = backend_check_io(b, slot, order);
	bool stored = false;
	int sleg;

	if (rc)
		return rc;
	/* Counted before the check: a resync that begins now waits for us
	 * (resync_main()), or we see it and write under its locks. */
	for (;;) {
		uint64_t gen;

		atomic_fetch_add(&mb->writers, 1);
		sleg = syncing_leg(mb);
		gen = atomic_load(&mb->sync_gen);
		if (sleg < 0)
			break;
		atomic_fetch_sub(&mb->writers, 1);
		rc = write_syncing(mb, sleg, gen, slot, order, buf);
		if (rc != -EAGAIN)
			return rc;
	}
	stored_mark(mb, slot, UINT64_C(1) << order, true);
	for (int leg = 0; leg < 2; leg++) {
		struct backend *lb = healthy_backend(mb, leg);

		if (lb && leg_write(mb, leg, lb, slot, order, buf) == 0)
			stored = true;
	}
	/* Stored nowhere: the swap path frees the slots without a discard,
	 * and a crypt leg could not read back what it never wrote. */
	if (!stored)
		stored_mark(mb, slot, UINT64_C(1) << order, false);
	atomic_fetch_sub(&mb->writers, 1);
	return stored ? 0 : -EIO;
}

/* A discard while a leg is being copied to: under the chunks' locks, so
 * the copy never brings over a slot freed meanwhile; the copied part of
 * the syncing leg is discarded too (a crypt leg wipes its keys). */
static int discard_syncing(struct mirror_backend *mb, int sleg, uint64_t gen, uint64_t slot,
			   uint64_t nr)
{
	for (uint64_t s = slot, end = slot + nr, next; s < end; s = next) {
		pthread_mutex_t *lock = &mb->chunk_lock[(s / MIRROR_CHUNK) % MIRROR_LOCKS];

		next = (s / MIRROR_CHUNK + 1) * MIRROR_CHUNK;
		if (next > end)
			next = end;
		pthread_mutex_lock(lock);
		if (atomic_load(&mb->sync_gen) != gen) { /* as write_syncing() */
			pthread_mutex_unlock(lock);
			return -EAGAIN;
		}
		stored_mark(mb, s, next - s, false);
		for (int leg = 0; leg < 2; leg++) {
			struct backend *lb = leg == sleg ? leg_backend(mb, leg)
							 : healthy_backend(mb, leg);

			if (lb && (leg != sleg || s < atomic_load_explicit(&mb->synced_upto,
									  memory_order_acquire)))
				(void)lb->ops->discard(lb, s, next - s);
		}
		pthread_mutex_unlock(lock);
	}
	return 0;
}

static int mirror_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct mirror_backend *mb = to_mirror(b);
	int rc = backend_check_range(b, slot, nr_slots), sleg;

	if (rc)
		return rc;
	/* Counted as a write is (mirror_write()): a resync that begins now
	 * waits for us, so it never reads a slot we empty on its source
	 * after it saw the slot's bit (a crypt leg fails that read). */
	for (;;) {
		uint64_t gen;

		atomic_fetch_add(&mb->writers, 1);
		sleg = syncing_leg(mb);
		gen = atomic_load(&mb->sync_gen);
		if (sleg < 0)
			break;
		atomic_fetch_sub(&mb->writers, 1);
		if (discard_syncing(mb, sleg, gen, slot, nr_slots) != -EAGAIN)
			return 0;
	}
	stored_mark(mb, slot, nr_slots, false);
	for (int leg = 0; leg < 2; leg++) {
		struct backend *lb = healthy_backend(mb, leg);

		if (lb)
			(void)lb->ops->discard(lb, slot, nr_slots);
	}
	atomic_fetch_sub(&mb->writers, 1);
	return 0; /* a discard that did not happen leaves stale data: allowed */
}

static int mirror_flush(struct backend *b)
{
	struct mirror_backend *mb = to_mirror(b);
	bool any = false;

	for (int leg = 0; leg < 2; leg++) {
		struct backend *lb = healthy_backend(mb, leg);

		if (!lb)
			continue;
		if (lb->ops->flush(lb) == 0)
			any = true;
		else
			leg_failed(mb, leg, lb);
	}
	return any ? 0 : -EIO;
}

/* ------------------------------------------------------------------ */
/* Asynchronous I/O */

static void req_finish(struct mirror_req *r, int result)
{
	struct backend_io *io = r->parent;

	free(r);
	io->result = result;
	if (io->done)
		io->done(io);
}

/* A write leg completed (or was skipped); the last one decides: good if
 * one leg stored it. */
static void write_done(struct backend_io *child)
{
	struct mirror_req *r = child->priv;
	int leg = child == &r->child[0] ? 0 : 1;

	r->leg_result[leg] = child->result;
	if (!r->skip[leg]) {
		atomic_fetch_sub_explicit(&r->mb->inflight[leg], 1, memory_order_relaxed);
		if (child->result)
			leg_failed(r->mb, leg, r->lb[leg]);
	}
	if (atomic_fetch_sub_explicit(&r->pending, 1, memory_order_acq_rel) != 1)
		return;
	if (r->leg_result[0] && r->leg_result[1]) /* stored nowhere (mirror_write()) */
		stored_mark(r->mb, r->parent->slot, UINT64_C(1) << r->parent->order, false);
	atomic_fetch_sub(&r->mb->writers, 1);
	req_finish(r, r->leg_result[0] == 0 || r->leg_result[1] == 0 ? 0 : -EIO);
}

static void submit_read(struct mirror_req *r, int leg, struct backend *lb);

/* The read leg completed: done, or try the other leg once. */
static void read_done(struct backend_io *child)
{
	struct mirror_req *r = child->priv;
	int leg = r->read_leg;
	struct backend *lb;

	atomic_fetch_sub_explicit(&r->mb->inflight[leg], 1, memory_order_relaxed);
	if (!child->result) {
		req_finish(r, 0);
		return;
	}
	leg_failed(r->mb, leg, r->lb[leg]);
	if (!r->retried && (lb = healthy_backend(r->mb, !leg))) {
		r->retried = true;
		submit_read(r, !leg, lb);
		return;
	}
	req_finish(r, -EIO);
}

static void submit_read(struct mirror_req *r, int leg, struct backend *lb)
{
	struct backend_io *c = &r->child[leg];

	r->lb[leg] = lb;
	r->read_leg = leg;
	*c = *r->parent;
	c->done = read_done;
	c->priv = r;
	atomic_fetch_add_explicit(&r->mb->inflight[leg], 1, memory_order_relaxed);
	if (lb->ops->submit(lb, c)) {
		c->result = -EIO;
		read_done(c);
	}
}

static int mirror_submit(struct backend *b, struct backend_io *io)
{
	struct mirror_backend *mb = to_mirror(b);
	struct mirror_req *r;
	int rc, leg;

	if (!io)
		return -EINVAL;
	if (io->op == BACKEND_DISCARD)
		return backend_submit_sync(b, io);
	if (io->op == BACKEND_WRITE) {
		/* Counted until complete (write_done()); while a leg is
		 * copied to, writes run under their chunk's lock,
		 * synchronously. */
		atomic_fetch_add(&mb->writers, 1);
		if (syncing_leg(mb) >= 0) {
			atomic_fetch_sub(&mb->writers, 1);
			return backend_submit_sync(b, io);
		}
	}
	rc = backend_check_io(b, io->slot, io->order);
	r = rc ? NULL : calloc(1, sizeof(*r));
	if (!r) {
		if (io->op == BACKEND_WRITE)
			atomic_fetch_sub(&mb->writers, 1);
		io->result = rc ? rc : -ENOMEM;
		if (io->done)
			io->done(io);
		return 0;
	}
	r->mb = mb;
	r->parent = io;
	if (io->op == BACKEND_READ) {
		struct backend *lb;

		leg = read_leg(mb, &lb);
		if (leg < 0)
			req_finish(r, -EIO);
		else
			submit_read(r, leg, lb);
		return 0;
	}
	/* WRITE: one child per healthy leg; the pending count covers both
	 * children before either can complete. */
	stored_mark(mb, io->slot, UINT64_C(1) << io->order, true);
	atomic_init(&r->pending, 2);
	for (leg = 0; leg < 2; leg++) {
		struct backend_io *c = &r->child[leg];

		*c = *io;
		c->done = write_done;
		c->priv = r;
		r->lb[leg] = healthy_backend(mb, leg);
		if (!r->lb[leg]) {
			r->skip[leg] = true;
			c->result = -EIO;
			write_done(c);
			continue;
		}
		atomic_fetch_add_explicit(&mb->inflight[leg], 1, memory_order_relaxed);
		if (r->lb[leg]->ops->submit(r->lb[leg], c)) {
			c->result = -EIO;
			write_done(c);
		}
	}
	return 0;
}

/* reap: what both legs have finished; if that is nothing and more is
 * wanted, wait on a leg that has children in flight. Return: leg
 * completions reaped (a request may need two). */
static int mirror_reap(struct backend *b, unsigned int min_complete)
{
	struct mirror_backend *mb = to_mirror(b);
	int total = 0;

	for (int leg = 0; leg < 2; leg++) {
		struct backend *lb = leg_backend(mb, leg);
		int n = lb->ops->reap(lb, 0);

		total += n > 0 ? n : 0;
	}
	for (int leg = 0; !total && min_complete && leg < 2; leg++) {
		if (atomic_load_explicit(&mb->inflight[leg], memory_order_relaxed)) {
			struct backend *lb = leg_backend(mb, leg);
			int n = lb->ops->reap(lb, 1);

			total += n > 0 ? n : 0;
		}
	}
	return total;
}

/* ------------------------------------------------------------------ */

static void mirror_print_stats(struct backend *b, FILE *out)
{
	struct mirror_backend *mb = to_mirror(b);

	for (int leg = 0; leg < 2; leg++)
		fprintf(out, "leg%d_name %s\nleg%d_state %s\nleg%d_errors %llu\n", leg,
			leg_backend(mb, leg)->name, leg, syncing_leg(mb) == leg ? "syncing" :
			healthy(mb, leg) ? "healthy" : "failed", leg,
			(unsigned long long)atomic_load(&mb->nr_leg_errors[leg]));
	fprintf(out, "failovers %llu\nresynced_slots %llu\n",
		(unsigned long long)atomic_load(&mb->nr_failover),
		(unsigned long long)atomic_load(&mb->nr_resynced));
}

static void mirror_close(struct backend *b)
{
	struct mirror_backend *mb = to_mirror(b);

	atomic_store(&mb->sync_stop, true);
	if (mb->sync_started)
		pthread_join(mb->sync_thread, NULL);
	for (int leg = 0; leg < 2; leg++)
		mb->leg[leg]->ops->close(mb->leg[leg]);
	for (unsigned int i = 0; i < mb->nr_retired; i++)
		mb->retired[i]->ops->close(mb->retired[i]);
	for (unsigned int i = 0; i < MIRROR_LOCKS; i++)
		pthread_mutex_destroy(&mb->chunk_lock[i]);
	free(mb->stored);
	free(mb);
}

static const struct backend_ops mirror_ops = {
	.kind = "mirror",
	.read = mirror_read,
	.write = mirror_write,
	.discard = mirror_discard,
	.flush = mirror_flush,
	.submit = mirror_submit,
	.reap = mirror_reap,
	.print_stats = mirror_print_stats,
	.close = mirror_close,
};

int mirror_info(struct backend *b, bool failed[2], uint64_t *failovers)
{
	struct mirror_backend *mb;

	if (!b || b->ops != &mirror_ops)
		return -EINVAL;
	mb = to_mirror(b);
	failed[0] = !healthy(mb, 0);
	failed[1] = !healthy(mb, 1);
	*failovers = atomic_load(&mb->nr_failover);
	return 0;
}

struct backend *mirror_leg(struct backend *b, int leg)
{
	return b && b->ops == &mirror_ops && (leg == 0 || leg == 1) ? to_mirror(b)->leg[leg]
								   : NULL;
}

bool mirror_syncing(struct backend *b)
{
	return b && b->ops == &mirror_ops && syncing_leg(to_mirror(b)) >= 0;
}

/* ------------------------------------------------------------------ */
/* Resync */

/* Copy the stored slots of chunk @c from leg @from to leg @to, holding
 * the chunk's lock. Return: 0, or -EIO (a leg failed: marked). */
static int copy_chunk(struct mirror_backend *mb, int from, int to, uint64_t c,
		      unsigned char *buf)
{
	pthread_mutex_t *lock = &mb->chunk_lock[c % MIRROR_LOCKS];
	uint64_t first = c * MIRROR_CHUNK, end = first + MIRROR_CHUNK;
	uint64_t copied = 0;
	int rc = 0;

	if (first < mb->b.first_slot)
		first = mb->b.first_slot;
	if (end > mb->b.nr_slots)
		end = mb->b.nr_slots;
	pthread_mutex_lock(lock);
	for (uint64_t s = first; !rc && s < end; s++) {
		if (!stored(mb, s))
			continue; /* nothing there: a crypt leg cannot even read it */
		if (leg_read(mb, from, leg_backend(mb, from), s, 0, buf) ||
		    leg_write(mb, to, leg_backend(mb, to), s, 0, buf))
			rc = -EIO;
		else
			copied++;
	}
	if (!rc) {
		atomic_fetch_add(&mb->nr_resynced, copied);
		atomic_store_explicit(&mb->synced_upto, (c + 1) * MIRROR_CHUNK,
				      memory_order_release);
	}
	pthread_mutex_unlock(lock);
	return rc;
}

static void *resync_main(void *arg)
{
	struct mirror_backend *mb = arg;
	int to = syncing_leg(mb), from = !to;
	unsigned char *buf = malloc(USWAP_PAGE_SIZE);
	uint64_t chunks = (mb->b.nr_slots + MIRROR_CHUNK - 1) / MIRROR_CHUNK;
	int rc = buf ? 0 : -ENOMEM;

	/* Writes that began before the resync did, and so write the healthy
	 * leg alone, land before anything is copied. */
	while (atomic_load(&mb->writers) && !atomic_load(&mb->sync_stop))
		sched_yield();
	for (uint64_t c = 0; !rc && c < chunks; c++) {
		if (atomic_load(&mb->sync_stop) ||
		    atomic_load_explicit(&mb->failed[to], memory_order_relaxed))
			rc = -ECANCELED;
		else
			rc = copy_chunk(mb, from, to, c, buf);
	}
	free(buf);
	if (rc && !atomic_load(&mb->sync_stop))
		atomic_store(&mb->failed[to], true); /* stays failed: replace again */
	atomic_store_explicit(&mb->sync_leg, -1, memory_order_release);
	return NULL;
}

int mirror_replace(struct backend *b, struct backend *leg, char *err, size_t errlen)
{
	struct mirror_backend *mb;
	int bad;

	if (!b || b->ops != &mirror_ops || !leg)
		return backend_errf(err, errlen, -EINVAL, "not a mirror");
	mb = to_mirror(b);
	if (syncing_leg(mb) >= 0)
		return backend_errf(err, errlen, -EBUSY, "%s: a resync is running", b->name);
	bad = !healthy(mb, 0) ? 0 : !healthy(mb, 1) ? 1 : -1;
	if (bad < 0 || !healthy(mb, !bad))
		return backend_errf(err, errlen, -EINVAL, "%s: a replacement needs one "
				    "failed leg and one healthy leg", b->name);
	if (leg->nr_slots < mb->b.nr_slots)
		return backend_errf(err, errlen, -EINVAL, "%s: the replacement holds %llu "
				    "slots, the mirror %llu", b->name,
				    (unsigned long long)leg->nr_slots,
				    (unsigned long long)mb->b.nr_slots);
	/* The resync would copy the healthy leg's pages, opened, onto it. */
	if (mb->b.encrypted && !leg->encrypted)
		return backend_errf(err, errlen, -EINVAL, "%s: its legs are encrypted and "
				    "the replacement is not: it would hold the pages in the "
				    "clear (wrap it in crypt:)", b->name);
	if (mb->nr_retired == MIRROR_MAX_RETIRED)
		return backend_errf(err, errlen, -ENOSPC, "%s: replaced %u times already",
				    b->name, MIRROR_MAX_RETIRED);
	if (mb->sync_started) {
		pthread_join(mb->sync_thread, NULL);
		mb->sync_started = false;
	}
	/* The old leg may still have requests in flight: kept until close. */
	mb->retired[mb->nr_retired++] = mb->leg[bad];
	atomic_store(&mb->synced_upto, 0);
	atomic_fetch_add(&mb->sync_gen, 1); /* before sync_leg: see mirror_write() */
	atomic_store(&mb->sync_leg, bad);
	__atomic_store_n(&mb->leg[bad], leg, __ATOMIC_SEQ_CST); /* after sync_leg */
	atomic_store(&mb->failed[bad], false);
	if (pthread_create(&mb->sync_thread, NULL, resync_main, mb)) {
		atomic_store(&mb->failed[bad], true);
		atomic_store(&mb->sync_leg, -1);
		return backend_errf(err, errlen, -EAGAIN, "%s: cannot start the resync",
				    b->name);
	}
	mb->sync_started = true;
	return 0;
}

int backend_mirror_open(struct backend *a, struct backend *b, struct backend **out,
			char *err, size_t errlen)
{
	uint64_t nr_slots = a->nr_slots < b->nr_slots ? a->nr_slots : b->nr_slots;
	struct mirror_backend *mb = calloc(1, sizeof(*mb));

	if (mb)
		mb->stored = calloc((nr_slots + 63) / 64, sizeof(*mb->stored));
	if (!mb || !mb->stored) {
		free(mb);
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	}
	mb->b.ops = &mirror_ops;
	mb->leg[0] = a;
	mb->leg[1] = b;
	atomic_init(&mb->sync_leg, -1);
	for (unsigned int i = 0; i < MIRROR_LOCKS; i++)
		pthread_mutex_init(&mb->chunk_lock[i], NULL);
	mb->b.nr_slots = nr_slots;
	mb->b.first_slot = a->first_slot > b->first_slot ? a->first_slot : b->first_slot;
	mb->b.free_notify = a->free_notify || b->free_notify;
	mb->b.discard_clusters = a->discard_clusters || b->discard_clusters;
	mb->b.encrypted = a->encrypted && b->encrypted;
	snprintf(mb->b.name, sizeof(mb->b.name), "mirror:%.27s|%.27s", a->name, b->name);
	*out = &mb->b;
	return 0;
}
