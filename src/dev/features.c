// SPDX-License-Identifier: MIT
/*
 * features.c - which optional backends this libuswap was built with, and
 * what stands in for those it was not.
 *
 * The nbd and crypt devices and the file device's io_uring path each need
 * a library (libnbd, libsodium, liburing), and each has a meson feature
 * option (nbd, crypt, io_uring) that src/meson.build turns into
 * USWAP_HAVE_NBD, USWAP_HAVE_CRYPT and USWAP_HAVE_LIBURING (0 or 1), so
 * that a user of the allocator alone need not install them. The grammar
 * of device specs is the same in every build: a spec naming a device that
 * was left out is well formed, and dev_spec_parse() refuses it with
 * -ENOTSUP and a message naming the option that brings it back, before
 * anything tries to open it. The constructors of the devices left out are
 * defined here, refusing the same way, so that open.c and every program
 * that calls them link alike in every build. (io_uring's stand-ins are
 * file_impl.h's: without it the file device works, through pread/pwrite.)
 */
#include <errno.h>
#include <stdbool.h>

#include "dev/dev_internal.h"
#include "dev/spec.h"

#if !defined(USWAP_HAVE_NBD) || !defined(USWAP_HAVE_CRYPT) || !defined(USWAP_HAVE_LIBURING)
#error "src/meson.build defines USWAP_HAVE_NBD, USWAP_HAVE_CRYPT and USWAP_HAVE_LIBURING"
#endif

/* The kinds that may be left out, and what it takes to have them. */
static const struct {
	bool built;
	const char *option;  /* meson -D<option>=enabled */
	const char *library; /* what the device needs */
	const char *package; /* Debian's package of its headers */
} optional_kinds[DEV_KIND_MAX] = {
	[DEV_KIND_NBD] = { USWAP_HAVE_NBD, "nbd", "libnbd", "libnbd-dev" },
	[DEV_KIND_CRYPT] = { USWAP_HAVE_CRYPT, "crypt", "libsodium", "libsodium-dev" },
};

bool dev_kind_built(enum dev_kind kind)
{
	if ((unsigned int)kind >= DEV_KIND_MAX || !optional_kinds[kind].option)
		return true; /* not optional (an unknown kind is the parser's) */
	return optional_kinds[kind].built;
}

int dev_kind_refuse(enum dev_kind kind, char *err, size_t errlen)
{
	const char *name = dev_kind_name(kind);

	if (dev_kind_built(kind))
		return 0;
	return backend_errf(err, errlen, -ENOTSUP, "%s: this uswap was built without "
			    "the %s device (%s); rebuild it with the meson option "
			    "-D%s=enabled (Debian package %s)", name, name,
			    optional_kinds[kind].library, optional_kinds[kind].option,
			    optional_kinds[kind].package);
}

#if !USWAP_HAVE_NBD
int backend_nbd_open(const char *uri, unsigned int conns, unsigned int timeout_s,
		     struct backend **out, char *err, size_t errlen)
{
	(void)uri, (void)conns, (void)timeout_s, (void)out;
	return dev_kind_refuse(DEV_KIND_NBD, err, errlen);
}
#endif

#if !USWAP_HAVE_CRYPT
/* Refused: @inner is not taken, so the caller closes it, as after any
 * failure of the real one. */
int backend_crypt_open(struct backend *inner, struct backend **out, char *err, size_t errlen)
{
	(void)inner, (void)out;
	return dev_kind_refuse(DEV_KIND_CRYPT, err, errlen);
}

bool crypt_key_present(struct backend *b, uint64_t cluster)
{
	(void)b, (void)cluster;
	return false; /* there is no crypt backend to ask */
}
#endif
