#!/bin/sh
# SPDX-License-Identifier: MIT
#
# compare-alloc.sh - `uswap bench alloc` of two builds, alternating run by
# run (one OLD, one NEW, N times), so that a shared machine's drift hits
# both alike; prints the median ns per pair of each, the range, and
# new/old. Compare only the ratio measured in one invocation.
#
# Usage: bench/compare-alloc.sh OLD_USWAP NEW_USWAP [BENCH_ALLOC_OPTIONS...]
#   N=runs per build (environment, default 5); --duration 1 --json are
#   added to the options.
# Needs python3. Exit status: 0, or 2 on bad usage or a failed run.
set -u

[ $# -ge 2 ] || { echo "usage: $0 OLD_USWAP NEW_USWAP [OPTIONS...]" >&2; exit 2; }
OLD=$1 NEW=$2
shift 2
for bin in "$OLD" "$NEW"; do
	[ -x "$bin" ] || { echo "compare-alloc.sh: '$bin' is not an executable" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "compare-alloc.sh: needs python3" >&2; exit 2; }
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT

i=0
while [ $i -lt "${N:-5}" ]; do
	for side in old new; do
		bin=$OLD
		[ $side = new ] && bin=$NEW
		out=$("$bin" bench alloc --duration 1 --json "$@") || { echo "compare-alloc.sh: $bin failed" >&2; exit 2; }
		printf '%s %s\n' "$side" "$out" | tr -d '\n' >>"$tmp"
		echo >>"$tmp"
	done
	i=$((i + 1))
done
python3 - "$tmp" <<'PY'
import json, statistics, sys
runs = {"old": [], "new": []}
for line in open(sys.argv[1]):
    side, _, obj = line.partition(" ")
    runs[side].append(json.loads(obj)["ns_per_op"])
o, n = statistics.median(runs["old"]), statistics.median(runs["new"])
print("old %.1f [%.1f..%.1f]  new %.1f [%.1f..%.1f]  new/old %.3f (N=%d)" %
      (o, min(runs["old"]), max(runs["old"]), n, min(runs["new"]),
       max(runs["new"]), n / o, len(runs["old"])))
PY
