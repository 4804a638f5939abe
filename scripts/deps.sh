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
#   scripts/deps.sh --bench       install what is missing, and what only
#                                 make bench needs (gnuplot, for its charts)
#
# Besides Debian 12's own kernel (6.1), Stellar is tested on Debian's 6.12
# kernel for bookworm: deps.sh adds bookworm-backports as an apt source
# (deb822 file /etc/apt/sources.list.d/debian-backports.sources, same archive
# URI as the machine's bookworm source) and installs the newest
# linux-image-6.12.N+deb12-amd64 that apt knows (bookworm-backports, or
# bookworm-security, which carries 6.12 builds too) with its headers, by
# exact name.  Backports have pin priority 100, so nothing else is upgraded;
# the meta packages (linux-image-amd64, ...) stay on 6.1.
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
	# UCX over rc_verbs/ud_verbs (tests/kernel/scenarios/60-ucx.sh: ucx_perftest,
	# io_demo; libucx-dev for tests/kernel/stl_ucx_check.c)
	ucx-utils libucx0 libucx-dev
	# other rdma-core releases, built from source for provider compatibility
	# tests (userlib/tests/rdma-core-build.sh)
	cmake ninja-build libnl-3-dev libnl-route-3-dev libudev-dev libsystemd-dev
	# stellarctl (RDMA netlink); jq reads its JSON in the tests and in the
	# CNI plugin, which the tests chain after macvlan; podman runs the
	# containers of tests/kernel/scenarios/44-podman.sh
	libmnl-dev jq containernetworking-plugins podman crun conmon
	# toolchain and static checks
	pkg-config gcc binutils make bc sparse "linux-source-$KSRC_SERIES"
	# debug test kernel (scripts/debug-kernel.sh), built from linux-source
	flex bison libelf-dev
)

# Only for make bench: gnuplot draws its charts (PNG, cairo terminals).
BENCH_PACKAGES=(gnuplot-nox)

# The second test kernel: the newest 6.12 for bookworm (backports, security).
BPO_SUITE=bookworm-backports
BPO_SOURCE=/etc/apt/sources.list.d/debian-backports.sources
BPO_KERNEL_RE='^linux-image-6\.12\.[0-9]+\+deb12-amd64$'
# What else the 6.12 kernel needs, from bookworm itself: its bzImage is
# zstd-compressed (scripts/vm.sh unpacks it).
BPO_PACKAGES=(zstd)

# Do not wait forever for another apt/dpkg run to finish.
APT_OPTS=(-o DPkg::Lock::Timeout=600)

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
	as_root env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" update >&2
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get "${APT_OPTS[@]}" install -y --no-install-recommends "${missing[@]}" >&2
	mapfile -t missing < <(missing_packages)
	[[ ${#missing[@]} -eq 0 ]] || die "still missing after install: ${missing[*]}"
	log "done"
}

# Print "image headers" of the installed backports kernel (image and headers
# of the same version, both installed); nothing when there is none.
bpo_kernel_installed() {
	local pkg status hdr
	while read -r pkg status; do
		[[ $pkg =~ $BPO_KERNEL_RE && $status == installed ]] || continue
		hdr=linux-headers-${pkg#linux-image-}
		[[ $(dpkg-query -W -f='${db:Status-Status}' "$hdr" 2>/dev/null) == installed ]] ||
			continue
		printf '%s %s\n' "$pkg" "$hdr"
	done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' \
		'linux-image-6.12.*' 2>/dev/null | sort -V) | tail -n 1
}

# Print the URI of the Debian archive that the machine's own sources use for
# the bookworm suite (deb822 .sources files, then one-line .list files).
debian_archive_uri() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		uri=$(awk 'BEGIN { RS = ""; FS = "\n" }
			{
				types = uris = suites = ""; enabled = "yes"
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^#/ || $i !~ /:/)
						continue
					key = tolower($i); sub(/:.*/, "", key)
					val = $i; sub(/^[^:]*:[ \t]*/, "", val)
					if (key == "types") types = val
					else if (key == "uris") uris = val
					else if (key == "suites") suites = val
					else if (key == "enabled") enabled = tolower(val)
				}
				if (enabled != "no" && (" " types " ") ~ / deb / &&
				    (" " suites " ") ~ / bookworm / && uris != "") {
					split(uris, u, /[ \t]+/); print u[1]; exit
				}
			}' "$f")
		[[ -n $uri ]] && { printf '%s\n' "$uri"; return 0; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		# deb [options] URI bookworm component...
		uri=$(sed -E 's/\[[^]]*\]//' "$f" |
			awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')
		[[ -n $uri ]] && { printf '%s\n' "$uri"; return 0; }
	done
	return 1
}

# Is bookworm-backports already an apt source (ours or the machine's own)?
bpo_source_present() {
	grep -rqsE "^[[:space:]]*(Suites:.*[[:space:]]${BPO_SUITE}([[:space:]]|\$)|deb[[:space:]].*[[:space:]]${BPO_SUITE}[[:space:]])" \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
		/etc/apt/sources.list.d/*.list
}

# Add bookworm-backports as a source and install the newest 6.12 kernel image
# and its headers by exact name; no-op (no network) when one is installed.
install_bpo_kernel() {
	local uri v img
	local -a cands
	if [[ -n $(bpo_kernel_installed) ]]; then
		log "backports kernel installed: $(bpo_kernel_installed)"
		return 0
	fi
	if ! bpo_source_present; then
		uri=$(debian_archive_uri) ||
			die "no Debian bookworm source in /etc/apt/sources.list*"
		log "adding $BPO_SOURCE ($uri $BPO_SUITE)"
		printf '%s\n' "Types: deb" "URIs: $uri" "Suites: $BPO_SUITE" \
			"Components: main" \
			"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
			as_root tee "$BPO_SOURCE.tmp" >/dev/null
		as_root mv -f "$BPO_SOURCE.tmp" "$BPO_SOURCE"
	fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" update >&2
	mapfile -t cands < <(apt-cache pkgnames linux-image-6.12. |
		grep -E "$BPO_KERNEL_RE" | sort -rV)
	img=
	for v in "${cands[@]}"; do
		# The headers of the same version must exist too.
		if apt-cache show "linux-headers-${v#linux-image-}" >/dev/null 2>&1; then
			img=$v
			break
		fi
	done
	[[ -n $img ]] || die "no linux-image-6.12.*+deb12-amd64 (with headers) in apt's sources"
	log "installing $img and its headers from $BPO_SUITE"
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get "${APT_OPTS[@]}" install -y --no-install-recommends \
		-t "$BPO_SUITE" "$img" "linux-headers-${img#linux-image-}" >&2
	[[ -n $(bpo_kernel_installed) ]] || die "$img: still not installed"
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
	sed -n '4,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

case ${1:-} in
""|--bench)
	[[ ${1:-} == --bench ]] && PACKAGES+=("${BENCH_PACKAGES[@]}")
	install_packages
	install_bpo_kernel
	PACKAGES=("${BPO_PACKAGES[@]}")
	[[ -z $(missing_packages) ]] || install_packages
	;;
--check)
	PACKAGES+=("${BPO_PACKAGES[@]}")
	mapfile -t miss < <(missing_packages)
	[[ -n $(bpo_kernel_installed) ]] ||
		miss+=("linux-image-6.12.*+deb12-amd64 linux-headers-6.12.*+deb12-amd64 ($BPO_SUITE)")
	if [[ ${#miss[@]} -gt 0 ]]; then
		printf '%s\n' "${miss[@]}"
		exit 1
	fi
	;;
--checkpatch)	checkpatch_path ;;
--list)
	printf '%s\n' "${PACKAGES[@]}" "${BPO_PACKAGES[@]}"
	# The backports kernel: the installed one, else the name pattern.
	read -r -a bpo <<<"$(bpo_kernel_installed)"
	if [[ ${#bpo[@]} -gt 0 ]]; then
		printf '%s\n' "${bpo[@]}"
	else
		printf '%s\n' "linux-image-6.12.*+deb12-amd64" \
			"linux-headers-6.12.*+deb12-amd64"
	fi
	;;
-h|--help)	usage ;;
*)		usage >&2; exit 2 ;;
esac
