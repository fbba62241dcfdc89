// SPDX-License-Identifier: MIT
/*
 * Description: an outside program on the installed libuswap, built by
 * tests/install_check.sh and tests/deb_check.sh with nothing but
 * `pkg-config --cflags --libs uswap`: one page swapped out to zram and
 * back in, compared, freed. Prints "ok" and exits 0 when all of it worked.
 */
#include <stdio.h>
#include <string.h>
#include <uswap/uswap.h>

int main(void)
{
	char err[256], page[USWAP_PAGE_SIZE], back[USWAP_PAGE_SIZE];
	struct uswap *u;
	uswap_entry_t e;

	if (uswap_create(NULL, &u) || uswap_swapon_spec(u, "zram:16M", err, sizeof(err)) < 0)
		return 1;
	memset(page, 7, sizeof(page));
	if (uswap_swap_out(u, page, 0, 0, &e) || uswap_swap_in(u, e, 0, back) < 0 ||
	    memcmp(page, back, sizeof(page)) || uswap_swap_free(u, e, 0))
		return 1;
	uswap_destroy(u);
	puts("ok");
	return 0;
}
