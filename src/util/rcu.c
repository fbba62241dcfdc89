// SPDX-License-Identifier: MIT
/*
 * rcu.c - liburcu-bp around fork(): its grace-period and registry locks
 * are taken before every fork and released after, and the child's
 * registry is pruned of the threads the child does not have. liburcu asks
 * for these three calls when a child goes on without exec(), as a program
 * under `uswap run` may, and a child that inherited a lock some other
 * thread held would wait for it forever in its first synchronize.
 */
#include <pthread.h>

#include "util/rcu.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void register_fork_handlers(void)
{
	pthread_atfork(urcu_bp_before_fork, urcu_bp_after_fork_parent,
		       urcu_bp_after_fork_child);
}

void rcu_fork_safe(void)
{
	pthread_once(&fork_once, register_fork_handlers);
}
