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

# place PID PC: the code mapping that holds PC (hex), as FILE+OFFSET.
place() {
	pc=$(($2))
	while read -r range perm off _ _ file; do
		[ "$perm" = r-xp ] || continue
		lo=$((0x${range%-*})) hi=$((0x${range#*-}))
		if [ "$pc" -ge "$lo" ] && [ "$pc" -lt "$hi" ]; then
			printf '%s+0x%x' "${file##*/}" $((pc - lo + 0x$off))
			return
		fi
	done < "/proc/$1/maps"
	echo "$2"
}

# thread_dump PID...: each thread's name, state, wait channel, system call
# (number, arguments, sp, pc placed in its code mapping) and kernel stack:
# what a hang is waiting for (a debugger would itself block on a process
# whose faults no one serves). One line and the stack per thread, so that
# a log's tail holds many.
thread_dump() {
	for p in "$@"; do
		echo "== pid $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"
		for t in /proc/$p/task/*; do
			[ -d "$t" ] || continue
			sc=$(cat $t/syscall 2>/dev/null)
			pc=${sc##* }
			case $pc in 0x*) pc="at $(place $p "$pc" 2>/dev/null)" ;; *) pc= ;; esac
			echo "-- tid ${t##*/} $(cat $t/comm 2>/dev/null)" \
			     "$(grep '^State' $t/status 2>/dev/null | tr -s '\t ' ' ')" \
			     "wchan $(cat $t/wchan 2>/dev/null) syscall $sc $pc"
			head -8 $t/stack 2>/dev/null | sed 's/^/     /'
		done
		user_stacks "$p"
	done
}

# user_stacks PID: each thread's user-space backtrace on one line, where
# gdb is installed: "| LWP name: f0 (file:line) < f1 < ...". Bounded:
# gdb's reads of a process whose faults no one serves would block, so no
# frame arguments (they may point into swapped-out memory) and at most 20 s.
user_stacks() {
	command -v gdb > /dev/null || return 0
	timeout -s KILL 20 gdb -batch -nx -p "$1" -ex 'set print frame-arguments none' \
		-ex 'thread apply all bt 12' 2>/dev/null | awk '
		/^Thread / { if (line) print line; line = "   | " $0; sep = " "; next }
		/^#/ {
			f = $2; if (f ~ /^0x/) f = $4
			at = ""; for (i = 3; i < NF; i++) if ($i == "at") at = $(i + 1)
			sub(/.*\//, "", at)
			line = line sep f (at ? " (" at ")" : ""); sep = " < "
		}
		END { if (line) print line }' | sed 's/(Thread 0x[0-9a-f]* (\(LWP [0-9]*\)) \("[^"]*"\))/\1 \2/'
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
		# The root last: a log that keeps only its tail keeps uswap run.
		{ echo "run_watched: still running after $secs s:"; thread_dump $(printf "%s\n" $tree | tac); } >> "$out"
		kill -KILL $tree 2>/dev/null
		wait "$pid"
		return 124
	fi
	wait "$pid"
}
