/* SPDX-License-Identifier: MIT */
/*
 * run_cmd.h - `uswap run` (run_cmd.c).
 */
#ifndef USWAP_TOOLS_RUN_CMD_H
#define USWAP_TOOLS_RUN_CMD_H

#include <pthread.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* `uswap run [OPTIONS] -- CMD [ARG]...`; argv[0] is "run". */
int cmd_run(int argc, char **argv);

#define MAX_DEVICES 32

/* The long options without a short one (getopt codes). */
enum { OPT_DEVICE = 256, OPT_ORDER, OPT_HEAP, OPT_STATS, OPT_JSON, OPT_PLOT, OPT_TRACE,
       OPT_KILL_AFTER, OPT_PRINT_CONFIG, OPT_DAEMON, OPT_IN_PROCESS, OPT_READAHEAD,
       OPT_NO_WORKINGSET };

/* --readahead's default: pages at order 0 (none above: it lost at 64 KiB,
 * docs/pager.md "Readahead"). */
#define RUN_READAHEAD_DEFAULT 32

struct run_options {
	uint64_t limit, heap;
	unsigned int order;
	int readahead;      /* pages; -1: the default for the order */
	const char *devices[MAX_DEVICES];
	unsigned int nr_devices;
	bool stats;
	const char *json;
	const char *plot;
	const char *trace;
	double kill_after;  /* seconds from SIGTERM to SIGKILL (guard) */
	bool daemon;        /* one swap subsystem for the tree (default; not
			       with --in-process) */
	bool no_workingset; /* --no-workingset: the blind clock (comparisons) */
	char **cmd;
};

/* --readahead as it applies: the pages set, else the order's default. */
unsigned int run_readahead(const struct run_options *o);

/* run_reach.c: whether the agent can be preloaded into @cmd (looked up
 * in $PATH as exec does; a script by its interpreter): not into a
 * statically linked program or one run in secure-execution mode. Says so
 * on stderr when not. Return: true if it can (or it cannot be told). */
bool run_reach_check(const char *cmd);

/* Set option @opt ('l' or OPT_*) of @o from @arg, as the command line
 * does (the config file too). Return: 0, or the usage error's status
 * after saying why. */
int run_apply_option(struct run_options *o, int opt, const char *arg);

/* run_config.c: the defaults of uswap.conf(5). Where a setting came from. */
enum run_source { RUN_SRC_DEFAULT, RUN_SRC_SYSTEM, RUN_SRC_USER, RUN_SRC_CLI };
struct run_config {
	char path[2][4200];            /* [0] system file, [1] user file ("":
					  none) */
	enum run_source limit, order, heap, readahead, devices;
};
/*
 * run_config_load() - apply the system file, then the user file, to @o
 * (devices: the last file that names any replaces the list). Return: 0,
 * or the usage error's status (a line that cannot be read or applied,
 * said with the file and line).
 */
int run_config_load(struct run_options *o, struct run_config *c);
/* Print the settings a run would use and where each came from. */
void run_config_print(const struct run_options *o, const struct run_config *c);

/* run_plot.c: one sample of --plot from @pid's status socket (nothing
 * if it does not answer). */
struct cli_plot;
void run_plot_sample(struct cli_plot *p, long pid);

/* run_group.c: the tree's charge group, in /dev/shm under @name. */
struct uswap_pager_group_stats;
struct run_group {
	char name[64];           /* "" when there is none */
	void *mem;
};
/* Make it with the tree's @limit. Return: 0 or -errno (then none). */
int run_group_create(uint64_t limit, struct run_group *g);
/* Take the charges of members that ended off the group. */
void run_group_reap(struct run_group *g);
/* Its final counters into @st (zeros without a group); unmapped and
 * removed then. */
void run_group_end(struct run_group *g, struct uswap_pager_group_stats *st);

/* run_daemon.c: `uswap run --daemon`, the tree's swap subsystem in this
 * process (<uswap/daemon.h>). */
struct run_client;
struct run_share;
struct run_daemon {
	struct uswap *u;             /* the devices, the swap cache */
	void *group;                 /* the tree's limit (a charge group) */
	uint64_t limit;
	unsigned int order;
	unsigned int readahead;      /* pages (--readahead) */
	unsigned int pager_flags;    /* USWAP_PAGER_NO_WORKINGSET or 0 */
	int lfd;                     /* listening socket */
	char name[64];               /* its abstract name ($USWAP_RUN_DAEMON) */
	pthread_t accept_th;
	bool accepting;
	pthread_mutex_t lock;        /* clients */
	pthread_cond_t ended_cond;   /* a client ended (with lock) */
	struct run_client *clients;  /* every connection, ended ones too */
	struct run_share *shares;    /* forks not yet taken by their child */
	_Atomic pid_t cmd;           /* CMD, once forked: its line is the root */
	int spare_fd;                /* given up when out of descriptors */
	rlim_t nofile_soft;          /* RLIMIT_NOFILE's soft limit before ... */
	bool nofile_raised;          /* ... we raised it to the hard one */
	pthread_t status_th;         /* run_daemon_status.c */
	int status_wake;             /* its eventfd: a socket came or went, stop */
	bool status_on;
	_Atomic bool status_stop;
	bool tracing;                /* --trace: the tree's stream recorded */
};
/* Swap the devices on, make the group, listen. Return: 0 or the CLI's
 * runtime-error status (said); run_daemon_end() cleans up either way. */
int run_daemon_start(const struct run_options *o, struct run_daemon *d);
/* --trace: record the tree's swap stream (one instance: one stream) on
 * @fd, which it takes over. Return: 0 or the runtime-error status (said). */
int run_daemon_trace(struct run_daemon *d, int fd);
/* In CMD's process, before its exec: the soft RLIMIT_NOFILE as it was. */
void run_daemon_child(const struct run_daemon *d);
/* After CMD ended: processes still connected get SIGTERM, SIGKILL
 * @kill_after seconds later; each image's line goes to @stats (CMD's, pid
 * @cmd, with the instance's figures); the group's counters into @gs. */
void run_daemon_end(struct run_daemon *d, const char *stats, pid_t cmd, double kill_after,
		    struct uswap_pager_group_stats *gs);

/* run_tree.c: CMD's tree as the kernel sees it (anonymous RSS of every
 * process below @top but @skip), sampled every RUN_TREE_PERIOD_MS. */
#define RUN_TREE_PERIOD_MS 50
/* The version of `uswap run --json`'s object: raised when a key is
 * renamed or removed (uswap-run(1)). */
#define RUN_JSON_VERSION 1
struct run_tree {
	pid_t top;               /* `uswap run` itself: the tree's subreaper */
	pid_t skip;              /* its guard process, not CMD's */
	uint64_t anon_peak;      /* bytes: the largest RssAnon sum of one sample */
	uint64_t pss_peak;       /* bytes: the largest Pss_Anon sum (a page
				    shared after a fork counted once) */
	unsigned int procs_peak; /* processes in the largest sample */
	unsigned int samples;
};
void run_tree_sample(struct run_tree *t);

/*
 * run_stats_report() - add up the agents' stats lines in @stats (one per
 * process that had a pager), print them on stderr if @print, write them
 * to @json (if not NULL: its path, open as @json_fd) with @status as
 * exit_status, @tree's peaks as "tree" and the tree's charge group
 * (@group, its limit 0 when there was none) as "group". With no line, say
 * why there may be none, and write @json with exit_status and
 * "processes": 0 only (never a stale file from an earlier run).
 * Return: 0, or the CLI's runtime-error status (@json not writable, a
 * write failed).
 */
int run_stats_report(const char *stats, const char *cmd, bool print, const char *json,
		     int json_fd, int status, const struct run_tree *tree,
		     const struct uswap_pager_group_stats *group);

#endif /* USWAP_TOOLS_RUN_CMD_H */
