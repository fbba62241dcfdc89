/* SPDX-License-Identifier: MIT */
/*
 * bench_usemem_report.c - the results of `uswap bench usemem`, as text
 * (usemem's per-worker lines, then the swap system's view) or as one
 * JSON object.
 *
 * Metrics:
 *   per worker     bytes touched over all its passes / its elapsed time,
 *                  in KB/s with KB = 1024 bytes (usemem's line)
 *   throughput     the sum of the workers' KB/s (usemem's total)
 *   write / read   the same sum over write passes only / read passes only
 *   devices        Size and Used in KiB, Used at its highest (sampled
 *                  every 100 ms); with --no-pager the kernel's /proc/swaps
 *                  at the sample where its Used total was highest
 *   fault time     the pager's service time per missing-page fault
 */
#include "bench_usemem.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double worker_kbps(const struct usemem_worker *w, uint64_t *usecs)
{
	uint64_t ns = w->end_ns - w->start_ns;

	*usecs = ns / 1000;
	return ns ? (double)w->bytes / 1024.0 / ((double)ns / 1e9) : 0.0;
}

static double total_kbps(const struct usemem_result *res)
{
	double sum = 0;
	uint64_t usecs;

	for (unsigned int i = 0; i < res->nr_workers; i++)
		sum += worker_kbps(&res->w[i], &usecs);
	return sum;
}

static const char *size_str(uint64_t bytes, char *buf, size_t len)
{
	if (bytes % (1ull << 30) == 0)
		snprintf(buf, len, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes % (1ull << 20) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes >> 10));
	return buf;
}

static void print_header(const struct usemem_opts *o, const struct usemem_result *res)
{
	char a[32], b[32], c[32];

	printf("uswap bench usemem: %u workers x %s = %s, ", o->workers,
	       size_str(o->size, a, sizeof(a)),
	       size_str((uint64_t)o->workers * o->size, b, sizeof(b)));
	if (o->no_pager)
		printf("plain memory (--no-pager: the kernel's swap), ");
	else
		printf("limit %s, order %u (%u KiB folios), ",
		       size_str(res->limit_bytes, c, sizeof(c)), o->order,
		       (USWAP_PAGE_SIZE << o->order) >> 10);
	printf("%s%s%s\n", o->random ? "random" : "sequential",
	       o->data ? ", data " : "", o->data ? o->data : "");
	if (!o->no_pager)
		printf("userfaultfd: %s, read errors %s\n",
		       res->pager.uffd_user_mode_only ? "user-mode-only" : "all faults",
		       res->pager.uffd_poison ? "raise SIGBUS (UFFDIO_POISON)" :
		       "map the poison fill");
}

static void print_devices(const struct usemem_result *res)
{
	printf("\n%-40s%-10s%-10s%-12s%s\n", "Filename", "Type", "Size", "Used(peak)",
	       "Priority");
	for (unsigned int i = 0; i < res->nr_devices; i++) {
		const struct uswap_device_info *d = &res->dev[i].info;

		printf("%-40s%-10s%-10llu%-12llu%d\n", d->name, d->kind,
		       (unsigned long long)d->size_kb,
		       (unsigned long long)res->dev[i].used_kb_peak, d->prio);
	}
}

void usemem_print_text(const struct usemem_opts *o, const struct usemem_result *res)
{
	const struct uswap_pager_stats *ps = &res->pager;
	uint64_t bytes = 0, usecs;

	print_header(o, res);
	for (unsigned int i = 0; i < res->nr_workers; i++) {
		const struct usemem_worker *w = &res->w[i];
		double kbps = worker_kbps(w, &usecs);

		printf("%llu bytes / %llu usecs = %.0f KB/s\n", (unsigned long long)w->bytes,
		       (unsigned long long)usecs, kbps);
		bytes += w->bytes;
	}
	printf("total %llu bytes, sum %.0f KB/s (write passes %.0f KB/s, read passes "
	       "%.0f KB/s)\n", (unsigned long long)bytes, total_kbps(res),
	       res->pass_kbps[USEMEM_PASS_WRITE], res->pass_kbps[USEMEM_PASS_READ]);
	printf("%.2f user  %.2f sys  %.2f wall (s)\n", res->user_s, res->sys_s, res->wall_s);
	if (o->no_pager) {
		printf("\nkernel swap at peak (/proc/swaps):\n%s", res->kswaps[0] ?
		       res->kswaps : "(none)\n");
		printf("pswpout %llu pages, pswpin %llu pages (/proc/vmstat)\n",
		       (unsigned long long)res->k_pswpout, (unsigned long long)res->k_pswpin);
		return;
	}
	print_devices(res);
	printf("\n%-6s%-12s%s\n", "order", "swpout", "swpout_fallback");
	for (int k = 0; k < USWAP_NR_ORDERS; k++)
		if (res->swap.swpout[k] || res->swap.swpout_fallback[k] ||
		    k == (int)o->order)
			printf("%-6d%-12llu%llu\n", k, (unsigned long long)res->swap.swpout[k],
			       (unsigned long long)res->swap.swpout_fallback[k]);
	printf("swpin %llu (swap cache %llu)\n", (unsigned long long)res->swap.swpin,
	       (unsigned long long)res->swap.swpin_cached);
	printf("pager: %llu faults (folios: %llu zero-filled, %llu swapped in, %llu of "
	       "them read ahead), %llu write-protect faults; %llu evictions (%llu clean, "
	       "%llu zero, %llu split, %llu undone); resident peak %llu MiB, %llu over the "
	       "limit\n",
	       (unsigned long long)ps->faults, (unsigned long long)ps->zero_fills,
	       (unsigned long long)ps->swapins, (unsigned long long)ps->readahead,
	       (unsigned long long)ps->wp_faults,
	       (unsigned long long)ps->evictions, (unsigned long long)ps->evict_clean,
	       (unsigned long long)ps->evict_zero, (unsigned long long)ps->evict_split,
	       (unsigned long long)ps->evict_cancelled,
	       (unsigned long long)(ps->resident_peak_bytes >> 20),
	       (unsigned long long)ps->over_limit);
	printf("fault service time: median %.1f us, p99 %.1f us, max %.1f us (%llu "
	       "faults)\n", ps->fault_ns_p50 / 1e3, ps->fault_ns_p99 / 1e3,
	       ps->fault_ns_max / 1e3, (unsigned long long)ps->fault_count);
}

/* Devices of /proc/swaps text as JSON objects. */
static void json_kernel_devices(struct cli_json *j, const char *swaps)
{
	const char *line = strchr(swaps, '\n');

	while (line && line[1]) {
		char name[512], type[32];
		unsigned long long size, used;
		int prio;

		if (sscanf(line + 1, "%511s %31s %llu %llu %d", name, type, &size, &used,
			   &prio) == 5) {
			cli_json_object_open(j, NULL, true);
			cli_json_string(j, "name", name);
			cli_json_u64(j, "size_kb", size);
			cli_json_u64(j, "used_kb_peak", used);
			cli_json_i64(j, "prio", prio);
			cli_json_object_close(j);
		}
		line = strchr(line + 1, '\n');
	}
}

void usemem_print_json(const struct usemem_opts *o, const struct usemem_result *res)
{
	const struct uswap_pager_stats *ps = &res->pager;
	struct cli_json j;
	uint64_t usecs;

	cli_json_init(&j, stdout);
	cli_json_object_open(&j, NULL, false);
	cli_json_u64(&j, "workers", o->workers);
	cli_json_u64(&j, "size_bytes", o->size);
	cli_json_bool(&j, "pager", !o->no_pager);
	cli_json_u64(&j, "limit_bytes", o->no_pager ? 0 : res->limit_bytes);
	cli_json_u64(&j, "order", o->order);
	cli_json_string(&j, "access", o->random ? "random" : "sequential");
	cli_json_string(&j, "data", o->data ? o->data : "pattern");
	cli_json_array_open(&j, "per_worker", false);
	for (unsigned int i = 0; i < res->nr_workers; i++) {
		double kbps = worker_kbps(&res->w[i], &usecs);

		cli_json_object_open(&j, NULL, true);
		cli_json_u64(&j, "bytes", res->w[i].bytes);
		cli_json_u64(&j, "usecs", usecs);
		cli_json_double(&j, "kbps", kbps);
		cli_json_object_close(&j);
	}
	cli_json_array_close(&j);
	cli_json_double(&j, "throughput_kbps", total_kbps(res));
	cli_json_double(&j, "write_kbps", res->pass_kbps[USEMEM_PASS_WRITE]);
	cli_json_double(&j, "read_kbps", res->pass_kbps[USEMEM_PASS_READ]);
	cli_json_double(&j, "wall_s", res->wall_s);
	cli_json_double(&j, "user_s", res->user_s);
	cli_json_double(&j, "sys_s", res->sys_s);
	cli_json_u64(&j, "verify_errors", res->bad_pages);
	cli_json_array_open(&j, "devices", false);
	if (o->no_pager) {
		json_kernel_devices(&j, res->kswaps);
	} else {
		for (unsigned int i = 0; i < res->nr_devices; i++) {
			const struct uswap_device_info *d = &res->dev[i].info;

			cli_json_object_open(&j, NULL, true);
			cli_json_string(&j, "name", d->name);
			cli_json_u64(&j, "size_kb", d->size_kb);
			cli_json_u64(&j, "used_kb_peak", res->dev[i].used_kb_peak);
			cli_json_i64(&j, "prio", d->prio);
			cli_json_object_close(&j);
		}
	}
	cli_json_array_close(&j);
	if (o->no_pager) {
		/* The kernel counts pages, not folios per order. */
		cli_json_u64(&j, "pswpout", res->k_pswpout);
		cli_json_u64(&j, "pswpin", res->k_pswpin);
		cli_json_u64(&j, "swpin", res->k_pswpin);
		cli_json_object_close(&j);
		cli_json_finish(&j);
		return;
	}
	cli_json_array_open(&j, "swpout", true);
	for (int k = 0; k < USWAP_NR_ORDERS; k++)
		cli_json_u64(&j, NULL, res->swap.swpout[k]);
	cli_json_array_close(&j);
	cli_json_array_open(&j, "swpout_fallback", true);
	for (int k = 0; k < USWAP_NR_ORDERS; k++)
		cli_json_u64(&j, NULL, res->swap.swpout_fallback[k]);
	cli_json_array_close(&j);
	cli_json_u64(&j, "swpin", res->swap.swpin);
	cli_json_u64(&j, "swpin_cached", res->swap.swpin_cached);
	cli_json_double(&j, "fault_us_p50", ps->fault_ns_p50 / 1e3);
	cli_json_double(&j, "fault_us_p99", ps->fault_ns_p99 / 1e3);
	cli_json_double(&j, "fault_us_max", ps->fault_ns_max / 1e3);
	cli_json_object_open(&j, "pager_stats", false);
	cli_json_u64(&j, "faults", ps->faults);
	cli_json_u64(&j, "wp_faults", ps->wp_faults);
	cli_json_u64(&j, "zero_fills", ps->zero_fills);
	cli_json_u64(&j, "swapins", ps->swapins);
	cli_json_u64(&j, "swapins_cached", ps->swapins_cached);
	cli_json_u64(&j, "evictions", ps->evictions);
	cli_json_u64(&j, "evict_clean", ps->evict_clean);
	cli_json_u64(&j, "evict_zero", ps->evict_zero);
	cli_json_u64(&j, "evict_split", ps->evict_split);
	cli_json_u64(&j, "evict_cancelled", ps->evict_cancelled);
	cli_json_u64(&j, "evict_pinned", ps->evict_pinned);
	cli_json_u64(&j, "reclaim_waits", ps->reclaim_waits);
	cli_json_u64(&j, "kswapd_wakeups", ps->kswapd_wakeups);
	cli_json_u64(&j, "readahead", ps->readahead);
	cli_json_u64(&j, "over_limit", ps->over_limit);
	cli_json_u64(&j, "read_errors", ps->read_errors);
	cli_json_u64(&j, "resident_peak_bytes", ps->resident_peak_bytes);
	cli_json_bool(&j, "uffd_user_mode_only", ps->uffd_user_mode_only);
	cli_json_bool(&j, "uffd_poison", ps->uffd_poison);
	cli_json_object_close(&j);
	cli_json_object_close(&j);
	cli_json_finish(&j);
}
