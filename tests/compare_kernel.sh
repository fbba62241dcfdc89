#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: bench/compare-kernel.sh in its command mode counts a
# kernel run in which the memory cgroup OOM-killed a process of the
# command as failed, even when the command exits 0 (as stress-ng does
# when it restarts a killed worker and ends early): such a run's time is
# not a result and gives no ratio. A command whose kernel run completes
# still gets its ratio. Forcing the OOM kill: the command's child locks
# (mlockall) four times the cgroup's limit on the kernel side only;
# under `uswap run` (USWAP_RUN_LIMIT set) it does nothing. Both sides
# print the same line. No timing is asserted.
#
# Needs root, zram and a memory cgroup (what compare-kernel.sh needs)
# and a working `uswap run` (not a sanitizer build); skips with the
# reason otherwise. Everything it makes is torn down by
# compare-kernel.sh's own trap; this test checks that too.
#
# Usage: compare_kernel.sh USWAP SOURCE_ROOT
set -u
uswap=$1
src=$2
command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-compare.XXXXXX") || exit 1
out=$dir/out
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/run_lib.sh"
# uswap run itself must work here (no agent under a sanitizer, no
# userfaultfd permission): else skip, as the run_*.sh tests do.
run_probe "$uswap" "$dir"
swaps_before=$(cat /proc/swaps 2>/dev/null)

compare() {
	RUNS=1 DEVICES=1 CMD_DEVSIZE=64M LIMIT=16M \
		bash "$src/bench/compare-kernel.sh" "$uswap" -- "$@" > "$out" 2>&1 ||
		fail "compare-kernel.sh exited $?: $(tail -n 20 "$out")"
	if grep -q '^skipped$' "$out"; then
		echo "SKIP: $(grep '^compare-kernel:' "$out" | head -n 1)"
		exit 77
	fi
}

# The kernel side's child is OOM-killed; the command goes on and exits 0.
compare sh -c '[ -n "${USWAP_RUN_LIMIT:-}" ] || python3 -c "
import ctypes
ctypes.CDLL(None, use_errno=True).mlockall(3)   # MCL_CURRENT | MCL_FUTURE
b = bytearray(64 << 20)
"; echo finished'
grep -q 'OOM-killed a process of the command' "$out" ||
	fail "the kernel run's OOM kill was not seen: $(tail -n 12 "$out")"
grep -q 'kernel side failed 1 of 1 runs' "$out" || fail "the run was counted: $(tail -n 12 "$out")"
grep -q 'no kernel run completed: no ratio' "$out" || fail "a ratio was given: $(tail -n 12 "$out")"

# A command the kernel runs to the end: a ratio.
compare python3 -c 'b = bytearray(32 << 20); b[::4096] = b"x" * (len(b) // 4096); print(b.count(b"x"))'
grep -q 'kernel side failed 0 of 1 runs' "$out" || fail "the complete kernel run failed: $(tail -n 12 "$out")"
grep -q '^med ' "$out" || fail "no ratio for a complete run: $(tail -n 12 "$out")"

[ "$(cat /proc/swaps)" = "$swaps_before" ] || fail "/proc/swaps differs after the runs"
! ls -d /sys/fs/cgroup/memory/uswap-compare-* /sys/fs/cgroup/uswap-compare-* > /dev/null 2>&1 ||
	fail "a cgroup of compare-kernel.sh was left behind"
echo "ok: an OOM-killed kernel run is no result; a complete one gets its ratio"
