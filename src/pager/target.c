// SPDX-License-Identifier: MIT
/*
 * target.c - the memory a pager serves: its own process's, or another
 * process's (uswap_pager_config.target, issue 23's daemon). Everything
 * the pager does to region memory other than through the userfaultfd
 * goes through here:
 *
 *  - mm_read(): copy region memory out: a target's victims, read after
 *    their write protection is in place, go to the reclaim pass's stage
 *    slot with process_vm_readv() (in its own process the swap path
 *    reads the region itself); a fork child's touched folios (fork.c);
 *  - mm_write(): copy into region memory: memcpy() here,
 *    process_vm_writev() there;
 *  - mm_zap(): unmap ranges: uswap_pager_zap_self() here, the target's
 *    zap function there (no system call unmaps another process's memory;
 *    the target's agent calls uswap_pager_zap_self() in turn);
 *  - mm_present(): which pages are mapped: mincore() here, the target's
 *    /proc/PID/pagemap there;
 *  - mm_zero(): zero a part of a folio (a discard's ends).
 *
 * Every userfaultfd ioctl works on the mm the descriptor was opened in,
 * from whichever process calls it, so the fault path needs nothing here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pager/pager_internal.h"

USWAP_API int uswap_pager_target_open(unsigned int flags, unsigned int *caps)
{
	struct uffd_info info;
	int fd = uffd_open(flags & (USWAP_PAGER_KERNEL_FAULTS | USWAP_PAGER_NO_POISON), &info);

	if (fd >= 0 && caps)
		*caps = (info.user_mode_only ? USWAP_PAGER_CAP_USER_MODE_ONLY : 0) |
			(info.poison ? USWAP_PAGER_CAP_POISON : 0) |
			(info.move ? USWAP_PAGER_CAP_MOVE : 0);
	return fd;
}

int target_open(struct uswap_pager *p, const struct uswap_pager_target *t)
{
	char path[64];

	if (t->uffd < 0 || t->pid <= 0 || !t->zap)
		return -EINVAL;
	p->target = *t;
	p->cfg.target = &p->target;
	p->remote = true;
	p->uffd = fcntl(t->uffd, F_DUPFD_CLOEXEC, 3);
	if (p->uffd < 0)
		return errno == EBADF ? -EINVAL : -errno;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)t->pid);
	p->pagemap = open(path, O_RDONLY | O_CLOEXEC);
	if (p->pagemap < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	p->user_mode_only = t->caps & USWAP_PAGER_CAP_USER_MODE_ONLY;
	p->use_poison = (t->caps & USWAP_PAGER_CAP_POISON) &&
			!(p->cfg.flags & USWAP_PAGER_NO_POISON);
	p->has_move = false; /* the stage would have to be the target's */
	return 0;
}

void target_close(struct uswap_pager *p)
{
	if (p->pagemap >= 0)
		close(p->pagemap);
	p->pagemap = -1;
}

int mm_read(struct uswap_pager *p, void *dst, const void *src, size_t len)
{
	if (!p->remote) {
		memcpy(dst, src, len);
		return 0;
	}
	struct iovec local = { dst, len }, remote = { (void *)src, len };
	ssize_t n = process_vm_readv(p->target.pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int mm_write(struct uswap_pager *p, void *addr, const void *src, size_t len)
{
	if (!p->remote) {
		memcpy(addr, src, len);
		return 0;
	}
	/* A swapped-out page there faults in the target, served as any. */
	struct iovec local = { (void *)src, len }, remote = { addr, len };
	ssize_t n = process_vm_writev(p->target.pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int mm_zero(struct uswap_pager *p, void *addr, size_t len)
{
	if (!p->remote) {
		memset(addr, 0, len);
		return 0;
	}
	/* Less than a folio (the ends of a discard): p->zero is larger. */
	return len <= p->folio_bytes ? mm_write(p, addr, p->zero, len) : -EINVAL;
}

/* process_madvise() of the calling process, whole: a pidfd of our own
 * (PIDFD_SELF_THREAD_GROUP since 6.15, else one opened per call: a
 * descriptor kept would name the parent in a fork child). Return: bytes
 * advised, or -errno. */
#define ZAP_PIDFD_SELF (-10001) /* PIDFD_SELF_THREAD_GROUP, linux/pidfd.h 6.15 */
static _Atomic bool zap_no_self;    /* the kernel refused ZAP_PIDFD_SELF */
static _Atomic bool zap_no_process; /* ...or process_madvise() itself */

static long zap_process_madvise(const struct iovec *r, unsigned int n)
{
	long done;
	int fd;

	if (!atomic_load_explicit(&zap_no_self, memory_order_relaxed)) {
		done = syscall(SYS_process_madvise, ZAP_PIDFD_SELF, r, (size_t)n,
			       MADV_DONTNEED, 0u);
		if (done >= 0 || errno != EBADF)
			return done >= 0 ? done : -errno;
		atomic_store_explicit(&zap_no_self, true, memory_order_relaxed);
	}
	fd = (int)syscall(SYS_pidfd_open, getpid(), 0u);
	if (fd < 0)
		return -errno;
	done = syscall(SYS_process_madvise, fd, r, (size_t)n, MADV_DONTNEED, 0u);
	done = done >= 0 ? done : -errno;
	close(fd);
	return done;
}

USWAP_API int uswap_pager_zap_self(const struct iovec *r, unsigned int n)
{
	size_t total = 0, odd = 0;
	long done = -ENOSYS;

	if (!n)
		return 0;
	if (!r || n > IOV_MAX)
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		total += r[i].iov_len;
		odd |= (uintptr_t)r[i].iov_base | r[i].iov_len;
	}
	/* Unaligned: the loop says which range (EINVAL from the batch would
	 * read as a kernel without it). */
	if (n > 1 && !(odd % USWAP_PAGE_SIZE) &&
	    !atomic_load_explicit(&zap_no_process, memory_order_relaxed)) {
		done = zap_process_madvise(r, n);
		if (done == (long)total)
			return 0;
		if (done == -ENOSYS || done == -EINVAL || done == -EPERM)
			atomic_store_explicit(&zap_no_process, true, memory_order_relaxed);
	}
	/* One range, an older kernel, or a short count: range by range
	 * (MADV_DONTNEED again is harmless), which says which one failed.
	 * The system call, not madvise(): an agent interposes that. */
	for (unsigned int i = 0; i < n; i++)
		if (syscall(SYS_madvise, r[i].iov_base, r[i].iov_len, MADV_DONTNEED))
			return -errno;
	return 0;
}

int mm_zap(struct uswap_pager *p, const struct iovec *r, unsigned int n)
{
	int err;

	if (!n)
		return 0;
	if (p->remote) {
		err = p->target.zap(p->target.zap_arg, r, n);
		/* Gone: so is its memory; nothing is left mapped to zap. */
		return err == -ESRCH || err == -EPIPE ? 0 : err;
	}
	return uswap_pager_zap_self(r, n);
}

/* PAGEMAP_SCAN (Linux 6.7; Debian 12's headers are 6.1's): the uapi
 * layout of linux/fs.h. */
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN    _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_PRESENT (1u << 3)
#define PAGE_IS_SWAPPED (1u << 4)
#endif

long mm_populated(struct uswap_pager *p, void *addr, size_t len, struct iovec *runs,
		  unsigned int max, char **next)
{
	struct page_region v[64];
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.start = (uintptr_t)addr,
		.end = (uintptr_t)addr + len,
		.vec = (uintptr_t)v,
		.vec_len = max < 64 ? max : 64,
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
	};
	/* A target's pagemap, or ours kept open by the stage (stage.c); a
	 * pager without either opens it for the call. */
	int kept = p->remote ? p->pagemap : p->stage_pagemap;
	int fd = kept >= 0 ? kept : open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return -errno;
	n = ioctl(fd, PAGEMAP_SCAN, &a);
	if (n < 0)
		n = errno == ESRCH || errno == ENOENT ? -ESRCH : -errno;
	if (fd != kept)
		close(fd);
	if (n < 0)
		return n;
	/* The kernel merges neighbours of one category only: join a
	 * present run and a swapped one that touch. */
	long out = 0;

	for (long i = 0; i < n; i++) {
		if (out && (uintptr_t)runs[out - 1].iov_base + runs[out - 1].iov_len == v[i].start) {
			runs[out - 1].iov_len += v[i].end - v[i].start;
			continue;
		}
		runs[out].iov_base = (void *)(uintptr_t)v[i].start;
		runs[out].iov_len = v[i].end - v[i].start;
		out++;
	}
	*next = (char *)(uintptr_t)a.walk_end;
	return out;
}

/* The pagemap entries' present (63) and swapped (62) bits. */
#define PM_PRESENT_OR_SWAPPED (3ull << 62)

int mm_present(struct uswap_pager *p, void *addr, size_t len, unsigned char *vec)
{
	size_t pages = len / USWAP_PAGE_SIZE;
	uint64_t e[512];

	if (!p->remote)
		return mincore(addr, len, vec) ? -errno : 0;
	for (size_t done = 0; done < pages;) {
		size_t k = pages - done < 512 ? pages - done : 512;
		off_t off = (off_t)(((uintptr_t)addr / USWAP_PAGE_SIZE + done) * sizeof(*e));
		ssize_t got = pread(p->pagemap, e, k * sizeof(*e), off);

		if (got < 0)
			return errno == ESRCH ? -ESRCH : -errno;
		if ((size_t)got != k * sizeof(*e))
			return -ESRCH; /* the process exited: its mm is empty */
		for (size_t i = 0; i < k; i++)
			vec[done + i] = (e[i] & PM_PRESENT_OR_SWAPPED) != 0;
		done += k;
	}
	return 0;
}
