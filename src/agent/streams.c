// SPDX-License-Identifier: MIT
/*
 * streams.c - glibc's list of open streams across a fork.
 *
 * glibc's fork() does two things with the list of FILEs after the atfork
 * handlers have run:
 *  - in the parent, it takes the list's lock. A program thread walking
 *    the list (fopen, fclose, fflush(NULL)) holds that lock while it
 *    reads the FILEs, which live in the heap, and can fault there with it
 *    held. Once the pager stops serving faults for the fork (in-process:
 *    uswap_pager_fork_prepare() write-holds its lock) such a thread waits
 *    for the fork, and the fork for it. So the agent takes the lock
 *    first, while faults are still served (agent_streams_lock()); it is
 *    recursive, and glibc's own take then passes.
 *  - in the child, before any handler runs, it walks the list and
 *    re-initialises each stream's lock (fresetlockfiles()): it reads each
 *    FILE and writes its lock. A stream swapped out in the parent reads
 *    as zeros in the child, where nothing serves the range yet: a null
 *    lock pointer, a crash. So each stream and its lock are read in
 *    (agent_streams_in()) and, once eviction has stopped for the fork,
 *    checked to be still mapped (agent_streams_mapped()): the fork then
 *    copies them as they are.
 * The names are glibc's exported internals (libc.so.6, GLIBC_2.2.5).
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/agent.h"

extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);
extern void _IO_list_resetlock(void);
extern FILE *_IO_list_all; /* struct _IO_FILE_plus *: a FILE first */

void agent_streams_lock(void)
{
	_IO_list_lock();
}

void agent_streams_unlock(void)
{
	_IO_list_unlock();
}

void agent_streams_reset(void)
{
	_IO_list_resetlock();
}

/* @f's lock where glibc's child resets it: NULL for a stream its user
 * locks himself (__fsetlocking()). Read through volatile: the point is
 * the read. */
static void *stream_lock(FILE *f)
{
	volatile FILE *v = f;

	return (v->_flags & _IO_USER_LOCK) ? NULL : v->_lock;
}

static FILE *stream_next(FILE *f)
{
	return ((volatile FILE *)f)->_chain;
}

void agent_streams_in(void)
{
	for (FILE *f = _IO_list_all; f; f = stream_next(f)) {
		void *lock = stream_lock(f);

		if (lock)
			(void)*(volatile char *)lock;
	}
}

/* Whether each page of [@addr, +@len) is mapped in this process. */
static bool range_mapped(const void *addr, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)addr & ~(page - 1);
	uintptr_t hi = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	unsigned char vec[2];

	for (; lo < hi; lo += 2 * page) {
		size_t n = hi - lo < 2 * page ? hi - lo : 2 * page;

		if (mincore((void *)lo, n, vec) || !(vec[0] & 1) ||
		    (n > page && !(vec[1] & 1)))
			return false;
	}
	return true;
}

bool agent_streams_mapped(void)
{
	/* Each FILE is looked at only once mincore() says it is mapped:
	 * with the pager's lock held for the fork, a fault here could wait
	 * behind another thread's (the handler that reads ours may be
	 * waiting for the lock with that one). */
	for (FILE *f = _IO_list_all; f; f = stream_next(f)) {
		void *lock;

		if (!range_mapped(f, sizeof(*f)))
			return false;
		lock = stream_lock(f);
		if (lock && !range_mapped(lock, 16))
			return false;
	}
	return true;
}
