#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make bench: Stellar against raw rxe, each pair from the same VM boot, as
# ratios (these machines are shared and noisy: compare ratios, not figures).
#   1. perftest bandwidth, message rate and latency, and kernel CPU per
#      operation, libstellar devices and ring devices (tests/bench/perf-guest.sh)
#   2. perftest latency across two VMs, ring device against raw rxe
#      (tests/bench/lat-two-guest.sh)
#   3. PVDMA: time to first RDMA and registration churn
#      (tests/bench/pvdma-guest.sh), in a VM with as much memory as fits
#   4. devices created and deleted from one process over netlink, 1000
#      Stellar devices against rxe devices (tests/bench/link-guest.sh), and
#      the kernel memory of an idle device
#   5. bandwidth share: two devices weighted 3:1, a rate cap, a latency-class
#      device's latency under bulk load, against the parent alone
#      (tests/bench/share-guest.sh)
#   6. pod start: N containers started at once by podman, each with its own
#      device and 1 GiB registered, until all have sent their first message,
#      against containers sharing rxe0 (tests/bench/pod-guest.sh)
#   7. eMTT: 1 GiB registered as small pages, THP and hugetlbfs pages and a
#      dma-buf, parent MR entries and first registration time; write
#      bandwidth into a dma-buf MR against host memory; revocation times
#      (tests/bench/emtt-guest.sh)
#   8. spray: 4 rate-limited paths (tc classes per UDP source port) between
#      two VMs, one rxe QP vs 4 hashed rxe QPs vs one Stellar QP with its
#      paths, equal and unequal classes, then a path blackholed mid-run
#      (tests/bench/spray-two-guest.sh), with a chart of the failover run;
#      then the same at fabric scale, simulated (tools/spraysim), with charts
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --bench
make -s all

# perftest over upstream releases' libibverbs and librxe as well
# (tests/bench/perf-guest.sh): the releases, and stand-ins for the vendor
# libraries Debian's perftest is linked with
RELEASES=${STL_BENCH_RELEASES-39.0 64.0}
export STL_BENCH_RELEASES=$RELEASES
for v in $RELEASES; do
	sh userlib/tests/rdma-core-build.sh "$v" build >/dev/null
done
stubs=build/bench/perftest-stubs
mkdir -p "$stubs"
for lib in mlx5 efa; do
	cc -shared -fPIC -O2 -Wall -Wextra -DSTL_STUB_${lib^^} \
		-Wl,--version-script="tests/bench/stl_perftest_$lib.map" \
		-Wl,-soname,"lib$lib.so.1" -o "$stubs/lib$lib.so.1" \
		tests/bench/stl_perftest_stubs.c
done

# run OUTDIR VM ARGS...: a VM run (scripts/vm.sh ARGS); prints the script
# log of VM number VM (the one that reports)
run() {
	local out=$1 vm=$2
	shift 2
	if ! STL_VM_QUIET=1 scripts/vm.sh -o "$out" "$@" >/dev/null; then
		echo "bench: VM run failed, logs in $out"
		tail -50 "$out/vm$vm/script.log" 2>/dev/null
		exit 1
	fi
	cat "$out/vm$vm/script.log"
}

out=$(mktemp -d)
echo "== perftest: stellar0<->stellar1 (libstellar), rxe_s0<->rxe_s1 (rings, stock librxe) vs rxe0<->rxe0, one VM"
run "$out/perf" 0 -t 1200 tests/bench/perf-guest.sh
echo
echo "== perftest latency across two VMs: rxe_s0 (rings, stock librxe) vs rxe0"
run "$out/lat2" 1 -n 2 -t 900 tests/bench/lat-two-guest.sh

# Leave the host 4 GiB; the benchmark skips sizes that do not fit.
host_mib=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
vm_mib=$((host_mib - 4096))
((vm_mib > 10240)) && vm_mib=10240
echo
echo "== devices created and deleted over netlink from one process: stellar vs rxe"
run "$out/link" 0 -t 900 tests/bench/link-guest.sh
echo
echo "== bandwidth share between the devices of one parent: weights, cap, latency class"
run "$out/share" 0 -t 900 tests/bench/share-guest.sh
echo
# Pod start: as much memory as the host can give, so that the baseline's
# pinned registrations fit where they can.
pod_mib=$((host_mib - 4096))
((pod_mib > 20480)) && pod_mib=20480
echo "== pod start: containers with a device and 1 GiB registered each, VM with $pod_mib MiB"
run "$out/pod" 0 -t 1800 -m "$pod_mib" tests/bench/pod-guest.sh
echo
echo "== PVDMA, VM with $vm_mib MiB"
run "$out/pvdma" 0 -t 1800 -m "$vm_mib" tests/bench/pvdma-guest.sh
echo
echo "== eMTT: parent MR entries and first registration, small and huge pages and a dma-buf; dma-buf bandwidth and revocation, VM with 4608 MiB"
run "$out/emtt" 0 -t 900 -m 4608 tests/bench/emtt-guest.sh
echo
echo "== spray: 4 paths as tc classes by UDP source port, two VMs: one rxe QP, 4 rxe QPs, one Stellar QP"
run "$out/spray" 1 -n 2 -t 900 tests/bench/spray-two-guest.sh
# The failover chart, drawn here (the guests have no gnuplot).
if (cd "$out/spray/vm1" && gnuplot spray-failover.gp); then
	echo "bench: failover chart: $out/spray/vm1/spray-failover.png"
else
	echo "bench: the failover chart could not be drawn (gnuplot: scripts/deps.sh --bench)"
fi
echo
echo "== spray at fabric scale (tools/spraysim, calibrated by the two-VM run above: calib/two-vm.conf)"
sim=build/tools/spraysim
simout=$out/spraysim
mkdir -p "$simout"
# Ring all-reduce steps over 1024 hosts (32 leaves of 32, 16 spines) and
# an all-to-all over 256 (16 of 16, 16 spines, 16 paths), 4 failed cables
# each: ECMP vs spray vs spray with failover, a table each and a chart of
# the goodput over time.
sim_run() {
	local name=$1
	shift
	echo "-- $name"
	"$sim" --calib tools/spraysim/calib/two-vm.conf --fail 4 \
		--timeline "$simout/$name.dat" --gnuplot "$simout/$name.gp" "$@" ||
		{ echo "bench: spraysim $name failed"; exit 1; }
	if gnuplot "$simout/$name.gp"; then
		echo "bench: chart: $simout/$name.dat.png"
	else
		echo "bench: the $name chart could not be drawn (gnuplot: scripts/deps.sh --bench)"
	fi
}
sim_run ring-1024 --leaves 32 --spines 16 --hosts-per-leaf 32 --traffic ring --bytes 1G
sim_run alltoall-256 --leaves 16 --spines 16 --hosts-per-leaf 16 --paths 16 \
	--traffic alltoall --bytes 16M
