#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: `meson install` into a temporary DESTDIR puts the library
# (shared and static), the headers, uswap.pc, the CLI, uswap-bench and the
# preload agent in place; a small outside program then builds against the
# installed tree with nothing but `pkg-config --cflags --libs uswap`
# (shared) and `pkg-config --static` (the static archive), and both
# builds swap a page out and back in.
#
# Usage: install_check.sh BUILD_DIR SANITIZE (meson's b_sanitize: an
# outside program cannot link a sanitizer build's library, so those skip)
set -eu
build=$1
[ "${2:-none}" = none ] || { echo "SKIP: a $2 build's library needs the sanitizer runtime"; exit 77; }
dest=$(mktemp -d "${TMPDIR:-/tmp}/uswap-install.XXXXXX")
trap 'rm -rf "$dest"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
command -v pkg-config > /dev/null || { echo "SKIP: no pkg-config"; exit 77; }
command -v cc > /dev/null || { echo "SKIP: no C compiler"; exit 77; }

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet > "$dest/install.log" 2>&1 ||
	{ cat "$dest/install.log"; fail "meson install"; }
pc=$(find "$dest" -name uswap.pc | head -n1)
[ -n "$pc" ] || fail "no uswap.pc installed"
libdir=$(dirname "$(dirname "$pc")")
[ -e "$libdir/libuswap.a" ] || fail "libuswap.a not installed"
for h in uswap policy alloc dev swap pager status slots lab thread api; do
	[ -e "$(find "$dest" -path "*/include/uswap/$h.h" | head -n1)" ] || fail "uswap/$h.h not installed"
done
[ -x "$(find "$dest" -path '*/bin/uswap' | head -n1)" ] || fail "uswap not installed"
# The installed programs find the installed library under any prefix.
prefix=$(meson introspect "$build" --buildoptions |
	python3 -c 'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
if command -v readelf > /dev/null; then
	for f in bin/uswap bin/uswap-bench; do
		readelf -d "$(find "$dest" -path "*/$f" | head -n1)" | grep -q "R.*PATH.*\[$prefix/" ||
			fail "$f has no RUNPATH to $prefix's libdir"
	done
fi
[ -x "$(find "$dest" -path '*/bin/uswap-bench' | head -n1)" ] || fail "uswap-bench not installed"
[ -e "$(find "$dest" -path '*/share/bash-completion/completions/uswap' | head -n1)" ] ||
	fail "the bash completion is not installed"
# Hardened as Debian builds: full RELRO (BIND_NOW), a stack protector or
# fortified calls in each installed ELF file.
if command -v readelf > /dev/null; then
	for f in bin/uswap libuswap.so libuswap-preload.so; do
		elf=$(find "$dest" -path "*/$f" | head -n1)
		[ -n "$elf" ] || continue
		readelf -d "$elf" | grep -q "BIND_NOW\|FLAGS.*NOW" || fail "$f: no BIND_NOW"
		readelf -l "$elf" | grep -q GNU_RELRO || fail "$f: no RELRO"
		readelf -W --dyn-syms "$elf" | grep -q "__stack_chk_fail\|_chk" ||
			fail "$f: neither a stack protector nor fortified calls"
	done
fi
for page in man1/uswap.1 man1/uswap-run.1 man1/uswap-swapon.1 man1/uswap-status.1 \
	    man1/uswap-stress.1 man1/uswap-lab.1 man1/uswap-bench.1 man3/uswap.3 \
	    man3/uswap_create.3 man3/uswap_swapon.3 man3/uswap_backend_open.3 \
	    man3/uswap_alloc.3 man3/uswap_swap_out.3 man3/uswap_swapq_create.3 \
	    man3/uswap_pager_create.3 man5/uswap-spec.5 man5/uswap.conf.5; do
	[ -e "$(find "$dest" -path "*/man/$page" | head -n1)" ] || fail "$page not installed"
done
# `man 3 NAME` works for every function the library exports: its own page
# or a .so link to the page that documents it.
mandir=$(dirname "$(dirname "$(find "$dest" -path '*/man/man3/uswap.3' | head -n1)")")
lib=$(find "$dest" -name 'libuswap.so' | head -n1)
if command -v readelf > /dev/null; then
	n=0
	for sym in $(readelf -W --dyn-syms "$lib" | awk '$4 == "FUNC" && $7 != "UND" { sub(/@.*/, "", $8); print $8 }' |
			grep '^uswap_' | sort -u); do
		[ -e "$mandir/man3/$sym.3" ] || fail "man 3 $sym: no page installed"
		if command -v man > /dev/null; then
			MANWIDTH=80 man -M "$mandir" 3 "$sym" 2> /dev/null | grep -q "$sym" ||
				fail "man 3 $sym does not show $sym"
		fi
		n=$((n + 1))
	done
	[ $n -ge 50 ] || fail "only $n exported functions found in $lib"
	echo "# man 3 finds each of the $n exported functions"
fi

# The installed uswap loads only the installed agent: one planted where a
# source tree would have it ($prefix/src/agent, group-writable on Debian)
# is never preloaded. The planted library leaves a mark when loaded.
cat > "$dest/plant.c" <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void)
{
	const char *mark = getenv("PLANT_MARK");
	if (mark)
		close(open(mark, O_WRONLY | O_CREAT, 0600));
}
C
cc -shared -fPIC -o "$dest/planted.so" "$dest/plant.c" || fail "build the planted library"
bindir=$(dirname "$(find "$dest" -path '*/bin/uswap' | head -n1)")
mkdir -p "$bindir/../src/agent"
cp "$dest/planted.so" "$bindir/../src/agent/libuswap-preload.so"
PLANT_MARK="$dest/mark-installed" LD_LIBRARY_PATH="$libdir" \
	"$bindir/uswap" run --limit 8M -- true > "$dest/plant.out" 2>&1 || :
[ -e "$dest/mark-installed" ] && fail "the installed uswap preloaded $bindir/../src/agent's library"
grep -q "src/agent" "$dest/plant.out" && fail "the installed uswap looked in src/agent: $(cat "$dest/plant.out")"

# USWAP_PRELOAD is obeyed in a normal run (the control: this copy is not
# the build tree's, so nothing else would load), and ignored by a
# set-user-ID copy (secure execution, as ld.so ignores LD_PRELOAD).
if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
	mkdir -m 755 "$dest/suid"
	cp "$build/tools/uswap" "$dest/suid/uswap"
	PLANT_MARK="$dest/mark-env" USWAP_PRELOAD="$dest/planted.so" \
		"$dest/suid/uswap" run --limit 8M -- true > "$dest/env.out" 2>&1 || :
	if grep -q "not permitted\|no userfaultfd" "$dest/env.out"; then
		echo "note: no userfaultfd here: USWAP_PRELOAD checks skipped"
	else
		[ -e "$dest/mark-env" ] || fail "USWAP_PRELOAD was not preloaded: $(cat "$dest/env.out")"
		chown nobody "$dest/suid/uswap" && chmod 4755 "$dest/suid/uswap"
		if "$dest/suid/uswap" --version > /dev/null 2>&1; then
			PLANT_MARK="$dest/mark-suid" USWAP_PRELOAD="$dest/planted.so" \
				"$dest/suid/uswap" run --limit 8M -- true > "$dest/suid.out" 2>&1 || :
			[ -e "$dest/mark-suid" ] && fail "a set-user-ID uswap obeyed USWAP_PRELOAD"
			grep -q "USWAP_PRELOAD=" "$dest/suid.out" &&
				fail "a set-user-ID uswap read USWAP_PRELOAD: $(cat "$dest/suid.out")"
		else
			echo "note: a set-user-ID copy cannot run here (nosuid, or the build's library unreadable by nobody): skipped"
		fi
	fi
fi

cp "$(dirname "$0")/install_hello.c" "$dest/hello.c"
export PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$(dirname "$pc")"
# The shared build needs no other library's .pc (no -dev package of
# liblz4, libnbd ...): the public headers include none of them.
PKG_CONFIG_LIBDIR="$(dirname "$pc")" pkg-config --cflags --libs uswap > /dev/null 2>&1 ||
	fail "pkg-config --cflags --libs uswap needs other packages' .pc files: $(
		PKG_CONFIG_LIBDIR="$(dirname "$pc")" pkg-config --cflags --libs uswap 2>&1)"
# shellcheck disable=SC2046
cc -o "$dest/hello-shared" "$dest/hello.c" $(pkg-config --cflags --libs uswap) ||
	fail "build against the installed shared library"
LD_LIBRARY_PATH="$libdir" "$dest/hello-shared" | grep -q '^ok$' || fail "shared build run"
static_libs=$(pkg-config --static --libs uswap | sed 's/-luswap/-Wl,-Bstatic -luswap -Wl,-Bdynamic/')
# shellcheck disable=SC2086
cc -o "$dest/hello-static" "$dest/hello.c" $(pkg-config --cflags uswap) $static_libs ||
	fail "build against the installed static library"
ldd "$dest/hello-static" | grep -q libuswap && fail "the static build still needs libuswap.so"
"$dest/hello-static" | grep -q '^ok$' || fail "static build run"
# make uninstall (meson's uninstall, from the install log) removes it all.
ninja -C "$build" uninstall > "$dest/uninstall.log" 2>&1 || { cat "$dest/uninstall.log"; fail "uninstall"; }
left=$(find "$dest" -path '*/bin/uswap' -o -path '*/include/uswap/uswap.h' -o -name 'libuswap.so*' |
	head -n3)
[ -z "$left" ] || fail "uninstall left $left"
echo "ok: installed tree (hardened, no planted agent loaded), shared and static builds with pkg-config, uninstalled"
