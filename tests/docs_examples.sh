#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: the examples of the README and of the man pages run as the
# docs show them, and do what the docs say. A documented command that no
# longer works (an option renamed, a spec refused, a subcommand gone) is a
# defect, as a documented option no code takes is one (docs_check.sh).
#
# The examples: README.md's lines starting with "$ " in its ``` and ```sh
# blocks (not ```c); the lines of the .EX/.EE (or .nf/.fi) blocks under
# .SH EXAMPLES of man/*.1, roff escapes undone, "\" continuations joined;
# each spec of uswap-spec(5)'s EXAMPLES, as `uswap swapon --dry-run SPEC`;
# uswap.conf(5)'s EXAMPLES block, written as XDG_CONFIG_HOME/uswap.conf,
# which `uswap run --print-config` must read and accept.
#
# The rule, per example, for each simple command of its && || | ; list:
#  run  when its program is uswap (build/tools/uswap or uswap: the binary
#       under test) and its command is on this allow-list of quick,
#       rootless ones: --help, --version, any COMMAND --help, swapon
#       --dry-run, lab list|costs|run|replay, bench alloc|io|lock, stress;
#       where `uswap run -- true` (tried once) works: run (of sort,
#       python3 or the placeholder ./my-program), status and swapon
#       --show (while a `uswap run` of this script's runs); where
#       userfaultfd works: bench usemem|fault|uffd. Or when its program
#       is one of the helpers the examples put around uswap: dd, chmod and
#       mkswap on scratch files (below), echo, jq (if installed);
#  skip otherwise, counted and printed with the reason: another program
#       (make, sudo, apt-get, bench/*.sh, mkswap of a device), an nbd:
#       spec (it needs a server), status --watch or status PID (runs
#       until interrupted; a process of the reader's), bench io
#       --drop-caches (root), an absolute path that does not exist here.
# Scratch paths: /tmp/... and /var/... are where the examples make files
# (swap files, --make-file); they are rewritten into this script's
# temporary directory, so nothing outside it is written and /var needs no
# root. That directory is the examples' working directory, with
# placeholders for the files they assume: big.txt (text for sort),
# job.py (python touching 64 MiB), ./my-program (runs sort),
# bench/anchors/ (the source tree's, which bench alloc --baseline reads), and
# tmp/swap.img and var/swap.img (64 MiB mkswap'd files, as the swapon
# examples make them; the run example with file:/tmp/swap.img precedes
# the one that makes it).
# Shortened where an example's length is a knob of it, so the whole runs
# in minutes: stress --duration/-d over 3 s runs 3 s, --ops over 50000
# runs 50000 (not with --mutate: the mutation lands at a checkpoint of
# its full run); lab run without --scale gets --scale 0.05; bench io gets
# --repeat 1, --size 16M, and --file-size 64M with --make-file, unless
# given. The options are still parsed and the command run end to end;
# the figures are not the docs'.
# Expected: exit 0 within 120 s; 1 where the README's comment says "must
# fail"; with "|| echo WORD" the left side must fail, so WORD is printed.
# Besides: each option (--long or -x) of a uswap example, run or skipped,
# before a "--", is in the --help of its command (`uswap lab run --help`,
# `uswap bench io --help`, ...).
#
# Usage: docs_examples.sh USWAP_EXE SOURCE_DIR
set -u
set -f # examples hold glob characters (jq '.[]'); words are split, never globbed
uswap=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/uswap-docs-ex.XXXXXX")
work=$dir/work
bg=
# The `uswap run` that the status examples look at (status_program) ends
# with this script: uswap run ends its program on SIGTERM.
cleanup() {
	if [ -n "$bg" ]; then
		kill "$bg" 2> /dev/null
		wait "$bg"
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
tab=$(printf '\t')
mkdir -p "$work" "$dir/bin" "$dir/tmp" "$dir/var/tmp" "$dir/config" "$dir/conf5"
mkdir -m 700 "$dir/run"
: > "$dir/fails"
ln -s "$uswap" "$dir/bin/uswap"
# The examples' environment: uswap on PATH is the binary under test
# (mkswap is in sbin, not on a user's PATH); no uswap.conf of the user's
# changes what they do; the status sockets are this script's alone, so
# `uswap status` sees only its own program; stress's swap files and the
# run's temporary files stay in the temporary directory.
export PATH="$dir/bin:$PATH:/usr/sbin:/sbin"
export XDG_CONFIG_HOME="$dir/config"
export XDG_RUNTIME_DIR="$dir/run"
export TMPDIR="$dir/tmp"
have() { command -v "$1" > /dev/null 2>&1; }

# --- the examples, one a line: WHERE<TAB>KIND<TAB>TEXT -----------------

# README.md: "$ " lines of the shell blocks.
awk -v tab="$tab" '
	/^```/ { if (fence) fence = 0; else { fence = 1; lang = substr($0, 4) } ; next }
	fence && (lang == "" || lang == "sh") && /^\$ / {
		print "README.md:" NR tab "cmd" tab substr($0, 3)
	}' "$src/README.md" > "$dir/examples"

# ex_lines PAGE: the lines of PAGE's EXAMPLES blocks as LINE<TAB>TEXT,
# roff escapes undone and continuations joined (LINE: the first one's).
ex_lines() {
	awk -v tab="$tab" '
		/^\.SH / { on = ($0 ~ /^\.SH EXAMPLES?$/); blk = 0; next }
		on && /^\.(EX|nf)/ { blk = 1; next }
		on && /^\.(EE|fi)/ { blk = 0; next }
		on && blk {
			l = $0
			gsub(/\\-/, "-", l); gsub(/\\\(aq/, "\047", l)
			gsub(/\\\(dq/, "\"", l); gsub(/\\e/, "\\", l)
			if (cont != "") { sub(/^[ \t]+/, "", l); l = cont " " l }
			if (l ~ /\\$/) {
				if (cont == "") start = NR
				cont = l; sub(/[ \t]*\\$/, "", cont); next
			}
			print (cont != "" ? start : NR) tab l; cont = ""
		}' "$1"
}
set +f
for page in "$src"/man/*.1; do
	ex_lines "$page" | sed "s|^|man/${page##*/}:|; s|$tab|${tab}cmd$tab|" >> "$dir/examples"
done
set -f
ex_lines "$src/man/uswap-spec.5" |
	sed "s|^|man/uswap-spec.5:|; s|$tab|${tab}spec$tab|" >> "$dir/examples"
ex_lines "$src/man/uswap.conf.5" | cut -f2- > "$dir/conf5/uswap.conf"
[ -s "$dir/conf5/uswap.conf" ] &&
	printf 'man/uswap.conf.5:EXAMPLES%sconf%suswap run --print-config\n' "$tab" "$tab" >> "$dir/examples"

# --- what runs here ----------------------------------------------------

# `uswap run -- true` once: run and status examples need it; the
# benchmarks of the pager need userfaultfd (the agent, missing from a
# sanitizer build, they do not).
run_skip='' uffd_skip=''
"$uswap" run --limit 8M -- true > /dev/null 2> "$dir/probe.err" < /dev/null
rc=$?
if [ $rc != 0 ]; then
	if grep -q "not permitted\|no userfaultfd" "$dir/probe.err"; then
		run_skip="uswap run -- true: $(head -1 "$dir/probe.err" | sed 's/^uswap run: //')"
		uffd_skip=$run_skip
	elif grep -q "libuswap-preload.so not found" "$dir/probe.err"; then
		run_skip="uswap run -- true: libuswap-preload.so not found"
	else
		{ echo "FAIL: uswap run -- true: exit $rc"; head -5 "$dir/probe.err"; } >> "$dir/fails"
		run_skip="uswap run -- true failed"
	fi
fi
mkswap=
have mkswap && mkswap=mkswap

# The placeholders (see the header).
cd "$work" || exit 1
mkdir -p bench && cp -r "$src/bench/anchors" bench/
awk 'BEGIN { srand(1); for (i = 0; i < 50000; i++) print int(rand() * 1e9), "line", i }' > big.txt
printf '%s\n' 'data = bytearray(64 << 20)' 'for i in range(0, len(data), 4096):' \
	'    data[i] = 1' 'print(sum(data[::4096]))' > job.py
printf '%s\n' '#!/bin/sh' '# a placeholder for the reader'"'"'s program' \
	'exec sort big.txt > /dev/null' > my-program
chmod +x my-program
if [ -n "$mkswap" ]; then
	for f in "$dir/tmp/swap.img" "$dir/var/swap.img"; do
		dd if=/dev/zero of="$f" bs=1M count=64 2> /dev/null && chmod 600 "$f" &&
			mkswap "$f" > /dev/null 2>&1 || echo "FAIL: cannot make $f" >> "$dir/fails"
	done
fi

# split_cmds TEXT: its simple commands, one a line (&&, ||, |, ; split;
# quoted text, a spec's "|" for one, is not).
split_cmds() {
	printf '%s\n' "$1" | awk '{
		s = $0; out = ""; q = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (q != "") { if (c == q) q = ""; out = out c; continue }
			if (c == "\047" || c == "\"") q = c
			if (c == "|" || c == "&" || c == ";") {
				out = out "\n"
				while (substr(s, i + 1, 1) ~ /[|&]/) i++
				continue
			}
			out = out c
		}
		print out }'
}

# help_of WORDS...: the --help of the uswap command that WORDS (the words
# after "uswap") run, in a file; its name is in $help.
help_of() {
	set -- "$@" ""
	case $1 in
	-*|"") key=uswap; set -- ;;
	lab|bench) case $2 in -*|"") key=$1; set -- "$1" ;; *) key="$1-$2"; set -- "$1" "$2" ;; esac ;;
	*) key=$1; set -- "$1" ;;
	esac
	help="$dir/help.$key"
	cmd="uswap $*"
	[ -e "$help" ] || "$uswap" "$@" --help > "$help" 2>&1 < /dev/null
}

# check_opts WHERE uswap WORDS...: every option before "--" is in the help.
check_opts() {
	where=$1
	shift 2
	help_of "$@"
	for w in "$@"; do
		case $w in
		--) break ;;
		--*) o=${w%%=*} ;;
		-[a-zA-Z]) o=$w ;;
		*) continue ;;
		esac
		# a long option as docs_check.sh finds it; a short one as "-n," or "-n "
		case $o in
		--*) grep -q -- "$o\b" "$help" ;;
		*) grep -qE -- "(^|[ ,])$o([ ,]|$)" "$help" ;;
		esac || echo "FAIL: $where: $o is not in \`$cmd --help\`" >> "$dir/fails"
	done
}

# check_uswap WORDS...: sets $skip for a uswap command off the allow-list.
check_uswap() {
	for w in "$@"; do
		case $w in --help|-h) return ;; --) break ;; esac
	done
	case ${1-} in
	--version|"") ;;
	run)
		[ -n "$run_skip" ] && { skip=$run_skip; return; }
		while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
		case ${2-} in
		sort|./my-program) ;;
		python3) have python3 || skip="python3 is not installed" ;;
		*) skip="uswap run of ${2-nothing}: not one of sort, python3, ./my-program" ;;
		esac ;;
	status)
		[ -n "$run_skip" ] && { skip=$run_skip; return; }
		shift
		for w in "$@"; do
			case $w in
			--watch) skip="status --watch runs until interrupted"; return ;;
			[0-9]*) skip="status $w: a process of the reader's"; return ;;
			esac
		done ;;
	swapon)
		case " $* " in
		*" --dry-run "*) ;;
		*" --show"*) [ -n "$run_skip" ] && skip=$run_skip ;;
		*) skip="swapon without --dry-run or --show" ;;
		esac ;;
	lab) case ${2-} in list|costs|run|replay) ;; *) skip="lab ${2-}: not on the allow-list" ;; esac ;;
	bench)
		case ${2-} in
		alloc|io|lock) ;;
		usemem|fault|uffd) [ -n "$uffd_skip" ] && skip=$uffd_skip ;;
		*) skip="bench ${2-}: not on the allow-list" ;;
		esac
		case " $* " in *" --drop-caches "*) skip="--drop-caches needs root" ;; esac ;;
	stress) ;;
	*) skip="uswap $1: not on the allow-list" ;;
	esac
}

# check_cmd WORDS...: sets $skip for a simple command that does not run.
check_cmd() {
	prog=$1
	shift
	case $prog in
	uswap) check_uswap "$@" ;;
	dd|chmod|mkswap)
		[ "$prog" = mkswap ] && [ -z "$mkswap" ] && { skip="mkswap is not installed"; return; }
		# what they write must be a scratch file (dd reads if=)
		for w in "$@"; do
			case ${w#of=} in
			*/*) ;;
			*) continue ;;
			esac
			case ${w#of=} in
			if=*|"$dir"/*) ;;
			*) skip="$prog $w: not a scratch file"; return ;;
			esac
		done ;;
	echo) ;;
	jq) have jq || skip="jq is not installed" ;;
	*) skip="$prog is not uswap" ;;
	esac
}

# shrink WORDS...: the command with the shortenings of the header, in
# $short (rebuilt from its words, quotes gone), or empty: it runs as written.
shrink() {
	short="uswap"
	sub=$1
	case "$sub ${2-}" in
	"stress "*)
		case " $* " in *" --mutate "*) short=; return ;; esac
		prev=
		for w in "$@"; do
			case $prev in
			-d|--duration) [ "$w" -gt 3 ] 2> /dev/null && w=3 ;;
			--ops) [ "$w" -gt 50000 ] 2> /dev/null && w=50000 ;;
			esac
			short="$short $w"
			prev=$w
		done ;;
	"lab run")
		short="uswap $*"
		case " $* " in *" --scale "*) ;; *) short="$short --scale 0.05" ;; esac ;;
	"bench io")
		short="uswap $*"
		case " $* " in *" --repeat "*) ;; *) short="$short --repeat 1" ;; esac
		case " $* " in *" --size "*) ;; *) short="$short --size 16M" ;; esac
		case " $* " in *" --make-file "*)
			case " $* " in *" --file-size "*) ;; *) short="$short --file-size 64M" ;; esac ;;
		esac ;;
	*) short= ;;
	esac
}

# status_program: a `uswap run` that publishes its status until this
# script ends, for the status and swapon --show examples ("while it
# runs"); without one they have nothing to show and exit 1. Its program
# forks nothing: a process that comes and goes while status asks could
# leave a socket that does not answer. sleep's own end is a bound should
# the script be killed.
status_program() {
	[ -n "$bg" ] && return
	uswap run --limit 8M -- sleep 600 > "$dir/status-program.out" 2>&1 < /dev/null &
	bg=$!
	i=0
	until uswap status > /dev/null 2>&1 || [ $i -ge 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

nrun=0 nskip=0
while IFS=$tab read -r where kind orig; do
	skip='' expect=0
	case $kind in
	cmd)  text=$orig ;;
	spec) text="uswap swapon --dry-run '$orig'" ;;
	conf) # The conf page's file, not a command: read from its own directory.
	      nrun=$((nrun + 1))
	      echo "run:  $where: the file, by $orig"
	      if ! XDG_CONFIG_HOME="$dir/conf5" uswap run --print-config > "$dir/out" 2> "$dir/err" < /dev/null ||
		 ! grep -q "conf5/uswap.conf (read)" "$dir/out"; then
		      { echo "FAIL: $where: uswap run --print-config does not accept it"
			head -5 "$dir/err"; } >> "$dir/fails"
	      fi
	      continue ;;
	esac
	# A comment is the reader's, not the shell's; "must fail" is what the
	# example must do.
	case $text in *" # "*"must fail"*) expect=1 ;; esac
	text=$(printf '%s\n' "$text" | sed 's/[[:space:]]#.*//; s/[[:space:]]*$//')
	case $text in *"|| echo "*) expect="echo:${text##*|| echo }" ;; esac
	text=$(printf '%s\n' "$text" | sed "s#\(^\|[ ;|&]\)build/tools/uswap\b#\1uswap#g;
		s#\(^\|[ :=|'\"]\)/\(tmp\|var\)/#\1$dir/\2/#g")
	case $text in *nbd:*) skip="an nbd: device needs an NBD server" ;; esac
	case $text in *swap.img*) [ -z "$mkswap" ] && skip="mkswap is not installed for swap.img" ;; esac
	# Absolute paths outside the scratch directory must exist here.
	for p in $(printf '%s\n' "$text" | grep -o "\(^\|[ =:|']\)/[^ :|'\"]*" | sed 's/^[ =:|'"'"']//'); do
		case $p in "$dir"/*) continue ;; esac
		[ -e "$p" ] || { [ -z "$skip" ] && skip="needs $p"; }
	done
	ncmd=0 short=''
	split_cmds "$text" > "$dir/cmds"
	while read -r line; do
		# shellcheck disable=SC2046 # words, as the shell would split them
		set -- $(printf '%s\n' "$line" | tr -d "'\"")
		[ $# = 0 ] && continue
		ncmd=$((ncmd + 1))
		[ "$1" = uswap ] && check_opts "$where" "$@"
		[ -n "$skip" ] || check_cmd "$@"
		[ -n "$skip" ] || [ "$1 $ncmd" != "uswap 1" ] || { shift; shrink "$@"; }
	done < "$dir/cmds"
	if [ -n "$skip" ]; then
		nskip=$((nskip + 1))
		echo "skip: $where: $orig ($skip)"
		continue
	fi
	# A single uswap command runs shortened; a list runs as written.
	[ "$ncmd" = 1 ] && [ -n "$short" ] && text=$short
	case $text in *"uswap status"*|*"uswap swapon --show"*) status_program ;; esac
	nrun=$((nrun + 1))
	echo "run:  $where: $text"
	timeout -k 10 120 bash -o pipefail -c "$text" > "$dir/out" 2> "$dir/err" < /dev/null
	rc=$?
	case $expect in
	echo:*) [ $rc = 0 ] && grep -qx -- "${expect#echo:}" "$dir/out"; ok=$?
		want="the left side to fail (\"${expect#echo:}\" printed)" ;;
	*) [ $rc = "$expect" ]; ok=$?; want="exit $expect" ;;
	esac
	if [ $ok != 0 ]; then
		{ echo "FAIL: $where: $orig"
		  [ $rc = 124 ] && echo "  timed out (120 s)" || echo "  exit $rc, want $want; stderr:"
		  head -5 "$dir/err" | sed 's/^/  /'; } >> "$dir/fails"
	fi
done < "$dir/examples"

[ $((nrun + nskip)) -ge 40 ] ||
	echo "FAIL: only $((nrun + nskip)) examples found in the docs" >> "$dir/fails"
if [ -s "$dir/fails" ]; then
	cat "$dir/fails"
	exit 1
fi
echo "ok: $nrun examples run, $nskip skipped"
