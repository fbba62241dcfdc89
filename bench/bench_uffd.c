/* SPDX-License-Identifier: MIT */
/*
 * bench_uffd.c - `uswap bench uffd`: what it costs to serve a process's
 * missing-page faults from another process, against a thread of its own.
 *
 * The design question of issue 23 ("one swap subsystem per program"): a
 * daemon that holds every process's userfaultfd (handed over with
 * SCM_RIGHTS) and serves their faults with UFFDIO_COPY across the address
 * spaces, or fault handlers inside each process around a shared
 * allocator. The first costs, per fault, a switch to another address
 * space and an ioctl on a foreign mm; the second only what the pager pays
 * today. Both are measured here with nothing else in the way: a region
 * of never-touched folios is registered, and each first touch is served
 * by a UFFDIO_COPY of a ready folio (no swap path, no decompression), by
 * a server that blocks in read(2) or spins on a non-blocking one.
 * The time from the load to its return is one round trip.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CMD "bench uffd"
#define PAGE 4096u

static const char usage_text[] =
"Usage: uswap bench uffd [OPTIONS]\n"
"\n"
"Round trip of a missing-page fault served by UFFDIO_COPY of a ready\n"
"folio, by a thread of the faulting process against another process that\n"
"holds its userfaultfd (passed over a unix socket), each with a server\n"
"that blocks in read(2) and one that spins; alternating, --repeat times.\n"
"\n"
"Options:\n"
"  --folios N          folios touched per run (default 4096)\n"
"  --order K           folio order 0..4 (default 0 = 4 KiB)\n"
"  --repeat R          runs of each mode, alternating (default 3)\n"
"  --json              one JSON object on stdout\n"
"  -h, --help          show this help\n"
"\n"
"Output: per mode, the median and p99 round trip in us over all runs.\n"
"Needs a userfaultfd that takes kernel faults or user faults (root, or\n"
"vm.unprivileged_userfaultfd=1, or UFFD_USER_MODE_ONLY).\n"
"Exit status: 0 success, 1 runtime error, 2 usage error.\n";

struct uffd_opts {
	uint64_t folios;
	unsigned int order;
	unsigned int repeat;
	bool json;
};

/* Where the faulting side puts its round trips: shared with a child. */
struct uffd_run {
	size_t folio;     /* bytes */
	uint64_t folios;
	char *region;     /* the faulting side's; same address in a child */
	uint64_t *ns;     /* MAP_SHARED: one per folio, then the end flag
			     (set by the faulting side, thread or child) */
	int uffd;
	bool spin;
};

static bool touched_all(const struct uffd_run *r)
{
	return __atomic_load_n(&r->ns[r->folios], __ATOMIC_ACQUIRE) != 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1 /* USER_MODE_ONLY */);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int reg(int uffd, void *addr, size_t len)
{
	struct uffdio_register r = {
		.range = { (uintptr_t)addr, len }, .mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(uffd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

/* Serve faults until @r->done: each with a UFFDIO_COPY of @src. */
static void serve(struct uffd_run *r, const char *src)
{
	struct pollfd p = { .fd = r->uffd, .events = POLLIN };

	while (!touched_all(r)) {
		struct uffd_msg m;
		struct uffdio_copy c;

		if (read(r->uffd, &m, sizeof(m)) != sizeof(m)) {
			if (errno != EAGAIN)
				return; /* the child is gone: its mm with it */
			if (!r->spin)
				poll(&p, 1, 10);
			continue;
		}
		if (m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		c = (struct uffdio_copy){
			.dst = m.arg.pagefault.address & ~(uint64_t)(r->folio - 1),
			.src = (uintptr_t)src, .len = r->folio,
		};
		if (ioctl(r->uffd, UFFDIO_COPY, &c) && errno != EEXIST)
			return;
	}
}

static void *serve_thread(void *arg)
{
	struct uffd_run *r = arg;
	char *src = aligned_alloc(PAGE, r->folio);

	if (src) {
		memset(src, 0x5a, r->folio);
		serve(r, src);
	}
	free(src);
	return NULL;
}

/* First touch of every folio, in order; each round trip into r->ns. */
static int touch_all(struct uffd_run *r)
{
	for (uint64_t i = 0; i < r->folios; i++) {
		volatile char *a = r->region + i * r->folio;
		uint64_t t0 = now_ns();

		if (*a != 0x5a)
			break;
		r->ns[i] = now_ns() - t0;
	}
	__atomic_store_n(&r->ns[r->folios], 1, __ATOMIC_RELEASE); /* the server stops */
	for (uint64_t i = 0; i < r->folios; i++)
		if (r->region[i * r->folio] != 0x5a)
			return -EIO;
	return 0;
}

static int run_thread(struct uffd_run *r)
{
	pthread_t th;
	int err;

	r->uffd = open_uffd();
	if (r->uffd < 0)
		return r->uffd;
	err = reg(r->uffd, r->region, r->folios * r->folio);
	if (!err && (err = -pthread_create(&th, NULL, serve_thread, r)) == 0) {
		err = touch_all(r);
		pthread_join(th, NULL);
	}
	close(r->uffd);
	return err;
}

static void send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b = 'u';
	struct iovec io = { &b, 1 };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	if (sendmsg(sock, &m, 0) != 1)
		_exit(1);
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], b;
	struct iovec io = { &b, 1 };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)) || c->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

/* The child makes its userfaultfd and hands it over, waits until the
 * parent registered its region, touches it and ends; the parent serves. */
static int run_process(struct uffd_run *r)
{
	int sv[2], status, err = 0;
	char *src, go = 'g';
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open_uffd();

		close(sv[0]);
		if (fd < 0)
			_exit(3);
		send_fd(sv[1], fd);
		close(fd); /* the parent's copy keeps the context */
		if (read(sv[1], &go, 1) != 1)
			_exit(1);
		_exit(touch_all(r) ? 1 : 0);
	}
	close(sv[1]);
	r->uffd = recv_fd(sv[0]);
	if (r->uffd < 0) {
		err = r->uffd;
		goto out;
	}
	err = reg(r->uffd, r->region, r->folios * r->folio);
	src = aligned_alloc(PAGE, r->folio);
	if (!err && src) {
		memset(src, 0x5a, r->folio);
		if (write(sv[0], &go, 1) == 1)
			serve(r, src); /* until the child has touched every folio */
	}
	free(src);
	close(r->uffd);
out:
	close(sv[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		err = err ? err : -EIO;
	return err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static double pct_us(uint64_t *v, uint64_t n, unsigned int pct)
{
	uint64_t i = n * pct / 100;

	return (double)v[i < n ? i : n - 1] / 1000.0;
}

/* One run of @mode (0 thread blocking, 1 thread spinning, 2 process
 * blocking, 3 process spinning): round trips appended at @out. */
static int one_run(const struct uffd_opts *o, unsigned int mode, uint64_t *out)
{
	size_t folio = (size_t)PAGE << o->order, len = o->folios * folio;
	struct uffd_run r = { .folio = folio, .folios = o->folios, .spin = mode & 1 };
	int err;

	r.region = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	r.ns = mmap(NULL, (o->folios + 1) * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r.region == MAP_FAILED || r.ns == MAP_FAILED)
		return -ENOMEM;
	madvise(r.region, len, MADV_NOHUGEPAGE);
	err = mode < 2 ? run_thread(&r) : run_process(&r);
	memcpy(out, r.ns, o->folios * sizeof(uint64_t));
	munmap(r.region, len);
	munmap(r.ns, (o->folios + 1) * sizeof(uint64_t));
	return err;
}

static int parse(int argc, char **argv, struct uffd_opts *o)
{
	static const struct option opts[] = {
		{ "folios", required_argument, NULL, 'n' },
		{ "order", required_argument, NULL, 'o' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (cli_parse_u64(optarg, 16, 1 << 20, &o->folios))
				return cli_usage_error(CMD, "--folios: expected 16..1048576, "
						       "got '%s'", optarg);
			break;
		case 'o':
			if (cli_parse_uint(optarg, 0, 4, &o->order))
				return cli_usage_error(CMD, "--order: expected 0..4, got '%s'",
						       optarg);
			break;
		case 'r':
			if (cli_parse_uint(optarg, 1, 100, &o->repeat))
				return cli_usage_error(CMD, "--repeat: expected 1..100, got '%s'",
						       optarg);
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			return cli_usage_error(CMD, "unknown option or missing value: '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	return 0;
}

static const char *const mode_name[4] = {
	"thread, blocking", "thread, spinning", "process, blocking", "process, spinning",
};
static const char *const mode_key[4] = {
	"thread_blocking", "thread_spinning", "process_blocking", "process_spinning",
};

static void report(const struct uffd_opts *o, uint64_t *const ns[4], uint64_t n)
{
	struct cli_json j;

	for (unsigned int m = 0; m < 4; m++)
		qsort(ns[m], n, sizeof(uint64_t), cmp_u64);
	if (!o->json) {
		printf("%u KiB folios, %llu first touches per mode (%u runs)\n", 4u << o->order,
		       (unsigned long long)n, o->repeat);
		printf("%-20s %10s %10s\n", "server", "p50 us", "p99 us");
		for (unsigned int m = 0; m < 4; m++)
			printf("%-20s %10.1f %10.1f\n", mode_name[m], pct_us(ns[m], n, 50),
			       pct_us(ns[m], n, 99));
		return;
	}
	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_string(&j, "benchmark", "uffd");
	cli_json_u64(&j, "order", o->order);
	cli_json_u64(&j, "touches", n);
	for (unsigned int m = 0; m < 4; m++) {
		cli_json_object_open(&j, mode_key[m], false);
		cli_json_double(&j, "p50_us", pct_us(ns[m], n, 50));
		cli_json_double(&j, "p99_us", pct_us(ns[m], n, 99));
		cli_json_object_close(&j);
	}
	cli_json_object_close(&j);
	cli_json_finish(&j);
}

int cmd_bench_uffd(int argc, char **argv)
{
	struct uffd_opts o = { .folios = 4096, .repeat = 3 };
	uint64_t *ns[4] = { NULL }, n;
	int err = parse(argc, argv, &o), rc = CLI_EXIT_OK;

	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	n = o.folios * o.repeat;
	for (unsigned int m = 0; m < 4; m++)
		if (!(ns[m] = calloc(n, sizeof(uint64_t))))
			rc = cli_runtime_error(CMD, "out of memory");
	/* Alternate the modes, run after run, so drift hits each alike. */
	for (unsigned int r = 0; r < o.repeat && rc == CLI_EXIT_OK; r++) {
		for (unsigned int m = 0; m < 4 && rc == CLI_EXIT_OK; m++) {
			err = one_run(&o, m, ns[m] + r * o.folios);
			if (err)
				rc = cli_runtime_error(CMD, "%s: %s%s", mode_name[m], strerror(-err),
						       err == -EPERM ? " (userfaultfd needs root "
						       "or vm.unprivileged_userfaultfd=1)" : "");
		}
	}
	if (rc == CLI_EXIT_OK)
		report(&o, ns, n);
	for (unsigned int m = 0; m < 4; m++)
		free(ns[m]);
	return rc;
}
