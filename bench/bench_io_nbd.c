// SPDX-License-Identifier: MIT
/*
 * bench_io_nbd.c - the limit `uswap bench io` puts beside an nbd device:
 * the same server reached by a plain libnbd loop, with the same threads
 * and the same folios. Each thread opens its own connection and writes
 * its share folio by folio (nbd_pwrite: the swap-out limit), then reads it
 * back (nbd_pread: the swap-in limit), timing each read for the latency
 * percentiles; the bytes read are compared with the source. The loop uses
 * its own offsets past the device's slot 0, as uswap's slots do; the
 * export is the one the measurement just swapped off, so nothing of it is
 * in use. Built only with libnbd (meson option nbd, as the nbd device).
 */
#include "bench_io.h"
#include "cli.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>

struct nbd_share {
	pthread_t tid;
	const char *uri;
	const unsigned char *src;
	unsigned char *dst;
	size_t folio;
	uint64_t first, end;         /* folios of this thread */
	uint64_t *lat_ns;            /* per folio read */
	uint64_t write_ns, read_ns;
	char err[200];
};

static void *share_main(void *arg)
{
	struct nbd_share *s = arg;
	struct nbd_handle *h = nbd_create();
	uint64_t t0;

	if (!h || nbd_connect_uri(h, s->uri) == -1) {
		snprintf(s->err, sizeof(s->err), "libnbd: %s", nbd_get_error());
		goto out;
	}
	t0 = cli_now_ns();
	for (uint64_t f = s->first; f < s->end; f++)
		if (nbd_pwrite(h, s->src + f * s->folio, s->folio,
			       (f + 1) * s->folio, 0) == -1) {
			snprintf(s->err, sizeof(s->err), "nbd_pwrite: %s", nbd_get_error());
			goto out;
		}
	s->write_ns = cli_now_ns() - t0;
	t0 = cli_now_ns();
	for (uint64_t f = s->first; f < s->end; f++) {
		uint64_t r0 = cli_now_ns();

		if (nbd_pread(h, s->dst + f * s->folio, s->folio, (f + 1) * s->folio, 0) == -1) {
			snprintf(s->err, sizeof(s->err), "nbd_pread: %s", nbd_get_error());
			goto out;
		}
		s->lat_ns[f] = cli_now_ns() - r0;
	}
	s->read_ns = cli_now_ns() - t0;
	if (memcmp(s->src + s->first * s->folio, s->dst + s->first * s->folio,
		   (s->end - s->first) * s->folio))
		snprintf(s->err, sizeof(s->err), "the nbd loop read back other bytes");
out:
	if (h) {
		nbd_shutdown(h, 0);
		nbd_close(h);
	}
	return NULL;
}

int bench_io_limit_nbd(struct bench_io_data *d, struct bench_io_row *row,
		       const char *uri, char *err, size_t errlen)
{
	size_t folio = (size_t)USWAP_PAGE_SIZE << row->order;
	uint64_t nr = row->bytes / folio, wmax = 0, rmax = 0;
	struct nbd_share *s = calloc(row->threads, sizeof(*s));
	uint64_t *lat = calloc(nr ? nr : 1, sizeof(*lat));
	int rc = 0;

	row->limit_out_what = "libnbd nbd_pwrite loop";
	row->limit_in_what = "libnbd nbd_pread loop";
	if (!s || !lat) {
		free(s);
		free(lat);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(d->dst, 0, row->bytes);
	for (unsigned int i = 0; i < row->threads; i++) {
		s[i] = (struct nbd_share){ .uri = uri, .src = d->src, .dst = d->dst,
					   .folio = folio, .lat_ns = lat,
					   .first = nr * i / row->threads,
					   .end = nr * (i + 1) / row->threads };
		pthread_create(&s[i].tid, NULL, share_main, &s[i]);
	}
	for (unsigned int i = 0; i < row->threads; i++) {
		pthread_join(s[i].tid, NULL);
		if (s[i].err[0] && !rc) {
			snprintf(err, errlen, "nbd limit: %s", s[i].err);
			rc = -EIO;
		}
		wmax = s[i].write_ns > wmax ? s[i].write_ns : wmax;
		rmax = s[i].read_ns > rmax ? s[i].read_ns : rmax;
	}
	if (!rc && wmax && rmax) {
		row->limit_out_mbps = (double)(nr * folio) * 1e3 / (double)wmax;
		row->limit_in_mbps = (double)(nr * folio) * 1e3 / (double)rmax;
		bench_io_percentiles(lat, nr, &row->limit_in_p50_us, &row->limit_in_p99_us);
	}
	free(s);
	free(lat);
	return rc;
}
