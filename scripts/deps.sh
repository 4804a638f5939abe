#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# deps.sh - install the Debian 12 packages Stellar needs to build and test.
#
# Usage:
#   scripts/deps.sh               install whatever is missing (no-op when complete)
#   scripts/deps.sh --check       list missing packages; exit 1 if any are missing
#   scripts/deps.sh --checkpatch  make sure checkpatch.pl is extracted from the
#                                 kernel source package; print its path on stdout
#   scripts/deps.sh --list        print the package list
#
# Idempotent: when every package is already installed (checked with dpkg-query)
# it returns at once, without touching the network ("apt-get update" only runs
# when something is missing).  Everything except the --checkpatch/--list
# result goes to stderr, so the printed path can be captured with $(...).
#
# checkpatch.pl is not shipped in the kernel headers; it lives in the
# linux-source-X.Y tarball.  --checkpatch extracts only checkpatch.pl,
# spelling.txt and const_structs.checkpatch (checkpatch.pl looks for the two
# data files next to itself) into build/tools/checkpatch/ of the repository,
# once.  Override the cache directory with STL_TOOLS_DIR.

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
TOOLS_DIR=${STL_TOOLS_DIR:-$REPO_ROOT/build/tools}

# Kernel source series whose checkpatch.pl we use; it matches the kernel that
# linux-image-amd64 installs on Debian 12.
KSRC_SERIES=6.1

PACKAGES=(
	# test machine: QEMU + the distribution kernel booted inside it
	qemu-system-x86 linux-image-amd64 linux-headers-amd64
	busybox-static kmod iproute2 cpio xz-utils
	# RDMA userspace: libraries, headers, providers (rxe) and test clients
	rdma-core libibverbs-dev librdmacm-dev ibverbs-utils ibverbs-providers
	perftest rdmacm-utils python3-pyverbs
	# other rdma-core releases, built from source for provider compatibility
	# tests (userlib/tests/rdma-core-build.sh)
	cmake ninja-build libnl-3-dev libnl-route-3-dev libudev-dev libsystemd-dev
	# toolchain and static checks
	pkg-config gcc binutils make bc sparse "linux-source-$KSRC_SERIES"
	# debug test kernel (scripts/debug-kernel.sh), built from linux-source
	flex bison libelf-dev
)

log() { printf 'deps.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Print the packages from PACKAGES that are not fully installed.
missing_packages() {
	local pkg status
	for pkg in "${PACKAGES[@]}"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
		[[ $status == installed ]] || printf '%s\n' "$pkg"
	done
}

# Run a command as root (directly, or through sudo when available).
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

# Install the missing packages; quick no-op when nothing is missing.
install_packages() {
	local -a missing
	mapfile -t missing < <(missing_packages)
	if [[ ${#missing[@]} -eq 0 ]]; then
		log "all ${#PACKAGES[@]} packages are installed"
		return 0
	fi
	log "installing: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update >&2
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "${missing[@]}" >&2
	mapfile -t missing < <(missing_packages)
	[[ ${#missing[@]} -eq 0 ]] || die "still missing after install: ${missing[*]}"
	log "done"
}

# Extract checkpatch.pl and its data files from the kernel source tarball
# into $TOOLS_DIR/checkpatch (once) and print the path of checkpatch.pl.
checkpatch_path() {
	local dest=$TOOLS_DIR/checkpatch
	local files=(checkpatch.pl spelling.txt const_structs.checkpatch)
	local tarball=/usr/src/linux-source-$KSRC_SERIES.tar.xz
	local top=linux-source-$KSRC_SERIES f ok=1 tmp

	for f in "${files[@]}"; do
		[[ -s $dest/$f ]] || ok=0
	done
	if [[ $ok -eq 0 ]]; then
		if [[ ! -f $tarball ]]; then
			PACKAGES=("linux-source-$KSRC_SERIES")
			install_packages
		fi
		[[ -f $tarball ]] || die "$tarball not found"
		log "extracting checkpatch.pl from $tarball (takes a few seconds)"
		mkdir -p "$TOOLS_DIR"
		# Extract into a private directory, then rename it into place, so
		# that concurrent callers never see a half-extracted tool.
		tmp=$(mktemp -d "$TOOLS_DIR/.checkpatch.XXXXXX")
		tar -xJf "$tarball" -C "$tmp" --strip-components=2 \
			"${files[@]/#/$top/scripts/}"
		chmod 0755 "$tmp/checkpatch.pl"
		chmod 0755 "$tmp"
		rm -rf "$dest"
		mv -T "$tmp" "$dest" 2>/dev/null || rm -rf "$tmp"
	fi
	printf '%s\n' "$dest/checkpatch.pl"
}

usage() {
	sed -n '4,24s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

case ${1:-} in
"")		install_packages ;;
--check)
	mapfile -t miss < <(missing_packages)
	if [[ ${#miss[@]} -gt 0 ]]; then
		printf '%s\n' "${miss[@]}"
		exit 1
	fi
	;;
--checkpatch)	checkpatch_path ;;
--list)		printf '%s\n' "${PACKAGES[@]}" ;;
-h|--help)	usage ;;
*)		usage >&2; exit 2 ;;
esac
