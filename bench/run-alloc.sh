#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-alloc.sh - the standard `uswap bench alloc` configurations that
# docs/benchmarks.md reports. Each command is printed before its output.
#
# Usage: bench/run-alloc.sh [USWAP_BINARY [EXTRA_OPTIONS...]]
#   USWAP_BINARY   path of the uswap binary (default build/tools/uswap)
#   EXTRA_OPTIONS  added to every run, e.g. --duration 5 or --json
#
# Exit status: 0 if every run succeeded, otherwise the last failing run's.
set -u

USWAP=${1:-build/tools/uswap}
[ $# -gt 0 ] && shift

if [ ! -x "$USWAP" ]; then
	echo "run-alloc.sh: '$USWAP' is not an executable; build first" \
	     "(meson setup build && ninja -C build) or pass its path" >&2
	exit 2
fi

status=0

run() {
	echo "\$ $*"
	"$@"
	rc=$?
	[ $rc -eq 0 ] || status=$rc
	echo
}

echo "## 1 thread, pair pattern, order 0 (single-slot alloc+free latency)"
run "$USWAP" bench alloc --threads 1 --pattern pair --orders 0 "$@"

echo "## fifo, order 0, 1 and 2 threads (steady state with 1024 live slots per thread)"
run "$USWAP" bench alloc --threads 1 --pattern fifo --orders 0 "$@"
run "$USWAP" bench alloc --threads 2 --pattern fifo --orders 0 "$@"

echo "## fifo, 2 threads, order mix 0:80,4:15,9:5 (mTHP fallback)"
run "$USWAP" bench alloc --threads 2 --pattern fifo --orders 0:80,4:15,9:5 "$@"

echo "## ring quota sweep, 2 threads, 4 devices, fifo (balance vs shared locks)"
for quota in 1 8 64 512; do
	run "$USWAP" bench alloc --threads 2 --devices 4 --pattern fifo \
		--quota "$quota" "$@"
done

exit $status
