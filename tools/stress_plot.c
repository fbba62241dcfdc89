// SPDX-License-Identifier: MIT
/*
 * stress_plot.c - `uswap stress --plot`'s samples: the pager region's
 * resident bytes against its limit, each device's use in both instances
 * (0 while churned off), and the swap-path workers' swap-outs and
 * swap-ins so far.
 */
#include "cli.h"
#include "stress.h"

void stress_plot_sample(struct stress *s, struct cli_plot *p)
{
	struct cli_plot_sample *x = cli_plot_next(p);
	unsigned int col = 0;

	if (!x)
		return;
	stress_pager_resident(s, &x->resident_mib, &x->limit_mib);
	x->out = atomic_load(&s->c.swap_out);
	x->in = atomic_load(&s->c.swap_in);
	for (unsigned int i = 0; i < s->nr_sets; i++) {
		const struct stress_devset *ds = &s->sets[i];

		for (unsigned int d = 0; d < ds->nr && col < CLI_PLOT_MAX_DEVICES; d++, col++) {
			struct uswap_device_info info;
			int type = ds->dev[d].type;

			if (col >= p->nr_devices) /* "swap-zram-zstd", "pager-file", ... */
				cli_plot_device(p, col, ds->dev[d].label);
			/* A device being churned may go between the two reads. */
			if (type >= 0 && !uswap_device_info(ds->u, type, &info))
				x->used_mib[col] = (double)info.inuse * USWAP_PAGE_SIZE /
						   (1024.0 * 1024.0);
		}
	}
}
