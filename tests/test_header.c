/* SPDX-License-Identifier: MIT */
/*
 * Description: swap headers made by the real util-linux mkswap are
 * accepted with the slot count, bad pages, label and uuid they hold, and
 * every malformed header (made by patching a real one) is refused with its
 * own message: each refusal test asserts the errno and a substring no other
 * refusal uses. Needs /usr/sbin/mkswap (skips without it). Files live in a
 * temporary directory removed by the teardown.
 */
#include "t_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE        USWAP_PAGE_SIZE
#define MiB         (1024 * 1024)
#define OFF_VERSION 1024
#define OFF_LAST    1028
#define OFF_NR_BAD  1032
#define OFF_BAD     1536
#define OFF_MAGIC   (PAGE - 10)

struct fixture {
	char dir[64];
	char path[128]; /* the file of the running test */
	char loopdev[64]; /* a loop device to detach, or "" */
	struct uswap_header_info info;
	char err[512];
	char warn[512];
};

static const char *mkswap_path(void)
{
	static const char *const paths[] = { "/usr/sbin/mkswap", "/sbin/mkswap" };

	for (size_t i = 0; i < T_ARRAY_SIZE(paths); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/uswap-test-header.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/swap", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct dirent *de;
	DIR *d = opendir(f->dir);
	char name[512];

	if (f->loopdev[0]) {
		snprintf(name, sizeof(name), "losetup -d '%s'", f->loopdev);
		if (system(name) != 0)
			fprintf(stderr, "could not detach %s\n", f->loopdev);
	}
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "%s/%s", f->dir, de->d_name);
		unlink(name);
	}
	if (d)
		closedir(d);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ------------------------------------------------------------------
 * Making and patching files
 * ------------------------------------------------------------------ */

/* A file of @bytes: written in full, or (sparse) only sized. Mode 0600. */
static void make_file(const char *path, uint64_t bytes, bool sparse)
{
	static char zeros[MiB];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	t_true(fd >= 0);
	if (sparse) {
		t_eq(ftruncate(fd, (off_t)bytes), 0);
	} else {
		for (uint64_t done = 0; done < bytes;) {
			size_t n = bytes - done < sizeof(zeros) ? bytes - done : sizeof(zeros);

			t_eq(write(fd, zeros, n), (ssize_t)n);
			done += n;
		}
	}
	t_eq(fchmod(fd, 0600), 0);
	t_eq(close(fd), 0);
}

/* Run mkswap -q @args on @path; skips the test when mkswap is absent. */
static void mkswap(const char *path, const char *args)
{
	const char *prog = mkswap_path();
	char cmd[512];

	if (!prog)
		t_skip("util-linux mkswap not found in /usr/sbin or /sbin");
	snprintf(cmd, sizeof(cmd), "%s -q %s '%s' >/dev/null 2>&1", prog, args, path);
	if (system(cmd) != 0)
		fail_msg("'%s' failed", cmd);
}

/* A written-out file of @bytes with a mkswap header. */
static const char *swapfile(struct fixture *f, uint64_t bytes, const char *args)
{
	make_file(f->path, bytes, false);
	mkswap(f->path, args);
	return f->path;
}

static void patch(const char *path, off_t off, const void *bytes, size_t len)
{
	int fd = open(path, O_WRONLY);

	t_true(fd >= 0);
	t_eq(pwrite(fd, bytes, len, off), (ssize_t)len);
	t_eq(close(fd), 0);
}

static void patch32(const char *path, off_t off, uint32_t v)
{
	patch(path, off, &v, sizeof(v));
}

/* Bad-page list: nr_badpages and the entries. */
static void patch_badpages(const char *path, const uint32_t *pages, uint32_t nr)
{
	patch32(path, OFF_NR_BAD, nr);
	for (uint32_t i = 0; i < nr; i++)
		patch32(path, OFF_BAD + 4 * (off_t)i, pages[i]);
}

/* ------------------------------------------------------------------
 * Checking
 * ------------------------------------------------------------------ */

static void expect_accepted(struct fixture *f)
{
	int rc = uswap_header_read_file(f->path, &f->info, f->err, sizeof(f->err),
					f->warn, sizeof(f->warn));

	if (rc)
		fail_msg("%s refused (%s): %s", f->path, t_errname(rc), f->err);
}

static void expect_refused(struct fixture *f, int rc_want, const char *needle)
{
	int rc = uswap_header_read_file(f->path, &f->info, f->err, sizeof(f->err),
					f->warn, sizeof(f->warn));

	t_eq(rc, rc_want);
	if (!strstr(f->err, needle))
		fail_msg("message \"%s\" does not say \"%s\"", f->err, needle);
}

/* ------------------------------------------------------------------
 * Accepted
 * ------------------------------------------------------------------ */

static void check_plain(struct fixture *f, uint64_t bytes)
{
	uint64_t slots = bytes / PAGE;

	swapfile(f, bytes, "");
	expect_accepted(f);
	t_eq(f->info.version, 1);
	t_eq_u64(f->info.last_page, slots - 1);
	t_eq_u64(f->info.nr_slots, slots);
	t_eq_u64(f->info.usable_slots, slots - 1);
	t_eq(f->info.nr_badpages, 0);
	t_eq_u64(f->info.file_size, bytes);
	t_eq(f->info.page_size, PAGE);
	t_true(!f->info.is_block_device);
	t_eq(strlen(f->info.uuid_str), 36);
	t_eq(f->info.label[0], '\0');
}

static void test_mkswap_4mib_is_accepted_with_1024_slots(void **state)
{
	check_plain(*state, 4 * MiB);
}

static void test_mkswap_8mib_and_64mib_are_accepted_whole(void **state)
{
	check_plain(*state, 8 * MiB);
	check_plain(*state, 64 * MiB);
}

/* Not a multiple of the cluster, nor of the page: the tail is unused. */
static void test_mkswap_odd_size_uses_whole_pages_only(void **state)
{
	struct fixture *f = *state;
	uint64_t bytes = 5 * MiB + 3 * PAGE + 100;

	swapfile(f, bytes, "");
	expect_accepted(f);
	t_eq_u64(f->info.nr_slots, bytes / PAGE);
	t_eq_u64(f->info.last_page, bytes / PAGE - 1);
	t_eq_u64(f->info.file_size, bytes);
}

static void test_mkswap_label_and_uuid_are_read_back(void **state)
{
	struct fixture *f = *state;
	static const uint8_t uuid[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
					  0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10 };

	swapfile(f, 4 * MiB, "-L uswap-test -U 01234567-89ab-cdef-fedc-ba9876543210");
	expect_accepted(f);
	t_true(!strcmp(f->info.label, "uswap-test"));
	t_true(!strcmp(f->info.uuid_str, "01234567-89ab-cdef-fedc-ba9876543210"));
	t_true(!memcmp(f->info.uuid, uuid, 16));

	/* mkswap keeps 15 bytes and a NUL of a longer label ... */
	swapfile(f, 4 * MiB, "-L 0123456789abcdefXYZ");
	expect_accepted(f);
	t_true(!strcmp(f->info.label, "0123456789abcde"));
	/* ... but 16 bytes with no NUL (other tools) still read as 16 */
	patch(f->path, 1052, "0123456789abcdef", 16);
	expect_accepted(f);
	t_true(!strcmp(f->info.label, "0123456789abcdef"));
}

/* mkswap -c cannot check a regular file, so the list is written here. */
static void test_bad_pages_are_accepted_sorted_and_not_usable(void **state)
{
	struct fixture *f = *state;
	static const uint32_t bad[] = { 900, 5, 17 };

	swapfile(f, 8 * MiB, "");
	patch_badpages(f->path, bad, 3);
	expect_accepted(f);
	t_eq(f->info.nr_badpages, 3);
	t_eq_u64(f->info.badpages[0], 5);
	t_eq_u64(f->info.badpages[1], 17);
	t_eq_u64(f->info.badpages[2], 900);
	t_eq_u64(f->info.usable_slots, 2048 - 1 - 3);
}

static void test_full_bad_page_list_of_637_is_accepted(void **state)
{
	struct fixture *f = *state;
	uint32_t bad[USWAP_HEADER_MAX_BADPAGES];

	for (uint32_t i = 0; i < T_ARRAY_SIZE(bad); i++)
		bad[i] = 1023 - i;
	swapfile(f, 4 * MiB, "");
	patch_badpages(f->path, bad, T_ARRAY_SIZE(bad));
	expect_accepted(f);
	t_eq(f->info.nr_badpages, 637);
	t_eq_u64(f->info.badpages[0], 1023 - 636);
	t_eq_u64(f->info.usable_slots, 1023 - 637);
}

/* fallocate()d extents are unwritten, and SEEK_HOLE calls them holes on
 * ext4/XFS; the kernel's swapon accepts them, so must uswap. */
static void test_fallocated_file_is_not_taken_for_one_with_holes(void **state)
{
	struct fixture *f = *state;
	int fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	t_true(fd >= 0);
	if (posix_fallocate(fd, 0, 4 * MiB) != 0) {
		close(fd);
		t_skip("fallocate is not supported on /tmp");
	}
	t_eq(close(fd), 0);
	mkswap(f->path, "");
	expect_accepted(f);
	t_eq_u64(f->info.nr_slots, 1024);
}

static void test_wide_permissions_warn_but_are_accepted(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	t_eq(chmod(f->path, 0644), 0);
	expect_accepted(f);
	t_true(f->info.nr_warnings >= 1);
	t_true(strstr(f->warn, "insecure permissions 0644") != NULL);
	t_eq(f->info.mode, 0644);

	t_eq(chmod(f->path, 0600), 0);
	expect_accepted(f);
	t_true(strstr(f->warn, "permissions") == NULL);
	if (geteuid() == 0) {
		t_eq(f->info.nr_warnings, 0);
		t_eq(f->warn[0], '\0');
	}
}

static void test_not_owned_by_root_warns(void **state)
{
	struct fixture *f = *state;

	if (geteuid() != 0)
		t_skip("chown needs root");
	swapfile(f, 4 * MiB, "");
	t_eq(chown(f->path, 1234, 0), 0);
	expect_accepted(f);
	t_true(strstr(f->warn, "owner uid 1234") != NULL);
}

/* A block device: its size comes from BLKGETSIZE64, not st_size. */
static void test_loop_block_device_is_accepted_with_its_size(void **state)
{
	struct fixture *f = *state;
	char cmd[256];
	FILE *p;
	bool ok;

	if (geteuid() != 0)
		t_skip("losetup needs root");
	swapfile(f, 8 * MiB, "-L blk");
	snprintf(cmd, sizeof(cmd), "losetup -f --show '%s' 2>/dev/null", f->path);
	p = popen(cmd, "r");
	t_true(p != NULL);
	ok = fgets(f->loopdev, sizeof(f->loopdev), p) != NULL;
	if (pclose(p) != 0 || !ok || strncmp(f->loopdev, "/dev/", 5)) {
		f->loopdev[0] = '\0';
		t_skip("no loop device (losetup failed)");
	}
	f->loopdev[strcspn(f->loopdev, "\n")] = '\0';
	snprintf(f->path, sizeof(f->path), "%s", f->loopdev);
	expect_accepted(f);
	t_true(f->info.is_block_device);
	t_eq_u64(f->info.file_size, 8 * MiB);
	t_eq_u64(f->info.nr_slots, 2048);
	t_true(!strcmp(f->info.label, "blk"));
}

/* ------------------------------------------------------------------
 * Refused: one message each
 * ------------------------------------------------------------------ */

static void test_wrong_magic_is_refused(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	patch(f->path, OFF_MAGIC, "NOTASWAP!!", 10);
	expect_refused(f, -EINVAL, "no swap signature");
}

static void test_old_v0_magic_is_refused_by_name(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	patch(f->path, OFF_MAGIC, "SWAP-SPACE", 10);
	expect_refused(f, -EINVAL, "old v0 swap area (\"SWAP-SPACE\"");
}

static void test_version_2_is_refused(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	patch32(f->path, OFF_VERSION, 2);
	expect_refused(f, -EINVAL, "unsupported swap header version 2");
}

static void test_byte_swapped_header_is_refused_by_name(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	patch32(f->path, OFF_VERSION, __builtin_bswap32(1));
	patch32(f->path, OFF_LAST, __builtin_bswap32(1023));
	expect_refused(f, -EINVAL,
		       "byte-swapped (made on a machine of the other endianness)");
}

static void test_last_page_0_is_an_empty_area(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	patch32(f->path, OFF_LAST, 0);
	expect_refused(f, -EINVAL, "empty swap area");
}

static void test_last_page_past_the_end_is_refused(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	patch32(f->path, OFF_LAST, 1024); /* needs 1025 pages, there are 1024 */
	expect_refused(f, -EINVAL, "beyond the end of the area");
}

static void test_bad_page_0_is_refused(void **state)
{
	struct fixture *f = *state;
	static const uint32_t bad[] = { 7, 0 };

	swapfile(f, 4 * MiB, "");
	patch_badpages(f->path, bad, 2);
	expect_refused(f, -EINVAL, "bad-page entry 1 is page 0");
}

static void test_bad_page_past_last_page_is_refused(void **state)
{
	struct fixture *f = *state;
	static const uint32_t bad[] = { 1024 };

	swapfile(f, 4 * MiB, "");
	patch_badpages(f->path, bad, 1);
	expect_refused(f, -EINVAL, "beyond last_page 1023");
}

static void test_duplicate_bad_page_is_refused(void **state)
{
	struct fixture *f = *state;
	static const uint32_t bad[] = { 17, 5, 17 };

	swapfile(f, 4 * MiB, "");
	patch_badpages(f->path, bad, 3);
	expect_refused(f, -EINVAL, "bad page 17 is listed twice");
}

static void test_more_bad_pages_than_fit_are_refused(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB, "");
	patch32(f->path, OFF_NR_BAD, USWAP_HEADER_MAX_BADPAGES + 1);
	expect_refused(f, -EINVAL, "too many bad pages: 638");
}

static void test_hibernation_images_are_refused(void **state)
{
	struct fixture *f = *state;
	static const char *const sigs[] = { "S1SUSPEND", "S2SUSPEND", "ULSUSPEND",
					    "LINHIB0001" };

	for (size_t i = 0; i < T_ARRAY_SIZE(sigs); i++) {
		char magic[10] = { 0 };

		memcpy(magic, sigs[i], strlen(sigs[i]));
		swapfile(f, 4 * MiB, "");
		patch(f->path, OFF_MAGIC, magic, sizeof(magic));
		expect_refused(f, -EBUSY, "contains a hibernation image");
		t_true(strstr(f->err, sigs[i]) != NULL);
	}
}

/* mkswap writes only the header of a sparse file: the rest is a hole. */
static void test_sparse_file_is_refused_for_holes(void **state)
{
	struct fixture *f = *state;

	make_file(f->path, 8 * MiB, true);
	mkswap(f->path, "");
	expect_refused(f, -EINVAL, "file has holes");
}

static void test_header_for_64k_pages_is_refused_by_page_size(void **state)
{
	struct fixture *f = *state;

	/* made by mkswap for another page size */
	swapfile(f, 8 * MiB, "-p 65536");
	expect_refused(f, -EINVAL, "made for page size 65536");
	swapfile(f, 8 * MiB, "-p 16384");
	expect_refused(f, -EINVAL, "made for page size 16384");

	/* the magic moved by hand from the end of 4 KiB to the end of 64 KiB */
	swapfile(f, 8 * MiB, "");
	patch(f->path, OFF_MAGIC, "\0\0\0\0\0\0\0\0\0\0", 10);
	patch(f->path, 65536 - 10, "SWAPSPACE2", 10);
	expect_refused(f, -EINVAL, "made for page size 65536");
}

static void test_area_under_two_clusters_is_too_small(void **state)
{
	struct fixture *f = *state;

	swapfile(f, 4 * MiB - PAGE, "");
	expect_refused(f, -EINVAL, "swap area too small: 1023 slots");
}

static void test_file_smaller_than_a_page_is_refused(void **state)
{
	struct fixture *f = *state;

	make_file(f->path, 100, false);
	expect_refused(f, -EINVAL, "too small to hold a swap header");
}

static void test_missing_file_and_directory_are_refused(void **state)
{
	struct fixture *f = *state;

	expect_refused(f, -ENOENT, "cannot open");
	snprintf(f->path, sizeof(f->path), "%s", f->dir);
	expect_refused(f, -EINVAL, "not a regular file or block device");
}

/* The pure parser, on a header built in memory. */
static void test_parse_needs_a_whole_page(void **state)
{
	struct fixture *f = *state;
	static unsigned char page[PAGE];

	t_eq(uswap_header_parse(page, PAGE - 1, 4 * MiB, &f->info, f->err,
				sizeof(f->err)), -EINVAL);
	t_true(strstr(f->err, "one 4096-byte page") != NULL);
	t_eq(uswap_header_parse(NULL, PAGE, 4 * MiB, &f->info, NULL, 0), -EINVAL);

	memcpy(page + OFF_MAGIC, "SWAPSPACE2", 10);
	memcpy(page + OFF_VERSION, &(uint32_t){ 1 }, 4);
	memcpy(page + OFF_LAST, &(uint32_t){ 1023 }, 4);
	t_eq(uswap_header_parse(page, PAGE, 4 * MiB, &f->info, NULL, 0), 0);
	t_eq_u64(f->info.nr_slots, 1024);
	/* a truncated message is still a NUL-terminated string */
	t_eq(uswap_header_parse(page, PAGE, 4 * MiB - 1, &f->info, f->err, 8), -EINVAL);
	t_eq(strlen(f->err), 7);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_mkswap_4mib_is_accepted_with_1024_slots),
		T(test_mkswap_8mib_and_64mib_are_accepted_whole),
		T(test_mkswap_odd_size_uses_whole_pages_only),
		T(test_mkswap_label_and_uuid_are_read_back),
		T(test_bad_pages_are_accepted_sorted_and_not_usable),
		T(test_full_bad_page_list_of_637_is_accepted),
		T(test_fallocated_file_is_not_taken_for_one_with_holes),
		T(test_wide_permissions_warn_but_are_accepted),
		T(test_not_owned_by_root_warns),
		T(test_loop_block_device_is_accepted_with_its_size),
		T(test_wrong_magic_is_refused),
		T(test_old_v0_magic_is_refused_by_name),
		T(test_version_2_is_refused),
		T(test_byte_swapped_header_is_refused_by_name),
		T(test_last_page_0_is_an_empty_area),
		T(test_last_page_past_the_end_is_refused),
		T(test_bad_page_0_is_refused),
		T(test_bad_page_past_last_page_is_refused),
		T(test_duplicate_bad_page_is_refused),
		T(test_more_bad_pages_than_fit_are_refused),
		T(test_hibernation_images_are_refused),
		T(test_sparse_file_is_refused_for_holes),
		T(test_header_for_64k_pages_is_refused_by_page_size),
		T(test_area_under_two_clusters_is_too_small),
		T(test_file_smaller_than_a_page_is_refused),
		T(test_missing_file_and_directory_are_refused),
		T(test_parse_needs_a_whole_page),
	};

	return t_run(tests);
}
