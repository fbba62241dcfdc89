// SPDX-License-Identifier: MIT
/*
 * instance.c - creating and destroying a swap system (struct uswap).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "alloc/alloc.h"
#include "util/rcu.h"

USWAP_API int uswap_create(const struct uswap_config *cfg, struct uswap **out)
{
	struct uswap_config c = cfg ? *cfg : (struct uswap_config){ 0 };
	struct uswap *u;

	if (!out)
		return -EINVAL;
	if (!c.nr_cpus)
		c.nr_cpus = (unsigned int)get_nprocs_conf();
	if (!c.nr_cpus || c.nr_cpus > USWAP_MAX_CPUS)
		return -EINVAL;
	if (!c.ring_quota)
		c.ring_quota = USWAP_DEFAULT_RING_QUOTA;

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->nr_cpus = c.nr_cpus;
	u->ring_quota = c.ring_quota;
	u->pcpu = aligned_alloc(CACHELINE, c.nr_cpus * sizeof(*u->pcpu));
	if (!u->pcpu) {
		free(u);
		return -ENOMEM;
	}
	memset(u->pcpu, 0, c.nr_cpus * sizeof(*u->pcpu));
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
	pthread_mutex_destroy(&u->swapon_lock);
	free(u->pcpu);
	free(u);
}
