// SPDX-License-Identifier: MIT
/*
 * trace_record.c - an instance's swap stream as a lab trace (version 1,
 * docs/lab.md "Traces"), for `uswap lab replay`: `uswap run --trace FILE`
 * (recorded by uswap run itself for the tree, or by the agent in the
 * process uswap run started, --in-process).
 *
 * The instance's tracer (uswap_set_tracer()) hears of every allocation
 * and every run of slots freed. An allocation is an A record named by
 * its first entry (unique while the slots are in use); a freed run ends
 * folios: a whole folio freed at once is an F, one page of a folio up to
 * order 4 an I (the last one ends it), and a larger folio freed in part
 * ends at its first free with an F. Slots nobody was handed are ignored.
 *
 * The tracer runs on whichever thread allocates or frees, with allocator
 * locks held, and must not touch the heap of a program the agent serves:
 * the books and the line buffer are mmapped here with the raw system
 * call (not the agent's mmap), lines are formatted on the stack, and
 * each is written at once with write(2), so an exec() or a kill loses
 * nothing recorded. One mutex orders the records, and the time is read
 * under it, so times never go back. One recording per process: the
 * books are the process's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <uswap/lab.h>
#include <uswap/uswap.h>


#define TRACE_BUF   4096       /* the header, or one record */
#define TRACE_CAP   (1u << 21) /* folios in the books: 32 MiB, touched as used */

struct trace_folio {
	uint64_t key;   /* entry.val + 1; 0 = empty */
	uint16_t gone;  /* pages swapped in alone (order <= 4) */
	uint8_t order;
};

static struct {
	pthread_mutex_t lock;
	int fd;
	struct trace_folio *map;
	size_t nr;
	char *buf;
	size_t len;
	uint64_t t0;
	bool full;          /* the books ran out: stopped recording */
	int err;            /* a write failed: stopped recording */
	struct uswap_tracer tracer;
} tr = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

static void *raw_mmap(size_t len)
{
	long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == -1 ? NULL : (void *)p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void flush_locked(void)
{
	size_t off = 0;

	while (off < tr.len && !tr.err) {
		ssize_t n = write(tr.fd, tr.buf + off, tr.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			tr.err = n < 0 ? errno : EIO;
		else
			off += (size_t)n;
	}
	tr.len = 0;
}

/* Append one record: "T CPU OP args". */
static void put_locked(char op, uint64_t a, uint64_t b, bool two)
{
	char line[96];
	int cpu = sched_getcpu();
	unsigned long long t = (unsigned long long)(now_ns() - tr.t0);
	int n = op == 'X' ? snprintf(line, sizeof(line), "%llu %d X\n", t, cpu < 0 ? 0 : cpu)
		: two ? snprintf(line, sizeof(line), "%llu %d %c %llu %llu\n", t,
				 cpu < 0 ? 0 : cpu, op, (unsigned long long)a,
				 (unsigned long long)b)
		      : snprintf(line, sizeof(line), "%llu %d %c %llu\n", t,
				 cpu < 0 ? 0 : cpu, op, (unsigned long long)a);

	memcpy(tr.buf + tr.len, line, (size_t)n);
	tr.len += (size_t)n;
	/* At once: an exec() or a kill loses nothing already recorded. */
	flush_locked();
}

static size_t slot_of(uint64_t key)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (TRACE_CAP - 1);

	while (tr.map[i].key && tr.map[i].key != key)
		i = (i + 1) & (TRACE_CAP - 1);
	return i;
}

/* Backward-shift deletion keeps every probe run unbroken. */
static void forget(size_t i)
{
	tr.map[i].key = 0;
	tr.nr--;
	for (size_t j = (i + 1) & (TRACE_CAP - 1); tr.map[j].key; j = (j + 1) & (TRACE_CAP - 1)) {
		struct trace_folio f = tr.map[j];

		tr.map[j].key = 0;
		tr.map[slot_of(f.key)] = f;
	}
}

static void on_alloc(uswap_entry_t e, unsigned int order)
{
	size_t i;

	if (tr.nr * 10 >= TRACE_CAP * 7) {
		tr.full = true;
		return;
	}
	i = slot_of(e.val + 1);
	tr.map[i] = (struct trace_folio){ .key = e.val + 1, .order = (uint8_t)order };
	tr.nr++;
	put_locked('A', order, e.val, true);
}

/* The folio slot @off of device @type belongs to, or -1. */
static long folio_at(unsigned int type, uint32_t off)
{
	for (unsigned int k = 0; k < USWAP_NR_ORDERS; k++) {
		uswap_entry_t base = uswap_entry(type, off & ~((1u << k) - 1));
		size_t i = slot_of(base.val + 1);

		if (tr.map[i].key && tr.map[i].order == k)
			return (long)i;
	}
	return -1;
}

static void on_free(uswap_entry_t e, unsigned int n)
{
	unsigned int type = uswap_entry_type(e);
	uint32_t off = uswap_entry_offset(e), end = off + n;

	while (off < end) {
		long i = folio_at(type, off);
		struct trace_folio *f;
		uint32_t base, pages;

		if (i < 0) {
			off++;
			continue;
		}
		f = &tr.map[i];
		pages = 1u << f->order;
		base = uswap_entry_offset((uswap_entry_t){ f->key - 1 });
		if (f->order > 4 || (off == base && end >= base + pages && !f->gone)) {
			put_locked('F', f->key - 1, 0, false);
			forget((size_t)i);
			off = base + pages > off ? base + pages : off + 1;
			continue;
		}
		put_locked('I', f->key - 1, off - base, true);
		f->gone |= (uint16_t)(1u << (off - base));
		if (f->gone == (uint16_t)((1u << pages) - 1))
			forget((size_t)i);
		off++;
	}
}

static void trace_event(void *ctx, enum uswap_trace_event ev, uswap_entry_t e,
			unsigned int n)
{
	(void)ctx;
	pthread_mutex_lock(&tr.lock);
	if (tr.fd >= 0 && !tr.full && !tr.err) {
		if (ev == USWAP_TRACE_ALLOC)
			on_alloc(e, n);
		else
			on_free(e, n);
	}
	pthread_mutex_unlock(&tr.lock);
}

int uswap_trace_record_start(struct uswap *u, int fd, uint64_t t0_ns, uint64_t *t0_out)
{
	static const char head[] = "uswap-trace 1\n# uswap run --trace: the swap stream "
				   "of one swap system\n# T CPU A ORDER ID | T CPU F ID | "
				   "T CPU I ID PAGE | T CPU X\n";

	if (u == NULL || fd < 0)
		return -EINVAL;
	if (tr.fd >= 0)
		return -EBUSY;
	if (!tr.map)
		tr.map = raw_mmap(TRACE_CAP * sizeof(*tr.map));
	if (!tr.buf)
		tr.buf = raw_mmap(TRACE_BUF);
	if (!tr.map || !tr.buf)
		return -ENOMEM;
	tr.fd = fd;
	tr.nr = 0;
	tr.len = 0;
	tr.full = false;
	tr.err = 0;
	if (t0_ns) {
		tr.t0 = t0_ns;
		put_locked('X', 0, 0, false); /* not recording yet: no other thread */
	} else {
		memcpy(tr.buf, head, sizeof(head) - 1);
		tr.len = sizeof(head) - 1;
		flush_locked();
		tr.t0 = now_ns();
	}
	if (t0_out)
		*t0_out = tr.t0;
	tr.tracer = (struct uswap_tracer){ .event = trace_event };
	uswap_set_tracer(u, &tr.tracer);
	return 0;
}

int uswap_trace_record_stop(struct uswap *u)
{
	int err;

	if (tr.fd < 0)
		return 0;
	uswap_set_tracer(u, NULL);
	pthread_mutex_lock(&tr.lock);
	flush_locked();
	err = tr.err ? -tr.err : tr.full ? -EOVERFLOW : 0;
	if (close(tr.fd) && !err)
		err = -errno;
	tr.fd = -1;
	pthread_mutex_unlock(&tr.lock);
	return err;
}

void uswap_trace_record_forget(struct uswap *u)
{
	if (tr.fd < 0)
		return;
	if (u)
		uswap_set_tracer(u, NULL);
	/* The fork may have caught another thread inside the mutex. */
	pthread_mutex_init(&tr.lock, NULL);
	close(tr.fd);
	tr.fd = -1;
	tr.len = 0;
}
