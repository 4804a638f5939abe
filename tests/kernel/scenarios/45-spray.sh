# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 45-spray.sh - the paths of RC QPs (spray/spray_path.c), sourced by
# vm-one.sh: the spray_paths attribute and module parameter, the path
# exchange between two Stellar devices (vendor MADs on rxe0's QP1, looped
# back), a plain rxe peer that never answers, and spraying turned off.
# The paths themselves: parent QPs that exist on rxe0, connected crosswise,
# one source port each; then the data path: large WRITEs and READs cut
# into chunks over the paths, bytes and completion order checked, through
# a path's failure and a killed process.

# Parent QP numbers of rxe0 (its own and every Stellar device's).
rxe0_qpns() { rdma res show qp link rxe0/1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "lqpn") print $(i + 1) }'; }

s_spray_paths_attribute() {
	local d v bad
	v=$(cat /sys/module/stellar/parameters/spray_paths 2>&1)
	[[ $v == 4 ]] || why "module parameter spray_paths is '$v', want the default 4"
	for d in stellar0 stellar1; do
		v=$(cat "/sys/class/infiniband/$d/spray_paths" 2>&1)
		[[ $v == 4 ]] || why "$d spray_paths is '$v', want 4 (the module parameter)"
	done
	d=/sys/class/infiniband/stellar0/spray_paths
	for bad in 0 17 255 -1 banana; do
		if (echo "$bad" >"$d") 2>/dev/null; then
			why "spray_paths accepted '$bad'"
		fi
	done
	[[ $(cat "$d") == 4 ]] || why "spray_paths reads $(cat "$d") after refused writes"
	if (echo 17 >/sys/module/stellar/parameters/spray_paths) 2>/dev/null; then
		why "the module parameter accepted 17"
	fi
	echo 16 >"$d" || why "writing 16 failed"
	[[ $(cat "$d") == 16 ]] || why "spray_paths reads $(cat "$d") after writing 16"
	# 4 paths on both devices from here on (the scenarios below, and the
	# suites after this file run with them)
	for d in stellar0 stellar1; do
		echo 4 >"/sys/class/infiniband/$d/spray_paths" || why "writing 4 to $d failed"
	done
	dmesg | grep -E 'spray_paths' | tail -n 4
	[[ -z $WHY ]]
}

# ib_write_bw for $3 s from device $1 to server device $2 (TCP port $4);
# while it runs, $5 (a function) looks at the QPs, $6 s after the start
# (default: half way); with $7 "stop", both programs are stopped once it
# is done (their exit status then says nothing).
spray_during_write_bw() {
	local cdev=$1 sdev=$2 secs=$3 port=$4 check=$5 delay=${6:-$(($3 / 2 + 1))} stop=${7:-}
	local log=$STL_LOGDIR/spray-$1-$2 rc=0 cpid
	start_server "$port" 30 "$log.server" \
		ib_write_bw -d "$sdev" -x "$STL_GIDX" -F -p "$port" -s 65536 -D "$secs" || return 1
	CLIENT_TIMEOUT=$((secs + 60)) run_client_retry 10 "$log.client" \
		ib_write_bw -d "$cdev" -x "$STL_GIDX" -F -p "$port" -s 65536 -D "$secs" "$STL_MY_IP" &
	cpid=$!
	bg_track "$cpid"
	sleep "$delay"
	"$check"
	if [[ $stop == stop ]]; then
		kill_tree "$cpid" ""
		kill -9 "$cpid" "$SERVER_PID" 2>/dev/null
		wait "$cpid" 2>/dev/null
		wait_exit "$SERVER_PID" 30 || why "server still running 30 s after it was killed"
		return 0
	fi
	wait "$cpid" || rc=$?
	wait_exit "$SERVER_PID" 30 || why "server still running 30 s after the client ended"
	((rc == 0)) || why "client exited $rc"
	grep -qE '^ *65536 ' "$log.client" || why "client printed no bandwidth line"
}

spray_check_stellar_pair() {
	local a b i n q0 q1 qpns s sports=""
	a=$(spray_qps stellar0)
	b=$(spray_qps stellar1)
	echo "stellar0: $a"
	echo "stellar1: $b"
	[[ $(wc -l <<<"$a") == 1 && $(wc -l <<<"$b") == 1 ]] ||
		{ why "want one RC QP with paths on each device"; return 1; }
	for q0 in "$a" "$b"; do
		[[ $(spray_attr "$q0" spray) == up ]] || why "a QP's spray state is '$(spray_attr "$q0" spray)', want up"
		[[ $(spray_attr "$q0" spray_paths) == 4 ]] || why "a QP has '$(spray_attr "$q0" spray_paths)' paths, want 4"
	done
	qpns=$(rxe0_qpns | tr '\n' ' ')
	echo "rxe0 QPs: $qpns"
	n=$(spray_attr "$a" spray_paths)
	for ((i = 1; i < n; i++)); do
		q0=$(spray_attr "$a" "path${i}_qpn")
		q1=$(spray_attr "$b" "path${i}_qpn")
		[[ $(spray_attr "$a" "path${i}_peer_qpn") == "$q1" ]] ||
			why "stellar0 path $i goes to QP $(spray_attr "$a" "path${i}_peer_qpn"), stellar1's path $i is $q1"
		[[ $(spray_attr "$b" "path${i}_peer_qpn") == "$q0" ]] ||
			why "stellar1 path $i goes to QP $(spray_attr "$b" "path${i}_peer_qpn"), stellar0's path $i is $q0"
		# (a kernel that lists no kernel QP of rxe0, not even QP 0's, as
		# the debug kernel's rdma does, leaves this to the checks below)
		[[ " $qpns " != *" $(spray_attr "$a" lqpn) "* ]] ||
			[[ " $qpns " == *" $q0 "* && " $qpns " == *" $q1 "* ]] ||
			why "path $i QPs $q0/$q1 are not parent QPs of rxe0"
		s=$(spray_attr "$a" "path${i}_sport")
		((s >= 49152 && s <= 65535)) || why "path $i source port '$s' is outside 49152..65535"
		[[ " $sports " != *" $s "* ]] || why "two paths share source port $s"
		sports+=" $s"
		# each path carried its checks (zero-length RDMA WRITEs) both ways
		for q0 in "$a" "$b"; do
			[[ $(spray_attr "$q0" "path${i}_state") == up ]] ||
				why "path $i state '$(spray_attr "$q0" "path${i}_state")', want up"
			(($(spray_attr "$q0" "path${i}_checks") >= 1)) ||
				why "path $i: '$(spray_attr "$q0" "path${i}_checks")' checks came back, want 1 or more"
		done
	done
	echo "stellar0 paths' source ports:$sports"
}

s_spray_exchange_stellar_peers() {
	local up0 up1 sent0 after before
	up0=$(stat_counter stellar0 spray_qps_up)
	up1=$(stat_counter stellar1 spray_qps_up)
	sent0=$(stat_counter stellar0 spray_msgs_sent)
	before=$(rxe0_qpns | wc -l)
	spray_during_write_bw stellar0 stellar1 8 18700 spray_check_stellar_pair
	rdma statistic show link stellar0/1 | tr ' ' '\n' | grep -A1 '^spray_' | paste - - | tr '\t' ' ' | grep -v -- '^--'
	(($(stat_counter stellar0 spray_qps_up) == up0 + 1)) || why "stellar0 spray_qps_up went $up0 -> $(stat_counter stellar0 spray_qps_up), want +1"
	(($(stat_counter stellar1 spray_qps_up) == up1 + 1)) || why "stellar1 spray_qps_up went $up1 -> $(stat_counter stellar1 spray_qps_up), want +1"
	(($(stat_counter stellar0 spray_msgs_sent) > sent0)) || why "stellar0 sent no exchange message"
	after=$(rxe0_qpns | wc -l)
	((after == before)) || why "rxe0 has $after QPs after the run, $before before: paths left behind"
	[[ -z $WHY ]]
}

spray_check_plain_peer() {
	local a
	a=$(spray_qps stellar0)
	echo "stellar0: $a"
	[[ $(spray_attr "$a" spray) == single ]] || why "spray state '$(spray_attr "$a" spray)' against plain rxe0, want single"
	[[ $(spray_attr "$a" spray_paths) == 1 ]] || why "'$(spray_attr "$a" spray_paths)' paths against plain rxe0, want 1"
}

s_spray_plain_peer_stays_on_one_path() {
	local t0 s0 before
	t0=$(stat_counter stellar0 spray_timeouts)
	s0=$(stat_counter stellar0 spray_qps_single)
	before=$(rxe0_qpns | wc -l)
	# Ten tries 200 ms apart: single after ~2 s; the check comes at 5 s.
	spray_during_write_bw stellar0 rxe0 8 18701 spray_check_plain_peer
	(($(stat_counter stellar0 spray_timeouts) == t0 + 1)) || why "spray_timeouts went $t0 -> $(stat_counter stellar0 spray_timeouts), want +1"
	(($(stat_counter stellar0 spray_qps_single) == s0 + 1)) || why "spray_qps_single went $s0 -> $(stat_counter stellar0 spray_qps_single), want +1"
	(($(rxe0_qpns | wc -l) == before)) || why "rxe0 QPs left behind"
	[[ -z $WHY ]]
}

s_spray_off_with_one_path() {
	local d s0 s1
	for d in stellar0 stellar1; do echo 1 >"/sys/class/infiniband/$d/spray_paths"; done
	s0=$(stat_counter stellar0 spray_msgs_sent)
	s1=$(stat_counter stellar1 spray_msgs_sent)
	pingpong_local ibv_rc_pingpong stellar1 stellar0 18702 -n 200 -c
	for d in stellar0 stellar1; do echo 4 >"/sys/class/infiniband/$d/spray_paths"; done
	(($(stat_counter stellar0 spray_msgs_sent) == s0 && $(stat_counter stellar1 spray_msgs_sent) == s1)) ||
		why "exchange messages sent with spray_paths 1"
	[[ -z $WHY ]]
}

# Paths are the tenant's queues too (the WQE and CQE quotas): a QP whose
# paths do not fit stays on one path, and its traffic runs as before.
s_spray_paths_within_quota() {
	local d=/sys/class/infiniband/stellar1 f0 s0 w0 w1
	f0=$(stat_counter stellar1 spray_path_failures)
	s0=$(stat_counter stellar1 spray_qps_single)
	w0=$(awk '$1 == "wqe" { print $2 }' "$d/quota_usage")
	# ibv_rc_pingpong's QP (500 receives + 1 send) fits, its paths not
	echo 600 >"$d/wqe_quota" || { why "writing wqe_quota failed"; return 1; }
	pingpong_local ibv_rc_pingpong stellar1 stellar0 18704 -n 200 -c
	echo 0 >"$d/wqe_quota"
	(($(stat_counter stellar1 spray_path_failures) == f0 + 1)) ||
		why "stellar1 spray_path_failures went $f0 -> $(stat_counter stellar1 spray_path_failures), want +1"
	(($(stat_counter stellar1 spray_qps_single) == s0 + 1)) ||
		why "stellar1 spray_qps_single went $s0 -> $(stat_counter stellar1 spray_qps_single), want +1"
	w1=$(awk '$1 == "wqe" { print $2 }' "$d/quota_usage")
	((w1 == w0)) || why "stellar1 holds $w1 WQEs after the run, $w0 before"
	[[ -z $WHY ]]
}

# The umad device of rxe0's port 1.
rxe0_umad() {
	local d
	for d in /sys/class/infiniband_mad/umad*; do
		[[ $(cat "$d/ibdev" 2>/dev/null) == rxe0 && $(cat "$d/port" 2>/dev/null) == 1 ]] &&
			echo "/dev/infiniband/${d##*/}"
	done
}

# Send one exchange message to stellar1's QP through ib_umad (as any host
# can) and check what stellar1's counters did: $1 what it is, $2 and $3
# the changes of spray_msgs_received and spray_msgs_dropped to expect,
# the rest stl_spray_mad's options.
spray_hostile() {
	local what=$1 want_r=$2 want_d=$3 r0 d0 r1 d1 i try
	shift 3
	for ((try = 1; try <= 3; try++)); do
		read -r r0 d0 <<<"$(spray_rx_counts)"
		build/tests/stl_spray_mad -u "$UMAD" -g "$STL_GIDX" -D "$STL_MY_IP" "$@" >/dev/null ||
			{ why "$what: stl_spray_mad failed"; return 1; }
		# (stl_spray_mad returned once the send was on the wire, up
		# to a second after it; the module counts what it takes from
		# its receive work: 0.3 s, so that a message wrongly counted
		# shows here, then 2 s more for what must be counted)
		sleep 0.3
		for ((i = 0; i < 20; i++)); do
			read -r r1 d1 <<<"$(spray_rx_counts)"
			((r1 - r0 >= want_r && d1 - d0 >= want_d)) && break
			sleep 0.1
		done
		# A MAD is a datagram: one that should arrive and did not is
		# sent again (a channel that stopped working fails all three).
		((want_r == 0 || r1 > r0)) && break
		echo "$(date +%T) $what: not received, sending again"
	done
	echo "$(date +%T) $what: received +$((r1 - r0)), dropped +$((d1 - d0))"
	((r1 - r0 == want_r && d1 - d0 == want_d)) ||
		why "$what: stellar1 received +$((r1 - r0)) dropped +$((d1 - d0)), want +$want_r +$want_d"
}

# stellar1's spray_msgs_received and spray_msgs_dropped, in one call.
spray_rx_counts() {
	rdma statistic show link stellar1/1 | awk '{ for (i = 1; i < NF; i++) {
		if ($i == "spray_msgs_received") r = $(i + 1)
		if ($i == "spray_msgs_dropped") d = $(i + 1) } }
		END { print r + 0, d + 0 }'
}

spray_check_hostile() {
	local a b q0 q1 p1 p2 p3 b2
	a=$(spray_qps stellar0)
	b=$(spray_qps stellar1)
	echo "stellar0: $a"
	echo "stellar1: $b"
	[[ $(spray_attr "$b" spray) == up ]] || { why "stellar1's QP is not up before the test: $b"; return 1; }
	q0=$(spray_attr "$a" lqpn)
	q1=$(spray_attr "$b" lqpn)
	p1=$(spray_attr "$a" path1_qpn)
	p2=$(spray_attr "$a" path2_qpn)
	p3=$(spray_attr "$a" path3_qpn)
	UMAD=$(rxe0_umad)
	[[ -n $UMAD ]] || { why "no umad device for rxe0 port 1"; return 1; }
	# well-formed, not from the QP's peer, or not its paths: dropped
	spray_hostile "another source QP" 1 1 -s $((q0 + 1)) -t "$q1" -q "0:$((q0 + 1)),$p1,$p2,$p3"
	spray_hostile "another source GID" 1 1 -s "$q0" -t "$q1" -q "$p1,$p2,$p3" -G 10.9.9.9
	spray_hostile "an offer of other paths" 1 1 -s "$q0" -t "$q1" -q "$((p1 + 100)),$p2,$p3"
	spray_hostile "a refusal while up" 1 1 -o 2 -n 1 -s "$q0" -t "$q1"
	spray_hostile "a repair from another source QP" 1 1 -o 4 -P 1 -E 9 \
		-s $((q0 + 1)) -t "$q1" -q "0:$((q0 + 1)),$p1,$p2,$p3"
	# (A repair from the peer's address and QP 0 is taken whatever QPs it
	# names for the other paths: two repairs that cross name QPs the
	# other side does not know yet.)
	spray_hostile "a repair with another path count" 1 1 -o 4 -P 1 -E 9 -s "$q0" -t "$q1" -q "$p1,$p2"
	spray_hostile "an answer to a repair nobody asked for" 1 1 -o 5 -P 1 -E 9 -s "$q0" -t "$q1" -q "$p1,$p2,$p3"
	spray_hostile "a repair of an older epoch" 1 1 -o 4 -P 1 -E 255 -s "$q0" -t "$q1" -q "$p1,$p2,$p3"
	# the peer's own messages again: harmless
	spray_hostile "a duplicate confirmation" 1 0 -o 3 -s "$q0" -t "$q1" -q "$p1,$p2,$p3"
	# (stellar1 answers it again, stellar0 confirms again: 2 received)
	spray_hostile "a duplicate offer" 2 0 -o 1 -s "$q0" -t "$q1" -q "$p1,$p2,$p3"
	# malformed: never looked up
	spray_hostile "version 2" 0 0 -s "$q0" -t "$q1" -q "$p1,$p2,$p3" -v 2
	spray_hostile "op 9" 0 0 -s "$q0" -t "$q1" -q "$p1,$p2,$p3" -o 9
	spray_hostile "a repair of path 0" 0 0 -o 4 -P 0 -E 1 -s "$q0" -t "$q1" -q "$p1,$p2,$p3"
	spray_hostile "a repair of path 4 of 4" 0 0 -o 4 -P 4 -E 1 -s "$q0" -t "$q1" -q "$p1,$p2,$p3"
	spray_hostile "0 paths" 0 0 -s "$q0" -t "$q1" -n 0
	spray_hostile "17 paths" 0 0 -s "$q0" -t "$q1" -q "$p1,$p2,$p3" -n 17
	spray_hostile "a path QPN over 24 bits" 0 0 -s "$q0" -t "$q1" -q "$p1,16777216,$p3"
	spray_hostile "path 0 not the source QP" 0 0 -s "$q0" -t "$q1" -q "0:$((q0 + 1)),$p1,$p2,$p3"
	spray_hostile "another OUI" 0 0 -s "$q0" -t "$q1" -q "$p1,$p2,$p3" -O 0x001122
	spray_hostile "a QP that does not exist" 0 0 -s "$q0" -t $((q1 + 1000)) -q "$p1,$p2,$p3"
	# and the channel still works after them
	spray_hostile "a duplicate confirmation, after them" 1 0 -o 3 -s "$q0" -t "$q1" -q "$p1,$p2,$p3"
	# (the paths' check counts move on by themselves)
	b2=$(spray_qps stellar1 | sed -E 's/ path[0-9]+_checks [0-9]+//g')
	b=$(sed -E 's/ path[0-9]+_checks [0-9]+//g' <<<"$b")
	[[ $b2 == "$b" ]] || why "stellar1's QP changed: '$b2', was '$b'"
	echo "stellar1 after: $b2"
}

s_spray_hostile_messages() {
	modprobe ib_umad || { why "modprobe ib_umad failed"; return 1; }
	spray_during_write_bw stellar0 stellar1 300 18703 spray_check_hostile 5 stop
	dmesg | grep -iE 'spray|stellar.*(warn|oops|bug)' | tail -n 5
	[[ -z $WHY ]]
}

# Up to 10 s for stellar0's and stellar1's QPs to be up with every path
# checked; their rdma res lines in a and b (the caller's locals).
spray_wait_pair_up() {
	local i
	for ((i = 0; i < 20; i++)); do
		a=$(spray_qps stellar0)
		b=$(spray_qps stellar1)
		[[ "$a$b" != *probing* && $(spray_attr "$a" spray) == up && $(spray_attr "$b" spray) == up ]] && return
		sleep 0.5
	done
}

# A path marked failed (debugfs spray_fail_path, as a check that got no
# answer would) is repaired: both sides give it new QPs, connected to each
# other, and it is up again with a recovery on both devices; the other
# paths keep their QPs.  Bad writes to the file get their error codes.
spray_check_repair() {
	local a b f=/sys/kernel/debug/stellar/spray_fail_path q0 i bad want err
	local a1 a3 b1 b3 p2 b2 r0 r1 c0 c1
	spray_wait_pair_up
	echo "stellar0: $a"
	echo "stellar1: $b"
	[[ $(spray_attr "$a" spray) == up && $(spray_attr "$b" spray) == up ]] ||
		{ why "the QPs are not up before the test"; return 1; }
	q0=$(spray_attr "$a" lqpn)
	p2=$(spray_attr "$a" path2_qpn)
	b2=$(spray_attr "$b" path2_qpn)
	a1=$(spray_attr "$a" path1_qpn)
	a3=$(spray_attr "$a" path3_qpn)
	b1=$(spray_attr "$b" path1_qpn)
	b3=$(spray_attr "$b" path3_qpn)
	r0=$(stat_counter stellar0 spray_path_repairs)
	r1=$(stat_counter stellar1 spray_path_repairs)
	c0=$(stat_counter stellar0 spray_path_recoveries)
	c1=$(stat_counter stellar1 spray_path_recoveries)
	for bad in "banana:Invalid argument" "$q0 0:Numerical result out of range" \
		"$q0 4:Numerical result out of range" "16777215 1:No such file or directory"; do
		want=${bad#*:}
		err=$( (echo "${bad%%:*}" >"$f") 2>&1) && why "spray_fail_path took '${bad%%:*}'"
		[[ $err == *"$want"* ]] || why "spray_fail_path '${bad%%:*}': '$err', want $want"
	done
	echo "$q0 2" >"$f" || { why "writing '$q0 2' to spray_fail_path failed"; return 1; }
	for ((i = 0; i < 30; i++)); do
		a=$(spray_qps stellar0)
		b=$(spray_qps stellar1)
		[[ $(spray_attr "$a" path2_state) == up && $(spray_attr "$a" path2_recoveries) -ge 1 &&
			$(spray_attr "$b" path2_state) == up && $(spray_attr "$b" path2_recoveries) -ge 1 ]] && break
		sleep 0.5
	done
	echo "stellar0 after: $a"
	echo "stellar1 after: $b"
	for q0 in "$a" "$b"; do
		[[ $(spray_attr "$q0" path2_state) == up ]] ||
			why "path 2 is '$(spray_attr "$q0" path2_state)' after its repair, want up"
		(($(spray_attr "$q0" path2_recoveries) + 0 == 1)) ||
			why "path 2 recoveries '$(spray_attr "$q0" path2_recoveries)', want 1"
	done
	[[ $(spray_attr "$a" path2_qpn) != "$p2" && $(spray_attr "$b" path2_qpn) != "$b2" ]] ||
		why "path 2 kept its QPs ($p2, $b2)"
	[[ $(spray_attr "$a" path2_peer_qpn) == $(spray_attr "$b" path2_qpn) &&
		$(spray_attr "$b" path2_peer_qpn) == $(spray_attr "$a" path2_qpn) ]] ||
		why "the new path 2 QPs are not connected to each other"
	[[ $(spray_attr "$a" path1_qpn) == "$a1" && $(spray_attr "$a" path3_qpn) == "$a3" &&
		$(spray_attr "$b" path1_qpn) == "$b1" && $(spray_attr "$b" path3_qpn) == "$b3" ]] ||
		why "paths 1 and 3 changed QPs"
	(($(stat_counter stellar0 spray_path_repairs) == r0 + 1 &&
		$(stat_counter stellar1 spray_path_repairs) == r1 + 1)) ||
		why "spray_path_repairs went $r0/$r1 -> $(stat_counter stellar0 spray_path_repairs)/$(stat_counter stellar1 spray_path_repairs), want +1 each"
	(($(stat_counter stellar0 spray_path_recoveries) == c0 + 1 &&
		$(stat_counter stellar1 spray_path_recoveries) == c1 + 1)) ||
		why "spray_path_recoveries did not go +1 on each device"
}

s_spray_repair() {
	spray_during_write_bw stellar0 stellar1 300 18705 spray_check_repair 6 stop
	dmesg | grep -iE 'spray|marked failed' | tail -n 3
	[[ -z $WHY ]]
}

# Two paths of one side repaired at once, the first message of each
# repair lost (debugfs spray_lose_msgs): each message sent again names
# both of the side's new QPs, one of which the peer does not know yet.
# Both paths are up again on both sides (with one recovery each), and
# path 3 kept its QPs.
spray_check_crossed_repairs() {
	local a b f=/sys/kernel/debug/stellar/spray_fail_path
	local lose=/sys/kernel/debug/stellar/spray_lose_msgs q0 i p a3 b3
	spray_wait_pair_up
	[[ $(spray_attr "$a" spray) == up && $(spray_attr "$b" spray) == up ]] ||
		{ why "the QPs are not up before the test"; return 1; }
	q0=$(spray_attr "$a" lqpn)
	a3=$(spray_attr "$a" path3_qpn)
	b3=$(spray_attr "$b" path3_qpn)
	echo 2 >"$lose" || { why "writing 2 to spray_lose_msgs failed"; return 1; }
	echo "$q0 1" >"$f" && echo "$q0 2" >"$f" ||
		{ why "writing to spray_fail_path failed"; return 1; }
	[[ $(cat "$lose") == 0 ]] || why "spray_lose_msgs is '$(cat "$lose")' after the repairs, want 0 (both lost)"
	for ((i = 0; i < 40; i++)); do
		a=$(spray_qps stellar0)
		b=$(spray_qps stellar1)
		[[ $(spray_attr "$a" path1_state) == up && $(spray_attr "$a" path2_state) == up &&
			$(spray_attr "$b" path1_state) == up && $(spray_attr "$b" path2_state) == up &&
			$(spray_attr "$a" path1_recoveries) -ge 1 && $(spray_attr "$a" path2_recoveries) -ge 1 &&
			$(spray_attr "$b" path1_recoveries) -ge 1 && $(spray_attr "$b" path2_recoveries) -ge 1 ]] && break
		sleep 0.5
	done
	echo "stellar0 after: $a"
	echo "stellar1 after: $b"
	for p in 1 2; do
		[[ $(spray_attr "$a" "path${p}_state") == up && $(spray_attr "$b" "path${p}_state") == up ]] ||
			why "path $p is '$(spray_attr "$a" "path${p}_state")'/'$(spray_attr "$b" "path${p}_state")' after the repairs, want up on both"
		[[ $(spray_attr "$a" "path${p}_peer_qpn") == $(spray_attr "$b" "path${p}_qpn") &&
			$(spray_attr "$b" "path${p}_peer_qpn") == $(spray_attr "$a" "path${p}_qpn") ]] ||
			why "the new path $p QPs are not connected to each other"
	done
	[[ $(spray_attr "$a" path3_qpn) == "$a3" && $(spray_attr "$b" path3_qpn) == "$b3" ]] ||
		why "path 3 changed QPs"
	echo 0 >"$lose"
}

s_spray_crossed_repairs() {
	spray_during_write_bw stellar0 stellar1 300 18706 spray_check_crossed_repairs 6 stop
	dmesg | grep -E 'lost \(debugfs\)' | tail -n 2
	[[ -z $WHY ]]
}

# stl_spray_data between stellar0 and stellar1 (or $SPRAY_A and $SPRAY_B)
# for $1 s (log $2); its pid in SPRAY_PID, its QP 0 in SPRAY_QPN once it
# printed "paths up".  After its last round it keeps its QPs until
# spray_data_wait.
spray_data_start() {
	local i a=${SPRAY_A:-stellar0} b=${SPRAY_B:-stellar1}
	rm -f "$STL_LOGDIR/spray-data.ready" "$STL_LOGDIR/spray-data.release"
	build/tests/stl_spray_data -a "$a" -b "$b" -g "$STL_GIDX" -s "$1" \
		-r "$STL_LOGDIR/spray-data.ready" -H "$STL_LOGDIR/spray-data.release" >"$2" 2>&1 &
	SPRAY_PID=$!
	bg_track "$SPRAY_PID"
	for ((i = 0; i < 120; i++)); do
		[[ -e $STL_LOGDIR/spray-data.ready ]] && break
		kill -0 "$SPRAY_PID" 2>/dev/null || break
		sleep 0.5
	done
	SPRAY_QPN=$(sed -n "s/^SPRAYDATA paths up: QP \\([0-9]*\\) ($a).*/\\1/p" "$2")
	[[ -e $STL_LOGDIR/spray-data.ready && -n $SPRAY_QPN ]] ||
		{ cat "$2"; why "stl_spray_data did not pass its first round"; return 1; }
}

spray_data_wait() {
	local rc=0
	touch "$STL_LOGDIR/spray-data.release"
	wait "$SPRAY_PID" || rc=$?
	cat "$1"
	((rc == 0)) || why "stl_spray_data exited $rc"
	grep -q '^SPRAYDATA ok' "$1" || why "stl_spray_data printed no ok line"
	! grep -q 'SPRAYDATA FAIL' "$1" || why "stl_spray_data: $(grep -m1 'SPRAYDATA FAIL' "$1")"
}

# Large WRITEs and READs are cut into chunks over the paths: the bytes
# arrive intact, an immediate follows every byte before it, completions
# keep post order; each path carried bytes; the device counters moved.
s_spray_data_path() {
	local log=$STL_LOGDIR/spray-data.log a d i n w0 c0 b0 before after
	before=$(rxe0_qpns | wc -l)
	w0=$(stat_counter stellar0 spray_wrs)
	c0=$(stat_counter stellar0 spray_chunks)
	b0=$(stat_counter stellar0 spray_chunk_bytes)
	spray_data_start 8 "$log" || return 1
	# debugfs spray_qps first (the benchmark samples it): the same per-path
	# counters as rdma's, read at once without netlink (rdma res can take
	# seconds in a loaded guest, and the QP goes after the last round).
	d=$(grep "^stellar0 lqpn $SPRAY_QPN " /sys/kernel/debug/stellar/spray_qps)
	a=$(spray_qps stellar0 | grep "lqpn $SPRAY_QPN ")
	echo "debugfs: $d"
	echo "stellar0 QP $SPRAY_QPN: $a"
	[[ $(spray_attr "$a" spray_data) == on ]] || why "spray_data is '$(spray_attr "$a" spray_data)', want on"
	n=$(spray_attr "$a" spray_paths)
	[[ $n == 4 ]] || why "the QP has '$n' paths, want 4"
	for ((i = 1; i < n; i++)); do
		(($(spray_attr "$a" "path${i}_bytes") > 0)) ||
			why "path $i carried '$(spray_attr "$a" "path${i}_bytes")' bytes after the first round, want some"
		[[ $(spray_attr "$a" "path${i}_data") == up ]] || why "path $i data state '$(spray_attr "$a" "path${i}_data")', want up"
	done
	# debugfs never ahead of rdma's counters (read a moment later).
	[[ $(spray_attr "$d" spray) == up && $(spray_attr "$d" spray_data) == on &&
		$(spray_attr "$d" spray_paths) == 4 ]] || why "debugfs spray_qps: '$d', want QP $SPRAY_QPN up, data on, 4 paths"
	for ((i = 1; i < n; i++)); do
		(($(spray_attr "$d" "path${i}_bytes") + 0 <= $(spray_attr "$a" "path${i}_bytes") + 0 &&
			$(spray_attr "$d" "path${i}_chunks") + 0 <= $(spray_attr "$a" "path${i}_chunks") + 0 &&
			$(spray_attr "$d" "path${i}_chunks") + 0 > 0)) ||
			why "debugfs spray_qps path $i: '$(spray_attr "$d" "path${i}_bytes")' bytes, then rdma said '$(spray_attr "$a" "path${i}_bytes")'"
	done
	spray_data_wait "$log"
	rdma statistic show link stellar0/1 | tr ' ' '\n' | grep -A1 '^spray_\(wrs\|chunk\)' | paste - - | tr '\t' ' ' | grep -v -- '^--'
	(($(stat_counter stellar0 spray_wrs) > w0)) || why "spray_wrs did not move"
	(($(stat_counter stellar0 spray_chunks) > c0)) || why "spray_chunks did not move"
	(($(stat_counter stellar0 spray_chunk_bytes) > b0)) || why "spray_chunk_bytes did not move"
	for ((i = 0; i < 20; i++)); do
		after=$(rxe0_qpns | wc -l)
		((after == before)) && break
		sleep 0.5
	done
	((after == before)) || why "rxe0 has $after QPs after the run, $before before: paths left behind"
	[[ -z $WHY ]]
}

# Path $1 of stellar0's QP $SPRAY_QPN after spray_fail_path: up to 20 s
# for it to be up for data with a recovery (its rdma res line then in
# a_up, the caller's local), then, while the rounds go on (a slow kernel
# runs few of them, and the repair may take most of the run), up to 20 s
# for its bytes to grow past what they were then (pb; the last line in a).
# Either wait ends once the run in $2 has printed its ok line.
spray_path_back() {
	local path=$1 log=$2 i
	for ((i = 0; i < 40; i++)); do
		a=$(spray_qps stellar0 | grep "lqpn $SPRAY_QPN ")
		[[ $(spray_attr "$a" "path${path}_data") == up &&
			$(spray_attr "$a" "path${path}_recoveries") -ge 1 ]] && break
		grep -q '^SPRAYDATA ok' "$log" && break
		sleep 0.5
	done
	a_up=$a
	pb=$(spray_attr "$a" "path${path}_bytes")
	for ((i = 0; i < 40; i++)); do
		sleep 0.5
		a=$(spray_qps stellar0 | grep "lqpn $SPRAY_QPN ")
		(($(spray_attr "$a" "path${path}_bytes") > pb)) && break
		grep -q '^SPRAYDATA ok' "$log" && break
	done
}

# A path fails while chunks are on it (debugfs spray_fail_path, twice):
# its chunks go on the other paths, the bytes stay intact, the path is
# repaired and carries chunks again.
s_spray_data_failover() {
	local log=$STL_LOGDIR/spray-data-failover.log f=/sys/kernel/debug/stellar/spray_fail_path
	local a a_up pb r0
	r0=$(stat_counter stellar0 spray_chunk_reposts)
	spray_data_start 40 "$log" || return 1
	echo "$SPRAY_QPN 2" >"$f" || why "writing '$SPRAY_QPN 2' to spray_fail_path failed"
	spray_path_back 2 "$log"
	echo "after the repair: $a_up"
	[[ $(spray_attr "$a_up" path2_data) == up ]] || why "path 2 is '$(spray_attr "$a_up" path2_data)' for data after its repair, want up"
	(($(spray_attr "$a" path2_bytes) > pb)) ||
		why "path 2 carried no bytes after it came back ($pb -> $(spray_attr "$a" path2_bytes))"
	# path 1 too, with chunks on it: once it is back the rounds may end
	# (the run's 40 s are what a slow kernel may need for both)
	echo "$SPRAY_QPN 1" >"$f" || why "writing '$SPRAY_QPN 1' to spray_fail_path failed"
	spray_path_back 1 "$log"
	echo "after path 1's repair: $a"
	spray_data_wait "$log"
	echo "spray_chunk_reposts: $r0 -> $(stat_counter stellar0 spray_chunk_reposts)"
	[[ -z $WHY ]]
}

# Killed with chunks on its paths: every parent QP goes, no oops.  With
# SPRAY_A and SPRAY_B set, between those devices.
s_spray_data_kill9() {
	local log=$STL_LOGDIR/spray-data-kill.log before after i
	before=$(rxe0_qpns | wc -l)
	spray_data_start 60 "$log" || return 1
	sleep 1
	kill -9 "$SPRAY_PID"
	wait "$SPRAY_PID" 2>/dev/null
	for ((i = 0; i < 40; i++)); do
		after=$(rxe0_qpns | wc -l)
		((after == before)) && break
		sleep 0.5
	done
	((after == before)) || why "rxe0 has $after QPs 20 s after the kill, $before before"
	[[ -z $WHY ]]
}

# stl_spray_data in one of its modes ($1: -u or -e) between stellar0 and
# stellar1, its output in $STL_LOGDIR/$2.log: it must exit 0 with its ok
# line and no failure.
spray_data_mode() {
	local log=$STL_LOGDIR/$2.log rc=0
	timeout -k 5 120 build/tests/stl_spray_data -a stellar0 -b stellar1 -g "$STL_GIDX" "$1" >"$log" 2>&1 || rc=$?
	cat "$log"
	((rc == 0)) || why "stl_spray_data $1 exited $rc"
	grep -q '^SPRAYDATA ok' "$log" || why "stl_spray_data $1 printed no ok line"
	! grep -q 'SPRAYDATA FAIL' "$log" || why "stl_spray_data $1: $(grep -m1 'SPRAYDATA FAIL' "$log")"
	[[ -z $WHY ]]
}

# An application that polls late: every completion goes to the CQ's ring
# as it happens, with the byte count QP 0 kept for it (a cut request's
# completion reports the whole request), and frees its send queue slot;
# 600 requests are taken with none polled, nothing is lost, no byte count
# is wrong.
s_spray_data_unpolled() {
	spray_data_mode -u spray-unpolled
}

# The QP moved to the error state while QP 0 is full (a SEND held by RNR,
# then WRITEs until ENOMEM) and cut WRITEs wait for it: every request the
# application posted completes once, flushed, in post order; none is lost
# with the paths.
s_spray_error_state_flushes_all() {
	spray_data_mode -e spray-error-state
}

scenario spray_paths_attribute_and_parameter s_spray_paths_attribute
scenario spray_exchange_connects_paths_stellar0_stellar1 s_spray_exchange_stellar_peers
scenario spray_plain_rxe_peer_stays_on_one_path s_spray_plain_peer_stays_on_one_path
scenario spray_off_with_one_path s_spray_off_with_one_path
scenario spray_paths_within_the_queue_quotas s_spray_paths_within_quota
scenario spray_hostile_exchange_messages_are_dropped s_spray_hostile_messages
scenario spray_failed_path_is_repaired s_spray_repair
scenario spray_two_repairs_first_messages_lost_both_paths_back s_spray_crossed_repairs
scenario spray_data_writes_reads_over_paths_bytes_intact s_spray_data_path
scenario spray_data_failed_path_chunks_reposted s_spray_data_failover
scenario spray_data_process_killed_mid_transfer s_spray_data_kill9
scenario spray_data_completions_unpolled_byte_counts_kept s_spray_data_unpolled
scenario spray_error_state_with_qp0_full_flushes_every_request s_spray_error_state_flushes_all
