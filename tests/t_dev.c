/* SPDX-License-Identifier: MIT */
/*
 * t_dev.c - helpers for the backend tests (see t_dev.h).
 */
#include "t_dev.h"

#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Temp files */

static char t_dir[64];
static unsigned int t_nr_files;

static void t_dir_remove(void)
{
	DIR *d;
	struct dirent *de;
	char path[sizeof(t_dir) + sizeof(de->d_name) + 1];

	if (t_dir[0] == '\0')
		return;
	d = opendir(t_dir);
	if (d != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", t_dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(t_dir);
	t_dir[0] = '\0';
}

static const char *t_dir_get(void)
{
	if (t_dir[0] != '\0')
		return t_dir;
	snprintf(t_dir, sizeof(t_dir), "/tmp/uswap-dev-XXXXXX");
	if (mkdtemp(t_dir) == NULL) {
		t_dir[0] = '\0';
		fail_msg("mkdtemp under /tmp: %s", strerror(errno));
	}
	atexit(t_dir_remove);
	return t_dir;
}

static bool t_run_mkswap(const char *path)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("mkswap", "mkswap", path, (char *)NULL);
		execl("/usr/sbin/mkswap", "mkswap", path, (char *)NULL);
		execl("/sbin/mkswap", "mkswap", path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

char *t_dev_file(uint64_t nr_slots, bool mkswap, bool *made_swap)
{
	const char *dir = t_dir_get();
	char *path = NULL;
	int fd;

	if (asprintf(&path, "%s/swap%u", dir, t_nr_files++) < 0)
		fail_msg("asprintf");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		fail_msg("create %s: %s", path, strerror(errno));
	if (ftruncate(fd, (off_t)(nr_slots * USWAP_PAGE_SIZE)) != 0)
		fail_msg("ftruncate %s: %s", path, strerror(errno));
	close(fd);
	if (made_swap != NULL)
		*made_swap = false;
	if (mkswap) {
		bool ok = t_run_mkswap(path);

		if (made_swap != NULL)
			*made_swap = ok;
	}
	return path;
}

char *t_dev_swapfile(uint64_t nr_slots)
{
	static const unsigned char zero[USWAP_PAGE_SIZE];
	char *path = t_dev_file(0, false, NULL);
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	for (uint64_t i = 0; i < nr_slots; i++)
		if (write(fd, zero, sizeof(zero)) != (ssize_t)sizeof(zero))
			fail_msg("write %s: %s", path, strerror(errno));
	close(fd);
	if (!t_run_mkswap(path)) {
		unlink(path);
		free(path);
		return NULL;
	}
	return path;
}

void t_need_kind(enum dev_kind kind)
{
	char why[512];

	if (dev_kind_refuse(kind, why, sizeof(why)))
		t_skip(why);
}

int t_swapon_spec(struct uswap *u, const char *spec, struct backend **b)
{
	struct uswap_backend *ub;
	char err[512];
	int prio, type;

	if (uswap_backend_open(spec, &ub, &prio, err, sizeof(err)))
		fail_msg("open %s: %s", spec, err);
	struct uswap_swapon_args a = { .prio = prio, .backend = ub };

	type = uswap_swapon(u, &a);
	if (type < 0)
		fail_msg("swapon %s: %s", spec, t_errname(type));
	if (b)
		*b = (struct backend *)ub;
	return type;
}

/* ------------------------------------------------------------------ */
/* Data */

static unsigned char *t_text_buf;
static size_t t_text_len;

static bool t_text_try(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (f == NULL)
		return false;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < (long)USWAP_PAGE_SIZE ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return false;
	}
	t_text_buf = malloc((size_t)n);
	if (t_text_buf == NULL || fread(t_text_buf, 1, (size_t)n, f) != (size_t)n) {
		free(t_text_buf);
		t_text_buf = NULL;
		fclose(f);
		return false;
	}
	fclose(f);
	t_text_len = (size_t)n;
	return true;
}

static void t_text_load(void)
{
	static const char *const candidates[] = {
		"/usr/share/common-licenses/GPL-3",
		"/usr/share/common-licenses/GPL-2",
		"/usr/share/common-licenses/Apache-2.0",
		"/usr/share/doc/cmake/Copyright.txt",
	};

	for (size_t i = 0; i < T_ARRAY_SIZE(candidates) && t_text_buf == NULL; i++)
		t_text_try(candidates[i]);
	if (t_text_buf == NULL) {
		/* Last resort: words from a small vocabulary, still text-like. */
		static const char *const words[] = { "swap ", "cluster ", "slot ",
			"the ", "page ", "folio ", "of ", "and ", "order ", "device\n" };
		uint64_t rng = 42;

		t_text_len = 64 * 1024;
		t_text_buf = malloc(t_text_len);
		if (t_text_buf == NULL)
			abort();
		for (size_t off = 0; off < t_text_len;) {
			const char *w = words[t_rand_below(&rng, T_ARRAY_SIZE(words))];
			size_t n = strlen(w);

			if (n > t_text_len - off)
				n = t_text_len - off;
			memcpy(t_text_buf + off, w, n);
			off += n;
		}
	}
}

/* Loaded once, from whichever thread asks first. */
const unsigned char *t_text(size_t *len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, t_text_load);
	*len = t_text_len;
	return t_text_buf;
}

void t_fill_page(void *page, enum t_page_kind kind, uint64_t *rng)
{
	unsigned char *p = page;
	size_t len, off;
	const unsigned char *text;
	uint64_t w;

	switch (kind) {
	case T_PAGE_TEXT:
	case T_PAGE_MIXED:
		text = t_text(&len);
		off = (size_t)t_rand_below(rng, len - USWAP_PAGE_SIZE + 1);
		memcpy(p, text + off, USWAP_PAGE_SIZE);
		if (kind == T_PAGE_MIXED)
			memset(p + USWAP_PAGE_SIZE / 2, 0, USWAP_PAGE_SIZE / 2);
		break;
	case T_PAGE_RANDOM:
		for (size_t i = 0; i < USWAP_PAGE_SIZE; i += 8) {
			w = t_rand(rng);
			memcpy(p + i, &w, 8);
		}
		break;
	case T_PAGE_ZERO:
		memset(p, 0, USWAP_PAGE_SIZE);
		break;
	case T_PAGE_SAME:
		w = t_rand(rng) | 1; /* never zero */
		for (size_t i = 0; i < USWAP_PAGE_SIZE; i += 8)
			memcpy(p + i, &w, 8);
		break;
	default:
		fail_msg("bad page kind %d", kind);
	}
}

void t_fill_folio(void *buf, unsigned int order, uint64_t *rng)
{
	/* Weights: text 5, random 2, zero 1, same 1, mixed 1 (of 10). */
	static const enum t_page_kind pick[10] = {
		T_PAGE_TEXT, T_PAGE_TEXT, T_PAGE_TEXT, T_PAGE_TEXT, T_PAGE_TEXT,
		T_PAGE_RANDOM, T_PAGE_RANDOM, T_PAGE_ZERO, T_PAGE_SAME, T_PAGE_MIXED,
	};
	unsigned char *p = buf;

	for (size_t i = 0; i < ((size_t)1 << order); i++)
		t_fill_page(p + i * USWAP_PAGE_SIZE, pick[t_rand_below(rng, 10)], rng);
}

uint64_t t_checksum(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * UINT64_C(0x100000001b3);
		h ^= h >> 29;
	}
	for (size_t i = len & ~(size_t)7; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h;
}

void t_assert_same_bytes(const void *got, const void *want, size_t len,
			 const char *what)
{
	const unsigned char *g = got, *w = want;

	if (memcmp(got, want, len) == 0)
		return;
	for (size_t i = 0; i < len; i++)
		if (g[i] != w[i])
			fail_msg("%s: byte %zu (page %zu, offset %zu) is 0x%02x, expected 0x%02x",
				 what, i, i / USWAP_PAGE_SIZE, i % USWAP_PAGE_SIZE,
				 g[i], w[i]);
}

/* ------------------------------------------------------------------ */
/* Backends */

static const char *const t_names[T_NR_BACKENDS] = {
	[T_RAM] = "ram",
	[T_ZRAM_LZ4] = "zram-lz4",
	[T_ZRAM_ZSTD] = "zram-zstd",
	[T_FILE_URING] = "file-io_uring",
	[T_FILE_PREAD] = "file-pread",
	[T_FILE_DIRECT] = "file-O_DIRECT",
	[T_FAULTY_RAM] = "faulty-over-ram",
};

const char *t_backend_name(enum t_backend_kind k)
{
	return k < T_NR_BACKENDS ? t_names[k] : "?";
}

struct backend *t_backend_open(enum t_backend_kind k, uint64_t nr_slots, bool discard)
{
	struct file_backend_opts fo = { .queue_depth = 16, .discard = discard };
	struct faulty_opts fy = { .seed = 1 };
	struct backend *b = NULL, *inner = NULL;
	char err[256] = "";
	char *path = NULL;
	int rc;

	switch (k) {
	case T_RAM:
		rc = backend_ram_open(nr_slots * USWAP_PAGE_SIZE, &b, err, sizeof(err));
		break;
	case T_ZRAM_LZ4:
		rc = backend_zram_open(nr_slots * USWAP_PAGE_SIZE, "lz4", &b, err, sizeof(err));
		break;
	case T_ZRAM_ZSTD:
		rc = backend_zram_open(nr_slots * USWAP_PAGE_SIZE, "zstd", &b, err, sizeof(err));
		break;
	case T_FILE_URING:
	case T_FILE_PREAD:
	case T_FILE_DIRECT:
		fo.no_uring = k == T_FILE_PREAD;
		fo.direct = k == T_FILE_DIRECT;
		path = t_dev_file(nr_slots, false, NULL);
		rc = backend_file_open(path, &fo, &b, err, sizeof(err));
		free(path);
		if (rc == -EINVAL && fo.direct) {
			t_skip("O_DIRECT is refused by the filesystem of /tmp");
			return NULL;
		}
		break;
	case T_FAULTY_RAM:
		rc = backend_ram_open(nr_slots * USWAP_PAGE_SIZE, &inner, err, sizeof(err));
		if (rc == 0) {
			rc = backend_faulty_open(inner, &fy, &b, err, sizeof(err));
			if (rc)
				inner->ops->close(inner);
		}
		break;
	default:
		fail_msg("bad backend kind %d", k);
		return NULL;
	}
	if (rc != 0)
		fail_msg("open %s: %d (%s): %s", t_backend_name(k), rc, t_errname(rc), err);
	t_true(b != NULL);
	t_eq_u64(b->nr_slots, nr_slots);
	t_eq_u64(b->first_slot, 1);
	return b;
}

void t_bwrite(struct backend *b, uint64_t slot, unsigned int order, const void *buf)
{
	int rc = b->ops->write(b, slot, order, buf);

	if (rc != 0)
		fail_msg("%s write(slot %llu, order %u) = %d (%s)", b->ops->kind,
			 (unsigned long long)slot, order, rc, t_errname(rc));
}

void t_bread(struct backend *b, uint64_t slot, unsigned int order, void *buf)
{
	int rc = b->ops->read(b, slot, order, buf);

	if (rc != 0)
		fail_msg("%s read(slot %llu, order %u) = %d (%s)", b->ops->kind,
			 (unsigned long long)slot, order, rc, t_errname(rc));
}

void *t_buf_alloc(size_t len, bool misaligned)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len + (misaligned ? 4096 : 0)) != 0)
		fail_msg("out of memory (%zu bytes)", len);
	return misaligned ? (char *)p + 8 : p;
}

void t_buf_free(void *buf, bool misaligned)
{
	if (buf != NULL)
		free(misaligned ? (char *)buf - 8 : buf);
}

/* ---------------------------------------------------------------------
 * nbdkit
 * ------------------------------------------------------------------- */

extern char **environ;

bool t_have_nbdkit(void)
{
	return system("command -v nbdkit >/dev/null 2>&1") == 0;
}

/* Servers running now: a test that fails midway (cmocka jumps out) still
 * has them killed at exit, even a stopped one, which --exit-with-parent
 * cannot end (and which would keep meson waiting on its stdout). */
static pid_t nbdkit_pids[16];

static void nbdkit_kill_all(void)
{
	for (size_t i = 0; i < sizeof(nbdkit_pids) / sizeof(nbdkit_pids[0]); i++) {
		if (nbdkit_pids[i] <= 0)
			continue;
		kill(nbdkit_pids[i], SIGCONT);
		kill(nbdkit_pids[i], SIGKILL);
		waitpid(nbdkit_pids[i], NULL, 0);
		nbdkit_pids[i] = 0;
	}
}

/* Note @pid as running (@add) or gone. */
static void nbdkit_track(pid_t pid, bool add)
{
	static bool registered;

	if (!registered)
		registered = atexit(nbdkit_kill_all) == 0;
	for (size_t i = 0; i < sizeof(nbdkit_pids) / sizeof(nbdkit_pids[0]); i++) {
		if (nbdkit_pids[i] == (add ? 0 : pid)) {
			nbdkit_pids[i] = add ? pid : 0;
			return;
		}
	}
}

/* Kill the server of @s (stopped or not) and reap it. */
static void nbdkit_kill(struct t_nbdkit *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGCONT); /* harmless unless it was paused */
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	nbdkit_track(s->pid, false);
	s->pid = 0;
}

/* Spawn nbdkit with the plugin arguments kept in @s and wait for its
 * socket. */
static void nbdkit_spawn(struct t_nbdkit *s)
{
	char *argv[14], pidfile[sizeof(s->dir) + 8];
	int n = 0;

	/* nbdkit writes its pid file once it accepts connections; the
	 * socket exists a little before that. */
	snprintf(pidfile, sizeof(pidfile), "%s/pid", s->dir);
	unlink(pidfile);
	argv[n++] = "nbdkit";
	argv[n++] = "-f";
	argv[n++] = "--exit-with-parent";
	argv[n++] = "-P";
	argv[n++] = pidfile;
	argv[n++] = "-U";
	argv[n++] = s->sock;
	if (s->readonly)
		argv[n++] = "-r";
	argv[n++] = s->plugin;
	argv[n++] = s->arg;
	argv[n] = NULL;
	t_eq(posix_spawnp(&s->pid, "nbdkit", NULL, NULL, argv, environ), 0);
	nbdkit_track(s->pid, true);
	for (int i = 0; i < 500; i++) {
		struct stat st;

		if (stat(pidfile, &st) == 0 && st.st_size > 0)
			return;
		usleep(10000);
	}
	fail_msg("nbdkit did not start on %s within 5 s", s->sock);
}

static void nbdkit_dir(struct t_nbdkit *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/uswap-nbd-XXXXXX");
	t_true(mkdtemp(s->dir) != NULL);
	snprintf(s->sock, sizeof(s->sock), "%s/sock", s->dir);
	snprintf(s->uri, sizeof(s->uri), "nbd:nbd+unix:///?socket=%s", s->sock);
}

void t_nbdkit_start(struct t_nbdkit *s, const char *size, bool readonly)
{
	nbdkit_dir(s);
	snprintf(s->plugin, sizeof(s->plugin), "memory");
	snprintf(s->arg, sizeof(s->arg), "%s", size);
	s->readonly = readonly;
	nbdkit_spawn(s);
}

void t_nbdkit_start_file(struct t_nbdkit *s, uint64_t bytes)
{
	int fd;

	nbdkit_dir(s);
	snprintf(s->file, sizeof(s->file), "%s/disk", s->dir);
	fd = open(s->file, O_CREAT | O_RDWR | O_TRUNC, 0600);
	t_true(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
	close(fd);
	snprintf(s->plugin, sizeof(s->plugin), "file");
	snprintf(s->arg, sizeof(s->arg), "%s", s->file);
	s->readonly = false;
	nbdkit_spawn(s);
}

void t_nbdkit_restart(struct t_nbdkit *s)
{
	nbdkit_kill(s);
	unlink(s->sock);
	nbdkit_spawn(s);
}

/* Is every thread of @pid stopped ('T' in /proc/PID/task/TID/stat)? */
static bool all_threads_stopped(pid_t pid)
{
	char path[sizeof(((struct dirent *)0)->d_name) + 64], buf[512];
	struct dirent *e;
	bool stopped = true;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (stopped && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, e->d_name);
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		char *rp;

		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		rp = strrchr(buf, ')'); /* the state follows the name */
		stopped = rp && rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
	}
	closedir(d);
	return stopped;
}

/* SIGSTOP, then wait (at most 10 s) until every thread has stopped: a
 * thread still running when kill() returns could answer one more request
 * and make a test that needs a silent server pass or fail by chance. */
void t_nbdkit_pause(struct t_nbdkit *s)
{
	t_eq(kill(s->pid, SIGSTOP), 0);
	for (int i = 0; i < 10000 && !all_threads_stopped(s->pid); i++)
		usleep(1000);
	t_true(all_threads_stopped(s->pid));
}

void t_nbdkit_resume(struct t_nbdkit *s)
{
	t_eq(kill(s->pid, SIGCONT), 0);
}

void t_nbdkit_stop(struct t_nbdkit *s)
{
	nbdkit_kill(s);
	char pidfile[sizeof(s->dir) + 8];

	snprintf(pidfile, sizeof(pidfile), "%s/pid", s->dir);
	unlink(pidfile);
	unlink(s->sock);
	if (s->file[0])
		unlink(s->file);
	rmdir(s->dir);
}

