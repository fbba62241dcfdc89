// SPDX-License-Identifier: MIT
/*
 * stress_swap.c - the swap-path half of `uswap stress`: workers that swap
 * folios out and in, dup and free them, a shadow model that knows every
 * page's last contents and every slot's references, the owner's swapoff
 * callback, and the oracle run at checkpoints.
 *
 * An object is one folio of order 0..4: empty, in memory, or swapped out
 * at an entry. Its contents are not stored: page p of an object is made
 * from (stamp, version, p), so a swap-in is checked by making the pages
 * again. Dup makes a second object share the entry (a fork); each then
 * reads and frees it on its own. refs[type][offset] holds the references
 * the model believes each slot has; a swap-out that returns a slot the
 * model still holds is a double allocation.
 */
#include "cli.h"
#include "stress.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uswap/lab.h>
#include <uswap/slots.h>

enum obj_state { OBJ_EMPTY, OBJ_MEM, OBJ_SWAPPED };

struct sobj {
	pthread_mutex_t lock;
	uint8_t state;
	uint8_t order;
	bool split;              /* swapped as 2^order single pages, after
				    -E2BIG: entry[p] holds page p */
	uint64_t stamp, version; /* what the pages hold */
	uswap_entry_t entry[1u << STRESS_MAX_ORDER]; /* OBJ_SWAPPED: the
				    folio's first slot, or each page's */
};

/* A swapped object is one folio at entry[0], or 2^order pages. */
static unsigned int nr_pieces(const struct sobj *o)
{
	return o->split ? 1u << o->order : 1;
}

static unsigned int piece_order(const struct sobj *o)
{
	return o->split ? 0 : o->order;
}

/* The slot that holds page @p of a swapped object. */
static uswap_entry_t page_slot(const struct sobj *o, unsigned int p)
{
	if (o->split)
		return o->entry[p];
	return uswap_entry(uswap_entry_type(o->entry[0]), uswap_entry_offset(o->entry[0]) + p);
}

struct sworker {
	struct stress *s;
	pthread_t th;
	unsigned int id;
	uint64_t rng;
	unsigned char *buf, *want; /* one folio of the largest order each */
};

struct stress_swap {
	struct sobj *obj;
	unsigned int nr;
	_Atomic uint16_t *refs[USWAP_MAX_DEVICES]; /* per type, [nr_slots] */
	uint64_t nr_slots[USWAP_MAX_DEVICES];
	struct sworker *w;
	unsigned int nr_w;
	_Atomic uint64_t next_stamp;
	_Atomic bool skipped_free;   /* STRESS_MUTATE_SKIP_FREE done */
	bool flipped;                /* STRESS_MUTATE_FLIP_BYTE done */
	struct sobj *_Atomic victim; /* ... on this object's page: it is read
					before it may be dropped */
	unsigned char *unuse_buf, *unuse_want;
};

#define FOLIO_MAX ((size_t)USWAP_PAGE_SIZE << STRESS_MAX_ORDER)

/* Page @p of an object: a header naming it, then words from a PRNG. */
static void make_page(unsigned char *page, uint64_t stamp, uint64_t version, unsigned int p)
{
	uint64_t *w = (uint64_t *)page, seed = stamp * 0x9e3779b97f4a7c15ull ^ version << 8 ^ p;

	w[0] = stamp;
	w[1] = version;
	w[2] = p;
	for (size_t i = 3; i < USWAP_PAGE_SIZE / 8; i++)
		w[i] = stress_rnd(&seed);
}

static void make_folio(unsigned char *buf, const struct sobj *o)
{
	for (unsigned int p = 0; p < 1u << o->order; p++)
		make_page(buf + (size_t)p * USWAP_PAGE_SIZE, o->stamp, o->version, p);
}

/* Orders as a kernel build mixes them: mostly 4 KiB, some mTHP. */
static unsigned int pick_order(uint64_t *rng)
{
	static const unsigned int pct[] = { 55, 10, 15, 5, 15 };
	unsigned int r = (unsigned int)(stress_rnd(rng) % 100);

	for (unsigned int o = 0; o <= STRESS_MAX_ORDER; o++) {
		if (r < pct[o])
			return o;
		r -= pct[o];
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * The reference model
 * ---------------------------------------------------------------------- */

static _Atomic uint16_t *ref_of(struct stress_swap *m, uswap_entry_t e, unsigned int i)
{
	unsigned int t = uswap_entry_type(e);
	uint64_t off = uswap_entry_offset(e) + i;

	return m->refs[t] && off < m->nr_slots[t] ? &m->refs[t][off] : NULL;
}

/* A swap-out handed us these slots: the model must hold none of them. */
static void refs_claim(struct stress *s, uswap_entry_t e, unsigned int order)
{
	for (unsigned int i = 0; i < 1u << order; i++) {
		_Atomic uint16_t *r = ref_of(s->swap, e, i);
		uint16_t old = r ? atomic_fetch_add(r, 1) : 1;

		if (old)
			stress_violation(s, &s->c.double_alloc,
					 "double allocation: slot %u:%llu handed out while the "
					 "model holds %u reference(s)", uswap_entry_type(e),
					 (unsigned long long)uswap_entry_offset(e) + i, old);
	}
}

static void refs_add(struct stress *s, uswap_entry_t e, unsigned int order, int delta)
{
	for (unsigned int i = 0; i < 1u << order; i++) {
		_Atomic uint16_t *r = ref_of(s->swap, e, i);
		uint16_t old = r ? atomic_fetch_add(r, (uint16_t)delta) : 0;

		if (delta < 0 && old == 0)
			stress_violation(s, &s->c.bad_refs, "model: slot %u:%llu dropped below 0",
					 uswap_entry_type(e),
					 (unsigned long long)uswap_entry_offset(e) + i);
	}
}

void stress_swap_on_swapon(struct stress *s, int type, uint64_t nr_slots)
{
	struct stress_swap *m = s->swap;

	m->refs[type] = calloc(nr_slots, sizeof(*m->refs[type]));
	m->nr_slots[type] = m->refs[type] ? nr_slots : 0;
	if (!m->refs[type])
		stress_violation(s, &s->c.bad_refs, "out of memory for the model of type %d",
				 type);
}

/* Swapoff returned 0: no slot of @type may be held any more. */
void stress_swap_on_swapoff(struct stress *s, int type)
{
	struct stress_swap *m = s->swap;

	for (uint64_t off = 0; off < m->nr_slots[type]; off++)
		if (atomic_load(&m->refs[type][off]))
			stress_violation(s, &s->c.lost,
					 "swapoff of type %d returned while the model holds slot "
					 "%llu", type, (unsigned long long)off);
	free(m->refs[type]);
	m->refs[type] = NULL;
	m->nr_slots[type] = 0;
}

/* ------------------------------------------------------------------------
 * Operations on one object (its lock held)
 * ---------------------------------------------------------------------- */

static struct uswap *swap_u(struct stress *s)
{
	return s->sets[0].u;
}

static void timed(struct stress *s, uint64_t t0)
{
	stress_latency(s, cli_now_ns() - t0);
}

static void free_pieces(struct stress *s, struct sobj *o, unsigned int nr);

/* One uswap_swap_out(); a slot it hands out is claimed in the model.
 * Return: its result. */
static int swap_out_one(struct stress *s, const unsigned char *buf, unsigned int order,
			unsigned int flags, uswap_entry_t *e)
{
	uint64_t t0 = cli_now_ns();
	int rc = uswap_swap_out(swap_u(s), buf, order, flags, e);

	timed(s, t0);
	if (rc == 0) {
		refs_claim(s, *e, order);
		atomic_fetch_add(&s->c.bytes_out, (uint64_t)USWAP_PAGE_SIZE << order);
	} else if (rc == -EIO) {
		atomic_fetch_add(&s->c.write_eio, 1);
	} else if (rc != -ENOSPC && rc != -E2BIG) {
		stress_violation(s, &s->c.bad_refs, "swap_out order %u: %s", order,
				 cli_errno_name(rc));
	}
	return rc;
}

/* Write the object's pages out: as one folio, or page by page when no
 * run of its order is left (-E2BIG: the caller splits, as the kernel's
 * reclaim does). Return: whether it is swapped now. */
static bool obj_swap_out(struct stress *s, struct sobj *o, unsigned char *buf, uint64_t *rng)
{
	unsigned int flags = stress_rnd(rng) % 10 == 0 ? USWAP_SWAP_KEEP_CACHE : 0;
	int rc;

	make_folio(buf, o);
	o->split = false;
	rc = swap_out_one(s, buf, o->order, flags, &o->entry[0]);
	if (rc == -E2BIG) {
		o->split = true;
		for (unsigned int p = 0; p < 1u << o->order; p++) {
			rc = swap_out_one(s, buf + (size_t)p * USWAP_PAGE_SIZE, 0, flags,
					  &o->entry[p]);
			if (rc) {
				free_pieces(s, o, p);
				break;
			}
		}
	}
	if (rc) {
		o->split = false;
		atomic_fetch_add(&s->c.out_kept, 1);
		return false;
	}
	o->state = OBJ_SWAPPED;
	atomic_fetch_add(&s->c.swap_out, 1);
	return true;
}

/* Drop the object's references to its first @nr pieces. */
static void free_pieces(struct stress *s, struct sobj *o, unsigned int nr)
{
	struct stress_swap *m = s->swap;
	unsigned int order = piece_order(o);

	for (unsigned int i = 0; i < nr; i++) {
		bool skip = false;
		int rc = 0;

		if (s->o->mutate == STRESS_MUTATE_SKIP_FREE && !atomic_load(&m->skipped_free) &&
		    atomic_load(&s->ops_done) > s->o->objects)
			skip = !atomic_exchange(&m->skipped_free, true);
		/* The model lets go first: once the library has, another
		 * worker may be handed these slots and claim them. */
		refs_add(s, o->entry[i], order, -1);
		if (!skip)
			rc = uswap_swap_free(swap_u(s), o->entry[i], order);
		if (rc)
			stress_violation(s, &s->c.bad_refs, "swap_free %u:%llu order %u: %s",
					 uswap_entry_type(o->entry[i]),
					 (unsigned long long)uswap_entry_offset(o->entry[i]),
					 order, cli_errno_name(rc));
	}
}

/* Drop the object's references to its slots (a free, munmap or exit). */
static void obj_free_entry(struct stress *s, struct sobj *o)
{
	free_pieces(s, o, nr_pieces(o));
	atomic_fetch_add(&s->c.free, 1);
}

/* Compare what came back with what the model says; report the first
 * wrong page. Return: whether every page is right. */
static bool obj_verify(struct stress *s, const struct sobj *o, const unsigned char *got,
		       unsigned char *want)
{
	make_folio(want, o);
	for (unsigned int p = 0; p < 1u << o->order; p++) {
		size_t at = (size_t)p * USWAP_PAGE_SIZE;

		if (memcmp(got + at, want + at, USWAP_PAGE_SIZE) == 0)
			continue;
		stress_violation(s, &s->c.wrong,
				 "wrong data: slot %u:%llu (page %u of an order-%u folio%s, "
				 "stamp %llu version %llu)", uswap_entry_type(page_slot(o, p)),
				 (unsigned long long)uswap_entry_offset(page_slot(o, p)), p,
				 o->order, o->split ? " swapped page by page" : "",
				 (unsigned long long)o->stamp, (unsigned long long)o->version);
		return false;
	}
	return true;
}

/* Read every piece of a swapped object into @buf. -EIO is a surfaced
 * error, counted. Return: 0 or the first error. */
static int read_pieces(struct stress *s, struct sobj *o, unsigned char *buf)
{
	unsigned int order = piece_order(o);

	for (unsigned int i = 0; i < nr_pieces(o); i++) {
		uint64_t t0 = cli_now_ns();
		int rc = uswap_swap_in(swap_u(s), o->entry[i], order,
				       buf + ((size_t)i << order) * USWAP_PAGE_SIZE);

		timed(s, t0);
		if (rc == -EIO) {
			atomic_fetch_add(&s->c.read_eio, 1);
			return rc;
		}
		if (rc < 0) {
			stress_violation(s, &s->c.lost, "swap_in of held slot %u:%llu: %s",
					 uswap_entry_type(o->entry[i]),
					 (unsigned long long)uswap_entry_offset(o->entry[i]),
					 cli_errno_name(rc));
			return rc;
		}
	}
	return 0;
}

/* Read the object back and check it. After -EIO the object stays
 * swapped (the read is retried later). Return: 0 with the object in
 * memory, or -errno. */
static int obj_swap_in(struct stress *s, struct sobj *o, unsigned char *buf,
		       unsigned char *want)
{
	int rc = read_pieces(s, o, buf);

	if (rc)
		return rc;
	atomic_fetch_add(&s->c.swap_in, 1);
	atomic_fetch_add(&s->c.bytes_in, (uint64_t)USWAP_PAGE_SIZE << o->order);
	if (!obj_verify(s, o, buf, want))
		o->version++; /* reported; the program writes it anew */
	obj_free_entry(s, o);
	o->state = OBJ_MEM;
	return 0;
}

/* Fork: an empty object @c gets its own reference to @o's slots. */
static void obj_dup(struct stress *s, struct sobj *o, struct sobj *c)
{
	for (unsigned int i = 0; i < 1u << o->order; i++) {
		uswap_entry_t e = page_slot(o, i);
		int rc = uswap_dup(swap_u(s), e);

		if (rc) {
			stress_violation(s, &s->c.bad_refs, "dup %u:%llu: %s",
					 uswap_entry_type(e),
					 (unsigned long long)uswap_entry_offset(e),
					 cli_errno_name(rc));
			return;
		}
		refs_add(s, e, 0, +1);
	}
	c->state = OBJ_SWAPPED;
	c->order = o->order;
	c->stamp = o->stamp;
	c->version = o->version;
	c->split = o->split;
	memcpy(c->entry, o->entry, sizeof(c->entry));
	atomic_fetch_add(&s->c.dup, 1);
}

static void op_swapped(struct sworker *w, struct sobj *o)
{
	struct stress *s = w->s;
	struct stress_swap *m = s->swap;
	unsigned int r = (unsigned int)(stress_rnd(&w->rng) % 100);

	if (r < 45 || o == atomic_load(&m->victim)) {
		if (obj_swap_in(s, o, w->buf, w->want) == 0 && o == atomic_load(&m->victim))
			atomic_store(&m->victim, NULL);
	} else if (r < 60) {
		struct sobj *c = &m->obj[stress_rnd(&w->rng) % m->nr];

		if (c != o && pthread_mutex_trylock(&c->lock) == 0) {
			if (c->state == OBJ_EMPTY)
				obj_dup(s, o, c);
			pthread_mutex_unlock(&c->lock);
		}
	} else {
		obj_free_entry(s, o);
		o->state = OBJ_EMPTY;
		atomic_fetch_add(&s->c.drop, 1);
	}
}

static void op_one(struct sworker *w, struct sobj *o)
{
	struct stress *s = w->s;
	unsigned int r = (unsigned int)(stress_rnd(&w->rng) % 100);

	switch (o->state) {
	case OBJ_EMPTY:
		o->order = (uint8_t)pick_order(&w->rng);
		o->stamp = atomic_fetch_add(&s->swap->next_stamp, 1);
		o->version = 0;
		o->state = OBJ_MEM;
		atomic_fetch_add(&s->c.rewrite, 1);
		break;
	case OBJ_MEM:
		if (r < 60) {
			obj_swap_out(s, o, w->buf, &w->rng);
		} else if (r < 85) {
			o->version++;
			atomic_fetch_add(&s->c.rewrite, 1);
		} else {
			o->state = OBJ_EMPTY;
			atomic_fetch_add(&s->c.drop, 1);
		}
		break;
	default:
		op_swapped(w, o);
	}
}

static bool worker_done(struct stress *s)
{
	return atomic_load(&s->stop) ||
	       (s->o->ops && atomic_load(&s->ops_done) >= s->o->ops);
}

static void *worker_main(void *arg)
{
	struct sworker *w = arg;
	struct stress *s = w->s;
	struct stress_swap *m = s->swap;
	unsigned long nr_cpus = (unsigned long)sysconf(_SC_NPROCESSORS_ONLN);

	for (uint64_t n = 0; !worker_done(s); n++) {
		struct sobj *o = &m->obj[stress_rnd(&w->rng) % m->nr];

		if (s->o->migrate && n % 512 == 0)
			uswap_thread_set_cpu((int)(stress_rnd(&w->rng) % (nr_cpus ? nr_cpus : 1)));
		pthread_rwlock_rdlock(&s->quiesce);
		pthread_mutex_lock(&o->lock);
		op_one(w, o);
		pthread_mutex_unlock(&o->lock);
		pthread_rwlock_unlock(&s->quiesce);
		atomic_fetch_add(&s->ops_done, 1);
	}
	if (s->o->migrate)
		uswap_thread_set_cpu(-1);
	return NULL;
}

/* ------------------------------------------------------------------------
 * The owner's swapoff callback
 * ---------------------------------------------------------------------- */

static bool folio_holds(const struct sobj *o, uswap_entry_t e)
{
	if (o->state != OBJ_SWAPPED)
		return false;
	for (unsigned int p = 0; p < 1u << o->order; p++)
		if (page_slot(o, p).val == e.val)
			return true;
	return false;
}

/* Move one object off the device going away: read it (checked), write it
 * elsewhere or keep it in memory, free the old slots. A failed read is a
 * surfaced error: the object's data is gone, as a SIGBUS would say. */
static void unuse_obj(struct stress *s, struct sobj *o)
{
	struct stress_swap *m = s->swap;
	int rc = read_pieces(s, o, m->unuse_buf);
	uint64_t rng = o->entry[0].val;

	if (rc == -EIO) { /* counted as surfaced: the data is gone */
		obj_free_entry(s, o);
		o->state = OBJ_EMPTY;
		return;
	}
	if (rc < 0)
		return;
	if (!obj_verify(s, o, m->unuse_buf, m->unuse_want))
		o->version++;
	struct sobj moved = *o;

	if (!obj_swap_out(s, &moved, m->unuse_buf, &rng))
		moved.state = OBJ_MEM;
	obj_free_entry(s, o); /* the old slots */
	o->state = moved.state;
	o->split = moved.split;
	memcpy(o->entry, moved.entry, sizeof(o->entry));
	o->version = moved.version;
}

/* uswap_unuse_fn: every object whose folio holds @e lets go of it (dups
 * share it). Runs in the swapoff thread while the run is quiesced. */
static int unuse_cb(void *ctx, uswap_entry_t e)
{
	struct stress *s = ctx;
	struct stress_swap *m = s->swap;

	atomic_fetch_add(&s->c.unuse_calls, 1);
	for (unsigned int i = 0; i < m->nr; i++) {
		struct sobj *o = &m->obj[i];

		pthread_mutex_lock(&o->lock);
		if (folio_holds(o, e))
			unuse_obj(s, o);
		pthread_mutex_unlock(&o->lock);
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Checkpoints, mutations, start and drain
 * ---------------------------------------------------------------------- */

/* A run of slots [first, last] with the same finding, as one report. */
struct finding {
	uint64_t first, last;
	long count;
	unsigned int want;
	bool pinned, open;
};

static void report_finding(struct stress *s, unsigned int t, const struct finding *f)
{
	char where[64];

	if (!f->open)
		return;
	if (f->first == f->last)
		snprintf(where, sizeof(where), "slot %u:%llu", t, (unsigned long long)f->first);
	else
		snprintf(where, sizeof(where), "slots %u:%llu-%llu", t,
			 (unsigned long long)f->first, (unsigned long long)f->last);
	if (f->count > (long)f->want || f->pinned)
		stress_violation(s, &s->c.leaks, "leak: %s: %ld reference(s)%s each, the model "
				 "holds %u", where, f->count, f->pinned ? " and a cache pin" : "",
				 f->want);
	else
		stress_violation(s, &s->c.lost, "%s: %ld reference(s) each, the model holds %u: "
				 "freed under its owner", where, f->count, f->want);
}

/* Every slot's count must be what the model holds, nothing pinned; runs
 * of slots that differ alike (a folio) are one report. */
static void check_type(struct stress *s, unsigned int t)
{
	struct stress_swap *m = s->swap;
	struct finding f = { 0 };

	for (uint64_t off = 1; off < m->nr_slots[t]; off++) {
		bool pinned = false;
		long count = uswap_slot_count(swap_u(s), uswap_entry(t, off), &pinned);
		unsigned int want = atomic_load(&m->refs[t][off]);

		if (count == -ENOENT || count == -EIO)
			count = 0;
		if (count == (long)want && !(pinned && count == 0))
			continue;
		if (f.open && f.last + 1 == off && f.count == count && f.want == want &&
		    f.pinned == pinned) {
			f.last = off;
			continue;
		}
		report_finding(s, t, &f);
		f = (struct finding){ off, off, count, want, pinned, true };
	}
	report_finding(s, t, &f);
}

/* STRESS_MUTATE_FLIP_BYTE: flip one byte of a swapped page in the swap
 * file, behind uswap's back. The oracle must report exactly that slot. */
static void flip_one_byte(struct stress *s)
{
	struct stress_swap *m = s->swap;
	const struct stress_devset *ds = &s->sets[0];

	for (unsigned int i = 0; i < m->nr && !m->flipped; i++) {
		struct sobj *o = &m->obj[i];
		uswap_entry_t e = page_slot(o, 0);
		bool pinned = true;

		if (o->state != OBJ_SWAPPED)
			continue;
		for (unsigned int d = 0; d < ds->nr; d++) {
			const struct stress_dev *dev = &ds->dev[d];
			unsigned char byte;
			off_t at = (off_t)uswap_entry_offset(e) * USWAP_PAGE_SIZE + 100;
			int fd;

			if (dev->faulty || !dev->path[0] || dev->type != (int)uswap_entry_type(e) ||
			    uswap_slot_count(swap_u(s), e, &pinned) != 1 || pinned)
				continue; /* a cached copy would hide the flip */
			fd = open(dev->path, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				return;
			if (pread(fd, &byte, 1, at) == 1) {
				byte ^= 0xff;
				if (pwrite(fd, &byte, 1, at) == 1) {
					m->flipped = true;
					atomic_store(&m->victim, o);
					fprintf(stderr, "uswap stress: mutation: flipped a byte of "
						"slot %u:%llu in %s\n", uswap_entry_type(e),
						(unsigned long long)uswap_entry_offset(e), dev->path);
				}
			}
			close(fd);
			break;
		}
	}
}

/* stress_swap_keep_on() - must the churn leave device @i of @ds on? While
 * the flip-byte mutation has not flipped, the swap path's clean swap file
 * stays on: it is the only device flip_one_byte() can corrupt, and a seed
 * that swapped it off for the whole run made the mutation a no-op. */
bool stress_swap_keep_on(const struct stress *s, const struct stress_devset *ds, unsigned int i)
{
	const struct stress_dev *d = &ds->dev[i];

	return s->o->mutate == STRESS_MUTATE_FLIP_BYTE && s->swap && !s->swap->flipped &&
	       ds == &s->sets[0] && !d->faulty && d->path[0];
}

/* stress_swap_checkpoint() - the oracle: uswap_check() and every slot's
 * count against the model. Context: quiesced. */
void stress_swap_checkpoint(struct stress *s)
{
	struct stress_swap *m = s->swap;
	int rc = uswap_check(swap_u(s));

	if (rc)
		stress_violation(s, &s->c.bad_refs, "uswap_check: %s (see stderr)",
				 cli_errno_name(rc));
	for (unsigned int t = 0; t < USWAP_MAX_DEVICES; t++)
		if (m->refs[t])
			check_type(s, t);
	if (s->o->mutate == STRESS_MUTATE_FLIP_BYTE && !m->flipped)
		flip_one_byte(s);
}

int stress_swap_start(struct stress *s, char *err, size_t errlen)
{
	struct stress_swap *m = calloc(1, sizeof(*m));

	if (!m || !(m->obj = calloc(s->o->objects, sizeof(*m->obj))) ||
	    !(m->w = calloc(s->o->threads, sizeof(*m->w))) ||
	    !(m->unuse_buf = malloc(FOLIO_MAX)) || !(m->unuse_want = malloc(FOLIO_MAX))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->swap = m;
	m->nr = s->o->objects;
	m->next_stamp = 1;
	for (unsigned int i = 0; i < m->nr; i++)
		pthread_mutex_init(&m->obj[i].lock, NULL);
	uswap_set_unuse(swap_u(s), unuse_cb, s);
	return 0;
}

/* Start the workers (after the device sets are on). */
static int start_workers(struct stress *s, char *err, size_t errlen)
{
	struct stress_swap *m = s->swap;

	for (unsigned int i = 0; i < s->o->threads; i++) {
		struct sworker *w = &m->w[i];

		w->s = s;
		w->id = i;
		w->rng = s->o->seed * 1000003 + i;
		w->buf = malloc(FOLIO_MAX);
		w->want = malloc(FOLIO_MAX);
		if (!w->buf || !w->want || pthread_create(&w->th, NULL, worker_main, w)) {
			snprintf(err, errlen, "cannot start worker %u", i);
			return -EAGAIN;
		}
		m->nr_w++;
	}
	return 0;
}

void stress_swap_join(struct stress *s)
{
	for (unsigned int i = 0; s->swap && i < s->swap->nr_w; i++)
		pthread_join(s->swap->w[i].th, NULL);
}

/* stress_swap_drain() - bring every swapped object back (a read error is
 * retried: the rates make a hundred in a row impossible), check it and
 * free its slots. Context: workers stopped. */
void stress_swap_drain(struct stress *s)
{
	struct stress_swap *m = s->swap;

	for (unsigned int i = 0; i < m->nr; i++) {
		struct sobj *o = &m->obj[i];
		int rc = -EIO;

		for (int tries = 0; o->state == OBJ_SWAPPED && rc == -EIO && tries < 100; tries++)
			rc = obj_swap_in(s, o, m->unuse_buf, m->unuse_want);
		if (o->state == OBJ_SWAPPED)
			stress_violation(s, &s->c.lost, "drain: slot %u:%llu cannot be read "
					 "back (%s)", uswap_entry_type(o->entry[0]),
					 (unsigned long long)uswap_entry_offset(o->entry[0]),
					 cli_errno_name(rc));
	}
}

void stress_swap_free(struct stress *s)
{
	struct stress_swap *m = s->swap;

	if (!m)
		return;
	for (unsigned int i = 0; i < m->nr_w; i++) {
		free(m->w[i].buf);
		free(m->w[i].want);
	}
	for (unsigned int t = 0; t < USWAP_MAX_DEVICES; t++)
		free(m->refs[t]);
	for (unsigned int i = 0; i < m->nr; i++)
		pthread_mutex_destroy(&m->obj[i].lock);
	free(m->obj);
	free(m->w);
	free(m->unuse_buf);
	free(m->unuse_want);
	free(m);
	s->swap = NULL;
}

int stress_swap_run(struct stress *s, char *err, size_t errlen)
{
	return start_workers(s, err, errlen);
}
