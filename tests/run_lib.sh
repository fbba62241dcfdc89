# SPDX-License-Identifier: MIT
#
# Description: what the `uswap run` test scripts share, sourced by them
# (run_cli.sh, run_attack.sh, run_discard.sh): fail(), and the probe that
# skips (exit 77, meson's skip) where `uswap run` cannot work here: no
# agent (a sanitizer build), or no kernel-fault userfaultfd.
#
# Usage: . run_lib.sh; run_probe USWAP DIR

fail() { echo "FAIL: $*"; exit 1; }

# run_probe USWAP DIR: `uswap run -- true` must work, or the script skips
# with the reason uswap gave; any other failure is one.
run_probe() {
	"$1" run --limit 8M -- true 2> "$2/probe.err"
	rc=$?
	[ $rc = 0 ] && return 0
	if grep -q "not permitted\|libuswap-preload.so not found\|no userfaultfd" "$2/probe.err"; then
		echo "SKIP: $(head -1 "$2/probe.err")"
		exit 77
	fi
	cat "$2/probe.err"
	fail "uswap run -- true exit $rc"
}
