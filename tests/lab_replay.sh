#!/bin/sh
# SPDX-License-Identifier: MIT
# lab_replay.sh USWAP - a lab workload's trace (--trace-out) replays under
# three policies; a trace with a bad record is refused with its line
# (exit status 2) and a missing file is a runtime error (1); --svg takes
# any name, and a plot that cannot be written (a full disk, a FIFO no one
# reads) is exit 1; no temporary file is left, even when interrupted.
set -u
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
status=0
fail() { echo "FAIL: $*"; status=1; }

"$uswap" lab run rework-swap-allocator-locks --scale 0.02 --vcpus 16 \
	--trace-out "$dir/t.trace" > /dev/null 2> "$dir/run.err" ||
	fail "lab run --trace-out: $(head -n 3 "$dir/run.err")"
head -n 1 "$dir/t.trace" | grep -qx 'uswap-trace 1' || fail "no trace header"
records=$(grep -c '^[0-9]' "$dir/t.trace")
[ "$records" -gt 1000 ] || fail "only $records records"

if "$uswap" lab replay "$dir/t.trace" --arm lock=device --arm default \
	--arm select=global-rotate,percpu=global --json > "$dir/r.json" 2> "$dir/r.err"; then
	for arm in A B C; do
		grep -q "\"name\": \"$arm\"" "$dir/r.json" || fail "replay JSON has no arm $arm"
	done
	grep -q '"contended": [1-9]' "$dir/r.json" || fail "replay: no contended lock"
else
	fail "lab replay: $(head -n 3 "$dir/r.err")"
fi

# Line 2 is the comment, 3 the legend, 4 the first record: free an ID
# nobody allocated on line 5.
sed '5s/.*/0 0 F 999999999/' "$dir/t.trace" > "$dir/bad.trace"
"$uswap" lab replay "$dir/bad.trace" --arm default --arm lock=device \
	> /dev/null 2> "$dir/bad.err"
rc=$?
[ $rc = 2 ] || fail "bad record: exit $rc, want 2"
grep -q 'line 5: ID is not a live folio' "$dir/bad.err" ||
	fail "bad record: message '$(head -n 1 "$dir/bad.err")'"

"$uswap" lab replay "$dir/none.trace" --arm default --arm default \
	> /dev/null 2> "$dir/none.err"
rc=$?
[ $rc = 1 ] || fail "missing file: exit $rc, want 1"
"$uswap" lab replay "$dir/t.trace" --arm default > /dev/null 2>&1
rc=$?
[ $rc = 2 ] || fail "one arm: exit $rc, want 2"

# --svg: any name (gnuplot draws into a file of ours); a plot that cannot
# be written is exit 1, said.
if command -v gnuplot > /dev/null; then
	svg="$dir/a'b\"c d.svg"
	"$uswap" lab replay "$dir/t.trace" --arm default --arm lock=device --svg "$svg" \
		> /dev/null 2> "$dir/svg.err" || fail "--svg with quotes: $(head -n 3 "$dir/svg.err")"
	grep -q '<svg' "$svg" || fail "--svg with quotes: no SVG written"
	if [ -w /dev/full ]; then
		"$uswap" lab replay "$dir/t.trace" --arm default --arm lock=device \
			--svg /dev/full > /dev/null 2> "$dir/full.err"
		rc=$?
		[ $rc = 1 ] || fail "--svg /dev/full: exit $rc, want 1"
		grep -q 'ENOSPC' "$dir/full.err" || fail "--svg /dev/full: $(cat "$dir/full.err")"
	fi
	# A FIFO that no process reads: said at once (exit 1), no wait.
	mkfifo "$dir/fifo"
	timeout 60 "$uswap" lab replay "$dir/t.trace" --arm default --arm lock=device \
		--svg "$dir/fifo" > /dev/null 2> "$dir/fifo.err"
	rc=$?
	[ $rc = 1 ] || fail "--svg to an unread FIFO: exit $rc, want 1"
	grep -q 'no process reads' "$dir/fifo.err" || fail "--svg FIFO: $(cat "$dir/fifo.err")"
	# gnuplot's files have no name: none is left in /tmp, even by a plot
	# interrupted (SIGINT) while it draws.
	before=$(ls /tmp | grep -c '^uswap-plot-')
	"$uswap" lab replay "$dir/t.trace" --arm default --arm lock=device \
		--svg "$dir/int.svg" > /dev/null 2>&1 &
	pid=$!
	sleep 0.3
	kill -INT $pid 2> /dev/null
	wait $pid
	sleep 0.2
	after=$(ls /tmp | grep -c '^uswap-plot-')
	[ "$after" -le "$before" ] || fail "plot temp files left in /tmp: $((after - before))"
fi

[ $status = 0 ] && echo "ok: $records records replayed under 3 arms; bad ones refused"
exit $status
