#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-methods.sh - stress-ng's vm stressor one method at a time, the
# kernel's swap against `uswap run`, through bench/compare-kernel.sh's
# command mode (the same zram devices, a memory cgroup of the same limit,
# both sides' output compared): a line per method with each side's wall
# time (the median of RUNS) and their ratio, kernel time / uswap time
# (above 1: uswap faster), beside the time of the same command with no
# limit and no swap at all ("alone": the work itself) and uswap's time
# over it. A kernel side in which the memory cgroup OOM-killed stress-ng's
# worker (stress-ng restarts it and ends early, exit 0) is "failed", as
# compare-kernel.sh counts it. Issue 24's "every vm method on its own".
#
#   bench/vm-methods.sh [USWAP_BINARY] [METHOD...]
#
# Default: every method `stress-ng --vm-method which` names but "all".
# Environment: LIMIT (32M), ORDER (0), BYTES (128M, the worker's buffer),
# OPS (--vm-ops, 2000), RUNS (1 a side), RUN_OPTS (e.g. --daemon), CAP
# (seconds a run may take, 600: a kernel side past it counts as failed,
# as compare-kernel.sh counts an OOM kill; a uswap side past it fails the
# method's line), and
# compare-kernel.sh's own (DEVICES, KPRIO). Needs root, zram and a memory
# cgroup, as compare-kernel.sh does: without them it prints "skipped".
# Everything compare-kernel.sh sets up it tears down itself.
set -u
USWAP=${1:-build/tools/uswap}
shift $(($# > 0 ? 1 : 0))
here=$(dirname "$0")
export LIMIT=${LIMIT:-32M} ORDER=${ORDER:-0} RUNS=${RUNS:-1} RUN_OPTS=${RUN_OPTS:-}
BYTES=${BYTES:-128M}
OPS=${OPS:-2000}
CAP=${CAP:-600}
command -v stress-ng > /dev/null || { echo "vm-methods: no stress-ng (Debian: stress-ng)"; echo skipped; exit 0; }
if [ $# -gt 0 ]; then
	methods=("$@")
else
	read -r -a methods <<< "$(stress-ng --vm-method which 2>&1 | sed 's/.*: //; s/\ball\b//')"
fi
log=$(mktemp "${TMPDIR:-/tmp}/vm-methods.XXXXXX")
trap 'rm -f "$log"' EXIT
echo "stress-ng --vm 1 --vm-bytes $BYTES --verify --vm-ops $OPS --vm-method M; limit $LIMIT," \
     "order $ORDER, $RUNS run(s) a side, at most $CAP s each $RUN_OPTS"
printf "%-16s %10s %10s %8s %10s %8s\n" method "kernel s" "uswap s" "k/u" "alone s" "u/alone"
now() { date +%s.%N; }
for m in "${methods[@]}"; do
	t0=$(now)
	timeout "$CAP" stress-ng --vm 1 --vm-bytes "$BYTES" --verify --vm-ops "$OPS" --vm-method "$m" \
		> /dev/null 2>&1 && alone=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }') ||
		alone=failed
	"$here/compare-kernel.sh" "$USWAP" -- timeout "$CAP" stress-ng --vm 1 --vm-bytes "$BYTES" \
		--verify --vm-ops "$OPS" --vm-method "$m" > "$log" 2>&1
	rc=$?
	if grep -q "^skipped" "$log"; then
		grep "^compare-kernel:" "$log"
		echo skipped
		exit 0
	fi
	line=$(awk '$1 == "med" { print $2, $3, $4 }' "$log")
	grep -q "no kernel run completed" "$log" && line="failed $(awk '$1 == "1" { print $3 }' "$log") -"
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		printf "%-16s %s\n" "$m" "failed: $(grep -m1 "^compare-kernel:" "$log")"
		continue
	fi
	# shellcheck disable=SC2086 # three fields
	set -- $line
	printf "%-16s %10s %10s %8s %10s %8s\n" "$m" "$1" "$2" "$3" "$alone" \
		"$(awk -v u="$2" -v a="$alone" 'BEGIN { if (a + 0 > 0) printf "%.1f", u / a; else print "-" }')"
done
