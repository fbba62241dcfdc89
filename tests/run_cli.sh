#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: `uswap run` on unmodified programs, each with a heap
# several times the limit: run_helper (the malloc family, fork with
# swapped-out pages, read(2)/write(2) on swapped-out buffers, threads,
# forks with the locale's data swapped out, both modes; forks while
# threads walk glibc's list of streams, both modes; a signal
# handler without SA_RESTART interrupting the agent's calls, both modes),
# sort -S whose output must be byte-identical to sort's without uswap,
# python3 building, forking and checksumming a structure; zram over an
# NBD export (nbdkit) as tiers; an encrypted device; uswap status on
# a live program (owner-only socket, a dead one's removed); then the exit
# status passthrough, SIGTERM, --json, the working set and
# --no-workingset, reads of untouched memory (uncharged), and bad
# input (CMD not found is 127, a bad --device or --limit is 2 and nothing starts; the counters
# survive an exec, once; a --trace FIFO
# that no one reads is 2 at once, one with a reader gets the trace).
# Skips (77) when the agent is not built (sanitizer builds) or kernel-fault
# userfaultfd is not permitted here.
#
# Usage: run_cli.sh USWAP RUN_HELPER
set -u
uswap=$1
helper=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-run-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/run_lib.sh"
# Status sockets of the programs run here (a killed one leaves its file)
# stay in the test's own directory.
mkdir -m 700 "$dir/xdg"
export XDG_RUNTIME_DIR="$dir/xdg"

run_probe "$uswap" "$dir"

# 1. The helper's modes, 4x the limit or more; each checks every byte.
for mode in alloc fork syscall threads mmap; do
	"$uswap" run --limit 16M --stats -- "$helper" $mode 64 > "$dir/$mode.out" 2> "$dir/$mode.err" ||
		{ cat "$dir/$mode.out" "$dir/$mode.err"; fail "run_helper $mode"; }
	grep -q "^$mode: ok" "$dir/$mode.out" || fail "$mode: $(cat "$dir/$mode.out")"
	swpin=$(sed -n 's/^  swpin *\([0-9]*\)$/\1/p' "$dir/$mode.err")
	[ "${swpin:-0}" -gt 0 ] || fail "$mode: nothing was swapped in: $(cat "$dir/$mode.err")"
done

# --stats ends with swapon --show's and zramctl's columns for the default
# zram devices.
grep -A1 "^  zram$" "$dir/alloc.err" | grep -q "^  *NAME  *ALGORITHM  *DISKSIZE  *DATA  *COMPR  *TOTAL$" &&
	grep -q "^  *zram0  *lz4  *1G " "$dir/alloc.err" &&
	grep -A1 "^  devices$" "$dir/alloc.err" | grep -q "^  *NAME  *TYPE  *SIZE  *USED  *PRIO$" ||
	fail "--stats: no zram table: $(cat "$dir/alloc.err")"

# libnbd (and its TLS stack) is loaded only for an NBD device
# (src/dev/nbd_lib.h): a program with the agent maps none of it, and
# each exec is that much cheaper.
"$uswap" run --limit 16M -- cat /proc/self/maps > "$dir/maps.out" 2>&1 ||
	fail "cat /proc/self/maps: $(cat "$dir/maps.out")"
grep -q "libuswap-preload" "$dir/maps.out" || fail "no agent in cat: $(cat "$dir/maps.out")"
! grep -E "libnbd|libgnutls" "$dir/maps.out" || fail "libnbd loaded without an NBD device"

# The forked child swapped too: it had a pager of its own.
grep -q "processes  *2 with a pager" "$dir/fork.err" || fail "fork: the child had no pager: $(cat "$dir/fork.err")"

# Forks with the locale's data swapped out, both modes, 4 KiB and 64 KiB
# folios: each child's agent used to read it as zeros before its pager
# had the heap (sscanf() in its start), and the child crashed.
for opts in "--in-process --order 0" "--in-process --order 4" "--order 0" "--order 4"; do
	# shellcheck disable=SC2086 # $opts: options and their values
	"$uswap" run $opts --limit 8M -- "$helper" localefork 64 > "$dir/lf.out" 2>&1
	rc=$?
	[ $rc = 77 ] && { echo "# localefork: $(cat "$dir/lf.out")"; break; }
	[ $rc = 0 ] && grep -q "^localefork: ok" "$dir/lf.out" ||
		fail "run_helper localefork ($opts): exit status $rc: $(cat "$dir/lf.out")"
done

# Forks while another thread walks glibc's list of streams (fopen,
# fflush(NULL)) and a third swaps the streams out, both modes: the
# in-process pager hung (the walker faulted with the list's lock held,
# which glibc's fork takes after the atfork handlers), and a child
# crashed in glibc's reset of the streams' locks (a swapped-out FILE read
# as zeros there).
for opts in "--in-process" ""; do
	# shellcheck disable=SC2086 # $opts: options
	run_watched 120 "$dir/fs.out" "$uswap" run $opts --limit 16M -- "$helper" forkstdio 64
	rc=$?
	[ $rc = 0 ] && grep -q "^forkstdio: ok" "$dir/fs.out" ||
		fail "run_helper forkstdio ($opts): exit status $rc: $(tail -c 4000 "$dir/fs.out")"
done

# Readahead, both modes: on by default at --order 0 (run_helper alloc
# reads its swapped-out working set back in order, and folios come in
# ahead of the faults: 4,065 faults here against 49,224 with
# --readahead 0), off when asked.
for opts in "--in-process" ""; do
	for ra in "" "--readahead 0"; do
		# shellcheck disable=SC2086 # $opts $ra: options and their values
		"$uswap" run $opts $ra --limit 16M --json "$dir/ra.json" -- "$helper" alloc 64 \
			> "$dir/ra.out" 2>&1 || fail "readahead ($opts $ra): $(cat "$dir/ra.out")"
		got=$(python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(j["readahead"], j["faults"])' "$dir/ra.json")
		set -- $got
		if [ -z "$ra" ]; then
			[ "$1" -gt 0 ] || fail "readahead ($opts): none by default: $got"
		else
			[ "$1" = 0 ] || fail "--readahead 0 ($opts): $1 folios read ahead"
		fi
	done
done

# The working set, both modes: bench/hot_stream.py reads a hot set after
# every MiB of a stream; hot folios evicted by age come straight back and
# are activated by default (workingset_activate), and with
# --no-workingset no refault is even looked at. Both print the same sum.
hot=$(dirname "$0")/../bench/hot_stream.py
for opts in "--in-process" ""; do
	for ws in "" "--no-workingset"; do
		# shellcheck disable=SC2086 # $opts $ws: options
		"$uswap" run $opts $ws --limit 16M --json "$dir/ws.json" -- python3 "$hot" 8 32 3 \
			> "$dir/ws.out" 2>&1 || fail "working set ($opts $ws): $(cat "$dir/ws.out")"
		grep -qx 196608 "$dir/ws.out" || fail "hot_stream ($opts $ws): $(cat "$dir/ws.out")"
		set -- $(python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(j["workingset_refault"], j["workingset_activate"], j["swpin"])' "$dir/ws.json")
		[ "$3" -gt 0 ] || fail "working set ($opts $ws): nothing swapped in"
		if [ -z "$ws" ]; then
			[ "$2" -gt 0 ] && [ "$1" -ge "$2" ] ||
				fail "working set ($opts): refaults $1, activations $2"
		else
			[ "$1" = 0 ] && [ "$2" = 0 ] ||
				fail "--no-workingset ($opts): refaults $1, activations $2"
		fi
	done
done

# Memory that is only read costs nothing, both modes: python maps 128
# MiB (8x the limit: the agent's mmap, then the pager) and reads a byte
# of each page. A first read maps the zero page, uncharged, as the
# kernel's; the agent once zero-filled the block with memset and the
# pager charged each read, so all of it was written and evicted (24576
# evictions at least). With a write to each page after the reads, those
# are charged (zero_written) and swapped.
zp_prog='
import mmap, sys
n = 128 << 20
m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
assert sum(m[i] for i in range(0, n, 4096)) == 0
if sys.argv[1] == "write":
    for i in range(0, n, 4096):
        m[i] = 1
    assert sum(m[i] for i in range(0, n, 4096)) == n // 4096
print("ok")'
for opts in "--in-process" ""; do
	for what in read write; do
		# shellcheck disable=SC2086 # $opts: options
		"$uswap" run $opts --limit 16M --json "$dir/zp.json" -- python3 -c "$zp_prog" $what \
			> "$dir/zp.out" 2>&1 && grep -qx ok "$dir/zp.out" ||
			fail "zero page ($opts $what): $(cat "$dir/zp.out")"
		set -- $(python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(j["zero_written"], j["evictions"])' "$dir/zp.json")
		if [ $what = read ]; then
			[ "$2" -lt 4096 ] || fail "zero page ($opts): $2 evictions for reads"
		else
			[ "$1" -ge 32768 ] && [ "$2" -ge 16384 ] ||
				fail "zero page ($opts): zero_written $1, evictions $2 after writes"
		fi
	done
done

# A signal handler without SA_RESTART firing every 100 us while the
# program maps and unmaps (each an agent call of uswap run --daemon): a
# call interrupted (EINTR) was taken for uswap run's end and the process
# killed itself (a shell with 80 background jobs died of its SIGCHLD).
for opts in "--in-process" ""; do
	# shellcheck disable=SC2086 # $opts: options and their values
	"$uswap" run $opts --limit 16M -- "$helper" signals 8 > "$dir/sig.out" 2>&1 ||
		fail "run_helper signals ($opts): exit status $?: $(cat "$dir/sig.out")"
	grep -q "^signals: ok" "$dir/sig.out" || fail "signals ($opts): $(cat "$dir/sig.out")"
done

# Memory given back (munmap, free, MADV_DONTNEED) leaves nothing on swap:
# 6 x 64M written under a 16M limit, under 8 MiB used at exit (mimalloc's
# own pages of the region; without the discards it would be over 300 MiB).
"$uswap" run --limit 16M --json "$dir/discard.json" -- "$helper" discard 64 > "$dir/discard.out" 2>&1 ||
	fail "run_helper discard: $(cat "$dir/discard.out")"
grep -q "^discard: ok" "$dir/discard.out" || fail "discard: $(cat "$dir/discard.out")"
used=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(sum(x["used_kb"] for x in d["devices"]), sum(d["swpout"]))' "$dir/discard.json")
set -- $used
[ "$2" -gt 10000 ] || fail "discard: nothing was swapped out: $(cat "$dir/discard.json")"
[ "$1" -lt 8192 ] || fail "discard: ${1} KiB still on swap at exit: $(cat "$dir/discard.json")"

# stress-ng's vm stressor (forked workers, each its own pager) with its own
# verification, 4x the limit (skipped without stress-ng).
if command -v stress-ng > /dev/null; then
	"$uswap" run --limit 16M --json "$dir/sng.json" -- stress-ng --vm 2 --vm-bytes 32M \
		--vm-method all --verify -t 4s > "$dir/sng.out" 2>&1 ||
		fail "stress-ng --vm --verify: $(cat "$dir/sng.out")"
	set -- $(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["processes"], sum(d["swpout"]), d["swpin"])' "$dir/sng.json")
	[ "$1" -ge 3 ] && [ "$2" -gt 0 ] && [ "$3" -gt 0 ] ||
		fail "stress-ng: workers not swapped: $(cat "$dir/sng.json")"
	# A fork-based stressor: processes forked and reaped in a loop.
	"$uswap" run --limit 16M -- stress-ng --fork 2 --fork-ops 200 -t 10s > "$dir/sfork.out" 2>&1 ||
		fail "stress-ng --fork: $(cat "$dir/sfork.out")"
else
	echo "stress-ng not installed: its cases skipped"
fi

# A heap smaller than the program needs: realloc falls back to glibc.
"$uswap" run --limit 16M --heap 64M --stats -- "$helper" realloc 128 > "$dir/re.out" 2> "$dir/re.err" ||
	{ cat "$dir/re.out" "$dir/re.err"; fail "realloc past --heap"; }
grep -q "heap fallbacks  *[1-9]" "$dir/re.err" || fail "no fallback counted: $(cat "$dir/re.err")"

# 2. sort, 4x the limit: the same bytes out as without uswap.
awk 'BEGIN { for (i = 1; i <= 400000; i++) print (i * 7919) % 1000003, "line", i }' \
	> "$dir/in.txt"
sort -S 32M "$dir/in.txt" > "$dir/ref.txt"
"$uswap" run --limit 8M --order 2 -- sort -S 32M "$dir/in.txt" > "$dir/run.txt" ||
	fail "sort under uswap run"
cmp -s "$dir/ref.txt" "$dir/run.txt" || fail "sort under uswap run gave other bytes"

# usemem on plain memory (its MAP_NORESERVE mmap), checked by usemem itself.
"$uswap" run --limit 16M --stats -- "$uswap" bench usemem --no-pager --workers 2 --size 32M \
	> "$dir/um.out" 2> "$dir/um.err" || { cat "$dir/um.out" "$dir/um.err"; fail "usemem --no-pager"; }
grep -q "^  swpout  *[1-9]" "$dir/um.err" || fail "usemem's memory was not swapped: $(cat "$dir/um.err")"

# 3. python3 building, forking, checksumming (skipped without python3).
if command -v python3 > /dev/null; then
	cat > "$dir/py.py" <<'PY'
import hashlib, os, subprocess, sys
data = bytearray(os.urandom(1 << 20)) * 48        # 48 MiB through malloc
subprocess.check_call(["sh", "-c", "exit 0"])     # vfork/posix_spawn + exec
want = hashlib.sha256(data).hexdigest()
pid = os.fork()
if pid == 0:
    ok = hashlib.sha256(data).hexdigest() == want
    data[0] ^= 1                                   # the child's own change
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
ok = status == 0 and hashlib.sha256(data).hexdigest() == want
print("python: ok" if ok else "python: MISMATCH")
sys.exit(0 if ok else 1)
PY
	"$uswap" run --limit 12M --trace "$dir/py.trace" -- python3 "$dir/py.py" \
		> "$dir/py.out" 2>&1 || fail "python3: $(cat "$dir/py.out")"
	grep -q "python: ok" "$dir/py.out" || fail "python3: $(cat "$dir/py.out")"
	# Its swap stream (the parent's: 48 MiB through a 12M limit) replays
	# under two policies.
	n=$(grep -c ' A ' "$dir/py.trace")
	[ "$n" -gt 1000 ] || fail "--trace: $n swap-outs recorded"
	"$uswap" lab replay "$dir/py.trace" --arm default --arm lock=device --json \
		> "$dir/py.replay" 2>&1 || fail "lab replay of --trace: $(head -c 300 "$dir/py.replay")"
	grep -q '"name": "B"' "$dir/py.replay" || fail "lab replay: no arm B"
	# Forks while other threads allocate and map: the child's pager
	# threads must not inherit those threads' stacks (their TLS vectors
	# were allocated in the heap it swaps).
	cat > "$dir/pyt.py" <<'PY'
import hashlib, mmap, os, threading
stop = False
def churn():
    while not stop:
        b = bytearray(os.urandom(1 << 16)) * 40
        m = mmap.mmap(-1, 1 << 21); m[:5] = b"hello"; m.close()
ts = [threading.Thread(target=churn) for _ in range(2)]
for t in ts: t.start()
data = bytearray(os.urandom(1 << 20)) * 24
want = hashlib.sha256(data).hexdigest()
bad = 0
for i in range(4):
    pid = os.fork()
    if pid == 0:
        x = bytearray(1 << 24); x[-1] = 1
        os._exit(0 if hashlib.sha256(data).hexdigest() == want else 1)
    bad += os.waitpid(pid, 0)[1] != 0
stop = True
for t in ts: t.join()
ok = bad == 0 and hashlib.sha256(data).hexdigest() == want
print("python threads: ok" if ok else "python threads: MISMATCH")
PY
	run_watched 240 "$dir/pyt.out" "$uswap" run --limit 12M -- python3 "$dir/pyt.py" ||
		fail "python3 threads + fork (a hang ends with its threads described): $(cat "$dir/pyt.out")"
	grep -q "python threads: ok" "$dir/pyt.out" || fail "python3 threads: $(cat "$dir/pyt.out")"
	# Counters survive an exec (the image's line is written before it),
	# and a failed exec does not count them twice: the three runs swap
	# out the same 64 MiB through a 16M limit.
	cat > "$dir/pyx.py" <<'PY'
import os, sys
b = bytearray(os.urandom(1 << 20)) * 64
s = sum(b[::4096])
if sys.argv[1] == "exec":
    os.execv(sys.executable, [sys.executable, "-c", "pass"])
if sys.argv[1] == "fail":
    try:
        os.execv("/nonexistent/prog", ["prog"])
    except OSError:
        pass
PY
	# The interpreter itself (python3 on PATH may be a wrapper script
	# whose own processes would count).
	py=$(python3 -c 'import sys; print(sys.executable)')
	for how in none exec fail; do
		"$uswap" run --limit 16M --json "$dir/pyx.$how.json" -- "$py" "$dir/pyx.py" $how \
			> "$dir/pyx.out" 2>&1 || fail "python3 exec $how: $(cat "$dir/pyx.out")"
	done
	python3 - "$dir/pyx.none.json" "$dir/pyx.exec.json" "$dir/pyx.fail.json" <<'PY' ||
import json, sys
none, ex, fail = (json.load(open(p)) for p in sys.argv[1:])
out = [sum(j["swpout"]) for j in (none, ex, fail)]
assert out[0] > 10000, out
assert all(abs(o - out[0]) < out[0] / 4 for o in out), out
assert [j["processes"] for j in (none, ex, fail)] == [1, 1, 1]
PY
		fail "stats across an exec: $(cat "$dir"/pyx.*.json)"
fi

# 3b. Tiers: a small zram device first, an NBD export (nbdkit on a unix
# socket in $dir) below it; incompressible data fills zram and the rest
# goes to the export; every byte is checked (skipped without nbdkit, or
# in a build without the nbd device).
if command -v nbdkit > /dev/null && [ -x /usr/bin/python3 ] &&
	built_with "$uswap" nbd:nbd://127.0.0.1/x; then
	nbdkit -U "$dir/nbd.sock" -P "$dir/nbd.pid" memory 256M || fail "nbdkit did not start"
	trap 'kill $(cat "$dir/nbd.pid" 2>/dev/null) 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
	for i in $(seq 50); do [ -S "$dir/nbd.sock" ] && break; sleep 0.1; done
	"$uswap" run --limit 16M --device zram:8M:prio=10 \
		--device "nbd:nbd+unix:///?socket=$dir/nbd.sock:prio=0" --json "$dir/tier.json" -- \
		/usr/bin/python3 -c '
import hashlib, os, sys
data = os.urandom(40 << 20)
h = hashlib.sha256(data).digest()
more = os.urandom(40 << 20)           # pushes data out to swap
assert hashlib.sha256(data).digest() == h, "data changed on swap"
print("tier: ok", len(more))
sys.stdout.flush()
os._exit(0)                           # the stats, before Python frees it all' > "$dir/tier.out" 2>&1 || fail "tiers: $(cat "$dir/tier.out")"
	grep -q "^tier: ok" "$dir/tier.out" || fail "tiers: $(cat "$dir/tier.out")"
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
nbd = sum(x["used_kb"] for x in d["devices"] if x["name"].startswith("nbd"))
assert nbd > 8192, "the export below zram holds %d KiB: %s" % (nbd, d["devices"])' "$dir/tier.json" ||
		fail "tiers: $(cat "$dir/tier.json")"
	kill "$(cat "$dir/nbd.pid")"
fi

# 3c. An encrypted device under a real program: every byte back (skipped
# in a build without the crypt device).
if [ -x /usr/bin/python3 ] && built_with "$uswap" crypt:ram:128M; then
	"$uswap" run --limit 16M --device crypt:ram:128M --json "$dir/crypt.json" -- \
		/usr/bin/python3 -c '
import hashlib, os, sys
data = os.urandom(40 << 20)
h = hashlib.sha256(data).digest()
more = os.urandom(40 << 20)
assert hashlib.sha256(data).digest() == h, "data changed on swap"
print("crypt: ok", len(more))
sys.stdout.flush()
os._exit(0)' > "$dir/crypt.out" 2>&1 || fail "crypt: $(cat "$dir/crypt.out")"
	grep -q "^crypt: ok" "$dir/crypt.out" || fail "crypt: $(cat "$dir/crypt.out")"
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert sum(d["swpout"]) > 8192 and d["devices"][0]["name"].startswith("crypt:"), d' \
		"$dir/crypt.json" || fail "crypt: $(cat "$dir/crypt.json")"
fi

# 4. uswap status: a live program's state, owner-only, stale sockets removed.
if command -v python3 > /dev/null; then
	XDG_RUNTIME_DIR="$dir/xdg" "$uswap" run --limit 16M -- python3 -c '
import os, sys, time
d = bytearray(os.urandom(1 << 20)) * 48
print("ready", flush=True)
time.sleep(30)' > "$dir/live.out" 2>&1 &
	live=$!
	for i in $(seq 300); do grep -q ready "$dir/live.out" && break; sleep 0.2; done
	grep -q ready "$dir/live.out" || fail "status: the program did not start: $(cat "$dir/live.out")"
	XDG_RUNTIME_DIR="$dir/xdg" "$uswap" status --json > "$dir/st.json" ||
		fail "uswap status --json: exit $?"
	python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["version"] == 1, doc
a = doc["processes"]
assert len(a) == 1, a
o = a[0]
assert o["limit_bytes"] == 16 << 20 and len(o["devices"]) == 4, o
assert sum(o["swpout"]) > 0 and o["resident_bytes"] <= o["limit_bytes"], o
assert all(d["type"] == "partition" for d in o["devices"]), o
assert all(d["zram"]["algorithm"] == "lz4" and d["zram"]["orig_data_size"] >= 0 for d in o["devices"]), o
assert all(d["backend"]["comp_algorithm"] == "lz4" and d["backend"]["num_writes"] >= 0 for d in o["devices"]), o
' "$dir/st.json" || fail "uswap status --json: $(cat "$dir/st.json")"
	XDG_RUNTIME_DIR="$dir/xdg" "$uswap" status > "$dir/st.txt" || fail "uswap status: exit $?"
	grep -q "^  NAME  *TYPE  *SIZE  *USED  *PRIO" "$dir/st.txt" || fail "uswap status: $(cat "$dir/st.txt")"
	grep -q "^  NAME  *ALGORITHM  *DISKSIZE  *DATA  *COMPR  *TOTAL" "$dir/st.txt" ||
		fail "uswap status, zram: $(cat "$dir/st.txt")"
	# The tables (libsmartcols), with util-linux's options, agree with
	# the full state: sizes in bytes, the columns asked for, the JSON in
	# lsblk's shape.
	st() { XDG_RUNTIME_DIR="$dir/xdg" "$uswap" "$@"; }
	st status --show --bytes --noheadings --raw > "$dir/show.txt" || fail "status --show: exit $?"
	awk '$3 != "partition" || $4 != 1073737728 || $6 != -1 { bad = 1 } END { exit bad || NR != 4 }' \
		"$dir/show.txt" || fail "status --show -b -n -r: $(cat "$dir/show.txt")"
	st status --processes -o pid,LIMIT,resident --bytes -n -r > "$dir/proc.txt" || fail "status --processes: exit $?"
	awk '{ exit !(NF == 3 && $2 == 16777216 && $3 <= 16777216) }' "$dir/proc.txt" ||
		fail "status --processes -o: $(cat "$dir/proc.txt")"
	st status --zram --output-all --json > "$dir/zram.json" || fail "status --zram --json: exit $?"
	st swapon --show=NAME,USED --json > "$dir/sw.json" || fail "swapon --show --json: exit $?"
	python3 -c '
import json, sys
full = json.load(open(sys.argv[1]))["processes"][0]
z = json.load(open(sys.argv[2]))
assert z["version"] == 1 and len(z["zramdevices"]) == 4, z
for row in z["zramdevices"]:
    assert set(row) == {"pid", "name", "algorithm", "disksize", "data", "compr", "total",
                        "mem-limit", "mem-used", "zero-pages", "migrated"}, row
    assert row["algorithm"] == "lz4" and row["disksize"] == 1 << 30, row
sw = json.load(open(sys.argv[3]))
assert sw["version"] == 1 and [set(r) for r in sw["swapdevices"]] == [{"name", "used"}] * 4, sw
assert sum(r["used"] for r in sw["swapdevices"]) > 0, sw
assert sorted(r["name"] for r in sw["swapdevices"]) == sorted(d["name"] for d in full["devices"]), sw
' "$dir/st.json" "$dir/zram.json" "$dir/sw.json" || fail "tables: $(cat "$dir/zram.json" "$dir/sw.json")"
	st status --show -o NAME,NOSUCH > /dev/null 2> "$dir/col.err"
	[ $? = 2 ] && grep -q "unknown column 'NOSUCH'" "$dir/col.err" || fail "unknown column: $(cat "$dir/col.err")"
	[ "$(stat -c %a "$dir/xdg/uswap")" = 700 ] || fail "status dir not 0700"
	# A socket that never answers is skipped (rc 1, said), not waited for.
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
print("up", flush=True); c, _ = s.accept(); time.sleep(60)' "$dir/xdg/uswap/999999.sock" > "$dir/mute.out" &
	mute=$!
	for i in $(seq 50); do grep -q up "$dir/mute.out" && break; sleep 0.1; done
	XDG_RUNTIME_DIR="$dir/xdg" timeout 30 "$uswap" status --json > "$dir/st2.json" 2> "$dir/st2.err"
	rc=$?
	kill $mute 2> /dev/null; wait $mute 2> /dev/null; rm -f "$dir/xdg/uswap/999999.sock"
	[ $rc = 1 ] || fail "status with a mute socket: exit $rc, want 1"
	grep -q "did not answer" "$dir/st2.err" || fail "status, mute socket: $(cat "$dir/st2.err")"
	python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["processes"]) == 1' "$dir/st2.json" ||
		fail "status, mute socket: the live program was not listed"
	# A status directory that is a symlink is not read.
	mkdir -m 700 "$dir/xdg2" && ln -s "$dir/xdg/uswap" "$dir/xdg2/uswap"
	XDG_RUNTIME_DIR="$dir/xdg2" "$uswap" status > /dev/null 2> "$dir/st3.err"
	[ $? = 1 ] && grep -q "not a directory" "$dir/st3.err" || fail "symlinked status dir: $(cat "$dir/st3.err")"
	sock=$(ls "$dir/xdg/uswap"/*.sock | head -1)
	[ "$(stat -c %a "$sock")" = 600 ] || fail "status socket not 0600"
	# Killed: its socket stays until a status call finds nobody there.
	pid=$(basename "$sock" .sock)
	kill -KILL "$pid"
	wait $live
	XDG_RUNTIME_DIR="$dir/xdg" "$uswap" status "$pid" > /dev/null 2>&1
	[ $? = 1 ] || fail "status of a dead process: want 1"
	[ ! -e "$sock" ] || fail "a dead process's socket was not removed"
	for w in 0 1e20 x; do
		"$uswap" status --watch $w 2> /dev/null
		[ $? = 2 ] || fail "status --watch $w: want 2"
	done
fi

# 5. Exit status, SIGTERM, --json.
"$uswap" run -- sh -c 'exit 7'
[ $? = 7 ] || fail "exit status not passed through"
"$uswap" run -- sleep 30 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
[ $? = 143 ] || fail "SIGTERM: exit status, want 143"
# SIGUSR1 also goes to CMD (dies of it: 138), and the stats file goes.
# A TMPDIR of its own: other tests' runs make and remove stats files too.
mkdir "$dir/usr1"
stats_glob="$dir/usr1/uswap-run-stats-*"
before=$(ls $stats_glob 2> /dev/null | wc -l)
TMPDIR="$dir/usr1" "$uswap" run -- sleep 30 &
pid=$!
sleep 1
kill -USR1 $pid
wait $pid
[ $? = 138 ] || fail "SIGUSR1: exit status, want 138"
[ "$(ls $stats_glob 2> /dev/null | wc -l)" = "$before" ] ||
	fail "SIGUSR1 left a stats file"
# A closed stderr: the status is still CMD's, the JSON written, no file left.
"$uswap" run --stats --json "$dir/pipe.json" -- sh -c 'exit 5' 2>&1 | true
[ "$(sed -n 's/.*"exit_status": *\([0-9]*\).*/\1/p' "$dir/pipe.json")" = 5 ] ||
	fail "stderr closed: $(cat "$dir/pipe.json")"
[ "$(ls $stats_glob 2> /dev/null | wc -l)" = "$before" ] || fail "stderr closed: a stats file left"
# A program killed before any stats: the JSON says so, never stale.
"$uswap" run --json "$dir/pipe.json" -- sh -c 'kill -KILL $$'
[ $? = 137 ] || fail "SIGKILL: want 137"
grep -q '"exit_status": *137' "$dir/pipe.json" || fail "stale --json: $(cat "$dir/pipe.json")"
"$uswap" run --limit 16M --json "$dir/s.json" -- "$helper" alloc 48 > /dev/null ||
	fail "--json run"
for key in swpout swpout_fallback swpin resident_peak_bytes limit_bytes fault_us_p50 \
	   fault_us_p99 devices exit_status; do
	grep -q "\"$key\"" "$dir/s.json" || fail "--json lacks $key: $(cat "$dir/s.json")"
done

# 5b. --plot: resident heap, device use and swap rates over time.
"$uswap" run --limit 16M --plot "$dir/run.svg" -- "$helper" alloc 48 > /dev/null \
	2> "$dir/plot.err" || fail "--plot run: $(cat "$dir/plot.err")"
if command -v gnuplot > /dev/null; then
	for want in '<svg' 'resident memory' 'device use' 'swap traffic' 'zram'; do
		grep -q "$want" "$dir/run.svg" ||
			fail "--plot: no '$want' in the SVG: $(cat "$dir/plot.err")"
	done
else
	grep -q "gnuplot not found" "$dir/plot.err" || fail "--plot without gnuplot: no note"
fi
"$uswap" run --plot /nonexistent/dir/x.svg -- touch "$dir/started" 2> "$dir/plotbad.err"
[ $? = 2 ] || fail "--plot into a missing directory: want 2"
[ ! -e "$dir/started" ] || fail "--plot refused but CMD started"
# An SVG is not written into a file named for another format.
"$uswap" run --plot "$dir/x.png" -- touch "$dir/started" 2> "$dir/png.err"
[ $? = 2 ] && [ ! -e "$dir/x.png" ] && [ ! -e "$dir/started" ] && grep -q "SVG only" "$dir/png.err" ||
	fail "--plot x.png: $(cat "$dir/png.err")"
"$uswap" run --plot "$dir/short.svg" -- true 2> "$dir/short.err" || fail "--plot, short CMD"
[ ! -e "$dir/short.svg" ] || fail "--plot: an empty SVG left by a CMD shorter than a sample"
grep -q "nothing drawn" "$dir/short.err" || fail "--plot, short CMD: $(cat "$dir/short.err")"

# 5b. A CMD the agent cannot reach is said before it starts, and runs:
# statically linked (Debian's ldconfig is static-pie), set-user-ID to
# another user (secure execution: the loader ignores LD_PRELOAD), and a
# script whose interpreter is either. A dynamic one gets no warning.
reach() { # reach NAME CMD...: CMD runs (exit 0) and the warning names why
	name=$1; shift
	"$uswap" run --limit 16M -- "$@" > /dev/null 2> "$dir/reach.$name.err" ||
		fail "$name: exit $?: $(cat "$dir/reach.$name.err")"
	head -n 1 "$dir/reach.$name.err" | grep -q "^uswap run: warning: .*none of its memory will be swapped" ||
		fail "$name: no warning before it ran: $(cat "$dir/reach.$name.err")"
}
if [ -x /sbin/ldconfig ] && ! readelf -l /sbin/ldconfig 2>/dev/null | grep -q INTERP; then
	reach static /sbin/ldconfig -p
	grep -q "statically linked" "$dir/reach.static.err" || fail "static: $(cat "$dir/reach.static.err")"
	printf '#!/usr/bin/env ldconfig\n' > "$dir/envscript"
	chmod +x "$dir/envscript"
	reach script "$dir/envscript" -p
	grep -q "runs under .*ldconfig, which is statically linked" "$dir/reach.script.err" ||
		fail "script: $(cat "$dir/reach.script.err")"
fi
if [ "$(id -u)" = 0 ] && cp "$(command -v true)" "$dir/suid-true" && chown 65534 "$dir/suid-true" &&
	chmod 4755 "$dir/suid-true"; then
	reach suid "$dir/suid-true"
	grep -q "set-user-ID (owner uid 65534)" "$dir/reach.suid.err" || fail "suid: $(cat "$dir/reach.suid.err")"
fi
"$uswap" run --limit 16M -- true 2> "$dir/reach.dyn.err" || fail "true: exit $?"
! grep -q "warning" "$dir/reach.dyn.err" || fail "a dynamic CMD got a warning: $(cat "$dir/reach.dyn.err")"

# 6. Bad input: nothing starts.
"$uswap" run -- /nonexistent/cmd 2> "$dir/nf.err"
[ $? = 127 ] || fail "CMD not found: want 127"
grep -q "command not found" "$dir/nf.err" || fail "no message for CMD not found"
"$uswap" run --device zram:1Q -- true 2> /dev/null
[ $? = 2 ] || fail "bad --device: want 2"
"$uswap" run --limit 100K -- true 2> /dev/null
[ $? = 2 ] || fail "--limit 100K: want 2"
"$uswap" run --limit 8M 2> /dev/null
[ $? = 2 ] || fail "no CMD: want 2"
"$uswap" run --json -- touch "$dir/started" 2> "$dir/json.err"
[ $? = 2 ] || fail "--json with no FILE: want 2"
grep -q "needs a FILE" "$dir/json.err" || fail "--json --: $(cat "$dir/json.err")"
[ ! -e "$dir/started" ] && [ ! -e ./-- ] || fail "--json --: CMD started or a file named -- written"
# A FIFO that no one reads is refused at once (no wait forever); one with
# a reader gets the whole trace and JSON, the reader its end at the end.
mkfifo "$dir/fifo"
timeout 20 "$uswap" run --trace "$dir/fifo" -- touch "$dir/started" 2> "$dir/fifo.err"
[ $? = 2 ] || fail "--trace to an unread FIFO: want 2 ($(cat "$dir/fifo.err"))"
grep -q "no process reads" "$dir/fifo.err" || fail "unread FIFO: $(cat "$dir/fifo.err")"
[ ! -e "$dir/started" ] || fail "unread FIFO: CMD started"
for opt in --trace --json; do
	cat "$dir/fifo" > "$dir/fifo.out" &
	reader=$!
	timeout 60 "$uswap" run --limit 8M $opt "$dir/fifo" -- "$helper" alloc 24 > /dev/null 2>&1 ||
		{ kill $reader 2> /dev/null; fail "$opt to a read FIFO"; }
	wait $reader || fail "$opt: the FIFO's reader failed"
	case $opt in
	--trace) grep -q ' A ' "$dir/fifo.out" && "$uswap" lab replay "$dir/fifo.out" \
			--arm default --arm lock=device > /dev/null 2>&1 ;;
	--json) python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["swpin"] > 0' \
			"$dir/fifo.out" ;;
	esac || fail "$opt through a FIFO: $(head -c 300 "$dir/fifo.out")"
done
if command -v mkswap > /dev/null || [ -x /usr/sbin/mkswap ]; then
	head -c 16777216 /dev/zero > "$dir/s.img" && chmod 600 "$dir/s.img"
	PATH=$PATH:/usr/sbin mkswap -q "$dir/s.img" > /dev/null
	"$uswap" run --device "file:$dir/s.img" --device "file:$dir/s.img" -- \
		touch "$dir/started" 2> "$dir/twice.err"
	[ $? = 1 ] || fail "the same swap file twice: want 1"
	grep -q "in use" "$dir/twice.err" || fail "same file twice: $(cat "$dir/twice.err")"
	[ ! -e "$dir/started" ] || fail "CMD started although a device was refused"
	# A quote in the path: the agent's JSON stays JSON.
	cp "$dir/s.img" "$dir/q\"uote.img"
	"$uswap" run --limit 8M --device "file:$dir/q\"uote.img" --json "$dir/q.json" -- \
		"$helper" alloc 24 > /dev/null 2>&1 || fail "run on a quoted path"
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["processes"] == 1 and j["devices"][0]["name"].endswith("q\"uote.img"), j
' "$dir/q.json" || fail "quoted path: $(cat "$dir/q.json")"
fi
echo "ok: helper modes, realloc fallback, sort, python3 (and its --trace replayed), zram over nbd, crypt, exit status, SIGTERM, --json, --plot, bad input"
