#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: programs whose runtime maps its own heap, swapped under
# `uswap run` (issue "One swap subsystem per program", item 2). The agent
# adopts each private anonymous mapping a program makes through mmap(),
# PROT_NONE reservations included, and follows what the program then does
# to it (mprotect, mmap(MAP_FIXED), madvise, munmap, fork):
#  - run_helper reserve: 128 MiB reserved PROT_NONE and committed as V8
#    and the JVM do, under --limit 16M; every byte right, and most of it
#    swapped out (before the agent adopted such mappings: none of it);
#  - java (Debian's default JDK), 384 MiB of live long[] arrays, and node,
#    an object graph of about 384 MiB, each under --limit 64M: their own
#    verification passes, the tree's anonymous RSS (sampled every 50 ms)
#    stays under the limit x 1.1 + 16 MiB, and at most 5 % of the tree's
#    anonymous memory (its resident peak plus what is on swap at the end)
#    is unmanaged.
# The first runs are --in-process, on a file on tmpfs: its pages are the
# kernel's, not in any process's RSS (zram devices would live inside the
# program there, which the RSS bound would count). java and node run a
# second time in the default mode, one subsystem for the tree, with the
# default zram devices, under the same bounds, always checked: uswap run
# holds the pools, outside the tree. java and node are skipped, each with
# a line, where they are not installed; without tmpfs the bounds are.
# Skips (77) where `uswap run` cannot work here (see run_lib.sh).
#
# Usage: run_runtimes.sh USWAP RUN_HELPER
set -u
opts=
uswap=$1
helper=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-runtimes-test.XXXXXX") || exit 1
shm=
trap 'rm -rf "$dir" ${shm:+"$shm"}' EXIT INT TERM
. "$(dirname "$0")/run_lib.sh"
mkdir -m 700 "$dir/xdg"
export XDG_RUNTIME_DIR="$dir/xdg"
unset MALLOC_PERTURB_ # glibc would fill the agent's untouched tables
run_probe "$uswap" "$dir"

dev=
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && command -v mkswap > /dev/null; then
	shm=$(mktemp -d /dev/shm/uswap-runtimes.XXXXXX) || fail "mktemp in /dev/shm"
	fallocate -l 1G "$shm/swap" && chmod 600 "$shm/swap" &&
		mkswap "$shm/swap" > /dev/null || fail "mkswap on tmpfs"
	dev="--device file:$shm/swap"
else
	echo "# no tmpfs at /dev/shm: default devices, RSS bounds not checked"
fi

# run NAME LIMIT CMD...: CMD under uswap run $opts (else --in-process on
# the tmpfs file) with --json $dir/NAME.json;
# exit 0 or fail with its output.
run() {
	name=$1 limit=$2
	shift 2
	# shellcheck disable=SC2086 # $dev is an option and its value
	"$uswap" run --limit "$limit" ${opts:---in-process $dev} --stats --json "$dir/$name.json" -- "$@" \
		> "$dir/$name.out" 2> "$dir/$name.err"
	rc=$?
	[ $rc = 0 ] || { cat "$dir/$name.out" "$dir/$name.err"; fail "$name: exit status $rc"; }
}

# facts NAME: swapped-out pages, the tree's anonymous RSS peak, unmanaged
# and swap in use at the end (MiB), from NAME's JSON.
facts() {
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
used = sum(d["used_kb"] for d in j["devices"]) >> 10
print(sum(j["swpout"]), j["tree"]["anon_rss_peak_bytes"] >> 20,
      j["unmanaged_anon_bytes_min"] >> 20, used)' "$dir/$1.json" ||
		fail "$1: no statistics in the JSON: $(cat "$dir/$1.json")"
}

# bounds NAME LIMIT_MIB: the RSS and coverage bounds above.
bounds() {
	set -- "$1" "$2" $(facts "$1")
	echo "# $1: $3 pages swapped out, tree peak $4 MiB, unmanaged $5 MiB, $6 MiB on swap"
	[ -n "$dev" ] || [ -n "${opts:-}" ] || return 0
	[ "$4" -le $(($2 * 11 / 10 + 16)) ] ||
		fail "$1: the tree's anonymous RSS peaked at $4 MiB under a $2 MiB limit"
	[ $(($5 * 100)) -le $((($4 + $6) * 5)) ] ||
		fail "$1: $5 MiB unmanaged of $(($4 + $6)) MiB anonymous: under 95 % managed"
}

# A C program with a runtime's reservation.
run reserve 16M "$helper" reserve 128
grep -q "^reserve: ok" "$dir/reserve.out" || fail "reserve: $(cat "$dir/reserve.out")"
set -- $(facts reserve)
echo "# reserve: $1 pages swapped out"
[ "$1" -ge 16384 ] || fail "reserve: $1 pages swapped out of a 128 MiB reservation under 16M"

if command -v java > /dev/null && command -v javac > /dev/null; then
	cat > "$dir/Big.java" << 'EOF'
/* MIB arrays of 1 MiB of longs, each element its index, all live; then
 * two passes check every element and add one. */
public class Big {
    public static void main(String[] a) {
        int mib = Integer.parseInt(a[0]);
        long[][] arr = new long[mib][];
        for (int i = 0; i < mib; i++) {
            arr[i] = new long[131072];
            for (int j = 0; j < 131072; j++) arr[i][j] = (long) i * 131072 + j;
        }
        long bad = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < mib; i++)
                for (int j = 0; j < 131072; j++)
                    if (arr[i][j] != (long) i * 131072 + j + pass) bad++; else arr[i][j]++;
        System.out.println(bad == 0 ? "verified " + mib + " MiB" : "BAD " + bad);
        System.exit(bad == 0 ? 0 : 1);
    }
}
EOF
	javac -d "$dir" "$dir/Big.java" || fail "javac"
	run java 64M java -Xmx1g -cp "$dir" Big 384
	grep -q "^verified 384 MiB" "$dir/java.out" || fail "java: $(cat "$dir/java.out")"
	bounds java 64
	# The default mode and zram devices: their pools are uswap run's.
	opts=--daemon
	run java-d 64M java -Xmx1g -cp "$dir" Big 384
	grep -q "^verified 384 MiB" "$dir/java-d.out" || fail "java --daemon: $(cat "$dir/java-d.out")"
	bounds java-d 64
	opts=
else
	echo "# java: not installed (default-jdk-headless), not run"
fi

if command -v node > /dev/null; then
	cat > "$dir/big.js" << 'EOF'
// A linked list of MIB * 8192 objects (about 128 bytes each), walked
// twice, every object checked.
const mib = parseInt(process.argv[2]);
const n = mib * 8192;
let head = null;
for (let i = 0; i < n; i++) head = { i: i, s: "v" + i, next: head };
let bad = 0;
for (let pass = 0; pass < 2; pass++) {
  let k = n - 1;
  for (let p = head; p; p = p.next, k--)
    if (p.i !== k || p.s !== "v" + k) bad++;
}
console.log(bad === 0 ? `verified ${n} objects` : `BAD ${bad}`);
process.exit(bad === 0 ? 0 : 1);
EOF
	run node 64M node "$dir/big.js" 384
	grep -q "^verified 3145728 objects" "$dir/node.out" || fail "node: $(cat "$dir/node.out")"
	bounds node 64
	opts=--daemon
	run node-d 64M node "$dir/big.js" 384
	grep -q "^verified 3145728 objects" "$dir/node-d.out" ||
		fail "node --daemon: $(cat "$dir/node-d.out")"
	bounds node-d 64
	opts=
else
	echo "# node: not installed (nodejs), not run"
fi
echo "runtimes: ok"
