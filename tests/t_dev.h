/* SPDX-License-Identifier: MIT */
/*
 * t_dev.h - helpers for the backend tests (test_backend, test_zram,
 * test_faulty): a private temp directory on /tmp for backing files, a
 * corpus of real text, page fillers, and one table of every backend
 * configuration the suite runs.
 *
 * Backing files are plain files in a fresh directory under /tmp, removed
 * at exit; no block device is ever opened and nothing is swapped on.
 */
#ifndef USWAP_TESTS_T_DEV_H
#define USWAP_TESTS_T_DEV_H

#include <sys/types.h>

#include "t_util.h"

#include "dev/backend.h"
#include "dev/spec.h"

/* ---------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------- */

/* A new file of @nr_slots pages in the private temp dir: zeroed (sparse),
 * or prepared by `mkswap` when @mkswap and the tool is there (*@made_swap
 * says which; may be NULL). Returns the path (static storage per call is
 * not used: the caller frees it). Fails the test on error. */
char *t_dev_file(uint64_t nr_slots, bool mkswap, bool *made_swap);

/* A swap file of @nr_slots pages written in full (swapon refuses holes)
 * and prepared by `mkswap`, in the private temp dir. Return: its path
 * (the caller frees it), or NULL when mkswap is not installed. */
char *t_dev_swapfile(uint64_t nr_slots);

/* Skip the test unless this libuswap has the device @kind: nbd and crypt
 * may be left out (meson options nbd and crypt). A skip leaves the test
 * at once, so call it before the test allocates anything. */
void t_need_kind(enum dev_kind kind);

/* Open @spec (uswap_backend_open()) and swap it on at the spec's prio;
 * fails the test on error. Return: the device's type; its backend in
 * *@b (owned by the device) when @b is not NULL. */
int t_swapon_spec(struct uswap *u, const char *spec, struct backend **b);

/* ---------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------- */

/* Real text (/usr/share/common-licenses/GPL-3, or another text found
 * under /usr/share); loaded once; never NULL, at least one page long. */
const unsigned char *t_text(size_t *len);

enum t_page_kind {
	T_PAGE_TEXT,    /* a page of the text corpus from a random offset */
	T_PAGE_RANDOM,  /* random bytes: incompressible */
	T_PAGE_ZERO,    /* all zero */
	T_PAGE_SAME,    /* one random 8-byte word repeated */
	T_PAGE_MIXED,   /* half text, half zero */
	T_PAGE_KINDS
};

/* Fill one page of kind @kind from the PRNG @rng. */
void t_fill_page(void *page, enum t_page_kind kind, uint64_t *rng);

/* Fill 2^@order pages with kinds picked at random (text most often). */
void t_fill_folio(void *buf, unsigned int order, uint64_t *rng);

/* A 64-bit checksum of @len bytes (FNV-1a over words). */
uint64_t t_checksum(const void *buf, size_t len);

/* Fail the test at the first differing byte, naming @what and the page. */
void t_assert_same_bytes(const void *got, const void *want, size_t len,
			 const char *what);

/* ---------------------------------------------------------------------
 * Backend configurations
 * ------------------------------------------------------------------- */

enum t_backend_kind {
	T_RAM,
	T_ZRAM_LZ4,
	T_ZRAM_ZSTD,
	T_FILE_URING,   /* buffered, io_uring */
	T_FILE_PREAD,   /* buffered, no_uring: pread/pwrite */
	T_FILE_DIRECT,  /* O_DIRECT, io_uring */
	T_FAULTY_RAM,   /* faulty wrapper over ram injecting nothing */
	T_NR_BACKENDS
};

const char *t_backend_name(enum t_backend_kind k);

/* Open backend @k with @nr_slots slots (files: a new file of that size,
 * with discard on when @discard). Fails the test on error, skips it if
 * the configuration is not possible here (O_DIRECT refused). */
struct backend *t_backend_open(enum t_backend_kind k, uint64_t nr_slots, bool discard);

/* Synchronous-op wrappers that must succeed. */
void t_bwrite(struct backend *b, uint64_t slot, unsigned int order, const void *buf);
void t_bread(struct backend *b, uint64_t slot, unsigned int order, void *buf);

/* Allocate a buffer of @len bytes, 4096-aligned or deliberately
 * misaligned by 8 bytes (exercises O_DIRECT bounce buffers); free with
 * t_buf_free(). */
void *t_buf_alloc(size_t len, bool misaligned);
void t_buf_free(void *buf, bool misaligned);

/* ---------------------------------------------------------------------
 * An NBD server for the nbd backend's tests: nbdkit's memory plugin on a
 * unix socket in a private directory under /tmp, killed by
 * t_nbdkit_stop() (and by --exit-with-parent if the test dies first).
 * ------------------------------------------------------------------- */

struct t_nbdkit {
	pid_t pid;
	char dir[64];
	char sock[96];
	char uri[160];  /* the device spec: "nbd:nbd+unix:///?socket=SOCK" */
	char plugin[16], arg[128], file[96]; /* how to start it again */
	bool readonly;
};

/* Is nbdkit on PATH? */
bool t_have_nbdkit(void);
/* Start `nbdkit -f --exit-with-parent -U SOCK [-r] memory SIZE` and wait
 * (up to 5 s) for its socket. Fails the test on error. */
void t_nbdkit_start(struct t_nbdkit *s, const char *size, bool readonly);
/* The same with nbdkit's file plugin on a new file of @bytes in the
 * server's directory: data that outlives a restart. */
void t_nbdkit_start_file(struct t_nbdkit *s, uint64_t bytes);
/* Kill the server and start it again on the same socket (a dropped
 * connection for every client). */
void t_nbdkit_restart(struct t_nbdkit *s);
/* Stop (SIGSTOP) or continue (SIGCONT) the server: a server that hangs
 * with its connections open. t_nbdkit_stop() kills a stopped one too. */
void t_nbdkit_pause(struct t_nbdkit *s);
void t_nbdkit_resume(struct t_nbdkit *s);
/* Kill it and remove its socket, file and directory. */
void t_nbdkit_stop(struct t_nbdkit *s);

#endif /* USWAP_TESTS_T_DEV_H */
