#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in both test VMs of `scripts/vm.sh -n 2` (scripts/bench.sh): a fabric
# of 4 paths emulated on the sender's link, one tc class per RoCEv2 UDP
# source port bucket (port & 3), each rate-limited, as ECMP would hash a
# flow onto one of 4 links.  VM1 writes to VM0 with ib_write_bw (1 MiB
# messages, for a set time) over:
#   - one raw rxe QP (one flow: one class),
#   - 4 raw rxe QPs (perftest -q 4: each QP's port is hashed from its QP
#     numbers, so they land on the classes they land on),
#   - one Stellar QP (stellar0, libstellar) with its paths (spray_paths 4:
#     path i leaves from path 0's port + i, one per class),
# first with 4 equal classes, then with unequal ones (40/40/20/10 Mbit/s).
# It prints, per run, the bandwidth, the classes that carried the data
# (tc's per-class byte counters, retransmissions included) and the ratio
# to one rxe QP; then the sender's spray counters (requests cut, chunks,
# reposts, path failures).
set -uo pipefail

# shellcheck source=tests/kernel/lib.sh
source tests/kernel/lib.sh
mount_debugfs

ROLE=client
((STL_VM_INDEX == 0)) && ROLE=server
STEP=0
PORT=19100
SECS=${STL_BENCH_SPRAY_SECS:-12}

# Both VMs meet before each run (tests/kernel/lib.sh).
barrier() { vm_barrier 18900 180; }

KO=build/kmod/$(uname -r)/stellar.ko
insmod "$KO" || { echo "bench: insmod $KO failed"; exit 1; }
rdma link add stellar0 type stellar netdev eth0 || exit 1
wait_active stellar0 30 || { echo "bench: stellar0 not ACTIVE"; exit 1; }
export RDMAV_DRIVERS=$PWD/build/libstellar

# The 4 classes on the sender's eth0, rates $1..$4 (Mbit/s): htb, a deep
# pfifo under each (rxe has no congestion control: a drop stalls it), RoCE
# by source port & 3; everything else (the TCP exchange) unshaped.
shape() {
	local i
	local -a r=("$@")
	tc qdisc del dev eth0 root 2>/dev/null
	tc qdisc add dev eth0 root handle 1: htb default 99 || return 1
	tc class add dev eth0 parent 1: classid 1:99 htb rate 1gbit || return 1
	for i in 0 1 2 3; do
		tc class add dev eth0 parent 1: classid "1:1$i" htb \
			rate "${r[i]}mbit" ceil "${r[i]}mbit" || return 1
		tc qdisc add dev eth0 parent "1:1$i" handle "1$i:" pfifo limit 400 || return 1
		tc filter add dev eth0 parent 1: protocol ip prio 2 u32 \
			match ip protocol 17 0xff match ip dport 4791 0xffff \
			match ip sport "$i" 0x0003 flowid "1:1$i" || return 1
	done
}

# Bytes sent so far in class 1:1$1.
class_bytes() {
	tc -s class show dev eth0 classid "1:1$1" 2>/dev/null |
		awk '/Sent/ { print $2; exit }'
}

# one LABEL DEV ARGS...: one ib_write_bw run; the client sets BW (MB/s)
# and USED (the classes that carried at least 10% of the bytes).
one() {
	local label=$1 dev=$2 out i b0 b1 total=0 used=""
	local -a before=()
	shift 2
	PORT=$((PORT + 1))
	barrier
	BW=""
	USED=""
	if [[ $ROLE == server ]]; then
		timeout $((SECS + 120)) ib_write_bw -d "$dev" -x "$STL_GIDX" -F -p "$PORT" \
			-s 1048576 -D "$SECS" -u 20 "$@" >/dev/null 2>&1
		return 0
	fi
	for i in 0 1 2 3; do before[i]=$(class_bytes "$i"); done
	local r0 snap=""
	r0=$(stat_counter rxe0 completer_retry_err)
	# What the scheduler measured, two thirds into a Stellar run.
	if [[ $dev == stellar* ]]; then
		(sleep $((SECS * 2 / 3 + 2)); grep ' spray up ' /sys/kernel/debug/stellar/spray_qps) \
			>"$STL_OUT/spray-qps.$PORT" 2>/dev/null &
		snap=$!
	fi
	for i in $(seq 20); do
		out=$(timeout $((SECS + 120)) ib_write_bw -d "$dev" -x "$STL_GIDX" -F \
			-p "$PORT" -s 1048576 -D "$SECS" -u 20 "$@" "$STL_PEER_IP" 2>&1) && break
		out=""
		sleep 0.5
	done
	BW=$(echo "$out" | awk '/#bytes/ { getline; print $4; exit }')
	local -a d=()
	for i in 0 1 2 3; do
		b1=$(class_bytes "$i")
		b0=${before[i]:-0}
		d[i]=$((${b1:-0} - b0))
		total=$((total + d[i]))
	done
	for i in 0 1 2 3; do
		((total > 0 && d[i] * 10 >= total)) && used+="$i"
	done
	USED=${used:-none}
	echo "bench: $label: ${BW:-?} MB/s, bytes per class: ${d[*]}, rxe0 completer_retry_err $r0 -> $(stat_counter rxe0 completer_retry_err)" >&2
	if [[ -n $snap ]]; then
		wait "$snap"
		sed 's/^/bench: scheduler: /' "$STL_OUT/spray-qps.$PORT" >&2
	fi
}

# Paths of new stellar0 QPs on this side.
echo 4 >/sys/class/infiniband/stellar0/spray_paths

# STL_BENCH_SPRAY_RATES: the class rate sets, comma-separated.
IFS=, read -r -a RATESETS <<<"${STL_BENCH_SPRAY_RATES:-40 40 40 40,40 40 20 10}"
for rates in "${RATESETS[@]}"; do
	# shellcheck disable=SC2086 # four numbers
	if [[ $ROLE == client ]]; then
		shape $rates || { echo "bench: tc setup failed"; exit 1; }
		printf "\n-- 4 classes of %s Mbit/s (sum %d), %d s of 1 MiB RDMA WRITEs\n" \
			"${rates// //}" "$(echo $rates | tr ' ' '+' | bc)" "$SECS"
		printf "%-26s %10s %10s %8s\n" "sender" "MB/s" "classes" "vs 1 QP"
	fi
	one "rxe0, 1 QP" rxe0 -q 1
	base=$BW
	[[ $ROLE == client ]] && printf "%-26s %10s %10s %8s\n" "rxe0, 1 QP" "$BW" "$USED" "1.00"
	one "rxe0, 4 QPs" rxe0 -q 4
	[[ $ROLE == client ]] && printf "%-26s %10s %10s %8.2f\n" "rxe0, 4 QPs (hashed)" "$BW" "$USED" \
		"$(echo "${BW:-0} / ${base:-1}" | bc -l)"
	one "stellar0, 1 QP" stellar0 -q 1
	[[ $ROLE == client ]] && printf "%-26s %10s %10s %8.2f\n" "stellar0, 1 QP, 4 paths" "$BW" "$USED" \
		"$(echo "${BW:-0} / ${base:-1}" | bc -l)"
done

# Failover: 4 classes of 40 Mbit/s, one Stellar QP for FSECS s; at a third
# of the run, a filter drops every RoCE packet of its path 1's class.
# The sender samples each path's bytes about every 0.2 s: a timeline, a gnuplot
# script and, where gnuplot is installed, its chart (PNG) in the output
# folder; then the bandwidth against the 3-path ideal (3 x one rxe QP) and
# the time the paths left took to carry at half the rate before the failure.
FSECS=${STL_BENCH_SPRAY_FAILOVER_SECS:-24}
failover() {
	local t=0 c="" sp line b1 b2 b3 tl=$STL_OUT/spray-failover.dat
	BT="?"
	PORT=$((PORT + 1))
	barrier
	if [[ $ROLE == server ]]; then
		timeout $((FSECS + 120)) ib_write_bw -d stellar0 -x "$STL_GIDX" -F -p "$PORT" \
			-s 1048576 -D "$FSECS" -u 20 >/dev/null 2>&1
		return 0
	fi
	shape 40 40 40 40 || return 1
	timeout $((FSECS + 120)) ib_write_bw -d stellar0 -x "$STL_GIDX" -F -p "$PORT" \
		-s 1048576 -D "$FSECS" -u 20 "$STL_PEER_IP" >"$STL_OUT/spray-failover.client" 2>&1 &
	local pid=$!
	echo "# t_s path1_bytes path2_bytes path3_bytes (sender, cumulative)" >"$tl"
	# The sampling loop starts no process (a fork takes a good part of a
	# second in a guest busy with RDMA): bash's clock, a read of debugfs
	# spray_qps (the paths' counters without netlink, which takes seconds
	# there) and a read with a timeout on a fifo nobody writes for a sleep.
	local t0=${EPOCHREALTIME/./} us l sfd fifo=/tmp/spray-failover.sleep
	local re='path1_bytes ([0-9]+) .*path2_bytes ([0-9]+) .*path3_bytes ([0-9]+)'
	rm -f "$fifo"
	mkfifo "$fifo" && exec {sfd}<>"$fifo" || { echo "bench: no fifo $fifo" >&2; return 1; }
	while kill -0 "$pid" 2>/dev/null; do
		us=$((${EPOCHREALTIME/./} - t0))
		printf -v t '%d.%06d' $((us / 1000000)) $((us % 1000000))
		line=""
		while IFS= read -r l; do
			[[ $l == "stellar0 "*" spray up "* ]] && { line=$l; break; }
		done </sys/kernel/debug/stellar/spray_qps
		if [[ $line =~ $re ]]; then
			b1=${BASH_REMATCH[1]} b2=${BASH_REMATCH[2]} b3=${BASH_REMATCH[3]}
			echo "$t $b1 $b2 $b3" >>"$tl"
			if [[ -z $c ]] && ((us >= FSECS * 1000000 / 3)); then
				sp=$(spray_attr "$line" path1_sport)
				[[ -n $sp ]] || sp=$(spray_attr "$(spray_qps stellar0 | grep ' spray up ' | head -n 1)" path1_sport)
				c=$((sp & 3))
				tc filter add dev eth0 parent 1: protocol ip prio 1 u32 \
					match ip protocol 17 0xff match ip dport 4791 0xffff \
					match ip sport "$c" 0x0003 action drop ||
					echo "bench: blackholing class $c failed" >&2
				echo "bench: failover: t=$t s: class $c (path 1, source port $sp) now drops everything" >&2
				echo "# t=$t: class $c (path 1) blackholed" >>"$tl"
				BT=${t%%.*}
			fi
		fi
		read -r -t 0.2 -u "$sfd" l
	done
	exec {sfd}<&-
	rm -f "$fifo"
	wait "$pid"
	echo "bench: failover: ib_write_bw exited $? ($(grep -c . "$STL_OUT/spray-failover.client") lines)" >&2
	BW=$(awk '/#bytes/ { getline; print $4; exit }' "$STL_OUT/spray-failover.client")
	awk '!/^#/ { if (pt != "") printf "%s %.3f %.3f %.3f\n", $1, ($2 - p2) / ($1 - pt) / 1e6, ($3 - p3) / ($1 - pt) / 1e6, ($4 - p4) / ($1 - pt) / 1e6; pt = $1; p2 = $2; p3 = $3; p4 = $4 }' \
		"$tl" >"$tl.rate"
	cat >"$STL_OUT/spray-failover.gp" <<-GP
	set terminal png size 900,500
	set output "$STL_OUT/spray-failover.png"
	set title "One Stellar QP, 4 paths of 40 Mbit/s; path 1 blackholed at $BT s (QP 0 carries the tails, not shown)"
	set xlabel "time (s)"; set ylabel "MB/s sent (sender, per path)"
	plot "$tl.rate" using 1:2 title "path 1" with lines, "" using 1:3 title "path 2" with lines, "" using 1:4 title "path 3" with lines
	GP
	if command -v gnuplot >/dev/null; then
		gnuplot "$STL_OUT/spray-failover.gp" && echo "bench: failover chart: spray-failover.png" >&2
	fi
}
# STL_BENCH_SPRAY_FAILOVER_SECS=0 leaves the failover run out.
((FSECS > 0)) && failover
if [[ $ROLE == client ]] && ((FSECS > 0)); then
	printf "\n-- failover: 4 classes of 40 Mbit/s, %d s, path 1's class blackholed at %s s\n" "$FSECS" "$BT"
	printf "%-26s %10s %14s\n" "sender" "MB/s" "vs 3 x 1 QP"
	printf "%-26s %10s %14.2f\n" "stellar0, 1 QP, 4 paths" "${BW:-?}" \
		"$(echo "${BW:-0} / (3 * ${base:-1})" | bc -l)"
	echo "  t_s path1 path2 path3 (MB/s sent per path since the sample before)"
	awk '{ print "  " $0 }' "$STL_OUT/spray-failover.dat.rate" | head -n 80
fi
# What the Stellar runs did on the sender: requests cut, chunks, reposts.
[[ $ROLE == client ]] && rdma statistic show link stellar0/1 | tr ' ' '\n' |
	grep -A1 -E '^spray_(wrs|chunk|path_(failures|repairs|check_failures))' |
	paste - - | tr '\t' ' ' | grep -v -- '^--' | sed 's/^/sender counters: /'
[[ $ROLE == client ]] && tc qdisc del dev eth0 root
true
