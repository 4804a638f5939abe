#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma-core-build.sh VERSION BUILDDIR: build one upstream rdma-core release
# for compatibility tests, and print the path of its build tree:
#   lib/libibverbs.so.1          libibverbs
#   lib/librxe-rdmavN.so         the stock rxe provider (N: that release's
#                                provider ABI, 34 up to v63, 64 from v64)
#   bin/ibv_devices, bin/ibv_devinfo, bin/ibv_{rc,uc,ud,srq}_pingpong
#                                linked to the tree's own libibverbs (RPATH)
# The build is not IN_PLACE: its libibverbs looks for providers under
# /usr/local, so load this release's librxe with
#   RDMAV_DRIVERS=TREE/lib/librxe    (libibverbs appends -rdmavN.so itself)
# Only the targets above are built (about a minute on two cores).
#
# The release tarball rdma-core-VERSION.tar.xz is looked up in
# $STL_RDMA_CORE_TARBALLS, else in ../shared/third_party/rdma-core/ next to
# the repository (for a git worktree: next to its main checkout too), and
# checked against the SHA256SUMS file beside it before it is unpacked.  The
# tree is cached in BUILDDIR/rdma-core/rdma-core-VERSION; a finished build of
# the same targets is reused (a cache built for fewer targets is rebuilt).
# Needs cmake, ninja-build, libnl-3-dev, libnl-route-3-dev, libudev-dev and
# libsystemd-dev (scripts/deps.sh).
# Exit status 77 (and a line on stderr) when the tarball or a tool is
# missing; 1 when the tarball does not match SHA256SUMS or the build fails.
#
# rdma-core-build.sh --list: the releases whose stock librxe the VM tests
# drive Stellar's ring devices with (tests/kernel/scenarios/55-rdma-core.sh,
# tests/kernel/vm-two.sh; scripts/check.sh builds them all first).
set -eu
RELEASES="39.0 44.0 50.0 56.0 64.0"
if [ "${1:-}" = --list ]; then
	echo "$RELEASES"
	exit 0
fi
ver=${1:?usage: rdma-core-build.sh VERSION BUILDDIR}
build=${2:?usage: rdma-core-build.sh VERSION BUILDDIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
# What a finished tree holds; a cache whose marker says otherwise is rebuilt.
PROGRAMS="ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong"
MARKER="stellar-cache 2: libibverbs rxe $PROGRAMS"

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
done_file=$src/build/.stellar-done

if [ -f "$done_file" ] && [ "$(cat "$done_file")" = "$MARKER" ]; then
	echo "$src/build"
	exit 0
fi
[ -n "$tarball" ] || {
	echo "rdma-core-build: no rdma-core-$ver.tar.xz in ../shared/third_party/rdma-core (set STL_RDMA_CORE_TARBALLS)" >&2
	exit 77
}
for t in cmake ninja sha256sum; do
	command -v "$t" >/dev/null 2>&1 ||
		{ echo "rdma-core-build: $t not installed (scripts/deps.sh)" >&2; exit 77; }
done

# The tarball must be the one SHA256SUMS names.
sums=$(dirname "$tarball")/SHA256SUMS
[ -f "$sums" ] || {
	echo "rdma-core-build: no SHA256SUMS beside $tarball: refusing to unpack it" >&2
	exit 1
}
want=$(awk -v f="rdma-core-$ver.tar.xz" '$2 == f || $2 == "*" f { print $1; exit }' "$sums")
[ -n "$want" ] || {
	echo "rdma-core-build: $sums has no line for rdma-core-$ver.tar.xz: refusing to unpack it" >&2
	exit 1
}
have=$(sha256sum "$tarball" | awk '{ print $1 }')
[ "$have" = "$want" ] || {
	echo "rdma-core-build: $tarball does not match $sums (sha256 $have, want $want): refusing to unpack it" >&2
	exit 1
}

t0=$(date +%s)
rm -rf "$src"
tar -xJf "$tarball" -C "$top"
[ -d "$src" ] || { echo "rdma-core-build: $tarball has no rdma-core-$ver/" >&2; exit 1; }
# The provider ABI of this release names the provider's ninja target
# (rxe-rdmavN) and file (lib/librxe-rdmavN.so).
pabi=$(sed -n 's/^ *set(IBVERBS_PABI_VERSION "\([0-9]*\)").*/\1/p' "$src/CMakeLists.txt")
[ -n "$pabi" ] || { echo "rdma-core-build: no IBVERBS_PABI_VERSION in rdma-core $ver" >&2; exit 1; }
mkdir "$src/build"
log=$src/build/stellar-build.log
# shellcheck disable=SC2086 # PROGRAMS: one target per word
if ! (cd "$src/build" &&
      cmake -GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 -DENABLE_STATIC=0 .. &&
      ninja $PROGRAMS "rxe-rdmav$pabi") >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "rdma-core-build: building rdma-core $ver failed (log: $log)" >&2
	exit 1
fi
for f in $PROGRAMS; do
	[ -x "$src/build/bin/$f" ] ||
		{ echo "rdma-core-build: rdma-core $ver: no bin/$f after the build" >&2; exit 1; }
done
[ -f "$src/build/lib/librxe-rdmav$pabi.so" ] ||
	{ echo "rdma-core-build: rdma-core $ver: no lib/librxe-rdmav$pabi.so after the build" >&2; exit 1; }
echo "$MARKER" >"$done_file"
echo "rdma-core-build: built rdma-core $ver in $(($(date +%s) - t0)) s ($src/build)" >&2
echo "$src/build"
