#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kver.sh - print the kernel version Stellar builds against and tests on.
#
# That is the newest version (sort -V) that has both a module build tree
# (/lib/modules/VER/build, from linux-headers-*) and a bootable kernel image
# (/boot/vmlinuz-VER, from linux-image-*).  The running kernel does not
# matter: Stellar's modules only ever load inside the test VM.
#
# Set KVER in the environment to force a version; it is checked the same way.
#
#   make -C "/lib/modules/$(scripts/kver.sh)/build" M="$PWD"

set -euo pipefail

has_both() {
	[[ -d /lib/modules/$1/build && -f /boot/vmlinuz-$1 ]]
}

if [[ -n ${KVER:-} ]]; then
	has_both "$KVER" || {
		echo "kver.sh: KVER=$KVER: need /lib/modules/$KVER/build and /boot/vmlinuz-$KVER" >&2
		exit 1
	}
	printf '%s\n' "$KVER"
	exit 0
fi

best=
while read -r v; do
	has_both "$v" && best=$v
done < <(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V)

if [[ -z $best ]]; then
	echo "kver.sh: no kernel with both headers and an image found;" \
		"run scripts/deps.sh" >&2
	exit 1
fi
printf '%s\n' "$best"
