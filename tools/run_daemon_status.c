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
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uswap/status.h>

/* The thread wakes at once when a socket comes or goes and when it must
 * stop (status_wake); the timeout is only a safety net. It was the only
 * wake-up, 100 ms, and every run's end waited for it. */
#define STATUS_POLL_MS 1000

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
	size_t n = 1;

	if (!*cap) {
		*fds = malloc(16 * sizeof(**fds));
		*who = malloc(16 * sizeof(**who));
		if (!*fds || !*who)
			return -1;
		*cap = 16;
	}
	(*fds)[0] = (struct pollfd){ .fd = d->status_wake, .events = POLLIN };
	(*who)[0] = NULL;
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
			size_t more = 2 * *cap;
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
			continue; /* poll() just waited */
		if (fds[0].revents & POLLIN) {
			eventfd_t v;

			eventfd_read(d->status_wake, &v); /* then gather again */
		}
		for (long i = 1; i < n; i++)
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
	d->status_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->status_wake < 0)
		return -errno;
	if ((rc = pthread_create(&d->status_th, NULL, status_main, d))) {
		close(d->status_wake);
		d->status_wake = -1;
		return -rc;
	}
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
	eventfd_write(c->d->status_wake, 1); /* polled from now on */
}

void run_status_unpublish(struct run_client *c)
{
	struct stat st;

	if (c->status_path[0] && !lstat(c->status_path, &st) && st.st_ino == c->status_ino)
		unlink(c->status_path);
	c->status_path[0] = '\0';
	if (c->d->status_wake >= 0) /* set before any client, closed after */
		eventfd_write(c->d->status_wake, 1); /* its socket closed soon */
}

void run_status_stop(struct run_daemon *d)
{
	if (d->status_on) {
		atomic_store(&d->status_stop, true);
		eventfd_write(d->status_wake, 1);
		pthread_join(d->status_th, NULL);
		d->status_on = false; /* status_wake: closed once no client runs */
	}
	pthread_mutex_lock(&d->lock);
	for (struct run_client *c = d->clients; c; c = c->next)
		if (c->status_fd >= 0) {
			close(c->status_fd);
			c->status_fd = -1;
		}
	pthread_mutex_unlock(&d->lock);
}
