#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Description: the layers call downward only (docs/architecture.md,
# "Layers"). Every quoted #include "dir/file.h" in a layer's directory
# must name its own layer or one below it:
#
#   util   <- alloc <- swap <- pager (public API only) <- lab <- tools
#                                   pager <- agent (public API only)
#   util   <- dev   <- swap
#
# alloc/ and dev/ never include each other (the swap layer joins them and
# installs the hooks alloc/ needs); the pager and the tools use the
# public headers (<uswap/...>), the tools also the lab's. Exits 1 naming
# each include that crosses the wrong way.
#
# Usage: check_layers.sh SOURCE_ROOT
set -u
root=$1
status=0

# allowed LAYER_DIR DIRS...: quoted includes "D/..." with D outside DIRS
# fail; includes without a directory are the layer's own.
allowed() {
	dir=$1
	shift
	for f in "$root/$dir"/*.c "$root/$dir"/*.h; do
		[ -e "$f" ] || continue
		for inc in $(sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
			case $inc in
			*/*) top=${inc%%/*} ;;
			*) continue ;;
			esac
			ok=0
			for d in "$@"; do
				[ "$top" = "$d" ] && ok=1
			done
			if [ $ok = 0 ]; then
				echo "layer violation: ${f#$root/} includes \"$inc\" (allowed: $*)"
				status=1
			fi
		done
	done
}

allowed src/util util
allowed src/alloc alloc util
allowed src/dev dev util
allowed src/swap swap alloc dev util
allowed src/pager pager util
allowed src/lab lab util
allowed src/agent agent
allowed tools lab
[ -d "$root/bench" ] && allowed bench lab

[ $status = 0 ] && echo "ok: every include goes down a layer"
exit $status
