// SPDX-License-Identifier: MIT
/*
 * uffd.c - the userfaultfd system interface: opening one (with the
 * permission fallbacks), the API handshake and feature checks, and one
 * wrapper per ioctl. errno is read here and nowhere above: every function
 * returns 0 or -errno.
 *
 * Debian 12's kernel headers (linux-libc-dev 6.1) predate UFFDIO_POISON
 * (6.6), UFFDIO_MOVE (6.8) and their feature bits, although newer kernels
 * offer them; their uapi values are carried below and their presence is
 * checked at run time (the feature bits of UFFDIO_API and the ioctl mask
 * UFFDIO_REGISTER returns), falling back when they are absent.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pager/pager_internal.h"

/* include/uapi/linux/userfaultfd.h, Linux 6.6 and 6.8 */
#ifndef UFFD_FEATURE_POISON
#define UFFD_FEATURE_POISON (1 << 14)
#endif
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif
#ifndef _UFFDIO_MOVE
#define _UFFDIO_MOVE (0x05)
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
	__u64 mode;
	__s64 move; /* bytes moved, or -errno */
};
#define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif
#ifndef _UFFDIO_POISON
#define _UFFDIO_POISON (0x08)
struct uffdio_poison {
	struct uffdio_range range;
#define UFFDIO_POISON_MODE_DONTWAKE ((__u64)1 << 0)
	__u64 mode;
	__s64 updated; /* bytes poisoned, or -errno */
};
#define UFFDIO_POISON _IOWR(UFFDIO, _UFFDIO_POISON, struct uffdio_poison)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#define UFFD_OPEN_FLAGS (O_CLOEXEC | O_NONBLOCK)

static int sys_userfaultfd(int flags)
{
#ifdef SYS_userfaultfd
	int fd = (int)syscall(SYS_userfaultfd, flags);

	return fd < 0 ? -errno : fd;
#else
	return -ENOSYS;
#endif
}

/* /dev/userfaultfd (Linux 6.1+): access is the file's permission, not
 * the sysctl. */
static int dev_userfaultfd(int flags)
{
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	int fd;

	if (dev < 0)
		return -errno;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
	fd = fd < 0 ? -errno : fd;
	close(dev);
	return fd;
}

/* Remember the most telling error: a permission error wins over "not
 * there", so the caller can say how to get permission. */
static int worse(int old, int err)
{
	if (err == -EACCES)
		err = -EPERM;
	if (old == -EPERM)
		return old;
	return err;
}

/*
 * open_fd() - a userfaultfd, trying in turn: user-mode-only faults (always
 * allowed, Linux 5.11+; first when not root and the caller did not ask for
 * kernel faults), full userfaultfd (root, CAP_SYS_PTRACE or
 * vm.unprivileged_userfaultfd=1), /dev/userfaultfd (its permissions).
 */
static int open_fd(unsigned int pager_flags, bool *user_mode_only)
{
	bool umo_ok = !(pager_flags & USWAP_PAGER_KERNEL_FAULTS);
	bool root = geteuid() == 0;
	int err = -ENOSYS, fd;

	if (umo_ok && !root) {
		fd = sys_userfaultfd(UFFD_OPEN_FLAGS | UFFD_USER_MODE_ONLY);
		if (fd >= 0) {
			*user_mode_only = true;
			return fd;
		}
		err = worse(err, fd);
	}
	fd = sys_userfaultfd(UFFD_OPEN_FLAGS);
	if (fd >= 0)
		return fd;
	err = worse(err, fd);
	fd = dev_userfaultfd(UFFD_OPEN_FLAGS);
	if (fd >= 0)
		return fd;
	if (fd != -ENOENT)
		err = worse(err, fd);
	if (umo_ok && root) {
		fd = sys_userfaultfd(UFFD_OPEN_FLAGS | UFFD_USER_MODE_ONLY);
		if (fd >= 0) {
			*user_mode_only = true;
			return fd;
		}
	}
	return err;
}

/* UFFDIO_API may be retried after a refusal of unknown features (the
 * kernel checks them before it initialises the context). */
static int api_handshake(int fd, uint64_t want, uint64_t *got)
{
	struct uffdio_api api = { .api = UFFD_API, .features = want };

	if (ioctl(fd, UFFDIO_API, &api) == 0) {
		*got = api.features;
		return 0;
	}
	if (errno != EINVAL || !want)
		return -errno;
	api.api = UFFD_API;
	api.features = 0;
	if (ioctl(fd, UFFDIO_API, &api))
		return -errno;
	*got = api.features & ~want; /* what was asked for is not enabled */
	return 0;
}

/* Register a scratch page to learn which range ioctls anonymous memory
 * gets: WRITEPROTECT is required, POISON and MOVE are used if there. */
static int probe_ioctls(int fd, uint64_t *ioctls)
{
	long page = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register reg;
	int err = 0;

	if (m == MAP_FAILED)
		return -ENOMEM;
	reg.range.start = (uintptr_t)m;
	reg.range.len = (uint64_t)page;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
	if (ioctl(fd, UFFDIO_REGISTER, &reg))
		err = errno == EINVAL ? -ENOSYS : -errno; /* no anon WP */
	else
		*ioctls = reg.ioctls;
	if (!err)
		uffd_unregister(fd, m, (size_t)page);
	munmap(m, (size_t)page);
	return err;
}

int uffd_open(unsigned int pager_flags, struct uffd_info *info)
{
	uint64_t want = 0, features = 0, ioctls = 0;
	int fd, err;

	*info = (struct uffd_info){ 0 };
	fd = open_fd(pager_flags, &info->user_mode_only);
	if (fd < 0)
		return fd;
	if (!(pager_flags & USWAP_PAGER_NO_POISON))
		want |= UFFD_FEATURE_POISON;
	if (!(pager_flags & USWAP_PAGER_NO_MOVE))
		want |= UFFD_FEATURE_MOVE;
	want |= UFFD_FEATURE_THREAD_ID; /* fork.c: the forking thread's faults */
	err = api_handshake(fd, want, &features);
	if (!err)
		err = probe_ioctls(fd, &ioctls);
	if (!err && !(ioctls & (1ull << _UFFDIO_WRITEPROTECT)))
		err = -ENOSYS;
	if (err) {
		close(fd);
		return err;
	}
	info->poison = (want & UFFD_FEATURE_POISON) && (features & UFFD_FEATURE_POISON) &&
		       (ioctls & (1ull << _UFFDIO_POISON));
	info->move = (want & UFFD_FEATURE_MOVE) && (features & UFFD_FEATURE_MOVE) &&
		     (ioctls & (1ull << _UFFDIO_MOVE));
	info->thread_id = (features & UFFD_FEATURE_THREAD_ID) != 0;
	return fd;
}

int uffd_register(int fd, void *addr, size_t len)
{
	struct uffdio_register reg = {
		.range = { (uintptr_t)addr, len },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(fd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

int uffd_unregister(int fd, void *addr, size_t len)
{
	struct uffdio_range range = { (uintptr_t)addr, len };

	return ioctl(fd, UFFDIO_UNREGISTER, &range) ? -errno : 0;
}

/*
 * uffd_copy() - map copies of @len bytes at @src at @dst and wake the
 * threads waiting there. -EAGAIN (the mm is changing) is retried from
 * where the kernel stopped. Return: 0, -EEXIST (something is mapped in
 * the range already), or another -errno.
 */
int uffd_copy(int fd, void *dst, const void *src, size_t len, bool wp)
{
	size_t done = 0;

	while (done < len) {
		struct uffdio_copy c = {
			.dst = (uintptr_t)dst + done,
			.src = (uintptr_t)src + done,
			.len = len - done,
			.mode = wp ? UFFDIO_COPY_MODE_WP : 0,
		};

		if (ioctl(fd, UFFDIO_COPY, &c) == 0)
			return 0;
		if (errno != EAGAIN)
			return -errno;
		if (c.copy > 0)
			done += (size_t)c.copy;
	}
	return 0;
}

/*
 * uffd_move() - move the pages of [@src, @src + @len) to @dst (both ranges
 * of this userfaultfd, @dst unmapped) and wake the threads waiting at
 * @dst. -EAGAIN with progress is retried from where the kernel stopped.
 * Return: 0, or the -errno of the page at @src + *@moved (-EBUSY: pinned
 * or not exclusive; -ENOENT: a hole; -EEXIST: @dst is mapped).
 */
int uffd_move(int fd, void *dst, void *src, size_t len, size_t *moved)
{
	*moved = 0;
	while (*moved < len) {
		struct uffdio_move m = {
			.dst = (uintptr_t)dst + *moved,
			.src = (uintptr_t)src + *moved,
			.len = len - *moved,
		};

		if (ioctl(fd, UFFDIO_MOVE, &m) == 0) {
			*moved = len;
			return 0;
		}
		if (m.move > 0)
			*moved += (size_t)m.move;
		else if (errno != EAGAIN)
			return -errno;
	}
	return 0;
}

/* Map the zero page over @len bytes at @dst; wake the threads waiting
 * there only if @wake (else the caller's uffd_wake() does, once it has
 * write-protected the range). */
int uffd_zeropage(int fd, void *dst, size_t len, bool wake)
{
	size_t done = 0;

	while (done < len) {
		struct uffdio_zeropage z = {
			.range = { (uintptr_t)dst + done, len - done },
			.mode = wake ? 0 : UFFDIO_ZEROPAGE_MODE_DONTWAKE,
		};

		if (ioctl(fd, UFFDIO_ZEROPAGE, &z) == 0)
			return 0;
		if (errno != EAGAIN)
			return -errno;
		if (z.zeropage > 0)
			done += (size_t)z.zeropage;
	}
	return 0;
}

/* Write-protect (@protect) or unprotect and wake (!@protect) a range. */
int uffd_writeprotect(int fd, void *addr, size_t len, bool protect)
{
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)addr, len },
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	for (;;) {
		if (ioctl(fd, UFFDIO_WRITEPROTECT, &wp) == 0)
			return 0;
		if (errno != EAGAIN)
			return -errno;
	}
}

int uffd_wake(int fd, void *addr, size_t len)
{
	struct uffdio_range range = { (uintptr_t)addr, len };

	return ioctl(fd, UFFDIO_WAKE, &range) ? -errno : 0;
}

/* Install poison markers: an access then gets SIGBUS (as a hardware
 * memory error would give), until the range is zapped. */
int uffd_poison(int fd, void *addr, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct uffdio_poison po = {
			.range = { (uintptr_t)addr + done, len - done },
		};

		if (ioctl(fd, UFFDIO_POISON, &po) == 0)
			return 0;
		if (errno != EAGAIN)
			return -errno;
		if (po.updated > 0)
			done += (size_t)po.updated;
	}
	return 0;
}
