// SPDX-License-Identifier: MIT
/*
 * Description: a pager serving another process (uswap_pager_config.target,
 * issue 23's daemon shape). The test forks target processes before it
 * makes anything of its own; each opens its userfaultfd
 * (uswap_pager_target_open()), maps 16 MiB and sends both over a unix
 * socket, then writes and checks hashed data (little of it compresses)
 * while a thread of its own answers the server's zap requests with
 * madvise(MADV_DONTNEED). The test process holds the instance, the zram
 * device and the pagers, and checks: every byte comes back in the target;
 * the target's anonymous RSS stays within the 2 MiB limit plus a small
 * bound while the data it swapped is 8x that (the pool is the server's);
 * two targets share one instance and one charge group; a target killed
 * with SIGKILL mid-run leaves no slot behind once its pager is destroyed;
 * a target pager refuses what only its own memory allows.
 *
 * Needs userfaultfd usable for kernel faults (root); skips otherwise.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "t_util.h"

#define PAGE   USWAP_PAGE_SIZE
#define LIMIT  (2u << 20)
#define SPAN   (16u << 20) /* 8x the limit */
#define PASSES 3
#define ZAP_MAX 64         /* ranges per request */
/* What a target may have resident beyond the limit: its own stack,
 * libc's and cmocka's pages, a zap being answered. */
#define RSS_SLACK (3u << 20)

enum { MODE_PLAIN, MODE_FORK, MODE_FORK_WINDOW, MODE_DISCARD };

struct hello {
	uint64_t addr;          /* 0: the open failed, caps is its errno */
	unsigned int caps;
	pid_t pid;
};

struct zap_req {
	uint32_t n;
	struct { uint64_t addr, len; } r[ZAP_MAX];
};

/* One target process, as the server sees it. */
struct target {
	pid_t pid;
	int sock;               /* SOCK_SEQPACKET to it */
	pthread_mutex_t lock;   /* one zap request at a time */
	char *addr;             /* its region, in its address space */
	unsigned int caps;
	int uffd;
	size_t span;            /* what its pager adopts: SPAN unless set */
	struct uswap_pager *pg;
};

/* ------------------------------------------------------------------------
 * The target's side (a forked child: exits, never returns)
 * ---------------------------------------------------------------------- */

static uint64_t word(uint64_t page, unsigned int pass, unsigned int w)
{
	uint64_t x = page * 0x9e3779b97f4a7c15ull ^ ((uint64_t)pass << 56) ^ w;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

static void child_fill(char *m, unsigned int pass)
{
	for (uint64_t pg = 0; pg < SPAN / PAGE; pg++) {
		uint64_t *w = (uint64_t *)(m + pg * PAGE);

		for (unsigned int i = 0; i < PAGE / 8; i += 8)
			w[i] = word(pg, pass, i);
	}
}

static unsigned long child_check(const char *m, unsigned int pass)
{
	unsigned long bad = 0;

	for (uint64_t pg = 0; pg < SPAN / PAGE; pg++) {
		const uint64_t *w = (const uint64_t *)(m + pg * PAGE);

		for (unsigned int i = 0; i < PAGE / 8; i++)
			if (w[i] != (i % 8 ? 0 : word(pg, pass, i))) {
				bad++;
				break;
			}
	}
	return bad;
}

/* The target's zap thread: MADV_DONTNEED what the server asks, answer
 * the first error (0 when all went). Ends when the server closes. */
static void *child_zapper(void *arg)
{
	int sock = (int)(intptr_t)arg;
	struct zap_req q;

	for (;;) {
		ssize_t n = recv(sock, &q, sizeof(q), 0);
		struct iovec iov[ZAP_MAX];
		uint32_t nr = 0;
		int rc;

		if (n <= 0)
			return NULL;
		for (; nr < q.n && nr < ZAP_MAX; nr++)
			iov[nr] = (struct iovec){ (void *)(uintptr_t)q.r[nr].addr, q.r[nr].len };
		rc = uswap_pager_zap_self(iov, nr);
		if (send(sock, &rc, sizeof(rc), 0) != sizeof(rc))
			return NULL;
	}
}

/* Send @data with the @n descriptors @fds over @sock (SCM_RIGHTS). */
static int send_fds(int sock, const int *fds, unsigned int n, const void *data, size_t len)
{
	char ctl[CMSG_SPACE(2 * sizeof(int))] = { 0 };
	struct iovec io = { (void *)data, len };
	struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1,
			     .msg_control = ctl, .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	return sendmsg(sock, &mh, 0) == (ssize_t)len ? 0 : -1;
}

static void __attribute__((noreturn)) forker(char *m, int ctl, bool window);

/* Hand our userfaultfd and region to the server on @ctl, answer zaps on
 * @zsock; wait for its go. Return: 0, or -1 (setup failed). */
static int child_hello(char *m, int zsock, int ctl)
{
	struct hello hello = { .pid = getpid() };
	pthread_t th;
	char go;
	int fd = uswap_pager_target_open(USWAP_PAGER_KERNEL_FAULTS, &hello.caps);

	if (fd < 0) {
		hello.addr = 0;
		hello.caps = (unsigned int)-fd;
		send(ctl, &hello, sizeof(hello), 0);
		return -1;
	}
	hello.addr = (uintptr_t)m;
	if (send_fds(ctl, &fd, 1, &hello, sizeof(hello)))
		return -1;
	close(fd);
	if (pthread_create(&th, NULL, child_zapper, (void *)(intptr_t)zsock))
		return -1;
	pthread_detach(th);
	return recv(ctl, &go, 1, 0) == 1 ? 0 : -1;
}

/* Exit status: 0 all verified; 2 setup failed; 3 + min(bad, 100) pages
 * wrong. A second socket (@ctl) says when the server is ready. With
 * MODE_FORK the target forks after its first pass (forker()); with
 * MODE_DISCARD the server discards a range of it (discarder()). */
static void __attribute__((noreturn)) discarder(char *m, int ctl);

static void __attribute__((noreturn)) child_main(int zsock, int ctl, int mode)
{
	unsigned long bad = 0;
	char *m = mmap(NULL, SPAN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		_exit(2);
	madvise(m, SPAN, MADV_NOHUGEPAGE);
	if (child_hello(m, zsock, ctl))
		_exit(2);
	if (mode == MODE_FORK || mode == MODE_FORK_WINDOW)
		forker(m, ctl, mode == MODE_FORK_WINDOW);
	if (mode == MODE_DISCARD)
		discarder(m, ctl);
	for (unsigned int pass = 0; pass < PASSES; pass++) {
		child_fill(m, pass);
		bad += child_check(m, pass);
		bad += child_check(m, pass); /* again: every page back from swap */
	}
	_exit(bad ? 3 + (int)(bad < 100 ? bad : 100) : 0);
}

/* The forking target: pass 0 written (most of it swapped out), then a
 * fork announced to the server ("F", with the sockets the child will
 * use); the child checks pass 0 (its shared swapped-out folios) and
 * writes its own data; the parent checks pass 0 and writes other data.
 * With @window, the parent reads everything and writes pass 1 between
 * the server's share and the fork (as glibc's fork touches the heap
 * after the atfork handlers), and both then check pass 1.
 * Exit: as child_main(), both processes' results. */
/* The range test_target_discard() discards: not folio-aligned at
 * either end, so the ends are zeroed in the target from outside. */
#define DISCARD_AT  (3 * PAGE + 100)
#define DISCARD_LEN (40 * PAGE + 200)

/* Pass 0 written, "D" sent; once the server says "d", the discarded
 * range must read zeros and the rest pass 0. */
static void __attribute__((noreturn)) discarder(char *m, int ctl)
{
	unsigned long bad = 0;
	char ack;

	child_fill(m, 0);
	if (send(ctl, "D", 1, 0) != 1 || recv(ctl, &ack, 1, 0) != 1)
		_exit(2);
	for (size_t i = 0; i < SPAN; i += 8) {
		uint64_t w = *(uint64_t *)(m + i), want;
		size_t pg = i / PAGE, wi = (i % PAGE) / 8;

		if (i + 8 > DISCARD_AT && i < DISCARD_AT + DISCARD_LEN)
			want = 0; /* the words the range touches, partly */
		else
			want = wi % 8 ? 0 : word(pg, 0, (unsigned int)wi);
		if (i >= DISCARD_AT && i + 8 <= DISCARD_AT + DISCARD_LEN ? w != 0 :
		    (i + 8 <= DISCARD_AT || i >= DISCARD_AT + DISCARD_LEN) && w != want)
			bad++;
	}
	_exit(bad ? 3 + (int)(bad < 100 ? bad : 100) : 0);
}

/* The fork child touches its copy before any pager has it, as glibc's
 * start of a thread reads the locale's data in the heap: a word of every
 * 128th page read, the first word of every 256th written (with its own
 * value). Those folios are the zero page's, alone in their folios, until
 * uswap_pager_share_child() folds the parent's contents in. */
static void early_touch(char *m)
{
	uint64_t sum = 0;

	for (uint64_t pg = 0; pg < SPAN / PAGE; pg += 128) {
		sum += *(volatile uint64_t *)(m + pg * PAGE + 8);
		if (pg % 256 == 0)
			*(uint64_t *)(m + pg * PAGE) = word(pg, 0, 0);
	}
	if (sum) /* every word read is 0 in pass 0's pattern, or the zero page's */
		_exit(2);
}

static void __attribute__((noreturn)) forker(char *m, int ctl, bool window)
{
	int zs[2], cs[2], theirs[2], st;
	unsigned int seen = window ? 1 : 0;
	unsigned long bad = 0;
	char ack;
	pid_t pid;

	child_fill(m, 0);
	bad += child_check(m, 0);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, zs) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cs))
		_exit(2);
	theirs[0] = zs[0];
	theirs[1] = cs[0];
	if (send_fds(ctl, theirs, 2, "F", 1) || recv(ctl, &ack, 1, 0) != 1)
		_exit(2);
	if (window) { /* faults while the share is held */
		bad += child_check(m, 0);
		child_fill(m, 1);
	}
	pid = fork();
	if (pid == 0) {
		if (!window) /* a folio mapped by the parent has no early touch */
			early_touch(m);
		if (child_hello(m, zs[1], cs[1]))
			_exit(2);
		bad += child_check(m, seen);
		child_fill(m, 7);
		bad += child_check(m, 7);
		_exit(bad ? 3 + (int)(bad < 100 ? bad : 100) : 0);
	}
	/* Our atfork parent handler, as the agent's: the server marks
	 * what the fork copied before this process writes on. */
	if (pid < 0 || send(ctl, "P", 1, 0) != 1 || recv(ctl, &ack, 1, 0) != 1)
		_exit(2);
	bad += child_check(m, seen);
	child_fill(m, 2);
	bad += child_check(m, 2);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		_exit(WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : 2);
	_exit(bad ? 3 + (int)(bad < 100 ? bad : 100) : 0);
}

/* ------------------------------------------------------------------------
 * The server's side
 * ---------------------------------------------------------------------- */

static int zap(void *arg, const struct iovec *r, unsigned int n)
{
	struct target *t = arg;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned int done = 0; done < n && !rc;) {
		struct zap_req q = { .n = n - done < ZAP_MAX ? n - done : ZAP_MAX };

		for (uint32_t i = 0; i < q.n; i++) {
			q.r[i].addr = (uintptr_t)r[done + i].iov_base;
			q.r[i].len = r[done + i].iov_len;
		}
		if (send(t->sock, &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q) ||
		    recv(t->sock, &rc, sizeof(rc), 0) != sizeof(rc))
			rc = -EPIPE;
		done += q.n;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* Fork a target and take its descriptor and region address. */
/* The target's hello on @ctl: its region, caps, pid and userfaultfd. */
static void target_hello(struct target *t, int ctl)
{
	struct hello hello;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec io = { &hello, sizeof(hello) };
	struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	t_eq(recvmsg(ctl, &mh, 0), (ssize_t)sizeof(hello));
	if (!hello.addr) {
		kill(hello.pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		if (hello.caps == EPERM || hello.caps == ENOSYS)
			t_skip("no userfaultfd for kernel faults here (run as root, kernel 5.7+)");
		fail_msg("target: uswap_pager_target_open = -%u", hello.caps);
	}
	c = CMSG_FIRSTHDR(&mh);
	t_true(c && c->cmsg_type == SCM_RIGHTS);
	memcpy(&t->uffd, CMSG_DATA(c), sizeof(int));
	t->addr = (char *)(uintptr_t)hello.addr;
	t->caps = hello.caps;
	t->pid = hello.pid;
}

/* Fork a target in @mode (child_main()) and take its descriptor and
 * region address. */
static void target_spawn_mode(struct target *t, int *ctl, int mode)
{
	int zs[2], cs[2];
	pid_t pid;

	memset(t, 0, sizeof(*t));
	t->uffd = -1;
	t_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, zs), 0);
	t_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cs), 0);
	pid = fork();
	if (pid == 0) {
		close(zs[0]);
		close(cs[0]);
		child_main(zs[1], cs[1], mode);
	}
	t_true(pid > 0);
	close(zs[1]);
	close(cs[1]);
	t->pid = pid;
	t->sock = zs[0];
	*ctl = cs[0];
	pthread_mutex_init(&t->lock, NULL);
	target_hello(t, *ctl);
	t_eq(t->pid, pid);
}

static void target_spawn(struct target *t, int *ctl)
{
	target_spawn_mode(t, ctl, MODE_PLAIN);
}

static void target_serve_held(struct target *t, struct uswap *u, void *group, bool hold)
{
	struct uswap_pager_target tg = {
		.uffd = t->uffd, .pid = t->pid, .caps = t->caps, .zap = zap, .zap_arg = t,
	};
	struct uswap_pager_config c = {
		.limit_bytes = LIMIT, .nr_handlers = 1, .reclaim_batch = 64,
		.flags = USWAP_PAGER_KERNEL_FAULTS, .target = &tg, .group = group,
	};

	t_eq(uswap_pager_create(u, &c, &t->pg), 0);
	close(t->uffd); /* the pager keeps its own */
	t->uffd = -1;
	if (hold)
		t_eq(uswap_pager_hold(t->pg), 0);
	t_eq(uswap_region_adopt(t->pg, t->addr, t->span ? t->span : SPAN), 0);
}

static void target_serve(struct target *t, struct uswap *u, void *group)
{
	target_serve_held(t, u, group, false);
}

static uint64_t rss_anon(pid_t pid)
{
	char path[64], line[256];
	uint64_t kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

/* Wait for the targets, sampling their anonymous RSS; peak[i] gets each
 * one's, status[i] its wait status. */
static void targets_wait(struct target *t, unsigned int n, uint64_t *peak, int *status)
{
	unsigned int left = n;

	memset(peak, 0, n * sizeof(*peak));
	while (left) {
		for (unsigned int i = 0; i < n; i++) {
			uint64_t r;

			if (!t[i].pid)
				continue;
			r = rss_anon(t[i].pid);
			if (r > peak[i])
				peak[i] = r;
			if (waitpid(t[i].pid, &status[i], WNOHANG) == t[i].pid) {
				t[i].pid = 0;
				left--;
			}
		}
		nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
	}
}

static void target_end(struct target *t)
{
	uswap_pager_destroy(t->pg);
	t->pg = NULL;
	close(t->sock);
	pthread_mutex_destroy(&t->lock);
}

static struct uswap *instance(void)
{
	char err[256];
	struct uswap *u = t_create(0, 0);
	int type = uswap_swapon_spec(u, "zram:256M", err, sizeof(err));

	if (type < 0)
		fail_msg("swapon zram:256M = %d: %s", type, err);
	return u;
}

static void go(int ctl)
{
	t_eq(send(ctl, "g", 1, 0), 1);
}

/* A target in @mode, its instance and pager, told to go. Return: the
 * instance. */
static struct uswap *start_one(struct target *t, int *ctl, int mode)
{
	struct uswap *u;

	target_spawn_mode(t, ctl, mode);
	u = instance();
	target_serve(t, u, NULL);
	go(*ctl);
	return u;
}

/* start_one()'s end: the target exits 0, and once its pager is gone no
 * slot is left. */
static void finish_one(struct target *t, int ctl, struct uswap *u)
{
	uint64_t peak;
	int status;

	targets_wait(t, 1, &peak, &status);
	t_true(WIFEXITED(status));
	t_eq(WEXITSTATUS(status), 0);
	target_end(t);
	close(ctl);
	t_eq(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* One target under a 2 MiB limit: all data right, its RSS near the limit
 * though 16 MiB of poorly compressible data went through swap. */
static void test_target_round_trip(void **state)
{
	struct target t;
	struct uswap_pager_stats st = { .size = sizeof(st) };
	uint64_t base, peak;
	int ctl, status;
	struct uswap *u;

	target_spawn(&t, &ctl);
	base = rss_anon(t.pid);
	u = instance();
	target_serve(&t, u, NULL);
	go(ctl);
	targets_wait(&t, 1, &peak, &status);
	t_eq(uswap_pager_stats_get(t.pg, &st), 0);
	print_message("target: peak RssAnon %lu KiB (before %lu), %lu evictions, %lu swap-ins\n",
		      (unsigned long)(peak >> 10), (unsigned long)(base >> 10),
		      (unsigned long)st.evictions, (unsigned long)st.swapins);
	t_true(WIFEXITED(status));
	t_eq(WEXITSTATUS(status), 0);
	t_true(st.evictions >= PASSES * SPAN / PAGE / 2);
	t_true(st.swapins >= SPAN / PAGE);
	t_true(st.resident_peak_bytes <= LIMIT);
#if !defined(__SANITIZE_THREAD__) /* its shadow memory grows with every page written */
	t_true(peak <= base + LIMIT + RSS_SLACK);
#endif
	target_end(&t);
	close(ctl);
	t_eq(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* Two targets, one instance, one charge group of 2 MiB: each verifies,
 * the group's resident peak stays at the limit. */
static void test_two_targets_one_group(void **state)
{
	struct target t[2];
	struct uswap_pager_group_stats gs;
	uint64_t peak[2];
	int ctl[2], status[2];
	void *group = aligned_alloc(4096, USWAP_PAGER_GROUP_BYTES);
	struct uswap *u;

	t_true(group != NULL);
	for (int i = 0; i < 2; i++)
		target_spawn(&t[i], &ctl[i]);
	u = instance();
	t_eq(uswap_pager_group_init(group, USWAP_PAGER_GROUP_BYTES, LIMIT), 0);
	for (int i = 0; i < 2; i++)
		target_serve(&t[i], u, group);
	for (int i = 0; i < 2; i++)
		go(ctl[i]);
	targets_wait(t, 2, peak, status);
	t_eq(uswap_pager_group_stats(group, &gs), 0);
	print_message("two targets: group peak %lu KiB, members %lu\n",
		      (unsigned long)(gs.resident_peak_bytes >> 10), (unsigned long)gs.members);
	for (int i = 0; i < 2; i++) {
		t_true(WIFEXITED(status[i]));
		t_eq(WEXITSTATUS(status[i]), 0);
	}
	t_eq(gs.members, 2);
	/* Each handler may hold one folio over while it is being mapped. */
	t_true(gs.resident_peak_bytes <= LIMIT + 2 * PAGE);
	for (int i = 0; i < 2; i++) {
		target_end(&t[i]);
		close(ctl[i]);
	}
	t_eq(t_total_inuse(u), 0);
	uswap_destroy(u);
	free(group);
}

/* SIGKILL in the middle: the server notices nothing until it destroys the
 * pager, which frees every slot the process held. */
static void test_target_killed(void **state)
{
	struct target t;
	struct uswap_pager_stats st = { .size = sizeof(st) };
	int ctl, status;
	struct uswap *u;

	u = start_one(&t, &ctl, MODE_PLAIN);
	for (int i = 0; i < 2000; i++) { /* until it swapped some */
		t_eq(uswap_pager_stats_get(t.pg, &st), 0);
		if (st.evictions > 1024)
			break;
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	}
	t_true(st.evictions > 1024);
	t_true(t_total_inuse(u) > 0);
	kill(t.pid, SIGKILL);
	t_eq(waitpid(t.pid, &status, 0), t.pid);
	t_true(WIFSIGNALED(status));
	target_end(&t);
	close(ctl);
	t_eq(t_total_inuse(u), 0);
	uswap_destroy(u);
}

/* The forking target's "F": the two sockets its child will use. */
static void recv_fork(int ctl, int *zap_sock, int *child_ctl)
{
	char m = 0, cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct iovec io = { &m, 1 };
	struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fds[2];

	t_eq(recvmsg(ctl, &mh, 0), 1);
	t_eq(m, 'F');
	c = CMSG_FIRSTHDR(&mh);
	t_true(c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(fds)));
	memcpy(fds, CMSG_DATA(c), sizeof(fds));
	*zap_sock = fds[0];
	*child_ctl = fds[1];
}

/* Waits on @fd end after @s seconds (a test that fails, not one that
 * hangs, where the old code never answered). */
static void recv_timeout(int fd, int s)
{
	struct timeval tv = { .tv_sec = s };

	t_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
}

/* A target forks with most of its 16 MiB swapped out: the child's pager
 * (adopting the first @span bytes) takes those folios on the parent's
 * slots (uswap_pager_share_*()), nothing read for the fork, and folds in
 * those the child touched first (early_touch()); past @span (a range its
 * agent could not adopt) they are written into place. The child reads
 * the parent's data, then each process writes and checks its own; once
 * both are gone no slot is left. With @window the parent faults every
 * folio in and rewrites it between the share and the fork: those faults
 * are served (they waited for ever before, and the fork with them), and
 * the child, which has them all mapped, reads what the parent wrote. */
static void fork_shares(size_t span, bool window)
{
	struct target t, g;
	struct uswap_pager_share *sh = NULL;
	struct uswap_pager_stats st = { .size = sizeof(st) };
	struct uswap_pager_stats pst = { .size = sizeof(pst) };
	uint64_t peak;
	int ctl, gctl, status;
	long taken;
	char m = 0;
	struct uswap *u;

	u = start_one(&t, &ctl, window ? MODE_FORK_WINDOW : MODE_FORK);
	memset(&g, 0, sizeof(g));
	g.uffd = -1;
	g.span = span;
	recv_fork(ctl, &g.sock, &gctl);
	pthread_mutex_init(&g.lock, NULL);
	recv_timeout(ctl, 120);
	recv_timeout(gctl, 120);
	t_eq(uswap_pager_share_prepare(t.pg, &sh), 0); /* nothing read in */
	t_eq(send(ctl, "f", 1, 0), 1);
	t_eq(recv(ctl, &m, 1, 0), 1); /* forked */
	t_eq(m, 'P');
	t_eq(uswap_pager_stats_get(t.pg, &pst), 0);
	uswap_pager_share_parent(t.pg, sh);
	t_eq(send(ctl, "p", 1, 0), 1);
	target_hello(&g, gctl);
	target_serve_held(&g, u, NULL, true); /* nothing evicted before the share */
	taken = uswap_pager_share_child(g.pg, sh);
	uswap_pager_release(g.pg);
	print_message("fork: the child took %ld swapped-out folios of %u\n", taken,
		      SPAN / PAGE);
	go(gctl); /* before any assertion: a failed one leaves nobody waiting */
	t_eq(uswap_pager_stats_get(g.pg, &st), 0);
	targets_wait(&t, 1, &peak, &status);
	if (window) { /* every recorded folio was copied mapped: left as is */
		t_true(pst.fork_window >= (span - 2 * LIMIT) / PAGE);
		t_eq(taken, 0);
		t_eq(st.fork_folded, 0);
	} else {
		t_eq(pst.fork_window, 0);
		t_true(st.fork_folded >= 8 * span / SPAN); /* of early_touch()'s 32 pages */
		t_true(taken >= (long)((span - 2 * LIMIT) / PAGE));
		t_true(taken <= (long)(span / PAGE));
	}
	t_true(WIFEXITED(status));
	t_eq(WEXITSTATUS(status), 0); /* the child's status is in it */
	target_end(&g);
	target_end(&t);
	close(ctl);
	close(gctl);
	t_eq(t_total_inuse(u), 0);
	uswap_destroy(u);
}

static void test_target_fork_shares(void **state)
{
#if defined(__SANITIZE_THREAD__)
	t_skip("TSan: the target starts a thread after forking a threaded process");
#endif
	fork_shares(SPAN, false);
}

/* The child's agent adopted half of the range (the rest failed: a file
 * mapped into it, say): the other half's swapped-out folios are its
 * memory all the same (they read as zeros before). */
static void test_target_fork_shares_part(void **state)
{
#if defined(__SANITIZE_THREAD__)
	t_skip("TSan: the target starts a thread after forking a threaded process");
#endif
	fork_shares(SPAN / 2, false);
}

/* The parent faults while its fork's share is held (glibc's fork runs
 * the program's libc after the atfork handlers; a Python fork under
 * `uswap run --daemon` hung there): served, and the child reads what
 * the parent wrote before the fork. */
static void test_target_fork_window(void **state)
{
#if defined(__SANITIZE_THREAD__)
	t_skip("TSan: the target starts a thread after forking a threaded process");
#endif
	fork_shares(SPAN, true);
}

/* uswap_region_discard() of a target's range whose ends are not whole
 * folios: the folios inside go (zap request), the ends are zeroed in the
 * target (process_vm_writev), the rest is kept. */
static void test_target_discard(void **state)
{
	struct target t;
	int ctl;
	char m = 0;
	struct uswap *u;

	u = start_one(&t, &ctl, MODE_DISCARD);
	t_eq(recv(ctl, &m, 1, 0), 1);
	t_eq(m, 'D');
	t_eq(uswap_region_discard(t.pg, t.addr + DISCARD_AT, DISCARD_LEN), 0);
	t_eq(send(ctl, "d", 1, 0), 1);
	finish_one(&t, ctl, u);
}

/* A fork that never had a child: the record's references go (else the
 * slots would outlive both pagers). */
static void test_share_unused(void **state)
{
	struct target t;
	struct uswap_pager_share *sh = NULL;
	int ctl;
	struct uswap *u;

	u = start_one(&t, &ctl, MODE_PLAIN);
	/* Until a good part of it is out. */
	for (int i = 0; i < 2000 && t_total_inuse(u) < SPAN / PAGE / 2; i++)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
	t_eq(uswap_pager_share_prepare(t.pg, &sh), 0);
	uswap_pager_share_parent(t.pg, sh);
	uswap_pager_share_free(sh);
	t_eq(uswap_pager_share_child(NULL, NULL), -EINVAL);
	finish_one(&t, ctl, u);
}

static int nozap(void *arg, const struct iovec *r, unsigned int n)
{
	return 0;
}

/* What a target pager refuses: an incomplete target; region_create (the
 * memory is the target's to map); fork_prepare (the target forks). */
static void test_target_bad_input(void **state)
{
	struct target t;
	struct uswap *u;
	struct uswap_pager *pg = NULL;
	struct uswap_pager_target tg = { .uffd = -1, .pid = 1, .zap = nozap };
	struct uswap_pager_config c = {
		.limit_bytes = LIMIT, .nr_handlers = 1, .target = &tg,
		.flags = USWAP_PAGER_KERNEL_FAULTS,
	};
	void *addr;
	int ctl, status;

	target_spawn(&t, &ctl);
	u = instance();
	t_eq(uswap_pager_create(u, &c, &pg), -EINVAL);   /* no descriptor */
	tg.uffd = t.uffd;
	tg.zap = NULL;
	t_eq(uswap_pager_create(u, &c, &pg), -EINVAL);   /* no zap */
	tg.zap = nozap;
	tg.pid = 0;
	t_eq(uswap_pager_create(u, &c, &pg), -EINVAL);   /* no pid */
	tg.pid = t.pid;
	t_eq(uswap_pager_create(u, &c, &pg), 0);
	t_eq(uswap_region_create(pg, SPAN, &addr), -EOPNOTSUPP);
	t_eq(uswap_pager_fork_prepare(pg), -EINVAL);
	t_eq(uswap_region_adopt(pg, t.addr + PAGE / 2, SPAN), -EINVAL);
	uswap_pager_destroy(pg);
	close(t.uffd);
	kill(t.pid, SIGKILL);
	waitpid(t.pid, &status, 0);
	close(t.sock);
	close(ctl);
	uswap_destroy(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target_round_trip),
		cmocka_unit_test(test_two_targets_one_group),
		cmocka_unit_test(test_target_killed),
		cmocka_unit_test(test_target_fork_shares),
		cmocka_unit_test(test_target_fork_shares_part),
		cmocka_unit_test(test_target_fork_window),
		cmocka_unit_test(test_share_unused),
		cmocka_unit_test(test_target_discard),
		cmocka_unit_test(test_target_bad_input),
	};

	return t_run_group("pager_target", tests, sizeof(tests) / sizeof(tests[0]));
}
