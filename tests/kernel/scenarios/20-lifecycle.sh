# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 20-lifecycle.sh - device and parent life cycle under concurrency (sourced
# by vm-one.sh): link add/delete racing other RDMA registrations, parent
# events, deletes and rmmod; netdev removal; naming the parent device
# directly (/sys/kernel/stellar/link_add); parents Stellar must refuse.
# Every loop is bounded (iterations and a timeout); a deadlock shows as a
# loop that does not finish, a use-after-free as a kernel error line.

LC_LINK_ADD=/sys/kernel/stellar/link_add
LC_ITER=${STL_LC_ITER:-12}

# The IPv4-mapped GID rxe0 must have at index $STL_GIDX.
lc_want_gid() {
	local o
	IFS=. read -r -a o <<<"$STL_MY_IP"
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${o[@]}"
}

lc_wait_gid() {
	local want end=$((SECONDS + ${1:-20}))
	want=$(lc_want_gid)
	until [[ $(cat "/sys/class/infiniband/rxe0/ports/1/gids/$STL_GIDX" 2>/dev/null) == "$want" ]]; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# Back to the standard state: stellar.ko loaded, rxe0 on eth0 with its GID,
# stellar0 and stellar1 ACTIVE over rxe0, no other Stellar device.
lc_restore() {
	local d
	ip link set eth0 up 2>/dev/null
	module_loaded || load_stellar || return 1
	for d in $(stellar_devices); do
		[[ $d == stellar0 || $d == stellar1 ]] || rdma link delete "$d" 2>/dev/null
	done
	if ! dev_exists rxe0; then
		run rdma link add rxe0 type rxe netdev eth0 || { why "cannot recreate rxe0"; return 1; }
	fi
	wait_active rxe0 30 || { why "rxe0 not ACTIVE"; return 1; }
	lc_wait_gid 30 || { why "rxe0 has no IPv4 GID at index $STL_GIDX"; return 1; }
	for d in stellar0 stellar1; do
		if dev_exists "$d"; then
			wait_active "$d" 20 || { why "$d not ACTIVE"; return 1; }
		else
			add_stellar "$d" || return 1
		fi
	done
	return 0
}

# A veth pair veth0/veth1 (up), for a second rxe parent.
lc_veth() {
	ip link show veth0 >/dev/null 2>&1 && return 0
	modprobe veth 2>/dev/null
	ip link add veth0 type veth peer name veth1 || { why "cannot create veth0/veth1"; return 1; }
	ip link set veth1 up && ip link set veth0 up
}

lc_veth_del() {
	ip link show veth0 >/dev/null 2>&1 && ip link del veth0
	return 0
}

# Kernel log lines since line $1 of dmesg that match ERE $2.
lc_klog_since() {
	dmesg | tail -n +"$(($1 + 1))" | grep -E "$2"
}

# Run a loop body $2 times in the background, bounded by timeout $1 s; sets
# LC_PID.  Each iteration's failures are logged, not fatal.
lc_loop() {
	local limit=$1 n=$2
	shift 2
	# shellcheck disable=SC2016 # expanded by the inner bash
	timeout -k 5 "$limit" bash -c '
		n=$1; shift
		for ((i = 0; i < n; i++)); do eval "$@"; done
		echo "loop done: $n iterations"' lc "$n" "$@" &
	LC_PID=$!
	bg_track "$LC_PID"
}

# H1: rdma link add/delete of an rxe device (ib_client add of Stellar under
# devices_rwsem) racing rdma link add/delete of a Stellar device.  (The
# rdma tool finds a device by name in a dump of all devices, which fails
# now and then while other devices come and go: "Wrong device name".  The
# loops delete again then, or s9 would be left over by the tool.)
s_lc_link_add_vs_rxe_register() {
	local a b rca rcb
	lc_veth || return 1
	lc_loop 300 "$LC_ITER" 'rdma link add rxe9 type rxe netdev veth0; rdma link delete rxe9'
	a=$LC_PID
	lc_loop 300 "$LC_ITER" 'rdma link add s9 type stellar netdev eth0; rdma link delete s9 || { sleep 0.2; rdma link delete s9; }'
	b=$LC_PID
	wait_exit "$a" 320 || why "rxe add/delete loop still running after 320 s (deadlock?)"
	wait_exit "$b" 320 || why "stellar add/delete loop still running after 320 s (deadlock?)"
	rca=$(exit_status "$a")
	rcb=$(exit_status "$b")
	echo "rxe loop exit $rca, stellar loop exit $rcb"
	((rca == 0)) || why "rxe add/delete loop exited $rca (124: timed out, deadlock)"
	((rcb == 0)) || why "stellar add/delete loop exited $rcb (124: timed out, deadlock)"
	! dev_exists s9 || why "s9 left over"
	dev_exists rxe9 && rdma link delete rxe9
	lc_veth_del
	# devices still work and a new one can be made
	add_stellar s9 || return 1
	run rdma link delete s9 || why "rdma link delete s9 failed"
	wait_active stellar0 5 || why "stellar0 not ACTIVE"
	pingpong_local ibv_rc_pingpong stellar1 stellar0 18700 -n 50 -c
	lc_restore
	[[ -z $WHY ]]
}

# H3 part 1: parent port events reach a Stellar device's listeners.
s_lc_parent_port_events_forwarded() {
	local log=$STL_LOGDIR/asyncwatch-stellar0 pid gw end
	gw=$(ip route show default | head -n 1)
	stdbuf -oL ibv_asyncwatch -d stellar0 >"$log" 2>&1 &
	pid=$!
	bg_track "$pid"
	end=$((SECONDS + 30))
	until grep -q "async event FD" "$log"; do
		kill -0 "$pid" 2>/dev/null || { cat "$log"; why "ibv_asyncwatch -d stellar0 exited"; return 1; }
		((SECONDS < end)) || { cat "$log"; why "ibv_asyncwatch -d stellar0 not listening after 30 s"; return 1; }
		sleep 0.2
	done
	sleep 1
	run ip link set eth0 down
	sleep 2
	run ip link set eth0 up
	# shellcheck disable=SC2086 # $gw is the words of `ip route` output
	[[ -n $gw ]] && ! ip route show default | grep -q . && ip route add $gw
	wait_active rxe0 30 || why "rxe0 not ACTIVE after eth0 came back"
	wait_active stellar0 30 || why "stellar0 not ACTIVE after eth0 came back"
	sleep 2
	kill "$pid" 2>/dev/null
	wait_exit "$pid" 5
	cat "$log"
	grep -q "IBV_EVENT_PORT_ERR" "$log" || why "stellar0 got no PORT_ERR when eth0 went down"
	grep -q "IBV_EVENT_PORT_ACTIVE" "$log" || why "stellar0 got no PORT_ACTIVE when eth0 came up"
	lc_restore
	[[ -z $WHY ]]
}

# H3 part 2: delete Stellar devices while the parent forwards GID and port
# events (IP address churn on eth0, a VLAN coming and going, link flaps).
s_lc_link_delete_vs_parent_events() {
	local a b rca rcb gw
	gw=$(ip route show default | head -n 1)
	modprobe 8021q 2>/dev/null
	lc_loop 300 "$LC_ITER" 'rdma link add s9 type stellar netdev eth0; rdma link delete s9 || { sleep 0.2; rdma link delete s9; }'
	a=$LC_PID
	# shellcheck disable=SC2016 # the loop body expands $i itself
	lc_loop 300 $((LC_ITER * 2)) '
		ip addr add 10.99.0.$((i % 200 + 1))/32 dev eth0
		ip addr del 10.99.0.$((i % 200 + 1))/32 dev eth0
		if ((i % 4 == 0)); then
			ip link add link eth0 name eth0.99 type vlan id 99 &&
				ip link set eth0.99 up &&
				ip addr add 10.98.0.1/24 dev eth0.99
			ip link del eth0.99
		fi
		if ((i % 6 == 3)); then ip link set eth0 down; ip link set eth0 up; fi'
	b=$LC_PID
	wait_exit "$a" 320 || why "stellar add/delete loop still running after 320 s"
	wait_exit "$b" 320 || why "address/link churn loop still running after 320 s"
	rca=$(exit_status "$a")
	rcb=$(exit_status "$b")
	echo "stellar loop exit $rca, churn loop exit $rcb"
	((rca == 0)) || why "stellar add/delete loop exited $rca"
	((rcb == 0)) || why "churn loop exited $rcb"
	ip link show eth0.99 >/dev/null 2>&1 && ip link del eth0.99
	ip link set eth0 up
	# shellcheck disable=SC2086 # $gw is the words of `ip route` output
	[[ -n $gw ]] && ! ip route show default | grep -q . && ip route add $gw
	! dev_exists s9 || why "s9 left over"
	lc_restore || return 1
	pingpong_local ibv_rc_pingpong stellar1 stellar0 18701 -n 50 -c
	[[ -z $WHY ]]
}

# L1: rdma link add and rdma link delete of the same name at once.  A
# child freed behind newlink's back used to leave rxe0's child count up,
# so deleting rxe0 afterwards hung.
s_lc_link_add_vs_delete_same_name() {
	local i dpid drc
	for ((i = 0; i < LC_ITER * 2; i++)); do
		rdma link add s8 type stellar netdev eth0 2>/dev/null &
		rdma link delete s8 2>/dev/null
		wait
	done
	dev_exists s8 && run rdma link delete s8
	wait_gone s8 10 || why "s8 still present"
	echo "+ rdma link delete rxe0 (stellar0, stellar1 present)"
	rdma link delete rxe0 &
	dpid=$!
	bg_track "$dpid"
	wait_exit "$dpid" 60 || { why "rdma link delete rxe0 blocked 60 s (leaked child count)"; return 1; }
	drc=$(exit_status "$dpid")
	((drc == 0)) || why "rdma link delete rxe0 exited $drc"
	wait_gone rxe0 10 || why "rxe0 still present"
	[[ -z $(stellar_devices) ]] || why "stellar devices left: $(stellar_devices | tr '\n' ' ')"
	lc_restore || return 1
	pingpong_local ibv_rc_pingpong stellar1 stellar0 18702 -n 50 -c
	[[ -z $WHY ]]
}

# L2: rmmod while a child is being deleted; module text must not run after
# the module is freed (an oops, or a hang of either command, fails this).
s_lc_rmmod_vs_link_delete() {
	local i dpid rpid
	for ((i = 0; i < LC_ITER / 2 + 1; i++)); do
		module_loaded || load_stellar || return 1
		add_stellar s7 || return 1
		rdma link delete s7 2>/dev/null &
		dpid=$!
		rmmod stellar 2>/dev/null &
		rpid=$!
		bg_track "$dpid"
		bg_track "$rpid"
		wait_exit "$dpid" 60 || { why "rdma link delete s7 blocked 60 s (round $i)"; return 1; }
		wait_exit "$rpid" 60 || { why "rmmod blocked 60 s (round $i)"; return 1; }
		echo "round $i: delete exit $(exit_status "$dpid"), rmmod exit $(exit_status "$rpid")"
		module_loaded && run rmmod stellar
		! module_loaded || { why "stellar still loaded after rmmod (round $i)"; return 1; }
		! dev_exists s7 || { why "s7 survived rmmod (round $i)"; return 1; }
	done
	load_stellar || return 1
	lc_restore || return 1
	pingpong_local ibv_rc_pingpong stellar1 stellar0 18703 -n 50 -c
	[[ -z $WHY ]]
}

# L7: deleting the netdev under a Stellar device removes the device and does
# not block unregister_netdevice.
s_lc_netdev_delete_removes_child() {
	local t0 ms rc=0 k
	lc_veth || return 1
	run rdma link add rxe9 type rxe netdev veth0 || { why "rxe on veth0 refused"; lc_veth_del; return 1; }
	wait_active rxe9 20 || why "rxe9 not ACTIVE"
	add_stellar s6 veth0 || { lc_veth_del; return 1; }
	[[ $(cat /sys/class/infiniband/s6/parent) == rxe9 ]] || why "s6 parent is not rxe9"
	k=$(dmesg | wc -l)
	t0=$(date +%s%N)
	echo "+ ip link del veth0"
	timeout -k 5 60 ip link del veth0 || rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "ip link del veth0: exit $rc after $ms ms"
	((rc == 0)) || why "ip link del veth0 exited $rc (124: blocked)"
	((ms < 20000)) || why "ip link del veth0 took $ms ms"
	wait_gone s6 10 || why "s6 still present after its netdev went away"
	wait_gone rxe9 10 || why "rxe9 still present after its netdev went away"
	lc_klog_since "$k" "stellar|s6|rxe9" | head -n 20
	wait_active stellar0 5 || why "stellar0 not ACTIVE"
	lc_restore
	[[ -z $WHY ]]
}

# Write "$1" to link_add; prints the error text (empty on success).
lc_link_add() {
	local out
	out=$( (echo "$1" >"$LC_LINK_ADD") 2>&1) && return 0
	echo "${out##*: }"
	return 1
}

# Expect link_add "$1" to fail with error text $2 and a kernel line matching $3.
lc_expect_refused() {
	local k out
	k=$(dmesg | wc -l)
	if out=$(lc_link_add "$1"); then
		why "link_add '$1' succeeded, want '$2'"
		return 1
	fi
	echo "link_add '$1': $out"
	[[ $out == *"$2"* ]] || why "link_add '$1' said '$out', want '$2'"
	lc_klog_since "$k" "$3" || why "no kernel line matching '$3' for link_add '$1'"
}

# M6: create a device by naming the parent device; refusals with errno.
s_lc_link_add_by_parent_name() {
	local p
	[[ -w $LC_LINK_ADD ]] || { why "$LC_LINK_ADD missing"; return 1; }
	lc_link_add "stellar4 rxe0" || { why "link_add 'stellar4 rxe0' failed"; return 1; }
	wait_active stellar4 20 || why "stellar4 not ACTIVE"
	p=$(cat /sys/class/infiniband/stellar4/parent)
	[[ $p == rxe0 ]] || why "stellar4 parent is '$p', want rxe0"
	pingpong_local ibv_rc_pingpong stellar4 stellar0 18704 -n 50 -c
	run rdma link delete stellar4 || why "rdma link delete stellar4 failed"
	lc_link_add "stellar4 rxe0 1" || why "link_add 'stellar4 rxe0 1' failed"
	wait_active stellar4 20 || why "stellar4 (port 1) not ACTIVE"
	run rdma link delete stellar4
	lc_expect_refused "s5 nosuchdev0" "No such device" "link_add: s5: no RDMA device nosuchdev0"
	lc_expect_refused "s5 stellar0" "No such device" "s5: stellar0 is not a device Stellar can build on"
	lc_expect_refused "s5" "Invalid argument" 'link_add: want "NAME PARENT \[PORT\] \[addr=IP\]\.\.\." or "NAME netdev=NETDEV'
	lc_expect_refused "s5 rxe0 1 extra" "Invalid argument" 'link_add: want "NAME PARENT \[PORT\] \[addr=IP\]\.\.\." or "NAME netdev=NETDEV'
	lc_expect_refused "s5 rxe0 x" "Invalid argument" 'link_add: want "NAME PARENT \[PORT\] \[addr=IP\]\.\.\." or "NAME netdev=NETDEV'
	lc_expect_refused "s5 rxe0 2" "Invalid argument" "s5: parent rxe0 has no port 2"
	lc_expect_refused "s%d rxe0" "Invalid argument" "link_add: bad device name"
	lc_expect_refused "stellar0 rxe0" "File exists" "stellar0: an RDMA device of that name exists"
	for p in s5 stellar4; do
		! dev_exists "$p" || why "$p exists after the refusals"
	done
	[[ $(stellar_devices | tr '\n' ' ') == "stellar0 stellar1 " ]] ||
		why "devices now: $(stellar_devices | tr '\n' ' ')"
	[[ -z $WHY ]]
}

# M6: an iWARP parent (siw) is refused with EOPNOTSUPP, by netdev and by
# name.  Needs siw (not in every kernel): SKIP where it cannot be created.
s_lc_refuses_iwarp_parent() {
	local out rc=0 k
	lc_veth || return 1
	modprobe siw 2>/dev/null
	if ! out=$(rdma link add siw9 type siw netdev veth0 2>&1); then
		lc_veth_del
		why "no siw here (rdma link add siw9 type siw: $out)"
		return 77
	fi
	k=$(dmesg | wc -l)
	out=$(rdma link add s5 type stellar netdev veth0 2>&1) || rc=$?
	echo "rdma link add s5 over siw's netdev: rc $rc: $out"
	((rc != 0)) || why "a Stellar device over siw was created"
	[[ $out == *"not supported"* ]] || why "not EOPNOTSUPP: $out"
	lc_klog_since "$k" "s5: parent siw9 port 1 is iWARP, not RoCE" ||
		why "no log line naming iWARP"
	lc_expect_refused "s5 siw9" "not supported" "s5: parent siw9 port 1 is iWARP, not RoCE"
	dev_exists s5 && rdma link delete s5
	# with rxe on the same netdev too, the RoCE device is the parent
	if run rdma link add rxe9 type rxe netdev veth0; then
		if add_stellar s5 veth0; then
			[[ $(cat /sys/class/infiniband/s5/parent) == rxe9 ]] ||
				why "s5 over veth0 (siw9 and rxe9) is not on rxe9"
		fi
		dev_exists s5 && rdma link delete s5
		run rdma link delete rxe9
	else
		why "rxe on veth0 refused"
	fi
	run rdma link delete siw9
	lc_veth_del
	[[ -z $WHY ]]
}

scenario lifecycle_link_add_vs_rxe_register s_lc_link_add_vs_rxe_register
scenario lifecycle_parent_port_events_forwarded s_lc_parent_port_events_forwarded
scenario lifecycle_link_delete_vs_parent_events s_lc_link_delete_vs_parent_events
scenario lifecycle_link_add_vs_delete_same_name s_lc_link_add_vs_delete_same_name
scenario lifecycle_netdev_delete_removes_child s_lc_netdev_delete_removes_child
scenario lifecycle_link_add_by_parent_name s_lc_link_add_by_parent_name
scenario lifecycle_refuses_iwarp_parent s_lc_refuses_iwarp_parent
scenario lifecycle_rmmod_vs_link_delete s_lc_rmmod_vs_link_delete
