#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Description: the bash completion (completions/uswap, bash-completion's
# layout) completes uswap's commands, each command's options as its
# --help lists them (a benchmark's and a lab subcommand's too), device
# spec prefixes after --device, experiment names after `lab run`, and
# CMD after `uswap run ... --` as a command of its own.
# Skips (77) without bash-completion (Debian `bash-completion`).
#
# Usage: completion_check.sh USWAP_EXE COMPLETION_FILE
set -u
uswap=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
bc=/usr/share/bash-completion/bash_completion
[ -r "$bc" ] || { echo "SKIP: bash-completion is not installed"; exit 77; }
# shellcheck disable=SC1090
. "$bc"
# shellcheck disable=SC1090
. "$2"
fail() { echo "FAIL: $*"; exit 1; }

# complete WORDS...: COMPREPLY for the command line WORDS (the last one
# being completed), with uswap as this build's.
complete_words() {
	COMP_WORDS=("$uswap" "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_uswap "$uswap" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2> /dev/null
	printf '%s\n' "${COMPREPLY[@]}"
}

# expect WANT WORDS...: WANT among the completions.
expect() {
	local want=$1
	shift
	complete_words "$@" | grep -qx -- "$want" ||
		fail "'uswap $*' does not complete to $want: $(complete_words "$@" | tr '\n' ' ')"
}

expect run r
expect status s
expect bench be
expect --limit run --li
expect --kill-after run --limit 64M --ki
expect --no-move bench usemem --no-m
expect uffd bench u
expect --folios bench uffd --fo
expect --ranges bench zap --ra
expect zram: run --device z
expect replay lab re
expect rework-swap-allocator-locks lab run rework
expect --svg lab run rework-swap-allocator-locks --sv
expect sweep lab sw
expect improve-cluster-scan-strategy lab sweep improve
expect --seeds lab sweep improve-cluster-scan-strategy --see
expect --baseline bench alloc --base
expect sort run --limit 64M -- sor
echo "ok: commands, options, benchmarks, device specs, experiments and CMD complete"
