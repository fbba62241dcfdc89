// SPDX-License-Identifier: MIT
/*
 * Description: the crypt wrapper (src/dev/crypt.c) under the swap path:
 * folios round-trip on ram, zram, a file and an NBD export (nbdkit, when
 * installed); the file holds no plaintext;
 * a flipped byte, two slots' blocks swapped, and an older block replayed
 * each read as -EIO (counted), never as data; a cluster's key exists only
 * while the cluster holds pages and is gone once its last page is freed,
 * after which the old ciphertext does not decrypt with any key still
 * held (its slot reads -EIO even with a key made anew); a key table or a
 * tag table that cannot be allocated fails the open with -ENOMEM and a
 * message, nothing leaked; swapoff moves a crypt device's pages to
 * another under new keys; batches over a file go through its io_uring,
 * and a tampered block in a batch is -EIO for that folio alone.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dev/backend.h"
#include "t_dev.h"

#define N 64

static unsigned char pages[N][USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];
static uswap_entry_t entry[N];


static void round_trip(const char *spec)
{
	struct uswap *u = t_create(2, 0);
	uint64_t seed = 1;

	t_swapon_spec(u, spec, NULL);
	for (unsigned int i = 0; i < N; i++) {
		t_fill_page(pages[i], T_PAGE_TEXT, &seed);
		t_eq(uswap_swap_out(u, pages[i], 0, 0, &entry[i]), 0);
	}
	for (unsigned int i = 0; i < N; i++) {
		t_eq(uswap_swap_in(u, entry[i], 0, back), 0);
		t_assert_same_bytes(back, pages[i], USWAP_PAGE_SIZE, spec);
		t_eq(uswap_swap_free(u, entry[i], 0), 0);
	}
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* A mkswap'd file of 16 MiB as a crypt spec; NULL without mkswap. */
static char *crypt_file(char *spec, size_t len, char **path)
{
	*path = t_dev_swapfile(4096);
	if (!*path)
		return NULL;
	snprintf(spec, len, "crypt:file:%s", *path);
	return spec;
}

static void remove_file(char *path)
{
	unlink(path);
	free(path);
}

static void test_crypt_round_trips_on_ram_zram_a_file_and_nbd(void **state)
{
	char spec[256], *path;

	round_trip("crypt:ram:16M");
	round_trip("crypt:zram:16M");
	if (!crypt_file(spec, sizeof(spec), &path)) {
		t_skip("mkswap not installed");
		return;
	}
	round_trip(spec);
	remove_file(path);
	if (t_have_nbdkit()) { /* and over the network tier */
		struct t_nbdkit srv = { 0 };

		t_nbdkit_start(&srv, "64M", false);
		snprintf(spec, sizeof(spec), "crypt:%s", srv.uri);
		round_trip(spec);
		t_nbdkit_stop(&srv);
	}
}

static void file_rw(const char *path, uint64_t slot, void *buf, bool write)
{
	int fd = open(path, O_RDWR);
	ssize_t n;

	t_true(fd >= 0);
	n = write ? pwrite(fd, buf, USWAP_PAGE_SIZE, (off_t)(slot * USWAP_PAGE_SIZE))
		  : pread(fd, buf, USWAP_PAGE_SIZE, (off_t)(slot * USWAP_PAGE_SIZE));
	t_eq(n, USWAP_PAGE_SIZE);
	fsync(fd);
	close(fd);
}

/* One figure of uswap_device_print_stats() ("key value" lines). */
static uint64_t stat_of(struct uswap *u, int type, const char *key)
{
	char *text = NULL, *at;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	uint64_t v = UINT64_MAX;

	t_eq(uswap_device_print_stats(u, type, m), 0);
	fclose(m);
	for (at = text; at && *at; at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL)
		if (!strncmp(at, key, strlen(key)) && at[strlen(key)] == ' ')
			v = strtoull(at + strlen(key) + 1, NULL, 10);
	free(text);
	return v;
}

static bool holds(const unsigned char *block, const unsigned char *page)
{
	return memmem(block, USWAP_PAGE_SIZE, page + 100, 64) != NULL;
}

static void test_tampered_moved_and_replayed_blocks_read_as_eio(void **state)
{
	unsigned char a[USWAP_PAGE_SIZE], b2[USWAP_PAGE_SIZE], old[USWAP_PAGE_SIZE];
	char spec[256], *path;
	struct uswap *u;
	struct backend *be;
	uint64_t seed = 2, sa, sb;
	int type;

	if (!crypt_file(spec, sizeof(spec), &path)) {
		t_skip("mkswap not installed");
		return;
	}
	u = t_create(1, 0);
	type = t_swapon_spec(u, spec, &be);
	for (unsigned int i = 0; i < 4; i++) {
		t_fill_page(pages[i], T_PAGE_TEXT, &seed);
		t_eq(uswap_swap_out(u, pages[i], 0, 0, &entry[i]), 0);
	}
	sa = uswap_entry_offset(entry[0]);
	sb = uswap_entry_offset(entry[1]);
	file_rw(path, sa, a, false);
	t_true(!holds(a, pages[0])); /* ciphertext on the file, not the page */

	/* 1. a flipped byte */
	a[1000] ^= 1;
	file_rw(path, sa, a, true);
	t_eq(uswap_swap_in(u, entry[0], 0, back), -EIO);
	a[1000] ^= 1;
	file_rw(path, sa, a, true);
	t_eq(uswap_swap_in(u, entry[0], 0, back), 0);
	t_assert_same_bytes(back, pages[0], USWAP_PAGE_SIZE, "restored");

	/* 2. slot 1's block written over slot 0's */
	file_rw(path, sb, b2, false);
	file_rw(path, sa, b2, true);
	t_eq(uswap_swap_in(u, entry[0], 0, back), -EIO);
	file_rw(path, sa, a, true);

	/* 3. an older block of the same slot, replayed */
	file_rw(path, sb, old, false);
	t_eq(be->ops->write(be, sb, 0, pages[3]), 0); /* a newer write there */
	file_rw(path, sb, old, true);
	t_eq(uswap_swap_in(u, entry[1], 0, back), -EIO);
	t_eq(be->ops->write(be, sb, 0, pages[1]), 0); /* put it right */
	t_eq(uswap_swap_in(u, entry[1], 0, back), 0);
	t_assert_same_bytes(back, pages[1], USWAP_PAGE_SIZE, "rewritten");

	t_eq_u64(stat_of(u, type, "auth_failed"), 3); /* one per attack */
	for (unsigned int i = 0; i < 4; i++)
		t_eq(uswap_swap_free(u, entry[i], 0), 0);
	uswap_destroy(u);
	remove_file(path);
}

/* The key lives while its cluster holds pages; freeing the last one wipes
 * it, and the old ciphertext does not read back under a new key. */
static void test_a_freed_cluster_loses_its_key(void **state)
{
	struct uswap *u = t_create(1, 0);
	struct backend *be;
	uint64_t seed = 3, cluster, slot;

	t_swapon_spec(u, "crypt:ram:16M", &be);
	for (unsigned int i = 0; i < N; i++) {
		t_fill_page(pages[i], T_PAGE_TEXT, &seed);
		t_eq(uswap_swap_out(u, pages[i], 0, 0, &entry[i]), 0);
	}
	slot = uswap_entry_offset(entry[0]);
	cluster = slot / USWAP_CLUSTER_SLOTS;
	for (unsigned int i = 0; i < N; i++)
		t_eq_u64(uswap_entry_offset(entry[i]) / USWAP_CLUSTER_SLOTS, cluster);
	t_true(crypt_key_present(be, cluster));
	for (unsigned int i = 0; i + 1 < N; i++)
		t_eq(uswap_swap_free(u, entry[i], 0), 0);
	t_true(crypt_key_present(be, cluster)); /* one page left */
	t_eq(uswap_swap_free(u, entry[N - 1], 0), 0);
	t_true(!crypt_key_present(be, cluster));
	/* The old ciphertext is still in the ram device: no key reads it. */
	t_eq(be->ops->read(be, slot, 0, back), -EIO);
	t_eq(be->ops->write(be, slot + 1, 0, pages[1]), 0); /* a new key for the cluster */
	t_true(crypt_key_present(be, cluster));
	t_eq(be->ops->read(be, slot, 0, back), -EIO);
	t_eq(be->ops->discard(be, slot + 1, 1), 0);
	t_true(!crypt_key_present(be, cluster));
	uswap_destroy(u);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define T_SANITIZED 1
#endif

/* In a child held to its current address space plus 64 MiB: open crypt
 * over an inner device of @nr_slots (only its size is read). Exit 0 if
 * the open failed with -ENOMEM and a message naming @what. */
static void open_under_limit(uint64_t nr_slots, const char *what)
{
	struct backend inner = { .nr_slots = nr_slots };
	struct backend *b = NULL;
	char err[256] = "";
	unsigned long vsz_pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	struct rlimit rl;
	int rc;

	if (!f || fscanf(f, "%lu", &vsz_pages) != 1)
		_exit(3);
	fclose(f);
	rl.rlim_cur = rl.rlim_max = vsz_pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
	if (setrlimit(RLIMIT_AS, &rl))
		_exit(4);
	snprintf(inner.name, sizeof(inner.name), "huge");
	rc = backend_crypt_open(&inner, &b, err, sizeof(err));
	printf("# %llu slots: %d: %s\n", (unsigned long long)nr_slots, rc, err);
	fflush(stdout);
	_exit(rc == -ENOMEM && strstr(err, what) ? 0 : 1);
}

/* Batched swap-outs and swap-ins on crypt over an io_uring file: the
 * sealed pages reach the file through its ring, reads are opened as they
 * complete, and one tampered block fails its own folio only. */
static void test_crypt_batches_go_async_and_fail_per_folio(void **state)
{
	struct uswap_swap_io io[N];
	char spec[256], *path;
	unsigned char block[USWAP_PAGE_SIZE];
	struct uswap *u;
	uint64_t seed = 5;
	int type;

	if (!crypt_file(spec, sizeof(spec), &path)) {
		t_skip("mkswap not installed");
		return;
	}
	u = t_create(2, 0);
	type = t_swapon_spec(u, spec, NULL);
	for (unsigned int i = 0; i < N; i++) {
		t_fill_page(pages[i], T_PAGE_TEXT, &seed);
		io[i] = (struct uswap_swap_io){ .pages = pages[i], .order = 0 };
	}
	t_eq(uswap_swap_out_batch(u, io, N, 0), N);
	if (stat_of(u, type, "uring_error") == 0) /* the file has its ring */
		t_true(stat_of(u, type, "async_submitted") >= N);
	file_rw(path, uswap_entry_offset(io[7].entry), block, false);
	t_true(!holds(block, pages[7]));
	block[3] ^= 0x80;
	file_rw(path, uswap_entry_offset(io[7].entry), block, true);
	for (unsigned int i = 0; i < N; i++)
		io[i].pages = t_buf_alloc(USWAP_PAGE_SIZE, false);
	t_eq(uswap_swap_in_batch(u, io, N), N - 1);
	for (unsigned int i = 0; i < N; i++) {
		if (i == 7) {
			t_eq(io[i].result, -EIO);
		} else {
			t_eq(io[i].result, 0);
			t_assert_same_bytes(io[i].pages, pages[i], USWAP_PAGE_SIZE, "crypt batch");
		}
		t_buf_free(io[i].pages, false);
		t_eq(uswap_swap_free(u, io[i].entry, 0), 0);
	}
	t_eq_u64(stat_of(u, type, "auth_failed"), 1);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
	remove_file(path);
}

/* The owner's unuse callback for the swapoff test: read the page back
 * and swap it out again (to the other device, the only one left). */
static struct uswap *unuse_u;

static int unuse_move(void *ctx, uswap_entry_t e)
{
	for (unsigned int i = 0; i < N; i++) {
		if (entry[i].val != e.val)
			continue;
		t_eq(uswap_swap_in(unuse_u, e, 0, back), 0);
		t_eq(uswap_swap_free(unuse_u, e, 0), 0);
		return uswap_swap_out(unuse_u, back, 0, 0, &entry[i]);
	}
	(void)ctx;
	return 0;
}

/* swapoff of a crypt device in use: its pages move to another crypt
 * device through the owner's callback (decrypted on the way out,
 * encrypted anew under the target's keys), and every page reads back
 * intact; once freed, the target holds no key either. */
static void test_swapoff_of_a_crypt_device_moves_every_page(void **state)
{
	struct uswap *u = t_create(2, 0);
	uint64_t seed = 11;
	int from, to;

	from = t_swapon_spec(u, "crypt:ram:16M:prio=10", NULL);
	to = t_swapon_spec(u, "crypt:zram:16M:prio=5", NULL);
	for (unsigned int i = 0; i < N; i++) {
		t_fill_page(pages[i], T_PAGE_TEXT, &seed);
		t_eq(uswap_swap_out(u, pages[i], 0, 0, &entry[i]), 0);
		t_eq(uswap_entry_type(entry[i]), (unsigned int)from);
	}
	t_true(stat_of(u, from, "keys") > 0);
	unuse_u = u;
	uswap_set_unuse(u, unuse_move, NULL);
	t_eq(uswap_swapoff(u, from), 0);
	for (unsigned int i = 0; i < N; i++) {
		t_eq(uswap_entry_type(entry[i]), (unsigned int)to);
		t_eq(uswap_swap_in(u, entry[i], 0, back), 0);
		t_assert_same_bytes(back, pages[i], USWAP_PAGE_SIZE, "moved by swapoff");
		t_eq(uswap_swap_free(u, entry[i], 0), 0);
	}
	t_eq_u64(stat_of(u, to, "keys"), 0); /* freed: wiped */
	t_true(stat_of(u, to, "keys_made") > 0);
	t_eq_u64(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* 2^30 slots need a 100+ MiB key table; 2^24 slots a 2.5 MiB key table
 * but 320 MiB of tags: both opens fail cleanly under the limit. */
static void test_a_table_that_cannot_be_allocated_fails_the_open(void **state)
{
	static const struct { uint64_t slots; const char *what; } cases[] = {
		{ UINT64_C(1) << 30, "key table" },
		{ UINT64_C(1) << 24, "tags" },
	};
#ifdef T_SANITIZED
	t_skip("a sanitizer's shadow memory does not fit under RLIMIT_AS");
	return;
#endif
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid = fork();
		int status;

		t_true(pid >= 0);
		if (pid == 0)
			open_under_limit(cases[i].slots, cases[i].what);
		t_eq(waitpid(pid, &status, 0), pid);
		t_true(WIFEXITED(status));
		t_eq(WEXITSTATUS(status), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crypt_round_trips_on_ram_zram_a_file_and_nbd),
		cmocka_unit_test(test_tampered_moved_and_replayed_blocks_read_as_eio),
		cmocka_unit_test(test_a_freed_cluster_loses_its_key),
		cmocka_unit_test(test_crypt_batches_go_async_and_fail_per_folio),
		cmocka_unit_test(test_swapoff_of_a_crypt_device_moves_every_page),
		cmocka_unit_test(test_a_table_that_cannot_be_allocated_fails_the_open),
	};
	return t_run(tests);
}
