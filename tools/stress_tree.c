// SPDX-License-Identifier: MIT
/*
 * stress_tree.c - `uswap stress --processes N`: a tree of processes that
 * share one swap subsystem (`uswap run --daemon`), each checking its own
 * pages against its own model.
 *
 * The stress tool starts `uswap run --daemon --limit PAGER_LIMIT --json F
 * -- uswap stress --tree-worker root:...`, which is the tree's root. The
 * root writes and reads its pages and keeps up to N - 1 children going,
 * each of one of three kinds, at random:
 *  - fork: the root's memory and model copied by fork() (its swapped-out
 *    slots are shared, not read back), checked whole, then written and
 *    read on its own, and checked whole again;
 *  - exec: a fresh image (`--tree-worker leaf:...`) with pages of its own;
 *  - kill: a fork that writes and reads until the root kills it with
 *    SIGKILL at a random moment (in a fault, often): its slots must be
 *    freed and the rest must go on.
 * Every page holds its number and version and words derived from them,
 * so a page of another process, a stale one or zeros show. At the end the
 * root checks all its pages once more and prints one "tree:" line. The
 * stress tool reads that line, uswap run's exit status, and what the
 * devices still hold once the whole tree is gone (daemon_slots_left_kb in
 * uswap run's JSON: anything but 0 is a leak).
 */
#include "cli.h"
#include "stress.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TREE_MAX_KIDS 16
#define TREE_WORDS (USWAP_PAGE_SIZE / 8)

/* ------------------------------------------------------------------------
 * The worker: one process's pages and model
 * ---------------------------------------------------------------------- */

struct tw {
	uint64_t *mem;
	uint32_t *ver;   /* per page; 0: never written (reads zero) */
	size_t pages;
	uint64_t rng;
	uint64_t checked, wrong;
};

static uint64_t word(size_t p, uint32_t v, size_t i)
{
	uint64_t s = p * UINT64_C(0x9e3779b97f4a7c15) ^ ((uint64_t)v << 32) ^ i;

	return stress_rnd(&s);
}

static void page_write(struct tw *t, size_t p)
{
	uint64_t *w = t->mem + p * TREE_WORDS;
	uint32_t v = ++t->ver[p];

	w[0] = p;
	w[1] = v;
	for (size_t i = 2; i < TREE_WORDS; i += 8) /* every 8th: enough to tell */
		w[i] = word(p, v, i);
}

static void page_check(struct tw *t, size_t p)
{
	const uint64_t *w = t->mem + p * TREE_WORDS;
	uint32_t v = t->ver[p];
	bool ok = v ? w[0] == p && w[1] == v : w[0] == 0 && w[1] == 0;

	for (size_t i = 2; ok && i < TREE_WORDS; i += 8)
		ok = w[i] == (v ? word(p, v, i) : 0);
	t->checked++;
	if (!ok && t->wrong++ < 4)
		fprintf(stderr, "tree: pid %d: page %zu is not version %u (it holds %llu/%llu)\n",
			(int)getpid(), p, v, (unsigned long long)w[0], (unsigned long long)w[1]);
}

static void tw_ops(struct tw *t, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		uint64_t r = stress_rnd(&t->rng);
		size_t p = (size_t)(r >> 1) % t->pages;

		if (r & 1)
			page_write(t, p);
		else
			page_check(t, p);
	}
}

static void tw_check_all(struct tw *t)
{
	for (size_t p = 0; p < t->pages; p++)
		page_check(t, p);
}

static int tw_init(struct tw *t, size_t kib, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->pages = kib * 1024 / USWAP_PAGE_SIZE;
	t->rng = seed ^ (uint64_t)getpid();
	t->mem = calloc(t->pages, USWAP_PAGE_SIZE);
	t->ver = calloc(t->pages, sizeof(*t->ver));
	return t->pages && t->mem && t->ver ? 0 : -ENOMEM;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Write and read for @ms milliseconds. */
static void tw_run(struct tw *t, uint64_t ms)
{
	for (uint64_t end = now_ms() + ms; now_ms() < end;)
		tw_ops(t, 256);
}

/* ------------------------------------------------------------------------
 * The root and its children
 * ---------------------------------------------------------------------- */

enum kid_kind { KID_FORK, KID_EXEC, KID_KILL };
static const char *const kid_name[] = { "fork", "exec", "kill" };

struct kid {
	pid_t pid;
	enum kid_kind kind;
	uint64_t kill_at;   /* KID_KILL: when the root kills it */
};

struct tree_root {
	struct tw t;
	size_t kib;
	uint64_t seed;
	unsigned int spawned[3], bad;
	struct kid kids[TREE_MAX_KIDS];
};

static void __attribute__((noreturn)) kid_main(struct tree_root *r, enum kid_kind kind)
{
	char spec[96];

	switch (kind) {
	case KID_FORK:
		tw_check_all(&r->t); /* the parent's pages, shared at the fork */
		tw_run(&r->t, 200 + stress_rnd(&r->t.rng) % 400);
		tw_check_all(&r->t);
		break;
	case KID_EXEC:
		snprintf(spec, sizeof(spec), "leaf:%zu:%llu:%llu", r->kib / 4,
			 (unsigned long long)(200 + stress_rnd(&r->t.rng) % 400),
			 (unsigned long long)stress_rnd(&r->t.rng));
		execl("/proc/self/exe", "uswap", "stress", "--tree-worker", spec, (char *)NULL);
		fprintf(stderr, "tree: exec /proc/self/exe: %s\n", strerror(errno));
		_exit(2);
	case KID_KILL:
		for (;;) {
			tw_ops(&r->t, 256);
			if (r->t.wrong)
				_exit(1);
		}
	}
	_exit(r->t.wrong ? 1 : 0);
}

static void spawn(struct tree_root *r, struct kid *k)
{
	enum kid_kind kind = (enum kid_kind)(stress_rnd(&r->t.rng) % 3);
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		kid_main(r, kind);
	if (pid < 0)
		return;
	k->pid = pid;
	k->kind = kind;
	k->kill_at = now_ms() + 50 + stress_rnd(&r->t.rng) % 400;
	r->spawned[kind]++;
}

/* A child ended with @status: a fork or exec must exit 0; a kill child
 * must die by the SIGKILL (or exit 0), never report wrong data. */
static void reaped(struct tree_root *r, struct kid *k, int status)
{
	bool ok = WIFEXITED(status) ? WEXITSTATUS(status) == 0
				     : k->kind == KID_KILL && WTERMSIG(status) == SIGKILL;

	if (!ok) {
		r->bad++;
		fprintf(stderr, "tree: a %s child (pid %d) ended with %s %d\n", kid_name[k->kind],
			(int)k->pid, WIFEXITED(status) ? "exit status" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	k->pid = 0;
}

static void tend(struct tree_root *r, unsigned int nr, bool block)
{
	for (unsigned int i = 0; i < nr; i++) {
		struct kid *k = &r->kids[i];
		int status;

		if (!k->pid)
			continue;
		if (k->kind == KID_KILL && (block || now_ms() >= k->kill_at))
			kill(k->pid, SIGKILL);
		if (waitpid(k->pid, &status, block ? 0 : WNOHANG) == k->pid)
			reaped(r, k, status);
	}
}

static int tree_root(unsigned int n, size_t kib, uint64_t ms, uint64_t seed)
{
	struct tree_root *r = calloc(1, sizeof(*r));
	unsigned int nr = n > 1 ? n - 1 : 0;
	int rc;

	if (!r || tw_init(&r->t, kib, seed))
		return 2;
	r->kib = kib;
	r->seed = seed;
	for (uint64_t end = now_ms() + ms; now_ms() < end;) {
		tw_ops(&r->t, 256);
		for (unsigned int i = 0; i < nr; i++)
			if (!r->kids[i].pid)
				spawn(r, &r->kids[i]);
		tend(r, nr, false);
	}
	tend(r, nr, true);
	tw_check_all(&r->t);
	printf("tree: processes %u forks %u execs %u killed %u pages checked %llu wrong %llu "
	       "bad exits %u\n", 1 + r->spawned[0] + r->spawned[1] + r->spawned[2],
	       r->spawned[KID_FORK], r->spawned[KID_EXEC], r->spawned[KID_KILL],
	       (unsigned long long)r->t.checked, (unsigned long long)r->t.wrong, r->bad);
	rc = r->t.wrong || r->bad ? 1 : 0;
	free(r->t.mem);
	free(r->t.ver);
	free(r);
	return rc;
}

int stress_tree_worker(const char *spec)
{
	unsigned long long kib, ms, seed;
	unsigned int n;
	struct tw t;

	if (sscanf(spec, "root:%u:%llu:%llu:%llu", &n, &kib, &ms, &seed) == 4 &&
	    n <= TREE_MAX_KIDS + 1)
		return tree_root(n, (size_t)kib, ms, seed);
	if (sscanf(spec, "leaf:%llu:%llu:%llu", &kib, &ms, &seed) != 3)
		return cli_usage_error("stress", "--tree-worker '%s': not a worker spec", spec);
	if (tw_init(&t, (size_t)kib, seed))
		return 2;
	tw_run(&t, ms);
	tw_check_all(&t);
	return t.wrong ? 1 : 0;
}

/* ------------------------------------------------------------------------
 * The stress tool's side
 * ---------------------------------------------------------------------- */

int stress_tree_start(struct stress *s, char *err, size_t errlen)
{
	const struct stress_opts *o = s->o;
	char limit[32], spec[96];
	uint64_t ms = (uint64_t)((o->duration ? o->duration : 10) * 1000);
	int fd;

	snprintf(s->tree_dir, sizeof(s->tree_dir), "%s/uswap-stress-tree.XXXXXX", o->dir);
	if (!mkdtemp(s->tree_dir)) {
		snprintf(err, errlen, "--processes: a directory in %s: %s", o->dir, strerror(errno));
		return -errno;
	}
	snprintf(s->tree_out, sizeof(s->tree_out), "%s/out", s->tree_dir);
	snprintf(s->tree_json, sizeof(s->tree_json), "%s/stats.json", s->tree_dir);
	snprintf(limit, sizeof(limit), "%lluK", (unsigned long long)(o->pager_limit >> 10));
	snprintf(spec, sizeof(spec), "root:%u:%llu:%llu:%llu", o->processes,
		 (unsigned long long)(o->pager_size >> 11), (unsigned long long)ms,
		 (unsigned long long)o->seed);
	fflush(NULL);
	s->tree_pid = fork();
	if (s->tree_pid == 0) {
		fd = open(s->tree_out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(2);
		execl("/proc/self/exe", "uswap", "run", "--daemon", "--limit", limit, "--json",
		      s->tree_json, "--", "/proc/self/exe", "stress", "--tree-worker", spec,
		      (char *)NULL);
		_exit(127);
	}
	if (s->tree_pid < 0) {
		snprintf(err, errlen, "--processes: fork: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* The line of @path that starts with @prefix, into @line; else the first
 * line. Return: whether the prefix was found. */
static bool find_line(const char *path, const char *prefix, char *line, size_t len)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	bool found = false;

	line[0] = 0;
	while (f && !found && fgets(buf, sizeof(buf), f)) {
		found = !strncmp(buf, prefix, strlen(prefix));
		if (found || !line[0])
			snprintf(line, len, "%s", buf);
	}
	if (f)
		fclose(f);
	line[strcspn(line, "\n")] = 0;
	return found;
}

static int64_t slots_left_kb(const char *json)
{
	json_object *o = json_object_from_file(json), *v;
	int64_t kb = -1;

	if (o && json_object_object_get_ex(o, "daemon_slots_left_kb", &v))
		kb = json_object_get_int64(v);
	json_object_put(o);
	return kb;
}

void stress_tree_finish(struct stress *s, char *note, size_t notelen)
{
	unsigned long long checked = 0, wrong = 0;
	char line[512];
	int status = 0, bad = 0;
	int64_t left;

	if (s->tree_pid <= 0)
		return;
	while (waitpid(s->tree_pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!find_line(s->tree_out, "tree: processes ", line, sizeof(line))) {
		/* uswap run refused before the tree began: not here */
		if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && !strncmp(line, "uswap run: ", 11))
			snprintf(note, notelen, "%s", line + 11);
		else
			stress_violation(s, &s->c.bad_refs, "the process tree ended with %s %d "
					 "and no result: %s", WIFEXITED(status) ? "exit status" :
					 "signal", WIFEXITED(status) ? WEXITSTATUS(status) :
					 WTERMSIG(status), line);
		goto out;
	}
	s->tree_ran = true;
	sscanf(line, "tree: processes %u forks %u execs %u killed %u pages checked %llu "
	       "wrong %llu bad exits %d", &s->tree_counts[0], &s->tree_counts[1],
	       &s->tree_counts[2], &s->tree_counts[3], &checked, &wrong, &bad);
	s->tree_pages_checked = checked;
	if (wrong || bad)
		stress_violation(s, &s->c.wrong, "the process tree: %llu wrong pages in the root, "
				 "%d children ended badly (%s)", wrong, bad, s->tree_out);
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		stress_violation(s, &s->c.bad_refs, "the process tree's uswap run ended with "
				 "%s %d", WIFEXITED(status) ? "exit status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	left = slots_left_kb(s->tree_json);
	if (left)
		stress_violation(s, &s->c.leaks, "the process tree: %lld KiB still in use on "
				 "the devices after every process ended%s", (long long)left,
				 left < 0 ? " (no statistics)" : "");
	if (wrong || bad)
		return; /* the output stays for a look */
out:
	unlink(s->tree_out);
	unlink(s->tree_json);
	rmdir(s->tree_dir);
}
