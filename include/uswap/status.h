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
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

#endif /* USWAP_STATUS_H */
