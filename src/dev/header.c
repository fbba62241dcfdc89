/* SPDX-License-Identifier: MIT */
/*
 * header.c - read and check the swap header util-linux mkswap writes.
 *
 * Two halves: swap_header_parse() checks bytes in memory and is pure, so
 * the fuzzer (tests/fuzz_header.c) can throw anything at it;
 * swap_header_read_file() does the I/O around it (open, size, read, holes,
 * permissions). The rules are the kernel's read_swap_header() and
 * util-linux swapon(8)'s, restated from their documented behaviour
 * (mm/swapfile.c, include/linux/swap.h, swapon(8)); where uswap differs,
 * the public header says so. Every refusal has its own message, so a user
 * can tell "not a swap area" from "made on another machine" from "too
 * small for uswap".
 */
#include "dev/header.h"
#include "dev/dev_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <unistd.h>

#define MIN_SLOTS ((uint64_t)USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS)

/* A u32 field in the host's byte order; the page need not be aligned. */
static uint32_t load32(const unsigned char *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* ------------------------------------------------------------------------
 * The signature
 * ---------------------------------------------------------------------- */

/* What hibernation leaves in the magic field of the resume device's page
 * 0 (the signatures blkid knows for swsuspend, uswsusp and TuxOnIce). */
static const struct {
	const char *sig;
	size_t len;
	const char *name;
} hibernation_sigs[] = {
	{ "S1SUSPEND", 9, "S1SUSPEND" },   /* kernel swsusp */
	{ "S2SUSPEND", 9, "S2SUSPEND" },
	{ "ULSUSPEND", 9, "ULSUSPEND" },   /* uswsusp */
	{ "LINHIB0001", 10, "LINHIB0001" },
	{ "\xed\xc3\x02\xe9\x98\x56\xe5\x0c", 8, "TuxOnIce" },
};

static const char *hibernation_signature(const unsigned char *magic)
{
	for (size_t i = 0; i < sizeof(hibernation_sigs) / sizeof(hibernation_sigs[0]); i++)
		if (!memcmp(magic, hibernation_sigs[i].sig, hibernation_sigs[i].len))
			return hibernation_sigs[i].name;
	return NULL;
}

/* The page size whose last 10 bytes hold the magic, if it is not ours.
 * mkswap -p N puts the magic at N - 10 and counts last_page in N-byte
 * pages, so such a header cannot be used here even if it were found. */
static unsigned int other_page_size(const unsigned char *p, size_t len)
{
	for (unsigned int ps = 2 * USWAP_PAGE_SIZE; ps <= SWAP_HDR_MAX_PAGE_SIZE; ps *= 2)
		if (len >= ps &&
		    !memcmp(p + ps - SWAP_HDR_MAGIC_LEN, SWAP_HDR_MAGIC, SWAP_HDR_MAGIC_LEN))
			return ps;
	return 0;
}

static int check_signature(const unsigned char *p, size_t len, char *err, size_t errlen)
{
	const unsigned char *magic = p + SWAP_HDR_MAGIC_OFF;
	const char *sig;
	unsigned int ps;

	if (!memcmp(magic, SWAP_HDR_MAGIC, SWAP_HDR_MAGIC_LEN))
		return 0;
	if (!memcmp(magic, SWAP_HDR_MAGIC_V0, SWAP_HDR_MAGIC_LEN))
		return backend_errf(err, errlen, -EINVAL,
			    "old v0 swap area (\"SWAP-SPACE\" signature), which "
			    "Linux no longer supports: run mkswap on it again");
	sig = hibernation_signature(magic);
	if (sig)
		return backend_errf(err, errlen, -EBUSY,
			    "contains a hibernation image (%s signature): resume "
			    "from it, or run mkswap on it to discard the image", sig);
	ps = other_page_size(p, len);
	if (ps)
		return backend_errf(err, errlen, -EINVAL,
			    "swap header made for page size %u, not %u: run "
			    "mkswap -p %u on it again", ps, USWAP_PAGE_SIZE,
			    USWAP_PAGE_SIZE);
	return backend_errf(err, errlen, -EINVAL,
		    "no swap signature: the last %d bytes of the first page are "
		    "not \"SWAPSPACE2\" (wrong magic; not made by mkswap?)",
		    SWAP_HDR_MAGIC_LEN);
}

/* ------------------------------------------------------------------------
 * The fields
 * ---------------------------------------------------------------------- */

static int check_version(uint32_t version, char *err, size_t errlen)
{
	if (version == 1)
		return 0;
	/* The kernel converts such a header; uswap asks for a fresh one,
	 * so that the label, uuid and bad pages are read as written. */
	if (__builtin_bswap32(version) == 1)
		return backend_errf(err, errlen, -EINVAL,
			    "swap header is byte-swapped (made on a machine of "
			    "the other endianness): run mkswap on it again here");
	return backend_errf(err, errlen, -EINVAL,
		    "unsupported swap header version %" PRIu32
		    " (only version 1, SWAPSPACE2, is supported)", version);
}

/* last_page against the area and against uswap's minimum. */
static int check_size(struct uswap_header_info *out, uint64_t area_bytes,
		      char *err, size_t errlen)
{
	uint64_t need;

	if (out->last_page == 0)
		return backend_errf(err, errlen, -EINVAL, "empty swap area (last_page is 0)");
	out->nr_slots = (uint64_t)out->last_page + 1;
	need = out->nr_slots * USWAP_PAGE_SIZE;
	if (need > area_bytes)
		return backend_errf(err, errlen, -EINVAL,
			    "last_page %" PRIu32 " is beyond the end of the area: "
			    "the header needs %" PRIu64 " bytes, the area has %"
			    PRIu64 " (swap area shorter than its header says)",
			    out->last_page, need, area_bytes);
	if (out->nr_slots < MIN_SLOTS)
		return backend_errf(err, errlen, -EINVAL,
			    "swap area too small: %" PRIu64 " slots, uswap needs "
			    "at least %" PRIu64 " (%d clusters of %u slots, %" PRIu64
			    " MiB)", out->nr_slots, MIN_SLOTS, USWAP_MIN_CLUSTERS,
			    USWAP_CLUSTER_SLOTS, (MIN_SLOTS * USWAP_PAGE_SIZE) >> 20);
	/* uswap_swapon() takes at most UINT32_MAX slots; the kernel clamps
	 * maxpages the same way when last_page + 1 overflows 32 bits. */
	if (out->nr_slots > UINT32_MAX)
		out->nr_slots = UINT32_MAX;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Bad pages: each in 1..last_page, none twice; stored sorted. */
static int read_badpages(const unsigned char *p, struct uswap_header_info *out,
			 char *err, size_t errlen)
{
	uint32_t nr = out->nr_badpages;

	for (uint32_t i = 0; i < nr; i++) {
		uint32_t page = load32(p, SWAP_HDR_BADPAGES_OFF + 4 * (size_t)i);

		if (page == 0)
			return backend_errf(err, errlen, -EINVAL,
				    "bad-page entry %" PRIu32 " is page 0, which "
				    "holds the swap header", i);
		if (page > out->last_page)
			return backend_errf(err, errlen, -EINVAL,
				    "bad-page entry %" PRIu32 " is page %" PRIu32
				    ", beyond last_page %" PRIu32, i, page,
				    out->last_page);
		out->badpages[i] = page;
	}
	qsort(out->badpages, nr, sizeof(out->badpages[0]), cmp_u64);
	for (uint32_t i = 1; i < nr; i++)
		if (out->badpages[i] == out->badpages[i - 1])
			return backend_errf(err, errlen, -EINVAL,
				    "bad page %" PRIu64 " is listed twice in the "
				    "bad-page list", out->badpages[i]);
	/* Only when nr_slots was clamped: the kernel ignores pages >= max. */
	while (nr && out->badpages[nr - 1] >= out->nr_slots)
		nr--;
	out->nr_badpages = nr;
	out->usable_slots = out->nr_slots - 1 - nr;
	return 0;
}

static void read_ids(const unsigned char *p, struct uswap_header_info *out)
{
	const uint8_t *u = p + SWAP_HDR_UUID_OFF;

	memcpy(out->uuid, u, SWAP_HDR_UUID_LEN);
	snprintf(out->uuid_str, sizeof(out->uuid_str),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
		 u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	/* mkswap -L stores at most 16 bytes, NUL-terminated only if shorter */
	memcpy(out->label, p + SWAP_HDR_LABEL_OFF, SWAP_HDR_LABEL_LEN);
	out->label[SWAP_HDR_LABEL_LEN] = '\0';
}

int swap_header_parse(const void *page, size_t page_len, uint64_t area_bytes,
		      struct uswap_header_info *out, char *err, size_t errlen)
{
	const unsigned char *p = page;
	int rc;

	if (!page || !out || page_len < USWAP_PAGE_SIZE)
		return backend_errf(err, errlen, -EINVAL,
			    "a swap header is one %u-byte page, got %zu bytes",
			    USWAP_PAGE_SIZE, page ? page_len : 0);
	memset(out, 0, sizeof(*out));
	rc = check_signature(p, page_len, err, errlen);
	if (rc)
		return rc;
	out->version = load32(p, SWAP_HDR_VERSION_OFF);
	rc = check_version(out->version, err, errlen);
	if (rc)
		return rc;
	out->last_page = load32(p, SWAP_HDR_LAST_PAGE_OFF);
	out->nr_badpages = load32(p, SWAP_HDR_NR_BAD_OFF);
	if (out->nr_badpages > USWAP_HEADER_MAX_BADPAGES)
		return backend_errf(err, errlen, -EINVAL,
			    "too many bad pages: %" PRIu32 " listed, at most %d "
			    "fit in a %u-byte header", out->nr_badpages,
			    USWAP_HEADER_MAX_BADPAGES, USWAP_PAGE_SIZE);
	rc = check_size(out, area_bytes, err, errlen);
	if (rc)
		return rc;
	rc = read_badpages(p, out, err, errlen);
	if (rc)
		return rc;
	read_ids(p, out);
	snprintf(out->byte_order, sizeof(out->byte_order), "%s",
		 __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little-endian"
							   : "big-endian");
	out->page_size = USWAP_PAGE_SIZE;
	return 0;
}

/* ------------------------------------------------------------------------
 * Files and block devices
 * ---------------------------------------------------------------------- */

static int area_size(int fd, const struct stat *st, uint64_t *bytes,
		     char *err, size_t errlen)
{
	if (S_ISREG(st->st_mode)) {
		*bytes = (uint64_t)st->st_size;
		return 0;
	}
	if (!S_ISBLK(st->st_mode))
		return backend_errf(err, errlen, -EINVAL,
			    "not a regular file or block device");
	if (ioctl(fd, BLKGETSIZE64, bytes) < 0)
		return backend_errf(err, errlen, -errno, "cannot get the block device's "
			    "size: %s", strerror(errno));
	return 0;
}

static int read_head(int fd, unsigned char *buf, size_t len, char *err, size_t errlen)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return backend_errf(err, errlen, -errno, "cannot read the swap "
				    "header: %s", strerror(errno));
		if (n == 0)
			return backend_errf(err, errlen, -EIO, "cannot read the swap "
				    "header: file ended after %zu bytes", done);
		done += (size_t)n;
	}
	return 0;
}

/*
 * Holes: util-linux swapon's test, fewer bytes allocated than the file's
 * size. SEEK_HOLE alone cannot decide: on ext4 and XFS it also reports the
 * unwritten extents of a fallocate()d file, which the kernel's swapon
 * accepts (they are mapped). It only locates the first hole for the
 * message.
 */
static int check_holes(int fd, const struct stat *st, char *err, size_t errlen)
{
	uint64_t allocated = (uint64_t)st->st_blocks * 512;
	off_t hole;

	if (allocated >= (uint64_t)st->st_size)
		return 0;
	hole = lseek(fd, 0, SEEK_HOLE);
	return backend_errf(err, errlen, -EINVAL,
		    "file has holes (%" PRIu64 " of %" PRIu64 " bytes allocated"
		    ", first hole at byte %lld); swapon refuses sparse files: "
		    "write it in full (dd if=/dev/zero or fallocate), then mkswap",
		    allocated, (uint64_t)st->st_size, (long long)hole);
}

static void __attribute__((format(printf, 4, 5)))
add_warning(struct uswap_header_info *out, char *warn, size_t warnlen,
	    const char *fmt, ...)
{
	size_t used = warn && warnlen ? strlen(warn) : 0;
	va_list ap;

	out->nr_warnings++;
	if (!warn || used + 2 >= warnlen)
		return;
	if (used)
		warn[used++] = '\n';
	va_start(ap, fmt);
	vsnprintf(warn + used, warnlen - used, fmt, ap);
	va_end(ap);
}

/* util-linux swapon(8)'s warnings: anyone who can read the area can read
 * swapped-out memory. Not refused (the kernel checks neither). */
static void check_permissions(const struct stat *st, struct uswap_header_info *out,
			      char *warn, size_t warnlen)
{
	bool blk = S_ISBLK(st->st_mode);
	unsigned int wide = blk ? 07007 : 07077;
	unsigned int want = blk ? 0660 : 0600;

	out->mode = st->st_mode & 07777;
	out->uid = st->st_uid;
	if (out->mode & wide)
		add_warning(out, warn, warnlen, "insecure permissions %04o: "
			    "others can read swapped-out memory; %04o suggested",
			    out->mode, want);
	if (!blk && st->st_uid != 0)
		add_warning(out, warn, warnlen, "insecure file owner uid %u, "
			    "0 (root) suggested", (unsigned int)st->st_uid);
}

/* Everything after open(): size, read, parse, holes, warnings. */
static int read_fd(int fd, struct uswap_header_info *out, char *err, size_t errlen,
		   char *warn, size_t warnlen)
{
	unsigned char *buf;
	struct stat st;
	uint64_t size;
	size_t len;
	int rc;

	if (fstat(fd, &st) < 0)
		return backend_errf(err, errlen, -errno, "cannot stat: %s", strerror(errno));
	rc = area_size(fd, &st, &size, err, errlen);
	if (rc)
		return rc;
	if (size < USWAP_PAGE_SIZE)
		return backend_errf(err, errlen, -EINVAL, "too small to hold a swap "
			    "header: %" PRIu64 " bytes, a page is %u", size,
			    USWAP_PAGE_SIZE);
	len = size < SWAP_HDR_MAX_PAGE_SIZE ? (size_t)size : SWAP_HDR_MAX_PAGE_SIZE;
	buf = malloc(len);
	if (!buf)
		return backend_errf(err, errlen, -ENOMEM, "out of memory");
	rc = read_head(fd, buf, len, err, errlen);
	if (!rc)
		rc = swap_header_parse(buf, len, size, out, err, errlen);
	free(buf);
	if (rc)
		return rc;
	if (S_ISREG(st.st_mode)) {
		rc = check_holes(fd, &st, err, errlen);
		if (rc)
			return rc;
	}
	out->is_block_device = S_ISBLK(st.st_mode);
	out->file_size = size;
	check_permissions(&st, out, warn, warnlen);
	return 0;
}

int swap_header_read_file(const char *path, struct uswap_header_info *out,
			  char *err, size_t errlen, char *warn, size_t warnlen)
{
	int fd, rc;

	if (warn && warnlen)
		warn[0] = '\0';
	if (!path || !out)
		return backend_errf(err, errlen, -EINVAL, "no path or no result buffer");
	/* O_NONBLOCK: a FIFO must be refused (not a file), not waited on. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return backend_errf(err, errlen, -errno, "cannot open: %s", strerror(errno));
	rc = read_fd(fd, out, err, errlen, warn, warnlen);
	close(fd);
	return rc;
}

/* ------------------------------------------------------------------------
 * Exported names (include/uswap/uswap.h)
 * ---------------------------------------------------------------------- */

USWAP_API int uswap_header_parse(const void *page, size_t page_len, uint64_t area_bytes,
				 struct uswap_header_info *out, char *err, size_t errlen)
{
	return swap_header_parse(page, page_len, area_bytes, out, err, errlen);
}

USWAP_API int uswap_header_read_file(const char *path, struct uswap_header_info *out,
				     char *err, size_t errlen, char *warn, size_t warnlen)
{
	return swap_header_read_file(path, out, err, errlen, warn, warnlen);
}
