/* SPDX-License-Identifier: MIT */
/*
 * uswap/pager.h - the userfaultfd pager: memory regions kept under a resident
 * limit that swap through the swap path.
 * Part of the public API; include <uswap/uswap.h> for all of it.
 */
#ifndef USWAP_PAGER_H
#define USWAP_PAGER_H

#include <sys/types.h>
#include <sys/uio.h>

#include <uswap/alloc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * The pager: memory regions that swap through userfaultfd
 *
 * A pager owns one userfaultfd and a resident limit shared by all its
 * regions (the memory cgroup's memory.max role). A region is anonymous
 * memory registered with userfaultfd: its first touch maps zeroes, and
 * when the regions together hold more than the limit the pager evicts
 * folios of 2^order pages (clock order), writes them through
 * uswap_swap_out() and unmaps them; the next access faults and the folio
 * comes back whole through uswap_swap_in() (from the swap cache when it
 * is still there). Application threads may read and write region memory
 * at any time, eviction included: a folio is moved out (UFFDIO_MOVE), or
 * write-protected where the kernel cannot move it, before it is copied
 * out, so no write is ever lost, and a page the kernel holds pinned is
 * never evicted.
 *
 * One pager per swap instance: the pager owns every slot of @u and
 * registers itself as its swapoff owner (uswap_set_unuse()), so
 * uswap_swapoff_progress() of a device under live regions moves their
 * folios to the other devices (or, when nothing else has room, back into
 * memory, above the limit) and reports progress.
 *
 * A device read error on swap-in makes the access fail with SIGBUS
 * (UFFDIO_POISON, kernel 6.6+); on kernels without it the folio is mapped
 * filled with USWAP_PAGER_POISON_BYTE instead. Either way the error is
 * recorded (uswap_region_error()) and passed to the config's on_error
 * callback before the faulting thread resumes; the data is lost, never
 * replaced by other data silently.
 *
 * Requirements: userfaultfd with write-protect support for anonymous
 * memory (Linux 5.7+). Without root (CAP_SYS_PTRACE) the pager asks for
 * user-mode-only faults first (UFFD_USER_MODE_ONLY, always allowed), then
 * for full userfaultfd (vm.unprivileged_userfaultfd=1), then
 * /dev/userfaultfd. In user-mode-only mode a system call given a region
 * address that is swapped out fails with EFAULT instead of faulting it in.
 * ---------------------------------------------------------------------- */

struct uswap_pager; /* one userfaultfd, handler threads, limit, clock */

#define USWAP_PAGER_MAX_ORDER 4      /* folios up to 16 pages (64 KiB) */
#define USWAP_PAGER_POISON_BYTE 0xA5 /* fill of a lost folio without UFFDIO_POISON */

/* uswap_pager_config.flags */
#define USWAP_PAGER_KERNEL_FAULTS 0x1 /* never user-mode-only: system calls
					 on region memory fault pages in
					 (needs root, the sysctl, or
					 /dev/userfaultfd) */
#define USWAP_PAGER_NO_POISON     0x2 /* use the poison-byte fallback even
					 where UFFDIO_POISON exists */
#define USWAP_PAGER_NO_KEEP_CLEAN 0x4 /* free the slots of every folio read
					 back (default: a folio read back
					 by a read fault keeps its slots and
					 the hash of its contents, so it is
					 evicted again with no write if it
					 still hashes the same) */
#define USWAP_PAGER_NO_ZEROPAGE   0x8 /* first read touches map a zero-filled
					 copy, not the shared zero page */
#define USWAP_PAGER_NO_SPIN       0x10 /* handlers block in poll() as soon
					 as the queue is empty */
#define USWAP_PAGER_NO_KSWAPD     0x20 /* no background reclaim thread:
					 faults reclaim for themselves when
					 the limit is reached (memory.max
					 without kswapd) */
#define USWAP_PAGER_FORKABLE      0x40 /* regions are inherited by fork()'s
					 children (default: MADV_DONTFORK,
					 so a child has none). A child has
					 no pager: the owner must bring
					 every folio in before fork()
					 (uswap_pager_hold()), or the child
					 reads swapped-out pages as zeros */
#define USWAP_PAGER_NO_MOVE       0x80 /* evict by write-protect, copy and
					 unmap even where UFFDIO_MOVE exists
					 (default: move the folio out first,
					 which leaves a page the kernel holds
					 pinned in place; see docs/pager.md).
					 Not pin-safe: for comparisons */
#define USWAP_PAGER_NO_WORKINGSET 0x100 /* the clock ignores how soon an
					 evicted folio came back (default: a
					 folio that faults back within a
					 limit's worth of evictions gets
					 more laps each time, the kernel's
					 workingset activation): for
					 comparisons */
#define USWAP_PAGER_NO_PAGEMAP_SCAN 0x200 /* adopt a region (and a fork
					 child its heap) by mincore() of
					 every page even where PAGEMAP_SCAN
					 (Linux 6.7) lists the mapped runs:
					 the path of older kernels, for tests
					 and comparisons */

/*
 * uswap_pager_error_fn - called once per folio lost to a read error, in a
 * handler thread, with the folio's first address and the error (-EIO).
 * Must not call back into the pager.
 */
typedef void (*uswap_pager_error_fn)(void *ctx, void *addr, int err);

/* ------------------------------------------------------------------------
 * Serving another process (issue 23's daemon, docs/design.md): a pager
 * whose regions are another process's memory. That process opens the
 * userfaultfd (uswap_pager_target_open(): the feature handshake and the
 * probe must run in the mm they are for) and passes it over a unix socket
 * (SCM_RIGHTS); the pager registers the process's ranges through it
 * (uswap_region_adopt() with target addresses), serves its faults with
 * UFFDIO_COPY, write-protects its victims, reads them with
 * process_vm_readv() and writes them to the serving process's devices:
 * the swap path, its swap cache and its device pools (the zram pool) are
 * the server's memory, never the target's. Unmapping is the one thing no
 * system call does to another process (process_madvise(MADV_DONTNEED) is
 * EINVAL): the pager asks the process through @zap, once per reclaim pass
 * with every range of the pass.
 * ---------------------------------------------------------------------- */

/* uswap_pager_target.caps: what the userfaultfd offers */
#define USWAP_PAGER_CAP_USER_MODE_ONLY 0x1 /* opened UFFD_USER_MODE_ONLY */
#define USWAP_PAGER_CAP_POISON         0x2 /* UFFDIO_POISON usable */
#define USWAP_PAGER_CAP_MOVE           0x4 /* UFFDIO_MOVE offered (not used
					      for a target: see docs/pager.md) */

/*
 * uswap_pager_zap_fn - unmap (MADV_DONTNEED) the @n ranges @r[i] in the
 * target process, and return once that is done. Called by reclaim and
 * discard with pager state held busy, from pager threads or the thread of
 * uswap_region_discard(); may block (a round trip to the process), must
 * not call into the pager. Return: 0, or -errno (-ESRCH/-EPIPE: the
 * process is gone, its memory with it; reclaim then goes on as if done).
 */
typedef int (*uswap_pager_zap_fn)(void *arg, const struct iovec *r, unsigned int n);

/*
 * uswap_pager_zap_self() - in the served process: MADV_DONTNEED the @n
 * ranges @r[i] of its own memory (byte addresses and lengths, page
 * aligned), what a uswap_pager_zap_fn asks of it. All in one
 * process_madvise() where the kernel takes it for the calling process
 * (6.13): since 6.16 that flushes the TLB once for the batch, not once per
 * range (an IPI to each CPU running the process every time; 15x faster
 * for 1024 ranges here, docs/benchmarks.md); else range by range.
 * Return: 0; -EINVAL (@r NULL, @n > IOV_MAX); the first range's -errno
 * of madvise(). Thread-safety: any thread; async-signal-safe.
 */
USWAP_API int uswap_pager_zap_self(const struct iovec *r, unsigned int n);

struct uswap_pager_target {
	int uffd;               /* from uswap_pager_target_open() in the
				   process; the pager keeps a dup() of its
				   own, the caller closes this one */
	pid_t pid;              /* the process (process_vm_readv(), its
				   /proc/PID/pagemap): needs ptrace read
				   access to it (its parent, or root) */
	unsigned int caps;      /* USWAP_PAGER_CAP_*, as the open returned */
	uswap_pager_zap_fn zap; /* required */
	void *zap_arg;
};

/*
 * Fork of a served process, without reading back (share.c): the child's
 * pager shares the parent's swapped-out folios on the same slots, each
 * slot's count raised (uswap_dup()), as the kernel's fork shares swap
 * entries; either process's access brings a private copy in, and a slot
 * is freed with its last reference. For pagers of one instance (a swap
 * daemon's); any tier, files and NBD exports too.
 *
 * uswap_pager_share_prepare() - just before the target forks: stop
 * eviction in @p, wait for the reclaim passes in flight, and record every
 * swapped-out folio with one more reference to each of its slots, in
 * *@out. A folio whose count cannot be raised (a count at its most, no
 * memory) is read in instead, over the limit: the fork copies it.
 * Until uswap_pager_share_parent(@p), which must be called once the fork
 * is done (whatever it returned), nothing is evicted; @p's faults are
 * served (the forking thread's libc may fault before the kernel copies
 * the page tables, as may the other threads), and the folios they bring
 * in are marked in the record (share.c).
 * Return: folios read in that way (usually 0); -EINVAL; -ENOMEM (nothing
 * recorded, eviction not stopped, nothing held). Thread-safety: any
 * thread; waits for faults in flight.
 */
struct uswap_pager_share;
USWAP_API long uswap_pager_share_prepare(struct uswap_pager *p,
					 struct uswap_pager_share **out);
/*
 * uswap_pager_share_parent() - the fork is done (or failed): eviction in
 * @p goes on, and of the folios of @s that @p's faults brought in during
 * the fork, those the fork copied to the child (mapped in both: the
 * parent's /proc/PID/pagemap does not say exclusive) are marked, for
 * uswap_pager_share_child() to leave as they are. Call it while the
 * parent is still inside its fork (its atfork parent handler), before
 * its other threads write much: a page written after the fork is no
 * longer shared. @s stays the caller's (NULL: no record to mark).
 * uswap_pager_share_child() waits for this call.
 * Thread-safety: any thread; waits for @p's faults in flight.
 */
USWAP_API void uswap_pager_share_parent(struct uswap_pager *p, struct uswap_pager_share *s);
/*
 * uswap_pager_share_child() - @child, the fork child's pager, which has
 * adopted the child's copies of the parent's regions at the same
 * addresses, takes each recorded folio that it has with no page present
 * (the fork copied it unmapped), as swapped out on the recorded slots.
 * One the fork copied mapped (swapped in by the parent during its fork:
 * uswap_pager_share_parent() says which) is left as the child has it.
 * A recorded folio the child touched before @child adopted it is read
 * and folded in, as uswap_pager_inherit() does; one in no region of
 * @child (a range its agent could not adopt) is read and written into
 * place, plain memory of the child from then on. The other records'
 * references are dropped. Hold @child from before it adopts until this
 * call (uswap_pager_hold()), so that nothing it adopted is evicted
 * meanwhile. Waits for uswap_pager_share_parent() of @s. Frees @s.
 * Return: folios taken; -EIO (a folded folio could not be read: the
 * child's copy is wrong); -EINVAL (@s NULL; @child NULL, of another
 * instance or order) or -ENOMEM: @s is freed all the same.
 * Thread-safety: any thread; waits for @child's faults in flight.
 */
USWAP_API long uswap_pager_share_child(struct uswap_pager *child, struct uswap_pager_share *s);
/* uswap_pager_share_free() - drop a record no child took (a failed fork,
 * a child that never came): its references go. NULL is a no-op. */
USWAP_API void uswap_pager_share_free(struct uswap_pager_share *s);

/*
 * uswap_pager_target_open() - in the process to be served: open a
 * userfaultfd as uswap_pager_create() would (@flags: USWAP_PAGER_KERNEL_FAULTS,
 * USWAP_PAGER_NO_POISON; others are ignored) and say in *@caps what it
 * offers. The caller passes the descriptor and @caps to the server.
 * Return: the descriptor (O_CLOEXEC, O_NONBLOCK), or -EPERM/-ENOSYS as
 * uswap_pager_create(). Thread-safety: any thread.
 */
USWAP_API int uswap_pager_target_open(unsigned int flags, unsigned int *caps);

struct uswap_pager_config {
	uint64_t limit_bytes;      /* resident bytes of all regions together
				      (rounded down to whole folios); at least
				      USWAP_PAGER_MIN_LIMIT_FOLIOS folios per
				      handler thread */
	unsigned int nr_handlers;  /* fault-handler threads (=1 when 0) */
	unsigned int order;        /* folio order 0..USWAP_PAGER_MAX_ORDER:
				      pages evicted and brought back together */
	unsigned int spin_us;      /* a handler with nothing to do keeps
				      polling the userfaultfd without sleeping
				      this long before it blocks in poll()
				      (=USWAP_PAGER_SPIN_DEFAULT when 0; see
				      USWAP_PAGER_NO_SPIN). Spinning costs CPU
				      but saves the ~25 us wake-up per fault. */
	unsigned int reclaim_batch;/* pages one reclaim pass evicts (=256 when
				      0), rounded up to whole folios, at most
				      a quarter of the limit */
	unsigned int swap_flags;   /* passed to uswap_swap_out(): 0 or
				      USWAP_SWAP_KEEP_CACHE (a clean copy stays
				      in the swap cache until the slots are
				      freed: memory outside the limit) */
	unsigned int flags;        /* USWAP_PAGER_* */
	uswap_pager_error_fn on_error; /* may be NULL */
	void *error_ctx;
	unsigned int readahead_pages; /* sequential readahead: a fault that
				      continues a sequential stream also maps
				      up to this many pages of the folios
				      after it that are in the same state
				      (never touched, or swapped out), in one
				      ioctl; the window doubles from one folio
				      as the stream goes on (0 = off; at most
				      64; less than a folio = off) */
	void *group;               /* a charge group (uswap_pager_group_init()):
				      the limit is the group's, shared with
				      every pager of every process that maps
				      it (NULL: limit_bytes is this pager's
				      own). limit_bytes must still pass the
				      checks above. Appended in 0.1. */
	const struct uswap_pager_target *target; /* NULL: regions are this
				      process's memory; else another
				      process's (above), and the pager is not
				      @u's swapoff owner, so several target
				      pagers can share one instance (a swapoff
				      of a device holding their slots is
				      -EBUSY). Copied. Appended in 0.1. */
};

#define USWAP_PAGER_SPIN_DEFAULT 50 /* us; see docs/pager.md */
#define USWAP_PAGER_MIN_LIMIT_FOLIOS 8

/*
 * Charge groups: one resident limit for the pagers of several processes,
 * as a memory cgroup's memory.max is one limit for all its tasks. The
 * group lives in memory the caller maps shared into every process of the
 * group (MAP_SHARED: an anonymous mapping made before fork(), or a memfd
 * that exec'd programs map again); each pager charges its folios there as
 * well as to itself. A pager that would pass the group's limit reclaims
 * its own folios first; when it has none to give, it raises the group's
 * pressure, and every member's background reclaim thread (kswapd) evicts
 * its own folios until the group is under its low watermark again.
 */
#define USWAP_PAGER_GROUP_BYTES 4096 /* memory a group needs, 8-byte aligned:
					 room for 120 member pagers at once */

/*
 * uswap_pager_group_init() - make @mem (@len bytes, at least
 * USWAP_PAGER_GROUP_BYTES, 8-byte aligned, mapped MAP_SHARED where other
 * processes are to join) a charge group with a limit of @limit_bytes
 * (rounded down to pages). Call once, before any pager uses it.
 * Return: 0; -EINVAL (too small, misaligned, a limit under 1 MiB).
 * Thread-safety: not with users of the same group.
 */
USWAP_API int uswap_pager_group_init(void *mem, size_t len, uint64_t limit_bytes);

struct uswap_pager_group_stats {
	uint64_t limit_bytes;
	uint64_t resident_bytes;      /* charged now by all members */
	uint64_t resident_peak_bytes;
	uint64_t pressure;            /* times a member found nothing of its
					 own to evict and asked the others */
	uint64_t over_limit;          /* charges passed above the limit:
					 nothing in the group could be evicted */
	uint64_t members;             /* pagers that ever joined */
	uint64_t members_now;         /* slots in use */
};

/*
 * uswap_pager_group_reap() - take the charge of members whose process is
 * gone (exit, kill -9, exec: the pager is never destroyed then, and its
 * memory is gone with the process) off the group's total. Call it every
 * few tens of ms from a process that outlives the members (uswap run
 * does, every 50 ms); until then the group counts the dead member's
 * memory, and the living find less room, never more.
 * Return: members reaped; -EINVAL (@mem is not an initialised group).
 * Thread-safety: any thread, one reaper at a time per group.
 */
USWAP_API long uswap_pager_group_reap(void *mem);

/*
 * uswap_pager_group_stats() - the group's counters, from any process that
 * maps it. Return: 0; -EINVAL (@mem is not an initialised group).
 * Thread-safety: any thread; the figures are read one by one.
 */
USWAP_API int uswap_pager_group_stats(const void *mem, struct uswap_pager_group_stats *st);

/*
 * uswap_pager_create() - open a userfaultfd, start the handler threads and
 * become @u's swapoff owner; or, with @cfg->target, take the target's
 * userfaultfd and serve that process (no swapoff owner then).
 * @u: the swap instance; must outlive the pager; its devices may come and
 *     go while the pager runs.
 * @cfg: settings (copied); NULL is not allowed (the limit has no default).
 * @out: receives the pager; free it with uswap_pager_destroy().
 * Return: 0; -EINVAL (bad order, limit too small for the handler count,
 * unknown flag, @cfg->group not an initialised group, a target without
 * a descriptor, pid or zap function); -EUSERS (the
 * group has no free member slot); -EPERM (userfaultfd not permitted: see the section
 * comment for the three ways to allow it); -ENOSYS (no userfaultfd, or no
 * write-protect support for anonymous memory); -ENOMEM; -EAGAIN (threads).
 * Thread-safety: any thread.
 */
USWAP_API int uswap_pager_create(struct uswap *u, const struct uswap_pager_config *cfg,
				 struct uswap_pager **out);

/*
 * uswap_pager_destroy() - free every region still there (their slots
 * too), stop the handler threads, close the userfaultfd and unregister
 * the swapoff owner. NULL is a no-op.
 * Context: no thread may touch region memory or use the pager during or
 * after the call.
 */
USWAP_API void uswap_pager_destroy(struct uswap_pager *p);

/*
 * uswap_pager_hold() - bring every swapped-out folio of every region into
 * memory, above the limit, and evict nothing until the matching
 * uswap_pager_release(): what a fork() needs, since the child loses the
 * userfaultfd registration and sees only what is mapped. Faults meanwhile
 * are served and charged over the limit (counted in over_limit). Each
 * folio is read once (swapoff would move it between devices first);
 * clean folios are mapped already and keep their slots.
 * Return: 0; -EIO (folios lost to read errors: they fault with SIGBUS, as
 * after a failed fault); -EINVAL (@p NULL). Holds nest.
 * Thread-safety: any thread; waits for the reclaim passes in flight.
 */
USWAP_API int uswap_pager_hold(struct uswap_pager *p);

/* uswap_pager_release() - end a uswap_pager_hold(); the last one lets
 * reclaim bring the resident memory back under the limit. NULL: no-op. */
USWAP_API void uswap_pager_release(struct uswap_pager *p);

/*
 * uswap_pager_fork_prepare() - get @p ready for a fork() whose child keeps
 * a copy of the instance and hands its swapped-out folios to a pager of
 * its own (uswap_pager_inherit()), instead of reading them all in first
 * (uswap_pager_hold()). For an instance whose devices are all memory of
 * the process (ram, zram): a file's or an export's slots would be shared
 * by the two processes, not copied. Eviction stops, and the pager's lock
 * is taken for writing, which waits for the faults and reclaim passes in
 * flight: nothing is half done in the copy. Until
 * uswap_pager_fork_parent(), a fault of another thread on a region
 * waits; one of the calling thread (glibc's fork runs libc code after the
 * atfork handlers, which may touch a region) is served, on a kernel whose
 * userfaultfd names the faulting thread (UFFD_FEATURE_THREAD_ID, 4.14),
 * and counted in fork_window. Call it last before fork() (the first
 * pthread_atfork() handler registered runs last): a thread the caller
 * waits for that faults meanwhile is not served.
 * Return: 0; -EINVAL (@p NULL, or it serves a target).
 * Thread-safety: the thread that forks.
 */
USWAP_API int uswap_pager_fork_prepare(struct uswap_pager *p);

/* uswap_pager_fork_parent() - in the parent, end uswap_pager_fork_prepare():
 * faults are served again and reclaim resumes. NULL: no-op. */
USWAP_API void uswap_pager_fork_parent(struct uswap_pager *p);

/*
 * uswap_pager_inherit() - in the child of a fork() made after
 * uswap_pager_fork_prepare(@old), give @p, a pager the child created on
 * its copy of @old's instance (same folio order), the folios @old had
 * swapped out, on the same slots: as the kernel's fork shares swap
 * entries, nothing is read, and each process frees its slots in its own
 * copy. Call it once @p has adopted the child's copies of @old's regions
 * (uswap_region_adopt()); a folio is taken where @p has it with no page
 * present, and read into place, as plain memory, where @p has no region
 * (one it could not adopt). A swapped-out folio the child touched before
 * @p adopted it (mapped: the zero page where it read, zeros adopted
 * around) is read and folded in: every byte the child has not written
 * gets @old's contents (counted in fork_folded). Every other slot @old
 * held (a clean folio's, its page mapped in the child) is freed. With @p
 * NULL (no pager could be made), every swapped-out folio is read into
 * place. Hold @p (uswap_pager_hold(), before it adopts anything: nothing
 * is read) from its creation until this call, so that no folio it
 * adopted is evicted before it is folded. Call uswap_pager_forget(@old)
 * after.
 * Return: folios taken (0 with @p NULL); -EIO (folios lost to read
 * errors, left as zeros); -ENOMEM; -EINVAL (@old NULL, another instance
 * or order).
 * Context: the child, one thread; @p's handlers may run.
 */
USWAP_API long uswap_pager_inherit(struct uswap_pager *p, struct uswap_pager *old);

/*
 * uswap_pager_forget() - in a fork() child, let go of a pager the parent
 * created: its threads are not in the child and its locks may be held by
 * them, so it cannot be destroyed. Closes the child's copies of its file
 * descriptors and nothing else: its regions stay mapped as plain memory
 * (see uswap_region_adopt()) and its bookkeeping is left unfreed. No call
 * may use @p afterwards. NULL is a no-op.
 * Context: the child, before it creates a pager of its own, or after
 * uswap_pager_inherit().
 */
USWAP_API void uswap_pager_forget(struct uswap_pager *p);

/*
 * uswap_region_create() - map @size bytes of anonymous memory managed by
 * the pager. The memory reads as zeroes until written.
 * @size: bytes, rounded up to whole folios.
 * @addr: receives the address, aligned to the folio size. The pager owns
 *        the mapping: do not munmap, mremap, mprotect or madvise it.
 * Return: 0; -EINVAL (@size 0 or @addr NULL); -ENOMEM; -EOPNOTSUPP (@p
 * serves a target: its memory is the target's to map).
 * Thread-safety: any thread; waits for faults in flight on other regions
 * to finish.
 */
USWAP_API int uswap_region_create(struct uswap_pager *p, size_t size, void **addr);

/*
 * uswap_region_destroy() - unmap a region and free its swap slots.
 * @addr: as returned by uswap_region_create().
 * Return: 0; -ENOENT (no region starts at @addr).
 * Context: no thread may touch the region during or after the call.
 */
USWAP_API int uswap_region_destroy(struct uswap_pager *p, void *addr);

/*
 * uswap_region_adopt() - make memory the process has mapped already a
 * region of @p, keeping its contents: a fork() child's copy of a region
 * its parent's pager had (the kernel dropped the child's userfaultfd
 * registration), taken over by a pager the child creates, or a mapping
 * the program made for itself (the JVM's heap: reserved PROT_NONE,
 * committed later).
 * @addr, @size: private anonymous memory, aligned to the folio size and a
 *     whole number of folios, in no other region. Parts that are not
 *     read-write and have pages present must be locked at once with
 *     uswap_region_mlock(): the evictor can neither read nor move them.
 * Every folio with a page present (mincore(2)) becomes resident and is
 * charged, its missing pages mapped as zeros; the others read as zeros
 * when touched. The charge may pass the limit: background reclaim (or the
 * next fault) evicts back under it. On success the pager owns the mapping
 * (uswap_region_create()'s rules apply; destroy unmaps it); on failure it
 * is left as it was. With a target (uswap_pager_config.target), @addr is
 * the target process's; presence is read from its /proc/PID/pagemap (a
 * page it swapped out counts), and destroy leaves the mapping to it.
 * Return: 0; -EINVAL (bad alignment or size, or memory userfaultfd cannot
 * take); -EBUSY (it meets a region of @p); -ENOMEM; -ESRCH (the target is
 * gone).
 * Thread-safety: any thread; waits for faults in flight on other regions.
 * Other threads may touch the memory meanwhile: their faults wait for the
 * region.
 */
USWAP_API int uswap_region_adopt(struct uswap_pager *p, void *addr, size_t size);

/*
 * uswap_region_disown() - give an adopted region back to the program as
 * plain memory, before an mremap(2) moves its pages where the pager has
 * no bookkeeping: every swapped-out folio is read in, then the region
 * leaves the pager (its slots freed, its charge dropped, the userfaultfd
 * registration and write protection lifted) and its memory stays mapped.
 * @addr: the region's first byte.
 * Return: 0; -ENOENT (no region starts at @addr); -EIO (folios lost to
 * read errors: they read as the poison fill or fault with SIGBUS).
 * Thread-safety: any thread; waits for faults in flight on other regions.
 * Follows nothing in the kernel, whose swap entries move with mremap().
 */
USWAP_API int uswap_region_disown(struct uswap_pager *p, void *addr);

/*
 * uswap_region_replaced() - the program put a new mapping over [@addr,
 * @addr + @len) of a region (mmap(2) with MAP_FIXED, or munmap(2)): the
 * pages there are gone, so their folios become untouched (NONE), their
 * swap slots are freed and their charge dropped, with no write and no
 * zap. With @anon (the new mapping is private anonymous memory) the range
 * is registered with the userfaultfd again; otherwise the pager never
 * sees a fault there. The kernel's equivalent: unmapping a range frees
 * its swap entries (zap_pte_range() -> free_swap_and_cache()).
 * @addr, @len: bytes, folio-aligned, inside one region.
 * Return: 0; -EINVAL (alignment, or the range leaves its region);
 * -ENOENT (@addr is in no region); the UFFDIO_REGISTER error.
 * Thread-safety: any thread, with faults and reclaim running; call it
 * both before and after the kernel's call (the first so no eviction reads
 * the old pages while they go, the second for a fault that raced).
 */
USWAP_API int uswap_region_replaced(struct uswap_pager *p, void *addr, size_t len,
				    bool anon);

/*
 * uswap_region_mlock() - keep [@addr, @addr + @len) of a region resident,
 * as mlock(2) keeps pages in the kernel's memory: its swapped-out folios
 * are read in (charged over the limit if need be; reclaim makes room
 * elsewhere) and the clock never picks its folios until
 * uswap_region_munlock(). Needed before the program makes a range
 * PROT_NONE or read-only: the evictor can neither read nor move such
 * folios. Not nested: one munlock undoes any number of mlocks.
 * uswap_region_munlock() - let the clock pick them again.
 * @addr, @len: bytes, folio-aligned, inside one region.
 * Return: 0; -EINVAL; -ENOENT; -EIO (mlock: folios lost to read errors).
 * Thread-safety: any thread, with faults and reclaim running; on return
 * no eviction of the range is in flight.
 */
USWAP_API int uswap_region_mlock(struct uswap_pager *p, void *addr, size_t len);
USWAP_API int uswap_region_munlock(struct uswap_pager *p, void *addr, size_t len);

/*
 * uswap_region_discard() - drop a range of a region, as MADV_DONTNEED
 * drops private anonymous memory: it reads as zeros afterwards. Whole
 * folios in the range are unmapped, uncharged and their swap slots freed
 * (no write to swap); the parts of folios at its ends are zeroed in place
 * (which may fault them in).
 * @addr, @len: bytes, any alignment, inside one region.
 * Return: 0; -EINVAL (@len 0, or the range leaves its region); -ENOENT
 * (@addr is in no region).
 * Thread-safety: any thread, with faults, reclaim and swapoff running; a
 * write to the range racing with the call may be lost, as with madvise.
 * The region must not be destroyed during the call.
 */
USWAP_API int uswap_region_discard(struct uswap_pager *p, void *addr, size_t len);

/*
 * uswap_region_error() - the read errors a region has seen.
 * @addr: the region's address.
 * @first: receives the first address lost (NULL if none); may be NULL.
 * Return: the number of folios lost to read errors (0 = none); -ENOENT.
 */
USWAP_API long uswap_region_error(struct uswap_pager *p, void *addr, void **first);

#define USWAP_PAGER_STATS_VERSION 1

struct uswap_pager_stats {
	uint32_t size;               /* sizeof(struct uswap_pager_stats) */
	uint32_t version;            /* USWAP_PAGER_STATS_VERSION */
	uint64_t limit_bytes;        /* effective limit */
	uint64_t resident_bytes;     /* charged now: mapped folios, and folios
					being brought in */
	uint64_t resident_peak_bytes;
	uint64_t regions;            /* live regions */
	uint64_t faults;             /* missing-page fault messages */
	uint64_t wp_faults;          /* write-protect fault messages */
	uint64_t zero_fills;         /* folios mapped on first touch */
	uint64_t swapins;            /* folios brought back */
	uint64_t swapins_cached;     /* ... from the swap cache (no I/O) */
	uint64_t evictions;          /* folios evicted */
	uint64_t evict_clean;        /* ... with no write: still on swap */
	uint64_t evict_split;        /* ... written as 2^order single pages
					after -E2BIG */
	uint64_t evict_cancelled;    /* evictions undone: written meanwhile,
					or the swap-out failed */
	uint64_t reclaim_waits;      /* faults that reclaimed before mapping */
	uint64_t kswapd_wakeups;     /* background reclaim rounds */
	uint64_t readahead;          /* folios mapped ahead of a fault (in
					zero_fills or swapins too) */
	uint64_t over_limit;         /* folios mapped above the limit because
					nothing could be evicted (swap full) */
	uint64_t read_errors;        /* folios lost to device read errors */
	uint64_t unuse_moved;        /* folios that left a device being swapped
					off without coming into memory: written
					to another device, or clean copies
					dropped */
	uint64_t unuse_loaded;       /* ... brought into memory instead (no
					other device had room) */
	/* Fault service time: from reading the fault message to the ioctl
	 * that maps the folio (and wakes the thread), in ns, over every
	 * resolved missing-page fault. 0 when none. */
	uint64_t fault_count;
	uint64_t fault_ns_p50;
	uint64_t fault_ns_p99;
	uint64_t fault_ns_max;
	/* Kernel features in use. */
	bool uffd_user_mode_only;    /* UFFD_USER_MODE_ONLY */
	bool uffd_poison;            /* UFFDIO_POISON for read errors */
	bool uffd_move;              /* eviction moves folios out (UFFDIO_MOVE) */
	bool kswapd;                 /* background reclaim thread running */
	/* Appended (older callers' size stops before it). */
	uint64_t evict_zero;         /* evictions of folios holding only
					zeros: not written, no slot; the next
					fault maps zeros (in zero_fills) */
	uint64_t evict_pinned;       /* evictions refused because the kernel
					holds a page of the folio pinned: it
					stays resident */
	uint64_t locked_bytes;       /* resident in mlocked folios
					(uswap_region_mlock()): never evicted,
					so outside resident_bytes and the
					limit until munlocked */
	uint64_t fork_folded;        /* folios of a fork's share that the
					child had mapped (touched before its
					pager began, or swapped in by the
					parent before the kernel copied its
					page tables): given the parent's
					contents (read from swap) where its
					bytes were zero, and kept resident */
	uint64_t fork_window;        /* faults served during a fork:
					folios swapped in between
					uswap_pager_share_prepare() and
					_parent(); faults of the forking
					thread between
					uswap_pager_fork_prepare() and
					_parent() */
	uint64_t workingset_refault; /* faults on folios this pager evicted
					(swap-ins and zero fills after an
					eviction; the kernel's
					workingset_refault_anon) */
	uint64_t workingset_activate; /* ... that came back within a limit's
					worth of evictions, and were given
					more laps (workingset_activate_anon) */
	uint64_t zero_written;       /* folios a read had mapped with the
					shared zero page (uncharged, as the
					kernel's) charged at their first
					write, or ahead of a sequence of
					such writes */
};

/*
 * uswap_pager_stats_get() - counters since creation. @st->size must be
 * set to sizeof(*st). Return: 0; -EINVAL.
 * Context: any thread, while faults run; counts are moving snapshots.
 */
USWAP_API int uswap_pager_stats_get(struct uswap_pager *p, struct uswap_pager_stats *st);

/*
 * uswap_pager_reset_latency() - forget the fault service times so far
 * (to time one phase). Context: any thread.
 */
USWAP_API void uswap_pager_reset_latency(struct uswap_pager *p);

#ifdef __cplusplus
}
#endif
#endif /* USWAP_PAGER_H */
