#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in the test VM (scripts/bench.sh): perftest on Stellar devices
# (stellar0 <-> stellar1) and on the raw parent (rxe0 <-> rxe0), in the same
# boot, interleaved run by run, and prints each figure with the ratio
# stellar/rxe.  For bandwidth a ratio above 1 is better, for latency below 1.
set -uo pipefail

REPS=${STL_BENCH_REPS:-3}
DUR=${STL_BENCH_SECONDS:-3}
GIDX=${STL_GID_INDEX:-1}
export RDMAV_DRIVERS=$PWD/build/libstellar

insmod ./stellar.ko || { echo "bench: insmod failed"; exit 1; }
rdma link add stellar0 type stellar netdev eth0 || exit 1
rdma link add stellar1 type stellar netdev eth0 || exit 1

# run_pair TOOL SERVER_DEV CLIENT_DEV ARGS... -> prints the client's result line
run_pair() {
	local tool=$1 sdev=$2 cdev=$3 port=$((18515 + RANDOM % 1000))
	shift 3
	"$tool" -d "$sdev" -x "$GIDX" -F -p "$port" "$@" >/dev/null 2>&1 &
	local spid=$!
	local out="" i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.5
		out=$("$tool" -d "$cdev" -x "$GIDX" -F -p "$port" "$@" 127.0.0.1 2>/dev/null) && break
		out=""
	done
	wait "$spid" 2>/dev/null
	# the line after the header holding the figures
	echo "$out" | awk '/#bytes/ { getline; print; exit }'
}

# measure NAME KIND FIELD TOOL ARGS...: FIELD is the awk column to average
declare -A SUM
measure() {
	local name=$1 field=$2 tool=$3 dev line v
	shift 3
	for dev in stellar rxe; do SUM[$name,$dev]=0; done
	for ((r = 0; r < REPS; r++)); do
		for dev in stellar rxe; do
			if [ $dev = stellar ]; then
				line=$(run_pair "$tool" stellar0 stellar1 "$@")
			else
				line=$(run_pair "$tool" rxe0 rxe0 "$@")
			fi
			v=$(echo "$line" | awk -v f="$field" '{ print $f }')
			if [ -z "$v" ]; then
				echo "bench: $name on $dev produced no figure"
				exit 1
			fi
			SUM[$name,$dev]=$(echo "${SUM[$name,$dev]} + $v" | bc -l)
		done
	done
	local s r
	s=$(echo "${SUM[$name,stellar]} / $REPS" | bc -l)
	r=$(echo "${SUM[$name,rxe]} / $REPS" | bc -l)
	printf "%-26s %12.2f %12.2f %8.2f\n" "$name" "$s" "$r" \
		"$(echo "$s / $r" | bc -l)"
}

printf "%-26s %12s %12s %8s\n" "benchmark (mean of $REPS)" stellar rxe ratio
measure "write_bw 64KiB [MB/s]" 4 ib_write_bw -s 65536 -D "$DUR"
measure "write_bw 4KiB [MB/s]" 4 ib_write_bw -s 4096 -D "$DUR"
measure "send_bw 64KiB [MB/s]" 4 ib_send_bw -s 65536 -D "$DUR"
measure "send_bw 4KiB [MB/s]" 4 ib_send_bw -s 4096 -D "$DUR"
measure "read_bw 64KiB [MB/s]" 4 ib_read_bw -s 65536 -D "$DUR"
measure "write_lat 2B avg [us]" 6 ib_write_lat -s 2 -n 1000
measure "send_lat 2B avg [us]" 6 ib_send_lat -s 2 -n 1000
