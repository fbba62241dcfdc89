/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the preload agent of `uswap run` (libuswap-preload.so).
 *
 * Loaded into an unmodified program with LD_PRELOAD, the agent makes the
 * program's heap live in one pager region kept under the resident limit:
 * at load it builds a swap instance with the devices `uswap run` named
 * (agent.c), maps the region and hands it to mimalloc as an exclusive
 * arena, and replaces the whole malloc family (malloc.c) with heaps in
 * that arena, and plain private anonymous mmap()s (mmap.c) with blocks of
 * it. glibc (2.34+) has no malloc hooks, so the family itself is
 * interposed; mimalloc (Debian's libmimalloc2.0) allocates inside memory
 * it is handed, which is why it is used and not our own allocator.
 *
 * What must never be evicted is not in the region: the library's and the
 * agent's own allocations (the pager's handler and reclaim threads, the
 * swap cache, zram's pool, mimalloc's heap descriptors) go to glibc's
 * allocator. A thread is "internal" while the agent works (t_internal)
 * and for its whole life when the pager started it.
 *
 * fork(): the kernel drops a child's userfaultfd registration, so a page
 * the pager had swapped out would read as zeros in the child. Before a
 * fork the agent has the pager bring every folio in and hold it there
 * (uswap_pager_hold(): over the limit, no eviction), released after.
 * The child forgets the parent's pager (its threads are not in the child),
 * builds a swap instance and pager of its own on the memory devices, and
 * adopts its copy of the heap: the limit is per process. A child that
 * cannot runs on resident and unswapped ("detached").
 *
 * Stats: every process with a pager appends one JSON line to the stats
 * file when it ends (exit() or _exit()) and before it execs another
 * program (exec.c); `uswap run` adds them up, one per pid and image. While
 * it runs, the same line, live, is on its status socket (status.c).
 */
#ifndef USWAP_AGENT_AGENT_H
#define USWAP_AGENT_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Environment `uswap run` sets for the agent. */
#define AGENT_ENV_LIMIT   "USWAP_RUN_LIMIT"   /* resident bytes */
#define AGENT_ENV_DEVICES "USWAP_RUN_DEVICES" /* specs, one per line */
#define AGENT_ENV_ORDER   "USWAP_RUN_ORDER"   /* folio order 0..4 */
#define AGENT_ENV_READAHEAD "USWAP_RUN_READAHEAD" /* pages, 0..64 */
#define AGENT_ENV_WORKINGSET "USWAP_RUN_WORKINGSET" /* 0: --no-workingset */
#define AGENT_ENV_REGION  "USWAP_RUN_REGION"  /* heap bytes to reserve */
#define AGENT_ENV_STATS   "USWAP_RUN_STATS"   /* file for the exit stats */
#define AGENT_ENV_ROOT    "USWAP_RUN_ROOT"    /* pid that writes them */
#define AGENT_ENV_TRACE   "USWAP_RUN_TRACE"   /* trace file (root only) */
#define AGENT_ENV_TRACE_T0 "USWAP_RUN_TRACE_T0" /* its time zero, for the
						   programs root execs */
#define AGENT_ENV_STARTED "USWAP_RUN_STARTED" /* set by the agent: the
						 first image has started */
#define AGENT_ENV_GROUP   "USWAP_RUN_GROUP"   /* /dev/shm name of the tree's
						 charge group (tools/run_group.c) */

struct agent {
	_Atomic bool ready;     /* the region is the heap */
	bool detached;          /* a fork's child: no pager any more */
	char *base;             /* the region */
	size_t size;
	int arena;              /* mimalloc arena id of the region */
	struct uswap *u;
	struct uswap_pager *p;
	char *specs[32];        /* device specs, for a fork child's devices */
	unsigned int nr_devs;
	uint64_t limit;         /* resident bytes: the tree's with a group */
	void *group;            /* the tree's charge group, mapped (a fork's
				   child inherits it), or NULL: the limit is
				   this process's alone */
	unsigned int order;
	unsigned int readahead; /* pages (uswap run --readahead) */
	bool no_workingset;     /* uswap run --no-workingset */
	pid_t pid;              /* the process the pager works for */
	bool remote;            /* the pager is uswap run's (--daemon, daemon.c):
				   agent.u and agent.p are NULL */
	_Atomic unsigned long fallbacks; /* allocations the region could not
				     take, served by glibc instead */
};

/* In a fork child that kept its parent's instance: from now on, the
 * counters it reports are its own (agent.c). */
void agent_stats_fork(void);

extern struct agent agent;
/* The agent's thread-local variables use the initial-exec model: read
 * at a fixed offset from the thread pointer. The default model for a
 * shared library calls __tls_get_addr(), which reads the thread's DTV,
 * and ld.so allocates a program thread's DTV with malloc: region memory
 * that may be swapped out. A program thread that reads t_internal while
 * it holds the pager's lock (adopt.c) would then fault on a page only
 * the blocked handlers can bring in. The library is preloaded, so its
 * TLS is static and the model applies. */
#define AGENT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

extern AGENT_TLS int t_internal; /* >0: this thread's allocations
				    never go to the region */

/* Whether @p points into the region (a region allocation). */
static inline bool agent_owns(const void *p)
{
	return p && (const char *)p >= agent.base && (const char *)p < agent.base + agent.size;
}

struct mi_heap_s;

/* malloc.c: the calling thread's heap in the region (made on first use),
 * or NULL when this thread or call must use glibc. */
struct mi_heap_s *agent_heap(void);

/* mmap.c: the next library's mmap family (libc's), or the system calls. */
extern void *(*agent_real_mmap)(void *, size_t, int, int, int, off_t);
extern int (*agent_real_munmap)(void *, size_t);
extern void *(*agent_real_mremap)(void *, size_t, size_t, int, ...);
extern int (*agent_real_madvise)(void *, size_t, int);
extern int (*agent_real_mprotect)(void *, size_t, int);

/* adopt.c: the mmap family on memory outside the region heap: the
 * kernel's call, with the program's own anonymous mappings adopted as
 * regions and their changes passed to the pager. Same returns and errno
 * as the calls. Context: any thread; internal ones go straight through. */
void *agent_adopt_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int agent_adopt_munmap(void *addr, size_t len);
int agent_adopt_mprotect(void *addr, size_t len, int prot);
int agent_adopt_madvise(void *addr, size_t len, int advice);
void *agent_adopt_mremap(void *old, size_t old_len, size_t new_len, int flags, void *fixed);
/* adopt.c: hold the table across a fork (agent.c's handlers); in the
 * child, once it has a pager (or is detached), adopt its copies. */
void agent_adopt_lock(void);
void agent_adopt_unlock(void);
void agent_adopt_child(void);
/* adopt.c: regions adopted now. */
size_t agent_adopt_count(void);

/* malloc.c: find ld.so, whose allocations stay glibc's; before the agent
 * is ready. */
void agent_malloc_init(void);
/* mmap.c: look up the kernel's mmap family, before the agent is ready. */
void agent_mmap_init(void);
/* mmap.c: hold the table of mappings across a fork (agent.c's handlers). */
void agent_mmap_lock(void);
void agent_mmap_unlock(void);

/* Let go of region memory [@p, @p + @len) the program no longer needs:
 * it reads as zeros after, and costs neither charge nor swap. Context:
 * any program thread; t_internal is raised around the pager call. */
void agent_discard(void *p, size_t len);

/* agent.c: at exit() and _exit(): the status socket goes, the stats line
 * is written; nothing in a vfork() child. */
void agent_exit(void);
/* agent.c: before an exec (exec.c): this image's stats line is written;
 * should the exec fail, the one at exit supersedes it. */
void agent_before_exec(void);
/* agent.c: this process's stats line, live (status.c). */
void agent_status_line(FILE *f);
/* agent.c: start an internal thread, on a stack of its own. Return: 0 or
 * a positive errno, as pthread_create(). */
int agent_thread_create(pthread_t *th, void *(*fn)(void *), void *arg);

/* pager_ops.c: the pager calls, to agent.p or to uswap run (--daemon);
 * same returns as the uswap_region_* and uswap_pager_hold/release calls. */
bool agent_has_pager(void);
int agent_pg_adopt(void *addr, size_t len);
int agent_pg_disown(void *addr);
int agent_pg_replaced(void *addr, size_t len, bool anon);
int agent_pg_mlock(void *addr, size_t len);
int agent_pg_munlock(void *addr, size_t len);
int agent_pg_discard(void *addr, size_t len);
int agent_pg_hold(void);
void agent_pg_release(void);

/* daemon.c: connect to uswap run at abstract socket @name, hand it our
 * userfaultfd and start the zap thread; agent.remote on success. Return:
 * 0 or -errno. */
int agent_daemon_connect(const char *name, uint64_t image_ns);
/* One request (enum uswap_daemon_op) and its answer; uswap run gone ends
 * the process. Context: any thread. */
long agent_daemon_call(unsigned int op, void *addr, size_t len, uint64_t arg);
/* Around fork(): no request half sent in the child. */
void agent_daemon_fork_lock(void);
void agent_daemon_fork_unlock(void);
/* In a fork child: drop the parent's connection (it stays the parent's). */
void agent_daemon_forget(void);

/* fd.c: @fd moved to 3 or above (close-on-exec), the original closed;
 * any other @fd is returned as it is. Return: the descriptor, or -1 with
 * errno (@fd is closed then). Context: any thread. */
int agent_fd_above_stdio(int fd);
/* fd.c: hold each closed standard descriptor (0-2) with /dev/null, so
 * that what the library opens next lands at 3 or above. Return: the mask
 * of those held, for agent_stdio_release(), which closes them again.
 * Context: the process has one thread (the constructor, a fork child). */
unsigned int agent_stdio_hold(void);
void agent_stdio_release(unsigned int held);

/* streams.c: glibc's list of streams across a fork (the file's header
 * says why). agent_streams_lock()/_unlock(): its lock, taken before the
 * pager's for the fork; _reset(): unlocked in a child (one thread).
 * agent_streams_in(): each FILE and its lock read in; _mapped(): whether
 * they all still are. Called with the list locked. */
void agent_streams_lock(void);
void agent_streams_unlock(void);
void agent_streams_reset(void);
void agent_streams_in(void);
bool agent_streams_mapped(void);

/* status.c: publish this process's state on its status socket
 * (<uswap/status.h>). Return: 0 or -errno (nothing published). */
int agent_status_start(void);
/* status.c: in a fork child, let go of the parent's socket (not its file). */
void agent_status_forget(void);
/* status.c: remove this process's socket file. */
void agent_status_stop(void);

#endif /* USWAP_AGENT_AGENT_H */
