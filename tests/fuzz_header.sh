#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: run the swap-header fuzzer (tests/fuzz_header.c) for a
# bounded time on a seed corpus made by the real util-linux mkswap: plain
# headers of several sizes, with a label and uuid, with a bad-page list
# (written here: mkswap -c cannot check a file), and one made for 64 KiB
# pages. Exits 77 (skip) without mkswap.
#
# Usage: fuzz_header.sh FUZZER SECONDS
#   USWAP_FUZZ_SECONDS overrides SECONDS. The corpus and anything the
#   fuzzer adds to it live in a temporary directory, removed at exit; a
#   crashing input is kept as fuzz-header-crash* in the working directory.
set -eu

fuzzer=$1
seconds=${USWAP_FUZZ_SECONDS:-$2}

mkswap=$(command -v mkswap 2> /dev/null || true)
[ -n "$mkswap" ] || [ ! -x /usr/sbin/mkswap ] || mkswap=/usr/sbin/mkswap
[ -n "$mkswap" ] || [ ! -x /sbin/mkswap ] || mkswap=/sbin/mkswap
if [ -z "$mkswap" ]; then
	echo "SKIP: util-linux mkswap not found"
	exit 77
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-fuzz-header.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
mkdir "$dir/corpus"

# seed NAME BYTES SEED_BYTES [MKSWAP_ARGS...]: a written-out file of BYTES,
# mkswap'd; its first SEED_BYTES go into the corpus.
seed() {
	name=$1 bytes=$2 keep=$3
	shift 3
	head -c "$bytes" /dev/zero > "$dir/$name"
	"$mkswap" -q "$@" "$dir/$name" > /dev/null 2>&1
	head -c "$keep" "$dir/$name" > "$dir/corpus/$name"
}

# u32 little-endian at byte OFFSET of FILE, from four octal escapes
put() {
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

seed plain4m 4194304 4096
seed odd 5255268 4096
seed labelled 8388608 4096 -L fuzz-label -U 01234567-89ab-cdef-0123-456789abcdef
seed page64k 8388608 65536 -p 65536
seed badpages 8388608 4096
put "$dir/corpus/badpages" 1032 '\003\000\000\000'
put "$dir/corpus/badpages" 1536 '\005\000\000\000'
put "$dir/corpus/badpages" 1540 '\021\000\000\000'
put "$dir/corpus/badpages" 1544 '\204\003\000\000'

# libFuzzer reports a crash with exit status 77 unless told otherwise, and
# 77 is what meson counts as a skip.
"$fuzzer" -max_total_time="$seconds" -error_exitcode=1 -timeout_exitcode=1 \
	-timeout=10 -print_final_stats=1 \
	-artifact_prefix="$PWD/fuzz-header-crash-" "$dir/corpus"
