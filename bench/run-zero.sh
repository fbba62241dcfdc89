#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-zero.sh OLD_USWAP NEW_USWAP [ROUNDS] - zero folios under `uswap run`:
# python3 reads a 256 MiB bytearray (calloc: every page the zero page)
# and sets one byte per page of a 64 MiB one, under a 32 MiB limit, with
# each of two uswap builds in turn (alternating, ROUNDS each, default 5).
# Prints per run: wall seconds, evictions, evict_zero, folios swapped out
# and in; then the median wall time of each build.
set -eu
old=$1
new=$2
rounds=${3:-5}
py=$(command -v python3)
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-zero.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
cat > "$dir/zero.py" <<'PY'
b = bytearray(256 << 20)
assert b.count(0) == len(b)
c = bytearray(64 << 20)
c[::4096] = b'\x01' * (len(c) // 4096)
assert sum(c[::4096]) == len(c) // 4096
PY
for r in $(seq "$rounds"); do
	for which in old new; do
		eval u=\$$which
		t0=$(date +%s.%N)
		"$u" run --limit 32M --json "$dir/$which.json" -- "$py" "$dir/zero.py"
		t1=$(date +%s.%N)
		"$py" - "$dir/$which.json" "$which" "$t0" "$t1" >> "$dir/rows" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(sys.argv[2], round(float(sys.argv[4]) - float(sys.argv[3]), 2), j["evictions"],
      j.get("evict_zero", 0), sum(j["swpout"]), j["swpin"])
PY
		tail -n 1 "$dir/rows"
	done
done
"$py" - "$dir/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for which in ("old", "new"):
    t = [float(r[1]) for r in rows if r[0] == which]
    print(f"{which}: median {statistics.median(t):.2f} s [{min(t):.2f}..{max(t):.2f}]")
PY
