// SPDX-License-Identifier: MIT
/*
 * file.c - the "file" backend: a regular file or a block device, laid out
 * as util-linux mkswap leaves it (slot n at byte n * USWAP_PAGE_SIZE,
 * slot 0 the header page, which this backend never reads or writes; the
 * header itself is parsed by src/dev/header.c).
 *
 * I/O. The synchronous read/write use pread/pwrite, looping over short
 * transfers. The asynchronous submit/reap use io_uring (one ring per
 * backend, queue_depth entries; file_uring.c): a request is prepared with
 * the backend_io as its user_data, and reap runs done() for the
 * completions. When io_uring_queue_init() fails, no_uring is set, or
 * libuswap was built without liburing (meson -Dio_uring=disabled: the
 * ring's setup answers -ENOTSUP), submit runs the request synchronously
 * and calls done() before returning, as the memory backends do; the
 * reason is kept (file_backend_info().uring_error).
 * Short transfers are never reported as success: a short read or write
 * is retried until done, and an end of file or a failure becomes an error.
 *
 * O_DIRECT (opts.direct) needs FILE_DIO_ALIGN-aligned buffers: a caller's
 * unaligned buffer goes through an aligned bounce buffer (posix_memalign)
 * for that request; offsets and lengths are whole pages already.
 *
 * Discard follows the kernel's two swap discard modes, both switched on by
 * opts.discard (swapon --discard): the whole area except the header page
 * once at open (discard_swap() at swapon), and each range on request
 * (the per-cluster discard as clusters become free). Files punch holes
 * (fallocate PUNCH_HOLE | KEEP_SIZE: the filesystem frees the blocks, and
 * trims them where it is mounted with discard; the range then reads
 * zeroes) and block devices get BLKDISCARD. A punched range is allocated
 * again at once (fallocate mode 0: unwritten extents, nothing written,
 * still reads zeroes, counted in st_blocks), as the kernel's discard
 * under a swap file leaves the file fully mapped: the file never has
 * holes for longer than a discard takes, so a process that dies without
 * close leaves a file the next open accepts (the header check refuses a
 * sparse file). When that re-allocation fails (ENOSPC: someone took the
 * space) it is counted and warned about once and close tries again; when
 * the filesystem has no mode-0 fallocate (EOPNOTSUPP) the hole stays and
 * that is recorded (realloc_refused in the statistics). On tmpfs the
 * re-allocation takes the memory back; that is accepted: the file was
 * fully allocated when mkswap'd, and discard only has to leave it so.
 * When the filesystem or device refuses discard itself
 * (EOPNOTSUPP), discard returns -EOPNOTSUPP and the backend stops trying,
 * as the kernel clears SWP_DISCARDABLE. With discard off, a discard
 * request does nothing and returns 0 (the slots keep stale data, which
 * the backend contract allows).
 *
 * Errors: -EINVAL (slot range), -ENOSPC (the filesystem is full or over
 * quota: a write into a punched hole needs new blocks), -ENOMEM, and -EIO
 * for every other failure of the medium, including an unexpected end of
 * file.
 *
 * Locks: the ring's (file_uring.c); the synchronous path takes none.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev/file_impl.h"

static const struct backend_ops file_ops;

/* The contract's codes from a positive errno of the medium. */
int file_io_errno(int e)
{
	switch (e) {
	case ENOSPC:
	case EDQUOT:
		return -ENOSPC;
	case ENOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* ------------------------------------------------------------------ */
/* Synchronous I/O */

/* Transfer all of [@off, @off + @len), retrying short transfers.
 * Return: 0, or -ENOSPC/-ENOMEM/-EIO (end of file counts as -EIO). */
static int rw_full(struct file_backend *fb, bool write, void *buf, size_t len,
		   off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write ? pwrite(fb->fd, (char *)buf + done, len - done, off + (off_t)done)
				  : pread(fb->fd, (char *)buf + done, len - done, off + (off_t)done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return file_io_errno(errno);
		}
		if (n == 0)
			return -EIO; /* end of file: the file shrank under us */
		done += (size_t)n;
		if (done < len)
			file_count(&fb->nr_short);
	}
	return 0;
}

/* One folio, synchronously, through a bounce buffer if O_DIRECT needs one.
 * Range already checked. */
int file_rw(struct file_backend *fb, bool write, uint64_t slot,
	    unsigned int order, void *buf)
{
	size_t len = folio_bytes(order);
	off_t off = (off_t)(slot * USWAP_PAGE_SIZE);
	void *bounce = NULL;
	int rc;

	if (file_needs_bounce(fb, buf)) {
		if (posix_memalign(&bounce, FILE_DIO_ALIGN, len) != 0)
			return -ENOMEM;
		file_count(&fb->nr_bounce);
		if (write)
			memcpy(bounce, buf, len);
	}
	rc = rw_full(fb, write, bounce ? bounce : buf, len, off);
	if (rc == 0 && bounce != NULL && !write)
		memcpy(buf, bounce, len);
	free(bounce);
	if (rc == 0)
		file_count(write ? &fb->nr_write : &fb->nr_read);
	return rc;
}

/*
 * file_read() - read the 2^@order slots at @slot into @buf (pread).
 * Return: 0; -EINVAL (range); -ENOMEM (bounce buffer); -EIO.
 * Thread-safety: any thread.
 */
static int file_read(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	int rc = backend_check_io(b, slot, order);

	return rc ? rc : file_rw(to_file(b), false, slot, order, buf);
}

/*
 * file_write() - write @buf to the 2^@order slots at @slot (pwrite). Not
 * durable until flush().
 * Return: 0; -EINVAL (range); -ENOSPC (filesystem full); -ENOMEM; -EIO.
 * Thread-safety: any thread.
 */
static int file_write(struct backend *b, uint64_t slot, unsigned int order,
		      const void *buf)
{
	int rc = backend_check_io(b, slot, order);

	return rc ? rc : file_rw(to_file(b), true, slot, order, (void *)buf);
}

/* ------------------------------------------------------------------ */
/* Discard */

/*
 * Allocate the punched range [@off, @off + @len) again (unwritten extents)
 * so that the file has no holes. A failure does not fail the discard: the
 * range reads zeroes either way, a later write into the hole allocates
 * (or fails with -ENOSPC), and file_close() tries the whole file again.
 * The caller owns the range (the cluster being discarded is off every
 * list), so no write races with the punch or this.
 */
static void reallocate_bytes(struct file_backend *fb, uint64_t off, uint64_t len)
{
	int e;

	if (atomic_load_explicit(&fb->realloc_refused, memory_order_relaxed))
		return;
	if (fallocate(fb->fd, 0, (off_t)off, (off_t)len) == 0)
		return;
	e = errno;
	file_count(&fb->nr_realloc_failed);
	if (e == EOPNOTSUPP || e == ENOSYS) {
		/* Punch without preallocation (rare): the holes stay, and
		 * the next open refuses the file until it is written in full. */
		atomic_store(&fb->realloc_refused, true);
	}
	if (!atomic_exchange(&fb->realloc_warned, true))
		fprintf(stderr, "uswap: warning: %s: could not re-allocate discarded "
			"blocks: %s; the file has holes%s\n", fb->b.name, strerror(e),
			atomic_load(&fb->realloc_refused) ? " (write it in full "
			"before the next swapon)" : " until close");
}

/* Discard bytes [@off, @off + @len) of the medium. Return: 0,
 * -EOPNOTSUPP (refused: the backend stops trying), -EIO. */
static int discard_bytes(struct file_backend *fb, uint64_t off, uint64_t len)
{
	int rc;

	if (atomic_load_explicit(&fb->discard_refused, memory_order_relaxed))
		return -EOPNOTSUPP;
	if (fb->blkdev) {
		uint64_t range[2] = { off, len };

		rc = ioctl(fb->fd, BLKDISCARD, range);
	} else {
		rc = fallocate(fb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)off, (off_t)len);
		if (rc == 0)
			reallocate_bytes(fb, off, len);
	}
	if (rc == 0) {
		file_count(&fb->nr_discard);
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS || errno == ENOTTY) {
		atomic_store(&fb->discard_refused, true);
		return -EOPNOTSUPP;
	}
	return -EIO;
}

/*
 * file_discard() - the per-range swap discard: punch a hole over (file)
 * or BLKDISCARD (block device) the slots [slot, slot + nr). A punched
 * range reads zeroes; a discarded block device range reads what the
 * device returns (zeroes or stale data).
 * Return: 0 (also when discard is off: nothing done); -EINVAL (range);
 * -EOPNOTSUPP (the medium refused discard, now or before); -EIO.
 * Thread-safety: any thread.
 */
static int file_discard(struct backend *b, uint64_t slot, uint64_t nr_slots)
{
	struct file_backend *fb = to_file(b);
	int rc = backend_check_range(b, slot, nr_slots);

	if (rc || nr_slots == 0 || !fb->discard)
		return rc;
	return discard_bytes(fb, slot * USWAP_PAGE_SIZE, nr_slots * USWAP_PAGE_SIZE);
}

/* flush: fdatasync. Return: 0 or -EIO. Thread-safety: any thread. */
static int file_flush(struct backend *b)
{
	return fdatasync(to_file(b)->fd) == 0 ? 0 : -EIO;
}

/* ------------------------------------------------------------------ */
/* Asynchronous I/O: through the ring (file_uring.c), or synchronous */

/*
 * file_submit_batch() - with a ring, file_ring_submit_batch(): reads and
 * writes go on it and done() runs in a later reap (or in a submit that
 * reaps while the ring is at its depth). Without one every request
 * completes, done() included, before this returns. Return: 0 (each
 * outcome is its io->result, delivered to done() exactly once); -EINVAL
 * (a NULL request: those before it were submitted).
 * Thread-safety: any thread.
 */
static int file_submit_batch(struct backend *b, struct backend_io **ios, unsigned int n)
{
	struct file_backend *fb = to_file(b);

	if (fb->ring)
		return file_ring_submit_batch(fb, ios, n);
	for (unsigned int i = 0; i < n; i++) {
		if (ios[i] == NULL)
			return -EINVAL;
		backend_submit_sync(b, ios[i]);
	}
	return 0;
}

/* file_submit() - file_submit_batch() of one request. */
static int file_submit(struct backend *b, struct backend_io *io)
{
	return file_submit_batch(b, &io, 1);
}

/*
 * file_reap() - run done() for at least @min_complete finished requests
 * (0: only those already finished); returns early if nothing more is in
 * flight. With io_uring off, nothing is ever pending: returns 0.
 * Return: how many done() callbacks ran; -EIO (waiting on the ring failed).
 * Thread-safety: any thread; several reapers share the completions.
 */
static int file_reap(struct backend *b, unsigned int min_complete)
{
	struct file_backend *fb = to_file(b);

	if (!fb->ring)
		return 0;
	return file_ring_reap(fb, min_complete);
}

/* ------------------------------------------------------------------ */

int file_backend_info(struct backend *b, struct file_backend_info *info)
{
	struct file_backend *fb = to_file(b);

	if (b == NULL || b->ops != &file_ops || info == NULL)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->uring = fb->ring != NULL;
	info->uring_error = fb->uring_error;
	info->direct = fb->direct;
	info->blkdev = fb->blkdev;
	info->discard = fb->discard;
	info->discard_refused = atomic_load(&fb->discard_refused);
	info->open_discard_rc = fb->open_discard_rc;
	info->queue_depth = fb->depth;
	info->size_bytes = fb->size_bytes;
	info->reads = atomic_load(&fb->nr_read);
	info->writes = atomic_load(&fb->nr_write);
	info->discards = atomic_load(&fb->nr_discard);
	info->async_submitted = atomic_load(&fb->nr_async);
	info->short_retries = atomic_load(&fb->nr_short);
	info->bounces = atomic_load(&fb->nr_bounce);
	return 0;
}

static void file_print_stats(struct backend *b, FILE *out)
{
	struct file_backend_info fi;

	file_backend_info(b, &fi);
	fprintf(out, "path %s\n", b->name);
	fprintf(out, "type %s\n", fi.blkdev ? "block" : "file");
	fprintf(out, "size_bytes %llu\n", (unsigned long long)fi.size_bytes);
	fprintf(out, "io %s\n", fi.uring ? "io_uring" : "pread");
	fprintf(out, "uring_error %d\n", fi.uring_error);
	fprintf(out, "queue_depth %u\n", fi.queue_depth);
	fprintf(out, "direct %d\n", fi.direct);
	fprintf(out, "discard %d\n", fi.discard && !fi.discard_refused);
	fprintf(out, "discard_refused %d\n", fi.discard_refused);
	fprintf(out, "open_discard_rc %d\n", fi.open_discard_rc);
#define P(f) fprintf(out, #f " %llu\n", (unsigned long long)fi.f)
	P(reads);
	P(writes);
	P(discards);
	P(async_submitted);
	P(short_retries);
	P(bounces);
#undef P
	fprintf(out, "realloc_failed %llu\n",
		(unsigned long long)atomic_load(&to_file(b)->nr_realloc_failed));
	fprintf(out, "realloc_refused %d\n", atomic_load(&to_file(b)->realloc_refused));
}

/* Context: no other thread may use @b. Requests still in flight are
 * waited for and their done() run first. */
static void file_close(struct backend *b)
{
	struct file_backend *fb = to_file(b);

	if (b == NULL)
		return;
	file_ring_close(fb);
	/* Every punched range was allocated again at once; this is the
	 * second chance for a re-allocation that failed then (ENOSPC), so
	 * the next open does not refuse the file ("has holes"). */
	if (!fb->blkdev && atomic_load(&fb->nr_realloc_failed) &&
	    !atomic_load(&fb->realloc_refused) &&
	    fallocate(fb->fd, 0, 0, (off_t)fb->size_bytes))
		fprintf(stderr, "uswap: warning: %s: could not re-allocate discarded blocks: %s\n",
			b->name, strerror(errno));
	close(fb->fd);
	backend_release(b);
	free(fb);
}

static const struct backend_ops file_ops = {
	.kind = "file",
	.read = file_read,
	.write = file_write,
	.discard = file_discard,
	.flush = file_flush,
	.submit = file_submit,
	.submit_batch = file_submit_batch,
	.reap = file_reap,
	.print_stats = file_print_stats,
	.close = file_close,
};

/*
 * claim_area() - take @path's inode for this backend alone, as the
 * kernel's swapon claims it (S_SWAPFILE on a file, an exclusive open of
 * a block device): a second open of the same area, through any path,
 * hard link or symlink, in this process or another, is refused. A file
 * gets an exclusive flock() on @fd, held until the fd is closed; a block
 * device is opened again with O_EXCL (the kernel's exclusive claim, which
 * also refuses a mounted device or one the kernel swaps on), and that fd
 * replaces @fd. Return: 0; -EBUSY (in use); another -errno.
 */
static int claim_area(const char *path, int *fd, const struct stat *st, int flags,
		      char *err, size_t errlen)
{
	struct stat st2;
	int excl, rc;

	if (S_ISREG(st->st_mode)) {
		if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		return backend_errf(err, errlen, rc, "%s: %s", path,
				    rc == -EBUSY ? "already in use as a swap area"
						 : strerror(-rc));
	}
	excl = open(path, flags | O_EXCL);
	if (excl < 0) {
		rc = -errno;
		return backend_errf(err, errlen, rc, "%s: %s", path,
				    rc == -EBUSY ? "block device already in use (swap area, mount or another exclusive user)"
						 : strerror(-rc));
	}
	if (fstat(excl, &st2) != 0 || st2.st_rdev != st->st_rdev) {
		close(excl); /* the path was replaced between the two opens */
		return backend_errf(err, errlen, -EBUSY, "%s: changed while being opened", path);
	}
	close(*fd);
	*fd = excl;
	return 0;
}

/*
 * backend_file_open() - open @path, a regular file or a block device,
 * read-write (O_DIRECT with opts.direct), as a swap backend of
 * size / USWAP_PAGE_SIZE slots (BLKGETSIZE64 for a block device), slot 0
 * being the header page (first_slot 1). The header is not read here; the
 * caller sets bad_slots from it. The file is never resized.
 * @opts: NULL for the defaults (queue depth 32, buffered, no discard,
 *        io_uring); copied.
 * io_uring: a ring of opts.queue_depth entries (0 = 32, clamped to
 * FILE_MAX_QUEUE_DEPTH) unless opts.no_uring; if io_uring_queue_init()
 * fails, or libuswap was built without liburing (-ENOTSUP), the backend
 * falls back to pread/pwrite and records why.
 * Discard: with opts.discard, the whole area but the header page is
 * discarded now (the kernel's discard at swapon); a refusal switches
 * discard off and is recorded, it does not fail the open.
 * The area is claimed (claim_area()) until the backend is closed.
 * @out: receives the backend; the caller closes it with ops->close().
 * Return: 0; -EINVAL (@path or @out NULL, not a file or block device,
 * smaller than 2 pages, O_DIRECT refused by the filesystem); -EBUSY (the
 * same file or block device is already open as a backend, here or in
 * another process, or the block device is mounted); the -errno of open(2)
 * (-ENOENT, -EACCES, -ETXTBSY for the kernel's own active swap file, ...);
 * -ENOMEM. A message is put in @err.
 * Thread-safety: any thread.
 */
int backend_file_open(const char *path, const struct file_backend_opts *opts,
		      struct backend **out, char *err, size_t errlen)
{
	struct file_backend_opts o = { 0 };
	struct file_backend *fb;
	uint64_t size, nr_slots;
	struct stat st;
	int fd, flags, rc;

	if (path == NULL || out == NULL)
		return backend_errf(err, errlen, -EINVAL, "file: no path or output pointer");
	if (opts != NULL)
		o = *opts;
	if (o.queue_depth == 0)
		o.queue_depth = FILE_DEFAULT_QUEUE_DEPTH;
	if (o.queue_depth > FILE_MAX_QUEUE_DEPTH)
		o.queue_depth = FILE_MAX_QUEUE_DEPTH;

	flags = O_RDWR | O_CLOEXEC | (o.direct ? O_DIRECT : 0);
	fd = open(path, flags);
	if (fd < 0) {
		rc = -errno;
		if (rc == -EINVAL && o.direct)
			return backend_errf(err, errlen, rc,
					    "%s: O_DIRECT is not supported here", path);
		return backend_errf(err, errlen, rc, "%s: cannot open: %s", path,
				    strerror(-rc));
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		close(fd);
		return backend_errf(err, errlen, rc, "%s: fstat: %s", path, strerror(-rc));
	}
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) != 0) {
			rc = -errno;
			close(fd);
			return backend_errf(err, errlen, rc, "%s: BLKGETSIZE64: %s",
					    path, strerror(-rc));
		}
	} else {
		close(fd);
		return backend_errf(err, errlen, -EINVAL,
				    "%s: not a regular file or block device", path);
	}
	rc = claim_area(path, &fd, &st, flags, err, errlen);
	if (rc) {
		close(fd);
		return rc;
	}
	nr_slots = size / USWAP_PAGE_SIZE;
	if (nr_slots < 2) {
		close(fd);
		return backend_errf(err, errlen, -EINVAL,
				    "%s: %llu bytes: need 2 pages at least", path,
				    (unsigned long long)size);
	}

	fb = calloc(1, sizeof(*fb));
	if (fb == NULL) {
		close(fd);
		return backend_errf(err, errlen, -ENOMEM, "file: out of memory");
	}
	fb->fd = fd;
	fb->direct = o.direct;
	fb->blkdev = S_ISBLK(st.st_mode);
	fb->discard = o.discard;
	fb->size_bytes = size;
	fb->depth = o.queue_depth;
	/* e.g. -EPERM (io_uring_disabled), -ENOSYS; -ENOTSUP: built without
	 * liburing */
	if (!o.no_uring)
		fb->uring_error = file_ring_open(fb);
	backend_init(&fb->b, &file_ops, path, nr_slots, 1);
	fb->b.is_file = !fb->blkdev;

	if (fb->discard)
		fb->open_discard_rc = discard_bytes(fb, USWAP_PAGE_SIZE,
						    (nr_slots - 1) * USWAP_PAGE_SIZE);
	fb->b.discard_clusters = fb->discard &&
		!atomic_load(&fb->discard_refused); /* page discard too */
	*out = &fb->b;
	return 0;
}
