#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: every --json output of the CLI parses as exactly one JSON
# value (json_valid, on json-c) and carries its main keys: swapon
# --dry-run, lab list and lab run, stress, each benchmark (bench uffd
# too), status, and
# run's --json FILE. A producer that needs userfaultfd (the pager
# benchmarks, run) is skipped with the reason when it exits saying so,
# and run also when its agent is not built (sanitizer builds).
#
# Usage: json_check.sh USWAP_EXE JSON_VALID
set -u
uswap=$1
valid=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-json.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
status=0
checked=0

# check NAME KEYS... -- COMMAND...: run COMMAND (stdout to NAME.json) and
# validate it; exit 77 or a userfaultfd refusal counts as skipped.
check() {
	name=$1
	shift
	keys=
	while [ "$1" != -- ]; do keys="$keys $1"; shift; done
	shift
	"$@" > "$dir/$name.json" 2> "$dir/$name.err"
	rc=$?
	if [ $rc = 77 ] || grep -qi "userfaultfd" "$dir/$name.err"; then
		echo "skip: $name: $(head -n 1 "$dir/$name.err")"
		return
	fi
	if [ $rc != 0 ]; then
		echo "FAIL: $name: exit $rc: $(head -n 3 "$dir/$name.err")"
		status=1
		return
	fi
	# shellcheck disable=SC2086
	if "$valid" "$dir/$name.json" $keys; then
		checked=$((checked + 1))
	else
		echo "FAIL: $name: $(head -c 300 "$dir/$name.json")"
		status=1
	fi
}

check swapon version ok spec device warnings -- \
	"$uswap" swapon --dry-run faulty:read=0.01:zram:64M:zstd --json
check lab_list -- "$uswap" lab list --json
check lab_costs lock line page_out jitter -- "$uswap" lab costs --json
check lab_run experiment seed all_agree arms -- \
	"$uswap" lab run --json remove-swap-cache-contention-workaround
check stress seed ok ops violations -- \
	"$uswap" stress --duration 1 --seed 3 --quiet --dir "$dir" --json
check bench_io benchmark machine -- \
	"$uswap" bench io --device ram:16M --size 4M --repeat 1 --json
check bench_alloc threads orders devices -- \
	"$uswap" bench alloc --duration 0.2 --device-size 64M --json
check bench_alloc_scale threads runs -- \
	"$uswap" bench alloc --threads 1,2 --duration 0.2 --device-size 64M --json
check bench_fault order device folios -- "$uswap" bench fault -s 8M --json
check bench_uffd order touches thread_blocking process_spinning -- \
	"$uswap" bench uffd --folios 64 --repeat 1 --json
check bench_zap ranges madvise_us zap_self_us ratio -- \
	"$uswap" bench zap --ranges 64 --repeat 2 --json
check bench_lock benchmark line_ns handover_ns -- \
	"$uswap" bench lock --ops 10000 --repeat 1 --json
check bench_usemem workers limit_bytes per_worker -- \
	"$uswap" bench usemem -n 1 -s 8M --limit 4M --json
XDG_RUNTIME_DIR="$dir" check status version processes -- "$uswap" status --json
XDG_RUNTIME_DIR="$dir" check status_show version swapdevices -- "$uswap" status --show --json
XDG_RUNTIME_DIR="$dir" check status_zram version zramdevices -- "$uswap" status --zram --json
XDG_RUNTIME_DIR="$dir" check status_processes version processes -- "$uswap" status --processes --json
XDG_RUNTIME_DIR="$dir" check swapon_show version swapdevices -- "$uswap" swapon --show --json

# A spec that is not UTF-8 (refused, exit 2): its JSON still is UTF-8.
"$uswap" swapon --dry-run "$(printf 'ram:\377\37616M')" --json > "$dir/utf8.json" 2> /dev/null
if "$valid" "$dir/utf8.json" ok spec && iconv -f UTF-8 -t UTF-8 "$dir/utf8.json" > /dev/null 2>&1
then
	checked=$((checked + 1))
else
	echo "FAIL: a spec that is not UTF-8: $(od -c "$dir/utf8.json" | head -n 5)"
	status=1
fi

# run writes its JSON to a file, not stdout.
if "$uswap" run --json "$dir/run.json" -- true 2> "$dir/run.err"; then
	if "$valid" "$dir/run.json" swpout swpin evictions; then
		checked=$((checked + 1))
	else
		echo "FAIL: run --json: $(head -c 300 "$dir/run.json")"
		status=1
	fi
elif grep -qi "userfaultfd\|preload.so not found" "$dir/run.err"; then
	echo "skip: run: $(head -n 1 "$dir/run.err")"
else
	echo "FAIL: run --json: $(head -n 3 "$dir/run.err")"
	status=1
fi

[ $status = 0 ] && echo "ok: $checked --json outputs parsed"
exit $status
