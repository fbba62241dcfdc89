// SPDX-License-Identifier: MIT
/*
 * Description: the swap path on real backends (src/swap/swap.c): folios of
 * every order go out and come back byte-identical, the swap cache serves
 * clean copies with no I/O, frees leave nothing in use, and injected write
 * and read errors lose no data and never return wrong data.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc/alloc_internal.h"
#include "dev/backend.h"
#include "dev/faulty.h"
#include "dev/zram.h"
#include "t_util.h"

#define DEV_SLOTS (64 * USWAP_CLUSTER_SLOTS) /* 128 MiB per device */

static struct uswap *u;

/* A ram device swapped on at @prio; returns its type. */
static int swapon_ram(uint64_t slots, int prio)
{
	struct backend *b;
	char err[128];
	int type;

	t_eq(backend_ram_open(slots * USWAP_PAGE_SIZE, &b, err, sizeof(err)), 0);
	struct uswap_swapon_args a = { .prio = prio,
				       .backend = (struct uswap_backend *)b };
	type = uswap_swapon(u, &a);
	t_true(type >= 0);
	return type;
}

/* Fill a folio with a pattern derived from @seed so corruption shows. */
static void fill(void *buf, unsigned int order, uint64_t seed)
{
	uint64_t *w = buf, s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < folio_bytes(order) / 8; i++)
		w[i] = t_rand(&s);
}

/* A swap file of @mib MiB made by util-linux mkswap (written out, no
 * holes) at a fresh path in /tmp, copied to @path. Return: false (the test
 * is skipped) when mkswap is not there. */
static bool mkswap_file(char *path, size_t len, unsigned int mib)
{
	char cmd[400];
	int fd;

	snprintf(path, len, "/tmp/uswap-test-swapfile-XXXXXX");
	fd = mkstemp(path);
	t_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "dd if=/dev/zero of=%s bs=1M count=%u status=none && mkswap -q -L t %s >/dev/null 2>&1",
		 path, mib, path);
	if (access("/usr/sbin/mkswap", X_OK) || system(cmd)) {
		unlink(path);
		t_skip("util-linux mkswap is not available");
		return false;
	}
	return true;
}

static int swapon_spec(const char *spec)
{
	char err[256];
	int type = uswap_swapon_spec(u, spec, err, sizeof(err));

	if (type < 0)
		fail_msg("swapon %s: %s (%s)", spec, err, t_errname(type));
	return type;
}

static int setup(void **state)
{
	u = t_create(2, 0);
	return 0;
}

static int teardown(void **state)
{
	uswap_destroy(u);
	u = NULL;
	return 0;
}

static void test_swap_out_in_round_trips_every_order(void **state)
{
	void *in = malloc(folio_bytes(9)), *out = malloc(folio_bytes(9));
	uswap_entry_t e;
	int type = swapon_ram(DEV_SLOTS, -1);

	for (unsigned int order = 0; order < USWAP_NR_ORDERS; order++) {
		fill(out, order, order);
		t_eq(uswap_swap_out(u, out, order, 0, &e), 0);
		t_eq(uswap_entry_type(e), (unsigned int)type);
		t_eq(uswap_entry_offset(e) % (1u << order), 0);
		memset(in, 0, folio_bytes(order));
		t_eq(uswap_swap_in(u, e, order, in), 0); /* from the device */
		t_true(memcmp(in, out, folio_bytes(order)) == 0);
		t_eq(uswap_swap_free(u, e, order), 0);
	}
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
	free(in);
	free(out);
}

/*
 * A cluster takes its swap table from the device's pool, filled outside
 * the locks. With the pool empty and every refill failing (as if out of
 * memory), a folio that needs a fresh cluster gets -ENOMEM: nothing is
 * allocated, what was swapped before reads back intact, and once memory
 * is back the same folio goes out and comes back.
 */
static void test_dry_table_pool_is_enomem_for_that_folio_and_loses_nothing(void **state)
{
	void *in = malloc(folio_bytes(9)), *out = malloc(folio_bytes(9));
	struct uswap_stats before, after;
	uswap_entry_t kept, e;
	int type = swapon_ram(DEV_SLOTS, -1);
	uint64_t inuse;

	fill(out, 0, 3);
	t_eq(uswap_swap_out(u, out, 0, 0, &kept), 0);
	inuse = t_info(u, type).inuse;
	before = t_stats(u);
	table_pool_fail_refills(u->devs[type], UINT32_MAX);
	fill(out, 9, 4);
	t_eq(uswap_swap_out(u, out, 9, 0, &e), -ENOMEM);
	after = t_stats(u);
	t_true(after.table_refill_fail > before.table_refill_fail);
	t_eq_u64(t_info(u, type).inuse, inuse);
	t_check(u);
	memset(in, 0, USWAP_PAGE_SIZE);
	fill(out, 0, 3);
	t_eq(uswap_swap_in(u, kept, 0, in), 0);
	t_true(memcmp(in, out, USWAP_PAGE_SIZE) == 0);

	table_pool_fail_refills(u->devs[type], 0);
	fill(out, 9, 4);
	t_eq(uswap_swap_out(u, out, 9, 0, &e), 0);
	memset(in, 0, folio_bytes(9));
	t_eq(uswap_swap_in(u, e, 9, in), 0);
	t_true(memcmp(in, out, folio_bytes(9)) == 0);
	t_eq(uswap_swap_free(u, e, 9), 0);
	t_eq(uswap_swap_free(u, kept, 0), 0);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
	free(in);
	free(out);
}

static void test_clean_copy_comes_back_from_cache_without_io(void **state)
{
	char out[USWAP_PAGE_SIZE * 4], in[sizeof(out)];
	uswap_entry_t e;
	bool cached;
	int type = swapon_ram(DEV_SLOTS, -1);

	fill(out, 2, 7);
	t_eq(uswap_swap_out(u, out, 2, USWAP_SWAP_KEEP_CACHE, &e), 0);
	t_eq(uswap_slot_count(u, e, &cached), 1);
	t_true(cached);
	t_eq(uswap_swap_in(u, e, 2, in), 1); /* 1: swap cache hit */
	t_true(memcmp(in, out, sizeof(in)) == 0);
	t_eq(uswap_cache_drop(u, e, 2), 0);
	t_eq(uswap_cache_drop(u, e, 2), -ENOENT);
	memset(in, 0, sizeof(in));
	t_eq(uswap_swap_in(u, e, 2, in), 0); /* now from the device */
	t_true(memcmp(in, out, sizeof(in)) == 0);
	t_eq(uswap_swap_free(u, e, 2), 0);
	t_eq(uswap_swap_free(u, e, 2), -ENOENT);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

static void test_free_of_cached_folio_drops_copy_and_slots(void **state)
{
	char out[USWAP_PAGE_SIZE];
	uswap_entry_t e;
	int type = swapon_ram(DEV_SLOTS, -1);

	fill(out, 0, 3);
	t_eq(uswap_swap_out(u, out, 0, USWAP_SWAP_KEEP_CACHE, &e), 0);
	t_eq(uswap_dup(u, e), 0); /* a second owner (fork) */
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_eq(uswap_slot_count(u, e, NULL), 1);
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_eq(uswap_slot_count(u, e, NULL), -ENOENT);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
}

static void test_swap_in_of_free_slot_is_refused(void **state)
{
	char buf[USWAP_PAGE_SIZE];
	int type = swapon_ram(DEV_SLOTS, -1);

	t_eq(uswap_swap_in(u, uswap_entry((unsigned int)type, 600), 0, buf), -ENOENT);
	t_eq(uswap_swap_in(u, uswap_entry((unsigned int)type, 601), 1, buf), -EINVAL);
	t_eq(uswap_swap_in(u, uswap_entry(31, 600), 0, buf), -EINVAL);
}

/* Found by an outside tester (item 2 of the reliability report): a free that drops the last reference of a
 * slot whose HAS_CACHE pin someone else holds (a swap-in that pinned it)
 * dropped that pin too, so the slot was handed out again while its owner
 * still used it. The slot must stay pinned until that owner lets go. */
static void test_swap_free_leaves_a_pin_another_owner_holds(void **state)
{
	char out[USWAP_PAGE_SIZE];
	uswap_entry_t e, *more = calloc(4 * USWAP_CLUSTER_SLOTS, sizeof(*more));
	size_t n = 0;
	bool cached;
	int type = swapon_ram(4 * USWAP_CLUSTER_SLOTS, -1);

	fill(out, 0, 21);
	t_eq(uswap_swap_out(u, out, 0, 0, &e), 0);
	t_eq(uswap_cache_pin(u, e), 0);
	t_eq(uswap_swap_free(u, e, 0), 0); /* the last reference */
	t_eq(uswap_slot_count(u, e, &cached), 0); /* not free: still pinned */
	t_true(cached);
	/* Every other slot of the device can be taken; that one never. */
	while (uswap_swap_out(u, out, 0, 0, &more[n]) == 0) {
		if (more[n].val == e.val)
			fail_msg("slot %llu handed out while pinned",
				 (unsigned long long)uswap_entry_offset(e));
		n++;
	}
	t_eq_u64(n, t_info(u, type).pages - 1);
	t_eq(uswap_put_folio(u, e, 0), 0); /* the owner lets go: now free */
	t_eq(uswap_slot_count(u, e, NULL), -ENOENT);
	t_eq(uswap_put_folio(u, e, 0), -ENOENT);
	for (size_t i = 0; i < n; i++)
		t_eq(uswap_swap_free(u, more[i], 0), 0);
	t_eq_u64(t_info(u, type).inuse, 0);
	t_check(u);
	free(more);
}

/* Found by an outside tester (item 5 of the reliability report): a zram device at prio 100 whose writes fail
 * from the 257th on (zram's memory limit), over a file at prio 0. Every
 * folio must land on the file once zram fails, and zram's slots must not
 * be retired: a failed write is not a bad sector. */
static void test_failed_write_passes_device_over_and_folio_lands_below(void **state)
{
	enum { N = 2000 };
	char path[64], spec[128], out[USWAP_PAGE_SIZE], in[USWAP_PAGE_SIZE];
	uswap_entry_t *e = calloc(N, sizeof(*e));
	unsigned int on_zram = 0, on_file = 0;

	if (!mkswap_file(path, sizeof(path), 32))
		return;
	struct uswap_backend *fb;
	char err[256];

	t_eq(uswap_backend_open("faulty:fail_nth=257,persistent:zram:16M", &fb, NULL,
				err, sizeof(err)), 0);
	struct uswap_swapon_args a = { .prio = 100, .backend = fb };
	int zram = uswap_swapon(u, &a);

	t_true(zram >= 0);
	snprintf(spec, sizeof(spec), "file:%s:prio=0", path);
	int file = swapon_spec(spec);
	uint64_t zram_pages = t_info(u, zram).pages;

	for (unsigned int i = 0; i < N; i++) {
		fill(out, 0, 1000 + i);
		t_eq(uswap_swap_out(u, out, 0, 0, &e[i]), 0);
		if (uswap_entry_type(e[i]) == (unsigned int)zram)
			on_zram++;
		else if (uswap_entry_type(e[i]) == (unsigned int)file)
			on_file++;
	}
	t_eq(on_zram, 256);
	t_eq(on_file, N - 256);
	t_eq_u64(t_info(u, zram).pages, zram_pages); /* nothing retired */
	t_true(t_info(u, zram).write_errors >= 1);
	t_true(t_info(u, zram).write_pauses >= 1);
	t_eq_u64(t_info(u, zram).inuse, 256);
	t_eq_u64(t_info(u, file).write_errors, 0);
	/* The rule fails reads too: end it to read zram's folios back. */
	t_eq(faulty_fail_nth((struct backend *)fb, 0, false), 0);
	for (unsigned int i = 0; i < N; i++) {
		fill(out, 0, 1000 + i);
		t_eq(uswap_swap_in(u, e[i], 0, in), 0);
		if (memcmp(in, out, sizeof(in)))
			fail_msg("swap-out %u read back different bytes", i);
		t_eq(uswap_swap_free(u, e[i], 0), 0);
	}
	t_eq_u64(t_info(u, zram).inuse, 0);
	t_eq_u64(t_info(u, file).inuse, 0);
	t_check(u);
	t_eq(uswap_swapoff(u, file), 0);
	t_eq(uswap_swapoff(u, zram), 0);
	unlink(path);
	free(e);
}

/* A device whose one write failed is passed over only for its pause, then
 * takes folios again (zram under its limit once memory was freed). */
static void test_device_comes_back_after_its_write_pause(void **state)
{
	char out[USWAP_PAGE_SIZE];
	uswap_entry_t e, back;
	int flaky = swapon_spec("faulty:fail_nth=1,prio=10:ram:16M");
	int good = swapon_ram(DEV_SLOTS, 5);

	fill(out, 0, 31);
	t_eq(uswap_swap_out(u, out, 0, 0, &e), 0); /* fails once, lands below */
	t_eq(uswap_entry_type(e), (unsigned int)good);
	t_eq_u64(t_info(u, flaky).write_errors, 1);
	t_true(t_info(u, flaky).write_paused);
	/* Poll (no timing is asserted): the pause is 10 ms; give it 5 s. */
	for (int ms = 0; ms < 5000; ms++) {
		t_eq(uswap_swap_out(u, out, 0, 0, &back), 0);
		if (uswap_entry_type(back) == (unsigned int)flaky)
			break;
		t_eq(uswap_swap_free(u, back, 0), 0);
		usleep(1000);
	}
	t_eq(uswap_entry_type(back), (unsigned int)flaky);
	t_true(!t_info(u, flaky).write_paused);
	t_eq(uswap_swap_free(u, back, 0), 0);
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_check(u);
}

/* Every device fails its writes: the caller is told -EIO and keeps its
 * page; nothing stays allocated and nothing is retired. A single device
 * in a pause is still tried: a pause never makes room look full. */
static void test_every_device_failing_is_eio_and_holds_nothing(void **state)
{
	char out[USWAP_PAGE_SIZE];
	uswap_entry_t e;
	int a = swapon_spec("faulty:write=1,prio=10:ram:16M");
	int b = swapon_spec("faulty:write=1,prio=5:ram:16M");
	uint64_t pages = t_info(u, a).pages;

	fill(out, 0, 41);
	t_eq(uswap_swap_out(u, out, 0, 0, &e), -EIO);
	/* Both, then the paused ones again rather than nothing: 4 tries. */
	t_true(t_info(u, a).write_errors >= 1 && t_info(u, b).write_errors >= 1);
	t_eq_u64(t_info(u, a).write_errors + t_info(u, b).write_errors, 4);
	t_eq_u64(t_info(u, a).inuse + t_info(u, b).inuse, 0);
	t_eq_u64(t_info(u, a).pages, pages);
	t_check(u);
}

struct unuse_owner {
	unsigned int pinned_offered, referenced_offered;
	struct uswap *u;
};

/* The owner's swapoff callback: a slot it holds with a reference is
 * simply dropped (the test keeps no data); one it only pinned is let go. */
static int unuse_drop(void *ctx, uswap_entry_t e)
{
	struct unuse_owner *o = ctx;
	long count = uswap_slot_count(o->u, e, NULL);

	if (count == 0) {
		o->pinned_offered++;
		return uswap_put_folio(o->u, e, 0);
	}
	o->referenced_offered++;
	return uswap_swap_free(o->u, e, 0);
}

/* Found by an outside tester (item 4 of the reliability report): slots allocated (pinned) and never written
 * were never offered to the owner, so swapoff gave -EBUSY after seconds
 * with no callback at all. */
static void test_swapoff_offers_slots_only_pinned_to_the_owner(void **state)
{
	struct unuse_owner o = { .u = u };
	char out[USWAP_PAGE_SIZE];
	uswap_entry_t pinned, written;
	int type = swapon_ram(DEV_SLOTS, -1);

	t_eq(uswap_alloc(u, 2, &pinned), 0); /* 4 slots, HAS_CACHE, count 0 */
	fill(out, 0, 51);
	t_eq(uswap_swap_out(u, out, 0, 0, &written), 0);
	uswap_set_unuse(u, unuse_drop, &o);
	t_eq(uswap_swapoff(u, type), 0);
	uswap_set_unuse(u, NULL, NULL);
	t_eq(o.pinned_offered, 4);
	t_eq(o.referenced_offered, 1);
	t_eq(uswap_slot_count(u, pinned, NULL), -EINVAL); /* device gone */
}

/* Held fault case: the higher device is full (-ENOSPC there) while
 * a lower one has room: every folio goes on, none is refused. */
static void test_full_device_sends_folios_to_the_next_with_room(void **state)
{
	enum { SMALL = 2 * USWAP_CLUSTER_SLOTS };
	char out[USWAP_PAGE_SIZE], in[USWAP_PAGE_SIZE];
	uswap_entry_t *e = calloc(2 * SMALL, sizeof(*e));
	int small = swapon_ram(SMALL, 10), big = swapon_ram(DEV_SLOTS, 5);
	uint64_t on_small = 0;

	for (unsigned int i = 0; i < 2 * SMALL; i++) {
		fill(out, 0, 2000 + i);
		t_eq(uswap_swap_out(u, out, 0, 0, &e[i]), 0);
		on_small += uswap_entry_type(e[i]) == (unsigned int)small;
	}
	t_eq_u64(on_small, t_info(u, small).pages); /* filled to the last slot */
	t_eq_u64(t_info(u, big).inuse, 2 * SMALL - on_small);
	for (unsigned int i = 0; i < 2 * SMALL; i++) {
		fill(out, 0, 2000 + i);
		t_eq(uswap_swap_in(u, e[i], 0, in), 0);
		t_true(memcmp(in, out, sizeof(in)) == 0);
		t_eq(uswap_swap_free(u, e[i], 0), 0);
	}
	t_check(u);
	free(e);
}

struct mover {
	struct uswap *u;
	uswap_entry_t *e;        /* the owner's entries, updated as they move */
	unsigned int nr, moved;
};

/* An owner that writes each slot's page to another device; when none has
 * room it cannot let go, and says so: -ENOMEM ends the swapoff. */
static int unuse_move_or_enomem(void *ctx, uswap_entry_t slot)
{
	struct mover *m = ctx;
	char page[USWAP_PAGE_SIZE];

	for (unsigned int i = 0; i < m->nr; i++) {
		uswap_entry_t to;

		if (m->e[i].val != slot.val)
			continue;
		t_eq(uswap_swap_in(m->u, slot, 0, page), 0);
		if (uswap_swap_out(m->u, page, 0, 0, &to))
			return -ENOMEM;
		t_eq(uswap_swap_free(m->u, slot, 0), 0);
		m->e[i] = to;
		m->moved++;
	}
	return 0;
}

/* Held fault case: swapoff of a device whose pages have nowhere
 * else to go fails with the owner's -ENOMEM; the device stays on with
 * what is left, what moved stays moved, and every page reads back. */
static void test_swapoff_without_room_elsewhere_fails_and_keeps_the_device(void **state)
{
	enum { N = 3 * USWAP_CLUSTER_SLOTS };
	char out[USWAP_PAGE_SIZE], in[USWAP_PAGE_SIZE];
	struct mover m = { .u = u, .e = calloc(N, sizeof(uswap_entry_t)), .nr = N };
	int big = swapon_ram(4 * USWAP_CLUSTER_SLOTS, 10);

	for (unsigned int i = 0; i < N; i++) {
		fill(out, 0, 3000 + i);
		t_eq(uswap_swap_out(u, out, 0, 0, &m.e[i]), 0);
		t_eq(uswap_entry_type(m.e[i]), (unsigned int)big);
	}
	int small = swapon_ram(2 * USWAP_CLUSTER_SLOTS, 5); /* room for a third */

	uswap_set_unuse(u, unuse_move_or_enomem, &m);
	t_eq(uswap_swapoff(u, big), -ENOMEM);
	uswap_set_unuse(u, NULL, NULL);
	t_eq_u64(m.moved, t_info(u, small).pages);
	t_eq_u64(t_info(u, big).inuse, N - m.moved); /* still on, still holding */
	t_true(uswap_swap_out(u, out, 0, 0, &(uswap_entry_t){ 0 }) == 0); /* and usable */
	for (unsigned int i = 0; i < N; i++) {
		fill(out, 0, 3000 + i);
		t_eq(uswap_swap_in(u, m.e[i], 0, in), 0);
		if (memcmp(in, out, sizeof(in)))
			fail_msg("page %u read back wrong after the failed swapoff", i);
	}
	t_check(u);
	free(m.e);
}

/* In a child process: can @spec's backend be opened? Return: its errno. */
static int open_in_child(const char *spec)
{
	struct uswap_backend *b;
	int status, rc;
	pid_t pid = fork();

	t_true(pid >= 0);
	if (pid == 0) {
		rc = uswap_backend_open(spec, &b, NULL, NULL, 0);
		if (rc == 0)
			uswap_backend_close(b);
		_exit(-rc & 0xff);
	}
	t_eq(waitpid(pid, &status, 0), pid);
	t_true(WIFEXITED(status));
	return -WEXITSTATUS(status);
}

static int nr_devices(void)
{
	struct uswap_device_info info;
	int n = 0;

	for (int type = 0; type < USWAP_MAX_DEVICES; type++)
		n += uswap_device_info(u, type, &info) == 0;
	return n;
}

/* @spec must be refused with -EBUSY, saying why, and add no device. */
static void assert_busy(const char *spec)
{
	char err[256] = "";
	int before = nr_devices();

	t_eq(uswap_swapon_spec(u, spec, err, sizeof(err)), -EBUSY);
	if (!strstr(err, "in use"))
		fail_msg("%s: refused without saying why: '%s'", spec, err);
	t_eq(nr_devices(), before);
}

/* Found by an outside tester (item 1 of the reliability report): the same file swapped on twice was taken
 * as two devices sharing its slots, so one device's page read back as the
 * other's. The kernel claims the inode (-EBUSY); so must uswap, through
 * any name of the file and from any process. */
static void test_same_file_swapped_on_twice_is_ebusy(void **state)
{
	char path[64], sym[80], hard[80], spec[128];
	char out[USWAP_PAGE_SIZE], in[USWAP_PAGE_SIZE];
	uswap_entry_t e;

	if (!mkswap_file(path, sizeof(path), 16))
		return;
	snprintf(sym, sizeof(sym), "%s.sym", path);
	snprintf(hard, sizeof(hard), "%s.hard", path);
	t_eq(symlink(path, sym), 0);
	t_eq(link(path, hard), 0);
	snprintf(spec, sizeof(spec), "file:%s", path);
	int type = swapon_spec(spec);

	assert_busy(spec);
	snprintf(spec, sizeof(spec), "file:%s:prio=5", sym);
	assert_busy(spec);
	snprintf(spec, sizeof(spec), "file:%s", hard);
	assert_busy(spec);
	snprintf(spec, sizeof(spec), "faulty:seed=1:file:%s", path);
	assert_busy(spec);
	t_eq(open_in_child(spec + strlen("faulty:seed=1:")), -EBUSY);
	/* The one device still works, and the file is free once it is off. */
	fill(out, 0, 61);
	t_eq(uswap_swap_out(u, out, 0, 0, &e), 0);
	t_eq(uswap_swap_in(u, e, 0, in), 0);
	t_true(memcmp(in, out, sizeof(in)) == 0);
	t_eq(uswap_swap_free(u, e, 0), 0);
	t_eq(uswap_swapoff(u, type), 0);
	t_eq(open_in_child(spec + strlen("faulty:seed=1:")), 0);
	snprintf(spec, sizeof(spec), "file:%s", sym);
	t_eq(uswap_swapoff(u, swapon_spec(spec)), 0);
	unlink(sym);
	unlink(hard);
	unlink(path);
}

static char loop_dev[64]; /* set while test_same_block_device... holds one */

static int teardown_loop(void **state)
{
	char cmd[128];

	teardown(state); /* swapoff by destroy, before the loop goes */
	if (loop_dev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d %s", loop_dev);
		if (system(cmd))
			fprintf(stderr, "could not detach %s\n", loop_dev);
		loop_dev[0] = 0;
	}
	return 0;
}

/* The same for a block device (a loop device over a swap file): the
 * second open is refused through the node and through its /dev/block
 * alias, as the kernel's exclusive claim refuses it. */
static void test_same_block_device_swapped_on_twice_is_ebusy(void **state)
{
	char path[64], cmd[128], spec[128], alias[64];
	struct stat st;
	FILE *p;

	if (geteuid() != 0 || access("/usr/sbin/losetup", X_OK) != 0) {
		t_skip("needs root and util-linux losetup for a loop device");
		return;
	}
	if (!mkswap_file(path, sizeof(path), 16))
		return;
	snprintf(cmd, sizeof(cmd), "losetup --find --show %s 2>/dev/null", path);
	p = popen(cmd, "r");
	t_true(p != NULL);
	if (!fgets(loop_dev, sizeof(loop_dev), p))
		loop_dev[0] = 0;
	pclose(p);
	unlink(path); /* the loop device keeps the file */
	loop_dev[strcspn(loop_dev, "\n")] = 0;
	if (!loop_dev[0]) {
		t_skip("no loop device could be set up here");
		return;
	}
	snprintf(spec, sizeof(spec), "file:%s", loop_dev);
	int type = swapon_spec(spec);

	assert_busy(spec);
	t_eq(stat(loop_dev, &st), 0);
	snprintf(alias, sizeof(alias), "/dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	if (access(alias, F_OK) == 0) {
		snprintf(spec, sizeof(spec), "file:%s", alias);
		assert_busy(spec);
	}
	t_eq(uswap_swapoff(u, type), 0);
	snprintf(spec, sizeof(spec), "file:%s", loop_dev);
	t_eq(uswap_swapoff(u, swapon_spec(spec)), 0);
}

/* Folios of orders 0..4 through every kind of device a spec can name. */
static void round_trip_spec(const char *spec, bool is_file)
{
	char err[256], out[USWAP_PAGE_SIZE * 16], in[sizeof(out)];
	struct uswap_device_info info;
	uswap_entry_t e[5];
	int type = uswap_swapon_spec(u, spec, err, sizeof(err));

	if (type < 0)
		fail_msg("swapon %s: %s (%s)", spec, err, t_errname(type));
	t_eq(uswap_device_info(u, type, &info), 0);
	t_true(strcmp(info.kind, is_file ? "file" : "partition") == 0);
	for (unsigned int order = 0; order < 5; order++) {
		fill(out, order, order + 100);
		t_eq(uswap_swap_out(u, out, order, 0, &e[order]), 0);
		t_eq(uswap_entry_type(e[order]), (unsigned int)type);
	}
	for (unsigned int order = 0; order < 5; order++) {
		fill(out, order, order + 100);
		memset(in, 0, sizeof(in));
		t_eq(uswap_swap_in(u, e[order], order, in), 0);
		if (memcmp(in, out, folio_bytes(order)))
			fail_msg("%s: order %u read back different bytes", spec, order);
		t_eq(uswap_swap_free(u, e[order], order), 0);
	}
	t_eq(uswap_swapoff(u, type), 0);
}

static void test_specs_round_trip_on_every_backend_kind(void **state)
{
	round_trip_spec("ram:16M", false); /* 8 clusters: one per order used */
	round_trip_spec("zram:16M", false);
	round_trip_spec("zram:16M:zstd", false);
	round_trip_spec("faulty:seed=3:ram:16M", false);
}

static void test_mkswap_file_round_trips_through_swap_path(void **state)
{
	char path[64], spec[128];

	if (!mkswap_file(path, sizeof(path), 16))
		return;
	snprintf(spec, sizeof(spec), "file:%s", path);
	round_trip_spec(spec, true);
	snprintf(spec, sizeof(spec), "file:%s:sync", path);
	round_trip_spec(spec, true);
	unlink(path);
}

/* swapon --discard on a file: a cluster that empties is discarded before
 * reuse (punched out and allocated again at once: it reads zeroes and the
 * file keeps every block), the data of live folios survives, and the file
 * has no holes (swapon would refuse it) before and after swapoff. */
static void test_file_discard_punches_freed_clusters(void **state)
{
	char path[64], spec[300], err[256];
	char out[USWAP_PAGE_SIZE * 16], in[sizeof(out)];
	struct stat st_full, st_punched;
	uswap_entry_t big, small;
	void *cluster;

	if (!mkswap_file(path, sizeof(path), 16))
		return;
	cluster = malloc(folio_bytes(9));
	snprintf(spec, sizeof(spec), "file:%s:discard", path);
	int type = uswap_swapon_spec(u, spec, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon %s: %s", spec, err);
	fill(out, 4, 5);
	t_eq(uswap_swap_out(u, out, 4, 0, &small), 0);
	fill(cluster, 9, 6);
	t_eq(uswap_swap_out(u, cluster, 9, 0, &big), 0);
	t_eq(stat(path, &st_full), 0);
	uint32_t free_before = t_info(u, type).free_clusters;
	t_eq(uswap_swap_free(u, big, 9), 0);
	t_eq(stat(path, &st_punched), 0);
	/* The 2 MiB cluster was discarded (reads zeroes), and the file is
	 * still fully allocated... */
	{
		int fd = open(path, O_RDONLY);

		t_true(fd >= 0);
		t_eq(pread(fd, cluster, folio_bytes(9),
			   (off_t)(uswap_entry_offset(big) * USWAP_PAGE_SIZE)),
		     (ssize_t)folio_bytes(9));
		close(fd);
		for (size_t i = 0; i < folio_bytes(9); i++)
			if (((unsigned char *)cluster)[i])
				fail_msg("byte %zu of the freed cluster: the cluster "
					 "was not discarded", i);
	}
	if ((uint64_t)st_punched.st_blocks * 512 < (uint64_t)st_punched.st_size)
		fail_msg("blocks %lld -> %lld: the discard left the file with holes",
			 (long long)st_full.st_blocks, (long long)st_punched.st_blocks);
	/* ...and is free again, not stuck on the discard list. */
	t_eq(t_info(u, type).free_clusters, free_before + 1);
	t_eq(uswap_swap_in(u, small, 4, in), 0);
	t_true(memcmp(in, out, folio_bytes(4)) == 0);
	t_eq(uswap_swap_free(u, small, 4), 0);
	t_check(u);
	t_eq(uswap_swapoff(u, type), 0);
	/* Whole again: the header check (holes) accepts it. */
	snprintf(spec, sizeof(spec), "file:%s", path);
	type = uswap_swapon_spec(u, spec, err, sizeof(err));
	if (type < 0)
		fail_msg("swapon after discard: %s", err);
	t_eq(uswap_swapoff(u, type), 0);
	unlink(path);
	free(cluster);
}

/* zram through the swap path: what is stored is accounted, and a freed
 * folio's memory goes back at once (swap_slot_free_notify). */
static void test_zram_memory_follows_swap_out_and_free(void **state)
{
	struct zram_mm_stat ms;
	struct backend *b;
	char err[128], page[USWAP_PAGE_SIZE * 16];
	uswap_entry_t same, text;

	t_eq(backend_zram_open((uint64_t)DEV_SLOTS * USWAP_PAGE_SIZE, "lz4", &b, err,
			       sizeof(err)), 0);
	struct uswap_swapon_args a = { .prio = -1, .backend = (struct uswap_backend *)b };
	t_true(uswap_swapon(u, &a) >= 0);

	memset(page, 0, sizeof(page)); /* 16 same-filled pages */
	t_eq(uswap_swap_out(u, page, 4, 0, &same), 0);
	for (size_t i = 0; i < sizeof(page); i++) /* compressible text */
		page[i] = "the quick brown fox jumps over the lazy dog "[i % 44];
	t_eq(uswap_swap_out(u, page, 4, 0, &text), 0);
	t_eq(zram_mm_stat(b, &ms), 0);
	t_eq_u64(ms.pages_stored, 32);
	t_eq_u64(ms.same_pages, 16);
	t_eq_u64(ms.orig_data_size, 32 * USWAP_PAGE_SIZE);
	t_true(ms.compr_data_size > 0 && ms.compr_data_size < 16 * USWAP_PAGE_SIZE / 4);

	t_eq(uswap_swap_free(u, text, 4), 0);
	t_eq(zram_mm_stat(b, &ms), 0);
	t_eq_u64(ms.pages_stored, 16);
	t_eq_u64(ms.compr_data_size, 0);
	t_eq_u64(ms.mem_used_total, 0);
	t_eq(uswap_swap_free(u, same, 4), 0);
	t_eq(zram_mm_stat(b, &ms), 0);
	t_eq_u64(ms.pages_stored, 0);
	t_eq_u64(ms.same_pages, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_swap_out_in_round_trips_every_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clean_copy_comes_back_from_cache_without_io, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_table_pool_is_enomem_for_that_folio_and_loses_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_of_cached_folio_drops_copy_and_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swap_in_of_free_slot_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swap_free_leaves_a_pin_another_owner_holds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_passes_device_over_and_folio_lands_below, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_comes_back_after_its_write_pause, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_device_failing_is_eio_and_holds_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapoff_offers_slots_only_pinned_to_the_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_specs_round_trip_on_every_backend_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zram_memory_follows_swap_out_and_free, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkswap_file_round_trips_through_swap_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_discard_punches_freed_clusters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_device_sends_folios_to_the_next_with_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapoff_without_room_elsewhere_fails_and_keeps_the_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_file_swapped_on_twice_is_ebusy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_block_device_swapped_on_twice_is_ebusy, setup, teardown_loop),
	};
	return t_run(tests);
}
