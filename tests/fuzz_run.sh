#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: run a libFuzzer target for a bounded time on a copy of a
# seed corpus, and print the final stats (executions, coverage, corpus
# size). A crashing input is kept as NAME-crash-* in the working directory.
#
# Usage: fuzz_run.sh FUZZER SECONDS SEED_DIR
#   USWAP_FUZZ_SECONDS overrides SECONDS.
set -eu

fuzzer=$1
seconds=${USWAP_FUZZ_SECONDS:-$2}
seeds=$3
name=$(basename "$fuzzer")

dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-$name.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
cp "$seeds"/* "$dir/"

# libFuzzer reports a crash with exit status 77 unless told otherwise, and
# 77 is what meson counts as a skip.
"$fuzzer" -max_total_time="$seconds" -error_exitcode=1 -timeout_exitcode=1 \
	-timeout=10 -print_final_stats=1 -max_len=8192 \
	-artifact_prefix="$PWD/$name-crash-" "$dir"
echo "corpus: $(ls "$dir" | wc -l) inputs"
