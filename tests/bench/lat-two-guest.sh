#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in both test VMs of `scripts/vm.sh -n 2` (scripts/bench.sh): perftest
# latency across the two VMs, ring device rxe_s0 (driven by the stock
# librxe) against raw rxe0, interleaved run by run in the same boot.  VM0
# serves, VM1 is the client and prints, per test, the mean over the runs of
# the median and of the average latency (a run whose figures are perftest's
# "inf" is left out), and the ratios rings/rxe (below 1 is better).  In one VM the ACK of a SEND and its receive are processed in
# the same pass, which favours raw rxe (see README); across two VMs the wire
# is between them, as on real hosts.
set -uo pipefail

# shellcheck source=tests/kernel/lib.sh
source tests/kernel/lib.sh

REPS=${STL_BENCH_REPS:-3}
ROLE=client
((STL_VM_INDEX == 0)) && ROLE=server
STEP=0
PORT=19000

# Both VMs meet before each run (tests/kernel/lib.sh).
barrier() { vm_barrier 18800 120; }

KO=build/kmod/$(uname -r)/stellar.ko
insmod "$KO" || { echo "bench: insmod $KO failed"; exit 1; }
rdma link add rxe_s0 type stellar netdev eth0 || exit 1
unset RDMAV_DRIVERS

# one TOOL DEV ARGS...: one run; the client sets LINE to perftest's figures
one() {
	local tool=$1 dev=$2 out i
	shift 2
	PORT=$((PORT + 1))
	barrier
	LINE=""
	if [[ $ROLE == server ]]; then
		timeout 120 "$tool" -d "$dev" -x "$STL_GIDX" -F -p "$PORT" "$@" >/dev/null 2>&1
		return 0
	fi
	for i in $(seq 20); do
		out=$(timeout 120 "$tool" -d "$dev" -x "$STL_GIDX" -F -p "$PORT" "$@" \
			"$STL_PEER_IP" 2>&1) && break
		out=""
		sleep 0.5
	done
	LINE=$(echo "$out" | awk '/#bytes/ { getline; print; exit }')
}

[[ $ROLE == client ]] &&
	printf "%-22s %10s %10s %10s %10s %8s %8s\n" "benchmark (mean of $REPS)" \
		"rings med" "rxe med" "rings avg" "rxe avg" "med r/x" "avg r/x"
for t in send write read; do
	declare -A MED=([rxe_s0]=0 [rxe0]=0) AVG=([rxe_s0]=0 [rxe0]=0) N=([rxe_s0]=0 [rxe0]=0)
	for ((r = 0; r < REPS; r++)); do
		for dev in rxe_s0 rxe0; do
			one "ib_${t}_lat" "$dev" -s 2 -n 1000
			[[ $ROLE == client ]] || continue
			# columns: bytes iters min max typical avg ...
			read -r -a f <<<"$LINE"
			if [[ ${f[4]:-} =~ ^[0-9.]+$ && ${f[5]:-} =~ ^[0-9.]+$ ]]; then
				MED[$dev]=$(echo "${MED[$dev]} + ${f[4]}" | bc -l)
				AVG[$dev]=$(echo "${AVG[$dev]} + ${f[5]}" | bc -l)
				N[$dev]=$((N[$dev] + 1))
			else
				# perftest in the VM now and then prints "inf" for
				# every figure, on any device: that run is left out
				echo "bench: ib_${t}_lat on $dev gave no figures (run left out): '$LINE'" >&2
			fi
		done
	done
	[[ $ROLE == client ]] || continue
	if ((N[rxe_s0] == 0 || N[rxe0] == 0)); then
		echo "bench: ib_${t}_lat: no run gave figures on one of the devices"
		exit 1
	fi
	for dev in rxe_s0 rxe0; do
		MED[$dev]=$(echo "${MED[$dev]} / ${N[$dev]}" | bc -l)
		AVG[$dev]=$(echo "${AVG[$dev]} / ${N[$dev]}" | bc -l)
	done
	printf "%-22s %10.2f %10.2f %10.2f %10.2f %8.2f %8.2f\n" "${t}_lat 2B [us]" \
		"${MED[rxe_s0]}" "${MED[rxe0]}" "${AVG[rxe_s0]}" "${AVG[rxe0]}" \
		"$(echo "${MED[rxe_s0]} / ${MED[rxe0]}" | bc -l)" \
		"$(echo "${AVG[rxe_s0]} / ${AVG[rxe0]}" | bc -l)"
done
true
