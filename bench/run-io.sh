#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-io.sh - the standard `uswap bench io` set: swap-out and swap-in
# MB/s of ram:1G, zram:1G (lz4), zram:1G:zstd and a 1 GiB mkswap'd file in
# /tmp, orders 0 and 4, 1 and 2 threads, each beside its raw limit
# (memcpy, the raw codec, fio on the same file). When run as root the
# page cache is dropped before the file's swap-in and fio's reads
# (--drop-caches), so the file figures are the disk's, not memory's.
#
# Usage: bench/run-io.sh [USWAP_BINARY [EXTRA_OPTIONS...]]
#   USWAP_BINARY   path of the uswap binary (default build/tools/uswap)
#   EXTRA_OPTIONS  added to the run, e.g. --json, --size 64M, --repeat 5
#   DIRECT=1       (environment) also measure the file with O_DIRECT
#
# The swap file is made by the benchmark itself (dd from /dev/zero, then
# mkswap) inside a fresh directory under /tmp, and the directory is
# removed on exit, even after an interrupt. Nothing is written outside
# /tmp, and the kernel's swap is never touched: uswap keeps its devices
# inside the process and never calls swapon(2) or swapon(8).
#
# Exit status: that of the benchmark (0 ok, 1 runtime error, 2 usage).
set -u

USWAP=${1:-build/tools/uswap}
[ $# -gt 0 ] && shift

if [ ! -x "$USWAP" ]; then
	echo "run-io.sh: '$USWAP' is not an executable; build first (make build) or pass its path" >&2
	exit 2
fi
command -v fio >/dev/null 2>&1 ||
	echo "run-io.sh: fio is not installed (apt-get install fio): the file limits will be null" >&2

dir=$(mktemp -d /tmp/uswap-bench-io.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'rm -rf "$dir"; exit 130' INT
trap 'rm -rf "$dir"; exit 143' TERM HUP
file="$dir/swapfile"

set -- --make-file "$file" --file-size 1G "$@"
if [ "$(id -u)" -eq 0 ]; then
	set -- "$@" --drop-caches
else
	echo "run-io.sh: not root: the page cache is not dropped, file swap-in reads memory" >&2
fi
if [ "${DIRECT:-0}" = 1 ]; then
	set -- "$@" --device ram:1G --device zram:1G --device zram:1G:zstd \
		--device "file:$file" --device "file:$file:direct"
fi

echo "\$ $USWAP bench io $*"
"$USWAP" bench io "$@"
