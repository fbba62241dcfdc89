// SPDX-License-Identifier: MIT
/*
 * run_daemon.c - `uswap run --daemon`: uswap run is the swap subsystem of
 * CMD's whole tree, as the kernel's swap is of every process (issue 23,
 * docs/design.md, design A). It holds one swap instance with the devices
 * (their pools are its memory, outside every program's RSS), one swap
 * cache, the tree's charge group, and one pager per process, serving that
 * process's faults through the userfaultfd its agent hands over
 * (uswap_pager_config.target). The wire format is <uswap/daemon.h>.
 *
 * Threads: one accepts connections; one per process answers its agent's
 * requests in order and, at the connection's end (the image exits or
 * execs), saves the pager's figures and destroys it, which frees the
 * process's slots. Pager threads send zap requests on the process's zap
 * socket (client_zap()).
 */
#include "cli.h"
#include "run_cmd.h"
#include "run_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <uswap/daemon.h>
#include <uswap/lab.h>
#include <uswap/status.h>
#include <uswap/uswap.h>

/* ------------------------------------------------------------------------
 * One process
 * ---------------------------------------------------------------------- */

static int client_zap(void *arg, const struct iovec *r, unsigned int n)
{
	struct run_client *c = arg;
	int32_t rc = 0;

	pthread_mutex_lock(&c->zap_lock);
	for (unsigned int done = 0; done < n && !rc;) {
		struct uswap_daemon_zap z = { .n = n - done < USWAP_DAEMON_ZAP_MAX
							  ? n - done : USWAP_DAEMON_ZAP_MAX };

		for (uint32_t i = 0; i < z.n; i++) {
			z.r[i].addr = (uintptr_t)r[done + i].iov_base;
			z.r[i].len = r[done + i].iov_len;
		}
		if (send(c->zap, &z, sizeof(z), MSG_NOSIGNAL) != sizeof(z) ||
		    recv(c->zap, &rc, sizeof(rc), 0) != sizeof(rc))
			rc = -EPIPE;
		done += z.n;
	}
	pthread_mutex_unlock(&c->zap_lock);
	return rc;
}

/*
 * A folio of @c could not be read back (its pager's on_error, before the
 * faulting thread is woken to get SIGBUS there): one line naming the
 * process, the device and the error, as the agent's in-process line
 * does. The first few of the tree are said; the counts stay in the stats.
 */
#define READ_ERRORS_SAID 5

static void on_read_error(void *ctx, void *addr, int err)
{
	static pthread_mutex_t read_error_lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t seen[USWAP_MAX_DEVICES];
	static unsigned int said;
	struct run_client *c = ctx;
	char devs[512];

	pthread_mutex_lock(&read_error_lock);
	uswap_status_read_errors(c->d->u, seen, devs, sizeof(devs));
	if (said++ < READ_ERRORS_SAID)
		fprintf(stderr, "uswap run: pid %d: swapped-out memory at %p could not be read "
			"back from %s: %s; the program gets SIGBUS there%s\n", (int)c->pid, addr,
			devs[0] ? devs : "its device", strerror(-err),
			said == READ_ERRORS_SAID ? " (further read errors not said)" : "");
	pthread_mutex_unlock(&read_error_lock);
}

static void read_comm(struct run_client *c)
{
	char path[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)c->pid);
	f = fopen(path, "r");
	n = f ? fread(c->comm, 1, sizeof(c->comm) - 1, f) : 0;
	if (f)
		fclose(f);
	c->comm[n] = '\0';
	c->comm[strcspn(c->comm, "\n")] = '\0';
}

/* Are @uffd a userfaultfd and @zap a socket? A pipe in their place would
 * leave a pager thread reading it for ever. */
static bool hello_fds_ok(int uffd, int zap)
{
	char path[64], link[64];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", uffd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return !strcmp(link, "anon_inode:[userfaultfd]") && !fstat(zap, &st) &&
	       S_ISSOCK(st.st_mode);
}

/* HELLO: its two descriptors, its pid from the kernel, its pager.
 * Return: 0 or -errno (the connection ends). */
static int client_hello(struct run_client *c)
{
	struct run_daemon *d = c->d;
	struct uswap_daemon_req q;
	struct uswap_daemon_reply a;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fds[2] = { -1, -1 };
	char ctl[CMSG_SPACE(sizeof(fds))];
	struct iovec io = { &q, sizeof(q) };
	struct msghdr mh = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl,
			     .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	int rc = -EPROTO;

	if (recvmsg(c->sock, &mh, MSG_CMSG_CLOEXEC) != sizeof(q) ||
	    getsockopt(c->sock, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
		return -EPROTO;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(fds)))
		memcpy(fds, CMSG_DATA(cm), sizeof(fds));
	if (q.op == USWAP_DOP_HELLO && q.version == USWAP_DAEMON_VERSION && fds[0] >= 0 &&
	    hello_fds_ok(fds[0], fds[1])) {
		struct uswap_pager_target t = {
			.uffd = fds[0], .pid = cred.pid, .caps = (unsigned int)q.arg,
			.zap = client_zap, .zap_arg = c,
		};
		struct uswap_pager_config cfg = {
			.limit_bytes = d->limit, .order = d->order,
			.readahead_pages = d->readahead,
			.flags = USWAP_PAGER_KERNEL_FAULTS | d->pager_flags,
			.on_error = on_read_error,
			.error_ctx = c, .group = d->group, .target = &t,
		};

		pthread_mutex_lock(&d->lock); /* end_survivors() reads it */
		c->pid = cred.pid;
		pthread_mutex_unlock(&d->lock);
		c->image_ns = q.addr;
		c->zap = fds[1];
		fds[1] = -1;
		read_comm(c);
		rc = uswap_pager_create(d->u, &cfg, &c->pg);
		if (rc == -EUSERS) { /* the group is full: a limit of its own */
			cfg.group = NULL;
			rc = uswap_pager_create(d->u, &cfg, &c->pg);
		}
		if (!rc)
			run_status_publish(c);
	}
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	a.rc = rc;
	if (send(c->sock, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a) && !rc)
		rc = -EPIPE;
	return rc;
}

/* A fork's record of the parent's swapped-out folios, until its child
 * takes it (by token: the parent may fork again, or end, first), or the
 * parent says the fork failed (FORK_DROP). One that no child takes
 * otherwise (a child killed before its pager began) holds its slots until
 * the run ends. */
struct run_share {
	struct run_share *next;
	uint64_t token;
	struct uswap_pager_share *s;
};

static int64_t fork_prepare(struct run_client *c)
{
	struct run_daemon *d = c->d;
	struct run_share *sh = calloc(1, sizeof(*sh));
	long rc;

	if (!sh)
		return -ENOMEM;
	if (c->forking) /* a second prepare without its parent call */
		return -EBUSY;
	rc = uswap_pager_share_prepare(c->pg, &sh->s);
	if (rc < 0) {
		free(sh);
		return rc;
	}
	c->forking = sh->s;
	/* Random: another process of the user cannot name a child's. */
	while (getrandom(&sh->token, sizeof(sh->token), 0) != sizeof(sh->token) || !sh->token ||
	       sh->token > INT64_MAX)
		sh->token = 0;
	pthread_mutex_lock(&d->lock);
	sh->next = d->shares;
	d->shares = sh;
	pthread_mutex_unlock(&d->lock);
	return (int64_t)sh->token;
}

static int64_t fork_parent(struct run_client *c)
{
	struct uswap_pager_share *s = c->forking;

	if (!s)
		return -EINVAL;
	c->forking = NULL;
	/* @s is alive: its child's FORK_CHILD waits for this. */
	uswap_pager_share_parent(c->pg, s);
	return 0;
}

/* The record of @token, taken off the list (NULL: none). */
static struct run_share *share_take(struct run_daemon *d, uint64_t token)
{
	struct run_share **pp, *sh = NULL;

	pthread_mutex_lock(&d->lock);
	for (pp = &d->shares; *pp; pp = &(*pp)->next)
		if ((*pp)->token == token) {
			sh = *pp;
			*pp = sh->next;
			break;
		}
	pthread_mutex_unlock(&d->lock);
	return sh;
}

static int64_t fork_child(struct run_client *c, uint64_t token)
{
	struct run_share *sh = share_take(c->d, token);
	long rc;

	if (!sh)
		return -ENOENT;
	rc = uswap_pager_share_child(c->pg, sh->s);
	free(sh);
	return rc;
}

/* The fork failed: no child will take the record; its slots go now. */
static int64_t fork_drop(struct run_client *c, uint64_t token)
{
	struct run_share *sh = share_take(c->d, token);

	if (!sh)
		return -ENOENT;
	uswap_pager_share_free(sh->s);
	free(sh);
	return 0;
}

static int64_t client_call(struct run_client *c, const struct uswap_daemon_req *q)
{
	void *a = (void *)(uintptr_t)q->addr;

	switch (q->op) {
	case USWAP_DOP_FORK_PREPARE: return fork_prepare(c);
	case USWAP_DOP_FORK_PARENT:  return fork_parent(c);
	case USWAP_DOP_FORK_CHILD:   return fork_child(c, q->arg);
	case USWAP_DOP_FORK_DROP:    return fork_drop(c, q->arg);
	case USWAP_DOP_ADOPT:    return uswap_region_adopt(c->pg, a, q->len);
	case USWAP_DOP_DISOWN:   return uswap_region_disown(c->pg, a);
	case USWAP_DOP_REPLACED: return uswap_region_replaced(c->pg, a, q->len, q->arg != 0);
	case USWAP_DOP_MLOCK:    return uswap_region_mlock(c->pg, a, q->len);
	case USWAP_DOP_MUNLOCK:  return uswap_region_munlock(c->pg, a, q->len);
	case USWAP_DOP_DISCARD:  return uswap_region_discard(c->pg, a, q->len);
	case USWAP_DOP_HOLD:     return uswap_pager_hold(c->pg);
	case USWAP_DOP_RELEASE:  uswap_pager_release(c->pg); return 0;
	default:                 return -EINVAL;
	}
}

static void *client_main(void *arg)
{
	struct run_client *c = arg;
	struct uswap_daemon_req q;

	if (client_hello(c) == 0) {
		while (recv(c->sock, &q, sizeof(q), 0) == sizeof(q)) {
			struct uswap_daemon_reply a;

			if (q.op == USWAP_DOP_FALLBACKS) {
				atomic_store(&c->fallbacks, q.arg);
				continue;
			}
			a.rc = q.version == USWAP_DAEMON_VERSION ? client_call(c, &q) : -EPROTO;
			if (send(c->sock, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
				break;
		}
		if (c->forking) /* it ended inside its fork */
			fork_parent(c);
		run_status_unpublish(c);
		pthread_mutex_lock(&c->pg_lock);
		c->st.size = sizeof(c->st);
		uswap_pager_stats_get(c->pg, &c->st);
		c->devices = run_daemon_devices(c->d->u);
		uswap_pager_destroy(c->pg); /* its slots go */
		c->pg = NULL;
		pthread_mutex_unlock(&c->pg_lock);
	}
	close(c->sock);
	if (c->zap >= 0)
		close(c->zap);
	pthread_mutex_lock(&c->d->lock);
	atomic_store(&c->ended, true);
	pthread_cond_broadcast(&c->d->ended_cond); /* end_survivors() waits */
	pthread_mutex_unlock(&c->d->lock);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Connections
 * ---------------------------------------------------------------------- */

/* accept() failed for want of a descriptor (or memory): the process
 * waiting in the backlog would wait for ever. With the spare descriptor
 * given up, it is accepted and refused at once (its agent says so: a fork
 * child ends, another process runs unswapped), and said here once. */
static void accept_starved(struct run_daemon *d, int err)
{
	static bool said;
	int fd;

	if (!said) {
		said = true;
		fprintf(stderr, "uswap run: %s: a process of the tree could not be served "
			"(more processes than descriptors?)\n", strerror(err));
	}
	if (err != EMFILE && err != ENFILE) {
		struct timespec ms = { 0, 10 * 1000 * 1000 };

		nanosleep(&ms, NULL); /* ENOBUFS, ENOMEM: a moment, then again */
		return;
	}
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void *accept_main(void *arg)
{
	struct run_daemon *d = arg;

	for (;;) {
		int fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct run_client *c;

		if (fd < 0) {
			if (errno == EINVAL || errno == EBADF)
				return NULL; /* shut down (run_daemon_end()) */
			if (errno != EINTR && errno != ECONNABORTED)
				accept_starved(d, errno);
			continue;
		}
		/* Only this user's (or root's) processes; the name is secret too. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
		    (cred.uid != geteuid() && cred.uid != 0) || !(c = calloc(1, sizeof(*c)))) {
			close(fd);
			continue;
		}
		c->d = d;
		c->sock = fd;
		c->zap = -1;
		c->status_fd = -1;
		pthread_mutex_init(&c->zap_lock, NULL);
		pthread_mutex_init(&c->pg_lock, NULL);
		pthread_mutex_lock(&d->lock);
		c->next = d->clients;
		d->clients = c;
		if (pthread_create(&c->th, NULL, client_main, c)) {
			d->clients = c->next;
			close(fd);
			free(c);
		}
		pthread_mutex_unlock(&d->lock);
	}
}

/* Each process of the tree costs uswap run five descriptors (its
 * connection, zap socket, userfaultfd, pagemap, status socket): the soft
 * limit goes up to the hard one here, and back down for CMD
 * (run_daemon_child()), whose select() may count on it. */
static void raise_nofile(struct run_daemon *d)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	d->nofile_soft = rl.rlim_cur;
	d->nofile_raised = rl.rlim_cur < rl.rlim_max;
	rl.rlim_cur = rl.rlim_max;
	if (d->nofile_raised && setrlimit(RLIMIT_NOFILE, &rl))
		d->nofile_raised = false;
}

int run_daemon_trace(struct run_daemon *d, int fd)
{
	int rc;

	/* Opened without blocking (a FIFO no one reads is refused at once);
	 * from now on a slow reader slows the tree's swap, as the agent's
	 * recording slowed its program. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if ((rc = uswap_trace_record_start(d->u, fd, 0, NULL))) {
		close(fd);
		return cli_runtime_error("run", "--trace: %s", strerror(-rc));
	}
	d->tracing = true;
	return 0;
}

void run_daemon_child(const struct run_daemon *d)
{
	struct rlimit rl;

	if (d->nofile_raised && !getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = d->nofile_soft;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int run_daemon_start(const struct run_options *o, struct run_daemon *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t nonce = 0;
	char err[512];
	size_t len;
	int rc;

	memset(d, 0, sizeof(*d));
	d->lfd = -1;
	d->spare_fd = -1;
	d->status_wake = -1;
	d->limit = o->limit;
	d->order = o->order;
	d->readahead = run_readahead(o);
	d->pager_flags = o->no_workingset ? USWAP_PAGER_NO_WORKINGSET : 0;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->ended_cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = uswap_create(NULL, &d->u)))
		return cli_runtime_error("run", "uswap_create: %s", strerror(-rc));
	for (unsigned int i = 0; i < o->nr_devices; i++) {
		int type = uswap_swapon_spec(d->u, o->devices[i], err, sizeof(err));

		if (type < 0)
			return cli_runtime_error("run", "--device %s: %s", o->devices[i], err);
	}
	/* The group is this process's memory: every pager is here (nothing
	 * in /dev/shm to leave behind should uswap run be killed). */
	d->group = aligned_alloc(64, USWAP_PAGER_GROUP_BYTES);
	if (!d->group)
		return cli_runtime_error("run", "out of memory");
	if ((rc = uswap_pager_group_init(d->group, USWAP_PAGER_GROUP_BYTES, o->limit)))
		return cli_runtime_error("run", "the tree's charge group: %s", strerror(-rc));
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		return cli_runtime_error("run", "getrandom: %s", strerror(errno));
	snprintf(d->name, sizeof(d->name), "uswap-run-%d-%016llx", (int)getpid(),
		 (unsigned long long)nonce);
	len = strlen(d->name);
	memcpy(sa.sun_path + 1, d->name, len); /* abstract: gone with us */
	raise_nofile(d);
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	d->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (d->lfd < 0 ||
	    bind(d->lfd, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) ||
	    listen(d->lfd, 64))
		return cli_runtime_error("run", "the daemon's socket: %s", strerror(errno));
	if ((rc = pthread_create(&d->accept_th, NULL, accept_main, d)))
		return cli_runtime_error("run", "a thread: %s", strerror(rc));
	d->accepting = true;
	run_status_start(d); /* optional: `uswap status` just does not list the tree */
	return 0;
}

/* ------------------------------------------------------------------------
 * The end: every process gone, the figures written as the agents' lines
 * ---------------------------------------------------------------------- */

/* Whether a process of the tree is still connected. Context: d->lock. */
static bool any_connected(struct run_daemon *d)
{
	for (struct run_client *c = d->clients; c; c = c->next)
		if (!atomic_load(&c->ended) && c->pid > 0)
			return true;
	return false;
}

/* Wait until no process is connected or @secs have passed (woken by
 * each connection's end). Context: d->lock held. */
static void wait_connections(struct run_daemon *d, double secs)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)secs;
	until.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (any_connected(d) &&
	       pthread_cond_timedwait(&d->ended_cond, &d->lock, &until) != ETIMEDOUT)
		;
}

/* A process that has exited still looks connected until its thread here
 * reads the end of its socket: this long is given to those before the
 * rest is told to end. */
#define END_GRACE_S 0.05

/* Processes of the tree still connected when CMD ended (daemonized ones)
 * cannot outlive their swap: SIGTERM, then SIGKILL @kill_after seconds
 * later, as the guard does for CMD. Those that ended with CMD are only
 * waited for (CMD's pid, reaped already, is not signalled). */
static void end_survivors(struct run_daemon *d, double kill_after)
{
	pthread_mutex_lock(&d->lock);
	/* Under d->lock: the accept thread still adds processes (a
	 * survivor's fork children), which end with it. */
	wait_connections(d, END_GRACE_S);
	for (struct run_client *c = d->clients; c; c = c->next)
		if (!atomic_load(&c->ended) && c->pid > 0)
			kill(c->pid, SIGTERM);
	wait_connections(d, kill_after);
	for (struct run_client *c = d->clients; c; c = c->next)
		if (!atomic_load(&c->ended) && c->pid > 0)
			kill(c->pid, SIGKILL);
	pthread_mutex_unlock(&d->lock);
}

/* KiB still in use on the devices once every pager of the tree is gone
 * and every fork's record dropped: 0, or slots leaked. */
static int64_t slots_left_kb(struct uswap *u)
{
	struct uswap_device_info info;
	int64_t kb = 0;

	for (int type = 0; type < USWAP_MAX_DEVICES; type++)
		if (!uswap_device_info(u, type, &info))
			kb += (int64_t)info.used_kb;
	return kb;
}

/* One process image's line at the run's end (the process is gone: nothing
 * resident); the root's (@left_kb >= 0: slots_left_kb()) says what the
 * devices still hold, marked "daemon": the pools are uswap run's memory. */
static void write_line(FILE *f, const struct run_client *c, int64_t left_kb)
{
	json_object *o = run_client_line(c, &c->st, 0, left_kb >= 0);

	if (left_kb >= 0)
		json_object_object_add(o, "daemon_slots_left_kb", json_object_new_int64(left_kb));
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

void run_daemon_end(struct run_daemon *d, const char *stats, pid_t cmd, double kill_after,
		    struct uswap_pager_group_stats *gs)
{
	struct run_client *root = NULL;
	FILE *f;
	int rc;

	/* Still accepting: a survivor's fork until it ends is served (its
	 * child refused would be killed, and a shell's loop would spin). */
	end_survivors(d, kill_after);
	if (d->accepting) {
		shutdown(d->lfd, SHUT_RDWR); /* accept() returns */
		pthread_join(d->accept_th, NULL);
	}
	run_status_stop(d);
	if (d->lfd >= 0)
		close(d->lfd);
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	d->spare_fd = -1;
	/* Connections still open now are of no live process of the tree (one
	 * that never said HELLO, say): end them, their threads with them. */
	for (struct run_client *c = d->clients; c; c = c->next)
		if (!atomic_load(&c->ended))
			shutdown(c->sock, SHUT_RDWR);
	for (struct run_client *c = d->clients; c; c = c->next)
		pthread_join(c->th, NULL);
	if (d->status_wake >= 0)
		close(d->status_wake);
	d->status_wake = -1;
	/* The root line: CMD's last image (after the shells and shims it
	 * exec'd through: the program), else any process's. */
	for (struct run_client *c = d->clients; c; c = c->next)
		if (c->pid && (!root || (c->pid == cmd && (root->pid != cmd ||
							   c->image_ns > root->image_ns))))
			root = c;
	while (d->shares) { /* forks whose child never came */
		struct run_share *sh = d->shares;

		d->shares = sh->next;
		uswap_pager_share_free(sh->s);
		free(sh);
	}
	f = stats ? fopen(stats, "a") : NULL;
	for (struct run_client *c = d->clients; f && c; c = c->next)
		if (c->pid)
			write_line(f, c, c == root ? slots_left_kb(d->u) : -1);
	if (f)
		fclose(f);
	while (d->clients) {
		struct run_client *c = d->clients;

		d->clients = c->next;
		json_object_put(c->devices);
		pthread_mutex_destroy(&c->zap_lock);
		pthread_mutex_destroy(&c->pg_lock);
		free(c);
	}
	memset(gs, 0, sizeof(*gs));
	if (d->group)
		uswap_pager_group_stats(d->group, gs);
	free(d->group);
	d->group = NULL;
	if (d->tracing && (rc = uswap_trace_record_stop(d->u)))
		fprintf(stderr, "uswap run: --trace: %s\n", rc == -EOVERFLOW ?
			"too many folios swapped out at once: the trace stops early" :
			strerror(-rc));
	if (d->u)
		uswap_destroy(d->u);
	d->u = NULL;
}
