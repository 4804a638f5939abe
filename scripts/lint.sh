#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make lint: the kernel's own gates on the kernel code: checkpatch (no
# errors, no warnings), kernel-doc, a W=1 build and sparse without warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
KVER=$(scripts/kver.sh)
cp=$(scripts/deps.sh --checkpatch)
kdoc=$(ls /usr/src/linux-headers-*-common/scripts/kernel-doc 2>/dev/null | head -n 1)
files=$(git ls-files 'kmod/*.[ch]' 'pvdma/*.[ch]' 'emtt/*.[ch]' 'spray/*.[ch]' \
	'include/uapi/*.h')
fail=0

for f in $files; do
	if ! perl "$cp" --no-tree --quiet --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG -f "$f"; then
		echo "lint: checkpatch: $f"
		fail=1
	fi
done
# Userspace C follows rdma-core's style; checkpatch must find no errors there.
for f in $(git ls-files 'userlib/*.[ch]' 'tests/*.[ch]'); do
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
make -C "/lib/modules/$KVER/build" M="$PWD" W=1 modules >"$log" 2>&1 || fail=1
if grep -E 'warning:|error:' "$log"; then
	echo "lint: W=1 build"
	fail=1
fi
# sparse (C=2: every file, built or not): __rcu, __user, endianness.
if command -v sparse >/dev/null; then
	make -C "/lib/modules/$KVER/build" M="$PWD" C=2 modules >"$log" 2>&1 || fail=1
	if grep -E 'warning:|error:' "$log"; then
		echo "lint: sparse"
		fail=1
	fi
else
	echo "lint: sparse not installed (apt-get install sparse): skipped"
fi
rm -f "$log"
[ $fail = 0 ] && echo "lint: clean"
exit $fail
