/* SPDX-License-Identifier: MIT */
/*
 * spec.h - device specs: the strings every uswap command takes to name a
 * swap device, parsed into what the backend constructors of backend.h take.
 *
 * Grammar (the public header repeats it for users):
 *
 *   spec    := ram | zram | file | nbd | faulty | mirror | writeback | crypt
 *   crypt   := "crypt:" spec
 *   ram     := "ram:" SIZE [":prio=" N]
 *   zram    := "zram:" SIZE { ":" ("lz4" | "zstd" | "algo=" ALGO | "prio=" N |
 *                                  "workers=" N) }
 *   file    := "file:" PATH { ":" ("prio=" N | "discard" | "direct" |
 *                                  "qd=" N | "sync") }
 *   nbd     := "nbd:" URI { ":" ("prio=" N | "conns=" N | "timeout=" SECONDS) }
 *   mirror  := "mirror:" ["prio=" N] ":" spec "|" spec
 *   writeback := "writeback:" WBOPTS ":" zram "|" spec
 *   WBOPTS  := WBOPT { "," WBOPT };  WBOPT := "idle=" SECONDS | "huge" |
 *              "budget=" SIZE | "prio=" N
 *   faulty  := "faulty:" OPTS ":" spec
 *   OPTS    := "" | OPT { "," OPT }
 *   OPT     := ("read" | "write" | "discard") "=" RATE | "latency=" US |
 *              "seed=" N | "fail_nth=" N | "persistent" | "prio=" N |
 *              ("read_slots" | "write_slots" | "discard_slots") "=" N {"+" N}
 *
 * Fields are separated by ':'; inside PATH, "\:" stands for ':' and "\\"
 * for '\'. A URI is taken as it is, colons and all: it runs to the end of
 * the spec or to the first ":prio=", ":conns=" or ":timeout=" (NBD URIs
 * have colons of their own, nbd://host:10809/, and never those). Options may come in any order, each at most once. A faulty
 * wrapper takes everything after its OPTS as the inner spec, so the
 * priority of "faulty:read=0.1:file:/x:prio=5" is the file's; prio= in
 * OPTS sets it too, but not both.
 *
 * A mirror's legs are split at the first '|' (so the first leg cannot hold
 * one); their priority is the mirror's, given in its options only.
 *
 * Limits: the whole spec at most DEV_SPEC_MAX_LEN bytes; at most
 * DEV_SPEC_MAX_FAULTY nested faulty wrappers; SIZE a multiple of
 * USWAP_PAGE_SIZE from USWAP_MIN_CLUSTERS clusters (4 MiB) to UINT32_MAX
 * slots; prio -1..32767; qd 1..4096; RATE 0..1; latency up to 10 s; a
 * slot list up to 1024 slots, each 1..UINT32_MAX; conns 1..16; timeout
 * 0..3600 s (0: 30 s); fail_nth from 1 (the
 * first request fails), persistent only with fail_nth.
 *
 * Opening the device a spec names is dev_spec_open()'s job (not here).
 */
#ifndef USWAP_DEV_SPEC_H
#define USWAP_DEV_SPEC_H

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/backend.h"
#include "dev/zram.h"

#define DEV_SPEC_MAX_LEN        USWAP_SPEC_MAX_LEN
#define DEV_SPEC_MAX_FAULTY     USWAP_SPEC_MAX_FAULTY
#define DEV_SPEC_DEFAULT_QD     32
#define DEV_SPEC_MAX_QD         4096
#define DEV_SPEC_MAX_CONNS      16
#define DEV_SPEC_NBD_TIMEOUT_S  30   /* as the kernel nbd driver's */
#define DEV_SPEC_NBD_MAX_TIMEOUT_S 3600
#define DEV_SPEC_MAX_LATENCY_US 10000000u
#define DEV_SPEC_MAX_SLOT_LIST  1024
#define DEV_SPEC_DEFAULT_SEED   1

enum dev_kind {
	DEV_KIND_RAM,
	DEV_KIND_ZRAM,
	DEV_KIND_FILE,
	DEV_KIND_FAULTY,
	DEV_KIND_NBD,
	DEV_KIND_MIRROR,
	DEV_KIND_WRITEBACK,
	DEV_KIND_CRYPT,
	DEV_KIND_MAX
};

struct dev_spec {
	enum dev_kind kind;
	int prio;                 /* USWAP_PRIO_DEFAULT or 0..USWAP_PRIO_MAX;
				     a faulty spec's equals its inner's */
	bool prio_set;            /* prio= given (here or, for faulty, in
				     the options or the inner spec) */
	uint64_t size_bytes;      /* ram, zram: multiple of USWAP_PAGE_SIZE */
	char algo[8];             /* zram: "lz4" (=) or "zstd"; else "" */
	unsigned int zram_workers;/* zram: compression threads (=0: none) */
	uint64_t zram_mem_limit;  /* zram: bytes its pages may take, 0: no cap */
	char *path;               /* file: unescaped, owned; nbd: the URI,
				     owned; else NULL */
	unsigned int nbd_conns;   /* nbd: connections (=0: auto, 4 with the
				     server's multi-conn, else 1) */
	unsigned int nbd_timeout_s; /* nbd: longest wait for the server, s
				     (=0: DEV_SPEC_NBD_TIMEOUT_S) */
	struct file_backend_opts file; /* file: queue_depth (=32), direct,
				     discard, no_uring (the "sync" option) */
	struct faulty_opts faulty;/* faulty: bad_*_slots point into the
				     arrays below; seed (=1) */
	uint64_t *read_slots;     /* faulty: owned storage of read_slots= */
	uint64_t *write_slots;    /* faulty: owned storage of write_slots= */
	uint64_t *discard_slots;  /* faulty: owned storage of discard_slots= */
	struct dev_spec *inner;   /* faulty: the wrapped device; mirror: the
				     first leg; owned */
	struct dev_spec *inner2;  /* mirror: the second leg; writeback: the
				     lower device; owned */
	struct zram_wb_opts wb;   /* writeback: when pages go down */
};

/*
 * dev_spec_parse() - parse @s into @out.
 * @err, @errlen: one-line reason on error, naming the part at fault and
 *     what was expected; @err may be NULL.
 * Return: 0 (free @out with dev_spec_free()); -EINVAL (malformed, out of
 * range, too long, nested too deep); -ENOTSUP (well formed, but it names a
 * device this libuswap was built without: dev_kind_built()); -ENOMEM. On
 * error @out holds nothing to free (dev_spec_free() on it is still safe).
 * Thread-safety: any thread; no global state.
 */
int dev_spec_parse(const char *s, struct dev_spec *out, char *err, size_t errlen);

/* dev_spec_free() - free what @spec owns (path, slot lists, inner specs)
 * and zero it. NULL is a no-op. */
void dev_spec_free(struct dev_spec *spec);

/*
 * dev_spec_format() - the canonical string of @spec: options in the
 * grammar's order, defaults left out, SIZE in the largest binary unit that
 * divides it, rates in the shortest form that reads back exactly.
 * dev_spec_parse() of the result gives back an equal spec.
 * Return: the length written (without NUL); -ENOSPC if @buf (@len bytes)
 * is too small (@buf then holds a truncated string); -EINVAL (bad kind).
 */
int dev_spec_format(const struct dev_spec *spec, char *buf, size_t len);

/* "ram", "zram", "file", "faulty". */
const char *dev_kind_name(enum dev_kind kind);

/* Is the device @kind built into this libuswap? Only nbd and crypt may
 * not be (meson options nbd and crypt; features.c). */
bool dev_kind_built(enum dev_kind kind);

/* dev_kind_refuse() - 0 when @kind is built; else -ENOTSUP, with a message
 * in @err naming the meson option that builds it (features.c). */
int dev_kind_refuse(enum dev_kind kind, char *err, size_t errlen);

/* The "C" numeric locale, so that rates read and print with a '.' whatever
 * the program's LC_NUMERIC (LC_GLOBAL_LOCALE if it cannot be made). */
locale_t dev_spec_c_locale(void);

#endif /* USWAP_DEV_SPEC_H */
