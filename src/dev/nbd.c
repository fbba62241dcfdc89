// SPDX-License-Identifier: MIT
/*
 * nbd.c - the "nbd" backend: an export of any NBD server (nbdkit,
 * qemu-nbd, nbd-server, rbd-nbd ...) through libnbd, named by an NBD URI
 * (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH).
 *
 * Layout: slot n at byte n * USWAP_PAGE_SIZE of the export; the export's
 * size gives the slots. There is no mkswap header on a remote export
 * (nothing else would read it, and a header would only say the size the
 * server already says). Slot 0 is not data: its first bytes hold the
 * claim record of the instance using the export (below).
 *
 * Claim: an export is one instance's swap space. Two instances (two
 * programs, or a forked child opening the spec again) allocating slots
 * on it would overwrite each other's pages. At open the backend reads
 * block 0; a valid claim of a live owner on this boot refuses the open
 * (-EBUSY, naming the pid), a claim of a dead pid on this boot is stale
 * and taken over, a claim from another boot id is refused too (see
 * claim_check()). Then it writes its own claim (magic, version, random
 * 128-bit owner id, pid, boot id, checksum) and flushes. Close clears
 * block 0 once the data is flushed. Every reconnect reads block 0 again
 * on the new connection: a server that restarted empty (it reads zeroes)
 * or an export someone else claimed no longer holds our pages, so the
 * device fails (claim-lost) rather than return zeroes as data. NBD has
 * no compare-and-write, so two opens at the very same moment can both
 * pass; the read-back after the write narrows that window, and the
 * reconnect check catches what it leaves.
 *
 * Failure: a device that lost its claim, or whose server did not answer
 * within the timeout (timeout=SECONDS, default 30 as the kernel's nbd
 * driver; every wait is bounded by it: connect, handshake, each command,
 * each reap), is failed for good: its connections are closed and every
 * later request answers -EIO (the swap path writes elsewhere and the
 * pager turns a failed read into SIGBUS), never other bytes.
 *
 * Sockets: made here (unix or TCP, parsed from the URI), moved to a
 * descriptor >= 3 and handed to libnbd (nbd_aio_connect_socket), for the
 * first connect and every reconnect: a program with stdin/stdout closed
 * would otherwise get its socket on fd 0/1/2, and its own write(1) would
 * go to the NBD server. Other URI forms (nbds://, query parameters other
 * than socket=) go to libnbd's URI parser, only while fds 0, 1 and 2 are
 * all open, since then no new descriptor can take one of them.
 *
 * Connections: several (conns=N, or NBD_AUTO_CONNS when not given) when
 * the server offers multi-conn, which is what makes a write on one
 * connection visible to a read on another; without it, one (more than one
 * asked for is refused). Each connection
 * has a mutex: a synchronous call takes a free one (any, else waits for
 * its own), a batch issues all its requests on one (nbd_aio_pread/pwrite)
 * and reap polls the connections that have requests in flight. Completions
 * are collected during nbd_poll and their done() callbacks run after the
 * connection's mutex is dropped, so a done() may submit again.
 *
 * Errors: an unreachable server, a read-only export or one smaller than
 * USWAP_MIN_CLUSTERS clusters fail the open with a message. A request the
 * server refuses is -EIO (the swap path then writes the folio elsewhere,
 * or answers -EIO for a read: never other bytes). A connection found dead
 * is connected again before its next request (counted in reconnects),
 * and a request the drop cut off, synchronous or queued, is done once
 * more on the new connection; if that fails too, -EIO.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


#include "dev/dev_internal.h"
#include "dev/spec.h"
#include "dev/nbd_addr.h"
#include "dev/nbd_lib.h"

#define NBD_MAX_CONNS  16
#define NBD_AUTO_CONNS 4 /* conns not given, server offers multi-conn */

/* libnbd, loaded by the first backend_nbd_open() (nbd_lib.h); set before
 * any backend exists, read-only after. */
static const struct nbd_lib *L;

/* The claim record, little-endian, at byte 0 of the export; the rest of
 * block 0 is zero. */
#define CLAIM_MAGIC    "USWAP-NBD-CLAIM" /* 15 chars + NUL = 16 bytes */
#define CLAIM_VERSION  1
#define CLAIM_BOOT_LEN 40               /* boot id text, NUL-padded */
enum {
	CLAIM_OFF_MAGIC = 0,     /* 16 bytes */
	CLAIM_OFF_VERSION = 16,  /* u32 */
	CLAIM_OFF_PID = 20,      /* u32 */
	CLAIM_OFF_OWNER = 24,    /* 16 random bytes */
	CLAIM_OFF_BOOT = 40,     /* CLAIM_BOOT_LEN bytes */
	CLAIM_OFF_SUM = 80,      /* u64 FNV-1a of bytes 0..79 */
	CLAIM_BYTES = 88,
};

/* Why a device failed for good (nb->failed); 0: it has not. */
enum nbd_fail { NBD_OK, NBD_FAIL_CLAIM_LOST, NBD_FAIL_TIMEOUT };

static const char *const fail_names[] = {
	[NBD_OK] = "no",
	[NBD_FAIL_CLAIM_LOST] = "claim-lost",
	[NBD_FAIL_TIMEOUT] = "timeout",
};

struct nbd_conn;

/* One asynchronous request, from nbd_aio_* until its done() ran. */
struct nbd_req {
	struct backend_io *io;
	struct nbd_conn *conn;
	struct nbd_req *next;   /* on the connection's done list */
	int error;              /* errno from the server or the connection */
	bool completed;         /* the completion callback ran */
};

struct nbd_conn {
	pthread_mutex_t lock;   /* the handle, done, nr_done* */
	struct nbd_handle *h;   /* NULL: to connect again */
	struct nbd_req *done;   /* finished, done() not yet run */
	uint64_t nr_done;       /* requests ever put on done */
	uint64_t nr_done_seen;  /* ... of them counted by a reap */
	_Atomic unsigned int inflight; /* queued, done() not yet run */
};

struct nbd_backend {
	struct backend b;       /* first */
	char *uri;
	struct nbd_addr addr;
	unsigned int nr_conns;
	int timeout_ms;         /* longest wait for the server, > 0 */
	bool can_trim, can_flush;
	bool closing;           /* close began: no retries */
	bool claimed;           /* our claim is in block 0 (set at open) */
	unsigned char claim[USWAP_PAGE_SIZE]; /* block 0 as we wrote it */
	_Atomic int failed;     /* enum nbd_fail: sticky once set */
	struct nbd_conn conn[NBD_MAX_CONNS];
	_Atomic unsigned int next; /* where a request starts looking */
	_Atomic uint64_t nr_read, nr_write, nr_trim, nr_async, nr_reconnect, nr_error;
	_Atomic uint64_t nr_retry;  /* async requests cut off and redone */
};

static const struct backend_ops nbd_ops;

static inline struct nbd_backend *to_nbd(struct backend *b)
{
	return (struct nbd_backend *)b;
}

static inline void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool is_failed(struct nbd_backend *nb)
{
	return atomic_load_explicit(&nb->failed, memory_order_acquire) != NBD_OK;
}

/* The device failed for @why: from now on every request is -EIO. The
 * first reason stays. Thread-safe. */
static void set_failed(struct nbd_backend *nb, enum nbd_fail why)
{
	int ok = NBD_OK;

	atomic_compare_exchange_strong(&nb->failed, &ok, (int)why);
}

/* ------------------------------------------------------------------ */
/* Bounded waits */

/* Poll c->h until @done(c, @arg) holds, for at most nb->timeout_ms.
 * Return: 0; -ENOTCONN (the connection died or closed first);
 * -ETIMEDOUT. Context: c->lock held; c->h not NULL. */
static int conn_wait(struct nbd_backend *nb, struct nbd_conn *c,
		     bool (*done)(struct nbd_conn *c, void *arg), void *arg)
{
	int64_t deadline = now_ms() + nb->timeout_ms;

	while (!done(c, arg)) {
		int64_t left = deadline - now_ms();

		if (L->nbd_aio_is_dead(c->h) || L->nbd_aio_is_closed(c->h))
			return -ENOTCONN;
		if (left <= 0)
			return -ETIMEDOUT;
		if (L->nbd_poll(c->h, (int)left) == -1)
			return -ENOTCONN;
	}
	return 0;
}

/* Close c->h, if any: what was queued on it finishes (EIO, to be redone
 * unless the device failed) through on_free. Context: c->lock held. */
static void conn_close(struct nbd_conn *c)
{
	if (c->h)
		L->nbd_close(c->h);
	c->h = NULL;
}

/* A wait on @c ended with @rc: a timeout fails the device; either way
 * the connection is closed (connected again before its next use).
 * Return: @rc. Context: c->lock held. */
static int conn_wait_failed(struct nbd_backend *nb, struct nbd_conn *c, int rc)
{
	if (rc == -ETIMEDOUT)
		set_failed(nb, NBD_FAIL_TIMEOUT);
	conn_close(c);
	count(&nb->nr_error);
	return rc;
}

static bool handshake_done(struct nbd_conn *c, void *arg)
{
	(void)arg;
	return L->nbd_aio_is_ready(c->h) == 1;
}

static bool handle_closed(struct nbd_conn *c, void *arg)
{
	(void)arg;
	return L->nbd_aio_is_closed(c->h) == 1 || L->nbd_aio_is_dead(c->h) == 1;
}

/* A synchronous command's outcome, filled by sync_complete(). */
struct sync_cmd {
	bool done;
	int error;
};

static int sync_complete(void *user_data, int *error)
{
	struct sync_cmd *w = user_data;

	w->error = *error;
	w->done = true;
	return 1; /* retire it */
}

static bool cmd_done(struct nbd_conn *c, void *arg)
{
	(void)c;
	return ((struct sync_cmd *)arg)->done;
}

enum nbd_cmd { CMD_READ, CMD_WRITE, CMD_TRIM, CMD_FLUSH };

/*
 * conn_cmd() - one command on @c, @len bytes at byte @pos of the export,
 * waited for at most nb->timeout_ms.
 * Return: 0; -EIO (the server refused it); -ENOTCONN (the connection
 * dropped: c->h is closed and NULL, the command may be done again on a
 * new one); -ETIMEDOUT (no answer in time: c->h closed, the device
 * failed). Context: c->lock held; c->h connected.
 */
static int conn_cmd(struct nbd_backend *nb, struct nbd_conn *c, enum nbd_cmd op,
		    void *buf, size_t len, uint64_t pos)
{
	struct sync_cmd w = { 0 };
	nbd_completion_callback cb = { .callback = sync_complete, .user_data = &w };
	int64_t cookie;
	int rc;

	if (op == CMD_READ)
		cookie = L->nbd_aio_pread(c->h, buf, len, pos, cb, 0);
	else if (op == CMD_WRITE)
		cookie = L->nbd_aio_pwrite(c->h, buf, len, pos, cb, 0);
	else if (op == CMD_TRIM)
		cookie = L->nbd_aio_trim(c->h, len, pos, cb, 0);
	else
		cookie = L->nbd_aio_flush(c->h, cb, 0);
	if (cookie == -1)
		return L->nbd_aio_is_dead(c->h) || L->nbd_aio_is_closed(c->h) ?
		       conn_wait_failed(nb, c, -ENOTCONN) : -EIO;
	rc = conn_wait(nb, c, cmd_done, &w);
	/* Closing the handle retires the command (and &w with it) before
	 * this frame goes. */
	if (rc)
		return conn_wait_failed(nb, c, rc);
	if (w.error && (L->nbd_aio_is_dead(c->h) || L->nbd_aio_is_closed(c->h)))
		return conn_wait_failed(nb, c, -ENOTCONN);
	return w.error ? -EIO : 0;
}

/* ------------------------------------------------------------------ */
/* Connections */

/* Start connecting @h: our own socket (fd >= 3) when the URI was parsed,
 * else libnbd's URI parser, only while fds 0-2 are all open (unix
 * sockets and TCP only). Return: 0, or -errno (message in @why). */
static int conn_start(struct nbd_backend *nb, struct nbd_handle *h, const char **why)
{
	int fd;

	*why = NULL;
	if (!nb->addr.parsed) {
		if (!nbd_std_fds_open()) {
			*why = "fds 0-2 are not all open and libnbd would make this "
			       "URI's socket itself (it could take one of them)";
			return -EBADF;
		}
		if (L->nbd_set_uri_allow_transports(h, LIBNBD_ALLOW_TRANSPORT_TCP |
						    LIBNBD_ALLOW_TRANSPORT_UNIX) == -1 ||
		    L->nbd_aio_connect_uri(h, nb->uri) == -1)
			return -EHOSTUNREACH;
		return 0;
	}
	fd = nbd_sock_connect(&nb->addr, nb->timeout_ms);
	if (fd < 0) {
		*why = strerror(-fd);
		return fd;
	}
	if (L->nbd_set_export_name(h, nb->addr.export_name) == -1 ||
	    L->nbd_aio_connect_socket(h, fd) == -1) {
		/* libnbd owns the socket once it took it; whether it did
		 * is not said on failure: a rare leak beats a double close */
		return -EHOSTUNREACH;
	}
	return 0;
}

/* A new handle on @c, connected and past the handshake, bounded by the
 * timeout. Return: 0, or -errno with @why set (or L->nbd_get_error()).
 * Context: c->lock held; c->h NULL. */
static int conn_connect(struct nbd_backend *nb, struct nbd_conn *c, const char **why)
{
	int rc;

	c->h = L->nbd_create();
	if (!c->h) {
		*why = L->nbd_get_error();
		return -ENOMEM;
	}
	rc = conn_start(nb, c->h, why);
	if (!rc) {
		rc = conn_wait(nb, c, handshake_done, NULL);
		if (rc == -ETIMEDOUT)
			*why = "no answer from the server within the timeout";
	}
	if (rc) {
		if (!*why)
			*why = L->nbd_get_error() ? L->nbd_get_error() : strerror(-rc);
		L->nbd_close(c->h);
		c->h = NULL;
	}
	return rc;
}

/* Read the claim part of block 0 on @c into @buf (CLAIM_BYTES). Return:
 * conn_cmd()'s. Context: c->lock held; c->h connected. */
static int claim_read(struct nbd_backend *nb, struct nbd_conn *c, unsigned char *buf)
{
	return conn_cmd(nb, c, CMD_READ, buf, CLAIM_BYTES, 0);
}

/* A fresh handle on @c whose block 0 still holds our claim. A server
 * that came back without it (restarted empty, or claimed by another
 * instance) has lost our pages: the device fails (claim-lost) and the
 * connection is not used. Return: 0, or -EIO. Context: c->lock held. */
static int conn_reconnect(struct nbd_backend *nb, struct nbd_conn *c)
{
	unsigned char got[CLAIM_BYTES];
	const char *why;

	conn_close(c);
	if (is_failed(nb) || conn_connect(nb, c, &why))
		return -EIO;
	if (claim_read(nb, c, got)) {
		conn_close(c); /* a timeout failed the device already */
		return -EIO;
	}
	if (memcmp(got, nb->claim, CLAIM_BYTES)) {
		set_failed(nb, NBD_FAIL_CLAIM_LOST);
		conn_close(c);
		return -EIO;
	}
	count(&nb->nr_reconnect);
	return 0;
}

/* The connection is usable, or made so. Return: 0, or -EIO (also for
 * a failed device). Context: c->lock held. */
static int conn_ready(struct nbd_backend *nb, struct nbd_conn *c)
{
	if (is_failed(nb)) {
		conn_close(c);
		return -EIO;
	}
	if (c->h && !L->nbd_aio_is_dead(c->h) && !L->nbd_aio_is_closed(c->h))
		return 0;
	return conn_reconnect(nb, c);
}

/* Lock a connection: the first free one from a rotating start, else
 * wait for the start one. */
static struct nbd_conn *conn_get(struct nbd_backend *nb)
{
	unsigned int start = atomic_fetch_add_explicit(&nb->next, 1, memory_order_relaxed);

	for (unsigned int i = 0; i < nb->nr_conns; i++) {
		struct nbd_conn *c = &nb->conn[(start + i) % nb->nr_conns];

		if (pthread_mutex_trylock(&c->lock) == 0)
			return c;
	}
	pthread_mutex_lock(&nb->conn[start % nb->nr_conns].lock);
	return &nb->conn[start % nb->nr_conns];
}

/* ------------------------------------------------------------------ */
/* The claim record */

static uint64_t fnv1a(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* This boot's id (/proc/sys/kernel/random/boot_id) into @out
 * (CLAIM_BOOT_LEN bytes, NUL-padded; all zero when unreadable). */
static void boot_id(char *out)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, CLAIM_BOOT_LEN - 1) : -1;

	if (fd >= 0)
		close(fd);
	memset(out + (n > 0 ? n : 0), 0, CLAIM_BOOT_LEN - (size_t)(n > 0 ? n : 0));
	out[strcspn(out, "\n")] = '\0';
}

/* Our claim into nb->claim (block 0 as written). Return: 0, -errno. */
static int claim_make(struct nbd_backend *nb)
{
	unsigned char *p = nb->claim;
	uint32_t v32;
	uint64_t sum;

	memset(p, 0, sizeof(nb->claim));
	memcpy(p + CLAIM_OFF_MAGIC, CLAIM_MAGIC, sizeof(CLAIM_MAGIC));
	v32 = htole32(CLAIM_VERSION);
	memcpy(p + CLAIM_OFF_VERSION, &v32, 4);
	v32 = htole32((uint32_t)getpid());
	memcpy(p + CLAIM_OFF_PID, &v32, 4);
	if (getrandom(p + CLAIM_OFF_OWNER, 16, 0) != 16)
		return -errno;
	boot_id((char *)p + CLAIM_OFF_BOOT);
	sum = htole64(fnv1a(p, CLAIM_OFF_SUM));
	memcpy(p + CLAIM_OFF_SUM, &sum, 8);
	return 0;
}

/*
 * The claims this image holds, by owner id. A claim with our own pid
 * that is not among them was written by an earlier image of this process:
 * exec(2) ended every instance of it without a close (uswap run's agent
 * in a program that execs another), so it is stale, and the new image
 * takes the export over. A forked child has a copy of the list, but
 * another pid: the parent's claims stay the parent's.
 */
#define LIVE_CLAIMS 64
static unsigned char live_claims[LIVE_CLAIMS][16];
static unsigned int nr_live_claims;
static pthread_mutex_t live_claims_lock = PTHREAD_MUTEX_INITIALIZER;

static int live_claim_find(const unsigned char *owner)
{
	for (unsigned int i = 0; i < nr_live_claims; i++)
		if (!memcmp(live_claims[i], owner, 16))
			return (int)i;
	return -1;
}

static bool claim_is_live_here(const unsigned char *claim)
{
	bool live;

	pthread_mutex_lock(&live_claims_lock);
	live = live_claim_find(claim + CLAIM_OFF_OWNER) >= 0;
	pthread_mutex_unlock(&live_claims_lock);
	return live;
}

/* Note our claim as live in this image (false: too many to track, which
 * only means a later image would refuse it while this pid lives). */
static void claim_note_live(const unsigned char *claim, bool live)
{
	int i;

	pthread_mutex_lock(&live_claims_lock);
	i = live_claim_find(claim + CLAIM_OFF_OWNER);
	if (live && i < 0 && nr_live_claims < LIVE_CLAIMS)
		memcpy(live_claims[nr_live_claims++], claim + CLAIM_OFF_OWNER, 16);
	else if (!live && i >= 0)
		memcpy(live_claims[i], live_claims[--nr_live_claims], 16);
	pthread_mutex_unlock(&live_claims_lock);
}

/* Is @p a claim record (magic, version, checksum)? Its pid in *@pid. */
static bool claim_valid(const unsigned char *p, pid_t *pid)
{
	uint32_t ver, v32;
	uint64_t sum;

	memcpy(&ver, p + CLAIM_OFF_VERSION, 4);
	memcpy(&v32, p + CLAIM_OFF_PID, 4);
	memcpy(&sum, p + CLAIM_OFF_SUM, 8);
	*pid = (pid_t)le32toh(v32);
	return !memcmp(p + CLAIM_OFF_MAGIC, CLAIM_MAGIC, sizeof(CLAIM_MAGIC)) &&
	       le32toh(ver) == CLAIM_VERSION && le64toh(sum) == fnv1a(p, CLAIM_OFF_SUM);
}

/*
 * claim_check() - may we take block 0 that holds @theirs?
 * Free (no valid claim) or stale (this boot, pid gone, or our own pid
 * but not a claim of this image: see live_claims): yes. A live pid
 * of this boot: no. Another boot id: no as well. That owner may be on
 * another host sharing the export, where its pid means nothing here, or
 * it was this host before a reboot; nothing tells the two apart, and
 * using an export another host swaps to would corrupt both, so a person
 * clears it (zeroes block 0). Pid namespaces share a boot id: a pid from
 * another namespace is judged by ours (kill(pid, 0)).
 * Return: 0, or -EBUSY with the reason in @err.
 */
static int claim_check(struct nbd_backend *nb, const unsigned char *theirs,
		       char *err, size_t errlen)
{
	const char *ours_boot = (const char *)nb->claim + CLAIM_OFF_BOOT;
	char boot[CLAIM_BOOT_LEN + 1] = { 0 };
	pid_t pid;

	if (!claim_valid(theirs, &pid))
		return 0;
	memcpy(boot, theirs + CLAIM_OFF_BOOT, CLAIM_BOOT_LEN);
	if (strncmp(boot, ours_boot, CLAIM_BOOT_LEN))
		return backend_errf(err, errlen, -EBUSY, "nbd %s: claimed by uswap "
				    "pid %d of another boot (boot id %s), maybe on "
				    "another host; if that instance is gone, write "
				    "zeroes over block 0 of the export (its first %u "
				    "bytes hold the claim)", nb->uri, (int)pid, boot,
				    USWAP_PAGE_SIZE);
	if (pid == getpid() && !claim_is_live_here(theirs))
		return 0; /* an earlier image of this process, before an exec */
	if (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM))
		return backend_errf(err, errlen, -EBUSY, "nbd %s: in use by another "
				    "uswap instance (pid %d)", nb->uri, (int)pid);
	return 0; /* stale: its owner is gone */
}

/* Take block 0 for us over @c (conn 0 at open): check, write, flush,
 * read back (claim_write()). Return: 0, -EBUSY, -EIO. Context: open. */
static int claim_write(struct nbd_backend *nb, struct nbd_conn *c, char *err,
		       size_t errlen)
{
	unsigned char got[CLAIM_BYTES];
	int rc;

	if (claim_read(nb, c, got))
		return backend_errf(err, errlen, -EIO, "nbd %s: cannot read block 0",
				    nb->uri);
	rc = claim_check(nb, got, err, errlen);
	if (rc)
		return rc;
	if (conn_cmd(nb, c, CMD_WRITE, nb->claim, sizeof(nb->claim), 0) ||
	    (nb->can_flush && conn_cmd(nb, c, CMD_FLUSH, NULL, 0, 0)) ||
	    claim_read(nb, c, got))
		return backend_errf(err, errlen, -EIO, "nbd %s: cannot write the claim "
				    "in block 0", nb->uri);
	nb->claimed = true;
	if (!memcmp(got, nb->claim, CLAIM_BYTES))
		return 0;
	/* Another opener wrote between our read and our write. */
	rc = claim_check(nb, got, err, errlen);
	return rc ? rc : backend_errf(err, errlen, -EBUSY, "nbd %s: in use by "
				      "another uswap instance (its claim replaced "
				      "ours)", nb->uri);
}

static int claim_take(struct nbd_backend *nb, struct nbd_conn *c, char *err,
		      size_t errlen)
{
	int rc = claim_make(nb);

	if (rc)
		return backend_errf(err, errlen, rc, "nbd %s: getrandom: %s", nb->uri,
				    strerror(-rc));
	/* Live before it is written: another open in this image that reads
	 * it must see an instance of ours, not an earlier image's. */
	claim_note_live(nb->claim, true);
	rc = claim_write(nb, c, err, errlen);
	if (rc)
		claim_note_live(nb->claim, false);
	return rc;
}

/* Clear block 0 (zeroes) and flush, when it still holds our claim.
 * Context: close, after every connection drained and flushed. */
static void claim_release(struct nbd_backend *nb, struct nbd_conn *c)
{
	static const unsigned char zero[USWAP_PAGE_SIZE];
	unsigned char got[CLAIM_BYTES];

	if (!nb->claimed || is_failed(nb) || !c->h || claim_read(nb, c, got) ||
	    memcmp(got, nb->claim, CLAIM_BYTES))
		return; /* not ours (any more): leave it */
	if (conn_cmd(nb, c, CMD_WRITE, (void *)zero, sizeof(zero), 0) == 0 && nb->can_flush)
		(void)conn_cmd(nb, c, CMD_FLUSH, NULL, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Synchronous I/O */

/*
 * nbd_rw() - read or write 2^@order slots at @slot, synchronously, each
 * try bounded by the timeout. Return: 0; -EINVAL (outside the device);
 * -EIO (refused, connection lost twice, timed out, or the device failed).
 * Thread-safe.
 */
static int nbd_rw(struct backend *b, bool write, uint64_t slot, unsigned int order,
		  void *buf)
{
	struct nbd_backend *nb = to_nbd(b);
	size_t len = folio_bytes(order);
	uint64_t pos = slot * USWAP_PAGE_SIZE;
	int rc = backend_check_io(b, slot, order);
	struct nbd_conn *c;

	if (rc)
		return rc;
	c = conn_get(nb);
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = conn_ready(nb, c);
		if (rc)
			break;
		rc = conn_cmd(nb, c, write ? CMD_WRITE : CMD_READ, buf, len, pos);
		/* A drop: once more on a new connection; a refusal by a
		 * live server or a timeout: no. */
		if (rc != -ENOTCONN)
			break;
	}
	pthread_mutex_unlock(&c->lock);
	if (rc == 0 && is_failed(nb))
		rc = -EIO; /* failed meanwhile: these bytes are not to be trusted */
	if (rc) {
		count(&nb->nr_error);
		return -EIO;
	}
	count(write ? &nb->nr_write : &nb->nr_read);
	return 0;
}

static int nbd_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	return nbd_rw(b, false, slot, order, buf);
}

static int nbd_write(struct backend *b, uint64_t slot, unsigned int order, const void *buf)
{
	return nbd_rw(b, true, slot, order, (void *)buf);
}

/* discard: NBD_CMD_TRIM when the server offers it, else nothing (the
 * contract lets discarded slots keep stale data). */
static int nbd_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct nbd_backend *nb = to_nbd(b);
	int rc = backend_check_range(b, slot, nr_slots);
	struct nbd_conn *c;

	if (rc || !nr_slots || !nb->can_trim)
		return rc;
	c = conn_get(nb);
	rc = conn_ready(nb, c);
	if (!rc && conn_cmd(nb, c, CMD_TRIM, NULL, nr_slots * USWAP_PAGE_SIZE,
			    slot * USWAP_PAGE_SIZE))
		rc = -EIO;
	pthread_mutex_unlock(&c->lock);
	if (!rc)
		count(&nb->nr_trim);
	return rc;
}

/* flush: NBD_CMD_FLUSH on every connection, when the server offers it.
 * Return: 0, -EIO (a flush failed, or the device has). */
static int nbd_flush_all(struct backend *b)
{
	struct nbd_backend *nb = to_nbd(b);
	int rc = 0;

	if (is_failed(nb))
		return -EIO;
	if (!nb->can_flush)
		return 0;
	for (unsigned int i = 0; i < nb->nr_conns; i++) {
		struct nbd_conn *c = &nb->conn[i];

		pthread_mutex_lock(&c->lock);
		if (c->h && !L->nbd_aio_is_dead(c->h) && conn_cmd(nb, c, CMD_FLUSH, NULL, 0, 0))
			rc = -EIO;
		pthread_mutex_unlock(&c->lock);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Asynchronous I/O */

/* libnbd's completion callback (inside a libnbd call, c->lock held): note
 * the outcome. A command cut off by a dropped connection gets a connection
 * error here, or no call at all; either way its free callback below runs,
 * at the latest when the handle is closed, and the request is redone. */
static int on_complete(void *user_data, int *error)
{
	struct nbd_req *r = user_data;

	r->error = *error;
	/* libnbd completes the commands a dying connection had in flight
	 * with a connection error: those were cut off, not refused. */
	r->completed = !(*error == ENOTCONN || *error == ESHUTDOWN ||
			 *error == ECONNRESET || *error == EPIPE);
	return 1; /* retire the command */
}

/* libnbd's free callback: the command is finished with, exactly once
 * (retired, or its handle closed). Park it for conn_finish(). Context:
 * c->lock held (every libnbd call on c->h is made under it). */
static void on_free(void *user_data)
{
	struct nbd_req *r = user_data;

	if (!r->completed)
		r->error = EIO;
	r->next = r->conn->done;
	r->conn->done = r;
	r->conn->nr_done++;
}

/* The result of one finished request: redone synchronously when it was
 * cut off (not refused), -EIO whenever the device has failed. */
static int req_result(struct nbd_backend *nb, struct nbd_req *r)
{
	struct backend_io *io = r->io;

	if (is_failed(nb)) {
		count(&nb->nr_error);
		return -EIO;
	}
	if (!r->completed && !nb->closing) {
		/* Cut off by a dropped connection, not refused by the
		 * server: once more, synchronously, on a connection
		 * made again (nbd_rw() counts it). */
		count(&nb->nr_retry);
		return nbd_rw(&nb->b, io->op == BACKEND_WRITE, io->slot, io->order,
			      io->buf);
	}
	if (r->error) {
		count(&nb->nr_error);
		return -EIO;
	}
	count(io->op == BACKEND_WRITE ? &nb->nr_write : &nb->nr_read);
	return 0;
}

/* Run the done() callbacks of what @c collected. Context: c->lock held;
 * dropped before the callbacks run. */
static void conn_finish(struct nbd_backend *nb, struct nbd_conn *c)
{
	struct nbd_req *r = c->done;

	c->done = NULL;
	pthread_mutex_unlock(&c->lock);
	while (r) {
		struct nbd_req *next = r->next;
		struct backend_io *io = r->io;

		atomic_fetch_sub_explicit(&c->inflight, 1, memory_order_relaxed);
		io->result = req_result(nb, r);
		free(r);
		if (io->done)
			io->done(io);
		r = next;
	}
}

/* Queue one read or write on @c. Return: true if queued (its done() comes
 * from a reap), false if it failed at once (io->result set).
 * Context: c->lock held; c->h connected. */
static bool queue_io(struct nbd_backend *nb, struct nbd_conn *c, struct backend_io *io)
{
	size_t len = folio_bytes(io->order);
	uint64_t pos = io->slot * USWAP_PAGE_SIZE;
	nbd_completion_callback cb;
	struct nbd_req *r = calloc(1, sizeof(*r));
	int64_t cookie;

	if (!r) {
		io->result = -ENOMEM;
		return false;
	}
	r->io = io;
	r->conn = c;
	atomic_fetch_add_explicit(&c->inflight, 1, memory_order_relaxed);
	cb = (nbd_completion_callback){ .callback = on_complete, .user_data = r,
					.free = on_free };
	if (io->op == BACKEND_READ)
		cookie = L->nbd_aio_pread(c->h, io->buf, len, pos, cb, 0);
	else
		cookie = L->nbd_aio_pwrite(c->h, io->buf, len, pos, cb, 0);
	/* On -1 libnbd has called on_free already: the request is on the
	 * done list with EIO, and finishes in the next reap like the rest. */
	if (cookie != -1)
		count(&nb->nr_async);
	return true;
}

/* Up to 64 requests on one connection. Which were queued is kept here,
 * not in io->result: once the lock is dropped, a reaper on another thread
 * may finish them at any moment. */
static void submit_chunk(struct nbd_backend *nb, struct backend_io **ios, unsigned int n)
{
	struct nbd_conn *c = conn_get(nb);
	bool ready = conn_ready(nb, c) == 0;
	uint64_t queued = 0;

	for (unsigned int i = 0; ready && i < n; i++) {
		struct backend_io *io = ios[i];

		if (io->op == BACKEND_DISCARD)
			continue;
		io->result = backend_check_io(&nb->b, io->slot, io->order);
		if (io->result == 0 && queue_io(nb, c, io))
			queued |= UINT64_C(1) << i;
	}
	pthread_mutex_unlock(&c->lock);
	for (unsigned int i = 0; i < n; i++) {
		struct backend_io *io = ios[i];

		if (queued >> i & 1)
			continue; /* a reap runs its done() */
		if (!ready || io->op == BACKEND_DISCARD)
			backend_submit_sync(&nb->b, io); /* fails fast when !ready */
		else if (io->done)
			io->done(io);
	}
}

/*
 * nbd_submit_batch() - issue @n requests, up to 64 on one connection at a
 * time; their done() runs in a reap (this thread's or another's).
 * Discards, requests outside the device, and all requests when the
 * connection cannot be made again (or the device failed) complete before
 * this returns. Return: 0; -EINVAL (a NULL request: none was issued).
 */
static int nbd_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (!ios[i])
			return -EINVAL;
	for (unsigned int i = 0; i < n; i += 64)
		submit_chunk(to_nbd(b), ios + i, n - i < 64 ? n - i : 64);
	return 0;
}

static int nbd_submit(struct backend *b, struct backend_io *io)
{
	return nbd_submit_batch(b, &io, 1);
}

/* What conn_poll() waits for: @goal finished, nothing in flight, or
 * progress past @seen. */
struct reap_wait {
	uint64_t goal, seen;
};

static bool reap_progress(struct nbd_conn *c, void *arg)
{
	struct reap_wait *w = arg;

	return c->nr_done >= w->goal || c->nr_done > w->seen ||
	       L->nbd_aio_in_flight(c->h) <= 0;
}

/* Poll @c until it has nothing in flight or @want more requests finished.
 * The server may be silent for at most the timeout while requests are in
 * flight (each completion starts the clock again): then the connection
 * is closed and the device fails. A connection that dies is closed too;
 * either way its requests finish (EIO) through on_free. Context: c->lock
 * held. */
static void conn_poll(struct nbd_backend *nb, struct nbd_conn *c, unsigned int want)
{
	struct reap_wait w = { .goal = c->nr_done + want };

	while (c->h && c->nr_done < w.goal && L->nbd_aio_in_flight(c->h) > 0) {
		int rc;

		w.seen = c->nr_done;
		rc = conn_wait(nb, c, reap_progress, &w);
		if (rc) {
			conn_wait_failed(nb, c, rc);
			break;
		}
	}
}

/* reap: run done() for finished requests, waiting until at least
 * @min_complete ran or nothing is in flight; each wait bounded by the
 * timeout. Return: how many ran. Thread-safe. */
static int nbd_reap(struct backend *b, unsigned int min_complete)
{
	struct nbd_backend *nb = to_nbd(b);
	unsigned int total = 0;

	for (unsigned int i = 0; i < nb->nr_conns; i++) {
		struct nbd_conn *c = &nb->conn[i];
		uint64_t before;

		if (!atomic_load_explicit(&c->inflight, memory_order_relaxed))
			continue;
		pthread_mutex_lock(&c->lock);
		before = c->nr_done_seen;
		conn_poll(nb, c, min_complete > total ? min_complete - total : 0);
		total += (unsigned int)(c->nr_done - before);
		c->nr_done_seen = c->nr_done;
		conn_finish(nb, c);
	}
	return (int)total;
}

/* ------------------------------------------------------------------ */
/* Statistics, close, open */

static void nbd_print_stats(struct backend *b, FILE *out)
{
	struct nbd_backend *nb = to_nbd(b);

	fprintf(out, "uri %s\n", nb->uri);
	fprintf(out, "connections %u\n", nb->nr_conns);
	fprintf(out, "trim %s\n", nb->can_trim ? "yes" : "no");
	fprintf(out, "timeout_s %d\n", nb->timeout_ms / 1000);
	fprintf(out, "failed %s\n", fail_names[atomic_load(&nb->failed)]);
#define P(f) fprintf(out, #f " %llu\n", (unsigned long long)atomic_load(&nb->nr_##f))
	P(read);
	P(write);
	P(trim);
	P(async);
	P(reconnect);
	P(retry);
	P(error);
#undef P
}

/* Close: let writes land and flush every connection, then clear our
 * claim, then disconnect; each step bounded by the timeout. A failed
 * device skips all that (its server is gone, stuck, or not ours). */
static void nbd_close_backend(struct backend *b)
{
	struct nbd_backend *nb = to_nbd(b);

	nb->closing = true;
	for (unsigned int i = 0; i < NBD_MAX_CONNS; i++) {
		struct nbd_conn *c = &nb->conn[i];

		pthread_mutex_lock(&c->lock);
		if (c->h && !is_failed(nb)) {
			conn_poll(nb, c, UINT32_MAX); /* let writes land */
			/* swapoff: the server's caches out before we go */
			if (c->h && nb->can_flush && !L->nbd_aio_is_dead(c->h))
				(void)conn_cmd(nb, c, CMD_FLUSH, NULL, 0, 0);
		}
		pthread_mutex_unlock(&c->lock);
	}
	for (unsigned int i = 0; i < NBD_MAX_CONNS; i++) {
		struct nbd_conn *c = &nb->conn[i];
		bool done;

		pthread_mutex_lock(&c->lock);
		done = c->h != NULL;
		if (done)
			claim_release(nb, c);
		pthread_mutex_unlock(&c->lock);
		if (done)
			break;
	}
	for (unsigned int i = 0; i < NBD_MAX_CONNS; i++) {
		struct nbd_conn *c = &nb->conn[i];

		pthread_mutex_lock(&c->lock);
		if (c->h && !is_failed(nb) && L->nbd_aio_disconnect(c->h, 0) == 0)
			(void)conn_wait(nb, c, handle_closed, NULL);
		if (c->h)
			L->nbd_close(c->h);
		c->h = NULL;
		conn_finish(nb, c);
		pthread_mutex_destroy(&c->lock);
	}
	/* Whatever block 0 still holds is no live instance's any more. */
	claim_note_live(nb->claim, false);
	free(nb->uri);
	free(nb);
}

static const struct backend_ops nbd_ops = {
	.kind = "nbd",
	.read = nbd_read,
	.write = nbd_write,
	.discard = nbd_discard,
	.flush = nbd_flush_all,
	.submit = nbd_submit,
	.submit_batch = nbd_submit_batch,
	.reap = nbd_reap,
	.print_stats = nbd_print_stats,
	.close = nbd_close_backend,
};

/* What the first connection learned of the export, checked. */
static int check_export(struct nbd_backend *nb, struct nbd_handle *h,
			unsigned int conns, char *err, size_t errlen)
{
	int64_t size = L->nbd_get_size(h);
	uint64_t min = (uint64_t)USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS * USWAP_PAGE_SIZE;

	if (size < 0)
		return backend_errf(err, errlen, -EIO, "nbd %s: cannot read the export "
				    "size: %s", nb->uri, L->nbd_get_error());
	if ((uint64_t)size < min)
		return backend_errf(err, errlen, -EINVAL, "nbd %s: export of %lld bytes "
				    "is smaller than %llu (%u clusters)", nb->uri,
				    (long long)size, (unsigned long long)min,
				    USWAP_MIN_CLUSTERS);
	if (L->nbd_is_read_only(h) == 1)
		return backend_errf(err, errlen, -EROFS, "nbd %s: the export is read-only",
				    nb->uri);
	if (conns > 1 && L->nbd_can_multi_conn(h) != 1)
		return backend_errf(err, errlen, -EINVAL, "nbd %s: conns=%u needs a server "
				    "that offers multi-conn (this one does not): use one "
				    "connection", nb->uri, conns);
	nb->can_trim = L->nbd_can_trim(h) == 1;
	nb->can_flush = L->nbd_can_flush(h) == 1;
	nb->b.nr_slots = (uint64_t)size / USWAP_PAGE_SIZE;
	return 0;
}

/* Connect every connection, check the export on the first, and take its
 * claim. Return: 0 or -errno with a message. */
static int open_conns(struct nbd_backend *nb, unsigned int conns, char *err,
		      size_t errlen)
{
	int rc = 0;

	for (unsigned int i = 0; i < nb->nr_conns && !rc; i++) {
		struct nbd_conn *c = &nb->conn[i];
		const char *why;

		rc = conn_connect(nb, c, &why);
		if (rc) {
			rc = backend_errf(err, errlen, -EHOSTUNREACH, "nbd %s: cannot "
					  "connect: %s", nb->uri, why);
		} else if (i == 0) {
			rc = check_export(nb, c->h, conns, err, errlen);
			/* Auto: several connections where the server makes
			 * them consistent with each other. */
			if (!rc && !conns && L->nbd_can_multi_conn(c->h) == 1)
				nb->nr_conns = NBD_AUTO_CONNS;
		}
	}
	return rc ? rc : claim_take(nb, &nb->conn[0], err, errlen);
}

/* A URI this backend can connect to: parsed, or left to libnbd. */
static int open_addr(struct nbd_backend *nb, char *err, size_t errlen)
{
	int rc = nbd_uri_parse(nb->uri, &nb->addr);

	if (rc == -EINVAL)
		return backend_errf(err, errlen, -EINVAL, "nbd %s: cannot parse the URI "
				    "(nbd://HOST[:PORT]/EXPORT or "
				    "nbd+unix:///EXPORT?socket=PATH)", nb->uri);
	if (rc == -ENOTSUP && !nbd_std_fds_open())
		return backend_errf(err, errlen, -EINVAL, "nbd %s: only nbd://HOST[:PORT]"
				    "/EXPORT and nbd+unix:///EXPORT?socket=PATH can be "
				    "used while fds 0-2 are not all open", nb->uri);
	return 0;
}

int backend_nbd_open(const char *uri, unsigned int conns, unsigned int timeout_s,
		     struct backend **out, char *err, size_t errlen)
{
	struct nbd_backend *nb;
	int rc;

	if (!uri || !*uri)
		return backend_errf(err, errlen, -EINVAL, "nbd needs a URI, e.g. "
				    "nbd+unix:///?socket=/run/nbd.sock");
	if (conns > NBD_MAX_CONNS)
		return backend_errf(err, errlen, -EINVAL, "nbd: at most %d connections",
				    NBD_MAX_CONNS);
	if (timeout_s > DEV_SPEC_NBD_MAX_TIMEOUT_S)
		return backend_errf(err, errlen, -EINVAL, "nbd: timeout at most %u s",
				    DEV_SPEC_NBD_MAX_TIMEOUT_S);
	if (!L && !(L = nbd_lib_get(err, errlen)))
		return -ENOSYS;
	nb = calloc(1, sizeof(*nb));
	if (!nb || !(nb->uri = strdup(uri))) {
		free(nb);
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	}
	nb->b.ops = &nbd_ops;
	nb->b.first_slot = 1; /* block 0: the claim */
	nb->nr_conns = conns ? conns : 1;
	nb->timeout_ms = (int)(timeout_s ? timeout_s : DEV_SPEC_NBD_TIMEOUT_S) * 1000;
	for (unsigned int i = 0; i < NBD_MAX_CONNS; i++)
		pthread_mutex_init(&nb->conn[i].lock, NULL);
	rc = open_addr(nb, err, errlen);
	if (!rc)
		rc = open_conns(nb, conns, err, errlen);
	if (rc) {
		nbd_close_backend(&nb->b);
		return rc;
	}
	snprintf(nb->b.name, sizeof(nb->b.name), "%s", uri);
	nb->b.free_notify = false; /* trim per cluster is enough */
	*out = &nb->b;
	return 0;
}
