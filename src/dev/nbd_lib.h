/* SPDX-License-Identifier: MIT */
/*
 * nbd_lib.h - libnbd, loaded when the first NBD device opens.
 *
 * libnbd brings a TLS stack with it (gnutls, libxml2, ICU: 17 more
 * shared libraries). Linked into libuswap, every program that `uswap
 * run` swaps loaded all of them at each exec through the preload agent,
 * NBD device or not: 3.5 ms of the 8 ms an exec took. So the nbd backend
 * calls libnbd through this table, filled by dlopen() on first use.
 */
#ifndef USWAP_DEV_NBD_LIB_H
#define USWAP_DEV_NBD_LIB_H

#include <libnbd.h>

#define NBD_LIB_FUNCS(X)                                                        \
	X(nbd_create) X(nbd_close) X(nbd_get_error) X(nbd_get_size)             \
	X(nbd_is_read_only) X(nbd_can_flush) X(nbd_can_trim)                    \
	X(nbd_can_multi_conn) X(nbd_set_export_name)                            \
	X(nbd_set_uri_allow_transports) X(nbd_poll)                             \
	X(nbd_aio_connect_uri) X(nbd_aio_connect_socket) X(nbd_aio_disconnect)  \
	X(nbd_aio_is_ready) X(nbd_aio_is_dead) X(nbd_aio_is_closed)             \
	X(nbd_aio_in_flight) X(nbd_aio_pread) X(nbd_aio_pwrite)                 \
	X(nbd_aio_trim) X(nbd_aio_flush)

struct nbd_lib {
#define NBD_LIB_PTR(f) __typeof__(f) *f;
	NBD_LIB_FUNCS(NBD_LIB_PTR)
#undef NBD_LIB_PTR
};

/*
 * nbd_lib_get() - libnbd's functions, loaded (dlopen() of libnbd.so.0)
 * on the first call. Return: the table, the same for every call, or NULL
 * with @why (errlen bytes) saying what is missing. Thread-safe.
 */
const struct nbd_lib *nbd_lib_get(char *why, size_t errlen);

#endif
