// SPDX-License-Identifier: MIT
/*
 * vtime.c - the lab's virtual time: a clock per vCPU, a cost per step
 * the allocator reports, and every lock a resource held in virtual time.
 *
 * The allocator tells the calling thread's probe (uswap_thread_set_probe())
 * each lock it takes and each unit of work it does. Here each of them
 * moves the running vCPU's clock by its cost from the cost table. A lock
 * remembers when, in virtual time, its last holder let it go and on
 * which vCPU: a vCPU that takes it earlier than that waits until then
 * (the wait is counted at its lock site, as perf lock counts
 * contention), and one that takes it after another vCPU held it pays for
 * the cache line's move. The scheduler (vcpu.c) always runs the vCPU
 * whose clock is smallest, one operation at a time, so the result is a
 * function of the seed and the cost table alone.
 *
 * What the rule cannot see: operations run whole, in the order of their
 * start times, so a vCPU whose operation started later but reaches a lock
 * earlier still queues behind the earlier one (FIFO by operation start);
 * and nothing but the locks and the steps costs anything (docs/lab.md).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_internal.h"

/* ------------------------------------------------------------------------
 * The cost table
 * ---------------------------------------------------------------------- */

/* Each key with its field; docs/lab.md says where each default comes from. */
#define COSTS(X)                                                              \
	X(lock, "an uncontended lock acquisition and release")               \
	X(line, "a cache line moved from another CPU")                       \
	X(handover_lines, "lines a lock brings when another CPU held it last") \
	X(list_step, "one cluster looked at on a list walk")                 \
	X(list_move, "one cluster moved between lists")                      \
	X(map_line, "64 slots of a cluster's swap table scanned")            \
	X(slot, "one slot's swap table entry taken or given back")           \
	X(discard, "one cluster discarded")                                  \
	X(alloc, "the fixed part of one uswap_alloc() call")                 \
	X(free, "the fixed part of one free call")                           \
	X(page_out, "the rest of swapping one page out (compress, store)")   \
	X(page_in, "the rest of swapping one page in (load, decompress)")    \
	X(pool_lines, "lines of a device's shared zram state each store moves") \
	X(jitter, "page_out and page_in vary uniformly by +-this fraction")

void lab_cost_default(struct lab_cost *c)
{
	/* Measured here (docs/lab.md, "The cost table", has the commands):
	 * `uswap bench lock`: an uncontended take + release 5.9 ns, a line
	 * moved between the two CPUs 35.8 ns, a lock handed over with its
	 * data 142 ns = lock + 3.8 lines. `uswap bench alloc`: 55 ns per
	 * alloc + free pair, of which three lock operations and two slots:
	 * 20 + 10 ns of fixed work. `uswap bench io` on zram: raw lz4 545
	 * MB/s (7.5 us per 4 KiB page), zram swap-in 2.7 GB/s (1.5 us).
	 * A list step or move touches descriptors other CPUs wrote: one
	 * and two lines. Not measured: map_line (64 slots scanned: a 64-byte
	 * memchr over the kernel's old swap_map, 512 bytes of swap table here), slot,
	 * discard (a ram device's is a memset of the cluster). */
	*c = (struct lab_cost){
		.lock = 6, .line = 36, .handover_lines = 3.8, .list_step = 36,
		.list_move = 72, .map_line = 4, .slot = 1, .discard = 2000,
		.alloc = 20, .free = 10, .page_out = 7500, .page_in = 1500,
		.pool_lines = 3, .jitter = 0.5,
	};
}

/* The 16-core machine of ../shared/calibration/16-cores (an Intel Xeon,
 * one socket, no SMT): its `uswap bench lock` medians, an uncontended
 * take + release 10.9 ns, a line moved between CPUs 70.5 ns, a lock
 * handed over with its data 314.3 ns = lock + 4.3 lines. The rest is the
 * 2-vCPU machine's: nothing else was measured there. */
static void cost_16_cores(struct lab_cost *c)
{
	lab_cost_default(c);
	c->lock = 10.9;
	c->line = 70.5;
	c->handover_lines = 4.3;
}

static const struct {
	const char *name;
	void (*fill)(struct lab_cost *c);
} profiles[] = {
	{ "2-vcpu", lab_cost_default },
	{ "16-cores", cost_16_cores },
};

int lab_cost_profile(const char *name, struct lab_cost *c)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		if (!strcmp(name, profiles[i].name)) {
			profiles[i].fill(c);
			return 0;
		}
	}
	return -EINVAL;
}

const char *lab_cost_profile_names(void)
{
	return "2-vcpu (the default), 16-cores";
}

static double *cost_field(struct lab_cost *c, const char *key, size_t len)
{
#define X(name, desc) \
	if (len == sizeof(#name) - 1 && !strncmp(key, #name, len)) \
		return &c->name;
	COSTS(X)
#undef X
	return NULL;
}

int lab_cost_parse_why(const char *s, struct lab_cost *c, char *bad, size_t bad_len)
{
	if (!s || !*s) {
		snprintf(bad, bad_len, "%s", "");
		return -EINVAL;
	}
	for (;;) {
		const char *eq = strchr(s, '='), *end = strchr(s, ',');
		double *f = NULL, v = 0;
		char *e = NULL;

		if (!end)
			end = s + strlen(s);
		if (eq && eq < end) {
			f = cost_field(c, s, (size_t)(eq - s));
			/* Decimal only: strtod() would also take hex and "inf". */
			if (eq[1] >= '0' && eq[1] <= '9' &&
			    strspn(eq + 1, "0123456789.eE+-") == (size_t)(end - eq - 1))
				v = strtod(eq + 1, &e);
		}
		if (!f || e != end || !isfinite(v) || v < 0 || v > 1e9 ||
		    (f == &c->jitter && v > 1)) {
			snprintf(bad, bad_len, "%.*s", (int)(end - s), s);
			return -EINVAL;
		}
		*f = v;
		if (!*end)
			return 0;
		s = end + 1;
	}
}

int lab_cost_parse(const char *s, struct lab_cost *c)
{
	char bad[1];

	return lab_cost_parse_why(s, c, bad, sizeof(bad));
}

void lab_cost_format(const struct lab_cost *c, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
#define X(name, desc) \
	if (n < len) \
		n += (size_t)snprintf(buf + n, len - n, "%s%s=%g", n ? "," : "", \
				      #name, c->name);
	COSTS(X)
#undef X
}

void lab_cost_each(void (*fn)(const char *key, const char *desc, double v, void *ctx),
		   const struct lab_cost *c, void *ctx)
{
#define X(name, desc) fn(#name, desc, c->name, ctx);
	COSTS(X)
#undef X
}

/* ------------------------------------------------------------------------
 * Locks in virtual time
 * ---------------------------------------------------------------------- */

/* One holding of a lock in virtual time: [start, end) on vCPU @cpu. */
struct vt_hold {
	double start, end;
	int cpu;
};

/*
 * A lock in virtual time. It keeps the holdings that may still matter:
 * those ending after the earliest clock of any vCPU (the horizon), in
 * start order. Operations run whole, in the order of their start times,
 * so a vCPU may take a lock "earlier" in virtual time than a holding an
 * earlier-started operation recorded: it gets the first gap after its
 * clock long enough for the lock's mean holding (FIFO would make it wait
 * behind holdings that lie after its request).
 */
struct vt_lock {
	const void *id;       /* the lock's address; NULL = empty slot */
	struct vt_hold *h;    /* [nr], by start */
	unsigned int nr, cap;
	int last_cpu;         /* holder of the last holding pruned, or -1 */
	unsigned int site;    /* of the current acquisition */
	double since;         /* when the current holding began */
	uint64_t holdings;    /* for the mean holding */
	double held_ns;
};

/* Open addressing on the lock's address. Addresses differ between runs,
 * but only lookups use them: nothing iterates this table. */
static struct vt_lock *lock_find(struct lab_vtime *vt, const void *id)
{
	size_t mask = vt->nr_locks_cap - 1;
	size_t i = (size_t)(((uintptr_t)id >> 2) * 0x9e3779b97f4a7c15ull) & mask;

	for (;; i = (i + 1) & mask) {
		struct vt_lock *l = &vt->locks[i];

		if (l->id == id)
			return l;
		if (!l->id)
			return NULL;
	}
}

static int locks_grow(struct lab_vtime *vt)
{
	struct vt_lock *old = vt->locks;
	size_t cap = vt->nr_locks_cap;

	vt->nr_locks_cap = cap ? cap * 2 : 1024;
	vt->locks = calloc(vt->nr_locks_cap, sizeof(*vt->locks));
	if (!vt->locks) {
		vt->locks = old;
		vt->nr_locks_cap = cap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < cap; i++) {
		size_t mask = vt->nr_locks_cap - 1;
		size_t j;

		if (!old[i].id)
			continue;
		j = (size_t)(((uintptr_t)old[i].id >> 2) * 0x9e3779b97f4a7c15ull) & mask;
		while (vt->locks[j].id)
			j = (j + 1) & mask;
		vt->locks[j] = old[i];
	}
	free(old);
	return 0;
}

static struct vt_lock *lock_get(struct lab_vtime *vt, const void *id)
{
	struct vt_lock *l = lock_find(vt, id);
	size_t mask, i;

	if (l)
		return l;
	if ((vt->nr_locks + 1) * 2 > vt->nr_locks_cap && locks_grow(vt)) {
		vt->failed = -ENOMEM;
		return NULL;
	}
	mask = vt->nr_locks_cap - 1;
	i = (size_t)(((uintptr_t)id >> 2) * 0x9e3779b97f4a7c15ull) & mask;
	while (vt->locks[i].id)
		i = (i + 1) & mask;
	vt->locks[i] = (struct vt_lock){ .id = id, .last_cpu = -1 };
	vt->nr_locks++;
	return &vt->locks[i];
}

/* "&(ci)->lock" -> "ci->lock", "&ctx->pc->lock" -> "pc->lock": the lock
 * expression as perf lock would name the lock, without the address-of,
 * the macro's parentheses and all but the last "base->field". */
static void lock_name(const char *expr, char *out, size_t len)
{
	char tmp[64];
	size_t n = 0;
	const char *arrow = NULL, *start;

	for (const char *p = expr; *p && n + 1 < sizeof(tmp); p++)
		if (*p != '&' && *p != '(' && *p != ')')
			tmp[n++] = *p;
	tmp[n] = 0;
	for (const char *p = strstr(tmp, "->"); p; p = strstr(p + 2, "->"))
		arrow = p;
	start = arrow ? arrow : tmp;
	while (start > tmp && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
			       (start[-1] >= '0' && start[-1] <= '9')))
		start--;
	for (n = 0; start[n] && n + 1 < len; n++)
		out[n] = start[n];
	out[n] = 0;
}

/* The site row for (@name, @site): the strings are the allocator's
 * constants, so their addresses identify them within one run. */
static unsigned int site_get(struct lab_vtime *vt, const char *name, const char *site)
{
	struct lab_lock_site *s;

	for (unsigned int i = 0; i < vt->nr_sites; i++)
		if (vt->site_keys[i][0] == name && vt->site_keys[i][1] == site)
			return i;
	if (vt->nr_sites == LAB_MAX_LOCK_SITES)
		return LAB_MAX_LOCK_SITES - 1; /* the last row takes the rest */
	s = &vt->sites[vt->nr_sites];
	memset(s, 0, sizeof(*s));
	lock_name(name, s->lock, sizeof(s->lock));
	snprintf(s->site, sizeof(s->site), "%s", site);
	vt->site_keys[vt->nr_sites][0] = name;
	vt->site_keys[vt->nr_sites][1] = site;
	return vt->nr_sites++;
}

/* Forget holdings that ended before every vCPU's clock. */
static void lock_prune(struct lab_vtime *vt, struct vt_lock *l)
{
	unsigned int k = 0;

	/* Ends are in start order too, but for the model's overlaps. */
	while (k < l->nr && l->h[k].end <= vt->horizon)
		k++;
	if (!k)
		return;
	l->last_cpu = l->h[k - 1].cpu;
	memmove(l->h, l->h + k, (l->nr - k) * sizeof(*l->h));
	l->nr -= k;
}

/* The first holding of @l that starts at or after @t (binary search:
 * holdings are kept by start). */
static unsigned int hold_search(const struct vt_lock *l, double t)
{
	unsigned int lo = 0, hi = l->nr;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (l->h[mid].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first time >= @t at which @l is free for @need ns; *@prev gets the
 * vCPU that held it last before then (or -1). */
static double lock_gap(const struct vt_lock *l, double t, double need, int *prev)
{
	unsigned int i = hold_search(l, t);

	*prev = l->last_cpu;
	/* The holding before may still cover @t. */
	if (i > 0) {
		*prev = l->h[i - 1].cpu;
		if (l->h[i - 1].end > t)
			t = l->h[i - 1].end;
	}
	for (; i < l->nr; i++) {
		const struct vt_hold *h = &l->h[i];

		if (h->start >= t + need)
			break;
		if (h->end > t)
			t = h->end;
		*prev = h->cpu;
	}
	return t;
}

static int lock_record(struct lab_vtime *vt, struct vt_lock *l, struct vt_hold h)
{
	unsigned int i = l->nr;

	if (l->nr == l->cap) {
		unsigned int cap = l->cap ? l->cap * 2 : 8;
		struct vt_hold *n = realloc(l->h, cap * sizeof(*n));

		if (!n)
			return vt->failed = -ENOMEM;
		l->h = n;
		l->cap = cap;
	}
	if (i > 0 && l->h[i - 1].start > h.start)
		i = hold_search(l, h.start);
	/* A holding that runs into a later one is the model's error: the
	 * later one should have waited. Counted, not hidden. */
	if (i < l->nr && h.end > l->h[i].start)
		vt->overlaps++;
	memmove(l->h + i + 1, l->h + i, (l->nr - i) * sizeof(*l->h));
	l->h[i] = h;
	l->nr++;
	return 0;
}

void lab_vt_lock(struct lab_vtime *vt, const void *id, const char *name, const char *site)
{
	lab_vt_lock_lines(vt, id, name, site, vt->cost.handover_lines);
}

void lab_vt_lock_lines(struct lab_vtime *vt, const void *id, const char *name,
		       const char *site, double lines)
{
	double *clock = &vt->clock[vt->cur];
	struct vt_lock *l = lock_get(vt, id);
	struct lab_lock_site *s;
	double at, need;
	unsigned int si;
	int prev;

	if (!l)
		return;
	lock_prune(vt, l);
	si = site_get(vt, name, site);
	s = &vt->sites[si];
	s->acquired++;
	need = vt->cost.lock + (l->holdings ? l->held_ns / (double)l->holdings : 0);
	at = lock_gap(l, *clock, need, &prev);
	if (at > *clock) {
		double wait = at - *clock;

		s->contended++;
		s->wait_ns += wait;
		if (wait > s->max_wait_ns)
			s->max_wait_ns = wait;
		*clock = at;
	}
	l->since = *clock;
	*clock += vt->cost.lock;
	if (prev >= 0 && prev != (int)vt->cur)
		*clock += vt->cost.line * lines;
	l->site = si;
}

void lab_vt_unlock(struct lab_vtime *vt, const void *id)
{
	struct vt_lock *l = lock_find(vt, id);
	double now = vt->clock[vt->cur];

	if (!l)
		return;
	lock_record(vt, l, (struct vt_hold){ .start = l->since, .end = now,
					     .cpu = (int)vt->cur });
	l->holdings++;
	l->held_ns += now - l->since;
	vt->sites[l->site].held_ns += now - l->since;
}

void lab_vt_charge(struct lab_vtime *vt, double ns)
{
	vt->clock[vt->cur] += ns;
}

/* Identical costs would let the vCPUs settle into a staggered schedule
 * in which no two ever meet at a lock (deterministic queueing), which no
 * machine does: page work varies with the page. Uniform in
 * [1 - jitter, 1 + jitter] around @ns, from the running vCPU's own
 * stream, so the draw does not depend on the thread count. */
void lab_vt_charge_page(struct lab_vtime *vt, double ns)
{
	double u = (double)(lab_rand(&vt->rng[vt->cur]) >> 11) * 0x1p-53;

	vt->clock[vt->cur] += ns * (1 + vt->cost.jitter * (2 * u - 1));
}

/* ------------------------------------------------------------------------
 * The probe the allocator calls
 * ---------------------------------------------------------------------- */

static void probe_lock(void *ctx, const void *lock, const char *name, const char *site)
{
	lab_vt_lock(ctx, lock, name, site);
}

static void probe_unlock(void *ctx, const void *lock)
{
	lab_vt_unlock(ctx, lock);
}

static void probe_step(void *ctx, enum uswap_probe_step step, uint64_t n)
{
	struct lab_vtime *vt = ctx;
	const struct lab_cost *c = &vt->cost;
	double per = 0;

	switch (step) {
	case USWAP_STEP_LIST:    per = c->list_step; break;
	case USWAP_STEP_MOVE:    per = c->list_move; break;
	case USWAP_STEP_MAP:     per = c->map_line; break;
	case USWAP_STEP_SLOT:    per = c->slot; break;
	case USWAP_STEP_DISCARD: per = c->discard; break;
	case USWAP_STEP_MAX:     break;
	}
	vt->clock[vt->cur] += per * (double)n;
}

int lab_vt_init(struct lab_vtime *vt, const struct lab_cost *cost, unsigned int nr_vcpus,
		uint64_t seed)
{
	memset(vt, 0, sizeof(*vt));
	vt->cost = *cost;
	vt->nr_vcpus = nr_vcpus;
	vt->clock = calloc(nr_vcpus, sizeof(*vt->clock));
	vt->rng = calloc(nr_vcpus, sizeof(*vt->rng));
	if (!vt->clock || !vt->rng || locks_grow(vt)) {
		lab_vt_fini(vt);
		return -ENOMEM;
	}
	for (unsigned int v = 0; v < nr_vcpus; v++)
		vt->rng[v] = seed ^ (0x9e3779b97f4a7c15ull * (v + 1)) ^ 0x5bd1e995ull;
	vt->probe = (struct uswap_probe){
		.lock = probe_lock, .unlock = probe_unlock, .step = probe_step, .ctx = vt,
	};
	return 0;
}

void lab_vt_fini(struct lab_vtime *vt)
{
	for (size_t i = 0; vt->locks && i < vt->nr_locks_cap; i++)
		free(vt->locks[i].h);
	free(vt->clock);
	free(vt->rng);
	free(vt->locks);
	vt->clock = NULL;
	vt->rng = NULL;
	vt->locks = NULL;
}

/* Sort rows by total wait, most first, then by name: a stable report. */
static int site_cmp(const void *a, const void *b)
{
	const struct lab_lock_site *x = a, *y = b;
	int c;

	if (x->wait_ns != y->wait_ns)
		return x->wait_ns < y->wait_ns ? 1 : -1;
	if (x->acquired != y->acquired)
		return x->acquired < y->acquired ? 1 : -1;
	c = strcmp(x->lock, y->lock);
	return c ? c : strcmp(x->site, y->site);
}

void lab_vt_result(const struct lab_vtime *vt, struct lab_vt_result *r)
{
	memset(r, 0, sizeof(*r));
	r->overlaps = vt->overlaps;
	for (unsigned int v = 0; v < vt->nr_vcpus; v++) {
		r->cpu_ns += vt->clock[v];
		if (vt->clock[v] > r->makespan_ns)
			r->makespan_ns = vt->clock[v];
	}
	r->cpu_ns -= vt->idle_ns;
	r->nr_sites = vt->nr_sites;
	memcpy(r->sites, vt->sites, vt->nr_sites * sizeof(vt->sites[0]));
	qsort(r->sites, r->nr_sites, sizeof(r->sites[0]), site_cmp);
}

/* Is @s a shared lock: a device's (si->lock, si->alloc_lock) or the
 * global device list's (u->avail_lock)? As lab_shared_locks() counts. */
bool lab_lock_site_shared(const struct lab_lock_site *s)
{
	const char *field = strstr(s->lock, "->");

	if (!field)
		return false;
	field += 2;
	if (!strcmp(field, "alloc_lock") || !strcmp(field, "avail_lock"))
		return true;
	return !strcmp(field, "lock") && !strncmp(s->lock, "si->", 4);
}
