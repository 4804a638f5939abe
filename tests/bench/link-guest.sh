#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in the test VM (scripts/bench.sh): devices created and deleted from
# one process over RDMA netlink (build/tests/stl_link_bench), each request
# timed from send to acknowledgement.  Stellar: N devices over eth0's rxe0.
# Baseline: rxe devices, one per netdev (rxe takes no more), over dummy
# netdevs made beforehand.  The ratio is of the medians.
set -uo pipefail

N=${STL_BENCH_LINKS:-1000}
NRXE=${STL_BENCH_RXE_LINKS:-200}
B=build/tests/stl_link_bench

insmod ./stellar.ko || { echo "bench: insmod failed"; exit 1; }
for ((i = 0; i < NRXE; i++)); do
	echo "link add stlbd$i type dummy"
done >/tmp/dummies
ip -batch /tmp/dummies || { echo "bench: cannot create $NRXE dummy netdevs"; exit 1; }

stl=$("$B" -t stellar -n "$N" -d eth0) || { echo "bench: stellar run failed: $stl"; exit 1; }
rxe=$("$B" -t rxe -n "$NRXE" -d stlbd) || { echo "bench: rxe run failed: $rxe"; exit 1; }
echo "$stl"
echo "$rxe"
field() { awk -v op="op=$2" -v f="$3=" '$0 ~ op { for (i = 1; i <= NF; i++) if (index($i, f) == 1) print substr($i, length(f) + 1) }' <<<"$1"; }
printf "%-8s %10s %14s %12s %14s %12s\n" op "" "stellar med" "stellar p99" "rxe med" "ratio (med)"
for op in create delete; do
	sm=$(field "$stl" "$op" median_us)
	sp=$(field "$stl" "$op" p99_us)
	rm=$(field "$rxe" "$op" median_us)
	printf "%-8s %10s %12s us %10s us %12s us %12.2f\n" "$op" "n=$N" "$sm" "$sp" "$rm" \
		"$(echo "$sm / $rm" | bc -l)"
done
sk=$(field "$stl" memory kib_per_device)
rk=$(field "$rxe" memory kib_per_device)
printf "%-8s %10s %12s KiB %13s %12s KiB %12.2f\n" memory "per dev" "$sk" "" "$rk" \
	"$(echo "$sk / $rk" | bc -l)"
