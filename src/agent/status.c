// SPDX-License-Identifier: MIT
/*
 * status.c - the agent's status socket (<uswap/status.h>): a thread of
 * the agent's own (internal, so nothing it does touches the region)
 * accepts connections on PID.sock and writes each client one line of
 * JSON, the same object the exit stats are made of (agent.c) plus what is
 * live (resident bytes, the command), then closes. Only the owner's uid
 * and root may read it: the directory is 0700, the socket 0600, and the
 * peer's credentials are checked (SO_PEERCRED) as well.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <uswap/status.h>

#include "agent/agent.h"

static int listen_fd = -1;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void serve(int fd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (mem) {
		agent_status_line(mem);
		fclose(mem);
	}
	for (size_t done = 0; buf && done < len;) {
		ssize_t n = send(fd, buf + done, len - done, MSG_NOSIGNAL);

		if (n <= 0)
			break;
		done += (size_t)n;
	}
	free(buf);
}

static void *status_main(void *arg)
{
	int lfd = (int)(long)arg;

	for (;;) {
		/* A client must never be the program's closed stdin. */
		int fd = agent_fd_above_stdio(accept4(lfd, NULL, NULL, SOCK_CLOEXEC));

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL; /* closed: the process is ending */
		}
		if (uswap_status_peer_ok(fd))
			serve(fd);
		close(fd);
	}
}

int agent_status_start(void)
{
	pthread_t tid;
	int fd = uswap_status_listen(getpid(), sock_path, sizeof(sock_path)), rc;

	if (fd < 0) {
		sock_path[0] = '\0';
		return fd;
	}
	rc = -agent_thread_create(&tid, status_main, (void *)(long)fd);
	if (rc) {
		close(fd);
		unlink(sock_path);
		sock_path[0] = '\0';
		return rc;
	}
	pthread_detach(tid);
	listen_fd = fd;
	return 0;
}

void agent_status_forget(void)
{
	/* A fork child: the parent's socket and path stay the parent's. */
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	sock_path[0] = '\0';
}

void agent_status_stop(void)
{
	if (sock_path[0])
		unlink(sock_path);
	sock_path[0] = '\0';
}
