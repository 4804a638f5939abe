#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in the test VM (scripts/bench.sh): the bandwidth share between the
# devices of one parent (rxe0), against what the parent does alone.
#  1. C: raw rxe0's ib_write_bw (64 KiB) alone, the parent's capacity here.
#  2. Weights: share_total_bytes = 0.6 C (what the parent delivers to two
#     writers, with room: the share holds when the parent can carry it); stellar0 (weight 300) and stellar1
#     (weight 100) write at once for SECS s; the rates their paced_bytes
#     moved at, and their ratio (aim 3 +-10%).
#  3. Cap: rate_limit_bytes = C / 4 on stellar0 alone: the rate it moved at,
#     against the cap (aim within 5%).
#  4. Latency class: 2-byte round trips (ibv_rc_pingpong) on stellar1 (in
#     the latency class) idle and while stellar0 (bulk, share 0.6 C) writes
#     64 KiB for SECS s, as a ratio (aim <= 1.5), with the share yielding
#     75% (the default), 50% and 0% to latency traffic; the same on raw
#     rxe0 under raw rxe0's own load (no share: what rxe alone gives).
set -uo pipefail

SECS=${STL_BENCH_SECONDS:-8}
GIDX=${STL_GID_INDEX:-1}
IP=$STL_MY_IP
LIB=$PWD/build/libstellar
SYS=/sys/class/infiniband

insmod ./stellar.ko || { echo "bench: insmod failed"; exit 1; }
for d in stellar0 stellar1; do
	rdma link add "$d" type stellar netdev eth0 || exit 1
done

# env's arguments for device $1's provider: libstellar for stellarN, the
# stock librxe for rxe*.
drv() { [[ $1 == stellar* ]] && echo "RDMAV_DRIVERS=$LIB" || echo "-uRDMAV_DRIVERS"; }

# bw DEV PORT [perftest args]: ib_write_bw 64 KiB from DEV to rxe0 for
# SECS s in the background; sets BWPID (the client) and BWSPID (the server).
bw() {
	local dev=$1 port=$2
	shift 2
	ib_write_bw -d rxe0 -x "$GIDX" -F -p "$port" -s 65536 -D "$SECS" "$@" >/dev/null 2>&1 &
	BWSPID=$!
	sleep 1
	env "$(drv "$dev")" ib_write_bw -d "$dev" -x "$GIDX" -F -p "$port" -s 65536 -D "$SECS" \
		"$@" "$IP" >"/tmp/bw-$dev-$port" 2>&1 &
	BWPID=$!
}

counter() {
	rdma statistic show link "$1/1" | awk -v n="$2" '{ for (i = 1; i < NF; i++) if ($i == n) print $(i + 1) }'
}

# rate DEV: bytes per second DEV's paced_bytes moves at over SECS/2 s
rate() {
	local b0 t0 b1 t1
	b0=$(counter "$1" paced_bytes)
	t0=$EPOCHREALTIME
	sleep $((SECS / 2))
	b1=$(counter "$1" paced_bytes)
	t1=$EPOCHREALTIME
	echo "($b1 - $b0) / ($t1 - $t0)" | bc -l
}

# lat DEV PORT: round trip of a 2-byte message from DEV to rxe0 and back,
# in us (ibv_rc_pingpong: its clock is gettimeofday, which perftest's
# cycle counter is not under load in this VM)
lat() {
	local dev=$1 port=$2 s
	ibv_rc_pingpong -d rxe0 -g "$GIDX" -p "$port" -s 2 -n 10000 >/dev/null 2>&1 &
	s=$!
	sleep 1
	env "$(drv "$dev")" ibv_rc_pingpong -d "$dev" -g "$GIDX" -p "$port" -s 2 -n 10000 "$IP" \
		>"/tmp/lat-$dev-$port" 2>&1
	wait "$s"
	awk '/usec\/iter/ { print $(NF - 1); found = 1 } END { exit !found }' "/tmp/lat-$dev-$port" ||
		{ echo "bench: ibv_rc_pingpong on $dev printed no figure:" >&2; tail -n 5 "/tmp/lat-$dev-$port" >&2; }
}

ib_write_bw -d rxe0 -x "$GIDX" -F -p 19000 -s 65536 -D "$SECS" >/dev/null 2>&1 &
s=$!
sleep 1
cap=$(ib_write_bw -d rxe0 -x "$GIDX" -F -p 19000 -s 65536 -D "$SECS" "$IP" 2>&1 |
	awk '$1 == 65536 { print int($4 * 1048576) }')
wait "$s"
[[ -n $cap && $cap -gt 0 ]] || { echo "bench: no rxe0 bandwidth figure"; exit 1; }
printf "parent rxe0 alone: %.1f MiB/s (C)\n" "$(echo "$cap / 1048576" | bc -l)"

total=$((cap * 6 / 10))
echo "$total" >$SYS/stellar0/share_total_bytes
echo 300 >$SYS/stellar0/weight
bw stellar0 19010
a=$BWPID
bw stellar1 19011
b=$BWPID
sleep 2
rate stellar0 >/tmp/rate0 &
p0=$!
rate stellar1 >/tmp/rate1 &
p1=$!
wait "$p0" "$p1" "$a" "$b"
r0=$(cat /tmp/rate0)
r1=$(cat /tmp/rate1)
printf "share 0.6 C by weights 300:100: stellar0 %.1f MiB/s, stellar1 %.1f MiB/s, ratio %.2f (aim 3.00 +-10%%), sum %.2f of the share\n" \
	"$(echo "$r0 / 1048576" | bc -l)" "$(echo "$r1 / 1048576" | bc -l)" \
	"$(echo "$r0 / $r1" | bc -l)" "$(echo "($r0 + $r1) / $total" | bc -l)"

echo 0 >$SYS/stellar0/share_total_bytes
echo $((cap / 4)) >$SYS/stellar0/rate_limit_bytes
bw stellar0 19020
a=$BWPID
sleep 2
r0=$(rate stellar0)
wait "$a" "$BWSPID"
printf "cap C/4 = %.1f MiB/s: stellar0 %.1f MiB/s, %.3f of the cap (aim 1 +-5%%)\n" \
	"$(echo "$cap / 4 / 1048576" | bc -l)" "$(echo "$r0 / 1048576" | bc -l)" "$(echo "$r0 * 4 / $cap" | bc -l)"
echo 0 >$SYS/stellar0/rate_limit_bytes

echo latency >$SYS/stellar1/traffic_class
echo "$total" >$SYS/stellar0/share_total_bytes
# row LABEL IDLE LOADED: a latency row; a run that printed no figure says so
row() {
	if [[ -n $2 && -n $3 ]]; then
		printf "%-60s %10s %10s %8.2f\n" "$1" "$2" "$3" "$(echo "$3 / $2" | bc -l)"
	else
		printf "%-60s %10s %10s %8s\n" "$1" "${2:-failed}" "${3:-failed}" "-"
	fi
}
printf "%-60s %10s %10s %8s\n" "2 B round trip, ibv_rc_pingpong (us)" idle loaded ratio
# Each idle figure is taken with nothing else running (the servers of
# the load before waited for) after a first round trip run that is left
# out: the first run after a load reads high.
lat stellar1 19029 >/dev/null
port=19030
for y in 75 50 0; do
	echo "$y" >$SYS/stellar0/share_yield_percent
	sleep 1
	idle=$(lat stellar1 $port)
	bw stellar0 $((port + 1))
	a=$BWPID
	sleep 2
	busy=$(lat stellar1 $((port + 2)))
	wait "$a" "$BWSPID"
	label="stellar1 (latency), stellar0 bulk 0.6 C, yield $y%"
	[[ $y == 75 ]] && label+=" (default)"
	row "$label" "$idle" "$busy"
	port=$((port + 3))
done
echo 75 >$SYS/stellar0/share_yield_percent
echo 0 >$SYS/stellar0/share_total_bytes
sleep 1
ridle=$(lat rxe0 19040)
bw rxe0 19041
a=$BWPID
sleep 2
rbusy=$(lat rxe0 19042)
wait "$a" "$BWSPID"
row "raw rxe0 under raw rxe0 load (no share)" "$ridle" "$rbusy"
