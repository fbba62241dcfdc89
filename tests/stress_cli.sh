#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: `uswap stress` end to end. A short run on every part of
# the stack must exit 0 with nothing lost; then the oracle is checked by
# mutation: a byte flipped in a swap file behind uswap's back
# must be reported as wrong data at exactly the slot that was flipped,
# and one skipped free must be reported as a leak; --processes runs a
# tree of processes on one swap subsystem. SIGTERM in the middle
# ends the run cleanly, checked and reported. A malformed option is a
# usage error (2).
#
# Usage: stress_cli.sh USWAP [SECONDS]
set -u

uswap=$1
seconds=${2:-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-stress-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# 1. A clean run.
"$uswap" stress --duration "$seconds" --seed 11 --quiet --dir "$dir" --json \
	> "$dir/ok.json" 2> "$dir/ok.err" || { cat "$dir/ok.err" "$dir/ok.json"; fail "clean run failed"; }
grep -q '"ok": true' "$dir/ok.json" || fail "clean run not ok: $(cat "$dir/ok.json")"
grep -q '"swapoff": 0,' "$dir/ok.json" && fail "no device was swapped off under load"
ls "$dir" | grep -q '\.swap$' && fail "swap files left behind: $(ls "$dir")"

# 1b. --processes: a tree of 4 processes under uswap run --daemon beside
#     the rest, forked, exec'd and killed children checking their pages,
#     no slot left. Where uswap run cannot run (no agent in a sanitizer
#     build, no userfaultfd), the report says why instead.
"$uswap" stress --duration "$seconds" --seed 16 --quiet --dir "$dir" --json --processes 4 \
	> "$dir/tree.json" 2> "$dir/tree.err" || { cat "$dir/tree.err" "$dir/tree.json"; fail "--processes run failed"; }
grep -q '"ok": true' "$dir/tree.json" || fail "--processes run not ok: $(cat "$dir/tree.json")"
tree=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["processes"]
print("ran %d" % t["processes"] if t["ran"] else "not %s" % t.get("not_run", ""))' "$dir/tree.json") ||
	fail "--processes: no report: $(cat "$dir/tree.json")"
case $tree in
"ran "[2-9]* | "ran "[1-9][0-9]*) ;;
"not "?*) echo "# --processes not run here: ${tree#not }" ;;
*) fail "--processes: no child ran, or no reason: $tree" ;;
esac
ls "$dir" | grep -q 'uswap-stress-tree' && fail "--processes left its directory: $(ls "$dir")"
"$uswap" stress --processes 1 > /dev/null 2>&1
[ $? = 2 ] || fail "--processes 1 is not a usage error"

# 2. A flipped byte is reported at exactly its slot.
"$uswap" stress --duration "$seconds" --seed 12 --quiet --dir "$dir" --mutate flip-byte \
	> "$dir/flip.out" 2> "$dir/flip.err"
rc=$?
[ "$rc" = 1 ] || { cat "$dir/flip.err" "$dir/flip.out"; fail "flip-byte exit $rc, want 1"; }
slot=$(sed -n 's/.*flipped a byte of slot \([0-9]*:[0-9]*\) .*/\1/p' "$dir/flip.err")
[ -n "$slot" ] || fail "the mutation never found a swapped page in a file: $(cat "$dir/flip.err")"
grep -q "wrong data: slot $slot " "$dir/flip.out" || fail "slot $slot not reported: $(cat "$dir/flip.out")"
[ "$(grep -c 'wrong data' "$dir/flip.out")" = 1 ] || fail "more than the flipped page reported"
grep -q "replay with --seed 12" "$dir/flip.err" || fail "no seed to replay in: $(cat "$dir/flip.err")"

# 3. A skipped free is a leak.
"$uswap" stress --duration "$seconds" --seed 13 --quiet --dir "$dir" --mutate skip-free \
	--churn 0 > "$dir/leak.out" 2> "$dir/leak.err"
rc=$?
[ "$rc" = 1 ] || { cat "$dir/leak.err" "$dir/leak.out"; fail "skip-free exit $rc, want 1"; }
grep -q "leak: slots\{0,1\} " "$dir/leak.out" || fail "no leak reported: $(cat "$dir/leak.out")"
grep -q "still has [0-9]* slot(s) in use at the end" "$dir/leak.out" ||
	fail "end check missed the leak: $(cat "$dir/leak.out")"

# 4. SIGTERM in the middle: the run stops, drains, checks and reports,
#    and leaves no swap file behind.
"$uswap" stress --duration 600 --seed 14 --quiet --dir "$dir" > "$dir/term.out" 2> "$dir/term.err" &
pid=$!
sleep "$seconds"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 0 ] || { cat "$dir/term.err" "$dir/term.out"; fail "SIGTERM run exit $rc, want 0"; }
grep -q "stopped by signal 15; all checks ran" "$dir/term.err" || fail "no stop message: $(cat "$dir/term.err")"
grep -q "violations 0 wrong, 0 lost, 0 double allocations, 0 leaks, 0 other" "$dir/term.out" ||
	fail "SIGTERM run report: $(cat "$dir/term.out")"
ls "$dir" | grep -q '\.swap$' && fail "swap files left after SIGTERM: $(ls "$dir")"

# 4b. --plot: an SVG of the run (or the note without gnuplot).
"$uswap" stress --duration 2 --seed 15 --quiet --dir "$dir" --plot "$dir/st.svg" \
	> "$dir/plot.out" 2> "$dir/plot.err" || fail "--plot run: $(cat "$dir/plot.err")"
if command -v gnuplot > /dev/null; then
	for want in '<svg' 'resident memory' 'device use' 'swap-zram-zstd' 'swap-outs (folios)'; do
		grep -q "$want" "$dir/st.svg" || fail "--plot: no '$want' in the SVG"
	done
else
	grep -q "gnuplot not found" "$dir/plot.err" || fail "--plot without gnuplot: no note"
fi
"$uswap" stress --duration 1 --plot /nonexistent/dir/st.svg > /dev/null 2>&1
[ $? = 2 ] || fail "--plot into a missing directory is not a usage error"
rm -f "$dir/st.svg"

# 5. Usage errors.
"$uswap" stress --read-errors 2 > /dev/null 2>&1
[ $? = 2 ] || fail "--read-errors 2 is not a usage error"
"$uswap" stress --mutate nonsense > /dev/null 2>&1
[ $? = 2 ] || fail "--mutate nonsense is not a usage error"
echo "ok: clean run, flip-byte at $slot, skip-free leak, SIGTERM, --plot, usage errors"
