# SPDX-License-Identifier: MIT
#
# Description: what the `uswap run` test scripts share, sourced by them
# (run_cli.sh, run_attack.sh, run_discard.sh): fail(), and the probe that
# skips (exit 77, meson's skip) where `uswap run` cannot work here: no
# agent (a sanitizer build), or no kernel-fault userfaultfd; built_with,
# which tells whether this uswap has an optional device; and run_watched,
# which describes every thread of a run that hangs.
#
# Usage: . run_lib.sh; run_probe USWAP DIR; built_with USWAP SPEC;
#        run_watched SECS OUT CMD...

fail() { echo "FAIL: $*"; exit 1; }

# run_probe USWAP DIR: `uswap run -- true` must work, or the script skips
# with the reason uswap gave; any other failure is one.
run_probe() {
	"$1" run --limit 8M -- true 2> "$2/probe.err"
	rc=$?
	[ $rc = 0 ] && return 0
	if grep -q "not permitted\|libuswap-preload.so not found\|no userfaultfd" "$2/probe.err"; then
		echo "SKIP: $(head -1 "$2/probe.err")"
		exit 77
	fi
	cat "$2/probe.err"
	fail "uswap run -- true exit $rc"
}

# built_with USWAP SPEC: false when this uswap was built without the
# device SPEC names (meson options nbd and crypt), and says so; true
# otherwise. `swapon --dry-run` only parses, so an NBD URI need not
# answer; any other refusal is left to the case that uses SPEC.
built_with() {
	if "$1" swapon --dry-run "$2" 2>&1 | grep -q "built without"; then
		echo "note: ${2%%:*}: this uswap was built without it: skipped"
		return 1
	fi
	return 0
}

# descendants PID: PID and every process below it, one per line.
descendants() {
	echo "$1"
	for c in $(ps -o pid= --ppid "$1"); do
		descendants "$c"
	done
}

# thread_dump PID...: each thread's name, state, wait channel, system call
# (number, arguments, sp, pc; the code mappings place the pc) and kernel
# stack: what a hang is waiting for (a debugger would itself
# block on a process whose faults no one serves).
thread_dump() {
	for p in "$@"; do
		echo "== pid $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"
		grep ' r-xp ' /proc/$p/maps 2>/dev/null # for the pc of each system call
		for t in /proc/$p/task/*; do
			[ -d "$t" ] || continue
			echo "-- tid ${t##*/} $(cat $t/comm 2>/dev/null)" \
			     "$(grep '^State' $t/status 2>/dev/null | tr -s '\t ' ' ')" \
			     "wchan $(cat $t/wchan 2>/dev/null)" \
			     "syscall $(cat $t/syscall 2>/dev/null)"
			head -12 $t/stack 2>/dev/null | sed 's/^/     /'
		done
	done
}

# run_watched SECS OUT CMD...: CMD with stdout and stderr to OUT. Past
# SECS seconds every thread of its process tree is described in OUT
# (thread_dump), the tree is killed, and the status is 124, as timeout's.
run_watched() {
	secs=$1 out=$2
	shift 2
	"$@" > "$out" 2>&1 &
	pid=$!
	waited=0
	while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$secs" ]; do
		sleep 1
		waited=$((waited + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		tree=$(descendants "$pid")
		{ echo "run_watched: still running after $secs s:"; thread_dump $tree; } >> "$out"
		kill -KILL $tree 2>/dev/null
		wait "$pid"
		return 124
	fi
	wait "$pid"
}
