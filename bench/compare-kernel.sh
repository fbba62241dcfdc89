#!/bin/bash
# SPDX-License-Identifier: MIT
#
# compare-kernel.sh - the same usemem workload on the kernel's own swap and
# on uswap's pager, alternating runs, side by side with their ratio.
#
#   bench/compare-kernel.sh [USWAP_BINARY]        (default build/tools/uswap)
#   bench/compare-kernel.sh USWAP_BINARY -- CMD [ARG]...
#
# With a command after "--", it is that unmodified command instead of
# usemem: inside the memory cgroup on the kernel side, under `uswap run
# --limit LIMIT --order ORDER` with the same zram devices on the uswap
# side; each run's wall time, their ratio, and a check that both sides
# wrote the same bytes on stdout (CMD_DEVSIZE per device, default 512M).
# CMD's stderr shows on both sides (the kernel side's last 3 lines after
# each run, and the pages the system swapped in and out during it). A kernel run in which the memory cgroup OOM-killed any
# process of CMD counts as failed even when CMD exits 0 (stress-ng
# restarts a killed worker and ends early with fewer bogo ops): only
# complete runs give the ratio.
#
# Kernel side: DEVICES zram devices made for the run (hot_add, lz4, the
# same size as uswap's), swapped on at one equal priority (the kernel's
# round robin, as uswap's default-priority devices share theirs; set
# KPRIO=default for the kernel's -2, -3, ... which fill one after another),
# a memory cgroup (v2, or v1's memory controller) whose limit is LIMIT,
# and `uswap bench usemem --no-pager` inside it: plain memory, written and
# read back by the same workers with the same checks, swapped by the
# kernel. For ORDER > 0 the kernel's mTHP size of that order is set to
# "madvise" for the run (the tool asks for huge pages with --order).
# uswap side: `uswap bench usemem` with the same devices (zram:SIZE each,
# default priority), the same limit and order.
#
# Everything it sets up is torn down in a trap: it swaps off and removes
# only the zram devices it created, removes its cgroup and restores the
# mTHP setting. Swap devices that existed before are never touched; it
# never swaps onto a disk. /proc/swaps is printed before and after.
#
# Environment: WORKERS (2), SIZE per worker (256M), LIMIT (128M), ORDER (0),
# DEVICES (4), RUNS (3, each side), DATA (/usr/share/common-licenses/GPL-3),
# KPRIO (equal), EXTRA (more options for both sides), RUN_OPTS (more
# options for `uswap run` in the command mode, e.g. --daemon).
#
# PERF=DIR (command mode): the last run of each side also under `perf
# record -a -F 999` (DIR/kernel.data, DIR/uswap.data: those two runs'
# times include perf's cost), with the system's counters around it
# (pswpin, pswpout, pgfault, TLB shootdown IPIs, context switches: printed,
# and in DIR/kernel.counters, DIR/uswap.counters) and uswap run's JSON in
# DIR/uswap.json; bench/perf-buckets.sh reads the profiles.
#
# Needs root; without it (or without zram or a memory cgroup) it says why,
# prints "skipped" and exits 0.
set -u

USWAP=${1:-build/tools/uswap}
CMD=()
if [ "${2:-}" = "--" ]; then
	shift 2
	CMD=("$@")
	[ ${#CMD[@]} -gt 0 ] || { echo "compare-kernel: no command after --" >&2; exit 2; }
fi
WORKERS=${WORKERS:-2}
SIZE=${SIZE:-256M}
LIMIT=${LIMIT:-128M}
ORDER=${ORDER:-0}
DEVICES=${DEVICES:-4}
RUNS=${RUNS:-3}
DATA=${DATA:-/usr/share/common-licenses/GPL-3}
KPRIO=${KPRIO:-equal}
EXTRA=${EXTRA:-}
RUN_OPTS=${RUN_OPTS:-}
PERF=${PERF:-}

skip() {
	echo "compare-kernel: $*"
	echo "skipped"
	exit 0
}

[ "$(id -u)" = 0 ] || skip "needs root (zram devices, swapon, a memory cgroup)"
if [ -n "$PERF" ]; then
	command -v perf > /dev/null || skip "PERF is set and there is no perf (linux-perf)"
	mkdir -p "$PERF" || skip "cannot make $PERF"
fi
[ -x "$USWAP" ] || skip "no uswap binary at $USWAP (build first, or pass its path)"
command -v mkswap >/dev/null && command -v swapon >/dev/null && command -v swapoff >/dev/null ||
	skip "mkswap/swapon/swapoff (util-linux) not found"
[ -r "$DATA" ] || skip "no data file $DATA"
if [ ! -e /sys/class/zram-control/hot_add ]; then
	modprobe zram num_devices=0 2>/dev/null
	[ -e /sys/class/zram-control/hot_add ] || skip "no zram (module zram not available)"
fi

to_bytes() {
	local v=$1 n=${1%[KkMmGgTt]}
	case $v in
	*[Kk]) echo $((n << 10)) ;;
	*[Mm]) echo $((n << 20)) ;;
	*[Gg]) echo $((n << 30)) ;;
	*[Tt]) echo $((n << 40)) ;;
	*) echo "$v" ;;
	esac
}

ws=$(( $(to_bytes "$SIZE") * WORKERS ))
limit_bytes=$(to_bytes "$LIMIT")
# Each device: a DEVICES-th of the working set plus a quarter, in MiB.
each_mb=$(( (ws / DEVICES + ws / DEVICES / 4 + (1 << 20) - 1) >> 20 ))
[ "$each_mb" -ge 4 ] || each_mb=4
[ ${#CMD[@]} -eq 0 ] || each_mb=$(( $(to_bytes "${CMD_DEVSIZE:-512M}") >> 20 ))

# ---------------------------------------------------------------------------
# State to undo
# ---------------------------------------------------------------------------
ZRAMS=()          # zram ids this script added
SWAPPED=()        # /dev/zramN this script swapped on
CGROUP=""         # cgroup directory this script made
MTHP_FILE=""      # mTHP "enabled" file changed, and its old value
MTHP_OLD=""

teardown() {
	local d id
	rm -f "/tmp/compare-kernel.$$".*
	for d in "${SWAPPED[@]}"; do
		swapoff "$d" 2>/dev/null || echo "compare-kernel: swapoff $d failed" >&2
	done
	SWAPPED=()
	for id in "${ZRAMS[@]}"; do
		echo 1 > "/sys/block/zram$id/reset" 2>/dev/null
		echo "$id" > /sys/class/zram-control/hot_remove 2>/dev/null ||
			echo "compare-kernel: could not remove zram$id" >&2
	done
	ZRAMS=()
	if [ -n "$CGROUP" ] && [ -d "$CGROUP" ]; then
		rmdir "$CGROUP" 2>/dev/null || echo "compare-kernel: could not remove $CGROUP" >&2
	fi
	CGROUP=""
	if [ -n "$MTHP_FILE" ]; then
		echo "$MTHP_OLD" > "$MTHP_FILE" 2>/dev/null
		MTHP_FILE=""
	fi
}
trap teardown EXIT
trap 'exit 130' INT TERM

swaps_before=$(cat /proc/swaps)
echo "/proc/swaps before:"
echo "$swaps_before"

# ---------------------------------------------------------------------------
# Kernel side: zram devices, cgroup, mTHP
# ---------------------------------------------------------------------------
prio_args=()
[ "$KPRIO" = equal ] && prio_args=(-p 10)
for ((i = 0; i < DEVICES; i++)); do
	id=$(cat /sys/class/zram-control/hot_add) || skip "zram hot_add failed"
	ZRAMS+=("$id")
	dev=/dev/zram$id
	for _ in 1 2 3 4 5 6 7 8 9 10; do [ -b "$dev" ] && break; sleep 0.1; done
	echo lz4 > "/sys/block/zram$id/comp_algorithm" 2>/dev/null ||
		echo "compare-kernel: zram$id: lz4 not offered, using $(cat /sys/block/zram$id/comp_algorithm)"
	echo "${each_mb}M" > "/sys/block/zram$id/disksize" || skip "zram$id: disksize refused"
	mkswap "$dev" >/dev/null || skip "mkswap $dev failed"
	swapon "${prio_args[@]}" "$dev" || skip "swapon $dev failed"
	SWAPPED+=("$dev")
done

if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	root=/sys/fs/cgroup
	grep -qw memory $root/cgroup.subtree_control || echo +memory > $root/cgroup.subtree_control
	CGROUP=$root/uswap-compare-$$
	mkdir "$CGROUP" || skip "cannot make a cgroup"
	echo "$limit_bytes" > "$CGROUP/memory.max"
	echo max > "$CGROUP/memory.swap.max" 2>/dev/null
	cgver=v2
elif [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	CGROUP=/sys/fs/cgroup/memory/uswap-compare-$$
	mkdir "$CGROUP" || skip "cannot make a cgroup"
	echo "$limit_bytes" > "$CGROUP/memory.limit_in_bytes"
	cgver=v1
else
	skip "no memory cgroup controller (v2 or v1)"
fi

if [ "$ORDER" -gt 0 ]; then
	kb=$(( 4 << ORDER ))
	f=/sys/kernel/mm/transparent_hugepage/hugepages-${kb}kB/enabled
	if [ -w "$f" ]; then
		MTHP_OLD=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$f")
		MTHP_FILE=$f
		echo madvise > "$f"
	else
		echo "compare-kernel: no mTHP of ${kb} KiB here: the kernel side runs with 4 KiB pages"
	fi
fi

common=(--workers "$WORKERS" --size "$SIZE" --order "$ORDER" --data "$DATA" --json)
# shellcheck disable=SC2206
extra=($EXTRA)

run_kernel() {
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CGROUP" \
		"$USWAP" bench usemem --no-pager "${common[@]}" "${extra[@]}"
}

run_uswap() {
	local devs=() i
	for ((i = 0; i < DEVICES; i++)); do devs+=(--device "zram:${each_mb}M"); done
	"$USWAP" bench usemem --limit "$LIMIT" "${devs[@]}" "${common[@]}" "${extra[@]}"
}

# PERF: the system's counters, a "name value" line each.
counters() {
	awk '/^(pswpin|pswpout|pgfault) / { print $1, $2 }' /proc/vmstat
	awk '/TLB:/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print "tlb_ipis", s }' \
		/proc/interrupts
	awk '/^ctxt / { print "ctxt", $2 }' /proc/stat
}
# perf_side SIDE CMD...: CMD, under perf record and between two counter
# readings when PERF is set and this is the last run (r == RUNS).
perf_side() {
	local side=$1 rc
	shift
	if [ -z "$PERF" ] || [ "$r" -ne "$RUNS" ]; then
		"$@"
		return
	fi
	counters > "$PERF/$side.before"
	perf record -a -F 999 -q -o "$PERF/$side.data" -- "$@"
	rc=$?
	counters | awk 'NR == FNR { b[$1] = $2; next } { print $1, $2 - b[$1] }' \
		"$PERF/$side.before" - > "$PERF/$side.counters"
	rm -f "$PERF/$side.before"
	return $rc
}

# The OOM kills in the cgroup so far (v2 memory.events, v1
# memory.oom_control). A command may survive the kill of one of its
# processes and exit 0 having done less work (stress-ng restarts an
# OOM-killed worker and ends "prematurely"): its time is no result.
oom_kills() {
	local f=$CGROUP/memory.events
	[ "$cgver" = v1 ] && f=$CGROUP/memory.oom_control
	awk '$1 == "oom_kill" { print $2; found = 1 } END { if (!found) print 0 }' "$f" 2>/dev/null || echo 0
}

# The command mode: wall seconds of one run of CMD on each side; stdout to
# a file whose checksum both sides must share. The kernel side returns 2
# when the memory cgroup OOM-killed a process of CMD during the run.
now() { date +%s.%N; }
swaps() { awk '/^(pswpin|pswpout) / { printf "%s ", $2 }' /proc/vmstat; }
run_cmd_kernel() {
	local t0 oom0 sw0; t0=$(now); oom0=$(oom_kills); sw0=$(swaps)
	perf_side kernel sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CGROUP" "${CMD[@]}" \
		> "/tmp/compare-kernel.$$.kout" 2> "/tmp/compare-kernel.$$.kerr" || { cat "/tmp/compare-kernel.$$.kerr" >&2; return 1; }
	# shellcheck disable=SC2086,SC2046 # two numbers each
	set -- $sw0 $(swaps)
	echo "     kernel side: pswpin $(($3 - $1)), pswpout $(($4 - $2)) pages (the whole system's)" \
		>> "/tmp/compare-kernel.$$.kerr"
	[ "$(oom_kills)" -eq "$oom0" ] || return 2
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'
}
run_cmd_uswap() {
	local devs=() i t0 json=()
	for ((i = 0; i < DEVICES; i++)); do devs+=(--device "zram:${each_mb}M"); done
	[ -n "$PERF" ] && [ "$r" -eq "$RUNS" ] && json=(--json "$PERF/uswap.json")
	t0=$(now)
	# shellcheck disable=SC2086 # $RUN_OPTS: options and their values
	perf_side uswap "$USWAP" run $RUN_OPTS --limit "$LIMIT" --order "$ORDER" "${devs[@]}" \
		"${json[@]}" -- "${CMD[@]}" > "/tmp/compare-kernel.$$.uout" || return 1
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'
}
if [ ${#CMD[@]} -gt 0 ]; then
	echo
	echo "command: ${CMD[*]}; limit $LIMIT, order $ORDER, $DEVICES x zram ${each_mb}M ${RUN_OPTS}" \
	     "(kernel: lz4, priority $KPRIO, memory cgroup $cgver), $RUNS runs each"
	printf "%-4s %12s %12s %8s\n" run "kernel s" "uswap s" "k/u"
	kl=() ul=() kfail=0
	for ((r = 1; r <= RUNS; r++)); do
		# The kernel's memcg may OOM-kill the command under a tight
		# limit: that is a result (counted), not a reason to stop.
		k=$(run_cmd_kernel 2>/dev/null); krc=$?
		u=$(run_cmd_uswap) || { echo "compare-kernel: the command failed under uswap run"; exit 1; }
		if [ "$krc" -ne 0 ]; then
			kfail=$((kfail + 1))
			why="the command failed, e.g. OOM-killed"
			[ "$krc" -eq 2 ] && why="the memory cgroup OOM-killed a process of the command (it exited 0)"
			printf "%-4s %12s %12s %8s   (kernel side: %s)\n" "$r" failed "$u" - "$why"
			ul+=("$u")
			continue
		fi
		if ! cmp -s "/tmp/compare-kernel.$$.kout" "/tmp/compare-kernel.$$.uout"; then
			echo "compare-kernel: the two sides wrote different output"; exit 1
		fi
		kl+=("$k"); ul+=("$u")
		printf "%-4s %12s %12s %8.3f\n" "$r" "$k" "$u" \
			"$(awk -v a="$k" -v b="$u" 'BEGIN { print (b > 0 ? a / b : 0) }')"
		# What CMD said on stderr on the kernel side (uswap's side prints
		# it as it runs): a command's own figures, such as fork_swapped.py's.
		tail -n 4 "/tmp/compare-kernel.$$.kerr" | sed '$!s/^/     kernel side stderr: /'
	done
	echo "kernel side failed $kfail of $RUNS runs; uswap run completed all $RUNS"
	if [ ${#kl[@]} -eq 0 ]; then
		echo "no kernel run completed: no ratio"
		teardown
		trap - EXIT
		exit 0
	fi
	rm -f "/tmp/compare-kernel.$$.kout" "/tmp/compare-kernel.$$.uout" "/tmp/compare-kernel.$$.kerr"
	median() { printf "%s\n" "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
	km=$(median "${kl[@]}"); um=$(median "${ul[@]}")
	printf "%-4s %12s %12s %8.3f   (kernel time / uswap time, medians: > 1 is uswap faster)\n" \
		med "$km" "$um" "$(awk -v a="$km" -v b="$um" 'BEGIN { print (b > 0 ? a / b : 0) }')"
	if [ -n "$PERF" ]; then
		for side in kernel uswap; do
			[ -s "$PERF/$side.counters" ] &&
				echo "$side, last run (under perf): $(tr '\n' ' ' < "$PERF/$side.counters")"
		done
	fi
	teardown
	trap - EXIT
	[ "$swaps_before" = "$(cat /proc/swaps)" ] || { echo "compare-kernel: /proc/swaps differs" >&2; exit 1; }
	exit 0
fi

field() { # field NAME < json
	sed -n "s/^ *\"$1\": *\([-0-9.e+]*\),\{0,1\}$/\1/p" | head -n1
}

echo
echo "usemem: $WORKERS workers x $SIZE, limit $LIMIT, order $ORDER, $DEVICES x zram ${each_mb}M" \
     "(kernel: lz4, priority $KPRIO, memory cgroup $cgver), data $DATA, $RUNS runs each"
printf "%-4s %14s %14s %8s   %9s %9s   %9s %9s\n" run "kernel KB/s" "uswap KB/s" ratio \
	"k wall s" "u wall s" "k sys s" "u sys s"
kl=() ul=()
for ((r = 1; r <= RUNS; r++)); do
	oom0=$(oom_kills)
	kj=$(run_kernel 2>/tmp/compare-kernel.$$.err) || {
		echo "compare-kernel: kernel run failed:"; cat /tmp/compare-kernel.$$.err; rm -f /tmp/compare-kernel.$$.err; exit 1; }
	[ "$(oom_kills)" -eq "$oom0" ] || {
		echo "compare-kernel: the memory cgroup OOM-killed a process of the kernel run: no result"; exit 1; }
	uj=$(run_uswap 2>/tmp/compare-kernel.$$.err) || {
		echo "compare-kernel: uswap run failed:"; cat /tmp/compare-kernel.$$.err; rm -f /tmp/compare-kernel.$$.err; exit 1; }
	rm -f /tmp/compare-kernel.$$.err
	k=$(field throughput_kbps <<<"$kj"); u=$(field throughput_kbps <<<"$uj")
	kl+=("$k"); ul+=("$u")
	printf "%-4s %14.0f %14.0f %8.3f   %9.2f %9.2f   %9.2f %9.2f\n" "$r" "$k" "$u" \
		"$(awk -v a="$u" -v b="$k" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
		"$(field wall_s <<<"$kj")" "$(field wall_s <<<"$uj")" \
		"$(field sys_s <<<"$kj")" "$(field sys_s <<<"$uj")"
done
median() { printf "%s\n" "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
km=$(median "${kl[@]}"); um=$(median "${ul[@]}")
printf "%-4s %14.0f %14.0f %8.3f   (uswap / kernel, medians)\n" med "$km" "$um" \
	"$(awk -v a="$um" -v b="$km" 'BEGIN { print (b > 0 ? a / b : 0) }')"
printf "last run, write / read passes (KB/s): kernel %.0f / %.0f, uswap %.0f / %.0f\n" \
	"$(field write_kbps <<<"$kj")" "$(field read_kbps <<<"$kj")" \
	"$(field write_kbps <<<"$uj")" "$(field read_kbps <<<"$uj")"
echo "kernel, last run: pswpout $(field pswpout <<<"$kj") pages, pswpin $(field pswpin <<<"$kj") pages"
echo "uswap, last run: fault service p50 $(field fault_us_p50 <<<"$uj") us, p99 $(field fault_us_p99 <<<"$uj") us"

teardown
trap - EXIT
swaps_after=$(cat /proc/swaps)
echo
echo "/proc/swaps after:"
echo "$swaps_after"
if [ "$swaps_before" != "$swaps_after" ]; then
	echo "compare-kernel: /proc/swaps differs from before the run" >&2
	exit 1
fi
