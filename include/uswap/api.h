/* SPDX-License-Identifier: MIT */
/*
 * uswap/api.h - USWAP_API, the mark of a function libuswap exports
 * (default visibility: the library builds with -fvisibility=hidden and
 * names its exports in src/libuswap.map). Defined once, here, for the
 * public headers that compile without <uswap/alloc.h> (<uswap/dev.h>,
 * <uswap/thread.h>) and for it; includes nothing.
 */
#ifndef USWAP_API_H
#define USWAP_API_H

#ifndef USWAP_API
#define USWAP_API __attribute__((visibility("default")))
#endif

#endif /* USWAP_API_H */
