#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make demo: build, boot the test VM, create Stellar devices, move traffic.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
make -s all
out=$(mktemp -d)
if STL_VM_QUIET=1 scripts/vm.sh -t 600 -o "$out" scripts/demo-guest.sh >/dev/null; then
	cat "$out/vm0/script.log"
else
	rc=$?
	cat "$out/vm0/script.log" 2>/dev/null
	echo "demo: FAILED (exit $rc), logs in $out"
	exit "$rc"
fi
