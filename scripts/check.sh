#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make check: every Stellar test, on a fresh Debian 12 machine too.
#   1. dependencies (scripts/deps.sh), build, kernel gates (scripts/lint.sh)
#   2. userspace tests of the provider; the upstream rdma-core releases
#      whose stock librxe the VM scenarios drive the ring devices with
#      (userlib/tests/rdma-core-build.sh --list), built once and cached in
#      build/rdma-core/ (stage rdma-core-builds)
#   3. VM scenarios on one host (one boot), then on two hosts (one boot each),
#      on Debian 12's kernel (6.1), then again on every other test kernel
#      (scripts/kver.sh --all: the backports 6.12), stages NAME-6.12
#   4. the one-host scenarios again on the debug kernel (lockdep, KASAN) of
#      scripts/debug-kernel.sh, built once and cached in build/debug-kernel/
#      (STL_CHECK_DEBUG=0: not run; =full: every scenario, see below)
# Two lanes run side by side (a TCG guest keeps about one core busy): this
# shell runs 1-3 on 6.1, a second one (lane b) 4 from the start (after the
# debug kernel's build on a first run); then each lane takes the next of
# 3's stages on the other kernels that the other has not taken.  Lane b's
# output follows (live in lane-b.log).
# Each stage prints PASS/FAIL lines; the last line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

pass=0
fail=0
failed=()
stage() {
	local name=$1 t0=$SECONDS
	shift
	echo "=== $name"
	if "$@"; then
		echo "PASS stage $name ($((SECONDS - t0)) s)"
		pass=$((pass + 1))
	else
		echo "FAIL stage $name (exit $?, $((SECONDS - t0)) s)"
		fail=$((fail + 1))
		failed+=("$name")
	fi
}

scripts/deps.sh || { echo "check: installing dependencies failed"; exit 1; }
make -s all || { echo "check: build failed"; exit 1; }

out=$(mktemp -d)

# The debug kernel (stage vm-one-host-debug below) takes ~15 minutes of two
# cores to build the first time.  It builds in the background, at the
# lowest CPU priority, while the stages before it run: a TCG guest running
# one scenario keeps about one core busy, and the build takes what is left.
# It stays in this session: with the scheduler's autogroups a new session
# (setsid) would get its own equal share whatever its nice value.  Job
# control gives it a process group of its own, to stop it with.
debug_build=""
if [[ ${STL_CHECK_DEBUG:-1} != 0 ]] && ! scripts/debug-kernel.sh -c >/dev/null 2>&1; then
	echo "debug kernel: building in the background (nice 19; log $out/debug-kernel.log)"
	set -m
	(
		nice -n 19 scripts/debug-kernel.sh -q >"$out/debug-kernel.out" 2>"$out/debug-kernel.log"
		echo $? >"$out/debug-kernel.rc"
	) &
	debug_build=$!
	set +m
fi
lane_b_pid=""
trap '[[ -n $debug_build ]] && kill -- "-$debug_build" 2>/dev/null
	[[ -n $lane_b_pid ]] && kill -- "-$lane_b_pid" 2>/dev/null' EXIT

# Each kernel fuzzes for 20 s (`make fuzz`
# fuzzes longer); 6.12 and the debug kernel run the lifecycle races 6 and 2
# times (6.1: 12; lockdep sees each lock order on the first pass) and the
# pin cache's munmap race for 10 s (6.1: 20).  The other
# kernels leave out what only varies the userspace over module paths the
# rest of the suite runs there too (OTHER_SKIP): the ibverbs-utils and ring
# pingpongs and perftests, the verbs suite against plain rxe0, the other
# rdma-core releases, UCX and pyverbs (about 12 minutes under TCG), the
# operator's tools (stellarctl, the CNI plugin: the device create, move
# and delete paths of 37-netns.sh and 35-addresses.sh), and the
# install-and-autoload scenario (its depmod reads every module of the
# kernel: 5 minutes under TCG on 6.12; 6.1 runs it), and the hostile
# path-exchange messages (75 s there; what they check is the module's own
# parsing, the same on every kernel, and every exchange of the other spray
# scenarios runs the receive path).  Nor do they run the ring-device twins
# of scenarios they do run (rate cap, namespace move, spray data, the verbs
# suite and the SRQ pingpong against rxe0): libstellar and the stock
# librxe drive the same rings, doorbells and CQ fill in the module, so the
# twin differs only in the userspace that claims the device, which
# rings_claimed_by_stock_librxe, rings_verbs_rxe_s0_to_rxe_s1 and the other
# ring scenarios check on every kernel (about 160 s on 6.12 and the debug
# kernel together).
OTHER_SKIP='(rc|ud|uc)_pingpong_.*|rdma_core_.*|ucx_.*|pyverbs_.*|stellarctl_.*|cni_.*|podman_.*|rings_(rc|ud|uc)_pingpong_.*|rings_(write_bw|send_lat|read_lat)_.*|verbs_(stellar0_to_rxe0|rxe0_to_stellar0_positive)|installed_module_autoloads_and_provider_loads|spray_hostile_exchange_messages_are_dropped'
OTHER_SKIP+='|rate_cap_ring_device|netns_exclusive_ring_device_belongs_to_one_namespace|rings_spray_data_over_paths_stock_librxe|rings_verbs_rxe_s0_to_rxe0|rings_srq_pingpong_rxe_s0_rxe0'

# The one-VM suite again on the debug kernel (lockdep, PROVE_RCU, KASAN,
# DEBUG_LIST, DEBUG_ATOMIC_SLEEP) of scripts/debug-kernel.sh: Debian's
# linux-source-6.1, built once (about 15 minutes on 2 idle cores) and
# cached under build/debug-kernel/.  Any lockdep or KASAN report, WARN or
# BUG fails the scenario during which it appeared (tests/kernel/lib.sh).
# To keep make check in time, this pass leaves out what the two passes
# above already cover and that runs no module path of its own (the
# ibverbs-utils pingpongs, the pingpongs and verbs suite against plain
# rxe0, the install, the pingpongs of other rdma-core releases, whose ring
# # paths 50-rings.sh covers, its pingpongs and perftests, UCX, pyverbs)
# and runs the races shorter (above); `make check-debug`
# (STL_CHECK_DEBUG=full) runs the whole suite on it, STL_CHECK_DEBUG=0
# leaves the stage out (it then says SKIP).
# It and 6.12 also leave out two address scenarios (ADDR_SKIP; about 140 s
# on the debug kernel, 40 s on 6.12) whose GID table paths the other three
# (own netdev, VLAN in a namespace, macvlan) drive there too (the hostile path-exchange messages,
# left out with OTHER_SKIP, are sent through ib_umad, which the debug
# kernel does not build).
ADDR_SKIP="addresses_device_on_vlan|addresses_explicit_list"
DEBUG_SKIP="$OTHER_SKIP|$ADDR_SKIP"
vm_one_debug() {
	local kinfo release="" objtree="" vmlinux="" image="" skip=$DEBUG_SKIP
	local fuzz=20 lc_iter=2
	echo "debug kernel: scripts/debug-kernel.sh (cached in build/debug-kernel/)"
	if [[ -n $debug_build ]]; then
		local t0=$SECONDS rc
		# not this shell's child (lane b): its status lands in a file
		while [[ ! -s $out/debug-kernel.rc ]] && kill -0 "$debug_build" 2>/dev/null; do
			sleep 5
		done
		rc=$(cat "$out/debug-kernel.rc" 2>/dev/null || echo 1)
		debug_build=""
		echo "debug kernel: waited $((SECONDS - t0)) s for the background build (exit $rc)"
		if ((rc != 0)); then
			tail -n 30 "$out/debug-kernel.log"
			return 1
		fi
	fi
	kinfo=$(scripts/debug-kernel.sh -q) || return 1
	eval "$kinfo"
	echo "debug kernel $release: $image (symbols: $vmlinux)"
	scripts/build-module.sh "$release" "$objtree" >/dev/null || return 1
	make -s -C tests/kernel stall dmabuf KVERS="$release:$objtree" || return 1
	if [[ ${STL_CHECK_DEBUG:-1} == full ]]; then
		skip=""
		fuzz=${STL_FUZZ_SECONDS:-120}
		lc_iter=${STL_LC_ITER:-12}
		export STL_PVDMA_RACE_SECONDS=${STL_PVDMA_RACE_SECONDS:-60}
	fi
	STL_VM_QUIET=1 STL_VM_KERNEL=$image STL_SCENARIO_SKIP=$skip \
		STL_PVDMA_RACE_SECONDS=${STL_PVDMA_RACE_SECONDS:-10} \
		STL_FUZZ_SECONDS=$fuzz STL_LC_ITER=$lc_iter scripts/vm.sh -t 3600 -o "$1" tests/kernel/vm-one.sh
}

# The one-host and two-host suites on the other kernels: stages either
# lane runs, each taken by the first lane free for it (mkdir is atomic).
# Lane b runs the debug kernel's suite first (cached: about 20 minutes,
# while this shell runs the 6.1 stages; fresh: after its build), so both
# lanes come to these at about the same time.
other_kernels() {
	local k v
	for k in $(scripts/kver.sh --all | tail -n +2); do
		v=${k%%[-+]*}
		v=${v%.*}
		mkdir "$out/took.one-$v" 2>/dev/null &&
			stage "vm-one-host-$v" env KVER="$k" STL_VM_QUIET=1 STL_VM_APPEND="slub_debug=FZPU" \
				STL_FUZZ_SECONDS="${STL_FUZZ_SECONDS:-20}" \
				STL_LC_ITER="${STL_LC_ITER:-6}" \
				STL_PVDMA_RACE_SECONDS="${STL_PVDMA_RACE_SECONDS:-10}" \
				STL_SCENARIO_SKIP="${STL_SCENARIO_SKIP:-$OTHER_SKIP|$ADDR_SKIP}" \
				scripts/vm.sh -t 2700 -o "$out/one-$v" tests/kernel/vm-one.sh
		mkdir "$out/took.two-$v" 2>/dev/null &&
			stage "vm-two-hosts-$v" env KVER="$k" STL_VM_QUIET=1 \
				STL_SCENARIO_SKIP="${STL_SCENARIO_SKIP:-rdma_core_.*}" \
				scripts/vm.sh -n 2 -t 900 -o "$out/two-$v" tests/kernel/vm-two.sh
	done
}

# Lane b, in a subshell (its counts come back in a file): the debug
# kernel's suite (waiting for its build on a first run, while the build
# takes the core this lane would use), then what is left of the other
# kernels' stages.
lane_b() {
	pass=0
	fail=0
	failed=()
	skipped=0
	if [[ ${STL_CHECK_DEBUG:-1} != 0 ]]; then
		stage vm-one-host-debug vm_one_debug "$out/debug"
	else
		echo "SKIP stage vm-one-host-debug: STL_CHECK_DEBUG=0"
		skipped=1
	fi
	other_kernels
	printf '%s %s %s\n%s\n' "$pass" "$fail" "$skipped" "${failed[*]}" >"$out/lane-b.res"
}

echo "lane b: the debug kernel, then the other kernels' stages this shell has not taken, alongside (log $out/lane-b.log)"
set -m		# its own process group, to stop it with
lane_b >"$out/lane-b.log" 2>&1 &
lane_b_pid=$!
set +m

stage lint scripts/lint.sh
stage unit make -s -C tests/unit check
stage provider-unit make -s -C userlib check
# Before the VMs boot: tests/kernel/scenarios/55-rdma-core.sh and
# vm-two.sh run these builds' programs, librxe and libstellar (built inside
# each release, userlib/rdma-core-provider.sh; packages in build/deb/) in
# place (a release not
# built fails its scenarios there; STL_SCENARIO_RDMA_CORE_SKIP_MISSING=1
# makes them SKIP instead).  About 30-60 s per release the first time.
rdma_core_builds() {
	local v t0 rc=0
	for v in $(sh userlib/tests/rdma-core-build.sh --list); do
		t0=$SECONDS
		# The release, then libstellar inside it, and its package.
		if nice -n 10 sh userlib/rdma-core-provider.sh "$v" build build/deb >/dev/null; then
			echo "rdma-core $v: ready in $((SECONDS - t0)) s"
		else
			echo "rdma-core $v: build failed after $((SECONDS - t0)) s"
			rc=1
		fi
	done
	sh userlib/tests/deb-check.sh build/deb || rc=1
	return "$rc"
}
stage rdma-core-builds rdma_core_builds
# Slab poisoning: a use-after-free in any scenario becomes an oops.
stage vm-one-host env STL_VM_QUIET=1 STL_VM_APPEND="slub_debug=FZPU" \
	STL_FUZZ_SECONDS="${STL_FUZZ_SECONDS:-20}" scripts/vm.sh -t 2700 -o "$out/one" tests/kernel/vm-one.sh
stage vm-two-hosts env STL_VM_QUIET=1 scripts/vm.sh -n 2 -t 900 -o "$out/two" tests/kernel/vm-two.sh
other_kernels

# Lane b's stages, once it is done.
wait "$lane_b_pid"
lane_b_pid=""
echo "--- lane b"
cat "$out/lane-b.log"
if [[ -s $out/lane-b.res ]]; then
	{
		read -r lb_pass lb_fail lb_skipped
		read -r -a lb_failed
	} <"$out/lane-b.res"
	pass=$((pass + lb_pass))
	fail=$((fail + lb_fail))
	skipped=$lb_skipped
	failed+=("${lb_failed[@]}")
else
	echo "FAIL lane b: it left no result"
	fail=$((fail + 1))
	failed+=(lane-b)
	skipped=0
fi

# The scenario logs: every PASS/FAIL line, so a failure names itself.
for log in "$out"/one*/vm0/script.log "$out"/two*/vm*/script.log "$out"/debug/vm0/script.log; do
	[ -f "$log" ] || continue
	echo "--- ${log#"$out"/}"
	grep -E '^(PASS|FAIL)|passed, [0-9]+ failed' "$log"
done

# Last, so that the end of the output names them: each failed scenario,
# with why (the last lines of its log, and the start of the kernel's
# report where a kernel error failed it).
for log in "$out"/one*/vm0/script.log "$out"/two*/vm*/script.log "$out"/debug/vm0/script.log; do
	[ -f "$log" ] || continue
	grep -E '^FAIL ' "$log" | while read -r line; do
		name=${line#FAIL }
		name=${name%%:*}
		echo "--- ${log#"$out"/}: $line"
		slog=${log%/script.log}/scenarios/$name.log
		tail -n 12 "$slog" 2>/dev/null
		# the kernel's own report, when it failed the scenario
		grep -a '^kernel: ' "$slog" 2>/dev/null | head -n 30
	done
done

echo "logs: $out"
[ $fail = 0 ] || echo "failed stages: ${failed[*]}"
echo "$pass passed, $fail failed, $skipped skipped"
[ $fail = 0 ]
