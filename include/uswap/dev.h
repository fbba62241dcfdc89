/* SPDX-License-Identifier: MIT */
/*
 * uswap/dev.h - the device layer (src/dev/): backends (where a device's data
 * lives), the mkswap swap header and device specs. Nothing here takes an
 * instance: swapping a backend on, and the figures of a device in use, are
 * the swap layer's (<uswap/swap.h>).
 * Part of the embedder's API; <uswap/uswap.h> includes it.
 */
#ifndef USWAP_DEV_H
#define USWAP_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uswap/api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uswap_backend; /* where a device's data lives: ram, zram, file, faulty */

/* ------------------------------------------------------------------------
 * Backends and device specs
 * ---------------------------------------------------------------------- */

/*
 * uswap_backend_open() - open the data store a spec names: "ram:512M",
 * "zram:1G", "zram:1G:zstd", "file:/path[:discard][:direct][:qd=N][:sync]",
 * "nbd:nbd+unix:///?socket=/run/nbd.sock", "faulty:OPTS:INNER"; every
 * spec may end in ":prio=N". A file must carry
 * a valid mkswap header (its bad pages become bad slots).
 * @out: receives the backend; the caller owns it until a successful
 *       uswap_swapon() takes it, and closes it with uswap_backend_close().
 * @prio: receives the spec's priority (USWAP_PRIO_DEFAULT without one);
 *       may be NULL.
 * @err: receives a one-line reason on failure (may be NULL).
 * Return: 0; -EINVAL (malformed spec or header; @err says which), -ENOENT,
 * -EACCES (the file), -ENOTSUP (as uswap_spec_parse()), -ENOMEM, or the
 * backend's error.
 */
USWAP_API int uswap_backend_open(const char *spec, struct uswap_backend **out,
				 int *prio, char *err, size_t errlen);

/*
 * uswap_spec_external() - does @spec keep data outside the calling
 * process: a file or block device, or an NBD export, at any depth (under
 * crypt: or faulty:, either mirror leg, a writeback's lower device)? Such
 * a store is claimed by the one instance that opens it (a swap file's
 * flock, an export's claim block), so another instance, a forked child's
 * included, must never open it too: it would allocate the same slots (the
 * kernel, likewise, has one swap_info per device for every process).
 * Nothing is opened. Return: 1 or 0; -EINVAL (malformed spec), -ENOTSUP
 * (as uswap_spec_parse()), -ENOMEM.
 * Thread-safety: any thread.
 */
USWAP_API int uswap_spec_external(const char *spec);

/* The zstd level zram: devices compress at (zstd's default, as the
 * kernel's zram); benchmarks measure raw zstd at the same level. */
#define USWAP_ZRAM_ZSTD_LEVEL 3

/* What a faulty: wrapper has injected: requests failed on purpose. */
struct uswap_fault_counts {
	uint64_t reads, writes, discards;                   /* requests seen */
	uint64_t read_errors, write_errors, discard_errors; /* ... failed */
};

/*
 * uswap_backend_faults() - the injection counts of a faulty: backend, so
 * a test can match the errors it saw against the errors that were made.
 * @b: from uswap_backend_open(); still valid after uswap_swapon() took it,
 *     until the device is swapped off.
 * Return: 0; -EINVAL (@b is not a faulty: backend, or @out NULL).
 * Thread-safety: any thread, while I/O runs (counts read one by one).
 */
USWAP_API int uswap_backend_faults(struct uswap_backend *b, struct uswap_fault_counts *out);

/* A zram device's memory, the columns of the kernel's mm_stat (bytes). */
struct uswap_zram_stat {
	char algo[16];              /* "lz4" or "zstd" */
	uint64_t disksize;          /* slots x page size */
	uint64_t orig_data_size;    /* pages stored, uncompressed */
	uint64_t compr_data_size;   /* after compression */
	uint64_t mem_used_total;    /* memory the objects take */
	uint64_t mem_limit;         /* 0: no limit */
	uint64_t mem_used_max;      /* peak of mem_used_total */
	uint64_t same_pages;        /* pages of one repeated word */
	uint64_t pages_compacted;   /* 0: the pool does not compact */
	uint64_t huge_pages;        /* pages stored raw */
};

/* ------------------------------------------------------------------------
 * Swap headers: page 0 of a swap area made by util-linux mkswap
 *
 * The SWAPSPACE2 layout (include/linux/swap.h union swap_header): 1024
 * bytes left for boot loaders, then u32 version, last_page, nr_badpages,
 * a 16-byte uuid and a 16-byte label; the bad-page list (u32 each) from
 * byte 1536; the magic "SWAPSPACE2" in the last 10 bytes of the page.
 * The rules follow the kernel's read_swap_header() and util-linux
 * swapon(8), with these differences: a byte-swapped header (the kernel
 * converts it) and areas under USWAP_MIN_CLUSTERS clusters (too small for
 * uswap) are refused, each with its own message; bad pages in a regular
 * file are accepted (the file backend skips them; the kernel refuses).
 * ---------------------------------------------------------------------- */

/* Room for the bad-page list: (4096 - 10 - 1536) / 4 (MAX_SWAP_BADPAGES) */
#define USWAP_HEADER_MAX_BADPAGES 637

struct uswap_header_info {
	uint32_t version;         /* 1 on success (SWAPSPACE2) */
	uint32_t last_page;       /* header's last_page: last slot of the area */
	uint64_t nr_slots;        /* last_page + 1, slots incl. header slot 0
				     (clamped to UINT32_MAX as the kernel does):
				     uswap_swapon_args.nr_slots */
	uint64_t usable_slots;    /* nr_slots - 1 - nr_badpages */
	uint32_t nr_badpages;
	uint64_t badpages[USWAP_HEADER_MAX_BADPAGES]; /* ascending, distinct,
				     1..last_page: uswap_swapon_args.bad_slots */
	uint8_t uuid[16];
	char uuid_str[37];        /* "01234567-89ab-cdef-0123-456789abcdef" */
	char label[17];           /* up to 16 bytes, NUL-terminated; "" = none */
	char byte_order[16];      /* "little-endian" or "big-endian": the
				     header's, always the host's on success */
	uint32_t page_size;       /* bytes per page of the header: 4096 */
	/* Set by uswap_header_read_file() only (0 from uswap_header_parse()): */
	bool is_block_device;
	uint64_t file_size;       /* bytes: st_size, or BLKGETSIZE64 */
	uint32_t mode;            /* permission bits, st_mode & 07777 */
	uint32_t uid;             /* owner */
	unsigned int nr_warnings; /* lines written to the warning buffer */
};

/*
 * uswap_header_parse() - check a swap header held in memory. Pure: no I/O,
 * no allocation, no global state; any byte string is safe input.
 * @page: the first @page_len bytes of the area; at least USWAP_PAGE_SIZE.
 *        Up to 65536 bytes let it recognise a header made for a larger
 *        page size (mkswap -p) and say so.
 * @area_bytes: size of the whole area in bytes; the header's last_page
 *        must fit in it.
 * @out: filled on success; undefined on error.
 * @err: receives a one-line reason on error (may be NULL).
 * Return: 0; -EINVAL (not a usable SWAPSPACE2 v1 header for 4 KiB pages:
 * the message says which rule failed); -EBUSY (the area holds a
 * hibernation image: swapping to it would destroy the image).
 * Source: kernel read_swap_header() and setup of the bad slots.
 */
USWAP_API int uswap_header_parse(const void *page, size_t page_len, uint64_t area_bytes,
				 struct uswap_header_info *out, char *err, size_t errlen);

/*
 * uswap_header_read_file() - open @path read-only (a regular file or a
 * block device), read its header and check it as uswap_header_parse()
 * does, then refuse a regular file with holes (st_blocks short of its
 * size, util-linux swapon's test; the kernel's swapon fails on any
 * unmapped block) and warn, without refusing, about permissions wider
 * than 0600 (0660 for a block device) and a file not owned by root, as
 * util-linux swapon(8) does.
 * @err: one-line reason on error, without the path (may be NULL).
 * @warn: warnings, one per line, no trailing newline; "" when none (may
 *        be NULL); out->nr_warnings counts them.
 * Return: 0; the errors of uswap_header_parse(); -EINVAL (not a regular
 * file or block device, smaller than one page, holes); -EIO (short read);
 * the negative errno of open(), fstat(), pread() or BLKGETSIZE64.
 * Thread-safety: any thread.
 */
USWAP_API int uswap_header_read_file(const char *path, struct uswap_header_info *out,
				     char *err, size_t errlen, char *warn, size_t warnlen);

/* ------------------------------------------------------------------------
 * Device specs: the strings every command takes to name a device
 *
 *   ram:SIZE[:prio=N]                  memory, uncompressed
 *   zram:SIZE[:lz4|:zstd][:prio=N][:workers=N]
 *                                      compressed memory (default lz4);
 *                                      workers=0..8 threads compress the
 *                                      swap path's batches (default 0:
 *                                      the submitting thread does)
 *   file:PATH[:prio=N][:discard][:direct][:qd=N][:sync]
 *                                      a mkswap'd file or block device;
 *                                      write ':' in PATH as '\:', '\' as '\\'
 *   nbd:URI[:prio=N][:conns=N][:timeout=S]
 *                                      an NBD export through libnbd: URI is
 *                                      nbd://HOST[:PORT]/EXPORT or
 *                                      nbd+unix:///EXPORT?socket=PATH, as
 *                                      written up to ":prio=", ":conns=" or
 *                                      ":timeout="; the export's size gives
 *                                      the slots, its block 0 holds the
 *                                      claim of the one instance using it;
 *                                      conns (1..16) needs the server's
 *                                      multi-conn (default: 4 with it,
 *                                      else 1); timeout (1..3600 s, default
 *                                      30) bounds every wait for the
 *                                      server, after which the device fails
 *                                      (-EIO)
 *   mirror:[prio=N]:A|B                the same slots on A and B: writes to
 *                                      both, reads from either; a leg that
 *                                      fails is dropped (nothing lost)
 *   writeback:OPTS:ZRAM|LOWER          a zram spec whose pages move down to
 *                                      LOWER in the background: OPTS is
 *                                      idle=SECONDS, huge (incompressible),
 *                                      budget=SIZE (zram memory), prio=N
 *   crypt:INNER                        every page encrypted and authenticated
 *                                      (AES-256-GCM or XChaCha20-Poly1305,
 *                                      libsodium) with a key per
 *                                      cluster, wiped when it empties
 *   faulty:OPTS:INNER                  fault injection around INNER (any
 *                                      spec); OPTS is comma-separated
 *                                      read=R,write=R,discard=R (fractions
 *                                      0..1), latency=MICROSECONDS, seed=N,
 *                                      read_slots=A+B+C, write_slots=A+B,
 *                                      discard_slots=A+B (these slots
 *                                      always fail), fail_nth=N (the Nth
 *                                      request fails), persistent (and
 *                                      every later one), prio=N; may be
 *                                      empty
 *
 * SIZE is bytes with an optional binary suffix K, M, G or T, a multiple
 * of USWAP_PAGE_SIZE, at least USWAP_MIN_CLUSTERS clusters (4M). prio is
 * -1 (default) to 32767. qd is the io_uring queue depth (1..4096, default
 * 32) of the backend's asynchronous interface, and sync makes that
 * interface use pread/pwrite. The swap path sends a batch's requests
 * (uswap_swap_out_batch(), uswap_swap_in_batch()) through that interface
 * and a single folio through pread/pwrite.
 * ---------------------------------------------------------------------- */

#define USWAP_SPEC_MAX_LEN    4096 /* longest spec accepted, bytes without NUL */
#define USWAP_SPEC_MAX_FAULTY 4    /* faulty wrappers one spec may nest */

#define USWAP_SPEC_MAX_LAYERS  (USWAP_SPEC_MAX_FAULTY + 1)
#define USWAP_SPEC_MAX_OPTIONS 16 /* options one layer describes */

/* One option of a layer, with its effective value (defaults filled in). */
struct uswap_spec_option {
	const char *key;   /* as in the spec grammar: "size", "algo", "read",
			      "qd", "discard", ... */
	const char *value; /* text: sizes in bytes, rates as read back, flags
			      "true" or "false", slot lists "A+B" ("" if none) */
};

/* A wrapper or the device: its kind and every option it takes. A new
 * backend adds a kind and its keys, never a field. */
struct uswap_spec_layer {
	const char *kind;  /* "faulty", "crypt", "mirror", "writeback", "ram",
			      "zram", "file", "nbd" */
	unsigned int nr_options;
	struct uswap_spec_option options[USWAP_SPEC_MAX_OPTIONS];
};

/*
 * struct uswap_spec_info - what a spec describes, backend-neutral.
 * ram:  size, algo-less;  zram: size, algo;  file: path, qd, discard,
 * direct, sync;  faulty: read, write, discard, latency (us), seed,
 * read_slots, write_slots, discard_slots, fail_nth (0 = off), persistent.
 * The strings point into @strings: copy the struct only with memcpy of
 * the whole, and read it while it lives.
 */
struct uswap_spec_info {
	char canonical[2 * USWAP_SPEC_MAX_LEN]; /* normal form: defaults left
				      out, sizes in the largest exact unit;
				      parses back to the same spec */
	int prio;                  /* USWAP_PRIO_DEFAULT or 0..USWAP_PRIO_MAX */
	uint64_t size_bytes;       /* the device's, when the spec says it (ram,
				      zram); 0 for a file (see its header) */
	uint64_t nr_slots;         /* size_bytes / USWAP_PAGE_SIZE, incl. slot 0 */
	unsigned int nr_layers;    /* wrappers outermost first, then the device */
	struct uswap_spec_layer layers[USWAP_SPEC_MAX_LAYERS];
	char strings[3 * USWAP_SPEC_MAX_LEN]; /* what keys and values point to */
};

/*
 * uswap_spec_device() - the device layer of @info (the last), and
 * uswap_spec_get() - the value of option @key of @layer, or NULL when the
 * layer's kind has no such option. Thread-safety: pure.
 */
static inline const struct uswap_spec_layer *
uswap_spec_device(const struct uswap_spec_info *info)
{
	return &info->layers[info->nr_layers - 1];
}

USWAP_API const char *uswap_spec_get(const struct uswap_spec_layer *layer, const char *key);

/*
 * uswap_spec_parse() - parse and check a device spec without opening
 * anything (files are not touched: use uswap_header_read_file()).
 * @out: filled on success; undefined on error.
 * @err: one-line reason on error (may be NULL).
 * Return: 0; -EINVAL (malformed: unknown kind or option, missing or bad
 * size or number, value out of range, option given twice, spec longer
 * than USWAP_SPEC_MAX_LEN or nesting deeper than USWAP_SPEC_MAX_FAULTY);
 * -ENOTSUP (well formed, but a device this libuswap was built without:
 * nbd or crypt, each left out by the meson option of its name; @err says
 * which option brings it); -ENOMEM.
 * Thread-safety: any thread.
 */
USWAP_API int uswap_spec_parse(const char *spec, struct uswap_spec_info *out,
			       char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_DEV_H */
