/* SPDX-License-Identifier: MIT */
/*
 * nbd_addr.h - where an NBD backend's server is, and sockets to it made
 * here rather than by libnbd (nbd_addr.c): the two URI forms the backend
 * connects to itself, and connected sockets at fd 3 or above, so that a
 * program with closed standard streams never has a socket as its stdout.
 */
#ifndef USWAP_DEV_NBD_ADDR_H
#define USWAP_DEV_NBD_ADDR_H

#include <stdbool.h>
#include <sys/un.h>

#define NBD_EXPORT_MAX 4096 /* the NBD protocol's limit on export names */

/* Where the server is, parsed from the URI (nbd_uri_parse()); set at open,
 * read-only after. */
struct nbd_addr {
	bool parsed;            /* false: libnbd parses the URI (fallback) */
	bool is_unix;
	struct sockaddr_un sun; /* is_unix */
	char host[256];         /* TCP: name or address, no brackets */
	char port[16];          /* TCP: "10809" when not given */
	char export_name[NBD_EXPORT_MAX + 1];
};

/*
 * nbd_uri_parse() - the two URI forms connected here:
 * nbd+unix:///EXPORT?socket=PATH and nbd://HOST[:PORT]/EXPORT.
 * Return: 0 (@a filled in), -ENOTSUP (another form: nbds://, vsock, TLS
 * or other query parameters; libnbd may still take it), -EINVAL
 * (malformed). Thread-safe.
 */
int nbd_uri_parse(const char *uri, struct nbd_addr *a);

/* Are fds 0, 1 and 2 all open (so no new descriptor can be one)? */
bool nbd_std_fds_open(void);

/*
 * nbd_sock_connect() - a socket connected to the server of @a, at fd 3
 * or above, close-on-exec and non-blocking. Each address getaddrinfo()
 * gives is tried for at most @timeout_ms.
 * Return: the fd, or -errno (-EHOSTUNREACH: the name did not resolve;
 * -ETIMEDOUT). Thread-safe.
 */
int nbd_sock_connect(const struct nbd_addr *a, int timeout_ms);

#endif /* USWAP_DEV_NBD_ADDR_H */
