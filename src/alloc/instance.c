// SPDX-License-Identifier: MIT
/*
 * instance.c - creating and destroying a swap system (struct uswap).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "alloc/alloc_internal.h"
#include "alloc/alloc_policy.h"
#include "util/rcu.h"

/* The per-policy state: global device lists, per-CPU slot caches. */
static int policy_setup(struct uswap *u)
{
	u->least_priority = USWAP_PRIO_DEFAULT;
	u->policy_device_alloc = policy_percpu_global(u) || policy_device_lock(u);
	u->policy_slow = u->policy_device_alloc || !policy_rings(u) ||
			 u->policy.discard != USWAP_DISCARD_BOUNDED;
	if (!policy_rings(u)) {
		u->avail = calloc(policy_nr_avail_lists(u), sizeof(*u->avail));
		if (!u->avail)
			return -ENOMEM;
	}
	if (policy_device_lock(u)) {
		for (unsigned int cpu = 0; cpu < u->nr_cpus; cpu++) {
			u->pcpu[cpu].slot_cache = calloc(1, sizeof(struct slot_cache));
			if (!u->pcpu[cpu].slot_cache)
				return -ENOMEM;
		}
	}
	return 0;
}

static void policy_free(struct uswap *u)
{
	free(u->avail);
	for (unsigned int cpu = 0; cpu < u->nr_cpus; cpu++)
		free(u->pcpu[cpu].slot_cache);
}

USWAP_API int uswap_create(const struct uswap_config *cfg, struct uswap **out)
{
	struct uswap_config c = cfg ? *cfg : (struct uswap_config){ 0 };
	struct uswap *u;

	if (!out)
		return -EINVAL;
	if (!c.nr_cpus)
		c.nr_cpus = (unsigned int)get_nprocs_conf();
	if (!c.nr_cpus || c.nr_cpus > USWAP_MAX_CPUS || policy_check(&c.policy))
		return -EINVAL;
	if (!c.ring_quota)
		c.ring_quota = USWAP_DEFAULT_RING_QUOTA;
	rcu_fork_safe(); /* a fork child of this process may use RCU too */

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->nr_cpus = c.nr_cpus;
	u->ring_quota = c.ring_quota;
	u->policy = c.policy;
	u->pcpu = aligned_alloc(CACHELINE, c.nr_cpus * sizeof(*u->pcpu));
	if (!u->pcpu) {
		free(u);
		return -ENOMEM;
	}
	memset(u->pcpu, 0, c.nr_cpus * sizeof(*u->pcpu));
	if (policy_setup(u)) {
		policy_free(u);
		free(u->pcpu);
		free(u);
		return -ENOMEM;
	}
	pthread_mutex_init(&u->swapon_lock, NULL);
	*out = u;
	return 0;
}

USWAP_API void uswap_destroy(struct uswap *u)
{
	if (!u)
		return;
	/* No other thread may still use @u, so no grace period is needed. */
	for (int type = 0; type < USWAP_MAX_DEVICES; type++)
		device_free(u->devs[type]);
	ring_set_free(u->rings);
	policy_free(u);
	pthread_mutex_destroy(&u->swapon_lock);
	free(u->pcpu);
	free(u);
}
