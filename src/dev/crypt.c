// SPDX-License-Identifier: MIT
/*
 * crypt.c - the "crypt" wrapper: every page encrypted and authenticated
 * before it reaches the inner device, with a key per cluster that exists
 * only while the cluster holds data (OpenBSD's swap encryption, with the
 * 2 MiB cluster as the key unit and an authentication tag per page).
 *
 * Keys: 32 random bytes per cluster (libsodium's randombytes_buf), made
 * when the first page is written into an empty cluster and wiped
 * (sodium_memzero) when its last page is discarded. The swap path tells
 * this device of every freed slot (free_notify), so freed swap becomes
 * undecryptable at once. The key table is mmap'd on its own pages, locked
 * in memory (mlock: never swapped by the kernel, and not ours to swap:
 * it is the library's own memory) and left out of core dumps
 * (MADV_DONTDUMP).
 *
 * Pages: AES-256-GCM where the CPU has AES instructions, else
 * XChaCha20-Poly1305, both libsodium's (detached tags); the nonce is
 * (slot, generation), the associated data (device, slot, generation), the
 * device being 16 random bytes drawn at open. The generation of a
 * slot counts its writes, so a block moved to another slot, replayed from
 * an older write, or changed in any
 * byte fails authentication: the read is -EIO, never data. The 16-byte
 * tag and the 4-byte generation of each slot live in memory beside the
 * key table, 20 bytes a slot (5 MiB for 1 GiB of swap); the inner device
 * holds exactly the ciphertext, page for page.
 *
 * Failures: a key table that cannot be allocated or locked fails the
 * open; a cipher failure fails the I/O with -EIO before anything is
 * written: plaintext never reaches the inner device. Submitted batches
 * reach the inner device's own submit (a file's io_uring, an export's
 * requests in flight); reads are opened as they complete.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <sodium.h>

#include "dev/dev_internal.h"

#define KEY_BYTES   32
#define TAG_BYTES   16
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES /* the longer */
#define DEV_ID_BYTES 16

struct crypt_cluster {
	unsigned char key[KEY_BYTES];
	uint32_t live;                /* slots holding data; 0: no key */
	pthread_mutex_t lock;
};

struct crypt_slot {
	unsigned char tag[TAG_BYTES];
	uint32_t gen;                 /* writes so far; 0: never written */
};

struct crypt_backend {
	struct backend b;             /* first */
	struct backend *inner;        /* owned */
	struct crypt_cluster *cl;     /* locked, not dumped; table_bytes */
	size_t table_bytes;
	uint64_t nr_clusters;
	struct crypt_slot *slot;      /* per slot */
	unsigned char *live;          /* per slot: holds data (bitmap bytes) */
	_Atomic uint64_t nr_keys, nr_keys_made, nr_keys_wiped, nr_auth_failed;
	unsigned char dev_id[DEV_ID_BYTES]; /* random, per open: in every AD */
};

static const struct backend_ops crypt_ops;

static inline struct crypt_backend *to_crypt(struct backend *b)
{
	return (struct crypt_backend *)b;
}

/* (slot, generation), zero-padded: AES-GCM reads its first 12 bytes. */
static void nonce_of(uint64_t slot, uint32_t gen, unsigned char nonce[NONCE_BYTES])
{
	memset(nonce, 0, NONCE_BYTES);
	memcpy(nonce, &slot, sizeof(slot));
	memcpy(nonce + sizeof(slot), &gen, sizeof(gen));
}

/* Associated data: (device, slot, generation). */
#define AD_BYTES (DEV_ID_BYTES + 12)

static void ad_of(const struct crypt_backend *cb, const unsigned char nonce[NONCE_BYTES],
		  unsigned char ad[AD_BYTES])
{
	memcpy(ad, cb->dev_id, DEV_ID_BYTES);
	memcpy(ad + DEV_ID_BYTES, nonce, 12);
}

/*
 * Why libsodium and not OpenSSL, although OpenSSL is faster here
 * (docs/benchmarks.md): under `uswap run` this code runs in the pager's
 * threads, and must not touch memory the program allocated, which lives
 * in the swapped heap: a pager thread that faults on it waits for itself.
 * OpenSSL keeps process-wide state (its library context, cipher caches)
 * that the program may have made first (Python's hashlib does), so a
 * pager thread using it hung; libsodium's AEAD functions touch only the
 * stack and their arguments.
 */
static bool use_aes;
static pthread_once_t cipher_once = PTHREAD_ONCE_INIT;

static void cipher_pick(void)
{
	use_aes = crypto_aead_aes256gcm_is_available();
}

/* Seal one page: @out gets the ciphertext, @tag its tag. Return: 0, -1. */
static int seal_page(const unsigned char *key, const unsigned char nonce[NONCE_BYTES],
		     const unsigned char *ad, const unsigned char *in, unsigned char *out,
		     unsigned char *tag)
{
	if (use_aes)
		return crypto_aead_aes256gcm_encrypt_detached(out, tag, NULL, in,
				USWAP_PAGE_SIZE, ad, AD_BYTES, NULL, nonce, key);
	return crypto_aead_xchacha20poly1305_ietf_encrypt_detached(out, tag, NULL, in,
			USWAP_PAGE_SIZE, ad, AD_BYTES, NULL, nonce, key);
}

/* Open one page in place. Return: 0, -1 (not authentic). */
static int open_page(const unsigned char *key, const unsigned char nonce[NONCE_BYTES],
		     const unsigned char *ad, unsigned char *page, const unsigned char *tag)
{
	if (use_aes)
		return crypto_aead_aes256gcm_decrypt_detached(page, NULL, page,
				USWAP_PAGE_SIZE, tag, ad, AD_BYTES, nonce, key);
	return crypto_aead_xchacha20poly1305_ietf_decrypt_detached(page, NULL, page,
			USWAP_PAGE_SIZE, tag, ad, AD_BYTES, nonce, key);
}

/* Slot @s now holds data: count it in its cluster, making the cluster's
 * key if it had none. Return: 0, -EIO (no random bytes: nothing counted).
 * Context: the slot is the caller's (contract). */
static int slot_live(struct crypt_backend *cb, uint64_t s)
{
	struct crypt_cluster *c = &cb->cl[s / USWAP_CLUSTER_SLOTS];
	int rc = 0;

	if (cb->live[s])
		return 0;
	pthread_mutex_lock(&c->lock);
	if (c->live == 0) {
		randombytes_buf(c->key, sizeof(c->key));
		atomic_fetch_add(&cb->nr_keys, 1);
		atomic_fetch_add(&cb->nr_keys_made, 1);
	}
	if (!rc)
		c->live++;
	pthread_mutex_unlock(&c->lock);
	if (!rc)
		cb->live[s] = 1;
	return rc;
}

/* Slot @s holds nothing any more: the last one out wipes the key. */
static void slot_dead(struct crypt_backend *cb, uint64_t s)
{
	struct crypt_cluster *c = &cb->cl[s / USWAP_CLUSTER_SLOTS];

	if (!cb->live[s])
		return;
	cb->live[s] = 0;
	sodium_memzero(cb->slot[s].tag, TAG_BYTES);
	pthread_mutex_lock(&c->lock);
	if (--c->live == 0) {
		sodium_memzero(c->key, sizeof(c->key));
		atomic_fetch_sub(&cb->nr_keys, 1);
		atomic_fetch_add(&cb->nr_keys_wiped, 1);
	}
	pthread_mutex_unlock(&c->lock);
}

/* A ciphertext buffer on a page boundary, so an O_DIRECT inner file
 * writes it without a bounce copy. Return: NULL when out of memory. */
static unsigned char *ct_alloc(unsigned int order)
{
	void *p;

	return posix_memalign(&p, USWAP_PAGE_SIZE, folio_bytes(order)) ? NULL : p;
}

/* Seal the 2^@order pages of @buf into @ct, each under its cluster's key
 * (made for a cluster that had none). Return: 0; -EIO (a cipher or random
 * failure: @ct must not be written out). */
static int seal_folio(struct crypt_backend *cb, uint64_t slot, unsigned int order,
		      const void *buf, unsigned char *ct)
{
	unsigned char nonce[NONCE_BYTES], ad[AD_BYTES];

	for (uint64_t i = 0; i < (UINT64_C(1) << order); i++) {
		uint64_t s = slot + i;
		struct crypt_cluster *c = &cb->cl[s / USWAP_CLUSTER_SLOTS];
		unsigned char key[KEY_BYTES];
		int rc = slot_live(cb, s);

		if (rc)
			return rc;
		pthread_mutex_lock(&c->lock);
		memcpy(key, c->key, sizeof(key));
		pthread_mutex_unlock(&c->lock);
		cb->slot[s].gen++;
		nonce_of(s, cb->slot[s].gen, nonce);
		ad_of(cb, nonce, ad);
		rc = seal_page(key, nonce, ad, (const unsigned char *)buf + i * USWAP_PAGE_SIZE,
			       ct + i * USWAP_PAGE_SIZE, cb->slot[s].tag);
		sodium_memzero(key, sizeof(key));
		if (rc)
			return -EIO; /* nothing written: no plaintext goes out */
	}
	return 0;
}

/* Open, in place, the 2^@order pages read into @buf. Return: 0; -EIO
 * (a page not authentic: counted, and the whole folio wiped). */
static int open_folio(struct crypt_backend *cb, uint64_t slot, unsigned int order, void *buf)
{
	unsigned char nonce[NONCE_BYTES], ad[AD_BYTES];

	for (uint64_t i = 0; i < (UINT64_C(1) << order); i++) {
		uint64_t s = slot + i;
		struct crypt_cluster *c = &cb->cl[s / USWAP_CLUSTER_SLOTS];
		unsigned char *page = (unsigned char *)buf + i * USWAP_PAGE_SIZE;
		unsigned char key[KEY_BYTES];
		bool live = cb->live[s];
		int rc;

		pthread_mutex_lock(&c->lock);
		memcpy(key, c->key, sizeof(key));
		pthread_mutex_unlock(&c->lock);
		nonce_of(s, cb->slot[s].gen, nonce);
		ad_of(cb, nonce, ad);
		rc = live ? open_page(key, nonce, ad, page, cb->slot[s].tag) : -1;
		sodium_memzero(key, sizeof(key));
		if (rc) {
			atomic_fetch_add(&cb->nr_auth_failed, 1);
			sodium_memzero(buf, folio_bytes(order)); /* nothing that looks valid */
			return -EIO;
		}
	}
	return 0;
}

static int crypt_write(struct backend *b, uint64_t slot, unsigned int order,
		       const void *buf)
{
	struct crypt_backend *cb = to_crypt(b);
	int rc = backend_check_io(b, slot, order);
	unsigned char *ct;

	if (rc)
		return rc;
	ct = ct_alloc(order);
	if (!ct)
		return -ENOMEM;
	rc = seal_folio(cb, slot, order, buf, ct);
	if (!rc)
		rc = cb->inner->ops->write(cb->inner, slot, order, ct);
	free(ct);
	return rc;
}

static int crypt_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	struct crypt_backend *cb = to_crypt(b);
	int rc = backend_check_io(b, slot, order);

	if (!rc)
		rc = cb->inner->ops->read(cb->inner, slot, order, buf);
	return rc ? rc : open_folio(cb, slot, order, buf);
}

/*
 * Asynchronous I/O: a write is sealed at submit into a ciphertext buffer
 * of its own and handed to the inner device's submit; a read goes to the
 * inner device straight into the caller's buffer and is opened in its
 * completion, on whichever thread reaps the inner device.
 */
struct crypt_io {
	struct backend_io inner;      /* first: the inner device's request */
	struct backend_io *outer;
	struct crypt_backend *cb;
	unsigned char *ct;            /* write: the ciphertext; owned */
};

static void outer_done(struct backend_io *io, int rc)
{
	io->result = rc;
	if (io->done)
		io->done(io);
}

static void crypt_io_done(struct backend_io *in)
{
	struct crypt_io *ci = (struct crypt_io *)in;
	struct backend_io *outer = ci->outer;
	int rc = in->result;

	if (!rc && outer->op == BACKEND_READ)
		rc = open_folio(ci->cb, outer->slot, outer->order, outer->buf);
	free(ci->ct);
	free(ci);
	outer_done(outer, rc);
}

/* The inner request for @io, sealed if a write. Return: NULL when @io is
 * already answered (a bad range, no memory, a cipher failure). */
static struct crypt_io *crypt_io_prepare(struct crypt_backend *cb, struct backend_io *io)
{
	struct crypt_io *ci;
	int rc = io->op == BACKEND_DISCARD ? -EINVAL : backend_check_io(&cb->b, io->slot, io->order);

	if (rc) {
		outer_done(io, rc);
		return NULL;
	}
	ci = calloc(1, sizeof(*ci));
	if (ci && io->op == BACKEND_WRITE && !(ci->ct = ct_alloc(io->order)))
		rc = -ENOMEM;
	if (!ci)
		rc = -ENOMEM;
	if (!rc && io->op == BACKEND_WRITE)
		rc = seal_folio(cb, io->slot, io->order, io->buf, ci->ct);
	if (rc) {
		if (ci)
			free(ci->ct);
		free(ci);
		outer_done(io, rc);
		return NULL;
	}
	ci->outer = io;
	ci->cb = cb;
	ci->inner = (struct backend_io){
		.op = io->op, .slot = io->slot, .order = io->order,
		.buf = io->op == BACKEND_WRITE ? ci->ct : io->buf, .done = crypt_io_done,
	};
	return ci;
}

static int crypt_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n)
{
	struct crypt_backend *cb = to_crypt(b);
	struct backend_io *q[64];
	unsigned int k = 0;
	int rc = 0;

	for (unsigned int i = 0; i < n; i++)
		if (!ios[i])
			return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		struct crypt_io *ci = crypt_io_prepare(cb, ios[i]);

		if (ci)
			q[k++] = &ci->inner;
		if (k == 64 || (i == n - 1 && k)) {
			/* The inner device fails a batch only for a NULL. */
			rc = backend_submit_batch(cb->inner, q, k);
			k = 0;
			if (rc)
				break;
		}
	}
	return rc;
}

static int crypt_submit(struct backend *b, struct backend_io *io)
{
	return crypt_submit_batch(b, &io, 1);
}

static int crypt_reap(struct backend *b, unsigned int min_complete)
{
	struct backend *inner = to_crypt(b)->inner;

	return inner->ops->reap(inner, min_complete);
}

static int crypt_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct crypt_backend *cb = to_crypt(b);
	int rc = backend_check_range(b, slot, nr_slots);

	if (rc)
		return rc;
	for (uint64_t s = slot; s < slot + nr_slots; s++)
		slot_dead(cb, s);
	return cb->inner->ops->discard(cb->inner, slot, nr_slots);
}

static int crypt_flush(struct backend *b)
{
	return to_crypt(b)->inner->ops->flush(to_crypt(b)->inner);
}

static void crypt_print_stats(struct backend *b, FILE *out)
{
	struct crypt_backend *cb = to_crypt(b);

	fprintf(out, "cipher %s\nkeys %llu\nkeys_made %llu\n"
		"keys_wiped %llu\nauth_failed %llu\n",
		use_aes ? "aes-256-gcm" : "xchacha20-poly1305",
		(unsigned long long)atomic_load(&cb->nr_keys),
		(unsigned long long)atomic_load(&cb->nr_keys_made),
		(unsigned long long)atomic_load(&cb->nr_keys_wiped),
		(unsigned long long)atomic_load(&cb->nr_auth_failed));
	if (cb->inner->ops->print_stats)
		cb->inner->ops->print_stats(cb->inner, out);
}

static void crypt_close(struct backend *b)
{
	struct crypt_backend *cb = to_crypt(b);

	cb->inner->ops->close(cb->inner);
	for (uint64_t i = 0; i < cb->nr_clusters; i++)
		pthread_mutex_destroy(&cb->cl[i].lock);
	sodium_memzero(cb->cl, cb->table_bytes);
	munlock(cb->cl, cb->table_bytes);
	munmap(cb->cl, cb->table_bytes);
	free(cb->slot);
	free(cb->live);
	free(cb);
}

static const struct backend_ops crypt_ops = {
	.kind = "crypt",
	.read = crypt_read,
	.write = crypt_write,
	.discard = crypt_discard,
	.flush = crypt_flush,
	.submit = crypt_submit,
	.submit_batch = crypt_submit_batch,
	.reap = crypt_reap,
	.print_stats = crypt_print_stats,
	.close = crypt_close,
};

bool crypt_key_present(struct backend *b, uint64_t cluster)
{
	struct crypt_backend *cb;
	bool present;

	if (!b || b->ops != &crypt_ops || cluster >= to_crypt(b)->nr_clusters)
		return false;
	cb = to_crypt(b);
	pthread_mutex_lock(&cb->cl[cluster].lock);
	present = cb->cl[cluster].live > 0;
	pthread_mutex_unlock(&cb->cl[cluster].lock);
	return present;
}

int backend_crypt_open(struct backend *inner, struct backend **out, char *err, size_t errlen)
{
	struct crypt_backend *cb;

	if (sodium_init() < 0)
		return backend_errf(err, errlen, -EIO, "crypt: libsodium did not start");
	pthread_once(&cipher_once, cipher_pick); /* once: other devices seal meanwhile */
	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return backend_errf(err, errlen, -ENOMEM, "crypt: out of memory");
	cb->inner = inner;
	randombytes_buf(cb->dev_id, sizeof(cb->dev_id));
	cb->nr_clusters = (inner->nr_slots + USWAP_CLUSTER_SLOTS - 1) / USWAP_CLUSTER_SLOTS;
	cb->table_bytes = cb->nr_clusters * sizeof(*cb->cl);
	cb->cl = mmap(NULL, cb->table_bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cb->cl == MAP_FAILED) {
		free(cb);
		return backend_errf(err, errlen, -ENOMEM, "crypt: cannot map the key table");
	}
	if (mlock(cb->cl, cb->table_bytes)) {
		int e = errno;
		size_t bytes = cb->table_bytes;

		munmap(cb->cl, bytes);
		free(cb);
		return backend_errf(err, errlen, -e, "crypt: cannot lock the key table in "
				    "memory (%zu bytes; RLIMIT_MEMLOCK?): %s", bytes, strerror(e));
	}
	(void)madvise(cb->cl, cb->table_bytes, MADV_DONTDUMP);
	cb->slot = calloc(inner->nr_slots, sizeof(*cb->slot));
	cb->live = calloc(inner->nr_slots, 1);
	if (!cb->slot || !cb->live) {
		free(cb->slot);
		free(cb->live);
		munlock(cb->cl, cb->table_bytes);
		munmap(cb->cl, cb->table_bytes);
		free(cb);
		return backend_errf(err, errlen, -ENOMEM, "crypt: out of memory for the "
				    "tags of %llu slots", (unsigned long long)inner->nr_slots);
	}
	for (uint64_t i = 0; i < cb->nr_clusters; i++)
		pthread_mutex_init(&cb->cl[i].lock, NULL);
	cb->b.ops = &crypt_ops;
	cb->b.nr_slots = inner->nr_slots;
	cb->b.first_slot = inner->first_slot;
	cb->b.bad_slots = NULL;
	cb->b.is_file = inner->is_file;
	cb->b.discard_clusters = inner->discard_clusters;
	cb->b.free_notify = true; /* every freed slot: its key count drops */
	cb->b.encrypted = true;
	snprintf(cb->b.name, sizeof(cb->b.name), "crypt:%.56s", inner->name);
	*out = &cb->b;
	return 0;
}
