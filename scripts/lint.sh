#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make lint: the kernel's own gates on the kernel code: checkpatch (no
# errors, no warnings), kernel-doc, a W=1 build without warnings for
# every test kernel (scripts/kver.sh --all), each from scratch in
# build/lint/KVER, and sparse without warnings.  Kernel version checks
# (LINUX_VERSION_CODE) belong in kmod/stl_compat.h only: checkpatch's
# warnings about them are ignored there.
set -euo pipefail
cd "$(dirname "$0")/.."
KVERS=$(scripts/kver.sh --all)
cp=$(scripts/deps.sh --checkpatch)
kdoc=$(ls /usr/src/linux-headers-*-common/scripts/kernel-doc 2>/dev/null | head -n 1)
files=$(git ls-files 'kmod/*.[ch]' 'pvdma/*.[ch]' 'emtt/*.[ch]' 'spray/*.[ch]' \
	'include/uapi/*.h')
fail=0

for f in $files; do
	ignore=FILE_PATH_CHANGES,SPDX_LICENSE_TAG
	if [ "$f" = kmod/stl_compat.h ]; then
		ignore=$ignore,LINUX_VERSION_CODE,CONSTANT_COMPARISON
	fi
	if ! perl "$cp" --no-tree --quiet --show-types --ignore "$ignore" -f "$f"; then
		echo "lint: checkpatch: $f"
		fail=1
	fi
done
# Userspace C follows rdma-core's style; checkpatch must find no errors there.
for f in $(git ls-files 'userlib/*.[ch]' 'tests/*.[ch]' 'tools/*.[ch]'); do
	if perl "$cp" --no-tree --quiet -f "$f" | grep -q '^ERROR'; then
		perl "$cp" --no-tree --quiet -f "$f" | grep -A3 '^ERROR'
		echo "lint: checkpatch errors: $f"
		fail=1
	fi
done
if [ -n "$kdoc" ]; then
	if perl "$kdoc" -none $files 2>&1 | grep -E 'warning|error'; then
		echo "lint: kernel-doc"
		fail=1
	fi
fi
log=$(mktemp)
# sparse (__rcu, __user, endianness) checks every file in the first
# kernel's W=1 build, which compiles each one (from scratch): one compile
# of the module less than a build of its own.
KVER=$(scripts/kver.sh)
if ! command -v sparse >/dev/null; then
	echo "lint: sparse not installed (apt-get install sparse): skipped"
	fail=1
fi
for k in $KVERS; do
	rm -rf "build/lint/$k"
	chk=0
	if [ "$k" = "$KVER" ] && command -v sparse >/dev/null; then
		chk=1
	fi
	if ! STL_KMOD_DIR=build/lint KBUILD_EXTRA_WARN=1 KBUILD_CHECKSRC=$chk \
		scripts/build-module.sh "$k" >"$log" 2>&1; then
		cat "$log"
		fail=1
	fi
	if grep -E 'warning:|error:' "$log"; then
		echo "lint: W=1 build$([ $chk = 1 ] && echo ' and sparse') for $k"
		fail=1
	fi
done
rm -f "$log"
[ $fail = 0 ] && echo "lint: clean"
exit $fail
