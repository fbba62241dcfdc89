/* SPDX-License-Identifier: MIT */
/*
 * header.h - the swap header: page 0 of a swap area as util-linux mkswap
 * writes it (SWAPSPACE2, version 1), read and checked before swapon.
 *
 * Layout of page 0 (include/linux/swap.h union swap_header; offsets in
 * bytes, fields in the byte order of the machine that ran mkswap):
 *
 *      0  bootbits[1024]   left alone for boot loaders and disk labels
 *   1024  u32 version      1
 *   1028  u32 last_page    last page of the area; slots are 0..last_page
 *   1032  u32 nr_badpages  entries used in badpages[]
 *   1036  u8  uuid[16]     for blkid / swapon -U only
 *   1052  u8  label[16]    for blkid / swapon -L only
 *   1068  u32 padding[117]
 *   1536  u32 badpages[637]
 *   4086  char magic[10]   "SWAPSPACE2", no NUL
 *
 * The result, struct uswap_header_info, is the public type in
 * include/uswap/uswap.h: nr_slots and badpages go straight into
 * uswap_swapon_args. uswap_header_parse() and uswap_header_read_file()
 * are the exported names of the two functions below.
 */
#ifndef USWAP_DEV_HEADER_H
#define USWAP_DEV_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include <uswap/uswap.h>

#define SWAP_HDR_VERSION_OFF   1024
#define SWAP_HDR_LAST_PAGE_OFF 1028
#define SWAP_HDR_NR_BAD_OFF    1032
#define SWAP_HDR_UUID_OFF      1036
#define SWAP_HDR_LABEL_OFF     1052
#define SWAP_HDR_BADPAGES_OFF  1536
#define SWAP_HDR_UUID_LEN      16
#define SWAP_HDR_LABEL_LEN     16
#define SWAP_HDR_MAGIC_LEN     10
#define SWAP_HDR_MAGIC_OFF     (USWAP_PAGE_SIZE - SWAP_HDR_MAGIC_LEN)
#define SWAP_HDR_MAGIC         "SWAPSPACE2"
#define SWAP_HDR_MAGIC_V0      "SWAP-SPACE"

/* Largest page size whose header is recognised (to name it, not to use
 * it): read this many bytes when the area has them. */
#define SWAP_HDR_MAX_PAGE_SIZE 65536u

_Static_assert((SWAP_HDR_MAGIC_OFF - SWAP_HDR_BADPAGES_OFF) / 4 ==
	       USWAP_HEADER_MAX_BADPAGES, "bad-page list room (MAX_SWAP_BADPAGES)");

/*
 * swap_header_parse() - check page 0 of a swap area held in memory.
 * @page, @page_len: the first bytes of the area, at least USWAP_PAGE_SIZE;
 *     up to SWAP_HDR_MAX_PAGE_SIZE to name a header made for a larger page.
 * @area_bytes: size of the whole area in bytes.
 * @out: filled on success (the file fields left 0).
 * @err, @errlen: one-line reason on error; @err may be NULL.
 * Checks, in order (the kernel's read_swap_header() order where it has the
 * rule): signature (v0 "SWAP-SPACE", hibernation images and headers for
 * other page sizes get their own message), version 1 (a byte-swapped
 * header is named as such), last_page > 0, nr_badpages <= 637, the area
 * holds last_page + 1 pages, at least USWAP_MIN_CLUSTERS clusters of slots,
 * each bad page in 1..last_page and listed once.
 * Return: 0; -EINVAL; -EBUSY (hibernation image). Pure: no I/O, no
 * allocation, any thread; safe on any input (fuzzed by tests/fuzz_header.c).
 */
int swap_header_parse(const void *page, size_t page_len, uint64_t area_bytes,
		      struct uswap_header_info *out, char *err, size_t errlen);

/*
 * swap_header_read_file() - open @path read-only, read its first
 * SWAP_HDR_MAX_PAGE_SIZE bytes (fewer if it is smaller) and check them with
 * swap_header_parse(); then refuse a regular file with holes and collect
 * the util-linux swapon(8) warnings (permissions, owner) in @warn, one per
 * line. Messages do not repeat @path.
 * Return: 0; swap_header_parse()'s errors; -EINVAL (not a regular file or
 * block device, smaller than a page, holes); -EIO (short read); -errno of
 * open/fstat/pread/ioctl(BLKGETSIZE64). Any thread.
 */
int swap_header_read_file(const char *path, struct uswap_header_info *out,
			  char *err, size_t errlen, char *warn, size_t warnlen);

#endif /* USWAP_DEV_HEADER_H */
