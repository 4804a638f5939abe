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
# for each set of class rates: 20/20/20/20, 20/20/10/5, 40/40/40/40 and
# 40/40/20/10 Mbit/s.
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
# Work requests the sender keeps posted (perftest -t): perftest's default
# of 128 x 1 MiB is 10 s and more of queue at these rates, so a 12 s run
# would end before its first completions settle; 16 MiB still keeps every
# path's credit full.
DEPTH=${STL_BENCH_SPRAY_DEPTH:-16}

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

# "SECONDS BYTES0 BYTES1 BYTES2 BYTES3": the clock, then the bytes each
# class sent so far (one tc call).
wire_sample() {
	# (No process substitution: the guest has no /dev/fd.)
	tc -s class show dev eth0 2>/dev/null | {
		local -a w=(0 0 0 0)
		local a b c cls=""
		while read -r a b c _; do
			if [[ $a == class ]]; then
				cls=""
				[[ $c == 1:1[0-3] ]] && cls=${c#1:1}
			elif [[ $a == Sent && -n $cls ]]; then
				w[cls]=$b
			fi
		done
		echo "${EPOCHREALTIME} ${w[*]}"
	}
}

# MB/s sent between two wire_sample lines, all classes but $3 (if given).
wire_rate() {
	local -a a b
	local i sum=0
	read -r -a a <<<"$1"
	read -r -a b <<<"$2"
	for i in 1 2 3 4; do
		[[ $((i - 1)) == "${3:-}" ]] && continue
		sum=$((sum + ${b[i]:-0} - ${a[i]:-0}))
	done
	echo "$sum / (${b[0]:-1} - ${a[0]:-0}) / 1000000" | bc -l
}

# Bytes sent so far in class 1:1$1.
class_bytes() {
	tc -s class show dev eth0 classid "1:1$1" 2>/dev/null |
		awk '/Sent/ { print $2; exit }'
}

# one LABEL DEV ARGS...: one ib_write_bw run; the client sets WIRE (MB/s
# on the wire, all classes, over the middle half of the run: from 3 s to
# 3 + SECS/2 s after the start, when the run is past its start and
# before its end), BW (perftest's own figure) and USED (the classes that
# carried at least 10% of the bytes).
one() {
	local label=$1 dev=$2 out i b0 b1 total=0 used=""
	local -a before=()
	shift 2
	PORT=$((PORT + 1))
	barrier
	BW=""
	WIRE=""
	USED=""
	if [[ $ROLE == server ]]; then
		timeout $((SECS + 120)) ib_write_bw -d "$dev" -x "$STL_GIDX" -F -p "$PORT" \
			-s 1048576 -t "$DEPTH" -D "$SECS" -u 20 "$@" >/dev/null 2>&1
		return 0
	fi
	for i in 0 1 2 3; do before[i]=$(class_bytes "$i"); done
	local r0 snap="" wpid ws
	r0=$(stat_counter rxe0 completer_retry_err)
	ws=$STL_OUT/wire.$PORT
	(sleep 3; wire_sample; sleep $((SECS / 2)); wire_sample) >"$ws" &
	wpid=$!
	# What the scheduler measured, two thirds into a Stellar run.
	if [[ $dev == stellar* ]]; then
		(sleep $((SECS * 2 / 3 + 2)); grep ' spray up ' /sys/kernel/debug/stellar/spray_qps) \
			>"$STL_OUT/spray-qps.$PORT" 2>/dev/null &
		snap=$!
	fi
	for i in $(seq 20); do
		out=$(timeout $((SECS + 120)) ib_write_bw -d "$dev" -x "$STL_GIDX" -F \
			-p "$PORT" -s 1048576 -t "$DEPTH" -D "$SECS" -u 20 "$@" "$STL_PEER_IP" 2>&1) && break
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
	wait "$wpid"
	WIRE=$(wire_rate "$(sed -n 1p "$ws")" "$(sed -n 2p "$ws")")
	printf -v WIRE '%.2f' "${WIRE:-0}"
	echo "bench: $label: wire $WIRE MB/s (middle half), perftest ${BW:-?} MB/s, bytes per class: ${d[*]}, rxe0 completer_retry_err $r0 -> $(stat_counter rxe0 completer_retry_err)" >&2
	if [[ -n $snap ]]; then
		wait "$snap"
		sed 's/^/bench: scheduler: /' "$STL_OUT/spray-qps.$PORT" >&2
	fi
}

# Paths of new stellar0 QPs on this side.
echo 4 >/sys/class/infiniband/stellar0/spray_paths

# STL_BENCH_SPRAY_RATES: the class rate sets, comma-separated.  Each
# shape twice: at 20 Mbit/s a class, the classes are what limits; at 40,
# the emulation shares the limit (unshaped, one rxe QP moves about 25 MB/s
# between the two guests and one Stellar QP with its 4 paths about 30:
# 160 Mbit/s of classes is two thirds of that, and a sprayed request costs
# more CPU per byte, its chunks each a work request and a completion).
IFS=, read -r -a RATESETS <<<"${STL_BENCH_SPRAY_RATES:-20 20 20 20,20 20 10 5,40 40 40 40,40 40 20 10}"
for rates in "${RATESETS[@]}"; do
	# shellcheck disable=SC2086 # four numbers
	if [[ $ROLE == client ]]; then
		shape $rates || { echo "bench: tc setup failed"; exit 1; }
		printf "\n-- 4 classes of %s Mbit/s (sum %d), %d s of 1 MiB RDMA WRITEs\n" \
			"${rates// //}" "$(echo $rates | tr ' ' '+' | bc)" "$SECS"
		printf "%-26s %10s %10s %10s %8s\n" "sender" "wire MB/s" "perftest" "classes" "vs 1 QP"
	fi
	one "rxe0, 1 QP" rxe0 -q 1
	base=$WIRE
	# shellcheck disable=SC2206 # four numbers
	r=($rates)
	base_rate=${r[${USED:0:1}]:-40}
	[[ $ROLE == client ]] && printf "%-26s %10s %10s %10s %8s\n" "rxe0, 1 QP" "$WIRE" "$BW" "$USED" "1.00"
	one "rxe0, 4 QPs" rxe0 -q 4
	[[ $ROLE == client ]] && printf "%-26s %10s %10s %10s %8.2f\n" "rxe0, 4 QPs (hashed)" "$WIRE" "$BW" "$USED" \
		"$(echo "${WIRE:-0} / ${base:-1}" | bc -l)"
	one "stellar0, 1 QP" stellar0 -q 1
	# The sum: what one QP carried on its class, scaled by the rates.
	[[ $ROLE == client ]] && printf "%-26s %10s %10s %10s %8.2f  (%.2f of the sum of the classes)\n" \
		"stellar0, 1 QP, 4 paths" "$WIRE" "$BW" "$USED" \
		"$(echo "${WIRE:-0} / ${base:-1}" | bc -l)" \
		"$(echo "${WIRE:-0} / (${base:-1} * (${r[0]} + ${r[1]} + ${r[2]} + ${r[3]}) / $base_rate)" | bc -l)"
done

# Failover: 4 classes of 40 Mbit/s, one Stellar QP for FSECS s; at a third
# of the run, a filter drops every RoCE packet of its path 1's class.
# The sender samples each path's bytes about every 0.2 s: a timeline, a gnuplot
# script and, where gnuplot is installed, its chart (PNG) in the output
# folder; then the bandwidth against the 3-path ideal (3 x one rxe QP) and
# how long the failure took to show (path 1 down in the scheduler) and
# how long the paths left carried less (recovery(), from the timeline).
FSECS=${STL_BENCH_SPRAY_FAILOVER_SECS:-24}

# recovery TIMELINE: sets RECOVERY from the cumulative per-path bytes:
# the rate of all paths in the 3 s before the blackhole (BT), then, over
# the 0.5 s windows that start in the 8 s after it, until when the paths
# left (0, 2, 3) carried less than 70% of their share of that (3/4), and
# the lowest window against that share.
recovery() {
	RECOVERY="recovery: no blackhole time"
	[[ $BT == "?" ]] && return
	RECOVERY=$(awk -v bt="$BT" '
		!/^#/ { n++; t[n] = $1; all[n] = $2 + $3 + $4 + $5; left[n] = $2 + $4 + $5 }
		END {
			for (i = 1; i <= n && t[i] < bt - 3; i++) ;
			for (j = i; j <= n && t[j] < bt; j++) ;
			if (i > n || j > n || t[j - 1] <= t[i]) { print "recovery: too few samples before the blackhole"; exit }
			pre = (all[j - 1] - all[i]) / (t[j - 1] - t[i]);
			share = pre * 3 / 4; low = -1; last = -1;
			for (a = j; a <= n && t[a] < bt + 8; a++) {
				for (b = a; b <= n && t[b] < t[a] + 0.5; b++) ;
				if (b > n) break;
				r = (left[b] - left[a]) / (t[b] - t[a]);
				if (r < 0.7 * share) last = t[b] - bt;
				if (low < 0 || r < low) low = r;
			}
			when = "never under 70% of 3/4 of it";
			if (last >= 0)
				when = sprintf("under 70%% of 3/4 of it until %.1f s after the blackhole", last);
			frac = 0;
			if (share > 0)
				frac = low / share;
			printf("before: %.2f MB/s on 4 paths; the 3 left %s; their lowest 0.5 s: %.2f of 3/4 of it\n", pre / 1e6, when, frac);
		}' "$1")
}

failover() {
	local t=0 c="" sp line b0 b1 b2 b3 tl=$STL_OUT/spray-failover.dat
	local bh=$STL_OUT/spray-failover.bh_us bfd bfifo=/tmp/spray-failover.bh
	BT="?"
	DOWN=""
	PORT=$((PORT + 1))
	barrier
	if [[ $ROLE == server ]]; then
		timeout $((FSECS + 120)) ib_write_bw -d stellar0 -x "$STL_GIDX" -F -p "$PORT" \
			-s 1048576 -t "$DEPTH" -D "$FSECS" -u 20 >/dev/null 2>&1
		return 0
	fi
	shape 40 40 40 40 || return 1
	timeout $((FSECS + 120)) ib_write_bw -d stellar0 -x "$STL_GIDX" -F -p "$PORT" \
		-s 1048576 -t "$DEPTH" -D "$FSECS" -u 20 "$STL_PEER_IP" >"$STL_OUT/spray-failover.client" 2>&1 &
	local pid=$! wpid ws=$STL_OUT/wire.failover hpid
	# The blackhole is set by a helper forked now: the sampler only
	# writes the class to its fifo, and samples on while tc runs (which
	# took seconds in a guest this busy).  It notes when tc returned.
	rm -f "$bfifo" "$bh"
	mkfifo "$bfifo" && exec {bfd}<>"$bfifo" || { echo "bench: no fifo $bfifo" >&2; return 1; }
	(
		read -r cls <&"$bfd" || exit 1
		tc filter add dev eth0 parent 1: protocol ip prio 1 u32 \
			match ip protocol 17 0xff match ip dport 4791 0xffff \
			match ip sport "$cls" 0x0003 action drop ||
			{ echo "bench: blackholing class $cls failed" >&2; exit 1; }
		echo "${EPOCHREALTIME/./}" >"$bh"
	) &
	hpid=$!
	# The wire after the failure: from 3 s after it to 3 s before the end.
	(sleep $((FSECS / 3 + 3)); wire_sample; sleep $((FSECS > 21 ? FSECS * 2 / 3 - 6 : 1)); wire_sample) >"$ws" &
	wpid=$!
	echo "# t_s path0_bytes path1_bytes path2_bytes path3_bytes (sender, cumulative: path 0 as posted, the others as completed)" >"$tl"
	# The sampling loop starts no process (a fork takes a good part of a
	# second in a guest busy with RDMA): bash's clock, a read of debugfs
	# spray_qps (the paths' counters without netlink, which takes seconds
	# there) and a read with a timeout on a fifo nobody writes for a sleep.
	local t0=${EPOCHREALTIME/./} us l sfd fifo=/tmp/spray-failover.sleep
	local re='path0_bytes ([0-9]+) .*path1_bytes ([0-9]+) .*path1_data ([a-z]+) .*path2_bytes ([0-9]+) .*path3_bytes ([0-9]+)'
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
			b0=${BASH_REMATCH[1]} b1=${BASH_REMATCH[2]}
			b2=${BASH_REMATCH[4]} b3=${BASH_REMATCH[5]}
			echo "$t $b0 $b1 $b2 $b3" >>"$tl"
			if [[ -z $c ]] && ((us >= FSECS * 1000000 / 3)); then
				sp=$(spray_attr "$line" path1_sport)
				c=$((${sp:-0} & 3))
				echo "$c" >&"$bfd"
				echo "bench: failover: t=$t s: blackholing class $c (path 1, source port $sp)" >&2
			fi
			if [[ -n $c && $BT == "?" && -s $bh ]]; then
				read -r l <"$bh"
				l=$((l - t0))
				printf -v BT '%d.%06d' $((l / 1000000)) $((l % 1000000))
				echo "# t=$BT: class $c (path 1) blackholed" >>"$tl"
				echo "bench: failover: t=$BT s: class $c drops everything" >&2
			fi
			if [[ $BT != "?" && -z $DOWN && ${BASH_REMATCH[3]} != up ]]; then
				DOWN=$t
				echo "# t=$t: path 1 down" >>"$tl"
			fi
		fi
		read -r -t 0.2 -u "$sfd" l
	done
	exec {sfd}<&-
	rm -f "$fifo"
	kill "$hpid" 2>/dev/null
	wait "$hpid" 2>/dev/null
	exec {bfd}<&-
	rm -f "$bfifo"
	wait "$pid"
	echo "bench: failover: ib_write_bw exited $? ($(grep -c . "$STL_OUT/spray-failover.client") lines)" >&2
	BW=$(awk '/#bytes/ { getline; print $4; exit }' "$STL_OUT/spray-failover.client")
	wait "$wpid"
	WIRE=$(wire_rate "$(sed -n 1p "$ws")" "$(sed -n 2p "$ws")" "$c")
	printf -v WIRE '%.2f' "${WIRE:-0}"
	awk '!/^#/ { if (pt != "") printf "%s %.3f %.3f %.3f %.3f\n", $1, ($2 - p0) / ($1 - pt) / 1e6, ($3 - p1) / ($1 - pt) / 1e6, ($4 - p2) / ($1 - pt) / 1e6, ($5 - p3) / ($1 - pt) / 1e6; pt = $1; p0 = $2; p1 = $3; p2 = $4; p3 = $5 }' \
		"$tl" >"$tl.rate"
	recovery "$tl"
	local btr=$BT
	[[ $BT == "?" ]] || printf -v btr '%.1f' "$BT"
	cat >"$STL_OUT/spray-failover.gp" <<-GP
	set terminal png size 900,500
	set output "spray-failover.png"
	set title "One Stellar QP, 4 paths of 40 Mbit/s; path 1 blackholed at $btr s"
	set xlabel "time (s)"; set ylabel "MB/s (sender, per path)"
	plot "spray-failover.dat.rate" using 1:2 title "path 0 (QP 0, the tails, as posted)" with lines, "" using 1:3 title "path 1" with lines, "" using 1:4 title "path 2" with lines, "" using 1:5 title "path 3" with lines
	GP
	if command -v gnuplot >/dev/null; then
		(cd "$STL_OUT" && gnuplot spray-failover.gp) && echo "bench: failover chart: spray-failover.png" >&2
	fi
}
# STL_BENCH_SPRAY_FAILOVER_SECS=0 leaves the failover run out.
((FSECS > 0)) && failover
if [[ $ROLE == client ]] && ((FSECS > 0)); then
	printf "\n-- failover: 4 classes of 40 Mbit/s, %d s, path 1's class blackholed at %s s\n" "$FSECS" "$BT"
	echo "  path 1 down in the scheduler: ${DOWN:-never seen} (t s); $RECOVERY"
	printf "%-26s %10s %10s %14s\n" "sender" "wire MB/s" "perftest" "vs 3 x 1 QP"
	printf "%-26s %10s %10s %14.2f\n" "stellar0, 1 QP, 4 paths" "$WIRE" "${BW:-?}" \
		"$(echo "${WIRE:-0} / (3 * ${base:-1})" | bc -l)"
	echo "  (wire: the 3 classes left, from 3 s after the failure to 3 s before the end)"
	echo "  t_s path0 path1 path2 path3 (MB/s per path since the sample before)"
	awk '{ print "  " $0 }' "$STL_OUT/spray-failover.dat.rate" | head -n 80
fi
# What the Stellar runs did on the sender: requests cut, chunks, reposts.
[[ $ROLE == client ]] && rdma statistic show link stellar0/1 | tr ' ' '\n' |
	grep -A1 -E '^spray_(wrs|chunk|path_(failures|repairs|check_failures))' |
	grep -v -- '^--$' | paste - - | tr '\t' ' ' | sed 's/^/sender counters: /'
[[ $ROLE == client ]] && tc qdisc del dev eth0 root
true
