// SPDX-License-Identifier: MIT
/*
 * run_daemon_status.c - `uswap status` under `uswap run --daemon`: every
 * process of the tree is published as the in-process agent publishes
 * itself (src/agent/status.c), PID.sock in the status directory
 * (<uswap/status.h>), so `uswap status [PID]` reads either mode alike.
 * The sockets are uswap run's, one per connected process; one thread here
 * polls them all and answers each client with that process's line, live:
 * its pager's figures, and on CMD's line the tree's devices and swap
 * counters (the instance is the tree's, as at the run's end).
 *
 * A socket is taken away when its process's connection ends (it exits or
 * execs; an exec'd image publishes the same path anew, so the old one
 * unlinks only the inode it made), and closed by the thread, which alone
 * polls it.
 */
#include "run_daemon.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uswap/status.h>

#define STATUS_POLL_MS 100 /* how soon a new process's socket is polled */

/* Answer one client of @c's socket with @c's line (nothing if its pager
 * is gone meanwhile). */
static void answer(struct run_daemon *d, struct run_client *c)
{
	struct uswap_pager_stats st = { .size = sizeof(st) };
	json_object *o = NULL;
	const char *line;
	int fd = accept4(c->status_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (!uswap_status_peer_ok(fd)) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&c->pg_lock);
	if (c->pg && !uswap_pager_stats_get(c->pg, &st))
		o = run_client_line(c, &st, st.resident_bytes, c->pid == atomic_load(&d->cmd));
	pthread_mutex_unlock(&c->pg_lock);
	if (o) {
		line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
		/* Small (a few KiB): the socket's buffer takes it at once. */
		if (send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
			send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		json_object_put(o);
	}
	close(fd);
}

/* The live processes' sockets into @fds and @who (grown as needed); those
 * of ended processes closed. Return: how many, or -1 (out of memory). */
static long gather(struct run_daemon *d, struct pollfd **fds, struct run_client ***who,
		   size_t *cap)
{
	size_t n = 0;

	pthread_mutex_lock(&d->lock);
	for (struct run_client *c = d->clients; c; c = c->next) {
		if (c->status_fd < 0)
			continue;
		if (atomic_load(&c->ended)) {
			close(c->status_fd);
			c->status_fd = -1;
			continue;
		}
		if (n == *cap) {
			size_t more = *cap ? 2 * *cap : 16;
			struct pollfd *f = realloc(*fds, more * sizeof(**fds));

			if (f)
				*fds = f;
			struct run_client **w = f ? realloc(*who, more * sizeof(**who)) : NULL;

			if (!w) {
				pthread_mutex_unlock(&d->lock);
				return -1;
			}
			*who = w;
			*cap = more;
		}
		(*fds)[n] = (struct pollfd){ .fd = c->status_fd, .events = POLLIN };
		(*who)[n++] = c;
	}
	pthread_mutex_unlock(&d->lock);
	return (long)n;
}

static void *status_main(void *arg)
{
	struct run_daemon *d = arg;
	struct pollfd *fds = NULL;
	struct run_client **who = NULL;
	size_t cap = 0;

	while (!atomic_load(&d->status_stop)) {
		long n = gather(d, &fds, &who, &cap);

		if (n < 0 || poll(fds, (nfds_t)n, STATUS_POLL_MS) <= 0)
			continue; /* none yet: poll() just waited */
		for (long i = 0; i < n; i++)
			if (fds[i].revents & POLLIN)
				answer(d, who[i]);
	}
	free(fds);
	free(who);
	return NULL;
}

int run_status_start(struct run_daemon *d)
{
	char path[sizeof(((struct run_client *)0)->status_path)];
	int fd = uswap_status_listen(getpid(), path, sizeof(path)), rc;

	/* The directory is checked once here (uswap run's own pid, never
	 * one of the tree's): a refusal is said once, not per process. */
	if (fd < 0) {
		if (fd == -EPERM)
			fprintf(stderr, "uswap run: the status directory is not this user's "
				"alone (owner, mode, or a symlink): the tree is not published "
				"for uswap status\n");
		return fd;
	}
	close(fd);
	unlink(path);
	if ((rc = pthread_create(&d->status_th, NULL, status_main, d)))
		return -rc;
	d->status_on = true;
	return 0;
}

void run_status_publish(struct run_client *c)
{
	struct stat st;
	int fd;

	if (!c->d->status_on)
		return;
	fd = uswap_status_listen(c->pid, c->status_path, sizeof(c->status_path));
	if (fd < 0)
		return;
	if (stat(c->status_path, &st)) {
		close(fd);
		return;
	}
	c->status_ino = st.st_ino;
	pthread_mutex_lock(&c->d->lock);
	c->status_fd = fd;
	pthread_mutex_unlock(&c->d->lock);
}

void run_status_unpublish(struct run_client *c)
{
	struct stat st;

	if (c->status_path[0] && !lstat(c->status_path, &st) && st.st_ino == c->status_ino)
		unlink(c->status_path);
	c->status_path[0] = '\0';
}

void run_status_stop(struct run_daemon *d)
{
	if (d->status_on) {
		atomic_store(&d->status_stop, true);
		pthread_join(d->status_th, NULL);
		d->status_on = false;
	}
	pthread_mutex_lock(&d->lock);
	for (struct run_client *c = d->clients; c; c = c->next)
		if (c->status_fd >= 0) {
			close(c->status_fd);
			c->status_fd = -1;
		}
	pthread_mutex_unlock(&d->lock);
}
