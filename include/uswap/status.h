/* SPDX-License-Identifier: MIT */
/*
 * uswap/status.h - where a running `uswap run` program publishes its
 * state for `uswap status`: one unix socket per process, PID.sock, in a
 * directory only its owner can enter. A client that connects (its uid
 * must be the server's, or root's) reads one JSON object, a line, and the
 * server closes the connection.
 *
 * The directory: $XDG_RUNTIME_DIR/uswap when XDG_RUNTIME_DIR is set, else
 * /run/uswap for root, else /tmp/uswap-UID; made with mode 0700.
 */
#ifndef USWAP_STATUS_H
#define USWAP_STATUS_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <uswap/uswap.h>

/*
 * uswap_status_dir() - the status directory for this process's user.
 * @buf, @len: receives the path (NUL-terminated).
 * Return: 0, or -ENAMETOOLONG when @len is too small.
 * Thread-safety: any thread (reads the environment).
 */
static inline int uswap_status_dir(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (xdg && *xdg)
		n = snprintf(buf, len, "%s/uswap", xdg);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/uswap");
	else
		n = snprintf(buf, len, "/tmp/uswap-%u", (unsigned int)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A server's side (uswap run's, the agent's): where _GNU_SOURCE is
 * defined (lstat(2), struct ucred). */
#ifdef _GNU_SOURCE
/*
 * uswap_status_listen() - publish @pid's status: the status directory made
 * if missing (mode 0700), and a socket listening on PID.sock there (mode
 * 0600; one left by an earlier image of the same pid is replaced).
 * @path, @len: receive the socket's path, for its server to unlink at its
 * end.
 * Return: the listening socket (SOCK_STREAM, close-on-exec), or -errno:
 * -EPERM when the directory is not this user's alone (its owner, its
 * mode, or a symlink), -ENAMETOOLONG, or socket(2)'s and bind(2)'s.
 * Thread-safety: any thread.
 */
static inline int uswap_status_listen(pid_t pid, char *path, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path) - 16];
	struct stat st;
	int fd, err;

	if (uswap_status_dir(dir, sizeof(dir)))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dir, (int)pid);
	if (strlen(sa.sun_path) >= len)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sa.sun_path, 0600) ||
	    listen(fd, 8)) {
		err = -errno;
		close(fd);
		unlink(sa.sun_path);
		return err;
	}
	memcpy(path, sa.sun_path, strlen(sa.sun_path) + 1);
	return fd;
}

/*
 * uswap_status_peer_ok() - may the client connected on @fd read the
 * status: its uid is ours, or root's (SO_PEERCRED)?
 * Thread-safety: any thread.
 */
static inline bool uswap_status_peer_ok(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
	       (cred.uid == geteuid() || cred.uid == 0);
}
#endif

/*
 * uswap_status_read_errors() - the devices of @u whose read errors grew
 * since the counts in @seen (USWAP_MAX_DEVICES of them, updated), as
 * "NAME (N read errors), ..." in @buf (NUL-terminated, "" for none): the
 * line `uswap run` says when a folio cannot be read back, in either mode.
 * Thread-safety: the caller serializes calls with one @seen.
 */
static inline void uswap_status_read_errors(struct uswap *u, uint64_t *seen, char *buf,
					    size_t len)
{
	struct uswap_device_info info;
	size_t used = 0;

	buf[0] = '\0';
	for (int type = 0; type < USWAP_MAX_DEVICES && used < len; type++) {
		if (uswap_device_info(u, type, &info) || info.read_errors == seen[type])
			continue;
		seen[type] = info.read_errors;
		used += (size_t)snprintf(buf + used, len - used, "%s%s (%llu read errors)",
					 used ? ", " : "", info.name,
					 (unsigned long long)info.read_errors);
	}
}

#endif /* USWAP_STATUS_H */
