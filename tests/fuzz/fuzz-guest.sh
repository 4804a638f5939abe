#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# fuzz-guest.sh - `make fuzz`: a long fuzzing session in the test VM (guest
# side; scripts/vm.sh runs it).  STL_FUZZ_SECONDS (default 900),
# STL_FUZZ_SEED (default: a new one, printed).  The fuzzer's table and the
# last operations of each thread are in OUTDIR/vm0/scenarios/.
set -u
# shellcheck source=tests/kernel/lib.sh
source tests/kernel/lib.sh
# shellcheck source=tests/fuzz/fuzz-lib.sh
source tests/fuzz/fuzz-lib.sh

s_setup() {
	load_stellar && add_stellar stellar0 && add_stellar stellar1
}

s_fuzz_long() {
	fuzz_session "${STL_FUZZ_SECONDS:-900}" "$1"
}

seed=${STL_FUZZ_SEED:-$(date +%s%N | cut -c 8-16)}
echo "fuzz-guest: kernel $(uname -r), seed $seed, ${STL_FUZZ_SECONDS:-900} s"
scenario fuzz_setup s_setup
((STL_FAILED == 0)) && scenario fuzz_long s_fuzz_long "$seed"
grep -E '^(fuzz:|op |[a-z_]+ +[0-9]+ )' "$STL_LOGDIR/fuzz_long.log"
finish
