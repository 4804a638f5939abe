#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-module.sh - build stellar.ko for one kernel, out of the source tree.
#
#   scripts/build-module.sh KVER [KDIR]
#
# Copies the module sources into build/kmod/KVER/ and builds them there
# against KDIR (default /lib/modules/KVER/build), so one checkout holds a
# stellar.ko per kernel (Debian 6.1, backports 6.12, the debug kernel) side
# by side.  Prints the path of the module.  The VM tests load
# build/kmod/$(uname -r)/stellar.ko (tests/kernel/lib.sh stellar_ko).
#
# STL_KMOD_DIR changes the output root (default build/kmod; scripts/lint.sh
# builds with W=1 in build/lint).  Make variables such as KBUILD_EXTRA_WARN
# are taken from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

kver=${1:?usage: build-module.sh KVER [KDIR]}
kdir=${2:-/lib/modules/$kver/build}
[[ -d $kdir ]] || { echo "build-module.sh: no kernel tree $kdir" >&2; exit 1; }
out=${STL_KMOD_DIR:-build/kmod}/$kver
mkdir -p "$out"
# Only the module's own sources; cp -u keeps make's timestamps meaningful.
while read -r f; do
	mkdir -p "$out/$(dirname "$f")"
	cp -u "$f" "$out/$f"
done < <(find Kbuild include kmod pvdma emtt spray -type f \
	\( -name '*.[ch]' -o -name 'Kbuild*' \) 2>/dev/null)
make -s -C "$kdir" M="$(realpath "$out")" modules >&2
echo "$out/stellar.ko"
