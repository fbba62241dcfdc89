// SPDX-License-Identifier: MIT
/*
 * nbd.c - the "nbd" backend: an export of any NBD server (nbdkit,
 * qemu-nbd, nbd-server, rbd-nbd ...) through libnbd, named by an NBD URI
 * (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH).
 *
 * Layout: slot n at byte n * USWAP_PAGE_SIZE of the export; the export's
 * size gives the slots. There is no mkswap header on a remote export
 * (nothing else would read it, and a header would only say the size the
 * server already says); slot 0 is left unused, as on the memory backends.
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
 * more on the new connection; if that fails too, -EIO. What a server that
 * came back still holds is its own business: an export that lost its
 * data (nbdkit's memory plugin, restarted) reads as zeroes, which nothing
 * here can tell from data.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

#include "dev/dev.h"

#define NBD_MAX_CONNS  16
#define NBD_AUTO_CONNS 4 /* conns not given, server offers multi-conn */

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
	unsigned int nr_conns;
	bool can_trim, can_flush;
	bool closing;           /* close began: no retries */
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

/* ------------------------------------------------------------------ */
/* Connections */

/* Connect @h to the backend's URI, unix sockets and TCP only (no TLS
 * negotiation, no local-file "nbd+unix" sockets named by ?socket that
 * libnbd might otherwise refuse). Return: 0 or -1 (nbd_get_error()). */
static int connect_uri(struct nbd_handle *h, const char *uri)
{
	if (nbd_set_uri_allow_transports(h, LIBNBD_ALLOW_TRANSPORT_TCP |
					    LIBNBD_ALLOW_TRANSPORT_UNIX) == -1)
		return -1;
	return nbd_connect_uri(h, uri);
}

/* A fresh handle on @c. Return: 0, or -EIO. Context: c->lock held. */
static int conn_reconnect(struct nbd_backend *nb, struct nbd_conn *c)
{
	if (c->h)
		nbd_close(c->h);
	c->h = nbd_create();
	if (c->h && connect_uri(c->h, nb->uri) == 0) {
		count(&nb->nr_reconnect);
		return 0;
	}
	if (c->h)
		nbd_close(c->h);
	c->h = NULL;
	return -EIO;
}

/* The connection is usable, or made so. Context: c->lock held. */
static int conn_ready(struct nbd_backend *nb, struct nbd_conn *c)
{
	if (c->h && !nbd_aio_is_dead(c->h) && !nbd_aio_is_closed(c->h))
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
/* Synchronous I/O */

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
		rc = write ? nbd_pwrite(c->h, buf, len, pos, 0)
			   : nbd_pread(c->h, buf, len, pos, 0);
		if (rc == 0)
			break;
		rc = -EIO;
		/* A drop: once more on a new connection; a refusal by a
		 * live server: no. */
		if (!nbd_aio_is_dead(c->h) && !nbd_aio_is_closed(c->h))
			break;
	}
	pthread_mutex_unlock(&c->lock);
	if (rc)
		count(&nb->nr_error);
	else
		count(write ? &nb->nr_write : &nb->nr_read);
	return rc;
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
	if (!rc && nbd_trim(c->h, nr_slots * USWAP_PAGE_SIZE, slot * USWAP_PAGE_SIZE, 0))
		rc = -EIO;
	pthread_mutex_unlock(&c->lock);
	if (!rc)
		count(&nb->nr_trim);
	return rc;
}

/* flush: NBD_CMD_FLUSH on every connection, when the server offers it. */
static int nbd_flush_all(struct backend *b)
{
	struct nbd_backend *nb = to_nbd(b);
	int rc = 0;

	if (!nb->can_flush)
		return 0;
	for (unsigned int i = 0; i < nb->nr_conns; i++) {
		struct nbd_conn *c = &nb->conn[i];

		pthread_mutex_lock(&c->lock);
		if (c->h && !nbd_aio_is_dead(c->h) && nbd_flush(c->h, 0))
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
		if (!r->completed && !nb->closing) {
			/* Cut off by a dropped connection, not refused by the
			 * server: once more, synchronously, on a connection
			 * made again (nbd_rw() counts it). */
			count(&nb->nr_retry);
			io->result = nbd_rw(&nb->b, io->op == BACKEND_WRITE, io->slot,
					    io->order, io->buf);
		} else {
			io->result = r->error ? -EIO : 0;
			if (r->error)
				count(&nb->nr_error);
			else
				count(io->op == BACKEND_WRITE ? &nb->nr_write : &nb->nr_read);
		}
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
		cookie = nbd_aio_pread(c->h, io->buf, len, pos, cb, 0);
	else
		cookie = nbd_aio_pwrite(c->h, io->buf, len, pos, cb, 0);
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
 * connection cannot be made again complete before this returns.
 * Return: 0; -EINVAL (a NULL request: none was issued).
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

/* Poll @c until it has nothing in flight or @want more requests finished;
 * a connection that dies is closed, which finishes its requests (with
 * EIO) through on_free. Context: c->lock held. */
static void conn_poll(struct nbd_backend *nb, struct nbd_conn *c, unsigned int want)
{
	uint64_t goal = c->nr_done + want;

	while (c->h && c->nr_done < goal && nbd_aio_in_flight(c->h) > 0) {
		if (nbd_poll(c->h, -1) == -1 || nbd_aio_is_dead(c->h)) {
			nbd_close(c->h); /* runs on_free for what was in flight */
			c->h = NULL;     /* connected again before next use */
			count(&nb->nr_error);
			break;
		}
	}
}

/* reap: run done() for finished requests, waiting until at least
 * @min_complete ran or nothing is in flight. Return: how many ran. */
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

static void nbd_close_backend(struct backend *b)
{
	struct nbd_backend *nb = to_nbd(b);

	nb->closing = true;
	for (unsigned int i = 0; i < NBD_MAX_CONNS; i++) {
		struct nbd_conn *c = &nb->conn[i];

		pthread_mutex_lock(&c->lock);
		if (c->h) {
			conn_poll(nb, c, UINT32_MAX); /* let writes land */
			/* swapoff: the server's caches out before we go */
			if (nb->can_flush && !nbd_aio_is_dead(c->h))
				(void)nbd_flush(c->h, 0);
			nbd_shutdown(c->h, 0);
			nbd_close(c->h);
			c->h = NULL;
		}
		conn_finish(nb, c);
		pthread_mutex_destroy(&c->lock);
	}
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
	int64_t size = nbd_get_size(h);
	uint64_t min = (uint64_t)USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS * USWAP_PAGE_SIZE;

	if (size < 0)
		return backend_errf(err, errlen, -EIO, "nbd %s: cannot read the export "
				    "size: %s", nb->uri, nbd_get_error());
	if ((uint64_t)size < min)
		return backend_errf(err, errlen, -EINVAL, "nbd %s: export of %lld bytes "
				    "is smaller than %llu (%u clusters)", nb->uri,
				    (long long)size, (unsigned long long)min,
				    USWAP_MIN_CLUSTERS);
	if (nbd_is_read_only(h) == 1)
		return backend_errf(err, errlen, -EROFS, "nbd %s: the export is read-only",
				    nb->uri);
	if (conns > 1 && nbd_can_multi_conn(h) != 1)
		return backend_errf(err, errlen, -EINVAL, "nbd %s: conns=%u needs a server "
				    "that offers multi-conn (this one does not): use one "
				    "connection", nb->uri, conns);
	nb->can_trim = nbd_can_trim(h) == 1;
	nb->can_flush = nbd_can_flush(h) == 1;
	nb->b.nr_slots = (uint64_t)size / USWAP_PAGE_SIZE;
	return 0;
}

int backend_nbd_open(const char *uri, unsigned int conns, struct backend **out,
		     char *err, size_t errlen)
{
	struct nbd_backend *nb;
	int rc = 0;

	if (!uri || !*uri)
		return backend_errf(err, errlen, -EINVAL, "nbd needs a URI, e.g. "
				    "nbd+unix:///?socket=/run/nbd.sock");
	if (conns > NBD_MAX_CONNS)
		return backend_errf(err, errlen, -EINVAL, "nbd: at most %d connections",
				    NBD_MAX_CONNS);
	nb = calloc(1, sizeof(*nb));
	if (!nb || !(nb->uri = strdup(uri))) {
		free(nb);
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	}
	nb->b.ops = &nbd_ops;
	nb->b.first_slot = 1;
	nb->nr_conns = conns ? conns : 1;
	for (unsigned int i = 0; i < NBD_MAX_CONNS; i++)
		pthread_mutex_init(&nb->conn[i].lock, NULL);
	for (unsigned int i = 0; i < nb->nr_conns && !rc; i++) {
		struct nbd_conn *c = &nb->conn[i];

		c->h = nbd_create();
		if (!c->h || connect_uri(c->h, uri) == -1) {
			rc = backend_errf(err, errlen, -EHOSTUNREACH, "nbd %s: cannot "
					  "connect: %s", uri, nbd_get_error());
		} else if (i == 0) {
			rc = check_export(nb, c->h, conns, err, errlen);
			/* Auto: several connections where the server makes
			 * them consistent with each other. */
			if (!rc && !conns && nbd_can_multi_conn(c->h) == 1)
				nb->nr_conns = NBD_AUTO_CONNS;
		}
	}
	if (rc) {
		nbd_close_backend(&nb->b);
		return rc;
	}
	snprintf(nb->b.name, sizeof(nb->b.name), "%s", uri);
	nb->b.free_notify = false; /* trim per cluster is enough */
	*out = &nb->b;
	return 0;
}
