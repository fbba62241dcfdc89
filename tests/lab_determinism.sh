#!/bin/sh
# SPDX-License-Identifier: MIT
# lab_determinism.sh USWAP - the lab's virtual time gives the same JSON
# for a seed with --threads 1 and --threads 2, two runs each: identical
# but for "threads" and the wall-clock "wall_s" fields (docs/lab.md).
set -u
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
status=0

for exp in per-priority-allocation-queues rework-swap-allocator-locks; do
	for run in 1a 1b 2a 2b; do
		threads=${run%?}
		if ! "$uswap" lab run "$exp" --json --scale 0.05 --vcpus 48 --seed 5 \
			--threads "$threads" > "$dir/$run.json" 2> "$dir/$run.err"; then
			echo "FAIL: $exp --threads $threads: $(head -n 3 "$dir/$run.err")"
			exit 1
		fi
		grep -v -e '"threads":' -e '"wall_s":' "$dir/$run.json" > "$dir/$run.cmp"
	done
	for run in 1b 2a 2b; do
		if ! cmp -s "$dir/1a.cmp" "$dir/$run.cmp"; then
			echo "FAIL: $exp: run $run differs from the first run:"
			diff "$dir/1a.cmp" "$dir/$run.cmp" | head -n 20
			status=1
		fi
	done
	# The comparison means something only if the runs did work.
	if ! grep -q '"contended": [1-9]' "$dir/1a.json"; then
		echo "FAIL: $exp: no contended lock in the run: nothing was compared"
		status=1
	fi
	[ $status = 0 ] && echo "ok: $exp: 4 runs, 1 and 2 threads, identical"
done
exit $status
