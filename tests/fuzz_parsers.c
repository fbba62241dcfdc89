/* SPDX-License-Identifier: MIT */
/*
 * Description: libFuzzer target for every text parser a user's input
 * reaches, besides the swap header (fuzz_header.c). The first byte picks
 * the parser (its value modulo 6), the rest is the text:
 *   0  device specs, uswap_spec_parse(): an accepted spec's canonical
 *      form must parse back to the same canonical form and the same
 *      layers, kinds and option values;
 *   1  the CLI's sizes, cli_parse_size(): an accepted size printed in
 *      decimal must parse back to the same byte count;
 *   2  the CLI's lists, cli_parse_int_list(): 1..cap values, each within
 *      the bounds;
 *   3  the CLI's seconds, cli_parse_seconds(): finite and positive;
 *   4  the lab's --before/--after policies, lab_policy_parse(): the
 *      formatted policy must parse back to the same switches;
 *   5  the lab's --workload parameters, lab_workload_parse().
 * A refusal must be -EINVAL or -ERANGE (with a message where the parser
 * gives one); anything else aborts. Run by tests/fuzz_run.sh on the seeds
 * in tests/corpus/parsers/ (make test-fuzz: build-fuzz, clang).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uswap/uswap.h>

#include "../tools/cli.h"
#include "lab/lab_internal.h"

#define check(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "fuzz_parsers: %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                            \
			abort();                                             \
		}                                                            \
	} while (0)

static void fuzz_spec(const char *text)
{
	static struct uswap_spec_info a, b;
	char err[256];
	int rc = uswap_spec_parse(text, &a, err, sizeof(err));

	if (rc) {
		check(rc == -EINVAL || rc == -ENOMEM);
		check(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
		return;
	}
	const struct uswap_spec_layer *dev = uswap_spec_device(&a);

	check(a.nr_layers >= 1 && a.nr_layers <= USWAP_SPEC_MAX_LAYERS);
	check(!strcmp(dev->kind, "ram") || !strcmp(dev->kind, "zram") ||
	      !strcmp(dev->kind, "file") || !strcmp(dev->kind, "nbd"));
	check(a.prio == USWAP_PRIO_DEFAULT || (a.prio >= 0 && a.prio <= USWAP_PRIO_MAX));
	/* A file's size is its header's, an export's its server's. */
	check(!strcmp(dev->kind, "file") || !strcmp(dev->kind, "nbd") ||
	      (a.size_bytes && a.size_bytes % USWAP_PAGE_SIZE == 0 &&
	       a.nr_slots == a.size_bytes / USWAP_PAGE_SIZE));
	for (unsigned int i = 0; i + 1 < a.nr_layers; i++) {
		const char *kind = a.layers[i].kind;

		check(!strcmp(kind, "faulty") || !strcmp(kind, "mirror") ||
		      !strcmp(kind, "writeback") || !strcmp(kind, "crypt"));
		if (!strcmp(kind, "faulty")) {
			double r = atof(uswap_spec_get(&a.layers[i], "read"));
			double w = atof(uswap_spec_get(&a.layers[i], "write"));

			check(r >= 0 && r <= 1 && w >= 0 && w <= 1);
		}
		/* writeback moves pages down from a zram device */
		check(strcmp(kind, "writeback") || !strcmp(a.layers[i + 1].kind, "zram"));
	}
	if (strlen(a.canonical) > USWAP_SPEC_MAX_LEN)
		return; /* escaping made it longer than a spec may be */
	rc = uswap_spec_parse(a.canonical, &b, err, sizeof(err));
	if (rc)
		fprintf(stderr, "canonical '%s' of '%s' refused: %s\n", a.canonical, text, err);
	check(rc == 0);
	check(!strcmp(a.canonical, b.canonical));
	check(a.size_bytes == b.size_bytes && a.prio == b.prio && a.nr_layers == b.nr_layers);
	for (unsigned int i = 0; i < a.nr_layers; i++) {
		check(!strcmp(a.layers[i].kind, b.layers[i].kind));
		check(a.layers[i].nr_options == b.layers[i].nr_options);
		for (unsigned int k = 0; k < a.layers[i].nr_options; k++) {
			check(!strcmp(a.layers[i].options[k].key, b.layers[i].options[k].key));
			check(!strcmp(a.layers[i].options[k].value, b.layers[i].options[k].value));
		}
	}
}

static void fuzz_size(const char *text)
{
	uint64_t bytes, again;
	char dec[32];
	int rc = cli_parse_size(text, &bytes);

	if (rc) {
		check(rc == -EINVAL || rc == -ERANGE);
		return;
	}
	snprintf(dec, sizeof(dec), "%llu", (unsigned long long)bytes);
	check(cli_parse_size(dec, &again) == 0 && again == bytes);
}

static void fuzz_list(const char *text)
{
	int vals[8];
	int n = cli_parse_int_list(text, -5, 100, vals, 8);

	if (n < 0) {
		check(n == -EINVAL || n == -ERANGE);
		return;
	}
	check(n >= 1 && n <= 8);
	for (int i = 0; i < n; i++)
		check(vals[i] >= -5 && vals[i] <= 100);
}

static void fuzz_seconds(const char *text)
{
	double v;
	int rc = cli_parse_seconds(text, &v);

	if (rc)
		check(rc == -EINVAL || rc == -ERANGE);
	else
		check(isfinite(v) && v > 0);
}

static void fuzz_policy(const char *text)
{
	struct uswap_policy p = { 0 }, q = { 0 };
	char buf[512];
	int rc = lab_policy_parse(text, &p);

	if (rc) {
		check(rc == -EINVAL);
		return;
	}
	lab_policy_format(&p, buf, sizeof(buf));
	check(lab_policy_parse(buf, &q) == 0);
	check(!memcmp(&p, &q, sizeof(p)));
}

static void fuzz_workload(const char *text)
{
	struct lab_workload wl;
	int rc;

	memset(&wl, 0, sizeof(wl));
	wl.kind = (enum lab_workload_kind)(strlen(text) % 3);
	rc = lab_workload_parse(text, &wl);
	if (rc)
		check(rc == -EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*const parsers[])(const char *) = {
		fuzz_spec, fuzz_size, fuzz_list, fuzz_seconds, fuzz_policy, fuzz_workload,
	};
	char *text;

	if (size == 0 || size > 2 * USWAP_SPEC_MAX_LEN)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	parsers[data[0] % (sizeof(parsers) / sizeof(parsers[0]))](text);
	free(text);
	return 0;
}
