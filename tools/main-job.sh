#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The main job (`make run`): an unmodified program, GNU sort, under
# `uswap run` with a working set several times the resident limit. The
# input is Debian's GPL-3 text repeated to ~46 MB with a key per line;
# sort -S 160M holds it all in its heap, which uswap keeps under LIMIT,
# swapping to 4 zram devices. Then sort checks its own output (sort -c)
# and the output must be byte-identical to sort's without uswap.
#
# Usage: main-job.sh USWAP [LIMIT [DATA]]
set -eu
uswap=$1
limit=${2:-24M}
data=${3:-/usr/share/common-licenses/GPL-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-main-job.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM

i=0
while [ $i -lt 1200 ]; do cat "$data"; i=$((i + 1)); done |
	awk '{ print NR % 9973, $0 }' > "$dir/in.txt"
echo "input: $(wc -c < "$dir/in.txt") bytes, $(wc -l < "$dir/in.txt") lines; limit $limit"
sort -S 160M "$dir/in.txt" > "$dir/ref.txt"
"$uswap" run --limit "$limit" --order 2 --stats -- sort -S 160M "$dir/in.txt" > "$dir/out.txt"
sort -c "$dir/out.txt"
cmp "$dir/ref.txt" "$dir/out.txt"
echo "ok: sort's output under uswap run is sorted and byte-identical to sort's without it"
