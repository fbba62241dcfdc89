// SPDX-License-Identifier: MIT
/*
 * Description: a plain program, built without libuswap, that tests/run_cli.sh
 * runs under `uswap run` with a heap several times the limit. Each mode
 * checks its own data and exits 0 only if every byte is right:
 *   alloc   every call of the malloc family, then a working set of SIZE
 *           MiB written and read back twice (most of it swapped between)
 *   fork    SIZE MiB written, fork; child and parent each verify, write
 *           their own pattern and verify it: each sees only its changes
 *   syscall SIZE MiB written (swapped out), then read(2) from a file into
 *           the swapped-out buffer and write(2) from it to a pipe
 *   threads 4 threads, each with its own SIZE/4 MiB, written and checked
 *   mmap    a private anonymous mmap of SIZE MiB: zero-filled, written and
 *           checked, grown by mremap (contents kept), MADV_DONTNEED reads
 *           zero, munmap; a shared mapping still goes to the kernel
 *   discard SIZE MiB mapped, written and unmapped 4 times, malloc'd,
 *           written and freed, mapped, written and MADV_DONTNEED'd (reads
 *           zero): nothing of it is left on swap at exit (run_cli.sh)
 *   realloc one block grown by realloc 1 MiB at a time to SIZE MiB (past
 *           a small --heap: the allocation must fall back, not fail)
 *   forkers 4 forked children, each with SIZE/4 MiB of malloc'd memory
 *           written, held until all four have written theirs, then
 *           checked: the tree's limit must hold them together
 *   reserve a runtime's heap: SIZE MiB reserved PROT_NONE, half committed
 *           with mprotect (as V8 does), half with mmap(MAP_FIXED) (as the
 *           JVM does), written and checked; a quarter made read-only
 *           while the rest is rewritten, then writable again; a quarter
 *           uncommitted (MAP_FIXED PROT_NONE) and recommitted reads zero,
 *           MADV_DONTNEED reads zero; a forked child checks its copy and
 *           writes its own; then unmapped in two pieces
 *   tree    SIZE/2 MiB mapped by the raw mmap system call (the agent never
 *           sees it) in this process and as much in a daemonized
 *           grandchild (its parent exits at once), both held together
 *           for half a second: what `uswap run`'s tree statistics must
 *           find (run_tree.sh)
 *   localefork  C.UTF-8 loaded (its data in the heap), SIZE MiB written,
 *           four forks whose children ask their own status socket,
 *           verify it and use the locale;
 *           77 without that locale
 *   signals a SIGALRM handler without SA_RESTART, an interval timer of
 *           100 us, and 500 mappings of SIZE/8 MiB (at least 1) made,
 *           written, checked and unmapped meanwhile: each is an agent call
 *           of uswap run --daemon that the signal interrupts (as a
 *           shell's SIGCHLD did: the process was killed)
 *   forkstdio  a thread walks glibc's list of open streams (500 FILEs
 *           open, fflush(NULL), fopen/fclose), another streams SIZE MiB
 *           so that the FILEs are swapped out, and the main thread forks
 *           200 times: glibc's fork() takes the list's lock after the
 *           atfork handlers, so a walker faulting with it held must still
 *           be served (it hung the in-process pager)
 * Usage: run_helper MODE SIZE_MIB
 */
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uswap/status.h>

static unsigned char pattern(size_t i, unsigned int salt)
{
	return (unsigned char)(i * 31 + salt + (i >> 12) * 7);
}

static void fill(unsigned char *p, size_t n, unsigned int salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(i, salt);
}

static int verify(const unsigned char *p, size_t n, unsigned int salt, const char *who)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != pattern(i, salt)) {
			printf("%s: byte %zu is %u, want %u\n", who, i, p[i], pattern(i, salt));
			fflush(stdout);
			return 1;
		}
	}
	return 0;
}

#define CHECK(c)                                                                   \
	do {                                                                       \
		if (!(c)) {                                                        \
			printf("%s:%d: %s failed\n", __FILE__, __LINE__, #c);      \
			return 1;                                                  \
		}                                                                  \
	} while (0)

static int mode_alloc(size_t n)
{
	void *p = NULL;
	unsigned char *big, *c, *r;

	CHECK((c = calloc(1000, 16)) && !c[0] && !c[15999]);
	CHECK((r = realloc(c, 64000)) && !r[15999]);
	CHECK((r = reallocarray(r, 1000, 128)) != NULL);
	volatile size_t huge = SIZE_MAX / 2; /* n * size overflows */

	CHECK(reallocarray(NULL, huge, 4) == NULL && errno == ENOMEM);
	CHECK(malloc_usable_size(r) >= 128000);
	free(r);
	CHECK(posix_memalign(&p, 4096, 10000) == 0 && (uintptr_t)p % 4096 == 0);
	free(p);
	CHECK(posix_memalign(&p, 3, 10) == EINVAL);
	CHECK((p = aligned_alloc(64, 640)) && (uintptr_t)p % 64 == 0);
	free(p);
	CHECK((p = memalign(256, 100)) && (uintptr_t)p % 256 == 0);
	free(p);
	CHECK((p = valloc(100)) && (uintptr_t)p % 4096 == 0);
	free(p);
	CHECK((p = pvalloc(100)) && (uintptr_t)p % 4096 == 0 && malloc_usable_size(p) >= 4096);
	free(p);
	free(NULL);
	CHECK((big = malloc(n)) != NULL);
	fill(big, n, 1);
	CHECK(!verify(big, n, 1, "alloc pass 1"));
	CHECK(!verify(big, n, 1, "alloc pass 2"));
	free(big);
	printf("alloc: ok\n");
	return 0;
}

static int mode_fork(size_t n)
{
	unsigned char *p = malloc(n);
	int status, bad;
	pid_t pid;

	CHECK(p != NULL);
	fill(p, n, 1);
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bad = verify(p, n, 1, "child sees the parent's memory");
		fill(p, n, 2);
		bad |= verify(p, n, 2, "child's own change");
		free(malloc(1 << 20)); /* the child's heap still works */
		fflush(stdout);
		_exit(bad);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	bad = verify(p, n, 1, "parent after the child wrote");
	fill(p, n, 3);
	bad |= verify(p, n, 3, "parent's own change");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(!bad);
	printf("fork: ok\n");
	return 0;
}

/* Ask this process's status socket, as `uswap status PID` does. Return: 0
 * if it answered with a status or there is none (not published), 1 if it
 * did not answer. */
static int ask_own_status(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	char dir[sizeof(sa.sun_path) - 16], buf[8192];
	size_t len = 0;
	ssize_t n;
	int fd;

	if (uswap_status_dir(dir, sizeof(dir)))
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dir, (int)getpid());
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return strstr(buf, "\"pid\"") == NULL;
}

/* fork four times with the program's locale data swapped out: loaded
 * (setlocale) before SIZE MiB are written, so the clock evicts it. A
 * fork child's agent ran sscanf() before its pager had the heap, which
 * read that data as zeros and crashed the child; and its status thread
 * started before the child had its parent's folios, with ctype tables
 * computed from those zeros: a status query crashed the child. Each
 * child asks its own status first. */
static int mode_localefork(size_t n)
{
	unsigned char *p;
	int status, bad = 0;

	if (!setlocale(LC_ALL, "C.UTF-8")) {
		printf("localefork: no C.UTF-8 locale here\n");
		return 77;
	}
	p = malloc(n);
	CHECK(p != NULL);
	fill(p, n, 1);
	for (int i = 0; i < 4; i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			double d = strtod("1.5", NULL);

			_exit(ask_own_status() || verify(p, n, 1, "child") || d != 1.5 ||
			      !isalpha('a'));
		}
		CHECK(waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("localefork: child %d: %s %d\n", i,
			       WIFEXITED(status) ? "exit status" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			bad = 1;
		}
		fill(p, n, 1); /* the locale's data swapped out again */
	}
	CHECK(!bad);
	printf("localefork: ok\n");
	return 0;
}

static int mode_syscall(size_t n)
{
	unsigned char *p = malloc(n), *first;
	int fds[2];

	CHECK(p != NULL && pipe(fds) == 0);
	fill(p, n, 5);                   /* most of it is swapped out now */
	first = p;                       /* its first page among them */
	/* write(2) from swapped-out memory: the kernel faults it in. */
	CHECK(write(fds[1], first, 4096) == 4096);
	memset(first + 8192, 0, 4096);   /* read(2) into memory swapped out: */
	fill(p + n / 2, n / 2, 9);       /* ... push it out again first */
	CHECK(read(fds[0], first + 8192, 4096) == 4096);
	for (size_t i = 0; i < 4096; i++)
		CHECK(first[8192 + i] == pattern(i, 5));
	CHECK(!verify(p, 8192, 5, "syscall"));
	printf("syscall: ok\n");
	return 0;
}

static int mode_mmap(size_t n)
{
	unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0), *q;

	CHECK(p != MAP_FAILED && (uintptr_t)p % 4096 == 0);
	for (size_t i = 0; i < n; i += 4096)
		CHECK(p[i] == 0);                  /* zero-filled */
	fill(p, n, 21);
	CHECK(!verify(p, n, 21, "mmap"));
	/* Grow: the contents move with it. */
	q = mremap(p, n, 2 * n, MREMAP_MAYMOVE);
	CHECK(q != MAP_FAILED);
	CHECK(!verify(q, n, 21, "mremap grown"));
	for (size_t i = n; i < 2 * n; i += 4096)
		CHECK(q[i] == 0);
	/* MADV_DONTNEED: reads zero after it. */
	CHECK(madvise(q, 8192, MADV_DONTNEED) == 0);
	CHECK(q[0] == 0 && q[8191] == 0 && q[8192] == pattern(8192, 21));
	CHECK(munmap(q, 2 * n) == 0);
	/* A mapping the kernel keeps (shared), and a fixed-size one again. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED && munmap(p, 4096) == 0);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	fill(p, n, 22);
	CHECK(!verify(p, n, 22, "mmap again"));
	CHECK(munmap(p, n) == 0);
	printf("mmap: ok\n");
	return 0;
}

/* Each page of [@p, @p + @n) reads zero. */
static int zeros(const unsigned char *p, size_t n, const char *who)
{
	for (size_t i = 0; i < n; i += 4096) {
		if (p[i] || p[i + 4095]) {
			printf("%s: page at byte %zu is not zero\n", who, i);
			return 1;
		}
	}
	return 0;
}

static int mode_reserve(size_t n)
{
	const int rw = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
	unsigned char *r = mmap(NULL, n, PROT_NONE, anon | MAP_NORESERVE, -1, 0);
	size_t h = n / 2, q = n / 4;
	pid_t pid;
	int st;

	CHECK(r != MAP_FAILED);
	CHECK(mprotect(r, h, rw) == 0);
	CHECK(mmap(r + h, h, rw, anon | MAP_FIXED, -1, 0) == r + h);
	fill(r, n, 31);
	CHECK(!verify(r, n, 31, "reserve committed"));
	/* Read-only (as code or a sealed table) while the rest is rewritten
	 * twice: the pager may not take those pages away. */
	CHECK(mprotect(r, q, PROT_READ) == 0);
	fill(r + q, n - q, 32);
	fill(r + q, n - q, 33);
	CHECK(!verify(r, q, 31, "reserve read-only"));
	CHECK(mprotect(r, q, rw) == 0);
	fill(r, q, 33);
	CHECK(!verify(r, n, 33, "reserve writable again"));
	/* Uncommit a quarter as the JVM does, commit it again: zeros. */
	CHECK(mmap(r + h, q, PROT_NONE, anon | MAP_FIXED | MAP_NORESERVE, -1, 0) == r + h);
	CHECK(mmap(r + h, q, rw, anon | MAP_FIXED, -1, 0) == r + h);
	CHECK(!zeros(r + h, q, "reserve recommitted"));
	CHECK(madvise(r + h + q, 65536, MADV_DONTNEED) == 0);
	CHECK(!zeros(r + h + q, 65536, "reserve after MADV_DONTNEED"));
	CHECK(!verify(r, h, 33, "reserve first half"));
	fill(r + h, h, 34);
	/* A forked child: its own copy of all of it. */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (verify(r, h, 33, "reserve child") || verify(r + h, h, 34, "reserve child"))
			_exit(1);
		fill(r, n, 35);
		_exit(verify(r, n, 35, "reserve child's own") ? 1 : 0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!verify(r, h, 33, "reserve parent after fork"));
	CHECK(!verify(r + h, h, 34, "reserve parent after fork"));
	CHECK(munmap(r + q, n - q) == 0 && munmap(r, q) == 0);
	printf("reserve: ok\n");
	return 0;
}

static int mode_discard(size_t n)
{
	unsigned char *p;

	for (int round = 0; round < 4; round++) {
		p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(p != MAP_FAILED);
		fill(p, n, 30 + (unsigned int)round);
		CHECK(!verify(p, n, 30 + (unsigned int)round, "discard mmap"));
		CHECK(munmap(p, n) == 0);
	}
	p = malloc(n);
	CHECK(p != NULL);
	fill(p, n, 40);
	CHECK(!verify(p, n, 40, "discard malloc"));
	free(p);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	fill(p, n, 41);
	CHECK(madvise(p, n, MADV_DONTNEED) == 0);
	for (size_t i = 0; i < n; i += n / 16 + 4093) /* a few: reads map memory */
		CHECK(p[i] == 0);
	printf("discard: ok\n");
	return 0;
}

/* realloc growing past the heap: it must fall back, never fail. */
static int mode_realloc(size_t n)
{
	unsigned char *p = NULL;

	for (size_t have = 0; have < n;) {
		size_t next = have + (1u << 20);
		unsigned char *q = realloc(p, next);

		CHECK(q != NULL);
		p = q;
		fill(p + have, next - have, 31);  /* the part just grown */
		have = next;
	}
	for (size_t off = 0; off < n; off += 1u << 20)
		CHECK(!verify(p + off, 1u << 20, 31, "realloc"));
	free(p);
	printf("realloc: ok\n");
	return 0;
}

struct worker {
	size_t n;
	unsigned int salt;
	int bad;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned char *p = malloc(w->n);

	if (!p) {
		w->bad = 1;
		return NULL;
	}
	fill(p, w->n, w->salt);
	w->bad = verify(p, w->n, w->salt, "thread");
	free(p);
	return NULL;
}

static int mode_threads(size_t n)
{
	struct worker w[4];
	pthread_t th[4];
	int bad = 0;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .n = n / 4, .salt = 10u + (unsigned int)i };
		CHECK(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		bad |= w[i].bad;
	}
	CHECK(!bad);
	printf("threads: ok\n");
	return 0;
}

/* @n bytes by the raw system call, filled with @salt's pattern. */
static unsigned char *raw_map(size_t n, unsigned int salt)
{
	long m = syscall(SYS_mmap, 0L, n, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1L, 0L);

	if (m < 0 && m > -4096)
		return NULL;
	fill((unsigned char *)m, n, salt);
	return (unsigned char *)m;
}

/* The grandchild: map, say so on @up, hold until @down closes, verify,
 * report the result on @up. */
static void tree_grandchild(size_t n, int up, int down)
{
	unsigned char *p = raw_map(n, 21);
	char c = p ? 'f' : 'x';

	if (write(up, &c, 1) != 1 || !p)
		_exit(1);
	while (read(down, &c, 1) > 0)
		;
	c = verify(p, n, 21, "grandchild") ? 'x' : 'k';
	_exit(write(up, &c, 1) == 1 ? 0 : 1);
}

static int mode_tree(size_t n)
{
	int up[2], down[2], status;
	unsigned char *p;
	char c = 0;
	pid_t pid;

	CHECK(pipe(up) == 0 && pipe(down) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) { /* the child daemonizes the grandchild and exits */
		if (fork() == 0) {
			close(up[0]);
			close(down[1]);
			setsid();
			tree_grandchild(n / 2, up[1], down[0]);
		}
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	p = raw_map(n / 2, 20);
	CHECK(p);
	CHECK(read(up[0], &c, 1) == 1 && c == 'f');
	usleep(500 * 1000); /* ten samples with both held */
	close(down[1]);
	CHECK(read(up[0], &c, 1) == 1 && c == 'k');
	CHECK(!verify(p, n / 2, 20, "parent"));
	printf("tree: ok\n");
	return 0;
}

/* One of mode_forkers' children: write, tell the parent, wait for the
 * word, check. */
static int forker(size_t n, unsigned int salt, int up, int down)
{
	unsigned char *p = malloc(n);
	char c = 'w';

	if (!p)
		return 1;
	fill(p, n, salt);
	if (write(up, &c, 1) != 1 || read(down, &c, 1) != 1)
		return 1;
	return verify(p, n, salt, "forker") ? 1 : 0;
}

static int mode_forkers(size_t n)
{
	int up[2], down[2], status, bad = 0;
	pid_t pid[4];
	char c;

	CHECK(pipe(up) == 0 && pipe(down) == 0);
	for (unsigned int i = 0; i < 4; i++) {
		pid[i] = fork();
		CHECK(pid[i] >= 0);
		if (pid[i] == 0)
			_exit(forker(n / 4, 30 + i, up[1], down[0]));
	}
	for (unsigned int i = 0; i < 4; i++)
		CHECK(read(up[0], &c, 1) == 1);
	usleep(300 * 1000); /* samples with all four held */
	CHECK(write(down[1], "gggg", 4) == 4);
	for (unsigned int i = 0; i < 4; i++) {
		CHECK(waitpid(pid[i], &status, 0) == pid[i]);
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	CHECK(!bad);
	printf("forkers: ok\n");
	return 0;
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static int mode_signals(size_t n)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	size_t len = n / 8 > 4096 ? n / 8 : (size_t)1 << 20;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	for (unsigned int i = 0; i < 500; i++) {
		unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CHECK(p != MAP_FAILED);
		fill(p, 4096, i);
		CHECK(!verify(p, 4096, i, "signals"));
		CHECK(munmap(p, len) == 0);
	}
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &it, NULL);
	printf("signals: ok (%d signals)\n", (int)alarms);
	return 0;
}

struct stdio_walk {
	FILE *open[500];
	unsigned char *big;
	size_t n;
	_Atomic int stop;
	int bad;
};

/* Walks glibc's list of streams: each FILE is malloc'd, so swapped out
 * while the streamer runs, and the walker faults holding the list lock. */
static void *stdio_walker(void *arg)
{
	struct stdio_walk *w = arg;

	while (!w->stop) {
		FILE *f = fopen("/dev/null", "r");

		if (!f) {
			w->bad = 1;
			break;
		}
		fflush(NULL);
		fclose(f);
	}
	return NULL;
}

static void *stdio_streamer(void *arg)
{
	struct stdio_walk *w = arg;

	for (unsigned int salt = 40; !w->stop; salt++) {
		fill(w->big, w->n, salt);
		if (verify(w->big, w->n, salt, "streamer")) {
			w->bad = 1;
			break;
		}
	}
	return NULL;
}

static int mode_forkstdio(size_t n)
{
	static struct stdio_walk w;
	pthread_t walker, streamer;
	int status;

	w.n = n;
	CHECK((w.big = malloc(n)) != NULL);
	for (unsigned int i = 0; i < 500; i++)
		CHECK((w.open[i] = fopen("/dev/null", "r")) != NULL);
	fflush(stdout);
	CHECK(pthread_create(&walker, NULL, stdio_walker, &w) == 0);
	CHECK(pthread_create(&streamer, NULL, stdio_streamer, &w) == 0);
	for (unsigned int i = 0; i < 200; i++) {
		pid_t pid = fork();

		CHECK(pid >= 0);
		if (pid == 0)
			_exit(0);
		CHECK(waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("forkstdio: child %u: status %#x\n", i, status);
			w.bad = 1;
			break;
		}
	}
	w.stop = 1;
	pthread_join(walker, NULL);
	pthread_join(streamer, NULL);
	for (unsigned int i = 0; i < 500; i++)
		fclose(w.open[i]);
	CHECK(!w.bad);
	free(w.big);
	printf("forkstdio: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	size_t n;

	if (argc != 3) {
		fprintf(stderr, "usage: run_helper alloc|fork|syscall|threads|mmap|realloc|discard|reserve|tree|forkers|localefork|signals|forkstdio "
			"SIZE_MIB\n");
		return 2;
	}
	n = (size_t)strtoul(argv[2], NULL, 10) << 20;
	if (!strcmp(argv[1], "alloc"))
		return mode_alloc(n);
	if (!strcmp(argv[1], "fork"))
		return mode_fork(n);
	if (!strcmp(argv[1], "syscall"))
		return mode_syscall(n);
	if (!strcmp(argv[1], "threads"))
		return mode_threads(n);
	if (!strcmp(argv[1], "mmap"))
		return mode_mmap(n);
	if (!strcmp(argv[1], "realloc"))
		return mode_realloc(n);
	if (!strcmp(argv[1], "discard"))
		return mode_discard(n);
	if (!strcmp(argv[1], "reserve"))
		return mode_reserve(n);
	if (!strcmp(argv[1], "tree"))
		return mode_tree(n);
	if (!strcmp(argv[1], "forkers"))
		return mode_forkers(n);
	if (!strcmp(argv[1], "localefork"))
		return mode_localefork(n);
	if (!strcmp(argv[1], "signals"))
		return mode_signals(n);
	if (!strcmp(argv[1], "forkstdio"))
		return mode_forkstdio(n);
	return 2;
}
