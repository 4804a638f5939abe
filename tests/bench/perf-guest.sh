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
#
# The same pairs again with the libibverbs and stock librxe of the upstream
# releases in STL_BENCH_RELEASES (default 39.0 64.0, built by
# scripts/bench.sh under build/rdma-core), on the ring devices and on rxe0,
# as ratios of the two.  Debian's perftest is linked with libmlx5 and
# libefa, which need Debian's libibverbs: it runs with the stand-ins of
# tests/bench/stl_perftest_stubs.c (build/bench/perftest-stubs) instead.
set -uo pipefail

REPS=${STL_BENCH_REPS:-3}
DUR=${STL_BENCH_SECONDS:-3}
GIDX=${STL_GID_INDEX:-1}
RELEASES=${STL_BENCH_RELEASES-39.0 64.0}
STUBS=$PWD/build/bench/perftest-stubs
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
# line; KTICKS is set to the kernel ticks the pair took.  With RC_TREE set,
# both sides run over that release's libibverbs and librxe, and the server
# must have mapped them (else the pair fails).
run_pair() {
	local tool=$1 sdev=$2 cdev=$3 port=$((18515 + RANDOM % 1000)) k0
	local -a envs=()
	shift 3
	[[ -n ${RC_TREE:-} ]] &&
		envs=(env "LD_LIBRARY_PATH=$RC_TREE/lib:$STUBS" "RDMAV_DRIVERS=$RC_TREE/lib/librxe")
	k0=$(ktime)
	"${envs[@]}" "$tool" -d "$sdev" -x "$GIDX" -F -p "$port" "$@" >/dev/null 2>&1 &
	local spid=$!
	local out="" i maps=ok
	for i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.5
		if [[ -n ${RC_TREE:-} && $maps == ok ]] &&
		   ! grep -q "$RC_TREE/lib/librxe-rdmav" "/proc/$spid/maps" 2>/dev/null; then
			# the server opens its device before it listens
			((i < 10)) && continue
			maps=bad
		fi
		out=$("${envs[@]}" "$tool" -d "$cdev" -x "$GIDX" -F -p "$port" "$@" 127.0.0.1 2>/dev/null) && break
		out=""
	done
	wait "$spid" 2>/dev/null
	KTICKS=$(($(ktime) - k0))
	if [[ $maps != ok ]]; then
		echo "bench: $tool on $sdev did not load $RC_TREE/lib/librxe" >&2
		out=""
	fi
	# the line after the header holding the figures
	LINE=$(echo "$out" | awk '/#bytes/ { getline; print; exit }')
}

DEVS=(stellar rings rxe)
for rel in $RELEASES; do
	[[ -f build/rdma-core/rdma-core-$rel/build/lib/libibverbs.so.1 && -f $STUBS/libmlx5.so.1 ]] || {
		echo "bench: rdma-core $rel or the perftest stand-ins are not built (scripts/bench.sh builds them)"
		exit 1
	}
	DEVS+=("rings@$rel" "rxe@$rel")
done
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
			local try
			# perftest in the VM now and then prints "inf" for every
			# latency figure, or 0 MB/s, on any device: run it again
			for try in 1 2 3; do
				RC_TREE=""
				[[ $dev == *@* ]] &&
					RC_TREE=$PWD/build/rdma-core/rdma-core-${dev#*@}/build
				case $dev in
				stellar) run_pair "$tool" stellar0 stellar1 "$@" ;;
				rings*) RDMAV_DRIVERS= run_pair "$tool" rxe_s0 rxe_s1 "$@" ;;
				rxe*) run_pair "$tool" rxe0 rxe0 "$@" ;;
				esac
				v=$(echo "$LINE" | awk -v f="$field" '{ print $f }')
				n=$(echo "$LINE" | awk '{ print $2 }')
				[[ $v =~ ^[0-9]+(\.[0-9]+)?$ && $n =~ ^[0-9]+$ ]] &&
					(($(echo "$v > 0" | bc -l))) && break
				echo "bench: $name on $dev: no figure in '$LINE' (try $try)" >&2
				v=""
			done
			if [ -z "$v" ]; then
				echo "bench: $name on $dev produced no figure"
				exit 1
			fi
			SUM[$name,$dev]=$(echo "${SUM[$name,$dev]} + $v" | bc -l)
			KSUM[$name,$dev]=$((KSUM[$name,$dev] + KTICKS))
			OPS[$name,$dev]=$((OPS[$name,$dev] + n))
		done
	done
	local s g r rel
	s=$(echo "${SUM[$name,stellar]} / $REPS" | bc -l)
	g=$(echo "${SUM[$name,rings]} / $REPS" | bc -l)
	r=$(echo "${SUM[$name,rxe]} / $REPS" | bc -l)
	printf "%-26s %10.3f %10.3f %10.3f %8.2f %8.2f" "$name" "$s" "$g" "$r" \
		"$(echo "$s / $r" | bc -l)" "$(echo "$g / $r" | bc -l)"
	for rel in $RELEASES; do
		printf " %8.2f" "$(echo "${SUM[$name,rings@$rel]} / ${SUM[$name,rxe@$rel]}" | bc -l)"
	done
	echo
	for rel in $RELEASES; do
		REL_LINES+=("$(printf "%-26s %-6s %10.3f %10.3f %8.2f" "$name" "${rel%.0}" \
			"$(echo "${SUM[$name,rings@$rel]} / $REPS" | bc -l)" \
			"$(echo "${SUM[$name,rxe@$rel]} / $REPS" | bc -l)" \
			"$(echo "${SUM[$name,rings@$rel]} / ${SUM[$name,rxe@$rel]}" | bc -l)")")
	done
}

# Columns v39, v64...: ring/rxe with that release's libibverbs and librxe.
REL_LINES=()
printf "%-26s %10s %10s %10s %8s %8s" "benchmark (mean of $REPS)" stellar rings rxe \
	stl/rxe ring/rxe
for rel in $RELEASES; do
	printf " %8s" "v${rel%.0}"
done
echo
measure "write_bw 64KiB [MB/s]" 4 ib_write_bw -s 65536 -D "$DUR"
measure "write_bw 4KiB [MB/s]" 4 ib_write_bw -s 4096 -D "$DUR"
measure "send_bw 64KiB [MB/s]" 4 ib_send_bw -s 65536 -D "$DUR"
measure "send_bw 4KiB [MB/s]" 4 ib_send_bw -s 4096 -D "$DUR"
measure "read_bw 64KiB [MB/s]" 4 ib_read_bw -s 65536 -D "$DUR"
measure "write 8B rate [Mpps]" 5 ib_write_bw -s 8 -D "$DUR"
measure "write_lat 2B avg [us]" 6 ib_write_lat -s 2 -n 1000
measure "send_lat 2B avg [us]" 6 ib_send_lat -s 2 -n 1000
measure "read_lat 2B avg [us]" 6 ib_read_lat -s 2 -n 1000

if ((${#REL_LINES[@]})); then
	echo
	echo "The ring devices and rxe0 driven by upstream releases' libibverbs and librxe:"
	printf "%-26s %-6s %10s %10s %8s\n" benchmark rdma-core rings rxe ring/rxe
	printf "%s\n" "${REL_LINES[@]}"
fi

# Kernel CPU per operation, from the same runs: the VM's system, irq and
# softirq ticks (10 ms each) over the operations the clients counted
# (#iterations; for a latency test each is one round trip).
echo
printf "%-26s %10s %10s %10s\n" "kernel CPU [us/op]" stellar rings rxe
for name in "write_bw 4KiB [MB/s]" "write 8B rate [Mpps]" "send_lat 2B avg [us]"; do
	printf "%-26s" "${name%% \[*}"
	for dev in stellar rings rxe; do
		if ((OPS[$name,$dev] > 0)); then
			printf " %10.2f" "$(echo "${KSUM[$name,$dev]} * 10000 / ${OPS[$name,$dev]}" | bc -l)"
		else
			printf " %10s" n/a
		fi
	done
	echo
done
