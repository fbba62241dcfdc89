// SPDX-License-Identifier: MIT
/*
 * run_group.c - the tree's limit: one pager charge group
 * (uswap_pager_group_init()) for every process of CMD's tree, so that
 * --limit is the tree's, as a memory cgroup's memory.max is, and not once
 * per process.
 *
 * It lives in a POSIX shared memory object (/dev/shm) made here with a
 * name no other run can guess, owner-only; its name travels to the
 * agents in USWAP_RUN_GROUP, and each process's agent maps it: a forked
 * child inherits the mapping, an exec'd program maps it again by name,
 * whatever descriptors the program closed. `uswap run` reaps the charges
 * of members that ended (uswap_pager_group_reap()) every sample, and
 * removes the name when CMD ends (its guard does, if `uswap run` is
 * killed).
 */
#include "cli.h"
#include "run_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <uswap/uswap.h>

int run_group_create(uint64_t limit, struct run_group *g)
{
	uint64_t nonce = 0;
	int fd, err;

	memset(g, 0, sizeof(*g));
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		return -EIO;
	snprintf(g->name, sizeof(g->name), "/uswap-run-%d-%016llx", (int)getpid(),
		 (unsigned long long)nonce);
	fd = shm_open(g->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, USWAP_PAGER_GROUP_BYTES)) {
		err = -errno;
		goto fail;
	}
	g->mem = mmap(NULL, USWAP_PAGER_GROUP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (g->mem == MAP_FAILED) {
		err = -errno;
		g->mem = NULL;
		goto fail;
	}
	close(fd);
	return uswap_pager_group_init(g->mem, USWAP_PAGER_GROUP_BYTES, limit);
fail:
	close(fd);
	shm_unlink(g->name);
	g->name[0] = 0;
	return err;
}

void run_group_reap(struct run_group *g)
{
	if (g->mem)
		uswap_pager_group_reap(g->mem);
}

void run_group_end(struct run_group *g, struct uswap_pager_group_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!g->mem)
		return;
	uswap_pager_group_reap(g->mem);
	uswap_pager_group_stats(g->mem, st);
	munmap(g->mem, USWAP_PAGER_GROUP_BYTES);
	g->mem = NULL;
	shm_unlink(g->name);
}
