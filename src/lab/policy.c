// SPDX-License-Identifier: MIT
/*
 * policy.c - struct uswap_policy as text, for report headers and for
 * `uswap lab run --before/--after` (a third arm of a seed, such as seed
 * 5's "after patch 8", is one switch away from its before or after).
 *
 * One table of switches: name, the enum field it sets, and the value
 * names in enum order (value 0 is uswap's default design).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_internal.h"

#define MAX_VALUES 3

struct switch_desc {
	const char *key;
	size_t offset;                      /* of the enum in the policy */
	const char *values[MAX_VALUES + 1]; /* NULL-terminated, enum order */
};

static const struct switch_desc switches[] = {
	{ "select", offsetof(struct uswap_policy, select),
	  { "rings", "global-rotate", "legacy-prio", NULL } },
	{ "percpu", offsetof(struct uswap_policy, percpu),
	  { "per-device", "global", NULL } },
	{ "frag", offsetof(struct uswap_policy, frag),
	  { "scan-one", "scan-all", NULL } },
	{ "cluster", offsetof(struct uswap_policy, cluster),
	  { "nonfull", "free", NULL } },
	{ "freelist", offsetof(struct uswap_policy, freelist),
	  { "ascending", "interleaved", NULL } },
	{ "lock", offsetof(struct uswap_policy, lock),
	  { "cluster-first", "device", NULL } },
	{ "discard", offsetof(struct uswap_policy, discard),
	  { "bounded", "sync-all", NULL } },
};

#define NR_SWITCHES (sizeof(switches) / sizeof(switches[0]))

/* Every switch is an enum; they all have the size of an int. */
static unsigned int *field(struct uswap_policy *p, const struct switch_desc *d)
{
	return (unsigned int *)((char *)p + d->offset);
}

static unsigned int get(const struct uswap_policy *p, const struct switch_desc *d)
{
	return *field((struct uswap_policy *)p, d);
}

void lab_policy_format(const struct uswap_policy *p, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NR_SWITCHES; i++) {
		unsigned int v = get(p, &switches[i]);

		if (!v || v >= MAX_VALUES || !switches[i].values[v])
			continue;
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s=%s",
				      n ? "," : "", switches[i].key,
				      switches[i].values[v]);
	}
	if (p->nr_nodes > 1)
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%snodes=%u",
				      n ? "," : "", p->nr_nodes);
	if (!n)
		snprintf(buf, len, "default");
}

static int parse_value(const struct switch_desc *d, const char *val, size_t len,
		       struct uswap_policy *p)
{
	for (unsigned int v = 0; d->values[v]; v++) {
		if (strlen(d->values[v]) == len && !strncmp(d->values[v], val, len)) {
			*field(p, d) = v;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_nodes(const char *val, size_t len, struct uswap_policy *p)
{
	char buf[16], *end;
	unsigned long n;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, val, len);
	buf[len] = '\0';
	n = strtoul(buf, &end, 10);
	if (*end || buf[0] < '0' || buf[0] > '9' || n > USWAP_MAX_NODES)
		return -EINVAL;
	/* One node is no node split: store it as 0, the form every
	 * default policy has, so a policy formats and parses back equal. */
	p->nr_nodes = n > 1 ? (unsigned int)n : 0;
	return 0;
}

/* One "key=value" of @len bytes. */
static int parse_item(const char *s, size_t len, struct uswap_policy *p)
{
	const char *eq = memchr(s, '=', len);
	size_t klen;

	if (len == 7 && !strncmp(s, "default", 7)) {
		memset(p, 0, sizeof(*p));
		return 0;
	}
	if (!eq)
		return -EINVAL;
	klen = (size_t)(eq - s);
	if (klen == 5 && !strncmp(s, "nodes", 5))
		return parse_nodes(eq + 1, len - klen - 1, p);
	for (size_t i = 0; i < NR_SWITCHES; i++)
		if (strlen(switches[i].key) == klen && !strncmp(switches[i].key, s, klen))
			return parse_value(&switches[i], eq + 1, len - klen - 1, p);
	return -EINVAL;
}

int lab_policy_parse(const char *s, struct uswap_policy *p)
{
	if (!*s)
		return -EINVAL;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		int err = parse_item(s, len, p);

		if (err)
			return err;
		if (!comma)
			return 0;
		s = comma + 1;
	}
}
