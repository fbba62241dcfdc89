#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: every man page in man/ renders with man -l and no warning
# from groff (a malformed macro, a line that cannot be set).
#
# Usage: man_check.sh MAN_DIR
set -u
dir=$1
command -v man > /dev/null || { echo "SKIP: man (man-db) is not installed"; exit 77; }
status=0
for page in "$dir"/*.[0-9]; do
	out=$(MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 > /dev/null)
	if [ -n "$out" ]; then
		echo "$page: $out"
		status=1
	elif [ -z "$(MANWIDTH=80 man -E UTF-8 -l "$page" 2> /dev/null | head -n 3)" ]; then
		echo "$page: renders empty"
		status=1
	fi
done
[ $status = 0 ] && echo "ok: $(ls "$dir"/*.[0-9] | wc -l) pages"
exit $status
