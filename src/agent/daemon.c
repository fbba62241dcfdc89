// SPDX-License-Identifier: MIT
/*
 * daemon.c - the agent's side of `uswap run --daemon` (<uswap/daemon.h>):
 * the process hands its userfaultfd to uswap run, which keeps the tree's
 * devices, swap cache and limit and serves this process's faults; here
 * only the requests (one at a time, under req_lock) and the zap thread,
 * which unmaps what uswap run evicted: no system call can do that from
 * another process.
 *
 * uswap run gone (killed, crashed): the zap socket reads end-of-file.
 * The process then ends at once with SIGKILL, as a process whose swap
 * device vanished cannot run on: its swapped-out pages exist nowhere
 * else. The agent keeps its own copy of the userfaultfd open until then,
 * so that no fault on a swapped page is resolved with zeros meanwhile
 * (the kernel would unregister the ranges once the last copy closed).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <uswap/daemon.h>
#include <uswap/pager.h>
#include <uswap/uswap.h>

#include "agent/agent.h"

static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctl_fd = -1;  /* requests */
static int zap_fd = -1;  /* zap requests from uswap run */
static int uffd = -1;    /* our copy of the userfaultfd */

/* "uswap run ... is gone", with what failed (@what) and how: @n, the
 * call's result (0: the other end closed), errno else. Nothing here reads
 * the heap (strerror() reads the locale's data): what is swapped out
 * there has nobody left to bring it in. */
static void __attribute__((noreturn)) daemon_gone(const char *what, ssize_t n)
{
	static const char a[] = "uswap run: agent: uswap run (the swap daemon of this "
				"process) is gone (";
	static const char b[] = "): the process ends\n";
	char msg[256], num[16];
	size_t len = 0, k = 0;
	int e = errno;

	memcpy(msg, a, sizeof(a) - 1);
	len = sizeof(a) - 1;
	for (; *what && len < 160; what++)
		msg[len++] = *what;
	if (n == 0) {
		memcpy(msg + len, ": closed", 8);
		len += 8;
	} else {
		memcpy(msg + len, ": errno ", 8);
		len += 8;
		do
			num[k++] = (char)('0' + e % 10);
		while ((e /= 10) && k < sizeof(num));
		while (k)
			msg[len++] = num[--k];
	}
	memcpy(msg + len, b, sizeof(b) - 1);
	len += sizeof(b) - 1;
	if (write(STDERR_FILENO, msg, len) < 0) {
		/* nothing more to say it with */
	}
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

/* A zap request: its ranges unmapped in one call where the kernel allows
 * (uswap_pager_zap_self()). */
static void *zap_main(void *arg)
{
	struct uswap_daemon_zap z;
	struct iovec iov[USWAP_DAEMON_ZAP_MAX];

	(void)arg;
	for (;;) {
		ssize_t n = recv(zap_fd, &z, sizeof(z), 0);
		uint32_t nr = 0;
		int32_t rc;

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			daemon_gone("a zap request", n);
		}
		for (; nr < z.n && nr < USWAP_DAEMON_ZAP_MAX; nr++) {
			iov[nr].iov_base = (void *)(uintptr_t)z.r[nr].addr;
			iov[nr].iov_len = z.r[nr].len;
		}
		rc = uswap_pager_zap_self(iov, nr);
		while ((n = send(zap_fd, &rc, sizeof(rc), MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		if (n != sizeof(rc))
			daemon_gone("a zap answer", n);
	}
	return NULL;
}

/* Send HELLO with our userfaultfd and the zap socket's other end. */
static int hello(int fd, int peer, unsigned int caps, uint64_t image_ns)
{
	struct uswap_daemon_req q = { .op = USWAP_DOP_HELLO, .version = USWAP_DAEMON_VERSION,
				      .addr = image_ns, .arg = caps };
	struct uswap_daemon_reply a;
	int fds[2] = { uffd, peer };
	char ctl[CMSG_SPACE(sizeof(fds))];
	struct iovec io = { &q, sizeof(q) };
	struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;
	ssize_t n;

	memset(ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	while ((n = sendmsg(fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(q))
		return -ECONNRESET;
	while ((n = recv(fd, &a, sizeof(a), 0)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(a))
		return -ECONNRESET;
	return (int)a.rc;
}

/* Our descriptors live high, near the soft limit (bash and autoconf's
 * configure write to 3..9 and 255, `exec {var}>` takes 10 upwards), so a
 * program rarely meets them; dup2() onto one moves it first (below). */
static int high_fd(int fd)
{
	struct rlimit rl;
	int base = 3, high;

	if (fd < 0)
		return fd;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur >= 256 && rl.rlim_cur != RLIM_INFINITY)
		base = (int)rl.rlim_cur - 64;
	else if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur == RLIM_INFINITY)
		base = 1000;
	high = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (high < 0)
		return agent_fd_above_stdio(fd);
	syscall(SYS_close, fd);
	return high;
}

int agent_daemon_connect(const char *name, uint64_t image_ns)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	unsigned int caps = 0;
	int zp[2], rc;
	pthread_t th;

	if (!len || len + 1 > sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path + 1, name, len); /* abstract: sun_path[0] = 0 */
	uffd = uswap_pager_target_open(USWAP_PAGER_KERNEL_FAULTS, &caps);
	if (uffd < 0)
		return uffd;
	uffd = high_fd(uffd);
	ctl_fd = high_fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	if (ctl_fd < 0)
		return -errno;
	/* A full backlog makes it wait, and a signal of the program's end
	 * the wait (a unix socket's connect() may be tried again). */
	while ((rc = connect(ctl_fd, (struct sockaddr *)&sa,
			     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len))) &&
	       errno == EINTR)
		;
	if (rc)
		return -errno;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, zp))
		return -errno;
	zap_fd = high_fd(zp[0]);
	zp[1] = agent_fd_above_stdio(zp[1]);
	rc = hello(ctl_fd, zp[1], caps, image_ns);
	close(zp[1]);
	if (rc)
		return rc;
	if ((rc = agent_thread_create(&th, zap_main, NULL)))
		return -rc;
	pthread_detach(th);
	agent.remote = true;
	return 0;
}

long agent_daemon_call(unsigned int op, void *addr, size_t len, uint64_t arg)
{
	struct uswap_daemon_req q = { .op = op, .version = USWAP_DAEMON_VERSION,
				      .addr = (uintptr_t)addr, .len = len, .arg = arg };
	struct uswap_daemon_reply a = { 0 };
	const char *failed = NULL;
	ssize_t n;

	/* A signal of the program's (a shell's SIGCHLD) may interrupt either
	 * call: a packet goes whole or not at all, so it is tried again. */
	pthread_mutex_lock(&req_lock);
	while ((n = send(ctl_fd, &q, sizeof(q), MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != sizeof(q))
		failed = "a request";
	else if (op != USWAP_DOP_FALLBACKS) {
		while ((n = recv(ctl_fd, &a, sizeof(a), 0)) < 0 && errno == EINTR)
			;
		if (n != sizeof(a))
			failed = "an answer";
	}
	pthread_mutex_unlock(&req_lock);
	if (failed)
		daemon_gone(failed, n);
	return (long)a.rc;
}

void agent_daemon_fork_lock(void)
{
	pthread_mutex_lock(&req_lock);
}

void agent_daemon_fork_unlock(void)
{
	pthread_mutex_unlock(&req_lock);
}

void agent_daemon_forget(void)
{
	pthread_mutex_init(&req_lock, NULL);
	/* Not close(): ours refuses these three. */
	syscall(SYS_close, ctl_fd);
	syscall(SYS_close, zap_fd); /* the parent's zap thread keeps its end */
	syscall(SYS_close, uffd);
	ctl_fd = zap_fd = uffd = -1;
	agent.remote = false;
}

/* ------------------------------------------------------------------------
 * The program must not close our descriptors: a forked child that closes
 * every descriptor before its exec (Python's subprocess, closefrom())
 * would otherwise end its pager's connection, and a descriptor number
 * reused by the program's next open would take our requests.
 * ---------------------------------------------------------------------- */

static bool ours(unsigned int fd)
{
	return agent.remote && ((int)fd == ctl_fd || (int)fd == zap_fd || (int)fd == uffd);
}

__attribute__((visibility("default"))) int close(int fd)
{
	if (fd >= 0 && ours((unsigned int)fd))
		return 0; /* as if closed; the number is not reused */
	return (int)syscall(SYS_close, fd);
}

/* close_range(2) over [@first, @last] but ours: the gaps between them. */
__attribute__((visibility("default"))) int close_range(unsigned int first, unsigned int last,
						     int flags)
{
	int keep[3] = { ctl_fd, zap_fd, uffd };
	unsigned int from = first;

	if (!agent.remote)
		return (int)syscall(SYS_close_range, first, last, flags);
	for (int i = 0; i < 3; i++) /* sorted, three elements */
		for (int j = i + 1; j < 3; j++)
			if (keep[j] < keep[i]) {
				int t = keep[i];

				keep[i] = keep[j];
				keep[j] = t;
			}
	for (int i = 0; i < 3; i++) {
		if (keep[i] < 0 || (unsigned int)keep[i] < from || (unsigned int)keep[i] > last)
			continue;
		if ((unsigned int)keep[i] > from &&
		    syscall(SYS_close_range, from, (unsigned int)keep[i] - 1, flags))
			return -1;
		if ((unsigned int)keep[i] == last)
			return 0;
		from = (unsigned int)keep[i] + 1;
	}
	return (int)syscall(SYS_close_range, from, last, flags);
}

/* @fd, about to be replaced by dup2()/dup3(): if it is ours, ours moves
 * to another number first (requests wait: none is half sent on it). */
static void move_ours(int fd)
{
	if (fd < 0 || !ours((unsigned int)fd))
		return;
	pthread_mutex_lock(&req_lock);
	int *which = fd == ctl_fd ? &ctl_fd : fd == zap_fd ? &zap_fd : &uffd;
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);

	if (moved >= 0)
		*which = moved; /* the old number goes to the program's file */
	pthread_mutex_unlock(&req_lock);
}

__attribute__((visibility("default"))) int dup2(int oldfd, int newfd)
{
	if (oldfd == newfd) /* dup2()'s own case: valid or EBADF */
		return fcntl(oldfd, F_GETFD) < 0 ? -1 : newfd;
	move_ours(newfd);
	return (int)syscall(SYS_dup3, oldfd, newfd, 0); /* not every arch has dup2 */
}

__attribute__((visibility("default"))) int dup3(int oldfd, int newfd, int flags)
{
	if (oldfd != newfd)
		move_ours(newfd);
	return (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

__attribute__((visibility("default"))) void closefrom(int lowfd)
{
	close_range(lowfd < 0 ? 0 : (unsigned int)lowfd, ~0u, 0);
}
