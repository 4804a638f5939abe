# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 57-pyverbs.sh - rdma-core's own pyverbs test suite (the tests/ of the
# rdma-core release the system's python3-pyverbs comes from, unpacked by
# userlib/tests/rdma-core-build.sh under build/rdma-core) on ring device
# rxe_s0: no test may fail or err but those that do on plain rxe0 too
# (PYV_RXE_FAILS; run `s_pyverbs rxe0` to see them there).  Tests a device does not support skip (the scenario log lists
# why); rxe0 and the ring device skip the same (rereg MR: EOPNOTSUPP).  The
# tests of PYV_MUST_RUN must pass, not skip: resize CQ and the memory
# windows (MWTest: type 1 and 2, bound, used by the peer with bytes
# checked, then invalidated by a rebind, locally, by the peer, by dealloc,
# after which the peer's access must fail).  The same suite runs on
# stellar0 through libstellar (RDMAV_DRIVERS kept), on the same rings, with
# the same must-pass list.

PYV_MODULES=(test_device test_pd test_cq test_cq_events test_cqex test_mr test_qp test_qpex
	test_addr test_atomic test_fork test_relaxed_ordering)
# Tests that err on plain rxe0 too (the kernel's rxe, not the ring device):
# ATOMIC_WRITE, which 6.1's rxe lacks, errs instead of skipping.
PYV_RXE_FAILS='test_qp_ex_rc_atomic_write'
PYV_MUST_RUN=(test_resize_cq test_mw_type1 test_invalidate_mw_type1 test_mw_type2
	test_mw_type2_invalidate_local test_mw_type2_invalidate_remote
	test_mw_type2_invalidate_dealloc)

# The pyverbs tests of the system's rdma-core release on device $1.
s_pyverbs() {
	local dev=$1 ver tests out m rc bad t all envx=(-u RDMAV_DRIVERS) must
	must=("${PYV_MUST_RUN[@]}")
	# libstellar devices: through the provider RDMAV_DRIVERS names
	local known=$PYV_RXE_FAILS
	if [[ $dev == stellar* ]]; then
		envx=()
	fi
	ver=$(dpkg-query -W -f '${Version}' python3-pyverbs 2>/dev/null | sed 's/-.*//')
	tests=$PWD/build/rdma-core/rdma-core-$ver/tests
	[[ -f $tests/run_tests.py ]] ||
		{ why "no rdma-core $ver tests in build/rdma-core (python3-pyverbs is $ver)"; return 1; }
	# run_tests.py imports its directory as the package "tests"
	rm -rf "$RUN/pyverbs" && mkdir -p "$RUN/pyverbs" && cp -r "$tests" "$RUN/pyverbs/tests"
	# one python for all the modules: its start (pyverbs' imports) takes
	# seconds under TCG
	rc=0
	out=$(cd "$RUN/pyverbs" && env "${envx[@]}" timeout -k 5 900 \
		python3 tests/run_tests.py --dev "$dev" --gid "$STL_GIDX" -v "${PYV_MODULES[@]}" 2>&1) || rc=$?
	echo "=== ${PYV_MODULES[*]} on $dev (exit $rc)"
	echo "$out" | grep -E ' \.\.\. |^Ran |^OK|^FAILED'
	all=$out
	if ! echo "$out" | grep -qE '^OK' || ((rc != 0)); then
		bad=$(echo "$out" | sed -nE 's/^(FAIL|ERROR): ([a-z0-9_]+) .*/\2/p' |
			grep -vxE "$known" | tr '\n' ' ')
		if [[ -n $bad ]] || ! echo "$out" | grep -qE '^(OK|FAILED)'; then
			# what unittest says of each failure, for the log
			echo "$out" | sed -n '/^=\{20,\}$/,$p' | head -n 300
			why "on $dev: ${bad:-no result} $(echo "$out" | grep -E '^FAILED' | head -n 1)"
		else
			echo "(only known failures: $known)"
		fi
	fi
	# every module ran: each names at least one test
	for m in "${PYV_MODULES[@]}"; do
		echo "$out" | grep -qE "\(tests\.$m\." || why "no test of $m ran on $dev"
	done
	# unittest -v puts a docstring's first line, and the result, on the
	# line after the test's name.
	for t in "${must[@]}"; do
		echo "$all" | awk -v t="$t" 'index($0, t " (") == 1 { n = NR + 1; if (/ \.\.\. ok$/) f = 1 }
			NR == n && / \.\.\. ok$/ { f = 1 } END { exit !f }' ||
			why "$t on $dev did not pass: $(echo "$all" | grep -A1 -E "^$t \\(" | tr '\n' ' ')"
	done
	[[ -z $WHY ]]
}

s_pyverbs_add() { add_stellar rxe_s0; }
s_pyverbs_delete() { run rdma link delete rxe_s0 || why "rdma link delete rxe_s0 failed"; }

scenario pyverbs_rings_add s_pyverbs_add
scenario pyverbs_rxe_s0 s_pyverbs rxe_s0
scenario pyverbs_rings_delete s_pyverbs_delete
scenario pyverbs_stellar0 s_pyverbs stellar0
