#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: `uswap lab sweep NAME` (issue 25, item 2) on a small grid
# (2 vCPU counts x 2 scales x 2 seeds): the JSON's shape; each cell's
# deltas are those of `uswap lab run` with the same vCPUs, scale and seed
# (the sweep passes each one on); the median and the verdict follow from
# the seeds' agreement; the table; the heat map (gnuplot, a note without
# it); bad input: exit 2 with the reason. And the cost profiles (item
# 1): `lab costs --profile 16-cores` has the 16-core machine's lock, line
# and hand-over; --cost applies over --cost-profile in either order.
#
# Usage: lab_sweep.sh USWAP
# shellcheck disable=SC2086 # $grid: options, split
set -u
uswap=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-sweep.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/check_lib.sh"
exp=improve-cluster-scan-strategy
grid="--vcpus 4,8 --scale 0.05,0.1 --seeds 1,2"

"$uswap" lab sweep $exp $grid --json > "$dir/sweep.json" 2> "$dir/sweep.err" ||
	fail "sweep --json: $(cat "$dir/sweep.err")"
grep -q "^uswap lab sweep: 8 of 8: 8 vCPUs, scale 0.1, seed 2" "$dir/sweep.err" ||
	fail "no progress line per run: $(cat "$dir/sweep.err")"
"$uswap" lab run $exp --vcpus 8 --scale 0.1 --seed 2 --json > "$dir/run.json" ||
	fail "lab run"
"$uswap" lab run $exp --vcpus 4 --scale 0.05 --seed 1 --json > "$dir/run0.json" ||
	fail "lab run"
python3 - "$dir/sweep.json" "$dir/run.json" "$dir/run0.json" << 'PY' || fail "sweep JSON"
import json, sys
s = json.load(open(sys.argv[1]))
runs = {(8, 0.1, 1): json.load(open(sys.argv[2])), (4, 0.05, 0): json.load(open(sys.argv[3]))}
assert s["experiment"] == "improve-cluster-scan-strategy"
assert s["vcpus"] == [4, 8] and s["scale"] == [0.05, 0.1] and s["seeds"] == [1, 2]
assert s["metrics"], "no metric judged"
names = set()
for m in s["metrics"]:
    names.add(m["metric"])
    assert m["arm"] == "after" and m["claim"] in ("up", "down", "same", "<=")
    cells = m["cells"]
    assert len(cells) == 4
    assert [(c["vcpus"], c["scale"]) for c in cells] == [(4, 0.05), (8, 0.05), (4, 0.1), (8, 0.1)]
    n = {"holds": 0, "flips": 0, "mixed": 0}
    for c in cells:
        d = c["delta_pct"]
        assert len(d) == 2
        mid = (d[0] + d[1]) / 2  # the JSON's doubles are rounded
        assert abs(c["median_delta_pct"] - mid) <= 1e-6 * max(1, abs(mid)), c
        want = "holds" if c["agree"] == 2 else "flips" if c["agree"] == 0 else "mixed"
        assert c["verdict"] == want, c
        n[want] += 1
        for (v, sc, k), r in runs.items():
            if (c["vcpus"], c["scale"]) == (v, sc):
                got, ref = d[k], r["arms"][1]["delta_pct"][m["metric"]]
                assert abs(got - ref) <= 1e-6 * max(1, abs(ref)), (m["metric"], got, ref)
    assert (m["holds"], m["flips"], m["mixed"], m["none"]) == (n["holds"], n["flips"], n["mixed"], 0)
assert "list_scan_steps_per_1k_allocs" in names
assert s["workload"] == "default" and s["cost"].startswith("lock=6,line=36,"), s["cost"]
PY

# The table: one grid per judged metric.
"$uswap" lab sweep $exp $grid > "$dir/sweep.txt" 2> /dev/null || fail "sweep table"
grep -q "^after vs before: list scan steps / 1k allocs (seed: down)" "$dir/sweep.txt" ||
	fail "no grid of list scan steps: $(cat "$dir/sweep.txt")"
[ "$(grep -c "^holds in .* of 4 cells" "$dir/sweep.txt")" = \
	"$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["metrics"]))' \
		"$dir/sweep.json")" ] || fail "not one summary per metric: $(cat "$dir/sweep.txt")"

if command -v gnuplot > /dev/null; then
	"$uswap" lab sweep $exp $grid --svg "$dir/heat.svg" > /dev/null 2>&1 || fail "--svg"
	grep -q "list scan steps" "$dir/heat.svg" || fail "the heat map names no metric"
else
	echo "# no gnuplot: no heat map drawn"
fi

# A workload that leaves a metric without a figure: "-", not a flip.
"$uswap" lab sweep default-priority-round-robin --vcpus 8 --scale 0.05 --seeds 1 \
	--workload size=1 > "$dir/none.txt" 2> /dev/null || fail "sweep with size=1"
grep -q "nothing to judge in 1" "$dir/none.txt" || fail "a cell without a figure: $(cat "$dir/none.txt")"

# Cost profiles.
"$uswap" lab costs --profile 16-cores --json > "$dir/c16.json" || fail "lab costs --profile"
python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
assert (c["lock"], c["line"], c["handover_lines"], c["page_out"]) == (10.9, 70.5, 4.3, 7500), c
' "$dir/c16.json" || fail "the 16-core profile: $(cat "$dir/c16.json")"
for order in "--cost page_out=0 --cost-profile 16-cores" "--cost-profile 16-cores --cost page_out=0"; do
	"$uswap" lab run $exp --vcpus 4 --scale 0.05 $order --json 2> /dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["cost"])'
done > "$dir/costs.txt" || fail "lab run --cost-profile"
if [ "$(sort -u "$dir/costs.txt" | wc -l)" != 1 ] ||
	! grep -q "^lock=10.9,line=70.5,.*page_out=0," "$dir/costs.txt"; then
	fail "--cost over --cost-profile depends on the order: $(cat "$dir/costs.txt")"
fi

bad "missing experiment name" "$uswap" lab sweep
bad "unknown experiment 'nope'" "$uswap" lab sweep nope
bad "^uswap lab sweep: --vcpus: expected" "$uswap" lab sweep $exp --vcpus 0,8
bad "^uswap lab sweep: --vcpus: expected" "$uswap" lab sweep $exp --vcpus 4.5
bad "^uswap lab sweep: --scale: expected" "$uswap" lab sweep $exp --scale 0
bad "^uswap lab sweep: --scale: expected" "$uswap" lab sweep $exp --scale 1,,2
bad "^uswap lab sweep: --seeds: expected" "$uswap" lab sweep $exp --seeds x
bad "SVG only" "$uswap" lab sweep $exp --svg "$dir/h.png"
bad "bad item" "$uswap" lab sweep $exp --cost nope=1
bad "unknown profile 'x'" "$uswap" lab sweep $exp --cost-profile x
bad "unknown profile 'x'" "$uswap" lab run $exp --cost-profile x
bad "unknown profile 'x'" "$uswap" lab costs --profile x
bad "needs a value" "$uswap" lab costs --profile
bad "seeds: 1 given twice" "$uswap" lab sweep $exp --seeds 1,2,1
mkdir "$dir/d.svg"
bad "Is a directory" "$uswap" lab sweep $exp $grid --svg "$dir/d.svg"
bad "mean nothing with --wall-clock" "$uswap" lab run $exp --wall-clock --cost-profile 16-cores
bad "the workload's parameters do not fit" "$uswap" lab sweep $exp --vcpus 4 --scale 0.05 \
	--seeds 1 --workload job_min=5,job_max=2
echo "lab sweep: ok"
