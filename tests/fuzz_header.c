/* SPDX-License-Identifier: MIT */
/*
 * Description: fuzz target for swap_header_parse(), the pure half of the
 * swap header check (src/dev/header.c). Any byte string must give either
 * a refusal (-EINVAL or -EBUSY with a message) or a header whose fields
 * keep the documented invariants; anything else aborts.
 *
 * Built two ways (tests/meson.build):
 *  - with clang and -fsanitize=fuzzer (make test-fuzz): a libFuzzer
 *    target, LLVMFuzzerTestOneInput() only;
 *  - otherwise (USWAP_STANDALONE_FUZZ): the same target under a small
 *    driver, main() below, that takes libFuzzer's -max_total_time=N and
 *    corpus directories, and mutates the seeds at random (bit flips,
 *    interesting u32 values at the header's fields, length changes) until
 *    the time is up. On a crash it writes the input to
 *    fuzz-header-crash.bin in the working directory.
 *
 * Input: the first bytes of an area. The area size is derived from the
 * input so that seeds made by mkswap reach the deep checks: byte 0 (in
 * bootbits, which the parser ignores) shifts the size by -128..127 pages
 * from the one last_page asks for; the target also tries a huge area and
 * the input's own length.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev/header.h"

#define MIN_SLOTS ((uint64_t)USWAP_MIN_CLUSTERS * USWAP_CLUSTER_SLOTS)

#define check(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "fuzz_header: %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                            \
			abort();                                             \
		}                                                            \
	} while (0)

static void check_accepted(const struct uswap_header_info *h, uint64_t area)
{
	check(h->version == 1);
	check(h->last_page > 0);
	check(h->nr_slots == ((uint64_t)h->last_page + 1 > UINT32_MAX ?
			      UINT32_MAX : (uint64_t)h->last_page + 1));
	check(h->nr_slots >= MIN_SLOTS);
	check(((uint64_t)h->last_page + 1) * USWAP_PAGE_SIZE <= area);
	check(h->nr_badpages <= USWAP_HEADER_MAX_BADPAGES);
	for (uint32_t i = 0; i < h->nr_badpages; i++) {
		check(h->badpages[i] >= 1 && h->badpages[i] < h->nr_slots);
		check(i == 0 || h->badpages[i] > h->badpages[i - 1]);
	}
	check(h->usable_slots == h->nr_slots - 1 - h->nr_badpages);
	check(memchr(h->label, '\0', sizeof(h->label)) != NULL);
	check(strlen(h->uuid_str) == 36);
	check(h->page_size == USWAP_PAGE_SIZE);
	check(!h->is_block_device && h->file_size == 0 && h->nr_warnings == 0);
}

static void run_one(const uint8_t *data, size_t size, uint64_t area)
{
	static struct uswap_header_info h;
	char err[256], tiny[4];
	int rc;

	memset(err, 0x5a, sizeof(err));
	rc = swap_header_parse(data, size, area, &h, err, sizeof(err));
	if (rc == 0) {
		check_accepted(&h, area);
	} else {
		check(rc == -EINVAL || rc == -EBUSY);
		check(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
	}
	/* the same answer with a tiny or no message buffer */
	memset(tiny, 'x', sizeof(tiny));
	check(swap_header_parse(data, size, area, &h, tiny, sizeof(tiny)) == rc);
	check(rc == 0 || memchr(tiny, '\0', sizeof(tiny)) != NULL);
	check(swap_header_parse(data, size, area, &h, NULL, 0) == rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t pages = 0;

	if (size >= SWAP_HDR_LAST_PAGE_OFF + 4) {
		uint32_t last;

		memcpy(&last, data + SWAP_HDR_LAST_PAGE_OFF, 4);
		pages = (uint64_t)last + 1 + (uint64_t)(int64_t)(int8_t)data[0];
	}
	run_one(data, size, pages * USWAP_PAGE_SIZE);
	run_one(data, size, UINT64_C(1) << 45);
	run_one(data, size, size);
	return 0;
}

#ifdef USWAP_STANDALONE_FUZZ
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define FUZZ_MAX_INPUT  (SWAP_HDR_MAX_PAGE_SIZE + 4096)
#define MAX_SEEDS  64

static struct {
	uint8_t *data[MAX_SEEDS];
	size_t size[MAX_SEEDS];
	int nr;
} seeds;

static uint8_t cur[FUZZ_MAX_INPUT];
static size_t cur_size;

static void on_crash(int sig)
{
	int fd = open("fuzz-header-crash.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0) {
		if (write(fd, cur, cur_size) < 0) {
			/* nothing more to do in a signal handler */
		}
		close(fd);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void add_seed_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;

	if (!f || seeds.nr == MAX_SEEDS) {
		if (f)
			fclose(f);
		return;
	}
	buf = malloc(FUZZ_MAX_INPUT);
	seeds.size[seeds.nr] = buf ? fread(buf, 1, FUZZ_MAX_INPUT, f) : 0;
	seeds.data[seeds.nr++] = buf;
	fclose(f);
}

static void add_seeds(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char name[4096];

	if (!d) {
		add_seed_file(path);
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(name, sizeof(name), "%s/%s", path, de->d_name);
		add_seed_file(name);
	}
	closedir(d);
}

/* A u32 the parser cares about, at one of its fields. */
static void put_interesting(uint64_t *s)
{
	static const uint32_t values[] = { 0, 1, 2, 0x01000000, 637, 638, 1022,
					   1023, 1024, 2047, 0x7fffffff, 0xffffffff };
	static const size_t offs[] = { SWAP_HDR_VERSION_OFF, SWAP_HDR_LAST_PAGE_OFF,
				       SWAP_HDR_NR_BAD_OFF, SWAP_HDR_BADPAGES_OFF,
				       SWAP_HDR_BADPAGES_OFF + 4, SWAP_HDR_BADPAGES_OFF + 8 };
	uint32_t v = values[rnd(s) % (sizeof(values) / sizeof(values[0]))];
	size_t off = offs[rnd(s) % (sizeof(offs) / sizeof(offs[0]))];

	if (rnd(s) % 4 == 0)
		off = SWAP_HDR_BADPAGES_OFF + 4 * (rnd(s) % USWAP_HEADER_MAX_BADPAGES);
	if (off + 4 <= cur_size)
		memcpy(cur + off, &v, 4);
}

static void mutate(uint64_t *s)
{
	int n = 1 + (int)(rnd(s) % 8);

	for (int i = 0; i < n && cur_size; i++) {
		switch (rnd(s) % 5) {
		case 0: cur[rnd(s) % cur_size] ^= (uint8_t)(1u << (rnd(s) % 8)); break;
		case 1: cur[rnd(s) % cur_size] = (uint8_t)rnd(s); break;
		case 2: put_interesting(s); break;
		case 3: cur[0] = (uint8_t)rnd(s); break; /* the area size */
		default: cur_size = rnd(s) % 2 ? rnd(s) % (cur_size + 1) : cur_size;
		}
	}
}

int main(int argc, char **argv)
{
	double seconds = 3;
	uint64_t rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32), iters = 0;
	const char *env = getenv("USWAP_TEST_SEED");
	time_t end;

	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "-max_total_time=", 16))
			seconds = atof(argv[i] + 16);
		else if (argv[i][0] != '-')
			add_seeds(argv[i]);
	}
	if (env)
		rng = strtoull(env, NULL, 0);
	fprintf(stderr, "fuzz_header (standalone): %d seeds, %.0f s, seed %llu\n",
		seeds.nr, seconds, (unsigned long long)rng);
	signal(SIGABRT, on_crash);
	signal(SIGSEGV, on_crash);
	for (int i = 0; i < seeds.nr; i++) {
		cur_size = seeds.size[i];
		memcpy(cur, seeds.data[i], cur_size);
		LLVMFuzzerTestOneInput(cur, cur_size);
	}
	for (end = time(NULL) + (time_t)seconds; seeds.nr && time(NULL) < end;) {
		for (int k = 0; k < 1000; k++, iters++) {
			int i = (int)(rnd(&rng) % (uint64_t)seeds.nr);

			cur_size = seeds.size[i];
			memcpy(cur, seeds.data[i], cur_size);
			mutate(&rng);
			LLVMFuzzerTestOneInput(cur, cur_size);
		}
	}
	fprintf(stderr, "fuzz_header: %llu inputs, no failure\n",
		(unsigned long long)iters);
	for (int i = 0; i < seeds.nr; i++)
		free(seeds.data[i]);
	return seeds.nr ? 0 : 77;
}
#endif /* USWAP_STANDALONE_FUZZ */
