#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in the test VM (scripts/bench.sh): perftest on Stellar devices driven
# by libstellar (stellar0 <-> stellar1), on Stellar ring devices driven by
# the system's stock librxe (rxe_s0 <-> rxe_s1) and on the raw parent
# (rxe0 <-> rxe0), in the same boot, interleaved run by run, and prints each
# figure with the ratios stellar/rxe and rings/rxe.  For bandwidth and
# message rate a ratio above 1 is better, for latency below 1.  Then the
# kernel CPU time per operation (system + irq + softirq time of the whole
# VM from /proc/stat, over the operations of the run) of each.
set -uo pipefail

REPS=${STL_BENCH_REPS:-3}
DUR=${STL_BENCH_SECONDS:-3}
GIDX=${STL_GID_INDEX:-1}
export RDMAV_DRIVERS=$PWD/build/libstellar

# the module built for the running kernel (build/kmod/$(uname -r), or the
# top-level one when it matches)
KO=build/kmod/$(uname -r)/stellar.ko
[[ -f $KO ]] || KO=./stellar.ko
insmod "$KO" || { echo "bench: insmod $KO failed (built for $(uname -r)?)"; exit 1; }
rdma link add stellar0 type stellar netdev eth0 || exit 1
rdma link add stellar1 type stellar netdev eth0 || exit 1
rdma link add rxe_s0 type stellar netdev eth0 || exit 1
rdma link add rxe_s1 type stellar netdev eth0 || exit 1

# Kernel time of the VM so far, in /proc/stat ticks (USER_HZ).
ktime() {
	awk '/^cpu / { print $4 + $7 + $8; exit }' /proc/stat
}

# run_pair TOOL SERVER_DEV CLIENT_DEV ARGS... -> prints the client's result
# line; KTICKS is set to the kernel ticks the pair took
run_pair() {
	local tool=$1 sdev=$2 cdev=$3 port=$((18515 + RANDOM % 1000)) k0
	shift 3
	k0=$(ktime)
	"$tool" -d "$sdev" -x "$GIDX" -F -p "$port" "$@" >/dev/null 2>&1 &
	local spid=$!
	local out="" i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.5
		out=$("$tool" -d "$cdev" -x "$GIDX" -F -p "$port" "$@" 127.0.0.1 2>/dev/null) && break
		out=""
	done
	wait "$spid" 2>/dev/null
	KTICKS=$(($(ktime) - k0))
	# the line after the header holding the figures
	LINE=$(echo "$out" | awk '/#bytes/ { getline; print; exit }')
}

DEVS=(stellar rings rxe)
# measure NAME FIELD TOOL ARGS...: FIELD is the awk column to average
declare -A SUM KSUM OPS
measure() {
	local name=$1 field=$2 tool=$3 dev v n
	shift 3
	for dev in "${DEVS[@]}"; do
		SUM[$name,$dev]=0
		KSUM[$name,$dev]=0
		OPS[$name,$dev]=0
	done
	for ((r = 0; r < REPS; r++)); do
		for dev in "${DEVS[@]}"; do
			case $dev in
			stellar) run_pair "$tool" stellar0 stellar1 "$@" ;;
			rings) RDMAV_DRIVERS= run_pair "$tool" rxe_s0 rxe_s1 "$@" ;;
			rxe) run_pair "$tool" rxe0 rxe0 "$@" ;;
			esac
			v=$(echo "$LINE" | awk -v f="$field" '{ print $f }')
			n=$(echo "$LINE" | awk '{ print $2 }')
			if [ -z "$v" ] || [ -z "$n" ]; then
				echo "bench: $name on $dev produced no figure"
				exit 1
			fi
			SUM[$name,$dev]=$(echo "${SUM[$name,$dev]} + $v" | bc -l)
			KSUM[$name,$dev]=$((KSUM[$name,$dev] + KTICKS))
			OPS[$name,$dev]=$((OPS[$name,$dev] + n))
		done
	done
	local s g r
	s=$(echo "${SUM[$name,stellar]} / $REPS" | bc -l)
	g=$(echo "${SUM[$name,rings]} / $REPS" | bc -l)
	r=$(echo "${SUM[$name,rxe]} / $REPS" | bc -l)
	printf "%-26s %10.3f %10.3f %10.3f %8.2f %8.2f\n" "$name" "$s" "$g" "$r" \
		"$(echo "$s / $r" | bc -l)" "$(echo "$g / $r" | bc -l)"
}

printf "%-26s %10s %10s %10s %8s %8s\n" "benchmark (mean of $REPS)" stellar rings rxe \
	stl/rxe ring/rxe
measure "write_bw 64KiB [MB/s]" 4 ib_write_bw -s 65536 -D "$DUR"
measure "write_bw 4KiB [MB/s]" 4 ib_write_bw -s 4096 -D "$DUR"
measure "send_bw 64KiB [MB/s]" 4 ib_send_bw -s 65536 -D "$DUR"
measure "send_bw 4KiB [MB/s]" 4 ib_send_bw -s 4096 -D "$DUR"
measure "read_bw 64KiB [MB/s]" 4 ib_read_bw -s 65536 -D "$DUR"
measure "write 8B rate [Mpps]" 5 ib_write_bw -s 8 -D "$DUR"
measure "write_lat 2B avg [us]" 6 ib_write_lat -s 2 -n 1000
measure "send_lat 2B avg [us]" 6 ib_send_lat -s 2 -n 1000
measure "read_lat 2B avg [us]" 6 ib_read_lat -s 2 -n 1000

# Kernel CPU per operation, from the same runs: the VM's system, irq and
# softirq ticks (10 ms each) over the operations the clients counted
# (#iterations; for a latency test each is one round trip).
echo
printf "%-26s %10s %10s %10s\n" "kernel CPU [us/op]" stellar rings rxe
for name in "write_bw 4KiB [MB/s]" "write 8B rate [Mpps]" "send_lat 2B avg [us]"; do
	printf "%-26s" "${name%% \[*}"
	for dev in "${DEVS[@]}"; do
		if ((OPS[$name,$dev] > 0)); then
			printf " %10.2f" "$(echo "${KSUM[$name,$dev]} * 10000 / ${OPS[$name,$dev]}" | bc -l)"
		else
			printf " %10s" n/a
		fi
	done
	echo
done
