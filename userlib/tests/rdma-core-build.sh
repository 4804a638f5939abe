#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma-core-build.sh VERSION BUILDDIR: build one upstream rdma-core release
# (libibverbs and ibv_devices only) for compatibility tests, and print the
# path of its build tree (bin/ibv_devices, lib/libibverbs.so.1).
#
# The release tarball rdma-core-VERSION.tar.xz is looked up in
# $STL_RDMA_CORE_TARBALLS, else in ../shared/third_party/rdma-core/ next to
# the repository (for a git worktree: next to its main checkout too).  The tree is cached in BUILDDIR/rdma-core/rdma-core-VERSION;
# a finished build is reused.  Needs cmake, ninja-build, libnl-3-dev,
# libnl-route-3-dev, libudev-dev and libsystemd-dev (scripts/deps.sh).
# Exit status 77 (and a line on stderr) when the tarball or a tool is missing.
set -eu
ver=${1:?usage: rdma-core-build.sh VERSION BUILDDIR}
build=${2:?usage: rdma-core-build.sh VERSION BUILDDIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
tarball=
common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
for dir in ${STL_RDMA_CORE_TARBALLS:-} "$repo/../shared/third_party/rdma-core" \
	   ${common:+"$common/../../shared/third_party/rdma-core"}; do
	if [ -f "$dir/rdma-core-$ver.tar.xz" ]; then
		tarball=$dir/rdma-core-$ver.tar.xz
		break
	fi
done
mkdir -p "$build/rdma-core"
top=$(cd "$build/rdma-core" && pwd)
src=$top/rdma-core-$ver

if [ -x "$src/build/bin/ibv_devices" ] && [ -e "$src/build/.stellar-done" ]; then
	echo "$src/build"
	exit 0
fi
[ -n "$tarball" ] || {
	echo "rdma-core-build: no rdma-core-$ver.tar.xz in ../shared/third_party/rdma-core (set STL_RDMA_CORE_TARBALLS)" >&2
	exit 77
}
for t in cmake ninja; do
	command -v "$t" >/dev/null 2>&1 ||
		{ echo "rdma-core-build: $t not installed (scripts/deps.sh)" >&2; exit 77; }
done

rm -rf "$src"
tar -xJf "$tarball" -C "$top"
[ -d "$src" ] || { echo "rdma-core-build: $tarball has no rdma-core-$ver/" >&2; exit 1; }
mkdir "$src/build"
log=$src/build/stellar-build.log
if ! (cd "$src/build" &&
      cmake -GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 -DENABLE_STATIC=0 .. &&
      ninja ibv_devices) >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "rdma-core-build: building rdma-core $ver failed (log: $log)" >&2
	exit 1
fi
touch "$src/build/.stellar-done"
echo "$src/build"
