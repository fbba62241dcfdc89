// SPDX-License-Identifier: MIT
/*
 * fd.c - the agent's descriptors stay above the standard streams.
 *
 * A program may run with stdin, stdout or stderr closed (`prog 1>&-`).
 * open(2) returns the lowest free descriptor, so a swap file, a socket or
 * a userfaultfd the agent made could become fd 0, 1 or 2, and the
 * program's write(1, ...) would land in the swap file instead of failing
 * with EBADF. Descriptors the agent opens itself are moved to 3 or above
 * (agent_fd_above_stdio()); those made inside the library or its
 * dependencies (liburing, libnbd, eventfd) are made while the closed
 * standard descriptors are held by /dev/null (agent_stdio_hold()), which
 * are closed again afterwards, so the program sees its streams as it left
 * them. The hold is only taken where the process has one thread: the
 * agent's constructor and a fork's child.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/agent.h"

int agent_fd_above_stdio(int fd)
{
	int high;

	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return high; /* -1 with errno from fcntl */
}

unsigned int agent_stdio_hold(void)
{
	unsigned int held = 0;

	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* Every lower one is open now: open(2) returns exactly fd. */
		int null = open("/dev/null", O_RDWR);

		if (null == fd)
			held |= 1u << fd;
		else if (null >= 0)
			close(null);
	}
	return held;
}

void agent_stdio_release(unsigned int held)
{
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
		if (held & (1u << fd))
			close(fd);
}
