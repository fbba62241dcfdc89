// SPDX-License-Identifier: MIT
/*
 * params.c - a workload's parameters as text: `uswap lab run --workload
 * key=value,...` on top of an experiment's defaults (docs/lab.md lists
 * the keys). One table: key, workload, type, field.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lab/workload.h"

enum param_type { P_UINT, P_U64, P_DOUBLE };

struct param_desc {
	const char *key;
	enum lab_workload_kind kind; /* which workload it belongs to */
	enum param_type type;
	size_t offset;               /* in struct lab_workload */
};

#define WP(key, kind, type, field) { key, kind, type, offsetof(struct lab_workload, field) }

static const struct param_desc params[] = {
	WP("tasks", LAB_WL_USEMEM, P_UINT, usemem.tasks),
	WP("size", LAB_WL_USEMEM, P_U64, usemem.size_slots),
	WP("order", LAB_WL_USEMEM, P_UINT, usemem.order),
	WP("rounds", LAB_WL_USEMEM, P_UINT, usemem.rounds),
	WP("fill", LAB_WL_USEMEM, P_DOUBLE, usemem.fill),
	WP("jobs", LAB_WL_KBUILD, P_UINT, kbuild.jobs_per_vcpu),
	WP("job_min", LAB_WL_KBUILD, P_UINT, kbuild.job_min),
	WP("job_max", LAB_WL_KBUILD, P_UINT, kbuild.job_max),
	WP("long_pct", LAB_WL_KBUILD, P_UINT, kbuild.long_pct),
	WP("long_cap", LAB_WL_KBUILD, P_UINT, kbuild.long_cap),
	WP("order4_pct", LAB_WL_KBUILD, P_UINT, kbuild.order4_pct),
	WP("swapin_pct", LAB_WL_KBUILD, P_UINT, kbuild.swapin_pct),
	WP("fill", LAB_WL_KBUILD, P_DOUBLE, kbuild.fill),
	WP("procs", LAB_WL_KBUILD, P_UINT, kbuild.procs),
	WP("tasks", LAB_WL_SWAPIN, P_UINT, swapin.tasks),
	WP("size", LAB_WL_SWAPIN, P_U64, swapin.size_slots),
	WP("fill", LAB_WL_SWAPIN, P_DOUBLE, swapin.fill),
	WP("readahead", LAB_WL_SWAPIN, P_UINT, swapin.readahead),
	WP("settle_us", LAB_WL_SWAPIN, P_DOUBLE, swapin.seek_settle_us),
	WP("us_per_mib", LAB_WL_SWAPIN, P_DOUBLE, swapin.seek_us_per_mib),
	WP("rotation_us", LAB_WL_SWAPIN, P_DOUBLE, swapin.rotation_us),
	WP("media_mb_s", LAB_WL_SWAPIN, P_DOUBLE, swapin.media_mb_s),
};

static int param_set(struct lab_workload *wl, const struct param_desc *d,
		     const char *val)
{
	char *end;
	void *field = (char *)wl + d->offset;

	errno = 0;
	if (d->type == P_DOUBLE) {
		double v = strtod(val, &end);

		if (end == val || *end || errno || !(v > 0) || v > 1e9)
			return -EINVAL;
		*(double *)field = v;
		return 0;
	}
	if (*val < '0' || *val > '9')
		return -EINVAL;
	unsigned long long v = strtoull(val, &end, 10);

	if (*end || errno || (d->type == P_UINT && v > UINT32_MAX))
		return -EINVAL;
	if (d->type == P_UINT)
		*(unsigned int *)field = (unsigned int)v;
	else
		*(uint64_t *)field = v;
	return 0;
}

static int param_item(struct lab_workload *wl, char *item)
{
	char *eq = strchr(item, '=');

	if (!eq)
		return -EINVAL;
	*eq = '\0';
	if (!strcmp(item, "devices")) {
		unsigned long v = strtoul(eq + 1, NULL, 10);

		if (!v || v > USWAP_MAX_DEVICES)
			return -EINVAL;
		wl->nr_devices = (unsigned int)v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (params[i].kind == wl->kind && !strcmp(params[i].key, item))
			return param_set(wl, &params[i], eq + 1);
	return -EINVAL;
}

int lab_workload_parse(const char *s, struct lab_workload *wl)
{
	char buf[512], *save = NULL;

	if (!*s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (char *item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		int err = param_item(wl, item);

		if (err)
			return err;
	}
	return 0;
}
