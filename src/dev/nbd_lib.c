// SPDX-License-Identifier: MIT
/*
 * nbd_lib.c - libnbd loaded on first use (nbd_lib.h says why).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "dev/nbd_lib.h"

#define NBD_LIB_SONAME "libnbd.so.0"

static struct nbd_lib lib;
static const struct nbd_lib *loaded;
static char load_error[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Every function found, or none: a libnbd too old for one of them is
 * refused whole. Kept loaded for the life of the process. */
static void load(void)
{
	void *h = dlopen(NBD_LIB_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (!h) {
		snprintf(load_error, sizeof(load_error), "nbd: cannot load %s (%s): "
			 "install libnbd (Debian: libnbd0)", NBD_LIB_SONAME, dlerror());
		return;
	}
#define NBD_LIB_LOAD(f)                                                          \
	if (!missing && !(*(void **)&lib.f = dlsym(h, #f)))                      \
		missing = #f;
	NBD_LIB_FUNCS(NBD_LIB_LOAD)
#undef NBD_LIB_LOAD
	if (missing) {
		snprintf(load_error, sizeof(load_error), "nbd: %s has no %s: libnbd "
			 "1.14 or later is needed", NBD_LIB_SONAME, missing);
		dlclose(h);
		return;
	}
	loaded = &lib;
}

const struct nbd_lib *nbd_lib_get(char *why, size_t errlen)
{
	pthread_once(&once, load);
	if (!loaded && why && errlen)
		snprintf(why, errlen, "%s", load_error);
	return loaded;
}
