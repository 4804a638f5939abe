#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in the test VM (scripts/bench.sh): the PVDMA benchmarks.
#  1. Time to first RDMA of a "container" with M MiB of touched memory that
#     needs a working set of W MiB.  Baseline (VF passthrough proxy): pin all
#     of M, one registration over it on raw rxe0.  Stellar: register W on
#     stellar0.  Each figure is a fresh process; mean of REPS.
#  2. Registration churn: register/deregister the same buffer, Stellar (pin
#     cache) against raw rxe0, per size.
set -uo pipefail

REPS=${STL_BENCH_REPS:-3}
W=${STL_BENCH_WSET_MIB:-256}
MEMS=${STL_BENCH_MEMS_MIB:-"1024 2048 4096 8192"}
GIDX=${STL_GID_INDEX:-1}
B=build/tests/stl_pvdma_bench
export RDMAV_DRIVERS=$PWD/build/libstellar

insmod ./stellar.ko || { echo "bench: insmod failed"; exit 1; }
rdma link add stellar0 type stellar netdev eth0 || exit 1

# mean FIELD CMD...: run CMD REPS times, average the number after FIELD
mean() {
	local field=$1 sum=0 v r
	shift
	for ((r = 0; r < REPS; r++)); do
		v=$("$@" | awk -v f="$field" '$1 == f { print $2 }')
		[ -n "$v" ] || { echo "bench: no $field from: $*" >&2; return 1; }
		sum=$(echo "$sum + $v" | bc -l)
	done
	echo "$sum / $REPS" | bc -l
}

avail=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
printf "time to first RDMA, working set %d MiB (mean of %d, ms)\n" "$W" "$REPS"
printf "%-12s %14s %14s %8s\n" "memory MiB" "rxe pin-all" "stellar" "ratio"
for m in $MEMS; do
	if ((m + 512 > avail)); then
		echo "($m MiB does not fit in this VM's $avail MiB)"
		continue
	fi
	base=$(mean start_ms $B start -d rxe0 -p rxe0 -M "$m" -W "$m" -g "$GIDX") || exit 1
	stl=$(mean start_ms $B start -d stellar0 -p rxe0 -M "$m" -W "$W" -g "$GIDX") || exit 1
	printf "%-12s %14.1f %14.1f %8.1f\n" "$m" "$base" "$stl" \
		"$(echo "$base / $stl" | bc -l)"
done

echo
printf "registration churn: register + deregister the same buffer (us)\n"
printf "%-12s %14s %14s %8s\n" "size" "rxe" "stellar" "ratio"
for s in 4096 65536 1048576 16777216 67108864; do
	base=$(mean churn_us $B churn -d rxe0 -s "$s" -n 50) || exit 1
	stl=$(mean churn_us $B churn -d stellar0 -s "$s" -n 50) || exit 1
	printf "%-12s %14.1f %14.1f %8.1f\n" "$s" "$base" "$stl" \
		"$(echo "$base / $stl" | bc -l)"
done
rdma statistic show link stellar0/1
