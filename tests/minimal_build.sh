#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: the build of an allocator-only user (issue 28, item 5):
# libuswap without its optional backends, configured with
# -Dnbd=disabled -Dcrypt=disabled -Dio_uring=disabled (and no tests) in a
# build directory of its own under $TMPDIR, removed at the end. Checks
# that it builds; that neither libuswap.so nor uswap-bench needs libnbd,
# libsodium or liburing, and uswap.pc's Libs.private names none of them;
# that a spec naming the nbd or crypt device is refused (non-zero exit)
# with a message saying this uswap was built without it and which meson
# option brings it; and that what is left works: zram, and a file device
# (a mkswap'd file in the same directory) through pread/pwrite, where
# `uswap bench io` writes and reads back every byte, one folio at a time
# and in batches.
# Prints an `ok: ...` line per check; exits 1 at the first failure.
#
# Usage: minimal_build.sh [SOURCE_DIR]   (default: this script's tree)
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-minimal.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
build=$dir/build
uswap=$build/tools/uswap

fail() { echo "FAIL: $*"; exit 1; }

meson setup "$build" "$src" -Dnbd=disabled -Dcrypt=disabled -Dio_uring=disabled \
	-Dtests=disabled > "$dir/setup.log" 2>&1 ||
	{ tail -n 30 "$dir/setup.log"; fail "meson setup of the minimal build"; }
ninja -C "$build" > "$dir/build.log" 2>&1 ||
	{ tail -n 30 "$dir/build.log"; fail "ninja of the minimal build"; }
echo "ok: built with -Dnbd=disabled -Dcrypt=disabled -Dio_uring=disabled -Dtests=disabled"

# What the programs and the library need: NEEDED entries, not ldd's
# resolution, so that a library reached through another one counts too.
for f in "$build/src/libuswap.so" "$build/bench/uswap-bench" "$uswap"; do
	[ -f "$f" ] || fail "$f was not built"
	needed=$(readelf -d "$f") || fail "readelf -d $f"
	if echo "$needed" | grep -E 'NEEDED.*(libnbd|libsodium|liburing)'; then
		fail "${f#"$build"/} needs a library of a backend left out"
	fi
done
ldd "$build/src/libuswap.so" | grep -E 'libnbd|libsodium|liburing' &&
	fail "libuswap.so loads a library of a backend left out"
echo "ok: libuswap.so, uswap and uswap-bench need neither libnbd, libsodium nor liburing"

pc=$(find "$build" -name uswap.pc | head -n1)
[ -n "$pc" ] || fail "no uswap.pc generated"
grep '^Libs.private:' "$pc" | grep -E -- '-l(nbd|sodium|uring)\b' &&
	fail "uswap.pc's Libs.private names a library left out"
echo "ok: uswap.pc's Libs.private names none of them"

# refused SPEC OPTION: `swapon --dry-run SPEC` fails and says why.
refused() {
	"$uswap" swapon --dry-run "$1" > "$dir/refused.out" 2>&1 &&
		fail "$1: accepted by a build without it: $(cat "$dir/refused.out")"
	grep -q "built without" "$dir/refused.out" && grep -q -- "-D$2=enabled" "$dir/refused.out" ||
		fail "$1: the refusal does not say why: $(cat "$dir/refused.out")"
	echo "ok: $1 refused: $(head -n1 "$dir/refused.out")"
}
refused nbd:nbd://127.0.0.1/x nbd
refused crypt:zram:64M crypt
refused "mirror::zram:8M|nbd:nbd+unix:///?socket=$dir/none.sock" nbd

"$uswap" swapon --dry-run zram:64M > "$dir/zram.out" 2>&1 ||
	fail "zram:64M refused: $(cat "$dir/zram.out")"
echo "ok: zram:64M accepted"

# A file device: a fully written file (the header check refuses holes),
# mkswap'd.
mkswap=$(command -v mkswap 2> /dev/null || true)
[ -n "$mkswap" ] || [ ! -x /usr/sbin/mkswap ] || mkswap=/usr/sbin/mkswap
[ -n "$mkswap" ] || [ ! -x /sbin/mkswap ] || mkswap=/sbin/mkswap
[ -n "$mkswap" ] || fail "util-linux mkswap not found"
swapfile=$dir/swap.img
dd if=/dev/zero of="$swapfile" bs=1M count=64 status=none || fail "dd $swapfile"
chmod 600 "$swapfile"
"$mkswap" -q "$swapfile" > /dev/null 2>&1 || fail "mkswap $swapfile"
"$uswap" swapon --dry-run "file:$swapfile" > "$dir/file.out" 2>&1 ||
	fail "file:$swapfile refused: $(cat "$dir/file.out")"
echo "ok: file:$swapfile accepted"
for batch in 1 16; do
	"$uswap" bench io --device "file:$swapfile" --orders 0,2 --threads 1,2 \
		--size 16M --repeat 1 --batch $batch --json > "$dir/bench.json" 2> "$dir/bench.err" ||
		fail "bench io on file:$swapfile, --batch $batch: $(cat "$dir/bench.err" "$dir/bench.json")"
	grep -q '"kind": *"file"' "$dir/bench.json" ||
		fail "bench io --batch $batch: no file row: $(cat "$dir/bench.json")"
done
echo "ok: file device (pread/pwrite): bench io wrote and read back every byte, batches of 1 and 16"
