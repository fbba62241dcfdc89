#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-nbd.sh - `uswap bench io` on NBD exports: nbdkit's memory plugin
# started here twice, on a unix socket in a fresh directory under /tmp and
# on TCP loopback (127.0.0.1 only, a free port), each measured with one
# folio per call and with batches, orders 0 and 4, 1 and 2 threads. The
# limit beside each row is a plain libnbd loop (nbd_pwrite/nbd_pread of
# the same folios) on the same server; swap-in latency percentiles are
# printed for the single-folio rows beside nbd_pread's.
#
# Usage: bench/run-nbd.sh [USWAP_BINARY [EXTRA_OPTIONS...]]
#   USWAP_BINARY   path of the uswap binary (default build/tools/uswap)
#   EXTRA_OPTIONS  added to every run, e.g. --repeat 5, --json
#   BATCH          (environment) folios per call of the batched runs (32)
#   SIZE           (environment) export size (1G)
#
# Both servers are killed on exit, even after an interrupt; nothing
# listens on anything but the unix socket and 127.0.0.1.
set -u

USWAP=${1:-build/tools/uswap}
[ $# -gt 0 ] && shift
BATCH=${BATCH:-32}
SIZE=${SIZE:-1G}

if [ ! -x "$USWAP" ]; then
	echo "run-nbd.sh: '$USWAP' is not an executable; build first (make build)" >&2
	exit 2
fi
command -v nbdkit >/dev/null 2>&1 || {
	echo "run-nbd.sh: nbdkit is not installed (apt-get install nbdkit): skipped"
	exit 0
}

dir=$(mktemp -d /tmp/uswap-bench-nbd.XXXXXX) || exit 1
cleanup() {
	for p in "$dir"/*.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM HUP

# A free TCP port on loopback: ask the kernel for one.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 10809)

nbdkit -U "$dir/sock" -P "$dir/unix.pid" memory "$SIZE" || exit 1
nbdkit -i 127.0.0.1 -p "$port" -P "$dir/tcp.pid" memory "$SIZE" || exit 1
for i in $(seq 50); do
	[ -S "$dir/sock" ] && [ -f "$dir/tcp.pid" ] && break
	sleep 0.1
done

rc=0
for uri in "nbd+unix:///?socket=$dir/sock" "nbd://127.0.0.1:$port/"; do
	for b in 1 "$BATCH"; do
		echo "== nbd:$uri, --batch $b"
		"$USWAP" bench io --device "nbd:$uri" --batch "$b" "$@" || rc=$?
	done
done
exit $rc
