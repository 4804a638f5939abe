# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 90-fuzz.sh - the seeded fuzzer (tests/fuzz/stl_fuzz.c) for a bounded time,
# with stellar1 and the parent rxe0 deleted and recreated under it
# (tests/fuzz/fuzz-lib.sh).  STL_FUZZ_SECONDS (default 120) and
# STL_FUZZ_SEED (default: a new one, printed) change it; a failure names
# its seed: replay with STL_FUZZ_SEED=S.

# shellcheck source=tests/fuzz/fuzz-lib.sh
source tests/fuzz/fuzz-lib.sh

s_fuzz_hostile_tenant() {
	fuzz_session "${STL_FUZZ_SECONDS:-120}" "${STL_FUZZ_SEED:-$(date +%s%N | cut -c 8-16)}"
}

scenario fuzz_hostile_tenant s_fuzz_hostile_tenant
