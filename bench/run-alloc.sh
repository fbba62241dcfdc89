#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-alloc.sh - the `uswap bench alloc` configurations that
# docs/benchmarks.md reports. Each configuration runs REPEAT times (default
# 5) with --json; the script prints the command, then the median and the
# range of the figures that matter. The machines are shared and noisy:
# compare medians measured in one run of this script, never single runs.
#
# Usage: bench/run-alloc.sh [USWAP_BINARY [EXTRA_OPTIONS...]]
#   USWAP_BINARY   path of the uswap binary (default build/tools/uswap)
#   EXTRA_OPTIONS  added to every run, e.g. --duration 5
#   REPEAT=N       runs per configuration (environment, default 5)
#
# Needs python3 for the medians. Exit status: 0 if every run succeeded.
set -u

USWAP=${1:-build/tools/uswap}
[ $# -gt 0 ] && shift
REPEAT=${REPEAT:-5}

if [ ! -x "$USWAP" ]; then
	echo "run-alloc.sh: '$USWAP' is not an executable; build first (make build) or pass its path" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "run-alloc.sh: needs python3" >&2; exit 2; }

status=0
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT

# summarise: median [min..max] of ns_per_op, shared locks/1k, balance, and
# fallback % of every order used, over the JSON objects in $tmp.
summarise() {
	python3 - "$tmp" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def fmt(key, nd=1):
    v = [r[key] for r in runs if r.get(key) is not None]
    if not v:
        return f"{key} n/a"
    return f"{key} {statistics.median(v):.{nd}f} [{min(v):.{nd}f}..{max(v):.{nd}f}]"
print("  " + fmt("ns_per_op"), "|", fmt("ops_per_sec", 0))
print("  " + fmt("shared_lock_acq_per_1k", 3), "|", fmt("balance_max_min", 4),
      "|", fmt("metadata_bytes_per_slot", 3))
print("  " + fmt("metadata_static_bytes_per_slot", 4), "|",
      fmt("metadata_peak_bytes_per_slot", 4))
fb = {}
for r in runs:
    for o, p in r["fallback_pct"].items():
        fb.setdefault(o, []).append(p)
print("  fallback_pct " + ", ".join(f"order {o}: {statistics.median(v):.2f}"
                                     for o, v in sorted(fb.items(), key=lambda x: int(x[0]))))
PY
}

run() {
	echo "\$ $* --json   (x$REPEAT)"
	: >"$tmp"
	i=0
	while [ $i -lt "$REPEAT" ]; do
		# Compact each pretty-printed object onto one line for the summary.
		if ! "$@" --json 2>/dev/null | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >>"$tmp"; then
			status=1
		fi
		i=$((i + 1))
	done
	summarise
	echo
}

B="$USWAP bench alloc"

echo "## Fast path: 1 thread, order 0, fifo with 1024 live slots (stays in each device's cluster)"
run $B --threads 1 --pattern fifo --window 1024 "$@"
echo "## 1 thread, pair pattern (every free empties the cluster: two list moves per pair)"
run $B --threads 1 --pattern pair "$@"

echo "## Steady state, order 0, fifo with 65536 live slots per thread (clusters cycle)"
run $B --threads 1 --pattern fifo --window 65536 "$@"
run $B --threads 2 --pattern fifo --window 65536 "$@"
run $B --threads 2 --pattern fifo --window 65536 --pin-cpu "$@"
run $B --threads 2 --pattern fifo --window 65536 --pin-cpu --devices 1 "$@"
echo "## Random frees (worst case: every free may reopen a full cluster)"
run $B --threads 2 --pattern random --window 65536 "$@"

echo "## Order mix 0:80,4:15,9:5, 2 threads"
run $B --threads 2 --pattern fifo --window 4096 --orders 0:80,4:15,9:5 "$@"

echo "## Ring quota sweep, 2 threads, 4 devices, fifo 65536 (default 64)"
for quota in 1 8 64 512 4096; do
	run $B --threads 2 --pattern fifo --window 65536 --quota "$quota" "$@"
done

exit $status
