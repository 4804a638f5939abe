#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make bench: perftest on Stellar and on raw rxe in one VM boot, as ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
make -s all
out=$(mktemp -d)
STL_VM_QUIET=1 scripts/vm.sh -t 900 -o "$out" tests/bench/perf-guest.sh >/dev/null || {
	echo "bench: VM run failed, see $out"; tail -50 "$out/vm0/script.log"; exit 1; }
cat "$out/vm0/script.log"
