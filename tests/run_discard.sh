#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: a swap file used with :discard can be used again (issue 29,
# item 6). `uswap run`'s agent lives inside the program and never closes
# its devices, so whatever discard leaves in the file is what the next
# run finds: a punched hole would make it refuse the file ("file has
# holes"). Runs run_helper's discard mode (64 MiB mapped, written,
# checked and given back, several times, under an 8 MiB limit: the whole
# area discarded at open and freed clusters discarded as they empty) on
# the same mkswap'd file twice in a row, then its alloc mode once more;
# every run must exit 0 with its data verified, swap out to the file, say
# nothing of holes, and leave the file fully allocated.
# Skips (77) when the agent is not built (sanitizer builds) or kernel-fault
# userfaultfd is not permitted here, or mkswap is missing.
#
# Usage: run_discard.sh USWAP RUN_HELPER [DIR]
#   DIR: where the swap file is made (the build directory, so a disk
#   filesystem rather than tmpfs where possible); default $TMPDIR or /tmp.
set -u
uswap=$1
helper=$2
base=${3:-${MESON_BUILD_ROOT:-${TMPDIR:-/tmp}}}
dir=$(mktemp -d "$base/uswap-discard-test.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/run_lib.sh"
mkdir -m 700 "$dir/xdg"
export XDG_RUNTIME_DIR="$dir/xdg"

run_probe "$uswap" "$dir"
mkswap=$(command -v mkswap || command -v /sbin/mkswap || command -v /usr/sbin/mkswap) ||
	{ echo "SKIP: mkswap not found"; exit 77; }

# A swap file as swapon wants it: written in full (no holes), 0600, mkswap'd.
swap="$dir/swap.img"
(umask 077 && { fallocate -l 128M "$swap" 2> /dev/null ||
	dd if=/dev/zero of="$swap" bs=1M count=128 2> /dev/null; }) ||
	fail "cannot make a 128 MiB file in $dir"
"$mkswap" "$swap" > /dev/null 2>&1 || fail "mkswap $swap"
echo "# swap file $swap on $(stat -f -c %T "$dir")"

allocated() { # prints "ALLOCATED SIZE" in bytes
	stat -c '%b %B %s' "$1" | awk '{ print $1 * $2, $3 }'
}

n=0
for mode in discard discard alloc; do
	n=$((n + 1))
	"$uswap" run --limit 8M --json "$dir/$n.json" --device "file:$swap:discard" -- \
		"$helper" $mode 64 > "$dir/$n.out" 2> "$dir/$n.err"
	rc=$?
	[ $rc = 0 ] || { cat "$dir/$n.out" "$dir/$n.err"; fail "run $n ($mode): exit status $rc"; }
	! grep -qi "holes" "$dir/$n.out" "$dir/$n.err" ||
		fail "run $n ($mode): $(cat "$dir/$n.err")"
	grep -q "^$mode: ok" "$dir/$n.out" || fail "run $n ($mode): $(cat "$dir/$n.out")"
	swpout=$(python3 -c 'import json, sys; print(sum(json.load(open(sys.argv[1]))["swpout"]))' "$dir/$n.json") ||
		fail "run $n ($mode): no statistics: $(cat "$dir/$n.json")"
	[ "$swpout" -gt 1000 ] || fail "run $n ($mode): only $swpout swapped out: $(cat "$dir/$n.json")"
	set -- $(allocated "$swap")
	echo "# run $n ($mode): ok, $swpout swapped out, $1 of $2 bytes allocated after"
	# Noted here, failed after the loop: the next run's refusal says more.
	[ "$1" -ge "$2" ] || sparse="${sparse:-}run $n ($mode) left the file with holes ($1 of $2 bytes allocated); "
done
[ -z "${sparse:-}" ] || fail "$sparse"
echo "ok: $n runs on one :discard swap file"
