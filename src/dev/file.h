/* SPDX-License-Identifier: MIT */
/*
 * file.h - what the file backend exposes beyond backend.h: how it does
 * its I/O (io_uring or pread/pwrite, and why), its discard state and
 * counters. For the swaps table, tools and tests.
 */
#ifndef USWAP_DEV_FILE_H
#define USWAP_DEV_FILE_H

#include "dev/backend.h"

#define FILE_DEFAULT_QUEUE_DEPTH 32u   /* file_backend_opts.queue_depth 0 */
#define FILE_MAX_QUEUE_DEPTH     4096u /* larger depths are clamped */
#define FILE_DIO_ALIGN           4096u /* O_DIRECT buffer alignment used */

struct file_backend_info {
	bool uring;              /* submit/reap go through io_uring */
	int uring_error;         /* io_uring_queue_init()'s -errno when it failed
				    and the backend fell back to pread/pwrite
				    (-ENOTSUP: libuswap built without liburing,
				    meson -Dio_uring=disabled); 0 when io_uring
				    is used or no_uring was set */
	bool direct;             /* opened O_DIRECT */
	bool blkdev;             /* a block device (BLKDISCARD), else a file */
	bool discard;            /* discard requested in the options */
	bool discard_refused;    /* the filesystem/device refused it: off now */
	int open_discard_rc;     /* the whole-area discard at open: 0 or -errno */
	unsigned int queue_depth;/* io_uring entries; in-flight cap */
	uint64_t size_bytes;     /* file or device size at open */
	uint64_t reads;          /* folio reads done (sync + async) */
	uint64_t writes;         /* folio writes done */
	uint64_t discards;       /* discard requests that reached the medium */
	uint64_t async_submitted;/* requests handed to io_uring */
	uint64_t short_retries;  /* short transfers finished by a retry */
	uint64_t bounces;        /* O_DIRECT requests through a bounce buffer */
};

/*
 * file_backend_info() - a snapshot of file backend @b.
 * Return: 0; -EINVAL (@b is not a file backend, or @info NULL).
 * Thread-safety: any thread, while I/O runs (counters are moving).
 */
int file_backend_info(struct backend *b, struct file_backend_info *info);

#endif /* USWAP_DEV_FILE_H */
