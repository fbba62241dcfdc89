#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-modes.sh [USWAP] -- CMD [ARG]... - one command under `uswap run`'s
# two modes, alternating: the default (uswap run is the tree's swap
# subsystem) and --in-process (a swap system inside each process). ROUNDS
# runs of each (default 3), under LIMIT (default 32M) at ORDER (default 0),
# the default devices. Prints per run: the mode, wall seconds, the tree's
# anonymous RSS peak (MiB; the in-process zram pools count there), folios
# swapped out and in; then each mode's median wall time and
# in-process / default (above 1: the default is faster). A run that fails
# stops the benchmark with its output.
set -eu
u=build/tools/uswap
if [ "${1:-}" != "--" ] && [ $# -gt 0 ]; then
	u=$1
	shift
fi
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: run-modes.sh [USWAP] -- CMD [ARG]..." >&2; exit 2; }
rounds=${ROUNDS:-3}
py=/usr/bin/python3
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-modes.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
for r in $(seq "$rounds"); do
	for mode in default in-process; do
		opt=
		[ $mode = in-process ] && opt=--in-process
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086 # $opt: the option or nothing
		"$u" run $opt --limit "${LIMIT:-32M}" --order "${ORDER:-0}" \
			--json "$dir/$mode.json" -- "$@" > "$dir/out" 2>&1 ||
			{ cat "$dir/out"; echo "run-modes: $mode: exit status $?" >&2; exit 1; }
		t1=$(date +%s.%N)
		"$py" - "$dir/$mode.json" "$mode" "$t0" "$t1" >> "$dir/rows" << 'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(sys.argv[2], "%.3f" % (float(sys.argv[4]) - float(sys.argv[3])),
      j["tree"]["anon_rss_peak_bytes"] >> 20, sum(j["swpout"]), j["swpin"])
PY
		tail -n 1 "$dir/rows"
	done
done
"$py" - "$dir/rows" << 'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {m: statistics.median(float(r[1]) for r in rows if r[0] == m)
       for m in ("default", "in-process")}
print("median: default %.3f s, in-process %.3f s; in-process / default %.2f"
      % (med["default"], med["in-process"], med["in-process"] / med["default"]))
PY
