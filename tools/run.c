// SPDX-License-Identifier: MIT
/*
 * run.c - run another program (dd, mkswap, fio) and wait for it: the one
 * child-process helper of the CLI and the benchmark harness.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child: stdin from /dev/null, stdout and stderr to @fd (or
 * /dev/null when @fd < 0, stderr then left alone), then exec. */
static void child_exec(char *const argv[], int fd)
{
	int devnull = open("/dev/null", O_RDWR);

	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	} else if (devnull >= 0) {
		dup2(devnull, STDOUT_FILENO);
	}
	execv(argv[0], argv);
	_exit(127);
}

/* Read all of @fd into @buf, growing it up to @max bytes; the rest is
 * read and dropped. Return: the new buffer (NUL-terminated) or NULL. */
static char *slurp(int fd, char *buf, size_t max)
{
	size_t len = 0, cap = 65536;

	for (;;) {
		ssize_t n;

		if (len + 1 >= cap && cap < max) {
			char *nb = realloc(buf, cap * 2);

			if (nb) {
				buf = nb;
				cap *= 2;
			}
		}
		if (len + 1 >= cap) {
			char sink[4096];

			n = read(fd, sink, sizeof(sink));
		} else {
			n = read(fd, buf + len, cap - 1 - len);
			if (n > 0)
				len += (size_t)n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
	}
	buf[len] = '\0';
	return buf;
}

int cli_run(char *const argv[], char **output, size_t max)
{
	char *buf = NULL;
	int pipefd[2] = { -1, -1 }, status;
	pid_t pid;

	if (output) {
		*output = NULL;
		if (!(buf = malloc(65536)))
			return -ENOMEM;
		if (pipe2(pipefd, O_CLOEXEC)) {
			free(buf);
			return -errno;
		}
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		if (output) {
			close(pipefd[0]);
			close(pipefd[1]);
			free(buf);
		}
		return -e;
	}
	if (pid == 0)
		child_exec(argv, pipefd[1]);
	if (output) {
		close(pipefd[1]);
		buf = slurp(pipefd[0], buf, max);
		close(pipefd[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			free(buf);
			return -errno;
		}
	if (output)
		*output = buf;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
