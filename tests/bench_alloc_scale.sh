#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: `uswap bench alloc --threads LIST` (issue 25, item 3): one
# run per thread count, the scaling table and its JSON ("threads", and
# each run's full report under "runs", with speedup and the contended
# locks per 1k), --baseline with a report of this command (one run, a
# scaling, and the 16-core anchor of bench/anchors/, whose figures show
# in the table), --svg through gnuplot (a note without it), and bad
# input: exit 2 with the reason. No timing is asserted: the figures are
# whatever this machine gives.
#
# Usage: bench_alloc_scale.sh USWAP SOURCE_ROOT
# shellcheck disable=SC2086 # $run: the command and its options, split
set -u
uswap=$1
src=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-scale.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/check_lib.sh"
run="$uswap bench alloc --duration 0.2 --device-size 64M"

# The JSON of two thread counts, in the order given.
$run --threads 2,1 --json > "$dir/scale.json" 2> "$dir/scale.err" ||
	fail "--threads 2,1 --json: $(cat "$dir/scale.err")"
[ ! -s "$dir/scale.err" ] || fail "--json wrote on stderr, not a terminal: $(cat "$dir/scale.err")"
python3 - "$dir/scale.json" << 'PY' || fail "scaling JSON: $(head -c 400 "$dir/scale.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["threads"] == [2, 1], j["threads"]
runs = j["runs"]
assert [r["threads"] for r in runs] == [2, 1]
assert runs[0]["speedup"] == 1
for r in runs:
    assert r["ops_per_sec"] > 0 and r["frees"] > 0, r
    assert r["shared_contended_per_1k"] >= 0 and r["cluster_contended_per_1k"] >= 0
    assert "vs_baseline" not in r
    assert all(d["inuse"] >= 0 for d in r["devices_info"])
assert abs(runs[1]["speedup"] - runs[1]["ops_per_sec"] / runs[0]["ops_per_sec"]) < 1e-9
PY

# One run's report as the baseline of the same workload: no note, a ratio.
$run --threads 1 --json > "$dir/one.json" || fail "--threads 1 --json"
$run --threads 1,2 --baseline "$dir/one.json" > "$dir/vs.txt" 2> "$dir/vs.err" ||
	fail "--baseline one run: $(cat "$dir/vs.err")"
grep -q "2 of 2: 2 threads" "$dir/vs.err" || fail "no progress line: $(cat "$dir/vs.err")"
if grep -v " of 2: " "$dir/vs.err" | grep -q .; then
	fail "a note for the same workload: $(cat "$dir/vs.err")"
fi
grep -q "^THREADS .*VS BASE" "$dir/vs.txt" || fail "no baseline columns: $(cat "$dir/vs.txt")"
awk '$1 == 1 { if ($NF !~ /^[0-9.]+x$/) exit 1; found = 1 }
     $1 == 2 { if ($NF != "-") exit 1 } END { exit !found }' "$dir/vs.txt" ||
	fail "1 thread compared, 2 not: $(cat "$dir/vs.txt")"

# The 16-core anchor: its figures (8.16 and 15.85 M pairs/s at 1 and 2
# threads, 4 devices, window 8192) in the table; the other workload said.
$run --threads 1,2 --baseline "$src/bench/anchors/alloc-16cores-d4.json" \
	> "$dir/anchor.txt" 2> "$dir/anchor.err" || fail "--baseline anchor: $(cat "$dir/anchor.err")"
awk '$1 == 1 && $8 == "8.16" { a = 1 } $1 == 2 && $8 == "15.85" { b = 1 } END { exit !(a && b) }' \
	"$dir/anchor.txt" || fail "the anchor's figures: $(cat "$dir/anchor.txt")"
grep -q "window 8192, this run 1024" "$dir/anchor.err" ||
	fail "no note of the other window: $(cat "$dir/anchor.err")"
$run --threads 1 --devices 1 --baseline "$src/bench/anchors/alloc-16cores-d1.json" \
	--json > /dev/null 2> "$dir/d1.err" || fail "the 1-device anchor: $(cat "$dir/d1.err")"

# --svg
if command -v gnuplot > /dev/null; then
	$run --threads 1,2 --svg "$dir/s.svg" --baseline "$dir/one.json" > /dev/null 2>&1 ||
		fail "--svg"
	grep -q "<svg" "$dir/s.svg" || fail "--svg drew no SVG"
else
	echo "# no gnuplot: --svg not drawn"
	$run --threads 1 --svg "$dir/s.svg" 2>&1 | grep -q "gnuplot not found" ||
		fail "--svg without gnuplot says nothing"
fi

# Bad input: exit 2, the reason named (bad, check_lib.sh).
echo '[1, 2]' > "$dir/list.json"
echo 'not json {' > "$dir/garbage.json"
bad "invalid --threads value '0,2'" $run --threads 0,2
bad "invalid --threads value '1,,2'" $run --threads 1,,2
bad "SVG only" $run --threads 1,2 --svg "$dir/plot.png"
bad "none.json: No such file or directory" $run --baseline "$dir/none.json"
bad "not a report of uswap bench alloc" $run --baseline "$dir/list.json"
bad "garbage.json: " $run --baseline "$dir/garbage.json"
echo '{"threads": 1, "ops_per_sec": 5e6, "pattern": null}' > "$dir/null.json"
echo '{"threads": 1, "ops_per_sec": -5e6}' > "$dir/neg.json"
echo '{"threads": 4294967297, "ops_per_sec": 5e6}' > "$dir/wrap.json"
echo '{"runs": []}' > "$dir/empty-runs.json"
: > "$dir/empty.json"
bad "not a report of uswap bench alloc" $run --baseline "$dir/null.json"
bad "pairs per second above 0" $run --baseline "$dir/neg.json"
bad "a whole number of threads" $run --baseline "$dir/wrap.json"
bad '"runs" is empty' $run --baseline "$dir/empty-runs.json"
bad "empty.json: empty" $run --baseline "$dir/empty.json"
bad "not a regular file" $run --baseline /dev/zero
mkdir "$dir/d.svg"
bad "Is a directory" $run --threads 1,2 --svg "$dir/d.svg"
[ ! -e "$dir/plot.png" ] || fail "a .png was written"
if [ -w /dev/full ]; then
	$run --threads 1,2 > /dev/full 2> "$dir/full.err"
	rc=$?
	if [ $rc != 1 ] || ! grep -q "standard output" "$dir/full.err"; then
		fail "a table written to /dev/full: exit $rc, $(cat "$dir/full.err")"
	fi
fi
echo "bench alloc scaling: ok"
