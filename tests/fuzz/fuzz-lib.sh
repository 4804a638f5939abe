# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# fuzz-lib.sh - one fuzzing session in the test VM, for the VM scenario
# (tests/kernel/scenarios/90-fuzz.sh) and `make fuzz` (fuzz-guest.sh).
# Sourced after tests/kernel/lib.sh; starts and ends with stellar.ko loaded
# and stellar0, stellar1 ACTIVE over rxe0 on eth0.
#
# fuzz_session SECONDS SEED: build/tests/stl_fuzz on stellar0 and stellar1
# for SECONDS; meanwhile, from the shell, `rdma link delete stellar1` (then
# recreated) at 1/3 of the time and `rdma link delete rxe0` (then rxe0,
# stellar0 and stellar1 recreated) at 2/3.  Then: the fuzzer printed its
# final "fuzz: N ops, seed S, ok" line within SECONDS + 120 s, the module
# holds no pinned page, `rmmod stellar` works, and stellar.ko is loaded again
# with the two devices.  Kernel reports fail the scenario (lib.sh, vm.sh).
# The last operations of every fuzzer thread land in $STL_LOGDIR/fuzz-tN.log.

FUZZ=build/tests/stl_fuzz
FUZZ_RUN=/run/stl-fuzz

# Bring back the standard state: rxe0, stellar.ko, stellar0 and stellar1.
fuzz_standard_state() {
	recreate_rxe0 || return 1
	module_loaded || load_stellar || return 1
	dev_exists stellar0 || add_stellar stellar0 || return 1
	dev_exists stellar1 || add_stellar stellar1 || return 1
	return 0
}

# Sleep until $1 (a $SECONDS value) unless the fuzzer (pid $2) has ended.
fuzz_sleep_until() {
	while ((SECONDS < $1)) && kill -0 "$2" 2>/dev/null; do
		sleep 0.5
	done
}

fuzz_session() {
	local secs=$1 seed=$2 pid t0 rc out f rrc
	# stl_fuzz reads a leading 0 as octal: "004071460" is seed 1078064
	[[ $seed =~ ^[0-9]+$ ]] && seed=$((10#$seed))
	[[ -x $FUZZ ]] || { why "$FUZZ not built (make -C tests/fuzz)"; return 1; }
	rm -rf "$FUZZ_RUN"
	mkdir -p "$FUZZ_RUN"
	out=$FUZZ_RUN/out
	echo "fuzz: seed $seed, $secs s (replay: STL_FUZZ_SEED=$seed)"
	echo "+ $FUZZ -d stellar0 -d stellar1 -s $seed -T $secs -t 4 -r 8 -l $FUZZ_RUN"
	t0=$SECONDS
	RDMAV_DRIVERS=$PWD/build/libstellar "$FUZZ" -d stellar0 -d stellar1 \
		-g "$STL_GIDX" -s "$seed" -T "$secs" -t 4 -r 8 -l "$FUZZ_RUN" >"$out" 2>&1 &
	pid=$!
	bg_track "$pid"

	# the devices go away under the fuzzer and come back
	fuzz_sleep_until $((t0 + secs / 3)) "$pid"
	if kill -0 "$pid" 2>/dev/null; then
		echo "+ rdma link delete stellar1 (at $((SECONDS - t0)) s)"
		timeout 60 rdma link delete stellar1 || why "rdma link delete stellar1 failed under the fuzzer"
		wait_gone stellar1 20 || why "stellar1 still present 20 s after rdma link delete"
		sleep 2
		add_stellar stellar1 || why "stellar1 not recreated"
	fi
	fuzz_sleep_until $((t0 + 2 * secs / 3)) "$pid"
	if kill -0 "$pid" 2>/dev/null; then
		echo "+ rdma link delete rxe0 (at $((SECONDS - t0)) s)"
		timeout 60 rdma link delete rxe0 || why "rdma link delete rxe0 failed under the fuzzer"
		wait_gone stellar0 20 || why "stellar0 still present 20 s after its parent went"
		wait_gone stellar1 20 || why "stellar1 still present 20 s after its parent went"
		sleep 2
		fuzz_standard_state || why "standard state not restored after deleting rxe0"
	fi

	if ! wait_exit "$pid" $((secs + 120 - (SECONDS - t0))); then
		why "stl_fuzz still running $((secs + 120)) s after it started (hung; seed $seed)"
		kill -9 "$pid" 2>/dev/null
		wait_exit "$pid" 20 || echo "stl_fuzz did not die after kill -9"
	fi
	rc=$(exit_status "$pid")
	cat "$out"
	for f in "$FUZZ_RUN"/fuzz-t*.log; do
		[[ -e $f ]] && tail -n 300 "$f" >"$STL_LOGDIR/$(basename "$f")"
	done
	((rc == 0)) || why "stl_fuzz exited $rc (seed $seed): $(tail -n 1 "$out")"
	grep -qE "^fuzz: [0-9]+ ops, seed $seed, ok$" "$out" ||
		why "stl_fuzz printed no final ok line (seed $seed)"

	fuzz_standard_state || return 1
	wait_no_pins 20 || why "debugfs pinned_pages is $(pinned_total) after the fuzzer exited (seed $seed)"
	echo "+ rmmod stellar"
	rmmod stellar &
	pid=$!
	bg_track "$pid"
	if wait_exit "$pid" 60; then
		rrc=$(exit_status "$pid")
		((rrc == 0)) || why "rmmod stellar exited $rrc after the fuzzer (seed $seed)"
	else
		why "rmmod stellar blocked for 60 s after the fuzzer (seed $seed)"
		return 1
	fi
	[[ ! -e $STL_DEBUGFS/pinned_pages ]] || why "debugfs stellar still there after rmmod"
	fuzz_standard_state || return 1
	[[ -z $WHY ]]
}
