/* SPDX-License-Identifier: MIT */
/*
 * stress.h - `uswap stress`: the whole stack at once, against a shadow
 * model, with faults injected, devices swapped off and on under load, and
 * an oracle run at checkpoints.
 *
 * Two swap instances run side by side in one process:
 *  - the swap-path instance: worker threads swap folios of orders 0..4
 *    out and in, dup and free them (stress_swap.c). Every page carries
 *    (stamp id, version, page index), so wrong data is caught, and the
 *    model knows every slot's reference count;
 *  - the pager instance: threads write and read pages of a userfaultfd
 *    region kept under a resident limit (stress_pager.c), when the
 *    kernel allows userfaultfd.
 * Each has its own device set (stress_devices.c): ram, zram lz4 and zstd,
 * mkswap'd files, and faulty: wrappers injecting read and write errors at
 * the set rates. A churn thread swaps random devices off and on again.
 *
 * Quiescing: every operation of a worker runs under the read side of
 * stress.quiesce; checkpoints and swapoffs take the write side, so the
 * oracle sees a still model and the fault counts of a device going away
 * are read while nothing but the swapoff itself does I/O on it.
 */
#ifndef USWAP_TOOLS_STRESS_H
#define USWAP_TOOLS_STRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uswap/uswap.h>

#define STRESS_MAX_ORDER   4   /* folios of the swap-path workers */
#define STRESS_MAX_DEVICES 8   /* per instance */
#define STRESS_MAX_REPORTS 16  /* violations printed in full */
#define STRESS_MAX_PROCESSES 16 /* --processes */

enum stress_mutation {
	STRESS_MUTATE_NONE,
	STRESS_MUTATE_FLIP_BYTE, /* flip a byte of one swapped page in a
				    swap file behind uswap's back */
	STRESS_MUTATE_SKIP_FREE, /* skip one uswap_swap_free() the model
				    counts as done */
};

struct stress_opts {
	double duration;             /* seconds; 0: until --ops */
	uint64_t ops;                /* swap-path operations; 0: until duration */
	unsigned int threads;        /* swap-path workers */
	unsigned int objects;        /* swap-path objects (folios) */
	unsigned int pager_threads;  /* 0: no pager */
	uint64_t pager_size, pager_limit;
	double read_rate, write_rate; /* faulty: injection rates */
	double checkpoint;           /* seconds between checkpoints */
	double churn;                /* seconds between swapoff/swapon; 0: none */
	bool migrate;                /* workers hop between CPUs */
	const char *dir;             /* where the swap files go */
	uint64_t seed;
	enum stress_mutation mutate;
	bool json, quiet;
	const char *plot;            /* --plot FILE.svg, or NULL */
	unsigned int processes;      /* --processes: the tree's size; 0: none */
	const char *tree_worker;     /* --tree-worker: run as a process of it */
};

/* One device a set can swap on: its spec, and its state while on. */
struct stress_dev {
	char spec[4200];
	char label[32];          /* "zram-lz4", "file-faulty", ... */
	char path[4096];         /* the swap file, "" for none */
	int prio;
	bool faulty;
	int type;                /* -1 while off */
	struct uswap_backend *b; /* while on; the device owns it */
	struct uswap_fault_counts done; /* injected by earlier swapons */
};

struct stress_devset {
	const char *name;        /* "swap" or "pager" */
	struct uswap *u;
	struct stress_dev dev[STRESS_MAX_DEVICES];
	unsigned int nr;
};

/* Counters of the run; every worker adds to them. */
struct stress_counts {
	_Atomic uint64_t swap_out, swap_in, dup, free, rewrite, drop;
	_Atomic uint64_t out_kept;      /* swap-outs refused (full, -E2BIG,
					   -EIO): the folio stays in memory */
	_Atomic uint64_t read_eio;      /* swap-ins that were -EIO */
	_Atomic uint64_t write_eio;     /* swap-outs that were -EIO */
	_Atomic uint64_t bytes_out, bytes_in;
	_Atomic uint64_t pager_writes, pager_reads, pager_lost;
	_Atomic uint64_t swapoffs, swapons, swapoff_last_of_prio, swapoff_failed;
	_Atomic uint64_t unuse_calls, checkpoints;
	_Atomic uint64_t wrong, lost, double_alloc, leaks, bad_refs;
	_Atomic uint64_t max_latency_ns;
};

struct stress_swap;  /* stress_swap.c */
struct stress_pager; /* stress_pager.c */

struct stress {
	const struct stress_opts *o;
	struct stress_devset sets[2]; /* [0] swap path, [1] pager */
	unsigned int nr_sets;
	struct stress_swap *swap;
	struct stress_pager *pager;
	bool pager_ran;               /* the pager part ran (userfaultfd) */
	uint64_t pager_fault_ns_max;  /* its slowest fault, read at the end */
	struct stress_counts c;
	pthread_rwlock_t quiesce;
	_Atomic bool stop;
	_Atomic uint64_t ops_done;    /* swap-path operations */
	pthread_mutex_t report_lock;
	unsigned int nr_reports;
	char reports[STRESS_MAX_REPORTS][256];
	uint64_t start_ns;
	/* --processes (stress_tree.c) */
	pid_t tree_pid;               /* its uswap run; 0: none */
	char tree_dir[4200], tree_out[4210], tree_json[4220];
	bool tree_ran;                /* it reported a result */
	unsigned int tree_counts[4];  /* processes, forked, exec'd, killed */
	uint64_t tree_pages_checked;  /* by its root */
};

/* splitmix64: the next number of the stream @s (each worker has its own,
 * seeded from --seed, so a run replays). */
static inline uint64_t stress_rnd(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* stress.c */
void stress_violation(struct stress *s, _Atomic uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void stress_latency(struct stress *s, uint64_t ns);

/* stress_devices.c */
int stress_devset_init(struct stress *s, struct stress_devset *ds, const char *name,
		       bool pager, char *err, size_t errlen);
int stress_dev_swapon(struct stress *s, struct stress_devset *ds, unsigned int i,
		      char *err, size_t errlen);
int stress_dev_swapoff(struct stress *s, struct stress_devset *ds, unsigned int i);
void stress_devset_faults(const struct stress_devset *ds, struct uswap_fault_counts *sum);
void stress_devset_teardown(struct stress_devset *ds);
void *stress_churn_main(void *arg);

/* stress_swap.c */
int stress_swap_start(struct stress *s, char *err, size_t errlen);
int stress_swap_run(struct stress *s, char *err, size_t errlen);
void stress_swap_join(struct stress *s);
void stress_swap_on_swapon(struct stress *s, int type, uint64_t nr_slots);
void stress_swap_on_swapoff(struct stress *s, int type);
void stress_swap_checkpoint(struct stress *s);
bool stress_swap_keep_on(const struct stress *s, const struct stress_devset *ds, unsigned int i);
void stress_swap_drain(struct stress *s);
void stress_swap_free(struct stress *s);

/* stress_pager.c */
int stress_pager_start(struct stress *s, char *err, size_t errlen);
void stress_pager_join(struct stress *s);
void stress_pager_checkpoint(struct stress *s);
void stress_pager_drain(struct stress *s);
void stress_pager_free(struct stress *s);
uint64_t stress_pager_fault_ns_max(struct stress *s);
/* The region's resident and limit MiB (0, 0 without a pager). */
void stress_pager_resident(struct stress *s, double *resident_mib, double *limit_mib);

/* stress_tree.c: --processes. _start() launches the tree under uswap run
 * --daemon; _finish() waits for it (it runs --duration) and counts its
 * violations; a tree that could not run here leaves @note. _worker():
 * the process that --tree-worker SPEC names. */
int stress_tree_start(struct stress *s, char *err, size_t errlen);
void stress_tree_finish(struct stress *s, char *note, size_t notelen);
int stress_tree_worker(const char *spec);

/* stress_plot.c: one sample of --plot. */
struct cli_plot;
void stress_plot_sample(struct stress *s, struct cli_plot *p);

#endif /* USWAP_TOOLS_STRESS_H */
