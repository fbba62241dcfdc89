#!/bin/sh
# SPDX-License-Identifier: MIT
# lab_rfc_shape.sh USWAP - the RFC's A/B/C progression at the seed's
# defaults (per-priority-allocation-queues, 256 vCPUs, virtual time):
# B's system time per allocation at least 30 % above A's, C's within 5 %
# of A's, and every metric's direction the seed's (all_agree).
set -u
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM

if ! "$uswap" lab run per-priority-allocation-queues --json \
	> "$dir/out.json" 2> "$dir/err"; then
	echo "FAIL: lab run: $(head -n 3 "$dir/err")"
	exit 1
fi
# Each arm's sys_s, in the order A, B, C.
sys=$(grep -o '"sys_s": [0-9.e+-]*' "$dir/out.json" | awk '{ print $2 }')
set -- $sys
if [ $# -ne 3 ]; then
	echo "FAIL: expected 3 arms' sys_s, found $#: $sys"
	exit 1
fi
if ! awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN {
	printf "A %s s, B %s s (%+.1f %%), C %s s (%+.1f %%)\n",
	       a, b, (b / a - 1) * 100, c, (c / a - 1) * 100
	exit !(b > 1.3 * a && c < 1.05 * a && c > 0.95 * a) }'; then
	echo "FAIL: not the RFC's shape (B up by 30 % or more, C within 5 % of A)"
	exit 1
fi
if ! grep -q '"all_agree": true' "$dir/out.json"; then
	echo "FAIL: all_agree is not true"
	grep -o '"direction_agrees": [a-z]*' "$dir/out.json"
	exit 1
fi
echo "ok: B up, C back to A, all_agree"
