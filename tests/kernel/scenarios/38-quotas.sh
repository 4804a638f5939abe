# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 38-quotas.sh - per-device object quotas (sysfs KIND_quota for pd, cq, qp,
# srq, mr, mw, ah): changeable while the device is in use, reported as the
# device's limits (ibv_devinfo -v), enforced with ENOMEM and a counted,
# logged refusal, and listed with the current use in quota_usage.  The
# kernel memory quota (kmem_quota) and the rate cap (rate_limit_bytes) on
# both kinds of device; the bandwidth share of one parent's devices by
# weight, and the latency class.

# Quota $2 on each kind in $1 (words) of device $3 at once (its programs
# run with environment command $4...), as the device reports them
# (ibv_devinfo -v, one run for all); then, kind by kind, exactly the quota
# is made and the next one is refused, counted once.  Last all are lifted
# (0: the module's maximum) and the first kind is made past the old quota.
quota_kinds() {
	local kinds=$1 q=$2 dev=$3 d=/sys/class/infiniband/$3 kind info res want got before after
	shift 3
	for kind in $kinds; do
		echo "$q" >"$d/${kind}_quota" || { why "writing $q to ${kind}_quota failed"; return 1; }
		[[ $(cat "$d/${kind}_quota") == "$q" ]] || why "${kind}_quota reads $(cat "$d/${kind}_quota")"
	done
	info=$("$@" ibv_devinfo -v -d "$dev" 2>/dev/null)
	for kind in $kinds; do
		got=$(awk -v f="max_$kind:" '$1 == f { print $2; exit }' <<<"$info")
		[[ $got == "$q" ]] || why "$dev reports max_$kind '$got' with ${kind}_quota $q"
	done
	for kind in $kinds; do
		# the tool's own PD and CQ are one of theirs
		want=$q
		[[ $kind == pd || $kind == cq ]] && want=$((q - 1))
		before=$(stat_counter "$dev" object_quota_refusals)
		res=$("$@" "$TESTS/stl_quota_fill" -d "$dev" -k "$kind" -n $((q + 5)) -g "$STL_GIDX" 2>&1)
		echo "$res"
		[[ $res == *"kind=$kind made=$want err=ENOMEM"* ]] ||
			why "$kind quota $q on $dev: '$res', want made=$want err=ENOMEM"
		after=$(stat_counter "$dev" object_quota_refusals)
		((after == before + 1)) || why "object_quota_refusals went $before -> $after, want +1"
		grep -qx "$kind 0 $q" "$d/quota_usage" ||
			why "quota_usage does not say '$kind 0 $q': $(grep "^$kind " "$d/quota_usage")"
	done
	# back to the module's maximum
	for kind in $kinds; do
		echo 0 >"$d/${kind}_quota" || why "writing 0 to ${kind}_quota failed"
		[[ $(awk -v k="$kind" '$1 == k { print $3 }' "$d/quota_usage") != "$q" ]] ||
			why "the $kind limit is still $q after writing 0"
	done
	kind=${kinds%% *}
	res=$("$@" "$TESTS/stl_quota_fill" -d "$dev" -k "$kind" -n $((q + 5)) -g "$STL_GIDX" 2>&1)
	[[ $res == *"made=$((q + 5)) err=0"* ]] || why "$kind with the quota lifted: '$res'"
}

s_object_quotas() {
	local d=/sys/class/infiniband/stellar1 m
	quota_kinds "pd cq qp mr ah" 3 stellar1 env
	add_stellar rxe_q0 || return 1
	quota_kinds "srq mw qp" 2 rxe_q0 env -u RDMAV_DRIVERS
	run rdma link delete rxe_q0
	cat "$d/quota_usage"
	m=$(stat -c '%a %U' "$d/qp_quota")
	[[ $m == "644 root" ]] || why "qp_quota mode/owner is '$m', want '644 root'"
	if (echo 99999999 >"$d/qp_quota") 2>/dev/null; then
		why "qp_quota accepted a value above the module's maximum"
	fi
	if (echo banana >"$d/mr_quota") 2>/dev/null; then
		why "mr_quota accepted 'banana'"
	fi
	[[ $(awk '$1 == "qp" { print $3 }' "$d/quota_usage") == 4096 ]] ||
		why "the qp limit is not back to 4096"
	[[ -z $WHY ]]
}

# The kmem line of device $1's quota_usage: "USED LIMIT".
kmem_usage() { awk '$1 == "kmem" { print $2, $3 }' "/sys/class/infiniband/$1/quota_usage"; }

# kmem_quota $2 bytes on device $1 (programs run with environment command
# $3...): kind $4 objects are made until one is refused with ENOMEM, after
# at least one and fewer than $5; the refusal is counted; when the program
# is gone the device holds what it held before; lifted, $5 objects are made
# (of kind cq: once per device).
kmem_kind() {
	local dev=$1 q=$2 d=/sys/class/infiniband/$1 res used0 used lim before after made
	local -a envc=()
	shift 2
	while [[ $1 != -- ]]; do envc+=("$1"); shift; done
	shift
	local kind=$1 most=$2
	read -r used0 lim <<<"$(kmem_usage "$dev")"
	[[ $lim == 0 ]] || why "$dev: kmem limit $lim before the test, want 0 (none)"
	before=$(stat_counter "$dev" kmem_quota_refusals)
	echo "$q" >"$d/kmem_quota" || { why "writing $q to kmem_quota failed"; return 1; }
	[[ $(cat "$d/kmem_quota") == "$q" ]] || why "kmem_quota reads $(cat "$d/kmem_quota")"
	res=$("${envc[@]}" "$TESTS/stl_quota_fill" -d "$dev" -k "$kind" -n "$most" -g "$STL_GIDX" 2>&1)
	echo "$res"
	made=$(sed -n 's/.*made=\([0-9]*\) err=ENOMEM.*/\1/p' <<<"$res")
	[[ -n $made ]] && ((made >= 1 && made < most)) ||
		why "$kind on $dev under kmem_quota $q: '$res', want 1..$((most - 1)) made, then ENOMEM"
	after=$(stat_counter "$dev" kmem_quota_refusals)
	((after == before + 1)) || why "kmem_quota_refusals went $before -> $after, want +1"
	read -r used lim <<<"$(kmem_usage "$dev")"
	echo "kmem after the program: used $used limit $lim"
	((used == used0)) || why "$dev holds $used bytes of kmem after the program, $used0 before"
	((lim == q)) || why "quota_usage gives the kmem limit as $lim, want $q"
	echo 0 >"$d/kmem_quota"
	read -r used lim <<<"$(kmem_usage "$dev")"
	((lim == 0)) || why "quota_usage gives the kmem limit as $lim after writing 0"
	# lifted, the same run makes them all (once per device: the refusals
	# counter already tells the quota's refusal from any other)
	[[ $kind == cq ]] || return 0
	res=$("${envc[@]}" "$TESTS/stl_quota_fill" -d "$dev" -k "$kind" -n "$most" -g "$STL_GIDX" 2>&1)
	[[ $res == *"made=$most err=0"* ]] || why "$kind on $dev with no kmem quota: '$res'"
}

# What the device's objects make the module allocate is bounded per device.
s_kmem_quota() {
	local d=/sys/class/infiniband/stellar1
	kmem_kind stellar1 65536 env -- cq 1000
	kmem_kind stellar1 65536 env -- mr 1000
	add_stellar rxe_k0 || return 1
	kmem_kind rxe_k0 65536 env -u RDMAV_DRIVERS -- cq 1000
	kmem_kind rxe_k0 262144 env -u RDMAV_DRIVERS -- qp 1000
	run rdma link delete rxe_k0
	[[ $(stat -c '%a %U' "$d/kmem_quota") == "644 root" ]] || why "kmem_quota is not 0644 root"
	if (echo banana >"$d/kmem_quota") 2>/dev/null; then
		why "kmem_quota accepted 'banana'"
	fi
	[[ -z $WHY ]]
}

# ib_write_bw between devices $1 (client) and rxe0, 64 KiB x $2, TCP port
# $3, environment command $4...; prints perftest's average MB/s and the
# client's run time in seconds (perftest's own figures read 0 where it
# cannot calibrate its clock: the debug kernel).
rate_write_bw() {
	local dev=$1 n=$2 port=$3 log=$STL_LOGDIR/rate-$1-$3 srv rc=0 t0 t1
	shift 3
	start_server "$port" 30 "$log.server" \
		ib_write_bw -d rxe0 -x "$STL_GIDX" -F -p "$port" -s 65536 -n "$n" >&2 || return 1
	srv=$SERVER_PID
	t0=$EPOCHREALTIME
	run_client_retry 10 "$log.client" "$@" \
		ib_write_bw -d "$dev" -x "$STL_GIDX" -F -p "$port" -s 65536 -n "$n" "$STL_MY_IP" >&2 || rc=$?
	t1=$EPOCHREALTIME
	wait_exit "$srv" 30 >&2
	((rc == 0)) || { why "ib_write_bw from $dev exited $rc"; return 1; }
	# #bytes #iterations BW_peak BW_average MsgRate
	echo "$(awk '$1 == 65536 && $2 == '"$n"' { print $4 }' "$log.client") $(echo "$t1 - $t0" | bc -l)"
}

# A rate cap of 256 KiB/s on 2 MiB of 64 KiB RDMA writes (4 a second, so
# a post_send waits about 250 ms each time): the run takes at least 7 s,
# perftest averages at most about 256 KiB/s (where it can measure), every
# iteration completes (nothing dropped), the waits are counted; lifted, the
# same run is faster.
s_rate_cap() {
	local dev=$1 d=/sys/class/infiniband/$1 cap=262144 r bw t tfree waits0 waits1 port=18780
	shift
	[[ $dev == rxe* ]] && add_stellar "$dev"
	waits0=$(stat_counter "$dev" rate_limit_waits)
	echo "$cap" >"$d/rate_limit_bytes" || why "writing rate_limit_bytes failed"
	[[ $(cat "$d/rate_limit_bytes") == "$cap" ]] || why "rate_limit_bytes reads $(cat "$d/rate_limit_bytes")"
	r=$(rate_write_bw "$dev" 32 "$port" "$@") || return 1
	read -r bw t <<<"$r"
	echo "capped: perftest $bw MB/s, $t s"
	waits1=$(stat_counter "$dev" rate_limit_waits)
	awk -v t="$t" 'BEGIN { exit !(t >= 7) }' || why "2 MiB at 256 KiB/s took only $t s"
	# perftest's MB is 2^20 bytes
	awk -v b="$bw" 'BEGIN { exit !(b == 0 || (b > 0.06 && b <= 0.3)) }' ||
		why "$dev averaged $bw MB/s with a cap of 256 KiB/s"
	((waits1 > waits0)) || why "rate_limit_waits did not move ($waits0 -> $waits1)"
	echo 0 >"$d/rate_limit_bytes"
	r=$(rate_write_bw "$dev" 32 $((port + 1)) "$@") || return 1
	read -r bw tfree <<<"$r"
	echo "uncapped: perftest $bw MB/s, $tfree s"
	awk -v t="$t" -v f="$tfree" 'BEGIN { exit !(f < t - 2) }' ||
		why "without the cap the run took $tfree s, with it $t s"
	[[ $dev == rxe* ]] && run rdma link delete "$dev"
	[[ -z $WHY ]]
}

# A sysfs attribute of device $1.
dattr() { cat "/sys/class/infiniband/$1/$2"; }

# Wait up to $4 s for counter $2 of device $1 to move past $3.
counter_moves() {
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		(($(stat_counter "$1" "$2") != $3)) && return 0
		sleep 0.1
	done
	return 1
}

# Bandwidth share: 512 KiB/s for rxe0's bulk devices (low enough that the
# debug kernel's guest keeps up with it on a loaded host: a device that
# cannot post its part leaves it to the other); stellar1 (weight 300) and
# the ring device rxe_w0 (weight 100) write 64 KiB at once, rxe_w0 from
# when stellar1 moves bytes, both until the sample is taken.  While both
# run, share_bytes says 3/4 and 1/4 of the total, their paced_bytes grow
# 3:1 over 8 s and together by about the total.  rxe_w0 in the
# latency class is not paced (paced_bytes and rate_limit_waits stay) and
# leaves stellar1 the whole total, less share_yield_percent of it while
# rxe_w0 posts.
s_bandwidth_share() {
	local a=stellar1 b=rxe_w0 total=524288 port=18790 log=$STL_LOGDIR/share
	local sa sb ca cb sva svb pa0 pb0 pa1 pb1 w0 p0 i
	add_stellar "$b" || return 1
	echo "$total" >"/sys/class/infiniband/$a/share_total_bytes" || why "writing share_total_bytes failed"
	[[ $(dattr "$b" share_total_bytes) == "$total" ]] ||
		why "$b reads share_total_bytes $(dattr "$b" share_total_bytes): not the parent's"
	echo 300 >"/sys/class/infiniband/$a/weight" || why "writing weight 300 failed"
	[[ $(dattr "$b" weight) == 100 ]] || why "$b's weight is $(dattr "$b" weight), want the default 100"
	[[ $(dattr "$b" traffic_class) == bulk ]] || why "$b's class is $(dattr "$b" traffic_class), want bulk"
	(echo 0 >"/sys/class/infiniband/$a/weight") 2>/dev/null && why "weight 0 accepted"
	(echo 1001 >"/sys/class/infiniband/$a/weight") 2>/dev/null && why "weight 1001 accepted"
	(echo fast >"/sys/class/infiniband/$a/traffic_class") 2>/dev/null && why "traffic_class 'fast' accepted"

	# Both write until the sample is taken, then are stopped: on a slow
	# guest (the debug kernel, a loaded host) a client may take many
	# seconds to connect, and a run of a set time or count could end
	# before the other begins.  The second starts once the first moves
	# bytes.
	start_server "$port" 30 "$log-a.server" \
		ib_write_bw -d rxe0 -x "$STL_GIDX" -F -p "$port" -s 65536 -D 600 || return 1
	sva=$SERVER_PID
	start_server $((port + 1)) 30 "$log-b.server" \
		ib_write_bw -d rxe0 -x "$STL_GIDX" -F -p $((port + 1)) -s 65536 -D 600 || return 1
	svb=$SERVER_PID
	pa0=$(stat_counter "$a" paced_bytes)
	pb0=$(stat_counter "$b" paced_bytes)
	timeout -k 5 660 ib_write_bw -d "$a" -x "$STL_GIDX" -F -p "$port" -s 65536 -D 600 \
		"$STL_MY_IP" >"$log-a.client" 2>&1 &
	ca=$!
	bg_track "$ca"
	counter_moves "$a" paced_bytes "$pa0" 30 || why "$a's ib_write_bw moved no bytes in 30 s"
	timeout -k 5 660 env -u RDMAV_DRIVERS ib_write_bw -d "$b" -x "$STL_GIDX" -F -p $((port + 1)) \
		-s 65536 -D 600 "$STL_MY_IP" >"$log-b.client" 2>&1 &
	cb=$!
	bg_track "$cb"
	counter_moves "$b" paced_bytes "$pb0" 30 || why "$b's ib_write_bw moved no bytes in 30 s"
	sleep 2
	# A snapshot of each (read one after the other): on a slow guest one
	# may catch the other between posts, so read again, up to 4 s
	for ((i = 0; i < 40; i++)); do
		sa=$(dattr "$a" share_bytes)
		sb=$(dattr "$b" share_bytes)
		((sa == total * 3 / 4 && sb == total / 4)) && break
		sleep 0.1
	done
	# each counter with the moment it was read
	pa0="$(stat_counter "$a" paced_bytes) $EPOCHREALTIME"
	pb0="$(stat_counter "$b" paced_bytes) $EPOCHREALTIME"
	# 8 s where the rates are judged (below), 3 s on the debug kernel
	if [[ $(uname -r) == *stldebug* ]]; then sleep 3; else sleep 8; fi
	pa1="$(stat_counter "$a" paced_bytes) $EPOCHREALTIME"
	pb1="$(stat_counter "$b" paced_bytes) $EPOCHREALTIME"
	echo "share_bytes $a $sa, $b $sb; paced_bytes and time: $a $pa0 -> $pa1, $b $pb0 -> $pb1;" \
		"rate_limit_waits $a $(stat_counter "$a" rate_limit_waits), $b $(stat_counter "$b" rate_limit_waits)"
	((sa == total * 3 / 4 && sb == total / 4)) ||
		why "share_bytes while both run: $a $sa, $b $sb (want $((total * 3 / 4)), $((total / 4)))"
	# The rates are judged where the clock is steady enough: the debug
	# kernel's guest (lockdep, KASAN) on a loaded host reads each counter
	# seconds late and posts unevenly; it checks the shares above, and
	# runs the share's code under lockdep and KASAN.
	if [[ $(uname -r) == *stldebug* ]]; then
		echo "# rates over 3 s not judged on the debug kernel: $a $pa0 -> $pa1, $b $pb0 -> $pb1"
	else
		echo "$pa0 $pa1 $pb0 $pb1" | awk -v tot="$total" '
			{ ra = ($3 - $1) / ($4 - $2); rb = ($7 - $5) / ($8 - $6)
			  r = rb > 0 ? ra / rb : 0; s = (ra + rb) / tot
			  printf "rates %.0f and %.0f bytes/s: ratio %.2f, sum %.2f of the total\n", ra, rb, r, s
			  exit !(r >= 2.4 && r <= 3.6 && s >= 0.75 && s <= 1.25) }' ||
			why "paced bytes per second over 8 s: $a $pa0 -> $pa1, $b $pb0 -> $pb1 (want 3:1 +-20%, summing to the total +-25%)"
	fi
	# both were writing all along: still running; $b's stops now, $a's
	# writes on through the latency-class part below
	kill -0 "$ca" 2>/dev/null ||
		why "$a's ib_write_bw ended before the sample did: $(tail -n 2 "$log-a.client" | tr '\n' ' ')"
	kill -0 "$cb" 2>/dev/null ||
		why "$b's ib_write_bw ended before the sample did: $(tail -n 2 "$log-b.client" | tr '\n' ' ')"
	kill_tree "$cb" ""
	kill -9 "$cb" "$svb" 2>/dev/null
	wait_exit "$cb" 30 && wait_exit "$svb" 30 || why "$b's ib_write_bw still running after kill -9"

	# the latency class: never paced, not counted
	echo latency >"/sys/class/infiniband/$b/traffic_class" || why "writing traffic_class latency failed"
	[[ $(dattr "$b" share_bytes) == 0 ]] || why "$b in the latency class has share_bytes $(dattr "$b" share_bytes)"
	for ((i = 0; i < 20; i++)); do
		[[ $(dattr "$a" share_bytes) == "$total" ]] && break
		sleep 0.1
	done
	[[ $(dattr "$a" share_bytes) == "$total" ]] ||
		why "$a alone among bulk devices has share_bytes $(dattr "$a" share_bytes), want $total"
	# the share's yield to latency traffic: a setting of the parent,
	# 0 to 90 percent, 75 by default
	[[ $(dattr "$a" share_yield_percent) == 75 ]] ||
		why "share_yield_percent is $(dattr "$a" share_yield_percent), want the default 75"
	(echo 91 >"/sys/class/infiniband/$a/share_yield_percent") 2>/dev/null && why "share_yield_percent 91 accepted"
	dmesg | tail -n 20 | grep -q "$a: share_yield_percent 91 refused: at most 90" ||
		why "no log line for the refused share_yield_percent 91"
	(echo half >"/sys/class/infiniband/$a/share_yield_percent") 2>/dev/null && why "share_yield_percent 'half' accepted"
	echo 50 >"/sys/class/infiniband/$a/share_yield_percent" || why "writing share_yield_percent 50 failed"
	[[ $(dattr "$b" share_yield_percent) == 50 ]] ||
		why "$b reads share_yield_percent $(dattr "$b" share_yield_percent): not the parent's"
	p0=$(stat_counter "$b" paced_bytes)
	w0=$(stat_counter "$b" rate_limit_waits)
	start_server $((port + 2)) 30 "$log-l.server" \
		ib_write_bw -d rxe0 -x "$STL_GIDX" -F -p $((port + 2)) -s 65536 -D 3 || return 1
	timeout -k 5 120 env -u RDMAV_DRIVERS ib_write_bw -d "$b" -x "$STL_GIDX" -F -p $((port + 2)) \
		-s 65536 -D 3 "$STL_MY_IP" >"$log-l.client" 2>&1 &
	cb=$!
	bg_track "$cb"
	# while the latency-class device posts, the bulk one's part is the
	# total less 50%
	for ((i = 0; i < 100; i++)); do
		sa=$(dattr "$a" share_bytes)
		((sa == total / 2)) && break
		sleep 0.1
	done
	((sa == total / 2)) || why "while latency-class $b writes, $a's share_bytes is $sa, want $((total / 2))"
	wait_exit "$cb" 60 || why "$b's ib_write_bw still running"
	(($(exit_status "$cb") == 0)) ||
		why "ib_write_bw on $b in the latency class failed: $(tail -n 2 "$log-l.client" | tr '\n' ' ')"
	[[ $(stat_counter "$b" paced_bytes) == "$p0" && $(stat_counter "$b" rate_limit_waits) == "$w0" ]] ||
		why "$b in the latency class was paced: paced_bytes $p0 -> $(stat_counter "$b" paced_bytes), rate_limit_waits $w0 -> $(stat_counter "$b" rate_limit_waits)"
	# 100 ms after its last post, the bulk device has the whole total again
	for ((i = 0; i < 20; i++)); do
		[[ $(dattr "$a" share_bytes) == "$total" ]] && break
		sleep 0.1
	done
	[[ $(dattr "$a" share_bytes) == "$total" ]] ||
		why "with $b idle, $a's share_bytes is $(dattr "$a" share_bytes), want $total"
	kill -0 "$ca" 2>/dev/null ||
		why "$a's ib_write_bw ended during the latency-class part: $(tail -n 2 "$log-a.client" | tr '\n' ' ')"
	kill_tree "$ca" ""
	kill -9 "$ca" "$sva" 2>/dev/null
	wait_exit "$ca" 30 && wait_exit "$sva" 30 || why "$a's ib_write_bw still running after kill -9"
	echo 75 >"/sys/class/infiniband/$a/share_yield_percent"

	echo 0 >"/sys/class/infiniband/$a/share_total_bytes"
	echo 100 >"/sys/class/infiniband/$a/weight"
	[[ $(dattr "$a" share_bytes) == 0 ]] || why "with no share, $a has share_bytes $(dattr "$a" share_bytes)"
	run rdma link delete "$b"
	[[ -z $WHY ]]
}

scenario object_quotas s_object_quotas
scenario kmem_quota s_kmem_quota
scenario rate_cap_stellar1 s_rate_cap stellar1 env
scenario rate_cap_ring_device s_rate_cap rxe_r0 env -u RDMAV_DRIVERS
scenario bandwidth_share_by_weight s_bandwidth_share
