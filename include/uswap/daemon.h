/* SPDX-License-Identifier: MIT */
/*
 * uswap/daemon.h - the requests between `uswap run --daemon` and the agent
 * in each process of its tree (issue 23, docs/run.md). uswap run holds
 * the tree's swap instance, devices, swap cache, charge group and one
 * pager per process (uswap_pager_config.target); an agent connects to its
 * unix socket (SOCK_SEQPACKET, abstract name in $USWAP_RUN_DAEMON), sends
 * HELLO with two descriptors (SCM_RIGHTS): its userfaultfd
 * (uswap_pager_target_open()) and one end of a socket pair on which it
 * answers zap requests (struct uswap_daemon_zap: unmap those ranges,
 * reply one int32_t, 0 or -errno). Every other request is one struct
 * uswap_daemon_req answered by one struct uswap_daemon_reply, in order.
 * The connection ends with the process's image (close-on-exec, exit):
 * uswap run then destroys its pager, which frees its slots. Both sides
 * are built from one tree: the layout is not a stable interface.
 */
#ifndef USWAP_DAEMON_H
#define USWAP_DAEMON_H

#include <stdint.h>

#define USWAP_DAEMON_ENV     "USWAP_RUN_DAEMON" /* the socket's abstract name */
#define USWAP_DAEMON_VERSION 1
#define USWAP_DAEMON_ZAP_MAX 64                 /* ranges per zap request */

enum uswap_daemon_op {
	USWAP_DOP_HELLO = 1,  /* addr: image start (ns, CLOCK_REALTIME), arg:
				 uswap_pager_target caps; + 2 descriptors */
	USWAP_DOP_ADOPT,      /* uswap_region_adopt(addr, len) */
	USWAP_DOP_DISOWN,     /* uswap_region_disown(addr) */
	USWAP_DOP_REPLACED,   /* uswap_region_replaced(addr, len, arg != 0) */
	USWAP_DOP_MLOCK,      /* uswap_region_mlock(addr, len) */
	USWAP_DOP_MUNLOCK,    /* uswap_region_munlock(addr, len) */
	USWAP_DOP_DISCARD,    /* uswap_region_discard(addr, len) */
	USWAP_DOP_HOLD,       /* uswap_pager_hold() (before a fork) */
	USWAP_DOP_RELEASE,    /* uswap_pager_release() */
	USWAP_DOP_FALLBACKS,  /* arg: allocations the heap could not take so
				 far (for the stats); no reply */
	USWAP_DOP_FORK_PREPARE, /* uswap_pager_share_prepare(): rc is a token
				   (> 0) the fork's child names */
	USWAP_DOP_FORK_PARENT,  /* uswap_pager_share_parent() */
	USWAP_DOP_FORK_CHILD,   /* in the child, its copies adopted: arg is the
				   token; uswap_pager_share_child() */
	USWAP_DOP_FORK_DROP,    /* in the parent, after FORK_PARENT, the fork
				   failed: arg is the token; the record is
				   freed (uswap_pager_share_free()) */
};

struct uswap_daemon_req {
	uint32_t op;          /* enum uswap_daemon_op */
	uint32_t version;     /* USWAP_DAEMON_VERSION */
	uint64_t addr, len, arg;
};

struct uswap_daemon_reply {
	int64_t rc;           /* the call's return value */
};

struct uswap_daemon_zap {
	uint32_t n;           /* ranges that follow, 1..USWAP_DAEMON_ZAP_MAX */
	uint32_t pad;
	struct {
		uint64_t addr, len;
	} r[USWAP_DAEMON_ZAP_MAX];
};

#endif /* USWAP_DAEMON_H */
