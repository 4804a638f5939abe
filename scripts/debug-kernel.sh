#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# debug-kernel.sh - build (once, cached) the debug test kernel: Debian's
# linux-source-6.1 configured from `make tinyconfig` plus the fragment
# scripts/debug-kernel.config (lockdep, PROVE_RCU, KASAN, DEBUG_LIST,
# DEBUG_ATOMIC_SLEEP; everything the test VM needs built in).
#
# Usage:
#   scripts/debug-kernel.sh [-q] [-c]
#
#   -q   print nothing but the result lines (no build log on stderr)
#   -c   only look in the cache: print the result lines and exit 0 when the
#        kernel is built, exit 1 (building nothing) when it is not
#
# On success it prints, on stdout, shell-style lines:
#   release=KERNEL_RELEASE     e.g. 6.1.192-stldebug (`uname -r` in the VM)
#   objtree=DIR                object tree for out-of-tree modules:
#                              scripts/build-module.sh RELEASE DIR
#   vmlinux=FILE               the kernel's ELF image (symbols, for decoding
#                              reports: scripts/decode_stacktrace.sh)
#   image=FILE                 bzImage for STL_VM_KERNEL=FILE scripts/vm.sh
#                              (not the vmlinux: its PVH entry point runs
#                              KASAN-instrumented code before the shadow
#                              memory exists, and the guest triple-faults)
#   key=KEY                    the cache key
# so that `eval "$(scripts/debug-kernel.sh)"` sets these variables.
#
# Cache: build/debug-kernel/KEY/ (KEY = version of the linux-source-6.1
# package + a hash of the fragment and of BUILD_EPOCH below).  The source is
# extracted once per package version into build/debug-kernel/src-VERSION/.
# A finished build is marked by KEY/.stl-done; a second call then returns
# at once; a call after an interrupted build resumes it.  After the build the object files are deleted: what stays is
# what out-of-tree module builds need (.config, Makefile, Module.symvers,
# include/, arch/x86/include/generated, scripts/, tools/objtool) plus
# vmlinux, bzImage, System.map and modules.builtin*.  Older KEY directories are
# removed.  Override the cache directory with STL_DEBUG_KERNEL_DIR.
#
# The configuration is checked: every line of the fragment must appear in
# the final .config exactly as written ("# CONFIG_X is not set" lines may
# also be absent), since olddefconfig silently drops options whose
# dependencies are missing.  The build runs under `nice` with -j$(nproc)
# (override with STL_JOBS).  Build dependencies: scripts/deps.sh.

set -euo pipefail

SELF=$(realpath "${BASH_SOURCE[0]}")
SCRIPT_DIR=$(dirname "$SELF")
REPO_ROOT=$(dirname "$SCRIPT_DIR")
FRAGMENT=$SCRIPT_DIR/debug-kernel.config
SRC_PKG=linux-source-6.1
TARBALL=/usr/src/$SRC_PKG.tar.xz
CACHE=${STL_DEBUG_KERNEL_DIR:-$REPO_ROOT/build/debug-kernel}
JOBS=${STL_JOBS:-$(nproc)}
QUIET=0
CACHED_ONLY=0

log() { printf 'debug-kernel.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

while getopts qch opt; do
	case $opt in
	q) QUIET=1 ;;
	c) CACHED_ONLY=1 ;;
	h) sed -n '4,/^$/s/^# \{0,1\}//p' "$SELF"; exit 0 ;;
	*) echo "usage: debug-kernel.sh [-q] [-c]" >&2; exit 2 ;;
	esac
done

# Print the result lines for object tree $1.
report() {
	local obj=$1
	printf 'release=%s\n' "$(cat "$obj/include/config/kernel.release")"
	printf 'objtree=%s\n' "$obj"
	printf 'vmlinux=%s\n' "$obj/vmlinux"
	printf 'image=%s\n' "$obj/arch/x86/boot/bzImage"
	printf 'key=%s\n' "$KEY"
}

# Run a build step; its output goes to $LOG (and stderr unless -q).
step() {
	if [[ $QUIET == 1 ]]; then
		"$@" >>"$LOG" 2>&1
	else
		"$@" 2>&1 | tee -a "$LOG" >&2
	fi
}

# Check that every option of the fragment is in .config $1 as written.
check_config() {
	local cfg=$1 line sym got bad=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*)
			sym=${line%%=*}
			grep -qxF -- "$line" "$cfg" && continue
			;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }
			sym=${sym%% *}
			grep -qE "^$sym=" "$cfg" || continue
			;;
		*) continue ;;
		esac
		got=$(grep -E "^(# )?${sym}[= ]" "$cfg" || echo "(absent: a dependency is missing)")
		log "config: wanted '$line', got '$got'"
		bad=1
	done <"$FRAGMENT"
	return $bad
}

[[ -r $FRAGMENT ]] || die "no $FRAGMENT"
VERSION=$(dpkg-query -W -f='${Version}' "$SRC_PKG" 2>/dev/null) ||
	die "$SRC_PKG is not installed (run scripts/deps.sh)"
[[ -r $TARBALL ]] || die "no $TARBALL (run scripts/deps.sh)"
# Raise BUILD_EPOCH when a change of this script changes what it builds.
BUILD_EPOCH=1
HASH=$( (cat "$FRAGMENT"; echo "epoch $BUILD_EPOCH") | sha256sum | cut -c1-12)
KEY=$VERSION-$HASH
OBJ=$CACHE/$KEY
SRC=$CACHE/src-$VERSION/$SRC_PKG

if [[ -e $OBJ/.stl-done ]]; then
	report "$OBJ"
	exit 0
fi
[[ $CACHED_ONLY == 0 ]] || exit 1

mkdir -p "$CACHE"
# One build at a time (a second caller waits, then finds the cache).
exec 9>"$CACHE/.lock"
flock 9
if [[ -e $OBJ/.stl-done ]]; then
	report "$OBJ"
	exit 0
fi

for t in flex bison bc gcc make perl; do
	command -v "$t" >/dev/null 2>&1 || die "$t not found (run scripts/deps.sh)"
done
[[ -r /usr/include/libelf.h || -r /usr/include/elfutils/libelf.h ]] ||
	die "libelf headers not found (run scripts/deps.sh)"

start=$SECONDS
if [[ ! -e $SRC/.stl-extracted ]]; then
	log "extracting $TARBALL ($VERSION)"
	rm -rf "$CACHE/src-$VERSION"
	mkdir -p "$CACHE/src-$VERSION.tmp"
	tar -xJf "$TARBALL" -C "$CACHE/src-$VERSION.tmp"
	mv "$CACHE/src-$VERSION.tmp" "$CACHE/src-$VERSION"
	touch "$SRC/.stl-extracted"
	log "extracted in $((SECONDS - start)) s"
fi

# An interrupted build of the same KEY goes on where it stopped (kbuild
# only rebuilds what the unchanged .config does not cover).
mkdir -p "$OBJ"
LOG=$OBJ/build.log
: >"$LOG"
kmake() { nice -n 10 make -C "$SRC" O="$OBJ" "$@"; }

log "configuring $OBJ"
step kmake tinyconfig
step "$SRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config" "$FRAGMENT"
step kmake olddefconfig
check_config "$OBJ/.config" ||
	die "the final .config differs from $FRAGMENT (see above); fix the fragment"

log "building with -j$JOBS (log: $LOG)"
bstart=$SECONDS
if ! step kmake -j"$JOBS" bzImage modules; then
	[[ $QUIET == 1 ]] && tail -n 40 "$LOG" >&2
	die "kernel build failed (log: $LOG)"
fi
log "built in $((SECONDS - bstart)) s"
check_config "$OBJ/.config" || die "the .config changed during the build"

# Keep what out-of-tree module builds need; drop the object files.
find "$OBJ" \( -name '*.o' -o -name '*.a' -o -name '.*.cmd' -o -name '*.mod.c' \
	-o -name '*.mod' -o -name '.tmp_*' -o -name '*.o.d' \) -type f -delete
rm -f "$OBJ/vmlinux.o" "$OBJ"/.tmp_vmlinux* 2>/dev/null || true
touch "$OBJ/.stl-done"

# Older builds of this cache are of no further use.
for d in "$CACHE"/*/; do
	d=${d%/}
	case ${d##*/} in
	"$KEY" | "src-$VERSION") ;;
	*) rm -rf "$d" ;;
	esac
done
log "done in $((SECONDS - start)) s: $OBJ"
report "$OBJ"
