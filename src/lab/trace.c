// SPDX-License-Identifier: MIT
/*
 * trace.c - the lab's trace of swap operations (format version 1), read
 * and written; docs/lab.md, "Traces", is its definition.
 *
 * A trace is text, one record per line of at most 254 characters (CRLF
 * line ends are taken), after the header line "uswap-trace 1"; '#'
 * starts a comment line, blank lines are skipped:
 *
 *   T CPU A ORDER ID     a folio of 2^ORDER pages swapped out (0..9)
 *   T CPU F ID           every page of folio ID still swapped out freed
 *   T CPU I ID PAGE      page PAGE of folio ID swapped back in alone
 *   T CPU X              the swap system starts over (the process exec'd
 *                        a new program): every live folio is gone
 *
 * Numbers are plain decimal. T is a time in ns, never smaller than the
 * record before it; CPU is 0..1023; ID (0..2^64-2) names a folio from its A record until its F record (or
 * until its last page came back in) and may be used again after that.
 * Records are checked while read: a bad one is refused with its line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_internal.h"

#define TRACE_MAGIC "uswap-trace 1"

/* Folio IDs live in an open hash while the trace is checked. */
struct live_map {
	uint32_t *free_slot; /* folio slots given back, a stack */
	size_t nr_free, cap_free;
	uint64_t *key;      /* ID + 1; 0 = empty */
	uint32_t *val;      /* index of the folio's A record */
	uint16_t *gone;     /* pages back in (order <= 4 only: bits) */
	size_t cap, nr;
};

static size_t live_slot(const struct live_map *m, uint64_t id)
{
	size_t mask = m->cap - 1, i = (size_t)((id + 1) * 0x9e3779b97f4a7c15ull) & mask;

	while (m->key[i] && m->key[i] != id + 1)
		i = (i + 1) & mask;
	return i;
}

static int live_grow(struct live_map *m)
{
	struct live_map n = { .cap = m->cap ? m->cap * 2 : 1024 };

	n.key = calloc(n.cap, sizeof(*n.key));
	n.val = calloc(n.cap, sizeof(*n.val));
	n.gone = calloc(n.cap, sizeof(*n.gone));
	if (!n.key || !n.val || !n.gone) {
		free(n.key);
		free(n.val);
		free(n.gone);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->key[i])
			continue;
		j = live_slot(&n, m->key[i] - 1);
		n.key[j] = m->key[i];
		n.val[j] = m->val[i];
		n.gone[j] = m->gone[i];
	}
	n.nr = m->nr;
	n.free_slot = m->free_slot; /* the slot stack is not rehashed */
	n.nr_free = m->nr_free;
	n.cap_free = m->cap_free;
	free(m->key);
	free(m->val);
	free(m->gone);
	*m = n;
	return 0;
}

/* Remove slot @i, re-placing the run after it (linear probing). */
static void live_del(struct live_map *m, size_t i)
{
	size_t mask = m->cap - 1;

	m->key[i] = 0;
	m->nr--;
	for (size_t j = (i + 1) & mask; m->key[j]; j = (j + 1) & mask) {
		uint64_t k = m->key[j];
		uint32_t v = m->val[j];
		uint16_t g = m->gone[j];
		size_t to;

		m->key[j] = 0;
		to = live_slot(m, k - 1);
		m->key[to] = k;
		m->val[to] = v;
		m->gone[to] = g;
	}
}

static void live_free(struct live_map *m)
{
	free(m->free_slot);
	free(m->key);
	free(m->val);
	free(m->gone);
}

static int rec_push(struct lab_trace *t, struct lab_trace_rec r)
{
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		struct lab_trace_rec *n = realloc(t->rec, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->rec = n;
		t->cap = cap;
	}
	t->rec[t->nr++] = r;
	return 0;
}

static int fail(char *err, size_t len, unsigned long line, const char *what)
{
	snprintf(err, len, "line %lu: %s", line, what);
	return -EINVAL;
}

/* Split @s at blanks into at most @max fields. Return: the count, or
 * max + 1 when there are more. */
static int split(char *s, char **field, int max)
{
	int n = 0;

	for (char *save = NULL, *tok = strtok_r(s, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return max + 1;
		field[n++] = tok;
	}
	return n;
}

/* A plain decimal number up to @max: digits only (no sign, no base, no
 * spaces). Return: false if @s is not one. */
static bool number(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

#define ID_MAX (UINT64_MAX - 1) /* the books store ID + 1 */

/* The fields after T, CPU and the operation of record @r: @f[0..n-1].
 * Return: NULL, or what is wrong with them. */
static const char *parse_op(char op, char **f, int n, struct lab_trace_rec *r)
{
	uint64_t a, b;

	switch (op) {
	case 'X':
		if (n != 0)
			return "an X record is 'T CPU X'";
		r->op = LAB_TRACE_RESET;
		return NULL;
	case 'A':
		if (n != 2)
			return "an A record is 'T CPU A ORDER ID'";
		if (!number(f[0], UINT32_MAX, &a) || a >= USWAP_NR_ORDERS)
			return "ORDER out of range (0..9)";
		if (!number(f[1], ID_MAX, &b))
			return "ID out of range (0..2^64-2)";
		r->op = LAB_TRACE_ALLOC;
		r->order = (unsigned int)a;
		r->id = b;
		return NULL;
	case 'F':
		if (n != 1)
			return "an F record is 'T CPU F ID'";
		if (!number(f[0], ID_MAX, &a))
			return "ID out of range (0..2^64-2)";
		r->op = LAB_TRACE_FREE;
		r->id = a;
		return NULL;
	case 'I':
		if (n != 2)
			return "an I record is 'T CPU I ID PAGE'";
		if (!number(f[0], ID_MAX, &a))
			return "ID out of range (0..2^64-2)";
		if (!number(f[1], 512, &b))
			return "PAGE out of range";
		r->op = LAB_TRACE_SWAPIN;
		r->id = a;
		r->page = (unsigned int)b;
		return NULL;
	}
	return "unknown operation (A, F, I or X)";
}

/* Parse one record, 'T CPU OP ...', into @r. Return: NULL, or what is
 * wrong with it. */
static const char *parse_rec(char *s, struct lab_trace_rec *r)
{
	char *f[6];
	int n = split(s, f, 6);
	uint64_t cpu;

	if (n < 3)
		return "expected 'T CPU A ORDER ID', 'T CPU F ID', 'T CPU I ID PAGE' "
		       "or 'T CPU X'";
	if (strlen(f[2]) != 1)
		return "unknown operation (A, F, I or X)";
	if (!number(f[0], UINT64_MAX, &r->t_ns))
		return "T is not a number of ns (0..2^64-1)";
	if (!number(f[1], UINT32_MAX, &cpu) || cpu >= USWAP_MAX_CPUS)
		return "CPU out of range (0..1023)";
	r->cpu = (unsigned int)cpu;
	return parse_op(f[2][0], f + 3, n - 3, r);
}

/* Check @r against the folios alive so far and update them. */
static const char *check_rec(struct lab_trace *t, struct live_map *m,
			     struct lab_trace_rec *r)
{
	size_t i;

	if (r->op == LAB_TRACE_RESET) {
		/* Every folio gone: the places are all free again. */
		memset(m->key, 0, m->cap * sizeof(*m->key));
		m->nr = 0;
		m->nr_free = 0;
		t->nr_slots_epoch = 0;
		t->live = t->slots = 0;
		return NULL;
	}
	if (m->nr * 2 >= m->cap && live_grow(m))
		return "out of memory";
	i = live_slot(m, r->id);
	if (r->op == LAB_TRACE_ALLOC) {
		if (m->key[i])
			return "ID is already a live folio";
		r->slot = m->nr_free ? m->free_slot[--m->nr_free] : t->nr_slots_epoch++;
		if (t->nr_slots_epoch > t->nr_slots)
			t->nr_slots = t->nr_slots_epoch;
		m->key[i] = r->id + 1;
		m->val[i] = (uint32_t)t->nr;
		m->gone[i] = 0;
		m->nr++;
		t->live++;
		if (t->live > t->peak_folios)
			t->peak_folios = t->live;
		t->slots += 1ull << r->order;
		if (t->slots > t->peak_slots)
			t->peak_slots = t->slots;
		return NULL;
	}
	if (!m->key[i])
		return "ID is not a live folio";
	unsigned int order = t->rec[m->val[i]].order;

	r->slot = t->rec[m->val[i]].slot;

	if (r->op == LAB_TRACE_SWAPIN) {
		if (order > 4)
			return "I of a folio above order 4 (the lab splits only up to 16 pages)";
		if (r->page >= (1u << order))
			return "PAGE past the folio's end";
		if (m->gone[i] & (1u << r->page))
			return "PAGE already swapped in";
		m->gone[i] |= (uint16_t)(1u << r->page);
		t->slots--;
		if (m->gone[i] != (uint16_t)((1u << (1u << order)) - 1))
			return NULL;
	} else {
		t->slots -= (1ull << order) - (uint64_t)__builtin_popcount(m->gone[i]);
	}
	if (m->nr_free == m->cap_free) {
		size_t cap = m->cap_free ? m->cap_free * 2 : 1024;
		uint32_t *n = realloc(m->free_slot, cap * sizeof(*n));

		if (!n)
			return "out of memory";
		m->free_slot = n;
		m->cap_free = cap;
	}
	m->free_slot[m->nr_free++] = r->slot;
	live_del(m, i);
	t->live--;
	return NULL;
}

int lab_trace_read(FILE *f, struct lab_trace *t, char *err, size_t err_len)
{
	struct live_map m = { 0 };
	char line[256];
	unsigned long no = 0;
	uint64_t last_t = 0;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	if (!fgets(line, sizeof(line), f)) {
		if (ferror(f))
			return -errno ? -errno : -EIO; /* a directory: EISDIR */
		return fail(err, err_len, 1, "empty: not a uswap trace");
	}
	line[strcspn(line, "\r\n")] = 0; /* a CRLF file reads the same */
	if (strcmp(line, TRACE_MAGIC))
		return fail(err, err_len, 1, "not a uswap trace (the first line must "
			    "be '" TRACE_MAGIC "')");
	no = 1;
	while (!rc && fgets(line, sizeof(line), f)) {
		struct lab_trace_rec r = { 0 };
		const char *why;
		char *p = line;

		no++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = fail(err, err_len, no, strlen(line) + 1 < sizeof(line) ?
				  "a NUL byte in the line" :
				  "line too long (at most 254 characters)");
			break;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		why = parse_rec(p, &r);
		if (!why && r.t_ns < last_t)
			why = "time goes backwards";
		if (!why)
			why = check_rec(t, &m, &r);
		if (why) {
			rc = fail(err, err_len, no, why);
			break;
		}
		last_t = r.t_ns;
		if (r.cpu + 1 > t->nr_cpus)
			t->nr_cpus = r.cpu + 1;
		if (rec_push(t, r))
			rc = fail(err, err_len, no, "out of memory");
	}
	if (!rc && ferror(f))
		rc = fail(err, err_len, no, "read error");
	if (!rc && !t->nr)
		rc = fail(err, err_len, no, "no records");
	live_free(&m);
	if (rc)
		lab_trace_fini(t);
	return rc;
}

void lab_trace_fini(struct lab_trace *t)
{
	free(t->rec);
	memset(t, 0, sizeof(*t));
}

void lab_trace_header(FILE *f, const char *what)
{
	fprintf(f, "%s\n# %s\n# T CPU A ORDER ID | T CPU F ID | T CPU I ID PAGE | T CPU X\n",
		TRACE_MAGIC, what);
}

void lab_trace_write(FILE *f, const struct lab_trace_rec *r)
{
	switch (r->op) {
	case LAB_TRACE_ALLOC:
		fprintf(f, "%" PRIu64 " %u A %u %" PRIu64 "\n", r->t_ns, r->cpu, r->order, r->id);
		break;
	case LAB_TRACE_FREE:
		fprintf(f, "%" PRIu64 " %u F %" PRIu64 "\n", r->t_ns, r->cpu, r->id);
		break;
	case LAB_TRACE_SWAPIN:
		fprintf(f, "%" PRIu64 " %u I %" PRIu64 " %u\n", r->t_ns, r->cpu, r->id, r->page);
		break;
	case LAB_TRACE_RESET:
		fprintf(f, "%" PRIu64 " %u X\n", r->t_ns, r->cpu);
		break;
	}
}
