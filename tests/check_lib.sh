# SPDX-License-Identifier: MIT
#
# Description: what the CLI test scripts outside `uswap run` share,
# sourced by them (bench_alloc_scale.sh, lab_sweep.sh): fail(), and bad(),
# which checks that a command is a usage error (exit 2) naming the reason.
# The sourcing script sets $dir, its scratch directory.
#
# Usage: . check_lib.sh; bad WANT CMD...

fail() { echo "FAIL: $*"; exit 1; }

# bad WANT CMD...: CMD must exit 2 with WANT (a grep pattern) in its output.
bad() {
	want=$1
	shift
	"$@" > "$dir/bad.out" 2>&1
	rc=$?
	[ $rc = 2 ] || fail "$*: exit $rc, not 2: $(cat "$dir/bad.out")"
	grep -q "$want" "$dir/bad.out" || fail "$*: no '$want' in: $(cat "$dir/bad.out")"
}
