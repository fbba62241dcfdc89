#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: uswap.conf(5). The user's file ($XDG_CONFIG_HOME/uswap.conf)
# sets uswap run's limit and devices, `--print-config` says each value and
# where it came from, the command line wins (its --device list replaces
# the file's whole), a real run uses the file's limit, and a bad file (a
# value --limit would refuse, an unknown key, a key outside [run], a line
# that is not INI) is a usage error (2) naming the file and line, before
# anything runs. The system file is not touched (it may exist here: the
# checks of built-in defaults are skipped then).
#
# Usage: run_config.sh USWAP
set -u
uswap=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-config-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
. "$(dirname "$0")/run_lib.sh"
export XDG_CONFIG_HOME="$dir/conf"
mkdir -p "$XDG_CONFIG_HOME"
conf="$XDG_CONFIG_HOME/uswap.conf"

"$uswap" run --print-config > "$dir/p0" || fail "--print-config: exit $?"
if grep -q "^# files: .* (none), " "$dir/p0"; then
	grep -q "^limit  *268435456  *built-in default" "$dir/p0" || fail "defaults: $(cat "$dir/p0")"
	[ "$(grep -c '^device  *zram:1G  *built-in default' "$dir/p0")" = 4 ] ||
		fail "default devices: $(cat "$dir/p0")"
	grep -q "^readahead  *32  *built-in default" "$dir/p0" || fail "readahead: $(cat "$dir/p0")"
	"$uswap" run --order 4 --print-config > "$dir/p4" || fail "--order 4 --print-config: exit $?"
	grep -q "^readahead  *0  *built-in default" "$dir/p4" ||
		fail "readahead at --order 4: $(cat "$dir/p4")"
fi

printf '; uswap.conf for the test\n[run]\nlimit = 48M\nreadahead = 8\ndevice = zram:256M\ndevice = ram:32M\n' > "$conf"
"$uswap" run --print-config > "$dir/p1" || fail "--print-config with a file: exit $?"
grep -q "^limit  *50331648  *user file ($conf)" "$dir/p1" || fail "limit from the file: $(cat "$dir/p1")"
grep -q "^readahead  *8  *user file" "$dir/p1" || fail "readahead from the file: $(cat "$dir/p1")"
[ "$(grep -c "^device .*user file" "$dir/p1")" = 2 ] || fail "devices from the file: $(cat "$dir/p1")"
grep -q "^device  *ram:32M " "$dir/p1" || fail "device list: $(cat "$dir/p1")"

"$uswap" run --limit 32M --device zram:128M --print-config > "$dir/p2" || fail "exit $?"
grep -q "^limit  *33554432  *command line" "$dir/p2" || fail "--limit over the file: $(cat "$dir/p2")"
[ "$(grep -c '^device' "$dir/p2")" = 1 ] || fail "--device must replace the file's list: $(cat "$dir/p2")"

# A real run takes the file's limit (needs the agent and userfaultfd).
if "$uswap" run -- true 2> "$dir/probe.err"; then
	"$uswap" run --json "$dir/run.json" -- true || fail "a run with the file: exit $?"
	grep -q '"limit_bytes": *50331648' "$dir/run.json" || fail "the run's limit: $(cat "$dir/run.json")"
else
	echo "# a real run is not possible here: $(head -n 1 "$dir/probe.err")"
fi

# bad LINES... WANT: the file holding LINES is refused (2), saying WANT.
bad() {
	want=$1
	shift
	printf '%s\n' "$@" > "$conf"
	"$uswap" run -- true > "$dir/out" 2> "$dir/err"
	rc=$?
	[ $rc = 2 ] || fail "'$*': exit $rc, want 2"
	grep -q "$want" "$dir/err" || fail "'$*': $(cat "$dir/err")"
	grep -q "$conf: line" "$dir/err" || fail "'$*' does not name the file and line: $(cat "$dir/err")"
}
bad "want a size" "[run]" "limit = lots"
bad "unknown setting 'colour'" "[run]" "colour = blue"
bad "want pages, 0..64" "[run]" "readahead = 65"
bad "outside the \[run\] section" "limit = 1G"
bad "not a line of an INI file" "[run"
bad "order" "[run]" "order = 9"
echo "ok: uswap.conf sets the defaults, the command line wins, bad files are refused"
