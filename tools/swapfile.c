// SPDX-License-Identifier: MIT
/*
 * swapfile.c - make a swap file the way a person would: fill it with
 * zeroes (dd, so it has no holes, which swapon refuses) and run util-linux
 * mkswap on it. Shared by `uswap bench io --make-file` and `uswap stress`.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *find_mkswap(void)
{
	static const char *const paths[] = { "/usr/sbin/mkswap", "/sbin/mkswap" };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

int cli_make_swap_file(const char *path, uint64_t size, char *err, size_t errlen)
{
	const char *mkswap = find_mkswap();
	char of[4200], count[64];
	int fd, rc;

	if (!mkswap) {
		snprintf(err, errlen, "mkswap not found (util-linux)");
		return -ENOENT;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s%s", path, strerror(-rc),
			 rc == -EEXIST ? " (refusing to overwrite it)" : "");
		return rc;
	}
	close(fd);
	snprintf(of, sizeof(of), "of=%s", path);
	snprintf(count, sizeof(count), "count=%llu", (unsigned long long)size);
	char *dd[] = { "/bin/dd", "if=/dev/zero", of, "bs=1M", count, "iflag=count_bytes",
		       "conv=notrunc,fsync", "status=none", NULL };
	char *mk[] = { (char *)mkswap, "-q", (char *)path, NULL };

	if ((rc = cli_run(dd, NULL, 0)) != 0) {
		snprintf(err, errlen, "dd %s failed (%s %d)", path,
			 rc < 0 ? strerror(-rc) : "exit", rc);
		return rc < 0 ? rc : -EIO;
	}
	if ((rc = cli_run(mk, NULL, 0)) != 0) {
		snprintf(err, errlen, "mkswap %s failed (%s %d)", path,
			 rc < 0 ? strerror(-rc) : "exit", rc);
		return rc < 0 ? rc : -EIO;
	}
	return 0;
}
