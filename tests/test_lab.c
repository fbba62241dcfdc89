/* SPDX-License-Identifier: MIT */
/*
 * Description: the lab (src/lab/) reproduces the seed threads' directions,
 * checked on counters, never on times: round robin brings equal-priority
 * device use max/min near 1 where legacy priorities leave it far above;
 * nonfull-first + scan-one gives fewer order-4 fallbacks than free-first +
 * scan-all on the kernel-build mix; cluster-lock-first takes far fewer
 * shared-lock acquisitions than the device lock; per-device per-CPU
 * clusters with a globally rotated list take more shared-lock
 * acquisitions per allocation than with the per-priority rings; the
 * ascending free list gives an HDD model shorter seeks than the old
 * interleave. Also: what a virtual CPU's own state decides does not
 * depend on the number of real threads, one thread repeats its counts
 * exactly, and policies survive their text form.
 *
 * Sizes are small (a few seconds in all); the experiments' defaults are
 * bigger (docs/lab.md). Each workload runs on one real thread unless the
 * test is about threads, so its counts are the same on every run.
 */
#include "t_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_internal.h"

/* Run one arm of experiment @name with @policy and the workload changed
 * by @params (lab_workload_parse() syntax, may be NULL). */
static void run_arm(const char *name, const struct uswap_policy *policy,
		    const char *params, unsigned int vcpus, unsigned int threads,
		    uint64_t seed, struct lab_arm *arm)
{
	const struct lab_experiment *exp = lab_experiment_find(name);
	struct lab_workload wl;
	struct lab_options opt;

	assert_non_null(exp);
	wl = exp->workload;
	if (params)
		t_eq(lab_workload_parse(params, &wl), 0);
	lab_options_default(&opt);
	opt.vcpu.nr_vcpus = vcpus;
	opt.vcpu.nr_threads = threads;
	opt.seed = seed;
	t_eq(lab_run_arm(&wl, policy, &opt, arm), 0);
	assert_true(arm->allocs > 0);
}

static double per_alloc(uint64_t n, const struct lab_arm *a)
{
	return (double)n / (double)a->allocs;
}

/* Seed 4 (default-priority-round-robin): 31 usemem tasks on 96 vCPUs in
 * 8 emulated nodes, four default-priority devices. Legacy gives the
 * devices -2..-5 and lets nodes 0 and 4-7 all prefer device 0; round
 * robin spreads them. */
static void test_lab_round_robin_evens_device_use_legacy_does_not(void **state)
{
	const struct lab_experiment *exp = lab_experiment_find("default-priority-round-robin");
	struct uswap_policy rings = { .nr_nodes = 8 };
	struct lab_arm legacy, rotate, ring;
	const char *small = "size=512,rounds=1";

	assert_non_null(exp);
	run_arm(exp->name, &exp->arms[0].policy, small, 96, 1, 1, &legacy);
	run_arm(exp->name, &exp->arms[exp->nr_arms - 1].policy, small, 96, 1, 1, &rotate);
	run_arm(exp->name, &rings, small, 96, 1, 1, &ring);
	print_message("device use max/min: legacy %.2f, global rotate %.2f, rings %.2f\n",
		      lab_use_ratio(&legacy), lab_use_ratio(&rotate), lab_use_ratio(&ring));
	assert_true(lab_use_ratio(&legacy) > 3.0);
	assert_true(lab_use_ratio(&rotate) < 1.2);
	assert_true(lab_use_ratio(&ring) < 1.2);
	lab_arm_fini(&legacy);
	lab_arm_fini(&rotate);
	lab_arm_fini(&ring);
}

/* Seed 2 (improve-cluster-scan-strategy) on the kernel-build mix with the
 * devices kept full. A fallback needs a device with no aligned 16-slot
 * run left, so single runs at this size vary; the sum over a few seeds
 * does not. */
static void test_lab_nonfull_scan_one_fewer_order4_fallbacks(void **state)
{
	const struct lab_experiment *exp = lab_experiment_find("improve-cluster-scan-strategy");
	uint64_t before = 0, after = 0, tries = 0;
	static const uint64_t seeds[] = { 1, 2, 4 };

	assert_non_null(exp);
	for (size_t i = 0; i < T_ARRAY_SIZE(seeds); i++) {
		struct lab_arm b, a;

		run_arm(exp->name, &exp->arms[0].policy, "jobs=300", 32, 1, seeds[i], &b);
		run_arm(exp->name, &exp->arms[exp->nr_arms - 1].policy, "jobs=300", 32, 1, seeds[i], &a);
		before += b.delta.swpout_fallback[4];
		after += a.delta.swpout_fallback[4];
		tries += b.delta.swpout[4] + b.delta.swpout_fallback[4];
		/* Scan-one never walks the frag list: far fewer steps. */
		assert_true(a.delta.list_scan_steps * 4 < b.delta.list_scan_steps);
		lab_arm_fini(&b);
		lab_arm_fini(&a);
	}
	print_message("order-4 fallbacks: free-first+scan-all %llu, nonfull-first+scan-one "
		      "%llu (of %llu order-4 folios)\n", (unsigned long long)before,
		      (unsigned long long)after, (unsigned long long)tries);
	assert_true(before > 0);
	assert_true(after * 2 < before);
}

/* Seed 1 (rework-swap-allocator-locks), the device lock alone: every
 * allocation and free takes it, where cluster-lock-first takes a device
 * lock only to move a cluster between lists. */
static void test_lab_cluster_first_takes_far_fewer_shared_locks(void **state)
{
	struct uswap_policy device = { .lock = USWAP_LOCKING_DEVICE };
	struct uswap_policy cluster = { .lock = USWAP_LOCKING_CLUSTER_FIRST };
	const char *mix = "jobs=100,long_cap=500,fill=0.7";
	struct lab_arm d, c;
	double pd, pc;

	run_arm("rework-swap-allocator-locks", &device, mix, 32, 1, 1, &d);
	run_arm("rework-swap-allocator-locks", &cluster, mix, 32, 1, 1, &c);
	pd = per_alloc(lab_shared_locks(&d.delta), &d);
	pc = per_alloc(lab_shared_locks(&c.delta), &c);
	print_message("shared-lock acquisitions per alloc: device lock %.3f, "
		      "cluster first %.3f\n", pd, pc);
	assert_true(pd > 3 * pc);
	/* The seed's own arms (with its era's other switches) agree too. */
	{
		const struct lab_experiment *exp =
			lab_experiment_find("rework-swap-allocator-locks");
		struct lab_arm b, a;

		run_arm(exp->name, &exp->arms[0].policy, mix, 32, 1, 1, &b);
		run_arm(exp->name, &exp->arms[exp->nr_arms - 1].policy, mix, 32, 1, 1, &a);
		assert_true(lab_shared_locks(&b.delta) > lab_shared_locks(&a.delta));
		lab_arm_fini(&b);
		lab_arm_fini(&a);
	}
	lab_arm_fini(&d);
	lab_arm_fini(&c);
}

/* Seed 5 (per-priority-allocation-queues), patch 8 against patch 13:
 * per-device per-CPU clusters with the global rotation walk the locked
 * list on every allocation; the rings need no shared lock to choose. */
static void test_lab_rings_take_fewer_shared_locks_than_global_rotate(void **state)
{
	struct uswap_policy rotate = { .select = USWAP_SELECT_GLOBAL_ROTATE,
				       .percpu = USWAP_PERCPU_PER_DEVICE };
	struct uswap_policy rings = { .select = USWAP_SELECT_RINGS,
				      .percpu = USWAP_PERCPU_PER_DEVICE };
	/* Devices of 100+ clusters each against 16 vCPUs x 2 orders of
	 * per-CPU clusters per device, as on the seed's machines. */
	const char *mix = "jobs=300,long_cap=2000,fill=0.5";
	struct lab_arm b, c;
	double pb, pc;

	run_arm("per-priority-allocation-queues", &rotate, mix, 16, 1, 1, &b);
	run_arm("per-priority-allocation-queues", &rings, mix, 16, 1, 1, &c);
	pb = per_alloc(lab_shared_locks(&b.delta), &b);
	pc = per_alloc(lab_shared_locks(&c.delta), &c);
	print_message("shared-lock acquisitions per alloc: global rotate %.3f, "
		      "rings %.3f\n", pb, pc);
	assert_true(pb > 2 * pc);
	t_eq(c.delta.locks[USWAP_LOCK_GLOBAL].acquired, 0);
	lab_arm_fini(&b);
	lab_arm_fini(&c);
}

/* Seed 3 (remove-swap-cache-contention-workaround): the same tasks' pages
 * read back from the HDD model cost shorter seeks, so more KB/s, when
 * free clusters were handed out in ascending order. */
static void test_lab_ascending_free_list_reads_back_faster(void **state)
{
	const struct lab_experiment *exp =
		lab_experiment_find("remove-swap-cache-contention-workaround");
	struct lab_arm b, a;

	assert_non_null(exp);
	run_arm(exp->name, &exp->arms[0].policy, "size=2048", 96, 1, 1, &b);
	run_arm(exp->name, &exp->arms[exp->nr_arms - 1].policy, "size=2048", 96, 1, 1, &a);
	print_message("swap-in KB/s per task: interleaved %.0f, ascending %.0f; "
		      "mean seek %.1f vs %.1f MiB\n", b.swapin_kb_s, a.swapin_kb_s,
		      b.swapin_seek_mib, a.swapin_seek_mib);
	assert_true(a.swapin_seek_mib < b.swapin_seek_mib);
	assert_true(a.swapin_kb_s > b.swapin_kb_s);
	lab_arm_fini(&b);
	lab_arm_fini(&a);
}

static void assert_same_counts(const struct lab_arm *x, const struct lab_arm *y)
{
	t_eq(x->folios, y->folios);
	t_eq(x->allocs, y->allocs);
	t_eq(x->delta.swpout[4], y->delta.swpout[4]);
	t_eq(x->delta.swpout_fallback[4], y->delta.swpout_fallback[4]);
	t_eq(x->delta.alloc_slow, y->delta.alloc_slow);
	t_eq(x->delta.cluster_moves, y->delta.cluster_moves);
	t_eq(lab_shared_locks(&x->delta), lab_shared_locks(&y->delta));
	t_eq(x->peak_total, y->peak_total);
}

/* The per-CPU state is the vCPUs', not the threads'. One thread gives the
 * same counts on every run. Two threads running the same vCPUs do the
 * same work (each vCPU's folios come from its own stream), and what each
 * vCPU's own state decides comes out the same: here the ring readers'
 * rotations, one per quota of slots a vCPU allocates, on four devices.
 * (Costs such as slow paths per allocation move with the interleaving as
 * they move with --seed, by some 20 % at this size; not compared.) */
static void test_lab_vcpu_counts_do_not_depend_on_threads(void **state)
{
	struct uswap_policy def = { 0 };
	const char *mix = "jobs=60,long_cap=300,fill=0.6";
	const char *name = "improve-cluster-scan-strategy"; /* one device */
	const char *usemem = "default-priority-round-robin"; /* four */
	struct lab_arm one, again, two;

	run_arm(name, &def, mix, 48, 1, 7, &one);
	run_arm(name, &def, mix, 48, 1, 7, &again);
	assert_same_counts(&one, &again);
	run_arm(name, &def, mix, 48, 2, 7, &two);
	t_eq(two.folios, one.folios);
	t_eq(two.req[4], one.req[4]);
	t_eq(two.delta.swpout[4] + two.delta.swpout_fallback[4],
	     one.delta.swpout[4] + one.delta.swpout_fallback[4]);
	lab_arm_fini(&one);
	lab_arm_fini(&again);
	lab_arm_fini(&two);

	run_arm(usemem, &def, "size=1024,rounds=2", 96, 1, 1, &one);
	run_arm(usemem, &def, "size=1024,rounds=2", 96, 2, 1, &two);
	print_message("ring rotations: 1 thread %llu, 2 threads %llu\n",
		      (unsigned long long)one.delta.ring_advance,
		      (unsigned long long)two.delta.ring_advance);
	assert_true(one.delta.ring_advance > 0);
	t_eq(two.delta.ring_advance, one.delta.ring_advance);
	t_eq(two.allocs, one.allocs);
	t_eq(two.peak_total, one.peak_total);
	lab_arm_fini(&one);
	lab_arm_fini(&two);
}

/* In virtual time every result is the same for one thread and for two:
 * counts, clocks and the whole lock table. */
static void test_lab_virtual_time_same_for_any_thread_count(void **state)
{
	struct uswap_policy b = { .select = USWAP_SELECT_GLOBAL_ROTATE };
	const char *mix = "jobs=40,long_cap=200,fill=0.9";
	struct lab_arm one, two;

	run_arm("per-priority-allocation-queues", &b, mix, 64, 1, 3, &one);
	run_arm("per-priority-allocation-queues", &b, mix, 64, 2, 3, &two);
	assert_true(one.virtual_time && two.virtual_time);
	assert_same_counts(&one, &two);
	assert_true(one.vt.cpu_ns > 0);
	assert_true(one.vt.cpu_ns == two.vt.cpu_ns);
	assert_true(one.vt.makespan_ns == two.vt.makespan_ns);
	t_eq(one.vt.nr_sites, two.vt.nr_sites);
	for (unsigned int i = 0; i < one.vt.nr_sites; i++) {
		const struct lab_lock_site *x = &one.vt.sites[i], *y = &two.vt.sites[i];

		assert_string_equal(x->lock, y->lock);
		assert_string_equal(x->site, y->site);
		t_eq(x->acquired, y->acquired);
		t_eq(x->contended, y->contended);
		assert_true(x->wait_ns == y->wait_ns && x->max_wait_ns == y->max_wait_ns);
	}
	lab_arm_fini(&one);
	lab_arm_fini(&two);
}

/* The model's lock rule with no line cost: vCPU 0 holds L for T (plus
 * the acquisition's cost c); vCPUs 1..N want it at time 0 and hold it
 * for c each. vCPU k gets it after vCPU k - 1, so it waits T + k * c:
 * N contended, the longest wait T + N * c, the sum N * T + c * N(N+1)/2. */
static void test_lab_vt_lock_waits_follow_the_rule(void **state)
{
	const unsigned int N = 7;
	const double T = 1000, c = 10;
	struct lab_cost cost;
	struct lab_vtime vt;
	struct lab_vt_result r;
	static const char lname[] = "&si->lock", site[] = "test";
	int L;

	lab_cost_default(&cost);
	cost.lock = c;
	cost.line = 0;
	t_eq(lab_vt_init(&vt, &cost, N + 1, 1), 0);
	vt.cur = 0;
	lab_vt_lock(&vt, &L, lname, site);
	lab_vt_charge(&vt, T);
	lab_vt_unlock(&vt, &L);
	for (unsigned int k = 1; k <= N; k++) {
		vt.cur = k;
		lab_vt_lock(&vt, &L, lname, site);
		assert_true(vt.clock[k] == T + (k + 1) * c); /* waited, then paid c */
		lab_vt_unlock(&vt, &L);
	}
	lab_vt_result(&vt, &r);
	t_eq(r.nr_sites, 1);
	t_eq(r.sites[0].acquired, N + 1);
	t_eq(r.sites[0].contended, N);
	assert_true(r.sites[0].max_wait_ns == T + N * c);
	assert_true(r.sites[0].wait_ns == N * T + c * N * (N + 1) / 2);
	assert_true(r.makespan_ns == T + (N + 1) * c);
	assert_string_equal(r.sites[0].lock, "si->lock");
	assert_true(lab_lock_site_shared(&r.sites[0]));
	lab_vt_fini(&vt);
}

/* A vCPU that takes a lock another vCPU held last pays the line moves;
 * one that takes it after itself does not. And a request that falls in
 * a gap long enough for the lock's mean holding takes the gap. */
static void test_lab_vt_handover_and_gaps(void **state)
{
	struct lab_cost cost;
	struct lab_vtime vt;
	static const char lname[] = "&u->avail_lock", site[] = "test";
	int L;

	lab_cost_default(&cost);
	cost.lock = 10;
	cost.line = 100;
	cost.handover_lines = 2;
	t_eq(lab_vt_init(&vt, &cost, 2, 1), 0);
	vt.cur = 0;
	lab_vt_lock(&vt, &L, lname, site);   /* [0, 10) */
	lab_vt_unlock(&vt, &L);
	lab_vt_charge(&vt, 5000);
	lab_vt_lock(&vt, &L, lname, site);   /* [5010, 5020): own line */
	assert_true(vt.clock[0] == 5020);
	lab_vt_unlock(&vt, &L);
	vt.cur = 1;
	lab_vt_charge(&vt, 100);
	lab_vt_lock(&vt, &L, lname, site);   /* the gap at 100: vCPU 0's line */
	assert_true(vt.clock[1] == 100 + 10 + 200);
	lab_vt_unlock(&vt, &L);
	lab_vt_fini(&vt);
}

/* A step that touches only its own vCPU's lock: no contention at all,
 * and the scheduler gives every vCPU the same clock. */
struct own_ctx {
	struct lab_vtime *vt;
	int locks[8];
	unsigned int left[8];
};

static int own_step(void *ctx, unsigned int vcpu, unsigned int thread)
{
	struct own_ctx *o = ctx;
	static const char lname[] = "&pc->lock", site[] = "own_step";

	(void)thread;
	if (!o->left[vcpu])
		return 0;
	o->left[vcpu]--;
	lab_vt_lock(o->vt, &o->locks[vcpu], lname, site);
	lab_vt_charge(o->vt, 100);
	lab_vt_unlock(o->vt, &o->locks[vcpu]);
	return 1;
}

static void test_lab_vt_no_shared_state_no_contention(void **state)
{
	struct lab_vcpu_config cfg = { .nr_vcpus = 8, .nr_threads = 2, .slice_ops = 4 };
	struct own_ctx o = { 0 };
	struct lab_cost cost;
	struct lab_vtime vt;
	struct lab_vt_result r;

	lab_cost_default(&cost);
	t_eq(lab_vt_init(&vt, &cost, 8, 1), 0);
	o.vt = &vt;
	for (int v = 0; v < 8; v++)
		o.left[v] = 50;
	t_eq(lab_vcpu_run_virtual(&cfg, &vt, own_step, NULL, &o), 0);
	lab_vt_result(&vt, &r);
	t_eq(r.nr_sites, 1);
	t_eq(r.sites[0].acquired, 400);
	t_eq(r.sites[0].contended, 0);
	for (int v = 0; v < 8; v++)
		assert_true(vt.clock[v] == 50 * (100 + cost.lock));
	lab_vt_fini(&vt);
}

static void test_lab_cost_text(void **state)
{
	struct lab_cost c, d;
	char buf[512];

	lab_cost_default(&c);
	t_eq(lab_cost_parse("line=80,page_out=1e4", &c), 0);
	assert_true(c.line == 80 && c.page_out == 10000);
	lab_cost_format(&c, buf, sizeof(buf));
	lab_cost_default(&d);
	t_eq(lab_cost_parse(buf, &d), 0);
	assert_memory_equal(&c, &d, sizeof(c));
	t_eq(lab_cost_parse("line", &c), -EINVAL);
	t_eq(lab_cost_parse("colour=1", &c), -EINVAL);
	t_eq(lab_cost_parse("line=-1", &c), -EINVAL);
	t_eq(lab_cost_parse("line=1x", &c), -EINVAL);
	t_eq(lab_cost_parse("line=nan", &c), -EINVAL);
}

/* Read trace text @txt: the return code, the error in @why. */
static int read_text(const char *txt, struct lab_trace *t, char *why, size_t len)
{
	FILE *f = fmemopen((void *)txt, strlen(txt), "r");
	int err;

	assert_non_null(f);
	err = lab_trace_read(f, t, why, len);
	fclose(f);
	return err;
}

/* A workload's own trace replayed under its own policy repeats every
 * allocator count: the replay runs the operations in the order the
 * virtual-time scheduler ran them. */
static void test_lab_trace_replay_repeats_the_run(void **state)
{
	const struct lab_experiment *exp = lab_experiment_find("improve-cluster-scan-strategy");
	struct uswap_policy p = exp->arms[0].policy;
	struct lab_experiment rx;
	struct lab_workload wl = exp->workload;
	struct lab_options opt;
	struct lab_arm orig, again;
	struct lab_trace t;
	char *buf = NULL, why[160];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	t_eq(lab_workload_parse("jobs=30,long_cap=200", &wl), 0);
	lab_options_default(&opt);
	opt.vcpu.nr_vcpus = 24;
	opt.trace_out = out;
	lab_trace_header(out, "test");
	t_eq(lab_run_arm(&wl, &p, &opt, &orig), 0);
	fclose(out);
	t_eq(read_text(buf, &t, why, sizeof(why)), 0);
	t_eq(t.nr_cpus, 24);
	assert_true(t.nr > orig.folios);
	/* Replayed on devices of the same size, in the same order. */
	lab_replay_experiment(&rx, "test");
	rx.workload.trace = &t;
	/* The peak and the header over the same device: a hair more, so
	 * the rounding up to whole clusters lands on the same size. */
	rx.workload.replay_fill = (double)(t.peak_slots + 1) /
				  (double)(orig.dev_slots[0] + 1) * (1 + 1e-9);
	opt.trace_out = NULL;
	t_eq(lab_run_arm(&rx.workload, &p, &opt, &again), 0);
	t_eq(again.dev_slots[0], orig.dev_slots[0]);
	t_eq(again.folios, orig.folios);
	t_eq(again.allocs, orig.allocs);
	t_eq(again.frees, orig.frees);
	t_eq(again.delta.swpout[4], orig.delta.swpout[4]);
	t_eq(again.delta.swpout_fallback[4], orig.delta.swpout_fallback[4]);
	t_eq(again.delta.list_scan_steps, orig.delta.list_scan_steps);
	assert_true(again.vt.cpu_ns > 0);
	lab_arm_fini(&orig);
	lab_arm_fini(&again);
	lab_trace_fini(&t);
	free(buf);
}

/* A bad record is refused with its line. */
static void test_lab_trace_bad_records_refused_with_line(void **state)
{
	static const struct { const char *txt, *why; } bad[] = {
		{ "uswap-trace 2\n", "line 1: not a uswap trace" },
		{ "", "line 1: empty" },
		{ "uswap-trace 1\n-1 0 A 0 1\n", "line 2: T is not a number" },
		{ "uswap-trace 1\n18446744073709551616 0 A 0 1\n", "line 2: T is not" },
		{ "uswap-trace 1\n0 4294967296 A 0 1\n", "line 2: CPU out of range" },
		{ "uswap-trace 1\n0 0 A 0 18446744073709551615\n", "line 2: ID out of range" },
		{ "uswap-trace 1\n0 0 A 0 -1\n", "line 2: ID out of range" },
		{ "uswap-trace 1\n0 0 A 0 1\n1 0 F 1 x\n", "line 3: an F record is" },
		{ "uswap-trace 1\n0 0 A 0 1\n1 0 F 1junk\n", "line 3: ID out of range" },
		{ "uswap-trace 1\n0 0 A 0 0x1\n", "line 2: ID out of range" },
		{ "uswap-trace 1\n", "line 1: no records" },
		{ "uswap-trace 1\n0 0 A 0 1\n0 0 Y 1\n", "line 3: unknown operation" },
		{ "uswap-trace 1\n0 0 A 10 1\n", "line 2: ORDER out of range" },
		{ "uswap-trace 1\n0 1024 A 0 1\n", "line 2: CPU out of range" },
		{ "uswap-trace 1\n5 0 A 0 1\n4 0 F 1\n", "line 3: time goes backwards" },
		{ "uswap-trace 1\n# c\n\n0 0 F 1\n", "line 4: ID is not a live folio" },
		{ "uswap-trace 1\n0 0 A 0 1\n0 0 A 0 1\n", "line 3: ID is already" },
		{ "uswap-trace 1\n0 0 A 2 1\n0 0 I 1 4\n", "line 3: PAGE past" },
		{ "uswap-trace 1\n0 0 A 2 1\n0 0 I 1 3\n1 0 I 1 3\n", "line 4: PAGE already" },
		{ "uswap-trace 1\n0 0 A 5 1\n0 0 I 1 0\n", "line 3: I of a folio above order 4" },
		{ "uswap-trace 1\n0 0 A 0 1 9\n", "line 2: an A record is" },
		{ "uswap-trace 1\n0 0 F\n", "line 2: an F record is" },
		{ "uswap-trace 1\n0 0\n", "line 2: expected" },
		{ "uswap-trace 1\n0 0 X 1\n", "line 2: an X record is" },
	};
	struct lab_trace t;
	char why[160];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		t_eq(read_text(bad[i].txt, &t, why, sizeof(why)), -EINVAL);
		if (strncmp(why, bad[i].why, strlen(bad[i].why)))
			fail_msg("case %zu: got '%s', want '%s...'", i, why, bad[i].why);
	}
	/* IDs may be used again once their folio is gone, by F or by its
	 * last page coming back in. */
	t_eq(read_text("uswap-trace 1\n0 0 A 1 1\n1 2 I 1 0\n2 2 I 1 1\n"
		       "3 0 A 0 1\n4 3 F 1\n5 0 A 3 1\n", &t, why, sizeof(why)), 0);
	t_eq(t.nr, 6);
	t_eq(t.nr_cpus, 4);
	t_eq(t.peak_slots, 8);
	t_eq(t.nr_slots, 1);
	lab_trace_fini(&t);
	/* X ends every folio: IDs are free again, the places reused. */
	t_eq(read_text("uswap-trace 1\n0 0 A 2 1\n1 0 A 0 2\n2 1 X\n3 0 A 0 1\n"
		       "4 0 A 0 2\n5 0 F 1\n", &t, why, sizeof(why)), 0);
	t_eq(t.nr, 6);
	t_eq(t.nr_slots, 2);
	t_eq(t.peak_slots, 5);
	lab_trace_fini(&t);
	t_eq(read_text("uswap-trace 1\n0 0 A 0 1\n1 0 X\n2 0 F 1\n", &t, why,
		       sizeof(why)), -EINVAL);
	assert_string_equal(why, "line 4: ID is not a live folio");
	/* CRLF line ends read as LF, and the largest ID works. */
	t_eq(read_text("uswap-trace 1\r\n0 0 A 0 18446744073709551614\r\n"
		       "1 0 F 18446744073709551614\r\n", &t, why, sizeof(why)), 0);
	t_eq(t.nr, 2);
	lab_trace_fini(&t);
}

/* Every experiment's policies print as text that parses back to them. */
static void test_lab_policy_text_round_trips(void **state)
{
	struct uswap_policy p;
	char buf[256];

	for (unsigned int i = 0; i < lab_nr_experiments(); i++) {
		const struct lab_experiment *e = lab_experiment_at(i);
		for (unsigned int a = 0; a < e->nr_arms; a++) {
			memset(&p, 0xff, sizeof(p));
			lab_policy_format(&e->arms[a].policy, buf, sizeof(buf));
			t_eq(lab_policy_parse("default", &p), 0);
			t_eq(lab_policy_parse(buf, &p), 0);
			assert_memory_equal(&p, &e->arms[a].policy, sizeof(p));
		}
	}
	/* Found by fuzz_parsers: nodes=1 (one node, as 0) formatted as
	 * "default" and parsed back as 0, a different policy. */
	t_eq(lab_policy_parse("default", &p), 0);
	t_eq(lab_policy_parse("lock=device,nodes=1", &p), 0);
	lab_policy_format(&p, buf, sizeof(buf));
	struct uswap_policy q;

	t_eq(lab_policy_parse("default", &q), 0);
	t_eq(lab_policy_parse(buf, &q), 0);
	assert_memory_equal(&p, &q, sizeof(p));
	t_eq(lab_policy_parse("select=sideways", &p), -EINVAL);
	t_eq(lab_policy_parse("colour=blue", &p), -EINVAL);
	t_eq(lab_policy_parse("", &p), -EINVAL);
}

/* The report's sign check and the experiment table. */
static void test_lab_direction_and_names(void **state)
{
	assert_true(lab_direction_agrees(-1, -63.2));
	assert_false(lab_direction_agrees(-1, 3.0));
	assert_true(lab_direction_agrees(+1, 18.6));
	assert_true(lab_direction_agrees(0, 0.59));
	assert_false(lab_direction_agrees(0, 40.0));
	assert_false(lab_direction_agrees(-1, NAN));
	t_eq(lab_nr_experiments(), 5);
	for (unsigned int i = 0; i < lab_nr_experiments(); i++) {
		const struct lab_experiment *e = lab_experiment_at(i);

		assert_ptr_equal(lab_experiment_find(e->name), e);
		assert_true(e->nr_metrics > 0 && e->nr_metrics <= LAB_MAX_METRICS);
		assert_true(e->nr_arms >= 2 && e->nr_arms <= LAB_MAX_ARMS);
	}
	assert_null(lab_experiment_find("no-such-seed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lab_round_robin_evens_device_use_legacy_does_not),
		cmocka_unit_test(test_lab_virtual_time_same_for_any_thread_count),
		cmocka_unit_test(test_lab_vt_lock_waits_follow_the_rule),
		cmocka_unit_test(test_lab_vt_handover_and_gaps),
		cmocka_unit_test(test_lab_vt_no_shared_state_no_contention),
		cmocka_unit_test(test_lab_cost_text),
		cmocka_unit_test(test_lab_trace_replay_repeats_the_run),
		cmocka_unit_test(test_lab_trace_bad_records_refused_with_line),
		cmocka_unit_test(test_lab_nonfull_scan_one_fewer_order4_fallbacks),
		cmocka_unit_test(test_lab_cluster_first_takes_far_fewer_shared_locks),
		cmocka_unit_test(test_lab_rings_take_fewer_shared_locks_than_global_rotate),
		cmocka_unit_test(test_lab_ascending_free_list_reads_back_faster),
		cmocka_unit_test(test_lab_vcpu_counts_do_not_depend_on_threads),
		cmocka_unit_test(test_lab_policy_text_round_trips),
		cmocka_unit_test(test_lab_direction_and_names),
	};

	return cmocka_run_group_tests_name("lab", tests, NULL, NULL);
}
