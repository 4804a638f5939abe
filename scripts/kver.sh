#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kver.sh - print the kernel version(s) Stellar builds against and tests on.
#
#   scripts/kver.sh         the default kernel: Debian 12's own (6.1)
#   scripts/kver.sh --all   every test kernel, one a line: the default one,
#                           then the newest 6.12 (Debian 12 backports)
#
# A kernel counts only when it has both a module build tree
# (/lib/modules/VER/build, from linux-headers-*) and a bootable image
# (/boot/vmlinuz-VER, from linux-image-*).  The running kernel does not
# matter: Stellar's modules only ever load inside the test VM.
#
# The default kernel is the one the linux-image-amd64 meta package depends
# on (Debian 12's 6.1), not the newest one installed: the backports 6.12 is
# newer.  Without the meta package, the newest 6.1 with headers and image.
#
# Set KVER in the environment to force the default version; it is checked
# the same way.
#
#   make -C "/lib/modules/$(scripts/kver.sh)/build" M="$PWD"

set -euo pipefail

has_both() {
	[[ -d /lib/modules/$1/build && -f /boot/vmlinuz-$1 ]]
}

# Newest version matching the glob $1 that has headers and image.
newest() {
	local v best=
	while read -r v; do
		# shellcheck disable=SC2053
		[[ $v == $1 ]] && has_both "$v" && best=$v
	done < <(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V)
	printf '%s' "$best"
}

# The kernel linux-image-amd64 depends on ("linux-image-6.1.0-57-amd64 (= ...)").
default_kver() {
	local dep v
	dep=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null || true)
	v=${dep%%[ ,|]*}
	v=${v#linux-image-}
	if [[ -n $v ]] && has_both "$v"; then
		printf '%s' "$v"
		return
	fi
	newest '6.1.*'
}

if [[ -n ${KVER:-} ]]; then
	has_both "$KVER" || {
		echo "kver.sh: KVER=$KVER: need /lib/modules/$KVER/build and /boot/vmlinuz-$KVER" >&2
		exit 1
	}
	def=$KVER
else
	def=$(default_kver)
fi
if [[ -z $def ]]; then
	echo "kver.sh: no Debian 12 kernel with both headers and an image found;" \
		"run scripts/deps.sh" >&2
	exit 1
fi

case ${1:-} in
"")
	printf '%s\n' "$def"
	;;
--all)
	printf '%s\n' "$def"
	bpo=$(newest '6.12.*')
	[[ -z $bpo || $bpo == "$def" ]] || printf '%s\n' "$bpo"
	;;
*)
	sed -n '4,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
