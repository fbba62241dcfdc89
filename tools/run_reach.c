// SPDX-License-Identifier: MIT
/*
 * run_reach.c - whether the agent can reach CMD at all, said before CMD
 * starts (issue 23, item 2). `uswap run` swaps a program through its
 * preloaded agent, and the dynamic loader is what preloads it: a
 * statically linked program (no PT_INTERP: Go's default, busybox-static,
 * ldconfig) has no loader, and a program run in secure-execution mode (a
 * set-user-ID or set-group-ID file of another user or group, or one with
 * file capabilities for a user other than root) has one that ignores
 * LD_PRELOAD. Either runs, but none of its memory is swapped, and no
 * run's statistics should leave that to be guessed. A "#!" script is
 * judged by its interpreter (through /usr/bin/env too), as exec would
 * run it.
 */
#include "cli.h"
#include "run_cmd.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_SCRIPT_DEPTH 4 /* the kernel's binfmt_script allows few more */

/* @name as execvp() would find it: with a '/', itself; else the first
 * executable regular file of that name in $PATH. */
static bool resolve(const char *name, char *path, size_t len)
{
	const char *dirs = getenv("PATH");
	struct stat st;

	if (strchr(name, '/')) {
		snprintf(path, len, "%s", name);
		return true;
	}
	if (!dirs)
		dirs = "/usr/local/bin:/usr/bin:/bin";
	for (const char *d = dirs; *d;) {
		size_t n = strcspn(d, ":");

		snprintf(path, len, "%.*s/%s", (int)n, n ? d : ".", name);
		if (!stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK))
			return true;
		d += n + (d[n] == ':');
	}
	return false;
}

/* Why the loader of @path would ignore LD_PRELOAD, or NULL. */
static const char *secure_exec(const char *path, const struct stat *st, char *why, size_t len)
{
	if ((st->st_mode & S_ISUID) && st->st_uid != getuid()) {
		snprintf(why, len, "is set-user-ID (owner uid %u)", (unsigned int)st->st_uid);
		return why;
	}
	if ((st->st_mode & S_ISGID) && st->st_gid != getgid()) {
		snprintf(why, len, "is set-group-ID (group gid %u)", (unsigned int)st->st_gid);
		return why;
	}
	if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0) {
		snprintf(why, len, "has file capabilities");
		return why;
	}
	return NULL;
}

/* Whether the ELF file @fd has a program interpreter (the dynamic
 * loader). Return: 1 yes, 0 no, -1 not an ELF file we can read. */
static int has_interp(int fd)
{
	Elf64_Ehdr eh;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
		return -1;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    sizeof(ph))
			return -1;
		if (ph.p_type == PT_INTERP)
			return 1;
	}
	return 0;
}

/* A script's interpreter from its "#!" line into @interp (the program
 * /usr/bin/env runs, for "#!/usr/bin/env NAME"). Return: true if found. */
static bool script_interp(int fd, char *interp, size_t len)
{
	char line[256], *p, *arg;
	ssize_t n = pread(fd, line, sizeof(line) - 1, 0);

	if (n < 3 || line[0] != '#' || line[1] != '!')
		return false;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	p = line + 2 + strspn(line + 2, " \t");
	arg = p + strcspn(p, " \t");
	if (*arg)
		*arg++ = '\0';
	arg += strspn(arg, " \t");
	if (!strcmp(p, "/usr/bin/env") || !strcmp(p, "/bin/env")) {
		if (!strncmp(arg, "-S", 2)) /* env -S "prog args" */
			arg += 2 + strspn(arg + 2, " \t");
		arg[strcspn(arg, " \t")] = '\0';
		return *arg && resolve(arg, interp, len);
	}
	snprintf(interp, len, "%s", p);
	return *p != '\0';
}

/* Why the agent cannot reach @path, or NULL (it can, or we cannot tell:
 * exec will say). */
static const char *unreachable(const char *path, int depth, char *why, size_t len)
{
	char interp[PATH_MAX];
	struct stat st;
	const char *r = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), elf;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	if ((r = secure_exec(path, &st, why, len))) {
		close(fd);
		return r;
	}
	elf = has_interp(fd);
	if (elf == 0) {
		snprintf(why, len, "is statically linked (no dynamic loader to preload the "
			 "agent)");
		r = why;
	} else if (elf < 0 && depth < MAX_SCRIPT_DEPTH && script_interp(fd, interp, sizeof(interp))) {
		char inner[200];

		if (unreachable(interp, depth + 1, inner, sizeof(inner))) {
			snprintf(why, len, "runs under %.*s, which %s", 1024, interp, inner);
			r = why;
		}
	}
	close(fd);
	return r;
}

bool run_reach_check(const char *cmd)
{
	char path[PATH_MAX], why[1400];

	if (!resolve(cmd, path, sizeof(path)) || !unreachable(path, 0, why, sizeof(why)))
		return true;
	fprintf(stderr, "uswap run: warning: %s %s: none of its memory will be swapped or "
		"held to the limit (it runs all the same; docs/run.md, \"What is covered\")\n",
		path, why);
	return false;
}
