// SPDX-License-Identifier: MIT
/*
 * pager_ops.c - the pager calls of the agent, wherever its pager is: in
 * the process (agent.p, uswap run's default) or in uswap run serving the
 * whole tree (--daemon: agent.remote, each call one request, daemon.c).
 * adopt.c, mmap.c and the fork handlers call these and never the pager.
 */
#include <errno.h>

#include <uswap/daemon.h>
#include <uswap/uswap.h>

#include "agent/agent.h"

bool agent_has_pager(void)
{
	return (agent.p || agent.remote) && !agent.detached;
}

int agent_pg_adopt(void *addr, size_t len)
{
	if (agent.remote)
		return (int)agent_daemon_call(USWAP_DOP_ADOPT, addr, len, 0);
	return uswap_region_adopt(agent.p, addr, len);
}

int agent_pg_disown(void *addr)
{
	if (agent.remote)
		return (int)agent_daemon_call(USWAP_DOP_DISOWN, addr, 0, 0);
	return uswap_region_disown(agent.p, addr);
}

int agent_pg_replaced(void *addr, size_t len, bool anon)
{
	if (agent.remote)
		return (int)agent_daemon_call(USWAP_DOP_REPLACED, addr, len, anon);
	return uswap_region_replaced(agent.p, addr, len, anon);
}

int agent_pg_mlock(void *addr, size_t len)
{
	if (agent.remote)
		return (int)agent_daemon_call(USWAP_DOP_MLOCK, addr, len, 0);
	return uswap_region_mlock(agent.p, addr, len);
}

int agent_pg_munlock(void *addr, size_t len)
{
	if (agent.remote)
		return (int)agent_daemon_call(USWAP_DOP_MUNLOCK, addr, len, 0);
	return uswap_region_munlock(agent.p, addr, len);
}

int agent_pg_discard(void *addr, size_t len)
{
	if (agent.remote)
		return (int)agent_daemon_call(USWAP_DOP_DISCARD, addr, len, 0);
	return uswap_region_discard(agent.p, addr, len);
}

int agent_pg_hold(void)
{
	if (agent.remote)
		return (int)agent_daemon_call(USWAP_DOP_HOLD, NULL, 0, 0);
	return uswap_pager_hold(agent.p);
}

void agent_pg_release(void)
{
	if (agent.remote)
		agent_daemon_call(USWAP_DOP_RELEASE, NULL, 0, 0);
	else
		uswap_pager_release(agent.p);
}
