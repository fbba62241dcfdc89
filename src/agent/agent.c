// SPDX-License-Identifier: MIT
/*
 * agent.c - set-up of the preload agent (agent.h): the swap instance and
 * its devices from the environment `uswap run` passes, the pager and its
 * region as mimalloc's exclusive arena, the fork handlers, and the stats
 * written at exit.
 *
 * Anything that goes wrong here leaves the program running on glibc's
 * allocator, unswapped, after one line on stderr: an agent that cannot
 * start must not take the program down with it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <mimalloc.h>
#include <uswap/daemon.h>
#include <uswap/lab.h>
#include <uswap/status.h>
#include <uswap/uswap.h>

#include "agent/agent.h"

struct agent agent;
AGENT_TLS int t_internal;

static uint64_t now_image_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This image's start (CLOCK_MONOTONIC ns): with the pid, the key of its
 * stats line. An exec'd program is another image of the same pid. */
static uint64_t image_ns;

static bool starting;                 /* threads created now are the pager's */
/* --daemon: uswap run's socket name, kept at start: in a fork child the
 * environment may be swapped-out heap that no pager has yet. */
static char daemon_name[108];
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------------
 * The pager's threads are internal for life
 * ---------------------------------------------------------------------- */

struct start {
	void *(*fn)(void *);
	void *arg;
};

/* Internal threads created, and those past glibc's start-up: a new
 * thread reads the locale (__ctype_init) before its function runs, and
 * the program's setlocale() put the locale's data in the region. A fork
 * child adopts the region only once its new pager threads are past that
 * read: a handler that faulted there would wait for itself. */
static _Atomic unsigned int threads_created, threads_started;

static void *internal_thread(void *arg)
{
	struct start s = *(struct start *)arg;

	t_internal = 1;
	free(arg);
	atomic_fetch_add_explicit(&threads_started, 1, memory_order_release);
	return s.fn(s.arg);
}

/* Wait (at most 5 s) until every internal thread created has started. */
static void wait_threads_started(void)
{
	for (int i = 0; i < 50000; i++) {
		if (atomic_load_explicit(&threads_started, memory_order_acquire) >=
		    atomic_load_explicit(&threads_created, memory_order_relaxed))
			return;
		usleep(100);
	}
}

/* A pager thread gets a stack of its own, never one from glibc's cache:
 * in a fork child the cache holds the stacks of the parent's other
 * threads, and a reused stack keeps its thread-pointer vector (DTV), which
 * the program's thread allocated in the region. A handler whose DTV was
 * swapped out would fault in every TLS access and wait for itself. With a
 * stack given, glibc allocates a fresh DTV, in glibc's heap (the creating
 * thread is internal). The stack is never freed: pager threads live as
 * long as the process. Return: the attributes, or NULL (glibc's default).
 */
#define PAGER_STACK (UINT64_C(8) << 20)

static const pthread_attr_t *own_stack(void)
{
	static pthread_attr_t attr; /* pager start-up is single-threaded */
	void *stack = mmap(NULL, PAGER_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);

	if (stack == MAP_FAILED)
		return NULL;
	pthread_attr_init(&attr);
	if (pthread_attr_setstack(&attr, stack, PAGER_STACK)) {
		munmap(stack, PAGER_STACK);
		return NULL;
	}
	return &attr;
}

__attribute__((visibility("default")))
int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	struct start *s;

	if (!real) {
		t_internal++;
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
		t_internal--;
		if (!real)
			return EAGAIN;
	}
	if (!starting)
		return real(th, attr, fn, arg);
	s = malloc(sizeof(*s)); /* internal now: glibc's */
	if (!s)
		return EAGAIN;
	s->fn = fn;
	s->arg = arg;
	int rc = real(th, attr ? attr : own_stack(), internal_thread, s);

	if (!rc)
		atomic_fetch_add_explicit(&threads_created, 1, memory_order_relaxed);
	return rc;
}

int agent_thread_create(pthread_t *th, void *(*fn)(void *), void *arg)
{
	bool was = starting;
	int rc;

	starting = true;
	rc = pthread_create(th, NULL, fn, arg);
	starting = was;
	return rc;
}

/* ------------------------------------------------------------------------
 * Set-up
 * ---------------------------------------------------------------------- */

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 10) : dflt;
}

static void warn(const char *what, int err)
{
	fprintf(stderr, "uswap run: agent: %s%s%s; the program runs unswapped\n", what,
		err ? ": " : "", err ? strerror(-err) : "");
}

/* Swap on every device of the list; each spec is kept for a fork child.
 * A device that stores outside the process (a swap file, an NBD export,
 * at any depth of the spec) is claimed by one instance only: the process
 * uswap run started has it, and the programs it execs (the same pid);
 * the children it forks run on the memory devices alone, never opening
 * it again (uswap_spec_external()). */
static int swapon_all(const char *list, bool root)
{
	char *copy = strdup(list), *save = NULL, err[256];

	if (!copy)
		return -ENOMEM;
	for (char *s = strtok_r(copy, "\n", &save); s && agent.nr_devs < 32;
	     s = strtok_r(NULL, "\n", &save)) {
		if (!root && uswap_spec_external(s) != 0)
			continue;
		int type = uswap_swapon_spec(agent.u, s, err, sizeof(err));

		if (type < 0) {
			fprintf(stderr, "uswap run: agent: %s: %s\n", s, err);
			free(copy);
			return type;
		}
		agent.specs[agent.nr_devs++] = strdup(s);
	}
	free(copy);
	return agent.nr_devs ? 0 : -ENODEV; /* only external ones, not the root */
}

/*
 * A folio could not be read back (the pager's on_error, in a handler
 * thread, before the program's thread is woken to get SIGBUS there): one
 * line that names the device and the error, so a program that dies of
 * it does not end with only its exit status. The first few are said; the
 * counts stay in the stats (read_errors per device).
 */
#define READ_ERRORS_SAID 5

static void on_read_error(void *ctx, void *addr, int err)
{
	static pthread_mutex_t read_error_lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t seen[USWAP_MAX_DEVICES];
	static unsigned int said;
	char devs[512];

	(void)ctx;
	pthread_mutex_lock(&read_error_lock);
	uswap_status_read_errors(agent.u, seen, devs, sizeof(devs));
	if (said++ < READ_ERRORS_SAID)
		fprintf(stderr, "uswap run: agent: pid %d: swapped-out memory at %p could not "
			"be read back from %s: %s; the program gets SIGBUS there%s\n",
			(int)getpid(), addr, devs[0] ? devs : "its device", strerror(-err),
			said == READ_ERRORS_SAID ? " (further read errors not said)" : "");
	pthread_mutex_unlock(&read_error_lock);
}

/* The tree's charge group (USWAP_RUN_GROUP), mapped once per image; a
 * fork's child has its parent's mapping. NULL if there is none or it
 * cannot be mapped (another user's, after a setuid exec): the limit is
 * then this process's own. */
static void *map_group(void)
{
	const char *name;
	void *mem;
	int fd;

	if (agent.group) /* a fork child: environ may be swapped-out heap */
		return agent.group;
	name = getenv(AGENT_ENV_GROUP);
	if (!name || !*name)
		return NULL;
	fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	fd = agent_fd_above_stdio(fd);
	mem = mmap(NULL, USWAP_PAGER_GROUP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	agent.group = mem == MAP_FAILED ? NULL : mem;
	return agent.group;
}

static int start_pager(void)
{
	struct uswap_pager_config cfg = {
		.limit_bytes = agent.limit,
		.order = agent.order,
		.readahead_pages = agent.readahead,
		/* read(2) into swapped memory; the heap is a fork's too */
		.flags = USWAP_PAGER_KERNEL_FAULTS | USWAP_PAGER_FORKABLE |
			 (agent.no_workingset ? USWAP_PAGER_NO_WORKINGSET : 0),
		.on_error = on_read_error,
		.group = map_group(),
	};
	int rc;

	starting = true;
	rc = uswap_pager_create(agent.u, &cfg, &agent.p);
	if (rc && cfg.group) { /* no member slot left: a limit of its own */
		fprintf(stderr, "uswap run: agent: pid %d: the tree's limit: %s; this process "
			"gets a limit of its own\n", (int)getpid(), strerror(-rc));
		cfg.group = NULL;
		rc = uswap_pager_create(agent.u, &cfg, &agent.p);
	}
	starting = false;
	return rc;
}

/* mimalloc gets the region as its only arena for our heaps, and never
 * gives memory back with madvise behind the pager's back. */
#define ARENA_ALIGN (UINT64_C(64) << 20) /* mimalloc's arena blocks are
					   segments: hand it aligned memory */

/* --daemon: the region is this process's mapping, adopted by uswap run's
 * pager for it. Return: 0 or -errno; *@region its start. */
static int remote_region(size_t len, char **region)
{
	size_t folio = (size_t)USWAP_PAGE_SIZE << agent.order, map_len = len + 2 * folio;
	char *m = agent_real_mmap(NULL, map_len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *b;
	int rc;

	if (m == MAP_FAILED)
		return -ENOMEM;
	agent_real_madvise(m, map_len, MADV_NOHUGEPAGE);
	/* mmap() aligns to pages only: the region starts at a folio and
	 * holds @len bytes of whole folios (@len is a multiple of them). */
	b = (char *)(((uintptr_t)m + folio - 1) & ~(uintptr_t)(folio - 1));
	if ((rc = agent_pg_adopt(b, len))) {
		agent_real_munmap(m, map_len);
		return rc;
	}
	*region = b;
	return 0;
}

static int make_heap(size_t size)
{
	char *region;
	int rc = agent.remote ? remote_region(size + ARENA_ALIGN, &region)
			      : uswap_region_create(agent.p, size + ARENA_ALIGN, (void **)&region);

	if (rc)
		return rc;
	agent.base = (char *)(((uintptr_t)region + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1));
	agent.size = size;
	mi_option_disable(mi_option_allow_decommit);
	mi_option_disable(mi_option_page_reset);
	mi_option_disable(mi_option_abandoned_page_decommit);
	if (!mi_manage_os_memory_ex(agent.base, size, true, false, true, -1, true,
				    &agent.arena))
		return -ENOMEM;
	return 0;
}

/* `uswap run --trace --in-process`: only the process uswap run started
 * records, so one trace holds one swap system's stream. After an exec
 * the new program goes on with the same file and time zero
 * (AGENT_ENV_TRACE_T0), after an X record. */
static void start_trace(void)
{
	const char *path = getenv(AGENT_ENV_TRACE), *cont = getenv(AGENT_ENV_TRACE_T0);
	uint64_t t0 = cont ? strtoull(cont, NULL, 10) : 0;
	char buf[32];
	int rc, fd;

	if (!path || (pid_t)env_u64(AGENT_ENV_ROOT, 0) != getpid())
		return;
	/* Never blocking: a FIFO whose reader is gone (after an exec, say)
	 * is -ENXIO at once, not a program stuck in open(2). */
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | (t0 ? O_APPEND : O_TRUNC),
		  0644);
	rc = fd < 0 ? -errno : 0;
	if (fd >= 0) {
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		if ((rc = uswap_trace_record_start(agent.u, fd, t0, &t0)))
			close(fd);
	}
	if (rc) {
		fprintf(stderr, "uswap run: agent: --trace %s: %s; not recorded\n", path,
			rc == -ENXIO ? "a FIFO that no process reads" : strerror(-rc));
		return;
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)t0);
	setenv(AGENT_ENV_TRACE_T0, buf, 1);
}

/*
 * The program uswap run started, in its first image, could not swap on a
 * device that uswap run's own check opened a moment before: another run
 * took it in between (two runs started at once on one swap file or
 * export). CMD has not run a single instruction of its own yet: it is not
 * started (exit 1, uswap run's "could not run it") rather than run
 * unswapped as if all were well. Later images (an exec) keep running.
 */
static void refuse_if_first(int rc)
{
	if ((pid_t)env_u64(AGENT_ENV_ROOT, 0) != getpid() || getenv(AGENT_ENV_STARTED) ||
	    rc == -ENODEV)
		return;
	fprintf(stderr, "uswap run: a device was taken by another process since uswap "
		"run checked it (%s): CMD not started\n", strerror(-rc));
	syscall(SYS_exit_group, 1);
}

static void prepare_fork(void);
static void find_fork(void);
static void parent_after_fork(void);
static void child_after_fork(void);

/* --daemon: the heap is ready; uswap run keeps the stats and serves no
 * status socket of ours (its own figures are the tree's). */
static void agent_ready(void)
{
	setenv(AGENT_ENV_STARTED, "1", 1);
	pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
	atexit(agent_exit);
	atomic_store_explicit(&agent.ready, true, memory_order_release);
}

__attribute__((constructor)) static void agent_start(void)
{
	const char *devices = getenv(AGENT_ENV_DEVICES), *daemon;
	unsigned int held;
	int rc;

	find_fork();
	agent.limit = env_u64(AGENT_ENV_LIMIT, 0);
	if (!devices || !agent.limit)
		return; /* preloaded without uswap run: stay out of the way */
	agent.order = (unsigned int)env_u64(AGENT_ENV_ORDER, 0);
	agent.readahead = (unsigned int)env_u64(AGENT_ENV_READAHEAD, 0);
	agent.no_workingset = env_u64(AGENT_ENV_WORKINGSET, 1) == 0;
	agent.pid = getpid();
	image_ns = now_image_ns();
	t_internal++;
	agent_malloc_init();
	agent_mmap_init();
	held = agent_stdio_hold();
	daemon = getenv(USWAP_DAEMON_ENV);
	if (daemon && *daemon) {
		snprintf(daemon_name, sizeof(daemon_name), "%s", daemon);
		if ((rc = agent_daemon_connect(daemon, image_ns)))
			warn("uswap run's swap daemon", rc);
		else if ((rc = make_heap(env_u64(AGENT_ENV_REGION, UINT64_C(8) << 30))))
			warn("the heap region", rc);
		else
			agent_ready();
	} else if ((rc = uswap_create(NULL, &agent.u))) {
		warn("uswap_create", rc);
	} else if ((rc = swapon_all(devices, (pid_t)env_u64(AGENT_ENV_ROOT, 0) == getpid()))) {
		refuse_if_first(rc);
		if (rc != -ENODEV) /* a descendant with only external devices: quietly */
			warn("swapon", rc);
	} else if ((rc = start_pager())) {
		warn("uswap_pager_create", rc);
	} else if ((rc = make_heap(env_u64(AGENT_ENV_REGION, UINT64_C(8) << 30)))) {
		warn("the heap region", rc);
	} else {
		start_trace();
		setenv(AGENT_ENV_STARTED, "1", 1); /* an exec'd image is not the first */
		pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
		atexit(agent_exit);
		atomic_store_explicit(&agent.ready, true, memory_order_release);
		/* Optional (`uswap status` just does not list us), but a
		 * directory someone else could read is worth a line. */
		if (agent_status_start() == -EPERM &&
		    (pid_t)env_u64(AGENT_ENV_ROOT, 0) == getpid())
			fprintf(stderr, "uswap run: agent: the status directory is not this "
				"user's alone (owner, mode, or a symlink): not published there\n");
	}
	agent_stdio_release(held);
	t_internal--;
}

/* ------------------------------------------------------------------------
 * fork
 * ---------------------------------------------------------------------- */

/* Whether a fork child keeps a copy of the instance (fork.c): only when
 * every device is this process's memory; a file's or an export's slots
 * cannot be copied, so with one of those every folio is read in first
 * (hold.c). */
static bool fork_copies(void)
{
	for (unsigned int i = 0; i < agent.nr_devs; i++)
		if (uswap_spec_external(agent.specs[i]) != 0)
			return false;
	return agent.nr_devs > 0;
}

static bool fork_copy;          /* this fork: fork_copies() at prepare */

/* Read every swapped-out folio in before the fork, held in (hold.c). */
static void hold_for_fork(void)
{
	int rc = agent_pg_hold();

	if (rc) /* those folios fault with SIGBUS in both, as before */
		fprintf(stderr, "uswap run: agent: before fork: %s\n", strerror(-rc));
}

/* --daemon: the token of this fork's record of the swapped-out folios
 * (uswap_pager_share_prepare() in uswap run), which the child names to
 * take them; 0: none (the parent read them in instead). */
static uint64_t fork_share;
static AGENT_TLS uint64_t t_fork_token; /* fork_share, for fork() below */

/* How many times a fork's preparation is redone when a stream was
 * evicted between agent_streams_in() and the stop of eviction; then the
 * fork reads every folio in instead (hold_for_fork()). */
#define STREAM_TRIES 3

/*
 * Stop eviction for the fork with @begin (its answer: 0 for not done)
 * once every stream was read in, and check that they are all still
 * mapped (streams.c); if one was evicted in between, undo with @undo and
 * try again, STREAM_TRIES times. Return: @begin's answer, or 0 (nothing
 * held: the fork must read everything in).
 */
static uint64_t stop_with_streams(uint64_t (*begin)(void), void (*undo)(uint64_t))
{
	for (int i = 0; i < STREAM_TRIES; i++) {
		uint64_t v;

		agent_streams_in();
		v = begin();
		if (!v || agent_streams_mapped())
			return v;
		undo(v);
	}
	return 0;
}

/* In-process copy: eviction stopped and the pager's lock held. */
static uint64_t copy_begin(void)
{
	uswap_pager_fork_prepare(agent.p);
	return 1;
}

static void copy_undo(uint64_t v)
{
	(void)v;
	uswap_pager_fork_parent(agent.p);
}

/* --daemon: the fork's record taken by uswap run, with the mapping
 * tables held (nothing is discarded or remapped between the record and
 * the fork); its token, or 0. */
static uint64_t share_begin(void)
{
	long token = agent_daemon_call(USWAP_DOP_FORK_PREPARE, NULL, 0, 0);

	return token > 0 ? (uint64_t)token : 0;
}

static void share_undo(uint64_t token)
{
	agent_daemon_call(USWAP_DOP_FORK_PARENT, NULL, 0, 0);
	agent_daemon_call(USWAP_DOP_FORK_DROP, NULL, 0, token);
}

static void prepare_fork(void)
{
	pthread_mutex_lock(&fork_lock);
	t_internal++;
	agent_streams_lock(); /* first: streams.c says why */
	fork_copy = !agent.detached && agent.p && fork_copies();
	fork_share = 0;
	agent_adopt_lock();
	agent_mmap_lock();
	/* Last: from here a fault on the heap waits until the fork is done,
	 * and the agent's locks are the ones a program thread takes before
	 * the pager's (adopt.c). */
	if (fork_copy && !stop_with_streams(copy_begin, copy_undo))
		fork_copy = false;
	if (agent_has_pager() && agent.remote)
		fork_share = stop_with_streams(share_begin, share_undo);
	if (agent_has_pager() && !fork_copy && !fork_share)
		hold_for_fork();
	if (agent.remote)
		agent_daemon_fork_lock();
	t_fork_token = fork_share;
}

static void parent_after_fork(void)
{
	if (agent.remote)
		agent_daemon_fork_unlock();
	/* First: uswap run tells which folios the fork copied by what this
	 * process still shares with the child, before much is written. */
	if (fork_share)
		agent_daemon_call(USWAP_DOP_FORK_PARENT, NULL, 0, 0);
	if (fork_copy)
		uswap_pager_fork_parent(agent.p);
	agent_mmap_unlock();
	agent_adopt_unlock();
	if (!fork_share && agent_has_pager() && !fork_copy)
		agent_pg_release();
	agent_streams_unlock();
	t_internal--;
	pthread_mutex_unlock(&fork_lock);
}

/* --daemon: a fork that failed leaves its record of the swapped-out folios
 * (FORK_PREPARE) with no child to take it; it is dropped here rather than
 * kept, with its slots, until the run ends. The atfork handlers cannot
 * tell a failed fork: only fork()'s result does. */
static pid_t (*real_fork)(void);

/* Found at start (agent_start()): dlsym() is not for a signal handler. */
static void find_fork(void)
{
	t_internal++;
	real_fork = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	t_internal--;
}

__attribute__((visibility("default"))) pid_t fork(void)
{
	pid_t pid;
	int err;

	if (!real_fork)
		find_fork();
	if (!real_fork) {
		errno = ENOSYS;
		return -1;
	}
	t_fork_token = 0;
	pid = real_fork();
	if (pid < 0 && t_fork_token && agent.remote && !agent.detached) {
		err = errno;
		agent_daemon_call(USWAP_DOP_FORK_DROP, NULL, 0, t_fork_token);
		errno = err;
	}
	t_fork_token = 0;
	return pid;
}

/* Swap the memory devices on in a fresh instance, or keep the copy of
 * the parent's (@keep), start a pager and adopt the heap. Return: 0 or
 * -errno (the child runs on detached). */
static int child_pager(bool keep)
{
	char err[256];
	unsigned int on = 0;
	int rc;

	if (!keep)
		uswap_pager_forget(agent.p); /* with the old instance: never freed */
	atomic_store(&threads_created, 0); /* the parent's are not here */
	atomic_store(&threads_started, 0);
	agent.p = NULL;
	if (keep)
		goto pager;
	agent.u = NULL;
	if ((rc = uswap_create(NULL, &agent.u)))
		return rc;
	/* The memory devices only: the parent keeps what it claimed. */
	for (unsigned int i = 0; i < agent.nr_devs; i++) {
		if (uswap_spec_external(agent.specs[i]) != 0)
			continue;
		int type = uswap_swapon_spec(agent.u, agent.specs[i], err, sizeof(err));

		if (type < 0)
			return type;
		agent.specs[on++] = agent.specs[i];
	}
	agent.nr_devs = on;
	if (!on)
		return -ENODEV;
pager:
	if ((rc = start_pager()))
		return rc;
	wait_threads_started();
	/* Nothing adopted is evicted before inherit_folios() (fork.c). */
	if (keep && (rc = uswap_pager_hold(agent.p)))
		return rc;
	/* mimalloc's use of the region ends at base + size; the old region
	 * had an arena's alignment of slack beyond, so a whole folio fits. */
	size_t folio = (size_t)USWAP_PAGE_SIZE << agent.order;

	return uswap_region_adopt(agent.p, agent.base, (agent.size + folio - 1) / folio * folio);
}

/* With the instance kept (fork_copy): the new pager takes the parent's
 * swapped-out folios (fork.c); with none, they are read into place. */
static void inherit_folios(struct uswap_pager *old)
{
	long rc = uswap_pager_inherit(agent.p, old);

	uswap_pager_release(agent.p); /* child_pager()'s hold */
	if (rc < 0)
		fprintf(stderr, "uswap run: agent: a forked child's swapped-out memory: %s\n",
			strerror((int)-rc));
	uswap_pager_forget(old);
}

/* The child has the memory and none of the pager's threads: it gets a
 * pager of its own (agent.h). It is still the only thread here. */
/* --daemon: the child could not take its share of the parent's swapped-out
 * memory, which exists nowhere else: it must not run on reading zeros. */
static void __attribute__((noreturn)) share_failed(int err)
{
	fprintf(stderr, "uswap run: agent: a forked child (pid %d) could not take its "
		"swapped-out memory from uswap run (%s): the child ends\n", (int)getpid(),
		strerror(-err));
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

/* --daemon: a connection of the child's own, and its copy of the heap
 * (all of it resident: the parent held it) adopted by it. */
static int child_remote(void)
{
	size_t folio = (size_t)USWAP_PAGE_SIZE << agent.order;

	agent_daemon_forget();
	atomic_store(&threads_created, 0);
	atomic_store(&threads_started, 0);
	int rc = agent_daemon_connect(daemon_name, now_image_ns());

	if (rc)
		return rc;
	wait_threads_started();
	/* With a share to take: nothing adopted is evicted before it
	 * (uswap_pager_share_child()); released after FORK_CHILD. */
	if (fork_share && (rc = agent_pg_hold()))
		return rc;
	return agent_pg_adopt(agent.base, (agent.size + folio - 1) / folio * folio);
}

static void child_after_fork(void)
{
	struct uswap_pager *old = agent.p;

	/* One thread here: the list unlocked, as glibc does in a child of
	 * a process it saw with several threads (ours, taken in
	 * prepare_fork(), too). */
	agent_streams_reset();
	if (agent.remote) {
		agent_mmap_unlock();
		if (!agent.detached) {
			unsigned int held = agent_stdio_hold();
			int rc = child_remote();

			agent.pid = getpid();
			agent_stdio_release(held);
			if (rc && fork_share)
				share_failed(rc);
			if (rc) {
				agent.detached = true;
				agent.remote = false;
				fprintf(stderr, "uswap run: agent: a forked child's pager: %s; "
					"the child runs unswapped\n", strerror(-rc));
			}
			agent_adopt_child();
			if (!rc && fork_share) {
				long taken = agent_daemon_call(USWAP_DOP_FORK_CHILD, NULL, 0,
							       fork_share);

				if (taken < 0)
					share_failed((int)taken);
				agent_pg_release(); /* child_remote()'s hold */
			}
		}
		agent_adopt_unlock();
		t_internal--;
		pthread_mutex_unlock(&fork_lock);
		return;
	}

	uswap_trace_record_forget(agent.u); /* the parent's records are the parent's */
	agent_mmap_unlock();
	agent_status_forget();
	if (!agent.detached) {
		unsigned int held = agent_stdio_hold();
		int rc;

		if (fork_copy)
			agent_stats_fork(); /* the copied counters are the parent's */
		rc = child_pager(fork_copy);
		agent.pid = getpid();
		if (rc) {
			agent.detached = true;
			agent.p = NULL;
			if (rc != -ENODEV)
				fprintf(stderr, "uswap run: agent: a forked child's pager: %s; "
					"the child runs unswapped\n", strerror(-rc));
		}
		agent_adopt_child();
		if (fork_copy)
			inherit_folios(old);
		/* Last: glibc's start of the status thread reads the locale's
		 * data in the heap, which must hold the parent's folios by then
		 * (a thread started before read zeros there, and its ctype
		 * tables pointed nowhere: a status query crashed the child). */
		if (!rc)
			agent_status_start();
		agent_stdio_release(held);
	}
	agent_adopt_unlock();
	t_internal--;
	pthread_mutex_unlock(&fork_lock);
}

/* ------------------------------------------------------------------------
 * Stats at exit: one JSON object for `uswap run` to print
 * ---------------------------------------------------------------------- */

/* @s as a JSON string: quotes and backslashes escaped, control bytes as
 * \u00XX (a device path may hold any of them); other bytes as they are.
 * The agent writes its JSON by hand: a JSON library linked into the
 * program's process could clash with the program's own copy. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void write_orders(FILE *f, const char *key, const uint64_t *v)
{
	fprintf(f, "\"%s\": [", key);
	for (int o = 0; o < USWAP_NR_ORDERS; o++)
		fprintf(f, "%s%llu", o ? ", " : "", (unsigned long long)v[o]);
	fprintf(f, "], ");
}

/* A zram device's mm_stat, as "zram": {...} (nothing for the others). */
static void write_zram(FILE *f, int type)
{
	struct uswap_zram_stat z;

	if (uswap_device_zram_stat(agent.u, type, &z))
		return;
	fprintf(f, ", \"zram\": {\"algorithm\": ");
	json_str(f, z.algo);
	fprintf(f, ", \"disksize\": %llu, "
		"\"orig_data_size\": %llu, \"compr_data_size\": %llu, "
		"\"mem_used_total\": %llu, \"mem_limit\": %llu, \"mem_used_max\": %llu, "
		"\"same_pages\": %llu, \"pages_compacted\": %llu, \"huge_pages\": %llu}",
		(unsigned long long)z.disksize,
		(unsigned long long)z.orig_data_size, (unsigned long long)z.compr_data_size,
		(unsigned long long)z.mem_used_total, (unsigned long long)z.mem_limit,
		(unsigned long long)z.mem_used_max, (unsigned long long)z.same_pages,
		(unsigned long long)z.pages_compacted, (unsigned long long)z.huge_pages);
}

/* A decimal count that fits a JSON reader's 64-bit integer. */
static bool is_count(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n && !s[n] && n <= 18 && (s[0] != '0' || n == 1);
}

/* The backend's own figures (uswap_device_print_stats()) as "backend":
 * {"key": value, ...}, counts as numbers and the rest as strings: nbd
 * reconnects, a mirror's legs, writeback. */
static void write_backend(FILE *f, int type)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	bool first = true;

	if (!m)
		return;
	if (uswap_device_print_stats(agent.u, type, m)) {
		fclose(m);
		free(text);
		return;
	}
	fclose(m);
	fprintf(f, ", \"backend\": {");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		fputs(first ? "" : ", ", f);
		json_str(f, line);
		fputs(": ", f);
		if (is_count(sp + 1))
			fputs(sp + 1, f); /* a count is a JSON number, not "123" */
		else
			json_str(f, sp + 1);
		first = false;
	}
	fprintf(f, "}");
	free(text);
}

static void write_devices(FILE *f)
{
	struct uswap_device_info info;
	bool first = true;

	fprintf(f, "\"devices\": [");
	for (int type = 0; type < USWAP_MAX_DEVICES; type++) {
		if (uswap_device_info(agent.u, type, &info))
			continue;
		fprintf(f, "%s{\"name\": ", first ? "" : ", ");
		json_str(f, info.name);
		fprintf(f, ", \"type\": ");
		json_str(f, info.kind);
		fprintf(f, ", \"prio\": %d, "
			"\"size_kb\": %llu, \"used_kb\": %llu, \"write_errors\": %llu, "
			"\"read_errors\": %llu",
			info.prio,
			(unsigned long long)info.size_kb,
			(unsigned long long)info.used_kb, (unsigned long long)info.write_errors,
			(unsigned long long)info.read_errors);
		write_zram(f, type);
		write_backend(f, type);
		fprintf(f, "}");
		first = false;
	}
	fprintf(f, "]");
}

/* The process's name (/proc/self/comm), JSON-safe: printable ASCII but
 * quotes and backslashes. */
static const char *comm(void)
{
	static char name[32];
	FILE *f = fopen("/proc/self/comm", "r");
	size_t n = f ? fread(name, 1, sizeof(name) - 1, f) : 0;

	if (f)
		fclose(f);
	name[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (name[i] < 0x20 || name[i] > 0x7e || name[i] == '"' || name[i] == '\\')
			name[i] = name[i] == '\n' && i == n - 1 ? '\0' : '?';
	return name;
}

/* The instance's counters at the fork that made this process, when it
 * kept a copy of its parent's instance: they are the parent's work. */
static struct uswap_stats stats_base = { .size = sizeof(stats_base) };

void agent_stats_fork(void)
{
	uswap_stats_get(agent.u, &stats_base);
}

/* This process's own counters of the instance. Return: as
 * uswap_stats_get(). */
static int stats_get(struct uswap_stats *st)
{
	int rc = uswap_stats_get(agent.u, st);

	for (unsigned int i = 0; !rc && i < USWAP_NR_ORDERS; i++) {
		st->swpout[i] -= stats_base.swpout[i];
		st->swpout_fallback[i] -= stats_base.swpout_fallback[i];
	}
	if (!rc)
		st->swpin -= stats_base.swpin;
	return rc;
}

/* The line: this process's counters, what `uswap run` adds up. */
static void stats_line(FILE *f, bool root)
{
	struct uswap_pager_stats ps = { .size = sizeof(ps) };
	struct uswap_stats st = { .size = sizeof(st) };

	if (stats_get(&st) || uswap_pager_stats_get(agent.p, &ps))
		return;
	fprintf(f, "{\"pid\": %d, \"image_ns\": %llu, \"root\": %s, \"cmd\": \"%s\", "
		"\"resident_bytes\": %llu, ", (int)getpid(), (unsigned long long)image_ns,
		root ? "true" : "false", comm(), (unsigned long long)ps.resident_bytes);
	write_orders(f, "swpout", st.swpout);
	write_orders(f, "swpout_fallback", st.swpout_fallback);
	fprintf(f, "\"swpin\": %llu, \"resident_peak_bytes\": %llu, "
		"\"limit_bytes\": %llu, \"fault_count\": %llu, \"fault_us_p50\": %.1f, "
		"\"fault_us_p99\": %.1f, \"evictions\": %llu, \"evict_zero\": %llu, "
		"\"evict_pinned\": %llu, \"over_limit\": %llu, \"read_errors\": %llu, "
		"\"heap_fallbacks\": %lu, \"faults\": %llu, \"wp_faults\": %llu, "
		"\"zero_fills\": %llu, \"readahead\": %llu, \"reclaim_waits\": %llu, "
		"\"workingset_refault\": %llu, \"workingset_activate\": %llu, "
		"\"zero_written\": %llu, ",
		(unsigned long long)st.swpin,
		(unsigned long long)ps.resident_peak_bytes,
		(unsigned long long)ps.limit_bytes, (unsigned long long)ps.fault_count,
		(double)ps.fault_ns_p50 / 1e3, (double)ps.fault_ns_p99 / 1e3,
		(unsigned long long)ps.evictions, (unsigned long long)ps.evict_zero,
		(unsigned long long)ps.evict_pinned, (unsigned long long)ps.over_limit,
		(unsigned long long)ps.read_errors, atomic_load(&agent.fallbacks),
		(unsigned long long)ps.faults, (unsigned long long)ps.wp_faults,
		(unsigned long long)ps.zero_fills, (unsigned long long)ps.readahead,
		(unsigned long long)ps.reclaim_waits,
		(unsigned long long)ps.workingset_refault,
		(unsigned long long)ps.workingset_activate,
		(unsigned long long)ps.zero_written);
	write_devices(f);
	fprintf(f, "}\n");
}

/* The process's stats line, once per image with a pager, not in a vfork()
 * child (it shares the parent's memory, agent.pid included, but not its
 * pid). One write() in O_APPEND mode, so lines of processes ending
 * together do not mix. @final: at exit; otherwise before an exec, which
 * may fail: the line at exit then supersedes it (same pid and image). */
static void agent_write_stats(bool final)
{
	static _Atomic bool done;
	const char *path = getenv(AGENT_ENV_STATS);
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int fd;

	if (!path || agent.detached || !agent.p || agent.pid != getpid() ||
	    atomic_exchange(&done, final))
		return;
	t_internal++;
	mem = open_memstream(&buf, &len);
	if (mem) {
		stats_line(mem, (pid_t)env_u64(AGENT_ENV_ROOT, 0) == getpid());
		fclose(mem);
	}
	fd = len ? agent_fd_above_stdio(open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) : -1;
	if (fd >= 0) {
		if (write(fd, buf, len) != (ssize_t)len)
			fprintf(stderr, "uswap run: agent: stats: %s\n", strerror(errno));
		close(fd);
	}
	free(buf);
	t_internal--;
}

/* --daemon: uswap run keeps the stats; the heap's fallbacks are ours. */
static void remote_stats(void)
{
	if (agent.remote && agent.pid == getpid())
		agent_daemon_call(USWAP_DOP_FALLBACKS, NULL, 0, atomic_load(&agent.fallbacks));
}

void agent_before_exec(void)
{
	if (!atomic_load_explicit(&agent.ready, memory_order_acquire))
		return;
	remote_stats();
	agent_write_stats(false);
}

void agent_status_line(FILE *f)
{
	stats_line(f, (pid_t)env_u64(AGENT_ENV_ROOT, 0) == getpid());
}

void agent_exit(void)
{
	if (agent.pid != getpid())
		return; /* a vfork() child: all of it is the parent's */
	int rc;

	agent_status_stop();
	remote_stats();
	agent_write_stats(true);
	if ((rc = uswap_trace_record_stop(agent.u)))
		fprintf(stderr, "uswap run: agent: --trace: %s\n", rc == -EOVERFLOW ?
			"too many folios swapped out at once: the trace stops early" :
			strerror(-rc));
}

/* A program (or a forked worker) that ends with _exit() runs no atexit
 * handler: its line is written here. */
__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	static void (*real)(int);

	agent_exit();
	if (!real)
		real = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	_exit(status);
}
