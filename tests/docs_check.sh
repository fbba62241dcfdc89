#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: every option the man pages and the README document exists.
# Each --option in the OPTIONS section of uswap-CMD(1) is in `uswap CMD
# --help` (uswap-lab(1): in `uswap lab run --help` or `uswap lab replay
# --help`; uswap-bench(1): each benchmark's section against `uswap bench
# NAME --help`), and each --option the README names is in some command's
# --help, or is another program's (meson's, pkg-config's). A documented
# option no code takes is a defect: renamed or removed, with the docs left.
#
# Usage: docs_check.sh USWAP_EXE SOURCE_DIR
set -u
uswap=$1
src=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-docs.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
: > "$dir/fails"
: > "$dir/checked"

# The --options of roff or markdown text on stdin (\- is a hyphen in roff),
# one a line.
opts() {
	sed 's/\\-/-/g' | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

# Lines of roff file $1 from the .SH (or .SS) heading $2 to the next one.
section() {
	awk -v want="$2" '
		/^\.S[HS] / { on = ($0 == want) ; next }
		on' "$1"
}

# check WHERE HELP_FILE < OPTIONS: every option must be in HELP_FILE.
check() {
	while read -r o; do
		echo "$o" >> "$dir/checked"
		grep -q -- "$o\b" "$2" || echo "FAIL: $1 documents $o, not in its --help" >> "$dir/fails"
	done
}

for cmd in run status stress swapon; do
	"$uswap" "$cmd" --help > "$dir/$cmd.help" 2>&1
	section "$src/man/uswap-$cmd.1" ".SH OPTIONS" | opts > "$dir/$cmd.opts"
	check "uswap-$cmd(1)" "$dir/$cmd.help" < "$dir/$cmd.opts"
done
{ "$uswap" lab --help; "$uswap" lab run --help; "$uswap" lab replay --help; } > "$dir/lab.help" 2>&1
section "$src/man/uswap-lab.1" ".SH OPTIONS" | opts > "$dir/lab.opts"
check "uswap-lab(1)" "$dir/lab.help" < "$dir/lab.opts"
for b in alloc io usemem fault lock uffd; do
	"$uswap" bench "$b" --help > "$dir/bench-$b.help" 2>&1
	section "$src/man/uswap-bench.1" ".SS $b" | opts > "$dir/bench-$b.opts"
	[ -s "$dir/bench-$b.opts" ] || echo "FAIL: uswap-bench(1) has no options for $b" >> "$dir/fails"
	check "uswap-bench(1), $b" "$dir/bench-$b.help" < "$dir/bench-$b.opts"
done

# The README, against every --help, and the other programs it shows.
{ cat "$dir"/*.help; "$uswap" --help; } > "$dir/all.help" 2>&1
printf '%s\n' --destdir --prefix --buildtype --cflags --libs --static >> "$dir/all.help"
opts < "$src/README.md" > "$dir/readme.opts"
check "README.md" "$dir/all.help" < "$dir/readme.opts"

n=$(wc -l < "$dir/checked")
[ "$n" -ge 100 ] || echo "FAIL: only $n options found in the docs" >> "$dir/fails"
if [ -s "$dir/fails" ]; then
	cat "$dir/fails"
	exit 1
fi
echo "ok: $n documented options, each in a --help"
