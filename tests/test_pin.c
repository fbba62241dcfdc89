// SPDX-License-Identifier: MIT
/*
 * Description: pages the kernel holds pinned are never evicted (issue
 * "Wrong data returned as success", item 4). An io_uring read into a
 * registered (pinned) buffer of a region, with the region under eviction
 * pressure between the registration and the read, delivers its bytes to
 * the program; so do O_DIRECT reads in flight while other memory of the
 * region is churned. Before move-out eviction the pager zapped such pages
 * under the pin: the read completed into a page no one mapped, and the
 * program read the copy taken before the read, as success.
 *
 * Needs userfaultfd with UFFDIO_MOVE (kernel 6.8) and io_uring; each test
 * skips with the reason when they are missing (exit 77 when all do).
 */
#include <fcntl.h>
#include <liburing.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "t_util.h"

#define PAGE  USWAP_PAGE_SIZE
#define LIMIT (2u << 20)
#define BUF   (1u << 20) /* the pinned buffer, half the limit */

static struct uswap *u;
static struct uswap_pager *pg;

static int setup(void **state)
{
	char err[256];
	int type;

	u = t_create(0, 0);
	type = uswap_swapon_spec(u, "zram:64M", err, sizeof(err));
	if (type < 0)
		fail_msg("swapon zram:64M = %d: %s", type, err);
	pg = NULL;
	return 0;
}

static int teardown(void **state)
{
	uswap_pager_destroy(pg);
	pg = NULL;
	uswap_destroy(u);
	u = NULL;
	return 0;
}

static struct uswap_pager_stats pstats(void)
{
	struct uswap_pager_stats st = { .size = sizeof(st) };

	t_eq(uswap_pager_stats_get(pg, &st), 0);
	return st;
}

/* A pager that evicts by moving folios out; skips where the kernel lacks
 * userfaultfd or UFFDIO_MOVE. */
static void pager_start(void)
{
	struct uswap_pager_config c = {
		.limit_bytes = LIMIT, .nr_handlers = 1, .reclaim_batch = 64,
		.flags = USWAP_PAGER_KERNEL_FAULTS,
	};
	int rc = uswap_pager_create(u, &c, &pg);

	if (rc == -EPERM || rc == -ENOSYS)
		t_skip("no userfaultfd for kernel faults here (run as root, kernel 5.7+)");
	t_eq(rc, 0);
	if (!pstats().uffd_move)
		t_skip("the kernel has no UFFDIO_MOVE (6.8+): eviction is not pin-safe here");
}

static char *region(size_t size)
{
	void *addr = NULL;

	t_eq(uswap_region_create(pg, size, &addr), 0);
	return addr;
}

/* Touch @len bytes at @a (a write per page): pressure on the limit. */
static void churn(char *a, size_t len, char byte)
{
	for (size_t off = 0; off < len; off += PAGE)
		a[off] = byte;
}

/* A file of @len bytes of @byte in the current directory (a disk
 * file system, for O_DIRECT), unlinked already. */
static int data_file(size_t len, char byte)
{
	char name[] = "test_pin.XXXXXX";
	int fd = mkstemp(name);
	char *b = malloc(len);

	t_true(fd >= 0 && b);
	unlink(name);
	memset(b, byte, len);
	t_eq(pwrite(fd, b, len, 0), (long long)len);
	t_eq(fsync(fd), 0);
	free(b);
	return fd;
}

static size_t count_not(const char *a, size_t len, char byte)
{
	size_t bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += a[i] != byte;
	return bad;
}

static struct io_uring ring_init(void)
{
	struct io_uring ring;
	int rc = io_uring_queue_init(64, &ring, 0);

	if (rc == -ENOSYS || rc == -EPERM)
		t_skip("io_uring is not available here");
	t_eq(rc, 0);
	return ring;
}

/* The buffer is registered (pinned), then the region is churned to 4x
 * the limit, then a READ_FIXED lands in it: the program must see it. */
static void test_pin_io_uring_fixed_buffer_keeps_the_read(void **state)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	char *base, *buf;
	struct iovec iov;
	int fd;

	pager_start();
	fd = data_file(BUF, 'B');
	base = region(BUF + 4 * LIMIT);
	buf = base;
	memset(buf, 'A', BUF);
	ring = ring_init();
	iov = (struct iovec){ buf, BUF };
	t_eq(io_uring_register_buffers(&ring, &iov, 1), 0);
	churn(base + BUF, 4 * LIMIT, 'x'); /* evicts all it may */
	t_true(pstats().evict_pinned > 0);
	io_uring_prep_read_fixed(io_uring_get_sqe(&ring), fd, buf, BUF, 0, 0);
	t_eq(io_uring_submit(&ring), 1);
	t_eq(io_uring_wait_cqe(&ring, &cqe), 0);
	t_eq(cqe->res, BUF);
	io_uring_cqe_seen(&ring, cqe);
	churn(base + BUF, 4 * LIMIT, 'y');
	t_eq_u64(count_not(buf, BUF, 'B'), 0);
	t_true(pstats().resident_bytes <= LIMIT + BUF); /* pinned pages over it */
	t_eq(io_uring_unregister_buffers(&ring), 0);
	io_uring_queue_exit(&ring);
	close(fd);
	t_eq(uswap_region_destroy(pg, base), 0);
}

/* 64 O_DIRECT reads of 16 KiB in flight into the region (pinned for the
 * I/O) while another thread of work (here: this one) churns the region:
 * every buffer must hold the file's bytes. Rounds repeat the race. */
static void test_pin_odirect_reads_in_flight_keep_their_data(void **state)
{
	const size_t chunk = 16 * 1024, nr = 64, span = nr * chunk;
	struct io_uring ring;
	char path[64], *base;
	size_t bad = 0;
	int fd, dfd;

	pager_start();
	fd = data_file(span, 'D');
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd); /* unlinked */
	dfd = open(path, O_RDONLY | O_DIRECT);
	if (dfd < 0)
		t_skip("O_DIRECT is not supported by this directory's file system");
	base = region(span + 4 * LIMIT);
	ring = ring_init();
	for (int round = 0; round < 20; round++) {
		memset(base, 'A', span);
		for (size_t i = 0; i < nr; i++)
			io_uring_prep_read(io_uring_get_sqe(&ring), dfd, base + i * chunk,
					   (unsigned int)chunk, i * chunk);
		t_eq(io_uring_submit(&ring), (long long)nr);
		churn(base + span, 4 * LIMIT, (char)round);
		for (size_t i = 0; i < nr; i++) {
			struct io_uring_cqe *cqe;

			t_eq(io_uring_wait_cqe(&ring, &cqe), 0);
			t_eq(cqe->res, (long long)chunk);
			io_uring_cqe_seen(&ring, cqe);
		}
		churn(base + span, 4 * LIMIT, (char)~round);
		bad += count_not(base, span, 'D');
	}
	print_message("O_DIRECT: %llu evictions, %llu refused for pins, %zu bad bytes\n",
		      (unsigned long long)pstats().evictions,
		      (unsigned long long)pstats().evict_pinned, bad);
	t_eq_u64(bad, 0);
	io_uring_queue_exit(&ring);
	close(dfd);
	close(fd);
	t_eq(uswap_region_destroy(pg, base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pin_io_uring_fixed_buffer_keeps_the_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_odirect_reads_in_flight_keep_their_data, setup, teardown),
	};

	return t_run(tests);
}
