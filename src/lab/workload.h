/* SPDX-License-Identifier: MIT */
/*
 * workload.h - what the workloads of the lab share (workload.c: the
 * arm; folio.c: the folios and their books) and the hooks each one fills
 * in (workload_usemem.c, workload_kbuild.c, workload_swapin.c). Internal
 * to src/lab/.
 */
#ifndef USWAP_LAB_WORKLOAD_H
#define USWAP_LAB_WORKLOAD_H

#include "lab/lab_internal.h"

/* One allocation the lab holds: a whole folio, or one order-0 piece of a
 * folio that was split after -E2BIG. */
struct lab_slot {
	uint64_t val;       /* uswap_entry_t.val */
	unsigned int order;
};

/* A folio as swapped out: 1 slot run, or 2^order order-0 slots. Once
 * mapped, each page holds one reference of its own (the page table's)
 * and may be freed alone, as a page swapped back in is. */
struct lab_folio {
	unsigned int nr;                          /* 0 = none */
	unsigned int order;                       /* of the folio */
	bool mapped;                              /* references taken, cache
						     pin dropped */
	uint16_t gone;                            /* bit i: page i freed */
	uint64_t id;                              /* its name in the trace the
						     arm writes (0: none) */
	struct lab_slot s[1u << 4];               /* orders up to 4 split */
};
#define LAB_FOLIO_MAX_SPLIT_ORDER 4

/* What one real thread did; written only by that thread. */
struct lab_thread_stat {
	_Alignas(64) uint64_t folios;
	uint64_t allocs;
	uint64_t frees;
	uint64_t bytes;
	uint64_t req[USWAP_NR_ORDERS];
	uint64_t split[USWAP_NR_ORDERS];
	uint64_t enospc;
	_Atomic uint64_t ops;                    /* folios, for samples and
						    progress */
	_Atomic int64_t used[USWAP_MAX_DEVICES]; /* slots this thread's tasks
						    hold per device (relaxed;
						    read by the sampler) */
};

struct lab_env;

/* The hooks of one workload. */
struct lab_wl_ops {
	/* usable slots each device needs, from the workload's size */
	uint64_t (*device_slots)(const struct lab_workload *wl,
				 const struct lab_options *opt);
	/* expected folios swapped out by all vCPUs (progress), and steps of
	 * the busiest vCPU (rounds, to space the samples) */
	uint64_t (*total_ops)(const struct lab_env *env);
	uint64_t (*max_vcpu_ops)(const struct lab_env *env);
	int (*init)(struct lab_env *env);        /* per-vCPU state */
	lab_step_fn step;                        /* ctx is the env */
	int (*after)(struct lab_env *env);       /* after the timed part */
	void (*fini)(struct lab_env *env);
};

struct lab_env {
	struct uswap *u;
	const struct lab_workload *wl;
	const struct lab_options *opt;
	struct lab_arm *arm;
	const struct lab_wl_ops *ops;
	void *state;                             /* the workload's */
	unsigned int nr_vcpus, nr_threads;
	struct lab_thread_stat *ts;              /* [nr_threads] */
	/* sampling and progress: thread 0 only */
	uint64_t sample_every;                   /* rounds between samples */
	uint64_t total_ops;                      /* expected, for progress */
	uint64_t start_ns, last_progress_ns;
	const char *arm_name;
	struct lab_vtime *vt;                    /* NULL in wall-clock mode */
	/* The zram pool lock of each device, a lock in virtual time only
	 * (the lab's devices hold no data): its address is its identity. */
	char pool[USWAP_MAX_DEVICES];
	uint64_t next_id;                        /* trace_out's folio names */
};

/* folio.c */
/*
 * lab_folio_alloc() - swap slots for a folio of @order, as the kernel's
 * swap-out gets them: whole, or after -E2BIG as 2^order order-0 slots
 * (counted as a split). Updates @thread's counts and per-device use.
 * Return: 0; -ENOSPC (no room even for order-0 slots: nothing kept);
 * -E2BIG only for orders above LAB_FOLIO_MAX_SPLIT_ORDER; a library
 * -errno.
 */
int lab_folio_alloc(struct lab_env *env, unsigned int thread,
		    unsigned int order, struct lab_folio *f);
/* Free every slot of @f and mark it empty. Return: 0 or a library -errno. */
int lab_folio_free(struct lab_env *env, unsigned int thread, struct lab_folio *f);
/*
 * lab_folio_map() - the write finished: each page takes its page-table
 * reference (uswap_dup()) and the swap cache lets go (uswap_put_folio()),
 * so the pages can later be freed one by one.
 * Return: 0 or a library -errno.
 */
int lab_folio_map(struct lab_env *env, unsigned int thread, struct lab_folio *f);
/*
 * lab_folio_free_page() - page @page of a mapped folio is swapped back in
 * alone (no mTHP swap-in): its slot is freed, the rest stay.
 * Return: 0; -ENOENT (already freed); a library -errno.
 */
int lab_folio_free_page(struct lab_env *env, unsigned int thread,
			struct lab_folio *f, unsigned int page);

/* workload.c */
uint64_t lab_now_ns(void);
/* Round hook: samples per-device use and prints progress. */
void lab_env_round(void *ctx, uint64_t round);
/* Slots per device for @demand slots at fill ratio @fill spread over @nr
 * devices: whole clusters, the header slot among them. */
uint64_t lab_device_slots_for(uint64_t demand, double fill, unsigned int nr);

extern const struct lab_wl_ops lab_usemem_ops;
extern const struct lab_wl_ops lab_kbuild_ops;
extern const struct lab_wl_ops lab_swapin_ops;
extern const struct lab_wl_ops lab_replay_ops;

/* workload_replay.c: run the trace's records in order, in virtual time. */
int lab_replay_run(struct lab_env *env, struct lab_vtime *vt);

#endif /* USWAP_LAB_WORKLOAD_H */
