#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-usemem.sh - the `uswap bench usemem` configurations that
# docs/pager.md reports: the `make run` workload (2 workers x 256 MiB
# under a 128 MiB limit, 4 default zram devices, GPL-3 text) with 4 KiB
# and 64 KiB folios. Each runs REPEAT times (default 5) with --json; the
# script prints the command and the median [min..max] of the figures that
# matter. The machine is shared and noisy: compare medians from one run
# of this script, never single runs.
#
# Usage: bench/run-usemem.sh [USWAP_BINARY [EXTRA_OPTIONS...]]
#   USWAP_BINARY   path of the uswap binary (default build/tools/uswap)
#   EXTRA_OPTIONS  added to every run, e.g. --handlers 2
#   REPEAT=N       runs per configuration (default 5)
#   DATA=FILE      page contents (default /usr/share/common-licenses/GPL-3)
#
# Needs python3 for the medians. Exit status: 0 if every run succeeded.
set -u

USWAP=${1:-build/tools/uswap}
[ $# -gt 0 ] && shift
REPEAT=${REPEAT:-5}
DATA=${DATA:-/usr/share/common-licenses/GPL-3}

if [ ! -x "$USWAP" ]; then
	echo "run-usemem.sh: '$USWAP' is not an executable; build first (make build) or pass its path" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "run-usemem.sh: needs python3" >&2; exit 2; }

status=0
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT

summarise() {
	python3 - "$tmp" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def fmt(key, nd=0, sub=None):
    v = [(r[sub] if sub else r)[key] for r in runs]
    return f"{key} {statistics.median(v):.{nd}f} [{min(v):.{nd}f}..{max(v):.{nd}f}]"
print("  " + fmt("throughput_kbps"), "|", fmt("write_kbps"), "|", fmt("read_kbps"))
print("  " + fmt("wall_s", 2), "|", fmt("user_s", 2), "|", fmt("sys_s", 2))
print("  " + fmt("fault_us_p50", 1), "|", fmt("fault_us_p99", 1), "|",
      fmt("reclaim_waits", 0, "pager_stats"))
PY
}

run() {
	echo "\$ $* --json   (x$REPEAT)"
	: >"$tmp"
	i=0
	while [ $i -lt "$REPEAT" ]; do
		if ! out=$("$@" --json 2>/dev/null); then
			echo "  run $i failed" >&2
			status=1
		else
			printf '%s\n' "$out" | tr -d '\n' >>"$tmp"
			echo >>"$tmp"
		fi
		i=$((i + 1))
	done
	[ -s "$tmp" ] && summarise
}

for order in 0 4; do
	run "$USWAP" bench usemem --workers 2 --size 256M --limit 128M --data "$DATA" \
		--order $order "$@"
done
exit $status
