/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the interface every swap backend implements (the dev/ layer
 * of docs/design.md): store and return the data of folios at slot offsets.
 *
 * A backend knows nothing about who owns a slot or why; the swap path
 * (src/swap/) decides which slots to write and read. Units: a slot is one
 * page (USWAP_PAGE_SIZE bytes); a folio is 2^order slots starting at a slot
 * aligned to 2^order; buffers hold 2^order * USWAP_PAGE_SIZE bytes.
 *
 * Errors are negative errno: -EIO (the medium failed), -EINVAL (slot or
 * order outside the device), -ENOSPC (a capped backend, e.g. zram over its
 * disksize), -ENOMEM. A failed write leaves the previous contents of the
 * slots undefined but never touches other slots; a failed read never
 * fills the buffer with wrong data that looks valid (callers must treat
 * the buffer as garbage on error).
 *
 * Thread-safety: read, write, discard and submit may be called from many
 * threads at once on different slots. Concurrent calls on the same slot
 * are the caller's to avoid (the swap path holds the slot's HAS_CACHE pin).
 */
#ifndef USWAP_DEV_BACKEND_H
#define USWAP_DEV_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uswap/uswap.h>

enum backend_op {
	BACKEND_READ,
	BACKEND_WRITE,
	BACKEND_DISCARD,
};

/* One asynchronous request. The caller owns it until done() has run. */
struct backend_io {
	enum backend_op op;
	uint64_t slot;        /* first slot */
	unsigned int order;   /* READ/WRITE: 2^order slots */
	uint64_t nr_slots;    /* DISCARD: slots to discard */
	void *buf;            /* READ: filled; WRITE: read from (const) */
	int result;           /* set before done(): 0 or -errno */
	void (*done)(struct backend_io *io); /* runs in reap() or submit() */
	void *priv;           /* caller's */
};

struct backend;

struct backend_ops {
	const char *kind; /* "ram", "zram", "file", "faulty" */
	/* Synchronous I/O. Return 0 or -errno. */
	int (*read)(struct backend *b, uint64_t slot, unsigned int order, void *buf);
	int (*write)(struct backend *b, uint64_t slot, unsigned int order,
		     const void *buf);
	/* Forget [slot, slot + nr): reads of them return zeroes or stale data
	 * until written again (zram frees memory, files punch holes). */
	int (*discard)(struct backend *b, uint64_t slot, uint64_t nr_slots);
	int (*flush)(struct backend *b);
	/* Asynchronous I/O: submit queues @io (or completes it at once and
	 * calls done before returning); reap runs done() for at least
	 * @min_complete finished requests (0: only those already finished)
	 * and returns how many it ran, or -errno. Backends without real async
	 * I/O use backend_submit_sync()/backend_reap_sync(). */
	int (*submit)(struct backend *b, struct backend_io *io);
	int (*reap)(struct backend *b, unsigned int min_complete);
	/* Submit @n requests at once, as @n submits would, at the cost of
	 * one (io_uring: one io_uring_submit per queue depth's worth). May
	 * be NULL: backend_submit_batch() then calls submit for each. */
	int (*submit_batch)(struct backend *b, struct backend_io **ios, unsigned int n);
	/* Print backend-specific statistics (zram's mm_stat) as "key value"
	 * lines; may be NULL. */
	void (*print_stats)(struct backend *b, FILE *out);
	void (*close)(struct backend *b);
};

/* Every backend embeds this first. */
struct backend {
	const struct backend_ops *ops;
	char name[64];        /* shown in the swaps table: a path or "zram0" */
	uint64_t nr_slots;    /* slots the backend can hold, incl. slot 0 */
	uint64_t first_slot;  /* slots before this are not data (the header
				 page of a mkswap file); 1 for files, 1 for
				 memory backends too (slot 0 is never used) */
	const uint64_t *bad_slots; /* from the swap header; owned by backend */
	size_t nr_bad;
	bool is_file;         /* "file" in the Type column, else "partition" */
	bool discard_clusters;/* wants each cluster discarded when it becomes
				 free, before reuse (the kernel's page
				 discard, SWP_PAGE_DISCARD) */
	bool free_notify;     /* wants a discard of every slot the swap path
				 frees, at once (zram's swap_slot_free_notify:
				 the memory goes back); others are discarded
				 per cluster or not at all */
	bool encrypted;       /* stores every page sealed: a crypt layer, a
				 wrapper over one, a mirror of two */
};

/* Helpers for backends whose I/O is synchronous (ram, zram): submit runs
 * the request at once and calls done(). */
int backend_submit_sync(struct backend *b, struct backend_io *io);

/* Submit @n requests through b->ops->submit_batch, or one by one when the
 * backend has none. Return: 0, or the first submit's -errno (requests
 * before it were submitted; those after it were not, and their done() is
 * not called). */
int backend_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n);
int backend_reap_sync(struct backend *b, unsigned int min_complete);

/* Constructors (one per file in src/dev/). Return 0 and *out, or -errno
 * with a message in @err. */
int backend_ram_open(uint64_t size_bytes, struct backend **out, char *err, size_t errlen);
int backend_zram_open(uint64_t disksize_bytes, const char *algo, struct backend **out,
		      char *err, size_t errlen);

struct file_backend_opts {
	unsigned int queue_depth; /* io_uring entries (default 32) */
	bool direct;              /* O_DIRECT */
	bool discard;             /* both kernel modes: whole area at open and
				     each cluster as it becomes free */
	bool no_uring;            /* force pread/pwrite */
};
int backend_file_open(const char *path, const struct file_backend_opts *opts,
		      struct backend **out, char *err, size_t errlen);

/* An NBD export (nbd.c): @uri nbd://HOST[:PORT]/EXPORT or
 * nbd+unix:///EXPORT?socket=PATH (other forms libnbd takes, only while
 * fds 0-2 are open), @conns connections (more than 1 needs the server's
 * multi-conn; 0: 4 when the server offers it, else 1), @timeout_s the
 * longest wait for the server (0: 30 s; at most 3600). Block 0 holds the
 * instance's claim. Return: 0; -EBUSY (another instance's claim),
 * -EHOSTUNREACH, -EROFS, -EINVAL, -ENOMEM, with a message in @err. */
int backend_nbd_open(const char *uri, unsigned int conns, unsigned int timeout_s,
		     struct backend **out, char *err, size_t errlen);

/* Two legs holding the same slots (mirror.c); takes ownership of both. */
int backend_mirror_open(struct backend *a, struct backend *b, struct backend **out,
			char *err, size_t errlen);
/* A mirror's state: which legs have failed, failovers so far. Return: 0,
 * -EINVAL (not a mirror). */
int mirror_info(struct backend *b, bool failed[2], uint64_t *failovers);
/* Replace the failed leg of mirror @b by @leg (taken) and copy every slot
 * to it in the background (mirror.c says how writes meanwhile stay right).
 * Return: 0; -EINVAL (not a mirror, no failed leg or no healthy one, @leg
 * too small); -EBUSY (a resync running); -ENOSPC (replaced too often). */
int mirror_replace(struct backend *b, struct backend *leg, char *err, size_t errlen);
/* mirror_syncing() - a resync under way? mirror_leg() - leg 0 or 1 (tests). */
bool mirror_syncing(struct backend *b);
struct backend *mirror_leg(struct backend *b, int leg);

/* Encrypts and authenticates every page for @inner (crypt.c; takes it). */
int backend_crypt_open(struct backend *inner, struct backend **out, char *err, size_t errlen);
/* Does @cluster of crypt backend @b have a key now? (tests) */
bool crypt_key_present(struct backend *b, uint64_t cluster);

struct faulty_opts {
	double read_error_rate;   /* 0..1: each read fails with -EIO */
	double write_error_rate;
	double discard_error_rate;
	const uint64_t *bad_read_slots;  /* fail reads touching these */
	size_t nr_bad_read;
	const uint64_t *bad_write_slots;
	size_t nr_bad_write;
	unsigned int latency_us;  /* added to every request */
	uint64_t seed;
	/* SQLite-style fault loops: the fail_nth-th request (1-based; reads,
	 * writes and discards counted together) fails with -EIO; with
	 * fail_persistent every later one fails too. 0 = off. */
	uint64_t fail_nth;
	bool fail_persistent;
	const uint64_t *bad_discard_slots; /* fail discards touching these */
	size_t nr_bad_discard;
};
/* Wraps @inner (takes ownership) and injects errors and latency. */
int backend_faulty_open(struct backend *inner, const struct faulty_opts *opts,
			struct backend **out, char *err, size_t errlen);

static inline size_t folio_bytes(unsigned int order)
{
	return (size_t)USWAP_PAGE_SIZE << order;
}

#endif /* USWAP_DEV_BACKEND_H */
