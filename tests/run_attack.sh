#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: `uswap run` against the ways an outside attack made it give
# a program wrong data, crash or hang (issue 29), each on a real program:
#   - another preload (mimalloc) and a library whose constructor maps
#     memory before the agent's constructor ran: the program runs (was
#     SIGSEGV, 139);
#   - stdout or stdin closed: a swap file never becomes fd 0 or 1 (a write
#     to stdout fails with EBADF, the swap header stays intact; `cat 0<&-`
#     prints no swap data);
#   - a forked child never opens the parent's NBD export again (the parent
#     reads back every byte after the child ran; skipped without nbdkit
#     or the nbd device),
#     nor a swap file inside a mirror (it swaps to zram instead); an exec'd
#     image takes its own export over; a second run on an export in use
#     is refused; an export restarted empty gives SIGBUS, never zeroes;
#   - a device spec with a newline is refused before CMD starts, and one
#     taken by another process after uswap run's check stops CMD from
#     starting at all;
#   - a read error ends the program with a line naming the device, and a
#     mirror's failed leg shows in --stats;
#   - `kill -9` of uswap run ends a CMD that ignores SIGTERM (SIGKILL after
#     --kill-after) and leaves no stats file behind.
# Skips (77) when the agent is not built (sanitizer builds) or kernel-fault
# userfaultfd is not permitted here.
#
# Usage: run_attack.sh USWAP RUN_HELPER
set -u
uswap=$1
helper=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-attack.XXXXXX")
nbd_pid=""
cleanup() {
	[ -n "$nbd_pid" ] && kill "$nbd_pid" 2>/dev/null
	[ -f "$dir/cmd.pid" ] && kill -9 "$(cat "$dir/cmd.pid")" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
. "$(dirname "$0")/run_lib.sh"
mkdir -m 700 "$dir/xdg" "$dir/tmp"
export XDG_RUNTIME_DIR="$dir/xdg"
py=/usr/bin/python3

run_probe "$uswap" "$dir"

# 1. Constructors in any order, another preload first.
mimalloc=$(ls /usr/lib/*/libmimalloc.so.2 2>/dev/null | head -n1)
if [ -n "$mimalloc" ]; then
	LD_PRELOAD=$mimalloc "$uswap" run --limit 8M -- "$helper" alloc 32 > "$dir/mi.out" 2>&1 ||
		fail "with mimalloc preloaded: $(cat "$dir/mi.out")"
	grep -q "^alloc: ok" "$dir/mi.out" || fail "with mimalloc preloaded: $(cat "$dir/mi.out")"
fi
if command -v cc > /dev/null; then
	cat > "$dir/early.c" <<'C'
#include <string.h>
#include <sys/mman.h>
/* Maps, writes and unmaps memory before any other constructor. */
__attribute__((constructor(101))) static void early(void)
{
	char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED) {
		memset(p, 1, 1 << 20);
		munmap(p, 1 << 20);
	}
}
C
	cc -shared -fPIC -o "$dir/libearly.so" "$dir/early.c" || fail "cc libearly.so"
	LD_PRELOAD="$dir/libearly.so" "$uswap" run --limit 8M -- "$helper" mmap 32 > "$dir/early.out" 2>&1 ||
		fail "a constructor that maps memory first: $(cat "$dir/early.out")"
	grep -q "^mmap: ok" "$dir/early.out" || fail "early mmap: $(cat "$dir/early.out")"
fi

# 2. Closed standard streams: the swap file stays above fd 2.
if [ -x $py ] && command -v mkswap > /dev/null; then
	sw="$dir/sw.img"
	dd if=/dev/zero of="$sw" bs=1M count=64 status=none && chmod 600 "$sw" &&
		mkswap "$sw" > /dev/null 2>&1 || fail "mkswap"
	"$uswap" run --limit 8M --device "file:$sw" -- $py -c '
import hashlib, os, sys
data = os.urandom(32 << 20)
h = hashlib.sha256(data).digest()
try:
    os.write(1, b"into the swap file?" * 4096)
    print("closed stdout: write succeeded", file=sys.stderr)
except OSError as e:
    print("closed stdout: errno", e.errno, file=sys.stderr)
more = os.urandom(32 << 20)
assert hashlib.sha256(data).digest() == h, "data changed on swap"
print("stdout: ok", file=sys.stderr)' 1>&- 2> "$dir/stdout.err" || fail "closed stdout: $(cat "$dir/stdout.err")"
	grep -q "closed stdout: errno 9" "$dir/stdout.err" || fail "closed stdout: $(cat "$dir/stdout.err")"
	grep -q "^stdout: ok" "$dir/stdout.err" || fail "closed stdout: $(cat "$dir/stdout.err")"
	"$uswap" swapon --dry-run "file:$sw" > /dev/null 2>&1 ||
		fail "the swap file's header was overwritten: $("$uswap" swapon --dry-run "file:$sw" 2>&1)"
	"$uswap" run --limit 8M --device "file:$sw" -- cat 0<&- > "$dir/stdin.out" 2> "$dir/stdin.err"
	grep -q "SWAPSPACE2" "$dir/stdin.out" && fail "cat with stdin closed read the swap file"
	grep -q "Bad file descriptor" "$dir/stdin.err" || fail "closed stdin: $(cat "$dir/stdin.err")"
fi

# 2a. --in-process: another process takes the swap file between uswap
# run's check and the agent's open (here a preloaded library whose
# constructor, run before the agent's, flocks it): CMD is not started
# (exit 1, said), where it ran unswapped with exit 0 before. (By default
# uswap run itself opens the devices, holding them before CMD starts.)
if [ -n "${sw:-}" ] && command -v cc > /dev/null; then
	cat > "$dir/taker.c" <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
/* In CMD only (uswap run checked the file already): takes $TAKE_FILE's
 * claim (flock, as a swapon does) and keeps it. */
__attribute__((constructor)) static void take(void)
{
	const char *path = getenv("USWAP_RUN_DEVICES") ? getenv("TAKE_FILE") : NULL;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;

	if (fd >= 0)
		flock(fd, LOCK_EX | LOCK_NB);
}
C
	cc -shared -fPIC -o "$dir/libtaker.so" "$dir/taker.c" || fail "cc libtaker.so"
	TAKE_FILE=$sw LD_PRELOAD="$dir/libtaker.so" "$uswap" run --in-process --limit 8M --device "file:$sw" -- \
		touch "$dir/taken.ran" > "$dir/taken.out" 2>&1
	rc=$?
	[ $rc = 1 ] || fail "a device taken after the check: exit $rc: $(cat "$dir/taken.out")"
	[ -e "$dir/taken.ran" ] && fail "a device taken after the check: CMD ran"
	grep -q "CMD not started" "$dir/taken.out" || fail "taken: $(cat "$dir/taken.out")"
fi

# 2b. A swap file inside a mirror: the forked child leaves it to the
# parent (it was opened again before, failed, and the child ran unswapped)
# and swaps to the zram device beside it.
if [ -n "${sw:-}" ]; then
	"$uswap" run --limit 8M --stats --device zram:256M \
		--device "mirror::file:$sw|ram:64M" -- "$helper" fork 64 > "$dir/mfork.out" 2>&1 ||
		fail "fork with a mirrored file: $(cat "$dir/mfork.out")"
	grep -q "^fork: ok" "$dir/mfork.out" || fail "fork with a mirrored file: $(cat "$dir/mfork.out")"
	grep -q "processes  *2 with a pager" "$dir/mfork.out" ||
		fail "fork with a mirrored file: the child had no pager: $(cat "$dir/mfork.out")"
fi

# 3. A forked child never swaps onto the parent's NBD export (skipped in
# a build without the nbd device).
if command -v nbdkit > /dev/null && built_with "$uswap" nbd:nbd://127.0.0.1/x; then
	nbdkit -U "$dir/nbd.sock" -P "$dir/nbd.pid" memory 256M || fail "nbdkit did not start"
	for i in $(seq 50); do [ -s "$dir/nbd.pid" ] && [ -S "$dir/nbd.sock" ] && break; sleep 0.1; done
	nbd_pid=$(cat "$dir/nbd.pid")
	"$uswap" run --limit 8M --device "nbd:nbd+unix:///?socket=$dir/nbd.sock" -- \
		"$helper" fork 64 > "$dir/fork.out" 2>&1 || fail "fork on nbd: $(cat "$dir/fork.out")"
	grep -q "^fork: ok" "$dir/fork.out" || fail "fork on nbd: $(cat "$dir/fork.out")"
	nbd="nbd:nbd+unix:///?socket=$dir/nbd.sock"

	# An exec'd image takes its own pid's export over (the claim of the
	# image before the exec is stale), and swaps to it.
	"$uswap" run --limit 8M --device "$nbd" --json "$dir/exec.json" -- \
		sh -c 'exec "$1" alloc 32' sh "$helper" > "$dir/exec.out" 2>&1 ||
		fail "exec on nbd: $(cat "$dir/exec.out")"
	grep -q "^alloc: ok" "$dir/exec.out" || fail "exec on nbd: $(cat "$dir/exec.out")"
	grep -q "in use" "$dir/exec.out" && fail "exec on nbd: $(cat "$dir/exec.out")"
	if [ -x $py ]; then
		$py -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert sum(d["swpout"]) > 1000 and d["devices"][0]["name"].startswith("nbd"), d' "$dir/exec.json" ||
			fail "exec on nbd: the exec'd image did not swap to the export"
	fi

	# A second run on an export in use is refused before its CMD starts.
	"$uswap" run --limit 8M --device "$nbd" -- sh -c 'touch "$1.up"; sleep 30' sh "$dir/first" \
		> "$dir/first.out" 2>&1 &
	first=$!
	for i in $(seq 100); do [ -e "$dir/first.up" ] && break; sleep 0.1; done
	"$uswap" run --limit 8M --device "$nbd" -- touch "$dir/second.ran" > "$dir/second.out" 2>&1
	rc=$?
	kill $first; wait $first
	[ $rc = 1 ] || fail "a second run on one export: exit $rc: $(cat "$dir/second.out")"
	[ -e "$dir/second.ran" ] && fail "a second run on one export: its CMD ran"
	grep -q "in use by another uswap instance" "$dir/second.out" ||
		fail "a second run on one export: $(cat "$dir/second.out")"

	# The server restarts empty during a run: the program gets SIGBUS and
	# a line naming the export, never the zeroes as its data.
	if [ -x $py ]; then
		"$uswap" run --limit 8M --device "$nbd:timeout=5" -- $py -c '
import hashlib, os, sys, time
data = os.urandom(32 << 20)
h = hashlib.sha256(data).digest()
more = os.urandom(32 << 20)
open(sys.argv[1] + ".up", "w").close()
while not os.path.exists(sys.argv[1] + ".go"):
    time.sleep(0.05)
ok = hashlib.sha256(data).digest() == h
print("restart: data", "right" if ok else "WRONG", flush=True)' "$dir/rs" > "$dir/rs.out" 2>&1 &
		prog=$!
		for i in $(seq 300); do [ -e "$dir/rs.up" ] && break; sleep 0.1; done
		kill "$nbd_pid"
		for i in $(seq 50); do kill -0 "$nbd_pid" 2>/dev/null || break; sleep 0.1; done
		rm -f "$dir/nbd.sock"
		nbdkit -U "$dir/nbd.sock" -P "$dir/nbd.pid" memory 256M || fail "nbdkit did not restart"
		for i in $(seq 50); do [ -S "$dir/nbd.sock" ] && break; sleep 0.1; done
		nbd_pid=$(cat "$dir/nbd.pid")
		touch "$dir/rs.go"
		wait $prog
		rc=$?
		grep -q "WRONG" "$dir/rs.out" && fail "a restarted empty server: wrong data: $(cat "$dir/rs.out")"
		[ $rc = 135 ] || fail "a restarted empty server: exit $rc, not SIGBUS: $(cat "$dir/rs.out")"
		grep -q "could not be read back from nbd" "$dir/rs.out" ||
			fail "a restarted empty server: no line names the export: $(cat "$dir/rs.out")"
	fi
	kill "$nbd_pid"
	nbd_pid=""
fi

# 4. A spec that cannot reach the agent intact is refused; nothing runs.
"$uswap" run --limit 8M --device "file:$dir/a
b" -- touch "$dir/ran" > "$dir/nl.out" 2>&1
rc=$?
[ $rc = 2 ] || fail "a spec with a newline: exit $rc: $(cat "$dir/nl.out")"
[ -e "$dir/ran" ] && fail "a spec with a newline: CMD ran"
grep -q "newline" "$dir/nl.out" || fail "a spec with a newline: $(cat "$dir/nl.out")"

# 5. A read error: the program dies of SIGBUS, and a line names the
# device and the error. A mirror whose leg fails stays right and says so.
if [ -x $py ]; then
	"$uswap" run --limit 8M --device faulty:read=1:zram:256M -- $py -c '
x = bytearray(b"a" * (48 << 20))
print(sum(x[::4096]))' > "$dir/rerr.out" 2>&1
	rc=$?
	[ $rc = 135 ] || fail "read errors: exit $rc, not SIGBUS: $(cat "$dir/rerr.out")"
	grep -q "could not be read back from zram0 .*Input/output error" "$dir/rerr.out" ||
		fail "read errors: no line names the device: $(cat "$dir/rerr.out")"
	"$uswap" run --limit 8M --stats --device "mirror::faulty:write=1:ram:256M|ram:256M" -- $py -c '
import hashlib, os
data = os.urandom(32 << 20)
h = hashlib.sha256(data).digest()
more = os.urandom(32 << 20)
assert hashlib.sha256(data).digest() == h
print("mirror: ok")
os._exit(0)' > "$dir/mirror.out" 2>&1 || fail "mirror with a failing leg: $(cat "$dir/mirror.out")"
	grep -q "^mirror: ok" "$dir/mirror.out" || fail "mirror: $(cat "$dir/mirror.out")"
	grep -q "trouble .*leg0_state failed" "$dir/mirror.out" ||
		fail "a mirror's failed leg is not in --stats: $(cat "$dir/mirror.out")"
fi

# 6. kill -9 of uswap run: a CMD that ignores SIGTERM is killed after
# --kill-after, and the stats file is gone.
TMPDIR="$dir/tmp" "$uswap" run --limit 8M --kill-after 1 -- sh -c \
	'echo $$ > "$1"; trap "" TERM; while :; do sleep 0.1; done' sh "$dir/cmd.pid" \
	> "$dir/kill.out" 2>&1 &
run_pid=$!
for i in $(seq 100); do [ -s "$dir/cmd.pid" ] && break; sleep 0.1; done
[ -s "$dir/cmd.pid" ] || fail "kill -9: CMD did not start: $(cat "$dir/kill.out")"
kill -9 $run_pid
cmd_pid=$(cat "$dir/cmd.pid")
for i in $(seq 150); do kill -0 "$cmd_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$cmd_pid" 2>/dev/null && fail "kill -9 of uswap run: CMD still runs 15 s later"
for i in $(seq 50); do [ -z "$(ls "$dir/tmp")" ] && break; sleep 0.1; done
[ -z "$(ls "$dir/tmp")" ] || fail "kill -9 of uswap run left: $(ls "$dir/tmp")"
rm -f "$dir/cmd.pid"

echo "ok: constructors, closed stdio, fork on nbd, newline spec, read errors, kill -9"
