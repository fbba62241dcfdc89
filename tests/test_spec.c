/* SPDX-License-Identifier: MIT */
/*
 * Description: device specs. Every accepted form parses to the fields it
 * names and prints back in canonical form; every malformed spec in the
 * table is refused with -EINVAL and a message naming what is wrong; the
 * canonical string parses back to an equal spec (also for random strings
 * that happen to parse). A well-formed spec naming a device this build
 * left out (meson options nbd and crypt) is refused with -ENOTSUP and the
 * option that brings it back; the tests of those devices' own forms skip.
 * Uses the internal dev_spec_* API and the public uswap_spec_parse().
 */
#include "t_util.h"

#include <stdlib.h>
#include <string.h>

#include "dev/spec.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static struct dev_spec parse_ok(const char *s)
{
	struct dev_spec d;
	char err[256];
	int rc = dev_spec_parse(s, &d, err, sizeof(err));

	if (rc)
		fail_msg("'%s' refused (%s): %s", s, t_errname(rc), err);
	return d;
}

/* Does this build refuse @s only for naming a device it left out? */
static bool names_a_device_left_out(const char *s)
{
	struct dev_spec d;
	int rc;

	if (dev_kind_built(DEV_KIND_NBD) && dev_kind_built(DEV_KIND_CRYPT))
		return false;
	rc = dev_spec_parse(s, &d, NULL, 0);
	dev_spec_free(&d);
	return rc == -ENOTSUP;
}

static void expect_canonical(const struct dev_spec *d, const char *want)
{
	char buf[2 * DEV_SPEC_MAX_LEN];

	t_true(dev_spec_format(d, buf, sizeof(buf)) >= 0);
	if (strcmp(buf, want))
		fail_msg("canonical form is '%s', expected '%s'", buf, want);
}

/* ------------------------------------------------------------------
 * Accepted forms
 * ------------------------------------------------------------------ */

static void test_ram_and_zram_take_a_size_and_options(void **state)
{
	struct dev_spec d = parse_ok("ram:512M");

	t_eq(d.kind, DEV_KIND_RAM);
	t_eq_u64(d.size_bytes, 512 * MiB);
	t_eq(d.prio, USWAP_PRIO_DEFAULT);
	t_true(!d.prio_set);
	expect_canonical(&d, "ram:512M");
	dev_spec_free(&d);

	d = parse_ok("zram:1G");
	t_eq(d.kind, DEV_KIND_ZRAM);
	t_eq_u64(d.size_bytes, GiB);
	t_true(!strcmp(d.algo, "lz4"));
	expect_canonical(&d, "zram:1G");
	dev_spec_free(&d);

	d = parse_ok("zram:1G:zstd");
	t_true(!strcmp(d.algo, "zstd"));
	expect_canonical(&d, "zram:1G:zstd");
	dev_spec_free(&d);

	d = parse_ok("zram:2048M:prio=7:algo=zstd");
	t_eq(d.prio, 7);
	t_true(d.prio_set);
	expect_canonical(&d, "zram:2G:zstd:prio=7");
	dev_spec_free(&d);

	d = parse_ok("zram:1G:mem_limit=65536K:zstd");
	t_eq_u64(d.zram_mem_limit, 64u << 20);
	expect_canonical(&d, "zram:1G:zstd:mem_limit=64M");
	dev_spec_free(&d);

	d = parse_ok("ram:4M:prio=32767");
	t_eq(d.prio, USWAP_PRIO_MAX);
	dev_spec_free(&d);

	d = parse_ok("ram:4M:prio=-1");
	t_eq(d.prio, -1);
	expect_canonical(&d, "ram:4M");
	dev_spec_free(&d);
}

static void test_sizes_take_binary_suffixes(void **state)
{
	static const struct {
		const char *spec;
		uint64_t bytes;
		const char *canonical;
	} cases[] = {
		{ "ram:4194304", 4 * MiB, "ram:4M" },
		{ "ram:4096K", 4 * MiB, "ram:4M" },
		{ "ram:4096k", 4 * MiB, "ram:4M" },
		{ "ram:4MiB", 4 * MiB, "ram:4M" },
		{ "ram:4mb", 4 * MiB, "ram:4M" },
		{ "ram:4100K", 4100 * 1024, "ram:4100K" },
		{ "ram:1T", UINT64_C(1) << 40, "ram:1T" },
		{ "ram:1536M", 1536 * MiB, "ram:1536M" },
		{ "ram:17179869180K", (uint64_t)UINT32_MAX * 4096, "ram:17179869180K" },
	};

	for (size_t i = 0; i < T_ARRAY_SIZE(cases); i++) {
		struct dev_spec d = parse_ok(cases[i].spec);

		t_eq_u64(d.size_bytes, cases[i].bytes);
		expect_canonical(&d, cases[i].canonical);
		dev_spec_free(&d);
	}
}

static void test_file_takes_a_path_and_every_option(void **state)
{
	struct dev_spec d = parse_ok("file:/var/swap.img");

	t_eq(d.kind, DEV_KIND_FILE);
	t_true(!strcmp(d.path, "/var/swap.img"));
	t_eq(d.file.queue_depth, DEV_SPEC_DEFAULT_QD);
	t_true(!d.file.discard && !d.file.direct && !d.file.no_uring);
	expect_canonical(&d, "file:/var/swap.img");
	dev_spec_free(&d);

	d = parse_ok("file:/var/swap.img:sync:qd=64:direct:discard:prio=5");
	t_eq(d.prio, 5);
	t_eq(d.file.queue_depth, 64);
	t_true(d.file.discard && d.file.direct && d.file.no_uring);
	expect_canonical(&d, "file:/var/swap.img:prio=5:discard:direct:qd=64:sync");
	dev_spec_free(&d);

	d = parse_ok("file:swap.img");
	t_true(!strcmp(d.path, "swap.img"));
	dev_spec_free(&d);
}

/* An NBD URI keeps its own colons; options start at ":prio=" or
 * ":conns=". */
static void test_nbd_takes_a_uri_as_written(void **state)
{
	struct dev_spec d;

	if (!dev_kind_built(DEV_KIND_NBD)) {
		t_skip("built without the nbd device (meson option nbd)");
		return;
	}
	d = parse_ok("nbd:nbd://192.0.2.7:10809/swap");
	t_eq(d.kind, DEV_KIND_NBD);
	t_true(!strcmp(d.path, "nbd://192.0.2.7:10809/swap"));
	t_eq(d.nbd_conns, 0); /* auto */
	expect_canonical(&d, "nbd:nbd://192.0.2.7:10809/swap");
	dev_spec_free(&d);

	d = parse_ok("nbd:nbd+unix:///e?socket=/run/a\\b.sock:conns=4:prio=2");
	t_true(!strcmp(d.path, "nbd+unix:///e?socket=/run/a\\b.sock"));
	t_eq(d.nbd_conns, 4);
	t_eq(d.prio, 2);
	expect_canonical(&d, "nbd:nbd+unix:///e?socket=/run/a\\b.sock:prio=2:conns=4");
	dev_spec_free(&d);
}

static void test_file_path_escapes_colon_and_backslash(void **state)
{
	struct dev_spec d = parse_ok("file:/a\\:b\\\\c:prio=1");

	t_true(!strcmp(d.path, "/a:b\\c"));
	t_eq(d.prio, 1);
	expect_canonical(&d, "file:/a\\:b\\\\c:prio=1");
	dev_spec_free(&d);

	/* a backslash before anything else is itself */
	d = parse_ok("file:/a\\b");
	t_true(!strcmp(d.path, "/a\\b"));
	expect_canonical(&d, "file:/a\\\\b");
	dev_spec_free(&d);
}

static void test_faulty_wraps_any_spec_with_its_options(void **state)
{
	struct dev_spec d = parse_ok(
		"faulty:read=0.5,write=0.25,discard=1,latency=100,seed=42,"
		"read_slots=3+1+2,write_slots=7,discard_slots=9+10,fail_nth=3,"
		"persistent:file:/x:prio=4:direct");
	const struct faulty_opts *f = &d.faulty;

	t_eq(d.kind, DEV_KIND_FAULTY);
	t_true(f->read_error_rate == 0.5 && f->write_error_rate == 0.25 &&
	       f->discard_error_rate == 1.0);
	t_eq(f->latency_us, 100);
	t_eq_u64(f->seed, 42);
	t_eq(f->nr_bad_read, 3);
	t_eq_u64(f->bad_read_slots[0], 3);
	t_eq_u64(f->bad_read_slots[2], 2);
	t_eq(f->nr_bad_write, 1);
	t_eq_u64(f->bad_write_slots[0], 7);
	t_eq(f->nr_bad_discard, 2);
	t_eq_u64(f->fail_nth, 3);
	t_true(f->fail_persistent);
	t_eq(d.prio, 4);
	t_true(d.inner && d.inner->kind == DEV_KIND_FILE && d.inner->file.direct);
	expect_canonical(&d, "faulty:read=0.5,write=0.25,discard=1,latency=100,"
			 "seed=42,read_slots=3+1+2,write_slots=7,discard_slots=9+10,"
			 "fail_nth=3,persistent:file:/x:prio=4:direct");
	dev_spec_free(&d);

	d = parse_ok("faulty::ram:4M");
	t_eq_u64(d.faulty.seed, DEV_SPEC_DEFAULT_SEED);
	t_true(d.faulty.read_error_rate == 0.0);
	expect_canonical(&d, "faulty::ram:4M");
	dev_spec_free(&d);
}

static void test_faulty_prio_goes_to_the_device_it_wraps(void **state)
{
	struct dev_spec d = parse_ok("faulty:prio=9,read=0.1:faulty:write=0.2:zram:8M:zstd");

	t_eq(d.prio, 9);
	t_eq(d.inner->prio, 9);
	t_eq(d.inner->inner->prio, 9);
	t_eq(d.inner->inner->kind, DEV_KIND_ZRAM);
	expect_canonical(&d, "faulty:read=0.1:faulty:write=0.2:zram:8M:zstd:prio=9");
	dev_spec_free(&d);

	d = parse_ok("faulty:read=0.1:ram:4M:prio=3");
	t_eq(d.prio, 3);
	t_true(d.prio_set);
	dev_spec_free(&d);
}

static void test_four_faulty_wrappers_are_allowed(void **state)
{
	struct dev_spec d = parse_ok("faulty::faulty::faulty::faulty::ram:4M");

	t_eq(d.inner->inner->inner->inner->kind, DEV_KIND_RAM);
	dev_spec_free(&d);
}

/* ------------------------------------------------------------------
 * Malformed specs: -EINVAL and a message that says what is wrong
 * ------------------------------------------------------------------ */

static const struct {
	const char *spec;
	const char *needle;
} malformed[] = {
	{ "", "empty device spec" },
	{ "disk:1G", "unknown device kind 'disk'" },
	{ "RAM:1G", "unknown device kind 'RAM'" },
	{ "ram", "ram needs a size" },
	{ "ram:", "ram needs a size" },
	{ "zram", "zram needs a size" },
	{ "ram:abc", "bad size 'abc'" },
	{ "ram:1X", "bad size '1X'" },
	{ "ram:-4M", "bad size '-4M'" },
	{ "ram:1.5G", "bad size '1.5G'" },
	{ "ram: 4M", "bad size ' 4M'" },
	{ "ram:4MX", "bad size '4MX'" },
	{ "ram:5000000", "not a multiple of the 4096-byte page" },
	{ "ram:1M", "size 1M is too small" },
	{ "ram:0", "size 0 is too small" },
	{ "ram:16T", "size 16T is too large" },
	{ "ram:99999999999999999999", "too large" },
	{ "ram:4M:prio=", "bad prio ''" },
	{ "ram:4M:prio=abc", "bad prio 'abc'" },
	{ "ram:4M:prio=-2", "prio -2 out of range -1..32767" },
	{ "ram:4M:prio=32768", "prio 32768 out of range" },
	{ "ram:4M:prio", "option 'prio' of ram needs a value" },
	{ "ram:4M:prio=1:prio=2", "option 'prio' given twice" },
	{ "ram:4M:zstd", "unknown option 'zstd' for ram" },
	{ "ram:4M:", "empty option in ram spec" },
	{ "ram:4M::prio=1", "empty option in ram spec" },
	{ "zram:4M:gzip", "unknown option or compression algorithm 'gzip'" },
	{ "zram:4M:algo=gzip", "unknown compression algorithm 'gzip'" },
	{ "zram:4M:lz4:zstd", "option 'algo' given twice" },
	{ "zram:4M:zstd=1", "option 'zstd' of zram takes no value" },
	{ "zram:4M:mem_limit", "option 'mem_limit' of zram needs a value" },
	{ "zram:4M:mem_limit=1K", "not a multiple of the 4096-byte page" },
	{ "ram:4M:mem_limit=8M", "mem_limit" },
	{ "file", "file needs a path" },
	{ "file:", "file needs a path" },
	{ "file::prio=1", "file needs a path" },
	{ "file:/x:bogus", "unknown option 'bogus' for file" },
	{ "file:/x:qd=0", "qd 0 out of range 1..4096" },
	{ "file:/x:qd=5000", "qd 5000 out of range" },
	{ "file:/x:qd=abc", "bad qd 'abc'" },
	{ "file:/x:qd", "option 'qd' of file needs a value" },
	{ "file:/x:discard=1", "option 'discard' of file takes no value" },
	{ "file:/x:direct:direct", "option 'direct' given twice" },
	{ "faulty", "faulty needs options and an inner spec" },
	{ "faulty:read=0.1", "faulty needs options and an inner spec" },
	{ "faulty:read=0.1:", "empty device spec" },
	{ "faulty::disk:1G", "unknown device kind 'disk'" },
	{ "faulty::ram:1M", "size 1M is too small" },
	{ "faulty:read=1.5:ram:4M", "read rate 1.5 out of range 0..1" },
	{ "faulty:write=-0.1:ram:4M", "bad write rate '-0.1'" },
	{ "faulty:discard=nan:ram:4M", "bad discard rate 'nan'" },
	{ "faulty:read=inf:ram:4M", "bad read rate 'inf'" },
	{ "faulty:read=0.1x:ram:4M", "bad read rate '0.1x'" },
	{ "faulty:read=:ram:4M", "bad read rate ''" },
	{ "faulty:bogus=1:ram:4M", "unknown faulty option 'bogus'" },
	{ "faulty:read:ram:4M", "faulty option 'read' needs a value" },
	{ "faulty:read=0.1,read=0.2:ram:4M", "faulty option 'read' given twice" },
	{ "faulty:read=0.1,,write=0.1:ram:4M", "empty faulty option" },
	{ "faulty:read=0.1,:ram:4M", "empty faulty option" },
	{ "faulty:latency=20000000:ram:4M", "latency 20000000 out of range" },
	{ "faulty:latency=-1:ram:4M", "bad latency '-1'" },
	{ "faulty:seed=x:ram:4M", "bad seed 'x'" },
	{ "faulty:read_slots=1+x:ram:4M", "bad slot list read_slots='1+x'" },
	{ "faulty:write_slots=0:ram:4M", "bad slot list write_slots='0'" },
	{ "faulty:discard_slots=5+:ram:4M", "bad slot list discard_slots='5+'" },
	{ "faulty:read_slots=4294967296:ram:4M", "bad slot list" },
	{ "faulty:persistent:ram:4M", "'persistent' needs fail_nth=N" },
	{ "faulty:persistent=1,fail_nth=1:ram:4M", "'persistent' takes no value" },
	{ "faulty:fail_nth=0:ram:4M", "fail_nth 0 out of range" },
	{ "faulty:prio=3:ram:4M:prio=4", "prio given twice: in the faulty options" },
	{ "faulty:prio=40000:ram:4M", "prio 40000 out of range" },
	{ "faulty::faulty::faulty::faulty::faulty::ram:4M", "nested more than 4 deep" },
	{ "mirror::ram:4M", "mirror needs two specs" },
	{ "crypt:", "crypt needs a spec to encrypt" },
	{ "crypt:disk:1G", "unknown device kind 'disk'" },
	{ "writeback::zram:4M|ram:4M", "writeback needs a reason" },
	{ "writeback:huge:ram:4M|ram:4M", "'ram:4M' is not one" },
	{ "writeback:huge,huge:zram:4M|ram:4M", "writeback option 'huge' given twice" },
	{ "writeback:idle:zram:4M|ram:4M", "writeback option 'idle' needs a value" },
	{ "writeback:idle=0:zram:4M|ram:4M", "idle 0 out of range" },
	{ "writeback:hot:zram:4M|ram:4M", "unknown writeback option 'hot'" },
	{ "mirror:ram:4M|ram:4M", "unknown mirror option 'ram'" },
	{ "mirror::ram:4M:prio=1|ram:4M", "a mirror leg takes no prio=" },
	{ "mirror::ram:4M|disk:1G", "unknown device kind 'disk'" },
	{ "mirror::crypt:ram:4M|ram:4M", "only one mirror leg is encrypted" },
	{ "crypt:crypt:ram:4M", "encrypted already" },
	{ "crypt:mirror::crypt:ram:4M|crypt:ram:4M", "encrypted already" },
	{ "mirror::faulty:read=0.1:ram:4M|crypt:ram:4M", "only one mirror leg is encrypted" },
	{ "nbd", "nbd needs a URI" },
	{ "nbd::prio=3", "nbd needs a URI" },
	{ "nbd:http://host/x", "must start with nbd:// or nbd+unix://" },
	{ "nbd:nbd://host/x:conns=0", "conns 0 out of range" },
	{ "nbd:nbd://host/x:conns=17", "conns 17 out of range" },
	{ "nbd:nbd://host/x:prio=1:prio=2", "option 'prio' given twice" },
	{ "nbd:nbd://host/x:prio=1:discard", "unknown option 'discard' for nbd" },
};

static void test_malformed_specs_are_refused_with_their_reason(void **state)
{
	for (size_t i = 0; i < T_ARRAY_SIZE(malformed); i++) {
		struct dev_spec d;
		char err[256] = "";
		int rc = dev_spec_parse(malformed[i].spec, &d, err, sizeof(err));

		if (rc != -EINVAL)
			fail_msg("'%s': rc %d (%s), expected -EINVAL", malformed[i].spec,
				 rc, t_errname(rc));
		if (!strstr(err, malformed[i].needle))
			fail_msg("'%s': message \"%s\" does not say \"%s\"",
				 malformed[i].spec, err, malformed[i].needle);
		/* nothing to free, and freeing is still safe */
		t_true(d.path == NULL && d.inner == NULL && d.read_slots == NULL);
		dev_spec_free(&d);
	}
}

/* A device this libuswap was built without (meson options nbd and crypt)
 * is refused by name, at any depth, once the spec is known to be well
 * formed (a malformed one gets its own reason, as in every build), with
 * the option that builds it; a device that was built is not. Runs in
 * every build: USWAP_HAVE_* say which to expect. */
static void test_a_device_left_out_of_the_build_is_refused_by_name(void **state)
{
	static const struct {
		enum dev_kind kind;
		bool built;
		const char *spec, *option, *malformed;
	} cases[] = {
		{ DEV_KIND_NBD, USWAP_HAVE_NBD, "faulty::mirror::ram:4M|nbd:nbd://a/",
		  "-Dnbd=enabled", "nbd:http://host/x" },
		{ DEV_KIND_CRYPT, USWAP_HAVE_CRYPT, "writeback:huge:zram:8M|crypt:ram:4M",
		  "-Dcrypt=enabled", "crypt:" },
	};

	for (size_t i = 0; i < T_ARRAY_SIZE(cases); i++) {
		struct dev_spec d;
		char err[256] = "";
		int rc = dev_spec_parse(cases[i].spec, &d, err, sizeof(err));

		t_eq(dev_kind_built(cases[i].kind), cases[i].built);
		if (cases[i].built) {
			t_eq(rc, 0);
			dev_spec_free(&d);
		} else {
			t_eq(rc, -ENOTSUP);
			if (!strstr(err, "built without") || !strstr(err, cases[i].option))
				fail_msg("'%s': message \"%s\" does not name %s",
					 cases[i].spec, err, cases[i].option);
			t_true(d.path == NULL && d.inner == NULL);
		}
		t_eq(dev_spec_parse(cases[i].malformed, &d, err, sizeof(err)), -EINVAL);
	}
	t_true(dev_kind_built(DEV_KIND_FILE) && dev_kind_built(DEV_KIND_RAM));
}

static void test_limits_on_length_and_slot_lists(void **state)
{
	char *s = malloc(2 * DEV_SPEC_MAX_LEN + 64);
	struct dev_spec d;
	char err[256];
	size_t n;

	/* a path that makes the spec one byte too long */
	n = (size_t)sprintf(s, "file:");
	memset(s + n, 'a', DEV_SPEC_MAX_LEN + 1 - n);
	s[DEV_SPEC_MAX_LEN + 1] = '\0';
	t_eq(dev_spec_parse(s, &d, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "longer than 4096 bytes") != NULL);
	s[DEV_SPEC_MAX_LEN] = '\0'; /* exactly the limit is fine */
	t_eq(dev_spec_parse(s, &d, err, sizeof(err)), 0);
	dev_spec_free(&d);

	/* one slot more than a list may hold */
	n = (size_t)sprintf(s, "faulty:read_slots=");
	for (int i = 0; i <= DEV_SPEC_MAX_SLOT_LIST; i++)
		n += (size_t)sprintf(s + n, "%s1", i ? "+" : "");
	sprintf(s + n, ":ram:4M");
	t_eq(dev_spec_parse(s, &d, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "read_slots lists 1025 slots, at most 1024") != NULL);
	free(s);

	t_eq(dev_spec_parse(NULL, &d, err, sizeof(err)), -EINVAL);
	t_eq(dev_spec_parse("ram:4M", NULL, NULL, 0), -EINVAL);
}

/* ------------------------------------------------------------------
 * Round trips
 * ------------------------------------------------------------------ */

static bool same_slots(const uint64_t *a, const uint64_t *b, size_t nr)
{
	return nr == 0 || !memcmp(a, b, nr * sizeof(*a));
}

static bool spec_equal(const struct dev_spec *a, const struct dev_spec *b)
{
	const struct faulty_opts *fa = &a->faulty, *fb = &b->faulty;

	if (a->kind != b->kind || a->prio != b->prio || a->size_bytes != b->size_bytes ||
	    strcmp(a->algo, b->algo) || !a->path != !b->path ||
	    (a->path && strcmp(a->path, b->path)) ||
	    memcmp(&a->file, &b->file, sizeof(a->file)))
		return false;
	if (a->kind != DEV_KIND_FAULTY)
		return true;
	if (fa->read_error_rate != fb->read_error_rate ||
	    fa->write_error_rate != fb->write_error_rate ||
	    fa->discard_error_rate != fb->discard_error_rate ||
	    fa->latency_us != fb->latency_us || fa->seed != fb->seed ||
	    fa->fail_nth != fb->fail_nth || fa->fail_persistent != fb->fail_persistent ||
	    fa->nr_bad_read != fb->nr_bad_read || fa->nr_bad_write != fb->nr_bad_write ||
	    fa->nr_bad_discard != fb->nr_bad_discard ||
	    !same_slots(fa->bad_read_slots, fb->bad_read_slots, fa->nr_bad_read) ||
	    !same_slots(fa->bad_write_slots, fb->bad_write_slots, fa->nr_bad_write) ||
	    !same_slots(fa->bad_discard_slots, fb->bad_discard_slots, fa->nr_bad_discard))
		return false;
	return spec_equal(a->inner, b->inner);
}

/* format(parse(s)) parses back to an equal spec and prints the same. */
static void check_round_trip(const char *s)
{
	static char once[2 * DEV_SPEC_MAX_LEN], twice[2 * DEV_SPEC_MAX_LEN];
	struct dev_spec a = parse_ok(s), b;

	t_true(dev_spec_format(&a, once, sizeof(once)) > 0);
	b = parse_ok(once);
	t_true(dev_spec_format(&b, twice, sizeof(twice)) > 0);
	if (strcmp(once, twice) || !spec_equal(&a, &b))
		fail_msg("'%s' -> '%s' -> '%s' is not a round trip", s, once, twice);
	dev_spec_free(&a);
	dev_spec_free(&b);
}

static void test_canonical_form_parses_back_to_the_same_spec(void **state)
{
	static const char *const specs[] = {
		"ram:512M", "ram:4M:prio=0", "zram:3G:zstd:prio=100", "zram:4096K:lz4",
		"file:/var/swap.img:qd=1:sync", "file:/a\\:b\\\\c:discard:prio=32767",
		("faulty:read=0.1,write=0.30000000000000004,discard=1e-9,latency=5,"
		 "seed=18446744073709551615,read_slots=9+8,fail_nth=1:zram:8M:zstd"),
		"faulty:prio=2:faulty:write=0.5:file:/dev/loop0:direct",
		"faulty::faulty::faulty::faulty::ram:4M",
		"nbd:nbd://h:10809/e:prio=3:conns=2", "faulty:write=0.5:nbd:nbd+unix:///?socket=/s",
		"mirror:prio=7:nbd:nbd://a/|faulty:read=0.5:zram:8M:zstd", "mirror::ram:4M|ram:8M",
		"writeback:idle=60,huge,budget=64M,prio=3:zram:1G:zstd|file:/var/swap.img",
		"writeback:budget=4M:zram:8M|nbd:nbd+unix:///?socket=/s",
		"crypt:file:/var/swap.img:prio=4:direct", "crypt:mirror::nbd:nbd://a/|nbd:nbd://b/",
		"mirror::crypt:ram:4M|faulty:read=0.1:crypt:ram:4M",
	};

	for (size_t i = 0; i < T_ARRAY_SIZE(specs); i++)
		if (!names_a_device_left_out(specs[i]))
			check_round_trip(specs[i]);
}

/* Random specs from the grammar's pieces, valid and not, some with a
 * character changed: no crash, no leak (ASan), whatever parses
 * round-trips. */
static const char *pick(uint64_t *rng, const char *const *v, size_t n)
{
	return v[t_rand_below(rng, n)];
}

#define PICK(rng, v) pick(rng, v, T_ARRAY_SIZE(v))

static size_t gen_spec(uint64_t *rng, char *s, size_t len, int depth)
{
	static const char *const sizes[] = { "4M", "8M", "1G", "4096K", "5000000",
					     "1M", "16T", "x", "" };
	static const char *const paths[] = { "/x", "/a\\:b", "/c\\\\d", "rel", "" };
	static const char *const opts[] = { "prio=5", "prio=-1", "prio=40000",
		"zstd", "lz4", "algo=zstd", "discard", "direct", "sync", "qd=8",
		"qd=0", "bogus", "" };
	static const char *const fopts[] = { "read=0.5", "write=0.125",
		"discard=1", "latency=9", "seed=3", "read_slots=1+2",
		"write_slots=7", "discard_slots=4", "fail_nth=2", "persistent",
		"prio=1", "read=2", "" };
	unsigned int kind = (unsigned int)t_rand_below(rng, depth < 6 ? 4 : 3);
	size_t n;

	if (kind == 3) {
		n = (size_t)snprintf(s, len, "faulty:");
		for (int i = (int)t_rand_below(rng, 4); i > 0 && n < len; i--)
			n += (size_t)snprintf(s + n, len - n, "%s%s", PICK(rng, fopts),
					      i > 1 ? "," : "");
		n += (size_t)snprintf(s + n, len - n, ":");
		return n < len ? n + gen_spec(rng, s + n, len - n, depth + 1) : n;
	}
	n = (size_t)snprintf(s, len, "%s:%s", kind == 0 ? "ram" : kind == 1 ? "zram" : "file",
			     kind == 2 ? PICK(rng, paths) : PICK(rng, sizes));
	for (int i = (int)t_rand_below(rng, 4); i > 0 && n < len; i--)
		n += (size_t)snprintf(s + n, len - n, ":%s", PICK(rng, opts));
	return n < len ? n : len - 1;
}

static void test_random_specs_never_crash_and_round_trip(void **state)
{
	static const char edits[] = ":,=+\\0a-";
	uint64_t seed = t_env_seed(), rng = seed;
	char s[1024];
	int accepted = 0;

	for (int iter = 0; iter < 20000; iter++) {
		struct dev_spec d;
		size_t n = gen_spec(&rng, s, sizeof(s), 0);

		if (n && t_rand_below(&rng, 4) == 0)
			s[t_rand_below(&rng, n)] = edits[t_rand_below(&rng, sizeof(edits) - 1)];
		if (dev_spec_parse(s, &d, NULL, 0) == 0) {
			dev_spec_free(&d);
			accepted++;
			check_round_trip(s);
		}
	}
	print_message("random specs: %d of 20000 accepted (USWAP_TEST_SEED=%llu)\n",
		      accepted, (unsigned long long)seed);
}

static void test_format_reports_a_short_buffer(void **state)
{
	struct dev_spec d = parse_ok("file:/var/swap.img");
	char buf[8];

	t_eq(dev_spec_format(&d, buf, sizeof(buf)), -ENOSPC);
	t_eq(strlen(buf), sizeof(buf) - 1);
	t_eq(dev_spec_format(&d, buf, 0), -ENOSPC);
	dev_spec_free(&d);
}

/* ------------------------------------------------------------------
 * The public view
 * ------------------------------------------------------------------ */

static void test_public_parse_describes_wrappers_and_device(void **state)
{
	struct uswap_spec_info *info = calloc(1, sizeof(*info));
	char err[256];

	t_eq(uswap_spec_parse("faulty:read=0.25,read_slots=5+6:faulty:latency=7:"
			      "file:/s\\:x:prio=3:qd=8", info, err, sizeof(err)), 0);
	t_eq(info->nr_layers, 3); /* two wrappers, then the device */
	t_true(!strcmp(info->layers[0].kind, "faulty"));
	t_true(!strcmp(uswap_spec_get(&info->layers[0], "read"), "0.25"));
	t_true(!strcmp(uswap_spec_get(&info->layers[0], "read_slots"), "5+6"));
	t_true(!strcmp(uswap_spec_get(&info->layers[0], "write"), "0"));
	t_true(!strcmp(uswap_spec_get(&info->layers[1], "latency"), "7"));
	t_true(!strcmp(uswap_spec_get(&info->layers[1], "seed"), "1")); /* default */
	t_true(!strcmp(uswap_spec_get(&info->layers[1], "persistent"), "false"));
	t_true(uswap_spec_get(&info->layers[1], "algo") == NULL); /* not a faulty key */
	t_true(!strcmp(uswap_spec_device(info)->kind, "file"));
	t_true(!strcmp(uswap_spec_get(uswap_spec_device(info), "path"), "/s:x"));
	t_true(!strcmp(uswap_spec_get(uswap_spec_device(info), "qd"), "8"));
	t_true(!strcmp(uswap_spec_get(uswap_spec_device(info), "discard"), "false"));
	t_eq(info->prio, 3);
	t_eq_u64(info->size_bytes, 0);
	t_true(!strcmp(info->canonical, "faulty:read=0.25,read_slots=5+6:faulty:"
		       "latency=7:file:/s\\:x:prio=3:qd=8"));

	t_eq(uswap_spec_parse("zram:64M:zstd", info, err, sizeof(err)), 0);
	t_eq(info->nr_layers, 1);
	t_eq_u64(info->size_bytes, 64 * MiB);
	t_eq_u64(info->nr_slots, 16384);
	t_true(!strcmp(uswap_spec_get(uswap_spec_device(info), "algo"), "zstd"));
	t_true(!strcmp(uswap_spec_get(uswap_spec_device(info), "size"), "67108864"));
	t_true(uswap_spec_get(uswap_spec_device(info), "path") == NULL);
	t_eq(uswap_spec_parse("zram:64Q", info, err, sizeof(err)), -EINVAL);
	t_true(strstr(err, "bad size '64Q'") != NULL);
	free(info);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ram_and_zram_take_a_size_and_options),
		cmocka_unit_test(test_sizes_take_binary_suffixes),
		cmocka_unit_test(test_file_takes_a_path_and_every_option),
		cmocka_unit_test(test_nbd_takes_a_uri_as_written),
		cmocka_unit_test(test_file_path_escapes_colon_and_backslash),
		cmocka_unit_test(test_faulty_wraps_any_spec_with_its_options),
		cmocka_unit_test(test_faulty_prio_goes_to_the_device_it_wraps),
		cmocka_unit_test(test_four_faulty_wrappers_are_allowed),
		cmocka_unit_test(test_malformed_specs_are_refused_with_their_reason),
		cmocka_unit_test(test_a_device_left_out_of_the_build_is_refused_by_name),
		cmocka_unit_test(test_limits_on_length_and_slot_lists),
		cmocka_unit_test(test_canonical_form_parses_back_to_the_same_spec),
		cmocka_unit_test(test_random_specs_never_crash_and_round_trip),
		cmocka_unit_test(test_format_reports_a_short_buffer),
		cmocka_unit_test(test_public_parse_describes_wrappers_and_device),
	};

	return t_run(tests);
}
