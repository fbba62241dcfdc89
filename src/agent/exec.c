// SPDX-License-Identifier: MIT
/*
 * exec.c - the exec family, interposed so that a program's counters are
 * not lost when it execs another: the image's stats line is written just
 * before (agent_before_exec()); if the exec fails, the line written at
 * exit supersedes it (`uswap run` keeps one line per pid and image).
 *
 * Each public entry point is interposed, as a program calls it through
 * the PLT; glibc's own exec calls inside execvp() and execl() go to its
 * internal __execve and are not seen twice. posix_spawn(), system() and
 * popen() do not replace this image and are left alone; neither is a
 * vfork() child's exec (agent_write_stats() skips it: the parent's
 * memory, another pid).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "agent/agent.h"

#define VISIBLE __attribute__((visibility("default")))

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

/* libc's definitions, looked up at load: never at exec time, which may be
 * in a vfork() child, where dlsym() could allocate in the parent's heap. */
static execve_fn real_execve, real_execvpe;
static execv_fn real_execv, real_execvp;
static fexecve_fn real_fexecve;

__attribute__((constructor)) static void exec_init(void)
{
	real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
	real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
	real_execv = (execv_fn)dlsym(RTLD_NEXT, "execv");
	real_execvp = (execv_fn)dlsym(RTLD_NEXT, "execvp");
	real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
}

VISIBLE int execve(const char *path, char *const argv[], char *const envp[])
{
	if (!real_execve)
		return errno = ENOSYS, -1;
	agent_before_exec();
	return real_execve(path, argv, envp);
}

VISIBLE int execv(const char *path, char *const argv[])
{
	if (!real_execv)
		return errno = ENOSYS, -1;
	agent_before_exec();
	return real_execv(path, argv);
}

VISIBLE int execvp(const char *file, char *const argv[])
{
	if (!real_execvp)
		return errno = ENOSYS, -1;
	agent_before_exec();
	return real_execvp(file, argv);
}

VISIBLE int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (!real_execvpe)
		return errno = ENOSYS, -1;
	agent_before_exec();
	return real_execvpe(file, argv, envp);
}

VISIBLE int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!real_fexecve)
		return errno = ENOSYS, -1;
	agent_before_exec();
	return real_fexecve(fd, argv, envp);
}

/* The execl family: the arguments as an array (on the stack: the limit is
 * the kernel's, ARG_MAX, and an exec must not allocate in the heap it is
 * leaving), then the execv call above. @envp: set for execle. */
#define LIST_MAX 4096

static int list_to_argv(const char *arg0, va_list ap, char **argv, char ***envp)
{
	int n = 0;

	argv[n++] = (char *)arg0;
	while (argv[n - 1]) {
		if (n == LIST_MAX)
			return -1;
		argv[n++] = va_arg(ap, char *);
	}
	if (envp)
		*envp = va_arg(ap, char **);
	return 0;
}

VISIBLE int execl(const char *path, const char *arg, ...)
{
	char *argv[LIST_MAX];
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = list_to_argv(arg, ap, argv, NULL);
	va_end(ap);
	return rc ? (errno = E2BIG, -1) : execv(path, argv);
}

VISIBLE int execlp(const char *file, const char *arg, ...)
{
	char *argv[LIST_MAX];
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = list_to_argv(arg, ap, argv, NULL);
	va_end(ap);
	return rc ? (errno = E2BIG, -1) : execvp(file, argv);
}

VISIBLE int execle(const char *path, const char *arg, ...)
{
	char *argv[LIST_MAX], **envp;
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = list_to_argv(arg, ap, argv, &envp);
	va_end(ap);
	return rc ? (errno = E2BIG, -1) : execve(path, argv, envp);
}
