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
#     reads back every byte after the child ran; skipped without nbdkit);
#   - a device spec with a newline is refused before CMD starts;
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
fail() { echo "FAIL: $*"; exit 1; }
mkdir -m 700 "$dir/xdg" "$dir/tmp"
export XDG_RUNTIME_DIR="$dir/xdg"
py=/usr/bin/python3

"$uswap" run --limit 8M -- true 2> "$dir/probe.err"
rc=$?
if [ $rc != 0 ]; then
	if grep -q "not permitted\|libuswap-preload.so not found\|no userfaultfd" "$dir/probe.err"; then
		echo "SKIP: $(head -1 "$dir/probe.err")"
		exit 77
	fi
	cat "$dir/probe.err"
	fail "uswap run -- true exit $rc"
fi

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

# 3. A forked child never swaps onto the parent's NBD export.
if command -v nbdkit > /dev/null; then
	nbdkit -U "$dir/nbd.sock" -P "$dir/nbd.pid" memory 256M || fail "nbdkit did not start"
	for i in $(seq 50); do [ -s "$dir/nbd.pid" ] && [ -S "$dir/nbd.sock" ] && break; sleep 0.1; done
	nbd_pid=$(cat "$dir/nbd.pid")
	"$uswap" run --limit 8M --device "nbd:nbd+unix:///?socket=$dir/nbd.sock" -- \
		"$helper" fork 64 > "$dir/fork.out" 2>&1 || fail "fork on nbd: $(cat "$dir/fork.out")"
	grep -q "^fork: ok" "$dir/fork.out" || fail "fork on nbd: $(cat "$dir/fork.out")"
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
