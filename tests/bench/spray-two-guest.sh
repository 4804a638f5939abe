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
		tc filter add dev eth0 parent 1: protocol ip prio 1 u32 \
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
	echo "bench: $label: ${BW:-?} MB/s, bytes per class: ${d[*]}" >&2
}

# Paths of new stellar0 QPs on this side.
echo 4 >/sys/class/infiniband/stellar0/spray_paths

for rates in "40 40 40 40" "40 40 20 10"; do
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
	r0=$(stat_counter rxe0 completer_retry_err)
	one "stellar0, 1 QP" stellar0 -q 1
	[[ $ROLE == client ]] &&
		echo "bench: stellar0: the sender's rxe0 retransmitted $(($(stat_counter rxe0 completer_retry_err) - r0)) times (completer_retry_err)" >&2
	[[ $ROLE == client ]] && printf "%-26s %10s %10s %8.2f\n" "stellar0, 1 QP, 4 paths" "$BW" "$USED" \
		"$(echo "${BW:-0} / ${base:-1}" | bc -l)"
done
# What the Stellar runs did on the sender: requests cut, chunks, reposts.
[[ $ROLE == client ]] && rdma statistic show link stellar0/1 | tr ' ' '\n' |
	grep -A1 -E '^spray_(wrs|chunk|path_(failures|repairs|check_failures))' |
	paste - - | tr '\t' ' ' | grep -v -- '^--' | sed 's/^/sender counters: /'
[[ $ROLE == client ]] && tc qdisc del dev eth0 root
true
