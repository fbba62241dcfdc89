// SPDX-License-Identifier: MIT
/*
 * run_cmd.c - `uswap run -- CMD [ARG]...`: run an unmodified program with
 * its heap (malloc family, private anonymous mmaps) swapped under a
 * resident limit.
 *
 * The program starts with the agent preloaded (libuswap-preload.so,
 * src/agent/agent.h), which builds the swap devices and the pager inside
 * the program and serves its malloc family from a pager region. This
 * command checks everything it can before anything starts (the limit, the
 * device specs, kernel-fault userfaultfd, the agent and CMD itself), then
 * runs CMD as its child, passes SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1,
 * SIGUSR2 and SIGALRM on, and exits with
 * CMD's status (128+N for a signal), printing the agent's stats with
 * --stats and writing them with --json FILE.
 */
#include "cli.h"
#include "run_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uswap/daemon.h>
#include <uswap/uswap.h>

#define CMD "run"

static const char usage_text[] =
"Usage: uswap run [OPTIONS] -- CMD [ARG]...\n"
"\n"
"Run CMD, unmodified, with its heap (the malloc family: malloc, calloc,\n"
"realloc, free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,\n"
"malloc_usable_size; and its private anonymous read-write mmap()s, with\n"
"munmap, mremap and madvise of them) in userfaultfd pager memory kept\n"
"under --limit resident bytes and swapped to the devices given. Its other\n"
"private anonymous mappings of 256 KiB or more (PROT_NONE reservations\n"
"committed with mprotect or MAP_FIXED, as the JVM and V8 make) are swapped\n"
"where they are. Stacks, file mappings, shared and small mappings are not.\n"
"\n"
"uswap run is the swap subsystem of CMD's whole tree, as the kernel's swap\n"
"is of every process: it holds the devices, the swap cache and the limit,\n"
"and serves every process's faults; the devices' memory (zram pools) is\n"
"its own, outside the programs. A fork shares the swapped-out pages, as\n"
"the kernel's does. Processes of the tree still running when CMD ends get\n"
"SIGTERM, then SIGKILL after --kill-after: they cannot outlive their swap.\n"
"\n"
"Options:\n"
"  -l, --limit SIZE    resident bytes of the heap, of the whole process\n"
"                      tree together (default 256M; at least 1M; 1.5G,\n"
"                      or 50% of the machine's RAM)\n"
"  --device SPEC       a swap device (repeatable; see 'uswap swapon --help')\n"
"                      (default: 4 zram devices of 1G, equal priority)\n"
"  --order N           folio order 0..4: pages swapped together (default 0)\n"
"  --readahead PAGES   a fault that continues a sequential stream also\n"
"                      brings in up to PAGES pages after it, 0..64 (default\n"
"                      32 at --order 0, else 0)\n"
"  --no-workingset     evict without the refault distance: a folio that\n"
"                      faults back soon after its eviction gets no more\n"
"                      time in memory than one never seen again (for\n"
"                      comparisons; docs/pager.md, \"The working set\")\n"
"  --heap SIZE         address space reserved for the heap, 64M..4T\n"
"                      (default 8G); allocations past it are served\n"
"                      unswapped\n"
"  --stats             print the swap statistics when CMD exits\n"
"  --json FILE         write them to FILE as one JSON object (- for\n"
"                      standard output, after CMD's own)\n"
"  --trace FILE        record the tree's swap stream (CMD's alone with\n"
"                      --in-process) as a lab trace for 'uswap lab\n"
"                      replay FILE --arm POLICY --arm POLICY'\n"
"  --kill-after SECS   processes still running when CMD ends, or CMD when\n"
"                      uswap run itself is killed (SIGKILL), get SIGTERM\n"
"                      at once and SIGKILL this long after (default 5)\n"
"  --plot FILE.svg     draw resident heap, each device's use and the swap\n"
"                      rates over time (read every 0.2 s) with gnuplot;\n"
"                      skipped with a note if gnuplot is missing\n"
"  --in-process        the older mode: each process of the tree runs a\n"
"                      swap system of its own inside it (its pager, its\n"
"                      devices, zram's pools in its memory), only the\n"
"                      limit shared; processes may outlive CMD\n"
"  --daemon            the default mode, said explicitly\n"
"  --print-config      print the settings a run would use (the defaults,\n"
"                      uswap.conf(5), these options) and where each came\n"
"                      from; CMD is not needed\n"
"  -h, --help          show this help\n"
"\n"
"Defaults come from SYSCONFDIR/uswap.conf, then $XDG_CONFIG_HOME/uswap.conf\n"
"(else ~/.config/uswap.conf): [run] limit, order, heap, device (see\n"
"uswap.conf(5)); the command line wins.\n"
"\n"
"The agent is $USWAP_PRELOAD if set (ignored in secure-execution mode:\n"
"set-user-ID or with file capabilities), else, for the build tree's uswap\n"
"only, the build tree's, else the installed libuswap-preload.so.\n"
"\n"
"Needs userfaultfd that handles faults from system calls too (read(2) into\n"
"swapped-out memory): root, sysctl vm.unprivileged_userfaultfd=1, or\n"
"read-write access to /dev/userfaultfd.\n"
"\n"
"Exit status: CMD's (128+N when a signal ended it); 127 CMD not found, 126\n"
"not executable; 1 uswap could not run it; 2 usage error.\n";


static const struct option long_options[] = {
	{ "limit",  required_argument, NULL, 'l' },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "order",  required_argument, NULL, OPT_ORDER },
	{ "readahead", required_argument, NULL, OPT_READAHEAD },
	{ "heap",   required_argument, NULL, OPT_HEAP },
	{ "stats",  no_argument,       NULL, OPT_STATS },
	{ "json",   required_argument, NULL, OPT_JSON },
	{ "plot",   required_argument, NULL, OPT_PLOT },
	{ "trace",  required_argument, NULL, OPT_TRACE },
	{ "kill-after", required_argument, NULL, OPT_KILL_AFTER },
	{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
	{ "daemon", no_argument,       NULL, OPT_DAEMON },
	{ "in-process", no_argument,   NULL, OPT_IN_PROCESS },
	{ "no-workingset", no_argument, NULL, OPT_NO_WORKINGSET },
	{ "help",   no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};


int run_apply_option(struct run_options *o, int opt, const char *arg)
{
	switch (opt) {
	case 'l': {
		int err = cli_parse_mem_size(arg, &o->limit);

		if (err == -ERANGE)
			return cli_usage_error(CMD, "--limit '%s': too large", arg);
		if (err || o->limit < (1u << 20))
			return cli_usage_error(CMD, "--limit '%s': want a size of 1M or more "
					       "(K, M, G, T suffixes, 1.5G; or a share of RAM: "
					       "50%%)", arg);
		return 0;
	}
	case OPT_DEVICE:
		if (o->nr_devices == MAX_DEVICES)
			return cli_usage_error(CMD, "more than %d --device", MAX_DEVICES);
		/* The agent gets the specs one per line (agent.h): a newline
		 * inside one would split it into others. */
		if (strchr(arg, '\n'))
			return cli_usage_error(CMD, "--device: a spec cannot hold a newline");
		if (cli_check_spec(CMD, "--device", arg))
			return CLI_EXIT_USAGE;
		o->devices[o->nr_devices++] = arg;
		return 0;
	case OPT_ORDER:
		if (cli_parse_uint(arg, 0, USWAP_PAGER_MAX_ORDER, &o->order))
			return cli_usage_error(CMD, "--order '%s': want 0..%d", arg,
					       USWAP_PAGER_MAX_ORDER);
		return 0;
	case OPT_READAHEAD: {
		unsigned int pages;

		if (cli_parse_uint(arg, 0, 64, &pages))
			return cli_usage_error(CMD, "--readahead '%s': want pages, 0..64", arg);
		o->readahead = (int)pages;
		return 0;
	}
	case OPT_HEAP:
		if (cli_parse_size(arg, &o->heap) || o->heap < (64u << 20) ||
		    o->heap > ((uint64_t)1 << 42))
			return cli_usage_error(CMD, "--heap '%s': want 64M..4T", arg);
		return 0;
	case OPT_STATS: o->stats = true; return 0;
	case OPT_DAEMON: o->daemon = true; return 0;
	case OPT_IN_PROCESS: o->daemon = false; return 0;
	case OPT_NO_WORKINGSET: o->no_workingset = true; return 0;
	case OPT_KILL_AFTER:
		if (cli_parse_seconds(arg, &o->kill_after) || o->kill_after > 3600)
			return cli_usage_error(CMD, "--kill-after '%s': want seconds, up to 3600",
					       arg);
		return 0;
	case OPT_PLOT:
		if (!strcmp(arg, "--"))
			return cli_usage_error(CMD, "--plot needs a FILE before '--'");
		o->plot = arg;
		return 0;
	case OPT_TRACE:
		if (!strcmp(arg, "--"))
			return cli_usage_error(CMD, "--trace needs a FILE before '--'");
		o->trace = arg;
		return 0;
	case OPT_JSON:
		if (!strcmp(arg, "--")) /* `--json -- CMD`: the FILE is missing */
			return cli_usage_error(CMD, "--json needs a FILE before '--'");
		o->json = arg;
		return 0;
	}
	return cli_usage_error(CMD, "unknown option");
}

unsigned int run_readahead(const struct run_options *o)
{
	if (o->readahead >= 0)
		return (unsigned int)o->readahead;
	return o->order ? 0 : RUN_READAHEAD_DEFAULT;
}

/* Where the command line's own settings come from: itself. The first
 * --device replaces the files' list. */
static void note_cli(struct run_options *o, struct run_config *c, int opt)
{
	if (opt == 'l')
		c->limit = RUN_SRC_CLI;
	else if (opt == OPT_ORDER)
		c->order = RUN_SRC_CLI;
	else if (opt == OPT_HEAP)
		c->heap = RUN_SRC_CLI;
	else if (opt == OPT_READAHEAD)
		c->readahead = RUN_SRC_CLI;
	else if (opt == OPT_DEVICE && c->devices != RUN_SRC_CLI) {
		o->nr_devices = 0;
		c->devices = RUN_SRC_CLI;
	}
}

/* The options: built-in defaults, then uswap.conf(5), then the command
 * line. Return: 0; -1 when done (--help, --print-config); or the usage
 * error's status. */
static int parse_opts(int argc, char **argv, struct run_options *o)
{
	static const char *const default_devices[] = { "zram:1G", "zram:1G", "zram:1G",
						       "zram:1G" };
	struct run_config c;
	bool print = false;
	int opt, err;

	*o = (struct run_options){ .limit = 256u << 20, .heap = UINT64_C(8) << 30,
				.readahead = -1, .kill_after = 5, .daemon = true };
	if ((err = run_config_load(o, &c)))
		return err;
	optind = 0;
	/* '+': stop at CMD, whose options are its own. */
	while ((opt = cli_next_option(CMD, argc, argv, "+:l:h", long_options, usage_text)) > 0) {
		if (opt == OPT_PRINT_CONFIG) {
			print = true;
			continue;
		}
		note_cli(o, &c, opt);
		if ((err = run_apply_option(o, opt, optarg)))
			return err;
	}
	if (opt != CLI_OPT_END)
		return opt == CLI_OPT_HELP ? -1 : CLI_EXIT_USAGE;
	if (!o->nr_devices) {
		for (unsigned int i = 0; i < 4; i++)
			o->devices[o->nr_devices++] = default_devices[i];
		c.devices = RUN_SRC_DEFAULT;
	}
	if (print) {
		run_config_print(o, &c);
		return -1;
	}
	if (optind >= argc)
		return cli_usage_error(CMD, "missing CMD (uswap run [OPTIONS] -- CMD [ARG]...)");
	o->cmd = argv + optind;
	return 0;
}

/* ------------------------------------------------------------------------
 * Checks made before anything starts
 * ---------------------------------------------------------------------- */

/* Kernel-fault userfaultfd, as the agent will ask for it. */
static int check_userfaultfd(void)
{
	long fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	if (errno == ENOSYS)
		return cli_runtime_error(CMD, "this kernel has no userfaultfd "
					 "(CONFIG_USERFAULTFD)");
	return cli_runtime_error(CMD, "userfaultfd that handles faults from system "
				 "calls is not permitted here (%s). Do one of:\n"
				 "  - run as root (or with CAP_SYS_PTRACE);\n"
				 "  - sysctl vm.unprivileged_userfaultfd=1 (as root);\n"
				 "  - give this user read-write access to /dev/userfaultfd.",
				 strerror(errno));
}

/* Every device must open (a file's header, a size) before CMD starts,
 * all at once, so the same swap file named twice is refused here. */
static int check_devices(const struct run_options *o)
{
	struct uswap_backend *b[MAX_DEVICES];
	char err[512];
	int rc = 0, saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	unsigned int n, bad = 0;

	/* The agent opens the devices again and prints their warnings (an
	 * insecure swap file's mode, say): said here too, they would come
	 * twice. Errors are ours to print, below. */
	if (saved >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	for (n = 0; n < o->nr_devices; n++)
		if (uswap_backend_open(o->devices[n], &b[n], NULL, err, sizeof(err))) {
			rc = -1;
			bad = n;
			break;
		}
	while (n)
		uswap_backend_close(b[--n]);
	if (saved >= 0 && null >= 0)
		dup2(saved, STDERR_FILENO);
	if (saved >= 0)
		close(saved);
	if (null >= 0)
		close(null);
	if (rc)
		return cli_runtime_error(CMD, "--device %s: %s", o->devices[bad], err);
	if (o->limit < (uint64_t)USWAP_PAGER_MIN_LIMIT_FOLIOS * USWAP_PAGE_SIZE << o->order)
		return cli_runtime_error(CMD, "--limit is below the pager's minimum of %u "
					 "folios", USWAP_PAGER_MIN_LIMIT_FOLIOS);
	return 0;
}

/* Is this program the build tree's uswap (not an installed copy)? Its
 * own directory, resolved, is the build's tools directory. */
static bool in_build_tree(void)
{
	char self[PATH_MAX], *exe = realpath("/proc/self/exe", NULL), *tools;
	bool same;

	if (!exe)
		return false;
	snprintf(self, sizeof(self), "%s", exe);
	free(exe);
	*strrchr(self, '/') = '\0';
	tools = realpath(USWAP_BUILD_TOOLS, NULL);
	same = tools && !strcmp(self, tools);
	free(tools);
	return same;
}

/*
 * find_agent() - the agent to preload: $USWAP_PRELOAD, read with
 * secure_getenv() (so a set-user-ID, set-group-ID or file-capability
 * uswap, run in secure-execution mode, ignores it, as the dynamic loader
 * ignores LD_PRELOAD there); else the build tree's, for the build tree's
 * uswap only (an installed uswap never looks near its own directory: a
 * path like $prefix/src/agent may be writable by a group, and what it
 * found would be preloaded into root's programs); else the installed
 * one. @buf says what was tried, for the error. Return: the path or NULL.
 */
static const char *find_agent(char *buf, size_t len)
{
	const char *env = secure_getenv("USWAP_PRELOAD");

	buf[0] = '\0';
	if (env && *env) {
		snprintf(buf, len, "USWAP_PRELOAD=%s", env);
		return access(env, R_OK) == 0 ? env : NULL;
	}
	if (in_build_tree()) {
		snprintf(buf, len, "%s", USWAP_BUILD_AGENT);
		if (access(buf, R_OK) == 0)
			return buf;
		snprintf(buf + strlen(buf), len - strlen(buf), " and ");
	}
	snprintf(buf + strlen(buf), len - strlen(buf), "%s", USWAP_PRELOAD_INSTALLED);
	return access(USWAP_PRELOAD_INSTALLED, R_OK) == 0 ? USWAP_PRELOAD_INSTALLED : NULL;
}

/* ------------------------------------------------------------------------
 * The child and the wait
 * ---------------------------------------------------------------------- */

static pid_t child;

/* Pass on a signal sent to us with kill(2); one the terminal sent reached
 * CMD already (same process group), and must not arrive twice. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child > 0 && si->si_code <= 0) /* SI_USER, SI_QUEUE, SI_TKILL */
		kill(child, sig);
}

/* The environment the agent reads (agent.h), then exec CMD. */
static void exec_cmd(const struct run_options *o, const char *agent, const char *stats,
		     const char *group, const char *daemon, pid_t parent)
{
	char buf[64], devices[MAX_DEVICES * 4200] = "", preload[8300];
	const char *old = getenv("LD_PRELOAD");
	size_t used = 0;

	for (unsigned int i = 0; i < o->nr_devices; i++)
		used += (size_t)snprintf(devices + used, sizeof(devices) - used, "%s%s",
					 i ? "\n" : "", o->devices[i]);
	setenv("USWAP_RUN_DEVICES", devices, 1);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->limit);
	setenv("USWAP_RUN_LIMIT", buf, 1);
	snprintf(buf, sizeof(buf), "%u", o->order);
	setenv("USWAP_RUN_ORDER", buf, 1);
	snprintf(buf, sizeof(buf), "%u", run_readahead(o));
	setenv("USWAP_RUN_READAHEAD", buf, 1);
	setenv("USWAP_RUN_WORKINGSET", o->no_workingset ? "0" : "1", 1);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->heap);
	setenv("USWAP_RUN_REGION", buf, 1);
	snprintf(buf, sizeof(buf), "%d", (int)getpid());
	setenv("USWAP_RUN_ROOT", buf, 1);
	setenv("USWAP_RUN_STATS", stats, 1);
	if (*group)
		setenv("USWAP_RUN_GROUP", group, 1);
	if (*daemon)
		setenv(USWAP_DAEMON_ENV, daemon, 1);
	if (o->trace && !*daemon) /* else uswap run records the tree's */
		setenv("USWAP_RUN_TRACE", o->trace, 1);
	snprintf(preload, sizeof(preload), "%s%s%s", agent, old && *old ? ":" : "",
		 old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	/* CMD must not outlive us unnoticed (uswap run killed with SIGKILL):
	 * it gets SIGTERM then, as from a supervisor. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(128 + SIGTERM); /* we are gone already */
	execvp(o->cmd[0], o->cmd);
	fprintf(stderr, "uswap run: %s: %s\n", o->cmd[0],
		errno == ENOENT ? "command not found" : strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* ------------------------------------------------------------------------
 * The guard: CMD does not outlive a killed uswap run
 * ---------------------------------------------------------------------- */

/*
 * guard_main() - in a process of its own, wait until uswap run is gone
 * (the pipe's write end, which only uswap run holds, closes) or says it
 * is done (one byte). Gone: CMD, named by @pidfd (never a reused pid),
 * gets SIGTERM, then SIGKILL @kill_after seconds later if it still runs,
 * and the stats file goes. This is `timeout -k`'s escalation applied to
 * our own death, which PR_SET_PDEATHSIG alone cannot do (a CMD that
 * ignores SIGTERM ran on, and the stats file stayed).
 */
static void guard_main(int rd, int pidfd, double kill_after, const char *stats,
		       const char *group)
{
	static const int quiet[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
				     SIGALRM, SIGPIPE };
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	char byte;
	ssize_t n;

	/* Group-wide signals are CMD's and uswap run's business. */
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	do
		n = read(rd, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0); /* uswap run reaped CMD and is ending normally */
	syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
	/* The pidfd reads as ready once CMD has ended. */
	if (poll(&pfd, 1, (int)(kill_after * 1000)) == 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	unlink(stats);
	if (*group)
		shm_unlink(group);
	_exit(0);
}

/* Start the guard for CMD (@child). Return: the pipe's write end, which
 * uswap run keeps (close-on-exec) until guard_done(), or -1: no guard
 * (no pidfd on this kernel), PR_SET_PDEATHSIG's SIGTERM only. */
static int guard_start(pid_t cmd, double kill_after, const char *stats, const char *group,
		       pid_t *guard)
{
	int pidfd = (int)syscall(SYS_pidfd_open, cmd, 0), fds[2];

	if (pidfd < 0)
		return -1;
	if (pipe2(fds, O_CLOEXEC)) {
		close(pidfd);
		return -1;
	}
	*guard = fork();
	if (*guard == 0) {
		close(fds[1]);
		guard_main(fds[0], pidfd, kill_after, stats, group);
	}
	close(fds[0]);
	close(pidfd);
	if (*guard < 0) {
		close(fds[1]);
		return -1;
	}
	return fds[1];
}

/* CMD has been reaped: the guard ends without touching anything (or
 * has ended already: @guard -1, reaped by wait_child()). */
static void guard_done(int wr, pid_t guard)
{
	if (wr < 0)
		return;
	if (guard <= 0) {
		close(wr);
		return;
	}
	if (write(wr, "x", 1) != 1)
		kill(guard, SIGKILL);
	close(wr);
	while (waitpid(guard, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * wait_child() - wait for CMD. Meanwhile sample the tree every
 * RUN_TREE_PERIOD_MS (and --plot every CLI_PLOT_PERIOD_MS), take the
 * charges of ended processes off the tree's group, and reap what the
 * tree's orphans leave us, as its subreaper. The guard, if it
 * ends first, is reaped too: *@guard becomes -1. Return: CMD's exit
 * status (128 + the signal that ended it), or the CLI's runtime error.
 */
static int wait_child(struct cli_plot *plot, struct run_tree *tree, struct run_group *group,
		      pid_t *guard)
{
	int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	const struct timespec period = { 0, RUN_TREE_PERIOD_MS * 1000000L };
	unsigned int ticks = 0;
	int status = 0;

	for (;;) {
		int st;
		pid_t got = waitpid(-1, &st, WNOHANG);

		if (got == child) {
			status = st;
			break;
		}
		if (got > 0) {
			if (got == *guard)
				*guard = -1;
			continue; /* the guard, or an orphan of the tree */
		}
		if (got < 0 && errno != EINTR) {
			int err = errno;

			if (pidfd >= 0)
				close(pidfd);
			return cli_runtime_error(CMD, "waitpid: %s", strerror(err));
		}
		run_tree_sample(tree);
		run_group_reap(group);
		if (plot && ticks++ % (CLI_PLOT_PERIOD_MS / RUN_TREE_PERIOD_MS) == 0)
			run_plot_sample(plot, (long)child);
		/* CMD's end wakes the poll at once; without a pidfd, sleep. */
		if (pidfd < 0 || poll(&pfd, 1, RUN_TREE_PERIOD_MS) < 0)
			nanosleep(&period, NULL);
	}
	if (pidfd >= 0)
		close(pidfd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ------------------------------------------------------------------------
 * Stats
 * ---------------------------------------------------------------------- */

static int report(const struct run_options *o, const char *stats, int json_fd, int status,
		  const struct run_tree *tree, const struct uswap_pager_group_stats *gs)
{
	int rc = run_stats_report(stats, o->cmd[0], o->stats, o->json, json_fd, status, tree, gs);

	unlink(stats);
	return rc;
}

/*
 * check_output() - can @path, given to option @opt, be written? Opened,
 * created if need be, with @flags, and kept open in *@fd until the run's
 * report is written: a FIFO's reader then sees its end only once the
 * writers that open it again (the agent, the report) are done. The open
 * does not block, so a FIFO that no process reads is an error at once,
 * not a wait forever. Return: 0, or the usage error's exit status.
 */
static int check_output(const char *opt, const char *path, int flags, int *fd)
{
	*fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | flags, 0644);
	if (*fd >= 0)
		return 0;
	if (errno == ENXIO)
		return cli_usage_error(CMD, "%s %s: a FIFO that no process reads", opt, path);
	return cli_usage_error(CMD, "%s %s: %s", opt, path, strerror(errno));
}

int cmd_run(int argc, char **argv)
{
	struct run_options o;
	char agent_buf[4200], stats[4200];
	const char *tmp = getenv("TMPDIR");
	pid_t parent = getpid();
	struct cli_plot *plot = NULL;
	struct run_tree tree = { 0 };
	struct run_group group = { 0 };
	struct run_daemon daemon = { .lfd = -1, .spare_fd = -1, .status_wake = -1 };
	struct uswap_pager_group_stats gs;
	const char *agent;
	int rc, fd, status, json_fd = -1, trace_fd = -1, guard_fd;
	pid_t guard = -1;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	agent = find_agent(agent_buf, sizeof(agent_buf));
	if (!agent)
		return cli_runtime_error(CMD, "libuswap-preload.so not found: tried %s (set "
					 "USWAP_PRELOAD to its path; it is not built under a "
					 "sanitizer)", agent_buf);
	if ((rc = check_devices(&o)) || (rc = check_userfaultfd()))
		return rc;
	run_reach_check(o.cmd[0]); /* a warning: CMD runs all the same */
	if (o.json && !strcmp(o.json, "-")) {
		json_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3); /* never emptied */
		if (json_fd < 0)
			return cli_usage_error(CMD, "--json -: standard output: %s",
					       strerror(errno));
	} else if (o.json && (rc = check_output("--json", o.json, 0, &json_fd))) {
		return rc; /* it must be writable before CMD starts */
	}
	if (o.plot) { /* likewise */
		bool made;

		if ((rc = cli_plot_open(CMD, o.plot, &made)))
			return rc;
		if (!(plot = cli_plot_new(o.plot, made, "uswap run", "pswpout (pages)",
					  "swpin (folios)")))
			return cli_runtime_error(CMD, "out of memory");
	}
	if (o.trace && (rc = check_output("--trace", o.trace, O_TRUNC, &trace_fd)))
		return rc; /* last: a usage error must not empty it */

	snprintf(stats, sizeof(stats), "%s/uswap-run-stats-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(stats);
	if (fd < 0)
		return cli_runtime_error(CMD, "%s: %s", stats, strerror(errno));
	close(fd);
	/* --limit is the tree's: one charge group for all its processes.
	 * Without /dev/shm, each process gets the limit, as before. */
	if (o.daemon) {
		if ((rc = run_daemon_start(&o, &daemon)) ||
		    (trace_fd >= 0 && (rc = run_daemon_trace(&daemon, trace_fd)))) {
			unlink(stats);
			run_daemon_end(&daemon, NULL, 0, 0, &gs);
			return rc;
		}
		trace_fd = -1; /* the recording's now */
	} else if ((rc = run_group_create(o.limit, &group))) {
		fprintf(stderr, "uswap run: no shared memory for the tree's limit (%s): the "
			"limit is per process\n", strerror(-rc));
	}
	/* Orphans of the tree (a daemonized grandchild) come to us, not to
	 * init: they stay in the tree's statistics, and we reap them. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	fflush(NULL);
	child = fork();
	if (child < 0) {
		int err = errno;

		unlink(stats);
		run_group_end(&group, &gs);
		run_daemon_end(&daemon, NULL, 0, 0, &gs);
		return cli_runtime_error(CMD, "fork: %s", strerror(err));
	}
	if (child == 0) {
		if (o.daemon)
			run_daemon_child(&daemon);
		exec_cmd(&o, agent, stats, group.name, daemon.name, parent);
	}
	atomic_store(&daemon.cmd, child); /* its line in uswap status is the tree's */
	guard_fd = guard_start(child, o.kill_after, stats, group.name, &guard);
	struct sigaction sa = { .sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART };

	/* A closed stderr (`2>&1 | head`) must not end us before the stats
	 * file is removed and CMD's status returned (CMD, forked already,
	 * keeps the default). */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sa.sa_mask);
	/* Every signal whose default would end us and leave CMD running
	 * (and the stats file behind) goes to CMD instead. */
	static const int passed_on[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
					 SIGUSR2, SIGALRM };

	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		sigaction(passed_on[i], &sa, NULL);
	tree.top = getpid();
	tree.skip = guard;
	status = wait_child(plot, &tree, &group, &guard);
	guard_done(guard_fd, guard);
	if (o.daemon)
		run_daemon_end(&daemon, stats, child, o.kill_after, &gs);
	else
		run_group_end(&group, &gs);
	rc = report(&o, stats, json_fd, status, &tree, &gs);
	close(json_fd);
	close(trace_fd);
	if (plot)
		cli_plot_finish(plot, "run"); /* a failure is said; CMD's status stands */
	return rc ? rc : status;
}
