/* SPDX-License-Identifier: MIT */
/*
 * run_daemon.h - what run_daemon.c (the tree's swap subsystem) and
 * run_daemon_status.c (its `uswap status` sockets) share: one connected
 * process, and its line in the agent's format.
 */
#ifndef USWAP_TOOLS_RUN_DAEMON_H
#define USWAP_TOOLS_RUN_DAEMON_H

#include <stdatomic.h>
#include <sys/un.h>

#include <json-c/json.h>
#include <uswap/pager.h>

#include "run_cmd.h"

struct run_client {
	struct run_client *next;
	struct run_daemon *d;
	pthread_t th;
	int sock, zap;
	pthread_mutex_t zap_lock;    /* one zap request at a time */
	pid_t pid;
	uint64_t image_ns;
	char comm[32];
	pthread_mutex_t pg_lock;     /* pg's end against a status answer */
	struct uswap_pager *pg;
	struct uswap_pager_stats st; /* at its end */
	_Atomic uint64_t fallbacks;  /* the agent's heap fallbacks */
	struct uswap_pager_share *forking; /* between FORK_PREPARE and
					FORK_PARENT: the fork's record,
					eviction held (NULL: none) */
	json_object *devices;        /* the devices at its end, before its
					slots went */
	int status_fd;               /* PID.sock listening, or -1; closed by
					the status thread once ended */
	ino_t status_ino;            /* PID.sock's inode: ours to unlink */
	char status_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	_Atomic bool ended;
};

/* Every device of @u as the agent's "devices" array (swapon --show's
 * columns, error counts, zram's mm_stat, the backend's own figures).
 * The caller owns the array. */
json_object *run_daemon_devices(struct uswap *u);

/* run_daemon_line.c: @c's line in the agent's format (run_stats.c adds them
 * up), from its pager's figures @ps with @resident bytes resident; CMD's
 * (@root) carries the instance's counters and devices, which are the
 * tree's. The caller owns the object. */
json_object *run_client_line(const struct run_client *c, const struct uswap_pager_stats *ps,
			     uint64_t resident, bool root);

/* run_daemon_status.c: start answering (0, or -errno: no status then,
 * said once); publish @c at its HELLO (quietly nothing if it fails);
 * take @c's socket away at its end; stop before the clients are freed. */
int run_status_start(struct run_daemon *d);
void run_status_publish(struct run_client *c);
void run_status_unpublish(struct run_client *c);
void run_status_stop(struct run_daemon *d);

#endif /* USWAP_TOOLS_RUN_DAEMON_H */
