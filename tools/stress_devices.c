// SPDX-License-Identifier: MIT
/*
 * stress_devices.c - the device sets of `uswap stress` and the churn
 * thread that swaps their devices off and on under load.
 *
 * Every device is opened from a spec (uswap_backend_open()), so the run
 * goes through the same parser and backends a user's --device would. The
 * faulty: wrappers' injection counts are kept across swapoffs: they are
 * read while the run is quiesced, just before the device goes, and what
 * the swapoff itself reads back (the only I/O on the device then) is
 * added as it surfaces.
 */
#include "cli.h"
#include "stress.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MIB (UINT64_C(1) << 20)

static void dev_add(struct stress_devset *ds, const char *label, int prio, bool faulty,
		    const char *path, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static void dev_add(struct stress_devset *ds, const char *label, int prio, bool faulty,
		    const char *path, const char *fmt, ...)
{
	struct stress_dev *d = &ds->dev[ds->nr++];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->spec, sizeof(d->spec), fmt, ap);
	va_end(ap);
	snprintf(d->label, sizeof(d->label), "%s-%s", ds->name, label);
	snprintf(d->path, sizeof(d->path), "%s", path ? path : "");
	d->prio = prio;
	d->faulty = faulty;
	d->type = -1;
}

/* The faulty: prefix with the run's rates; each wrapper gets its own seed
 * so the run replays from --seed. */
static void faulty_prefix(const struct stress_opts *o, unsigned int n, char *buf, size_t len)
{
	snprintf(buf, len, "faulty:read=%g,write=%g,seed=%llu", o->read_rate, o->write_rate,
		 (unsigned long long)(o->seed * 31 + n));
}

static int make_file(const struct stress_opts *o, const char *set, const char *name,
		     uint64_t size, char *path, size_t len, char *err, size_t errlen)
{
	struct statvfs vfs;

	/* Refuse at once rather than fill the disk and fail half-way. */
	if (statvfs(o->dir, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < size + 64 * MIB) {
		snprintf(err, errlen, "%s: %llu MiB free, a swap file of %llu MiB does not fit",
			 o->dir, (unsigned long long)((uint64_t)vfs.f_bavail * vfs.f_frsize / MIB),
			 (unsigned long long)(size / MIB));
		return -ENOSPC;
	}
	snprintf(path, len, "%s/uswap-stress-%d-%s-%s.swap", o->dir, (int)getpid(), set, name);
	return cli_make_swap_file(path, size, err, errlen);
}

/*
 * stress_devset_init() - make @ds's device specs (and swap files) and swap
 * every device on. The swap-path set: a small ram device at prio 10 (it
 * fills, so the rest is used); a faulty zram (lz4), a zram (zstd) and a
 * file sharing prio 5 (round robin); a faulty file at prio 0. The
 * pager set: a faulty zram and a zstd zram at prio 5, a file at prio 0,
 * each as large as the pager region.
 * Return: 0 or -errno with @err set.
 */
int stress_devset_init(struct stress *s, struct stress_devset *ds, const char *name,
		       bool pager, char *err, size_t errlen)
{
	const struct stress_opts *o = s->o;
	char fp[128], path[4096];
	uint64_t size = pager ? (o->pager_size + 4 * MIB - 1) / (4 * MIB) * (4 * MIB) : 32 * MIB;
	int rc;

	ds->nr = 0;
	ds->name = name;
	if (size < 8 * MIB)
		size = 8 * MIB;
	if (!pager)
		dev_add(ds, "ram", 10, false, NULL, "ram:%lluM",
			(unsigned long long)(size / 4 / MIB));
	/* Both sets: a faulty lz4 zram and a zstd zram at prio 5, a file. */
	faulty_prefix(o, pager ? 3 : 1, fp, sizeof(fp));
	dev_add(ds, "zram-lz4-faulty", 5, true, NULL, "%s:zram:%lluM", fp,
		(unsigned long long)(size / MIB));
	dev_add(ds, "zram-zstd", 5, false, NULL, "zram:%lluM:zstd",
		(unsigned long long)(size / MIB));
	if ((rc = make_file(o, name, "file", size, path, sizeof(path), err, errlen)))
		return rc;
	dev_add(ds, "file", pager ? 0 : 5, false, path, "file:%s", path);
	if (!pager) {
		if ((rc = make_file(o, name, "file-faulty", size, path, sizeof(path), err,
				    errlen)))
			return rc;
		faulty_prefix(o, 2, fp, sizeof(fp));
		dev_add(ds, "file-faulty", 0, true, path, "%s:file:%s", fp, path);
	}
	for (unsigned int i = 0; i < ds->nr; i++)
		if ((rc = stress_dev_swapon(s, ds, i, err, errlen)))
			return rc;
	return 0;
}

/* stress_dev_swapon() - open device @i's backend and swap it on.
 * Return: 0 or -errno with @err set. Context: quiesced, or before the
 * workers start. */
int stress_dev_swapon(struct stress *s, struct stress_devset *ds, unsigned int i,
		      char *err, size_t errlen)
{
	struct stress_dev *d = &ds->dev[i];
	struct uswap_device_info info;
	int rc = uswap_backend_open(d->spec, &d->b, NULL, err, errlen);

	if (rc)
		return rc;
	struct uswap_swapon_args a = { .name = d->label, .prio = d->prio, .backend = d->b };

	d->type = uswap_swapon(ds->u, &a);
	if (d->type < 0) {
		rc = d->type;
		snprintf(err, errlen, "swapon %s: %s", d->spec, cli_errno_name(rc));
		uswap_backend_close(d->b);
		d->b = NULL;
		d->type = -1;
		return rc;
	}
	atomic_fetch_add(&s->c.swapons, 1);
	if (ds == &s->sets[0] && uswap_device_info(ds->u, d->type, &info) == 0)
		stress_swap_on_swapon(s, d->type, info.nr_slots);
	return 0;
}

/* Is @i the only device of its priority that is on? */
static bool last_of_prio(const struct stress_devset *ds, unsigned int i)
{
	for (unsigned int j = 0; j < ds->nr; j++)
		if (j != i && ds->dev[j].type >= 0 && ds->dev[j].prio == ds->dev[i].prio)
			return false;
	return true;
}

/* Read errors injected so far by the devices of @ds that are on, but @i. */
static uint64_t others_read_errors(const struct stress_devset *ds, unsigned int i)
{
	uint64_t sum = 0;

	for (unsigned int j = 0; j < ds->nr; j++) {
		struct uswap_fault_counts f = { 0 };

		if (j != i && ds->dev[j].faulty && ds->dev[j].type >= 0 &&
		    uswap_backend_faults(ds->dev[j].b, &f) == 0)
			sum += f.read_errors;
	}
	return sum;
}

/* The errors surfaced so far that reads of set @ds can cause. */
static uint64_t surfaced_reads(struct stress *s, const struct stress_devset *ds)
{
	return ds == &s->sets[0] ? atomic_load(&s->c.read_eio) : atomic_load(&s->c.pager_lost);
}

/*
 * stress_dev_swapoff() - swap device @i off, its slots moved by the
 * instance's owner. Return: 0, or the swapoff's -errno (the device stays
 * on). Context: quiesced (the caller holds the write side).
 */
int stress_dev_swapoff(struct stress *s, struct stress_devset *ds, unsigned int i)
{
	struct stress_dev *d = &ds->dev[i];
	struct uswap_fault_counts now = { 0 };
	bool last = last_of_prio(ds, i);
	uint64_t before = surfaced_reads(s, ds), others = others_read_errors(ds, i);
	int rc;

	if (d->faulty)
		uswap_backend_faults(d->b, &now);
	rc = uswap_swapoff(ds->u, d->type);
	if (rc) {
		atomic_fetch_add(&s->c.swapoff_failed, 1);
		return rc;
	}
	/* The read errors that surfaced during the swapoff were injected by
	 * this device, or by another one a folio split across devices was
	 * also read from (those count on that device, still on). */
	now.read_errors += surfaced_reads(s, ds) - before - (others_read_errors(ds, i) - others);
	d->done.reads += now.reads;
	d->done.writes += now.writes;
	d->done.read_errors += now.read_errors;
	d->done.write_errors += now.write_errors;
	if (ds == &s->sets[0])
		stress_swap_on_swapoff(s, d->type);
	d->type = -1;
	d->b = NULL;
	atomic_fetch_add(&s->c.swapoffs, 1);
	if (last)
		atomic_fetch_add(&s->c.swapoff_last_of_prio, 1);
	return 0;
}

/* stress_devset_faults() - what @ds's faulty: wrappers injected so far.
 * Exact only while quiesced. */
void stress_devset_faults(const struct stress_devset *ds, struct uswap_fault_counts *sum)
{
	for (unsigned int i = 0; i < ds->nr; i++) {
		const struct stress_dev *d = &ds->dev[i];
		struct uswap_fault_counts now = { 0 };

		if (d->faulty && d->type >= 0)
			uswap_backend_faults(d->b, &now);
		sum->reads += d->done.reads + now.reads;
		sum->writes += d->done.writes + now.writes;
		sum->read_errors += d->done.read_errors + now.read_errors;
		sum->write_errors += d->done.write_errors + now.write_errors;
	}
}

/* Remove the swap files (devices already off or never on). */
void stress_devset_teardown(struct stress_devset *ds)
{
	for (unsigned int i = 0; i < ds->nr; i++)
		if (ds->dev[i].path[0])
			unlink(ds->dev[i].path);
}

static bool sleep_unless_stopped(struct stress *s, double seconds)
{
	uint64_t end = cli_now_ns() + (uint64_t)(seconds * 1e9);

	while (!atomic_load(&s->stop) && cli_now_ns() < end)
		nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
	return !atomic_load(&s->stop);
}

/*
 * stress_churn_main() - every --churn seconds, quiesce the run, pick a
 * random device of a random set and swap it off (it is on) or on again
 * (it is off). The last device of a priority, or of a whole set, may go.
 */
void *stress_churn_main(void *arg)
{
	struct stress *s = arg;
	uint64_t rng = s->o->seed ^ UINT64_C(0x5eed);
	char err[4400];

	while (sleep_unless_stopped(s, s->o->churn)) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		/* A pager swapoff brings folios through the pager's unuse, far
		 * slower than the swap path's: one churn in four. */
		struct stress_devset *ds = &s->sets[s->nr_sets > 1 && (rng >> 33) % 4 == 0];
		unsigned int i = (unsigned int)((rng >> 17) % ds->nr);

		pthread_rwlock_wrlock(&s->quiesce);
		if (stress_swap_keep_on(s, ds, i)) {
			/* the flip-byte mutation's target: on until it flipped */
		} else if (ds->dev[i].type >= 0) {
			int rc = stress_dev_swapoff(s, ds, i);

			if (rc && rc != -EBUSY && rc != -ENOMEM)
				stress_violation(s, &s->c.bad_refs, "swapoff %s: %s",
						 ds->dev[i].label, cli_errno_name(rc));
		} else if (stress_dev_swapon(s, ds, i, err, sizeof(err))) {
			stress_violation(s, &s->c.bad_refs, "swapon %s: %s", ds->dev[i].label,
					 err);
		}
		pthread_rwlock_unlock(&s->quiesce);
	}
	return NULL;
}
