// SPDX-License-Identifier: MIT
/*
 * run_tree.c - CMD's process tree as the kernel sees it, for `uswap run`'s
 * statistics: every RUN_TREE_PERIOD_MS the anonymous resident memory
 * of every process below `uswap run` but its guard, found through
 * /proc/PID/task/TID/children, summed two ways: RssAnon (/proc/PID/status:
 * a page shared copy-on-write after a fork counts in each process) and
 * Pss_Anon (/proc/PID/smaps_rollup: a shared page split between its
 * sharers, so the sum counts it once, as a memory cgroup charges it).
 * `uswap run` is the tree's child subreaper (PR_SET_CHILD_SUBREAPER), so
 * a daemonized grandchild stays below it instead of going to init.
 *
 * Why: the agents' counters say what their pagers held, and nothing about
 * memory outside them (a JVM's or V8's heap, memory mapped by raw system
 * calls, the in-process zram pool). The tree's anonymous RSS is what a
 * memory cgroup's memory.max would be held against; its peak beside the
 * pagers' is what tells the user how much of the program uswap did not
 * manage.
 */
#include "run_cmd.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_TREE_MAX_PROCS 4096 /* a walk stops there */

/* The children of every thread of @pid, appended to @pids. */
static void add_children(pid_t pid, pid_t *pids, unsigned int *n)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return; /* gone meanwhile */
	while ((d = readdir(dir)) && *n < RUN_TREE_MAX_PROCS) {
		char file[300];
		long child;
		FILE *f;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%s/children", (int)pid, d->d_name);
		f = fopen(file, "re");
		if (!f)
			continue;
		while (*n < RUN_TREE_MAX_PROCS && fscanf(f, "%ld", &child) == 1)
			pids[(*n)++] = (pid_t)child;
		fclose(f);
	}
	closedir(dir);
}

/* The "KEY: N kB" line of /proc/@pid/@file in bytes; 0 when the process
 * is gone or a zombie. */
static uint64_t proc_kb(pid_t pid, const char *file, const char *key)
{
	char path[64], line[128];
	size_t len = strlen(key);
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && sscanf(line + len, " %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

void run_tree_sample(struct run_tree *t)
{
	static pid_t pids[RUN_TREE_MAX_PROCS];
	unsigned int n = 0, procs = 0;
	uint64_t sum = 0, pss = 0;

	add_children(t->top, pids, &n);
	for (unsigned int i = 0; i < n; i++) {
		if (pids[i] == t->skip)
			continue;
		add_children(pids[i], pids, &n);
		sum += proc_kb(pids[i], "status", "RssAnon:");
		pss += proc_kb(pids[i], "smaps_rollup", "Pss_Anon:");
		procs++;
	}
	t->samples++;
	if (sum > t->anon_peak)
		t->anon_peak = sum;
	if (pss > t->pss_peak)
		t->pss_peak = pss;
	if (procs > t->procs_peak)
		t->procs_peak = procs;
}
