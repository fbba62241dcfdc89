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

/* The directory, made 0700 if missing; refused if someone else owns it
 * or others may enter it. */
static int status_dir(char *dir, size_t len)
{
	struct stat st;

	if (uswap_status_dir(dir, len))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
	       (cred.uid == geteuid() || cred.uid == 0);
}

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
		if (peer_allowed(fd))
			serve(fd);
		close(fd);
	}
}

int agent_status_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path) - 16];
	pthread_t tid;
	int fd, rc;

	if ((rc = status_dir(dir, sizeof(dir))))
		return rc;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dir, (int)getpid());
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path); /* an exec'd image's, of this very pid */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sa.sun_path, 0600) ||
	    listen(fd, 8)) {
		rc = -errno;
		close(fd);
		unlink(sa.sun_path);
		return rc;
	}
	rc = -agent_thread_create(&tid, status_main, (void *)(long)fd);
	if (rc) {
		close(fd);
		unlink(sa.sun_path);
		return rc;
	}
	pthread_detach(tid);
	listen_fd = fd;
	memcpy(sock_path, sa.sun_path, sizeof(sock_path));
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
