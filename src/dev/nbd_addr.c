// SPDX-License-Identifier: MIT
/*
 * nbd_addr.c - NBD URIs parsed and sockets connected for the nbd backend
 * (nbd_addr.h): percent-decoding of the export name and socket path,
 * bracketed IPv6 hosts, a bounded non-blocking connect(), and every
 * socket moved to fd 3 or above before libnbd gets it
 * (nbd_connect_socket()).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dev/nbd_addr.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode [@s, @s + @len) into @out (@outlen bytes with the NUL).
 * Return: 0, -EINVAL (bad escape, NUL byte, too long). */
static int pct_decode(const char *s, size_t len, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len || (hi = hexval(s[i + 1])) < 0 ||
			    (lo = hexval(s[i + 2])) < 0)
				return -EINVAL;
			c = hi << 4 | lo;
			i += 2;
		}
		if (c == 0 || o + 1 >= outlen)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* nbd+unix:///EXPORT?socket=PATH; other query keys are not ours.
 * Return: 0, -ENOTSUP (leave it to libnbd), -EINVAL. */
static int uri_parse_unix(const char *s, struct nbd_addr *a)
{
	const char *q = strchr(s, '?'), *path;
	size_t plen;

	if ((*s != '/' && *s != '?') || !q) /* a host, or no socket */
		return -EINVAL;
	if (strncmp(q + 1, "socket=", 7) || strchr(q + 1, '&'))
		return -ENOTSUP;
	if (*s == '/')
		s++;
	if (pct_decode(s, (size_t)(q - s), a->export_name, sizeof(a->export_name)))
		return -EINVAL;
	path = q + 8;
	plen = strlen(path);
	a->sun.sun_family = AF_UNIX;
	if (pct_decode(path, plen, a->sun.sun_path, sizeof(a->sun.sun_path)) ||
	    !a->sun.sun_path[0])
		return -EINVAL;
	a->is_unix = true;
	return 0;
}

/* nbd://HOST[:PORT][/EXPORT], HOST a name, an IPv4 address or [IPv6].
 * Return: 0, -ENOTSUP (user info or a query: leave it to libnbd), -EINVAL. */
static int uri_parse_tcp(const char *s, struct nbd_addr *a)
{
	size_t alen = strcspn(s, "/?#");
	const char *port = NULL, *hend = s + alen;

	if (s[alen] == '?' || s[alen] == '#' || memchr(s, '@', alen) ||
	    strchr(s + alen, '?'))
		return -ENOTSUP;
	if (*s == '[') {
		const char *rb = memchr(s, ']', alen);

		if (!rb)
			return -EINVAL;
		port = rb[1] == ':' ? rb + 2 : NULL;
		if (rb + 1 != hend && !port)
			return -EINVAL;
		if (pct_decode(s + 1, (size_t)(rb - s - 1), a->host, sizeof(a->host)))
			return -EINVAL;
	} else {
		const char *colon = memchr(s, ':', alen);

		port = colon ? colon + 1 : NULL;
		if (pct_decode(s, (size_t)((colon ? colon : hend) - s), a->host,
			       sizeof(a->host)))
			return -EINVAL;
	}
	if (!a->host[0] || (port && (port == hend || (size_t)(hend - port) >=
				     sizeof(a->port))))
		return -EINVAL;
	snprintf(a->port, sizeof(a->port), "%.*s", port ? (int)(hend - port) : 5,
		 port ? port : "10809");
	if (strspn(a->port, "0123456789") != strlen(a->port))
		return -EINVAL;
	if (*hend == '/')
		hend++;
	return pct_decode(hend, strlen(hend), a->export_name, sizeof(a->export_name));
}

int nbd_uri_parse(const char *uri, struct nbd_addr *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	if (!strncmp(uri, "nbd+unix://", 11))
		rc = uri_parse_unix(uri + 11, a);
	else if (!strncmp(uri, "nbd://", 6))
		rc = uri_parse_tcp(uri + 6, a);
	else
		rc = -ENOTSUP;
	a->parsed = rc == 0;
	return rc;
}

bool nbd_std_fds_open(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) == -1)
			return false;
	return true;
}

/* @fd moved to the lowest free descriptor >= 3 (close-on-exec); @fd is
 * closed. Return: the new fd, or -errno. */
static int fd_above_stdio(int fd)
{
	int nfd;

	if (fd >= 3)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (nfd == -1)
		nfd = -errno;
	close(fd);
	return nfd;
}

/* connect() @fd (non-blocking) to @sa, waiting at most @timeout_ms.
 * Return: 0 or -errno (-ETIMEDOUT). */
static int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len,
			   int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int err = 0, rc;
	socklen_t elen = sizeof(err);

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	do
		rc = poll(&p, 1, timeout_ms);
	while (rc == -1 && errno == EINTR);
	if (rc == 0)
		return -ETIMEDOUT;
	if (rc == -1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == -1)
		return -errno;
	return -err;
}

/* A new non-blocking socket of @family, at fd >= 3, connected to @sa.
 * Return: the fd, or -errno. */
static int sock_open(int family, const struct sockaddr *sa, socklen_t len,
		     int timeout_ms)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int rc, one = 1;

	if (fd == -1)
		return -errno;
	fd = fd_above_stdio(fd);
	if (fd < 0)
		return fd;
	if (family != AF_UNIX) /* requests are small and latency-bound */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rc = connect_bounded(fd, sa, len, timeout_ms);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int nbd_sock_connect(const struct nbd_addr *a, int timeout_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -EHOSTUNREACH;

	if (a->is_unix)
		return sock_open(AF_UNIX, (const struct sockaddr *)&a->sun,
				 sizeof(a->sun), timeout_ms);
	if (getaddrinfo(a->host, a->port, &hints, &res))
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = sock_open(ai->ai_family, ai->ai_addr, ai->ai_addrlen, timeout_ms);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	return fd;
}
