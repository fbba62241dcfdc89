#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: `uswap run` (said --daemon: the default mode), one swap
# subsystem for CMD's whole tree (issue "One swap subsystem per
# program", items 1, 3, 4, 5), with the
# default devices (four zram devices, whose pools are uswap run's memory):
#  - python holds 128 MiB of random bytes (nothing compresses) under
#    --limit 32M and checks them twice: the tree's anonymous RSS stays
#    under the limit x 1.1 + 16 MiB (in-process pools put it past 160 MiB),
#    and --stats says where the pools are;
#  - tests/fork_threads.py at --order 4 under --limit 8M, with --daemon and
#    in-process: 20 forks while threads run, each child checks the data;
#  - bash's command substitutions of a 26 MB variable at --order 4 under
#    --limit 8M, both modes: every one right;
#  - a multiprocessing fork pool of 4 workers with 48 MiB each, and a
#    forked child that checks its parent's 64 MiB, under --limit 64M: every
#    result right, one group for the tree, the tree's Pss_Anon (a page
#    shared after a fork counted once) within the bound, 95 % managed;
#  - bench/fork_swapped.py 512 under --limit 64M, with the zram devices
#    and with a swap file on tmpfs: the child shares the parent's swapped
#    slots, both verify, the parent's peak RSS stays under 160 MiB (the
#    fork does not read back), the tree's Pss_Anon within the bound;
#  - stress-ng --vm 4 --vm-bytes 128M --verify under --limit 128M (where
#    installed): verified, the tree within the same bound, 95 % managed;
#  - a process of the tree killed with SIGKILL while others run: the rest
#    goes on and checks its data;
#  - the program dup2()s onto the agent's descriptors and closes them all:
#    the agent's move or stay, nothing lands in the program's file;
#  - ninja -j2 building this project's library under --limit 16M: the same
#    library as without uswap, the tree within the bound, 95 % managed;
#  - uswap run killed with SIGKILL: a grandchild (not CMD, which the guard
#    ends) ends at once, saying why, instead of running on without its
#    swapped pages;
#  - uswap status while a tree runs: each process's line from uswap run,
#    the devices and counters on CMD's, no socket left after;
#  - a fork that fails (RLIMIT_NPROC): its record of the swapped-out
#    folios and their slots go at once (root only);
#  - 40 processes at once under a soft descriptor limit of 64 (raised for
#    uswap run), and under a hard one (refused, the run ends);
#  - a survivor of CMD that forks until --kill-after: its children served;
#  - --trace: the tree's stream, a forked child's folios too, every
#    folio swapped out an A record; uswap lab replay takes it.
# Skips (77) where `uswap run` cannot work here (see run_lib.sh).
#
# Usage: run_daemon.sh USWAP SOURCE_DIR
set -u
uswap=$1
src=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-daemon-test.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/run_lib.sh"
mkdir -m 700 "$dir/xdg"
export XDG_RUNTIME_DIR="$dir/xdg"
unset MALLOC_PERTURB_ # glibc would fill the agent's untouched tables
run_probe "$uswap" "$dir"
python=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }

# run NAME LIMIT CMD...: CMD under uswap run --daemon $opts, JSON in
# NAME.json; exit 0 within 300 s or fail with its output.
opts=
run() {
	name=$1 limit=$2
	shift 2
	# shellcheck disable=SC2086 # $opts: options and their values
	run_watched 300 "$dir/$name.out" "$uswap" run --daemon $opts --limit "$limit" --stats \
		--json "$dir/$name.json" -- "$@"
	rc=$?
	[ $rc = 0 ] || { cat "$dir/$name.out"; fail "$name: exit status $rc"; }
}

# facts NAME: the tree's anonymous RSS peak (MiB), the pools' peak in
# uswap run (MiB), the group's members and limit (MiB), the tree's
# proportional (Pss_Anon) peak (MiB), and the per mille of the tree's
# anonymous memory (its peak and what is on swap) that no pager managed.
facts() {
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
swap = sum(d["used_kb"] for d in j["devices"]) << 10
anon = j["tree"]["anon_rss_peak_bytes"] + swap
print(j["tree"]["anon_rss_peak_bytes"] >> 20, j.get("daemon_zram_pool_peak_bytes", 0) >> 20,
      j["group"]["members"], j["group"]["limit_bytes"] >> 20,
      j["tree"]["anon_pss_peak_bytes"] >> 20,
      j["unmanaged_anon_bytes_min"] * 1000 // max(anon, 1))' "$dir/$1.json" ||
		fail "$1: no statistics in the JSON: $(cat "$dir/$1.json")"
}

# await FILE PID WHAT OUT: wait (30 s at most) until the run PID has
# written FILE; else kill it and fail with its output.
await() {
	for _ in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	kill -KILL "$2"
	fail "$3: the program did not start: $(cat "$4")"
}

# bound NAME LIMIT_MIB PEAK_MIB
bound() {
	[ "$3" -le $(($2 * 11 / 10 + 16)) ] ||
		fail "$1: the tree's anonymous RSS peaked at $3 MiB under a $2 MiB limit"
}

# managed NAME PER_MILLE: at least 95 % of the tree's anonymous memory
# was managed (issue 23's must-show).
managed() {
	[ "$2" -le 50 ] || fail "$1: $2 per mille of the tree's anonymous memory unmanaged"
}

cat > "$dir/random.py" << 'EOF'
import hashlib, os
blocks = [os.urandom(1 << 20) for _ in range(128)]
sums = [hashlib.sha256(b).digest() for b in blocks]
for _ in range(2):
    for b, s in zip(blocks, sums):
        assert hashlib.sha256(b).digest() == s
print("random: ok")
EOF
run random 32M "$python" "$dir/random.py"
grep -q "^random: ok" "$dir/random.out" || fail "random: $(cat "$dir/random.out")"
set -- $(facts random)
echo "# random: tree peak $1 MiB, pools in uswap run $2 MiB"
bound random 32 "$1"
[ "$2" -ge 64 ] || fail "random: the pools in uswap run peaked at $2 MiB for 128 MiB swapped"
grep -q "zram pools up to .* in uswap run (--daemon), outside the tree" "$dir/random.out" ||
	fail "random: --stats does not say where the pools are: $(cat "$dir/random.out")"

# 64 KiB folios: the heap region starts at a folio, and a free()'s partial
# folios are zeroed in the process from uswap run (once a crash of it).
opts="--order 4"
run random4 32M "$python" "$dir/random.py"
opts=
grep -q "^random: ok" "$dir/random4.out" || fail "random --order 4: $(cat "$dir/random4.out")"
grep -q "^  swpout  *0, 0, 0, 0, [1-9]" "$dir/random4.out" ||
	fail "random --order 4: no 64 KiB folio swapped out: $(grep swpout "$dir/random4.out")"

# A fork while other threads run, in 64 KiB folios, with and without
# --daemon: the child's new pager threads read its heap before its pager
# has it, and the children saw zeros there until fork.c folded the
# parent's contents into those folios. With --daemon it also hung in CI
# (twice in some 800 runs): a fault of the parent during its fork waited
# for the fork's end (share.c serves them now).
opts="--order 4"
run forkthreads 8M "$python" "$src/tests/fork_threads.py"
opts=
grep -q "^fork with threads: ok" "$dir/forkthreads.out" ||
	fail "fork with threads (--daemon): $(cat "$dir/forkthreads.out")"
run_watched 300 "$dir/forkthreads1.out" "$uswap" run --in-process --order 4 --limit 8M -- \
	"$python" "$src/tests/fork_threads.py" ||
	fail "fork with threads (in-process): exit status $?: $(cat "$dir/forkthreads1.out")"
grep -q "^fork with threads: ok" "$dir/forkthreads1.out" ||
	fail "fork with threads (in-process): $(cat "$dir/forkthreads1.out")"

# bash's command substitutions of a 26 MB variable, both modes, 64 KiB
# folios: each fork's agent parsed /proc files with sscanf() before its
# pager had the heap, and sscanf() read bash's locale data there as zeros
# (the subshell crashed, the substitution was empty: 3 of 16 such runs
# on the old code; run_cli.sh's localefork shows it every time).
cat > "$dir/subst.sh" << 'EOF'
bad=0
for i in 1 2; do
	x=$(head -c 20000000 /dev/urandom | base64 -w0); h=$(printf %s "$x" | sha256sum)
	h2=$(printf %s "$x" | sha256sum)
	{ [ ${#h} = 67 ] && [ "$h" = "$h2" ]; } || bad=$((bad + 1))
done
if [ $bad = 0 ]; then
	echo "substitutions: ok"
else
	echo "substitutions: $bad of 2 wrong"
fi
EOF
for mode in daemon in-process; do
	daemon=--daemon
	[ $mode = in-process ] && daemon=--in-process
	run_watched 300 "$dir/subst-$mode.out" "$uswap" run $daemon --order 4 --limit 8M -- \
		bash "$dir/subst.sh"
	grep -q "^substitutions: ok" "$dir/subst-$mode.out" ||
		fail "bash substitutions ($mode): $(cat "$dir/subst-$mode.out")"
done

cat > "$dir/pool.py" << 'EOF'
import hashlib, multiprocessing as mp, os
def work(i):
    blocks = [os.urandom(1 << 20) for _ in range(48)]
    sums = [hashlib.sha256(b).digest() for b in blocks]
    return all(hashlib.sha256(b).digest() == s for b, s in zip(blocks, sums))
if __name__ == "__main__":
    big = os.urandom(64 << 20)
    want = hashlib.sha256(big).digest()
    with mp.get_context("fork").Pool(4) as p:
        assert all(p.map(work, range(8)))
    pid = os.fork()
    if pid == 0:
        os._exit(0 if hashlib.sha256(big).digest() == want else 3)
    assert os.waitpid(pid, 0)[1] == 0, "the forked child read other bytes"
    assert hashlib.sha256(big).digest() == want
    print("pool: ok")
EOF
run pool 64M "$python" "$dir/pool.py"
grep -q "^pool: ok" "$dir/pool.out" || fail "pool: $(cat "$dir/pool.out")"
set -- $(facts pool)
echo "# pool: tree peak $1 MiB (Pss_Anon: $5 MiB), $3 members of one group of $4 MiB"
[ "$3" -ge 6 ] || fail "pool: $3 processes joined the tree's group"
[ "$4" = 64 ] || fail "pool: the group's limit is $4 MiB"
managed pool "$6"
# The workers' RssAnon counts the parent's pages they share copy-on-write
# (251 to 341 MiB summed); what the tree holds, each page once, is its
# Pss_Anon sum, under the bound.
bound pool 64 "$5"

# A fork with 512 MiB swapped out: the child shares the parent's slots
# (uswap_pager_share_*()), nothing is read back; both verify and write
# their own pages. With the read-back the parent's peak RSS passed 512 MiB.
fork_run() {
	name=$1
	shift
	run_watched 300 "$dir/$name.out" "$uswap" run --daemon --limit 64M --json "$dir/$name.json" \
		"$@" -- "$python" "$src/bench/fork_swapped.py" 512
	rc=$?
	[ $rc = 0 ] || { cat "$dir/$name.out"; fail "$name: exit status $rc"; }
	grep -q "^verified 512 MiB in parent and child" "$dir/$name.out" ||
		fail "$name: $(cat "$dir/$name.out")"
	rss=$(sed -n 's/.*maxrss_mib=\([0-9]*\).*/\1/p' "$dir/$name.out")
	echo "# $name: $(grep -o 'fork_ms=[0-9.]*' "$dir/$name.out"), parent's peak RSS $rss MiB"
	[ -n "$rss" ] && [ "$rss" -le 160 ] ||
		fail "$name: the parent's peak RSS was ${rss:-?} MiB: the fork read its memory back"
	# The tree, parent and child together, each page once (docs/run.md
	# states the bound: the limit x 1.1 + 16 MiB).
	set -- $(facts "$name")
	echo "# $name: tree Pss_Anon peak $5 MiB"
	bound "$name" 64 "$5"
}
fork_run fork
# A file tier too: its slots are shared the same way (one instance).
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && command -v mkswap > /dev/null; then
	shm=$(mktemp -d /dev/shm/uswap-daemon.XXXXXX) || fail "mktemp in /dev/shm"
	trap 'rm -rf "$dir" "$shm"' EXIT INT TERM
	fallocate -l 1G "$shm/swap" && chmod 600 "$shm/swap" &&
		mkswap "$shm/swap" > /dev/null || fail "mkswap on tmpfs"
	fork_run fork-file --device "file:$shm/swap"
else
	echo "# no tmpfs at /dev/shm: the fork over a file tier not run"
fi

if command -v stress-ng > /dev/null; then
	run stress 128M stress-ng --vm 4 --vm-bytes 128M --verify -t 10
	grep -q "successful run completed" "$dir/stress.out" || fail "stress-ng: $(cat "$dir/stress.out")"
	set -- $(facts stress)
	echo "# stress-ng --vm 4: tree peak $1 MiB, $6 per mille unmanaged"
	bound stress 128 "$1"
	managed stress "$6"
else
	echo "# stress-ng: not installed, not run"
fi

# One process of the tree killed: the others go on.
cat > "$dir/kill.py" << 'EOF'
import hashlib, os, signal, time
mine = os.urandom(32 << 20)
want = hashlib.sha256(mine).digest()
pid = os.fork()
if pid == 0:
    theirs = os.urandom(32 << 20)
    while True:
        hashlib.sha256(theirs).digest()
time.sleep(1)
os.kill(pid, signal.SIGKILL)
assert os.waitpid(pid, 0)[1] == signal.SIGKILL
more = os.urandom(32 << 20)
assert hashlib.sha256(mine).digest() == want
print("kill: ok")
EOF
run kill 16M "$python" "$dir/kill.py"
grep -q "^kill: ok" "$dir/kill.out" || fail "kill: $(cat "$dir/kill.out")"

# The program takes our descriptors' numbers (dup2 onto each, then closes
# every descriptor): the agent's move or stay; nothing of ours is written
# to the program's file, and the data stays right.
cat > "$dir/fds.py" << 'EOF'
import hashlib, os
blocks = [os.urandom(1 << 20) for _ in range(64)]
sums = [hashlib.sha256(b).digest() for b in blocks]
theirs = []
for name in os.listdir("/proc/self/fd"):
    try:
        what = os.readlink("/proc/self/fd/" + name)
    except OSError:
        continue
    if int(name) > 2 and ("socket:" in what or "userfaultfd" in what):
        theirs.append(int(name))
out = os.open(os.environ["OUT"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
for fd in theirs:
    os.dup2(out, fd)
os.closerange(3, 1 << 16)
for _ in range(2):
    for b, s in zip(blocks, sums):
        assert hashlib.sha256(b).digest() == s
print("fds: ok", len(theirs))
EOF
OUT=$dir/fds.file run fds 16M "$python" "$dir/fds.py"
grep -q "^fds: ok 3" "$dir/fds.out" || fail "fds: $(cat "$dir/fds.out")"
[ ! -s "$dir/fds.file" ] || fail "fds: the agent wrote into the program's file"

# A parallel build of a real C project, this one's library (ninja -j2:
# the compilers, the linker, 200 processes): the same library as built
# without uswap, within the bound.
if command -v meson > /dev/null && command -v ninja > /dev/null &&
   meson setup "$dir/bld" "$src" --buildtype=release > "$dir/setup.out" 2>&1; then
	lib=$(ninja -C "$dir/bld" -t targets all | grep -o '^src/libuswap\.so\.[0-9.]*[0-9]' | head -1)
	[ -n "$lib" ] || fail "build: no library target"
	run build 16M ninja -C "$dir/bld" -j2 "$lib"
	want_sum=$(sha256sum < "$dir/bld/$lib")
	ninja -C "$dir/bld" -t clean > /dev/null
	ninja -C "$dir/bld" -j2 "$lib" > "$dir/build-plain.out" 2>&1 || fail "build without uswap"
	[ "$(sha256sum < "$dir/bld/$lib")" = "$want_sum" ] ||
		fail "build: the library built under uswap run differs"
	set -- $(facts build)
	echo "# build: tree peak $1 MiB, $6 per mille unmanaged, the same library"
	bound build 16 "$1"
	managed build "$6"
else
	echo "# build: meson or ninja missing, or setup failed: not run"
fi

# uswap run killed: its tree cannot run on without its swap.
cat > "$dir/hold.py" << 'EOF'
import os, time
blocks = [os.urandom(1 << 20) for _ in range(48)]
open(os.environ["READY"], "w").write(str(os.getpid()))
while True:
    for b in blocks:
        b[0]
    time.sleep(0.01)
EOF
READY=$dir/ready "$uswap" run --daemon --limit 16M -- sh -c "'$python' '$dir/hold.py' & wait" \
	> "$dir/hold.out" 2>&1 &
run_pid=$!
await "$dir/ready" $run_pid hold "$dir/hold.out"
py=$(cat "$dir/ready")
kill -KILL $run_pid
wait $run_pid 2>/dev/null
for _ in $(seq 50); do
	kill -0 "$py" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$py" 2>/dev/null; then
	kill -KILL "$py"
	fail "hold: the grandchild ran on 5 s after uswap run was killed"
fi
grep -Eq "is gone \((a zap request|a request|an answer|a zap answer): (closed|errno [0-9]+)\): the process ends" "$dir/hold.out" || fail "hold: no word of why: $(cat "$dir/hold.out")"
# Nothing of the killed uswap run stays in /dev/shm (its charge group is
# its own memory with --daemon).
ls /dev/shm/uswap-run-$run_pid-* > /dev/null 2>&1 &&
	fail "hold: the killed uswap run left $(ls /dev/shm/uswap-run-$run_pid-*)"
echo "# hold: the grandchild ended with uswap run"

# uswap status of a --daemon tree: uswap run publishes each process (a
# parent with 48 MiB under --limit 16M and its forked child); the tree's
# devices and counters are on CMD's line; nothing is left once it ends.
cat > "$dir/live.py" << 'EOF'
import os, sys, time
d = bytearray(os.urandom(1 << 20)) * 48
pid = os.fork()
if pid == 0:
    e = bytearray(os.urandom(1 << 20)) * 8
    open(sys.argv[1] + ".child", "w").write("ready")
    time.sleep(30)
    os._exit(0)
while not os.path.exists(sys.argv[1] + ".child"):
    time.sleep(0.05)
open(sys.argv[1], "w").write("%d %d" % (os.getpid(), pid))
os.waitpid(pid, 0)
EOF
"$uswap" run --daemon --limit 16M -- "$python" "$dir/live.py" "$dir/live.ready" > "$dir/live.out" 2>&1 &
live=$!
await "$dir/live.ready" $live status "$dir/live.out"
set -- $(cat "$dir/live.ready")
"$uswap" status --json > "$dir/live.json"
rc=$?
"$uswap" status --processes -o PID,LIMIT -b -n -r > "$dir/live.proc"
rc2=$?
kill -TERM "$2"
wait $live
[ $rc = 0 ] && [ $rc2 = 0 ] || fail "status under --daemon: exit $rc, $rc2: $(cat "$dir/live.json")"
python3 -c '
import json, sys
ps = {o["pid"]: o for o in json.load(open(sys.argv[1]))["processes"]}
parent, child = int(sys.argv[2]), int(sys.argv[3])
assert set(ps) == {parent, child}, ps.keys()
p, c = ps[parent], ps[child]
assert p["daemon"] and p["root"] and not c["root"], (p, c)
assert len(p["devices"]) == 4 and sum(p["swpout"]) > 0, p
assert c["devices"] == [] and c["cmd"].startswith("python"), c
assert p["limit_bytes"] == c["limit_bytes"] == 16 << 20, (p, c)
assert p["resident_bytes"] <= 16 << 20 and p["evictions"] > 0, p
' "$dir/live.json" "$1" "$2" || fail "status under --daemon: $(cat "$dir/live.json")"
[ "$(sort "$dir/live.proc")" = "$(printf '%s 16777216\n%s 16777216' "$1" "$2" | sort)" ] ||
	fail "status --processes under --daemon: $(cat "$dir/live.proc")"
ls "$XDG_RUNTIME_DIR/uswap/"*.sock > /dev/null 2>&1 &&
	fail "status: sockets left after the run: $(ls "$XDG_RUNTIME_DIR/uswap")"
echo "# status: both processes of the tree, the devices on CMD's"

# A fork that fails (RLIMIT_NPROC, as nobody): its record of the parent's
# swapped-out folios is dropped at once (FORK_DROP), not kept with its
# slots until the run ends: once the parent freed its 48 MiB the devices
# hold little (39 MiB on the old code). Root only (setuid).
if [ "$(id -u)" = 0 ]; then
	cat > "$dir/failfork.py" << 'EOF'
import os, resource, sys, time
data = [os.urandom(1 << 20) for _ in range(48)]
os.setgid(65534)
os.setuid(65534)
resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
try:
    if os.fork() == 0:
        os._exit(0)
    print("fork did not fail", flush=True)
    sys.exit(1)
except OSError as e:
    err = e.errno
del data
print("fork failed: errno %d" % err, flush=True)
time.sleep(60)
EOF
	"$uswap" run --daemon --limit 16M -- "$python" "$dir/failfork.py" > "$dir/failfork.out" \
		2> "$dir/failfork.err" &
	ff=$!
	await "$dir/failfork.out" $ff failfork "$dir/failfork.err"
	set -- $("$uswap" status --json | python3 -c '
import json, sys
o = json.load(sys.stdin)["processes"][0]
print(o["pid"], sum(d["used_kb"] for d in o["devices"]))')
	kill -TERM "${1:-0}"
	wait $ff
	grep -q "^fork failed: errno 11" "$dir/failfork.out" ||
		fail "failfork: $(cat "$dir/failfork.out" "$dir/failfork.err")"
	[ "${2:-99999}" -le 16384 ] ||
		fail "failfork: the devices hold ${2:-?} KiB after the failed fork and the free"
	echo "# failfork: $2 KiB on the devices after the failed fork's record went"
fi

# More processes than descriptors: 40 children at once need some 200 in
# uswap run. A soft limit of 64 is raised for uswap run and CMD keeps its
# own (on the old code CMD was killed: "the swap daemon is gone"); with a
# hard one of 64 the run must still end, saying why (its accept thread
# ended on EMFILE, and the rest of the tree waited for ever).
cat > "$dir/many.sh" << 'EOF'
for i in $(seq 40); do sleep 2 & done
wait
echo "soft $(ulimit -Sn)"
EOF
(ulimit -Sn 64 && run_watched 120 "$dir/many.out" "$uswap" run --daemon --limit 16M -- sh "$dir/many.sh")
rc=$?
[ $rc = 0 ] && grep -q "^soft 64" "$dir/many.out" || fail "soft 64: exit $rc: $(cat "$dir/many.out")"
grep -q "could not" "$dir/many.out" && fail "soft 64: a process was refused: $(cat "$dir/many.out")"
(ulimit -n 64 && run_watched 120 "$dir/many.out" "$uswap" run --daemon --limit 16M -- sh "$dir/many.sh")
rc=$?
[ $rc != 124 ] || fail "hard 64: the tree hung: $(cat "$dir/many.out")"
grep -q "could not" "$dir/many.out" || fail "hard 64: exit $rc, not said why: $(cat "$dir/many.out")"
echo "# nofile: raised for uswap run, CMD's kept; past the hard limit refused, the run ended ($rc)"

# A survivor of CMD that ignores SIGTERM and forks until --kill-after
# ends it: its children are still served (uswap run stopped accepting
# first, and each child, refused, was killed: a thousand lines in 2 s).
run_watched 60 "$dir/surv.out" "$uswap" run --daemon --limit 16M --kill-after 2 -- sh -c \
	'sh -c "trap \"\" TERM; while :; do /bin/true; sleep 0.2; done" & sleep 1; exit 3'
rc=$?
[ $rc = 3 ] || fail "survivor: exit $rc, not CMD's 3: $(head -5 "$dir/surv.out")"
grep -q "could not take" "$dir/surv.out" && fail "survivor: its children refused: $(head -5 "$dir/surv.out")"
echo "# survivor: its forks served until --kill-after"

# --trace records the tree's swap stream, a forked child's too: the
# agent recorded CMD's alone, and --daemon refused it (a usage error).
cat > "$dir/trace.py" << 'EOF'
import os
pid = os.fork()
data = os.urandom(24 << 20) # each process swaps its own 24 MiB out
assert len(bytes(data)) == 24 << 20
if pid:
    assert os.waitpid(pid, 0)[1] == 0
    print("trace: ok")
else:
    os._exit(0)
EOF
"$uswap" run --limit 8M --trace "$dir/t.trace" --json "$dir/t.json" -- "$python" "$dir/trace.py" \
	> "$dir/trace.out" 2>&1 || fail "--trace: $(cat "$dir/trace.out")"
grep -q "^trace: ok" "$dir/trace.out" || fail "--trace: $(cat "$dir/trace.out")"
"$python" -c '
import json, sys
j = json.load(open(sys.argv[1]))
out = sum(n << k for k, n in enumerate(j["swpout"]))
with open(sys.argv[2]) as f:
    assert f.readline() == "uswap-trace 1\n"
    a = sum(1 for line in f if line.split()[2:3] == ["A"])
# Every folio swapped out of either process is an A record.
assert out > 2 * (16 << 8) and a == sum(j["swpout"]), (out, a, j["swpout"])
print("# trace: %d folios swapped out, %d A records" % (out, a))' "$dir/t.json" "$dir/t.trace" ||
	fail "--trace: the records are not the tree's"
"$uswap" lab replay "$dir/t.trace" --arm default --arm lock=device > "$dir/replay.out" 2>&1 ||
	fail "lab replay of the tree's trace: $(cat "$dir/replay.out")"
echo "ok"
