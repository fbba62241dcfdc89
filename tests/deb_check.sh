#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: the Debian packages (debian/) build with dpkg-buildpackage
# from a copy of the tree, lintian finds no error in them, they install
# with apt-get, and what they installed works: the packaged `uswap run`
# (which must preload the packaged agent) swaps GNU sort under a limit and
# sort's output is byte-identical to sort's alone; an outside program
# builds against libuswap-dev with pkg-config and swaps a page out and
# back in. The packages are purged at the end.
#
# It installs into the system, so it runs only as root on Debian with apt
# (CI: .ci/run, `make test-deb`); elsewhere it skips (exit 77).
#
# Usage: deb_check.sh [SOURCE_DIR]
set -eu
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: installs packages: root only"; exit 77; }
command -v apt-get > /dev/null && command -v dpkg-buildpackage > /dev/null ||
	{ echo "SKIP: not a Debian system with dpkg-dev"; exit 77; }
export DEBIAN_FRONTEND=noninteractive
need=""
for p in debhelper lintian; do
	dpkg-query -W -f='${Status}' $p 2> /dev/null | grep -q 'ok installed' || need="$need $p"
done
if [ -n "$need" ]; then
	apt-get install -y --no-install-recommends $need > /dev/null ||
		{ apt-get update > /dev/null && apt-get install -y --no-install-recommends $need > /dev/null; } ||
		fail "cannot install$need"
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-deb.XXXXXX")
cleanup() {
	apt-get purge -y uswap libuswap0 libuswap-dev > /dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# A copy of the tree as git has it (no build directories).
mkdir "$dir/uswap"
(cd "$src" && git ls-files -co --exclude-standard | tar -cf - -T -) | tar -xf - -C "$dir/uswap"
(cd "$dir/uswap" && dpkg-buildpackage -b -us -uc > "$dir/build.log" 2>&1) ||
	{ tail -n 40 "$dir/build.log"; fail "dpkg-buildpackage"; }
lintian --fail-on error "$dir"/uswap_*.changes > "$dir/lintian.log" 2>&1 ||
	{ cat "$dir/lintian.log"; fail "lintian reports errors"; }
echo "# lintian: $(grep -c '^[EW]:' "$dir/lintian.log") warnings or errors"
apt-get install -y "$dir"/uswap_*.deb "$dir"/libuswap0_*.deb "$dir"/libuswap-dev_*.deb \
	> "$dir/install.log" 2>&1 || { cat "$dir/install.log"; fail "apt-get install"; }
agent=$(dpkg -L uswap | grep '/uswap/libuswap-preload.so$') || fail "no agent in the uswap package"
dpkg -L libuswap0 | grep -q 'libuswap.so.0$' || fail "no libuswap.so.0 in libuswap0"

# The packaged uswap on a real program, under a limit well below its heap.
data=/usr/share/common-licenses/GPL-3
[ -r "$data" ] || fail "$data missing"
i=0 # ~42 MB of text, as the main job (tools/main-job.sh)
while [ $i -lt 1200 ]; do cat "$data"; i=$((i + 1)); done > "$dir/in.txt"
sort -S 160M "$dir/in.txt" > "$dir/want.txt"
if /usr/bin/uswap run --limit 24M --json "$dir/run.json" -- sort -S 160M "$dir/in.txt" \
	> "$dir/got.txt" 2> "$dir/run.err"; then
	cmp -s "$dir/want.txt" "$dir/got.txt" || fail "uswap run sort: output differs"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert sum(d["swpout"]) > 1000, d["swpout"]' "$dir/run.json" || fail "uswap run sort: nothing swapped"
	echo "# uswap run (packaged, agent $agent): sort output identical, swapped"
elif grep -q "userfaultfd" "$dir/run.err"; then
	echo "# uswap run: $(head -n 1 "$dir/run.err") (not run)"
else
	cat "$dir/run.err"
	fail "the packaged uswap run failed"
fi

# An outside program against libuswap-dev.
cp "$src/tests/install_hello.c" "$dir/hello.c"
# shellcheck disable=SC2046
cc -o "$dir/hello" "$dir/hello.c" $(pkg-config --cflags --libs uswap) ||
	fail "build against libuswap-dev"
[ "$("$dir/hello")" = ok ] || fail "the outside program"
echo "ok: packages built, lintian-clean, installed; uswap run and libuswap-dev work from them"
