#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# vm-two.sh - Stellar scenarios across TWO VMs (guest side).
#
#   make && make -C tests/kernel && scripts/vm.sh -n 2 -t 400 tests/kernel/vm-two.sh
#
# Both VMs run this script.  VM0 ($STL_VM_INDEX 0) runs every server, VM1
# every client, scenario after scenario in the same order, each on its own
# TCP port, so one failed scenario cannot pair a client with the wrong
# server.  Clients retry connecting while the server is not up yet.  Each VM
# prints "PASS name" / "FAIL name: why" for its side and ends with
# "N passed, N failed" (exit 1 if any failed).

set -u
# shellcheck source=tests/kernel/lib.sh
source tests/kernel/lib.sh

export RDMAV_DRIVERS=$PWD/build/libstellar
ROLE=client
((STL_VM_INDEX == 0)) && ROLE=server
SERVER_WAIT=90		# s a server waits for its client to finish
CLIENT_RETRY=45		# s a client retries connecting to its server
BARRIER_PORT=18800	# + scenario number
BARRIER_WAIT=240	# s one VM waits for the other at a barrier
STEP=0

# Where the link between the VMs stands, for a failing step's log: eth0's
# counters and one ping of the peer.  When the ping fails, the host is asked
# for what both QEMUs hold of the link (vmN/qemu-net.log, scripts/vm.sh).
net_state() {
	local p
	ip -s link show dev eth0 | sed 's/^/    /'
	p=$(busybox ping -c 2 -W 1 "$STL_PEER_IP" 2>&1 | tail -n 2)
	sed 's/^/    ping: /' <<<"$p"
	if [[ $p == *" 0 packets received"* ]]; then
		echo "step $STEP, ping of $STL_PEER_IP failed" >"$STL_OUT/net-dump"
		echo "    the QEMUs' view of the link: qemu-net.log"
	fi
}

# Both VMs meet here before each scenario, so a scenario that failed
# quickly on one side cannot leave the two out of step: VM0 accepts one
# TCP connection on BARRIER_PORT + STEP, VM1 connects until that works.
barrier() {
	local port end=$((SECONDS + BARRIER_WAIT))
	STEP=$((STEP + 1))
	port=$((BARRIER_PORT + STEP))
	if [[ $ROLE == server ]]; then
		timeout "$BARRIER_WAIT" busybox nc -l -p "$port" </dev/null >/dev/null 2>&1 ||
			{ echo "# barrier $STEP: the other VM did not come within $BARRIER_WAIT s"; net_state; }
	else
		until (exec 3<>"/dev/tcp/$STL_PEER_IP/$port") 2>/dev/null; do
			if ((SECONDS >= end)); then
				echo "# barrier $STEP: the other VM did not come within $BARRIER_WAIT s"
				net_state
				return 0
			fi
			sleep 0.2
		done
	fi
	return 0
}

# A scenario run by both VMs in step.
step() {
	barrier
	scenario "$@"
}

s_module_loads_and_creates_stellar0() {
	load_stellar || return 1
	add_stellar stellar0 || return 1
	rdma link show
	[[ $(cat /sys/class/infiniband/stellar0/parent) == rxe0 ]] || why "stellar0 parent is not rxe0"
	[[ -z $WHY ]]
}

# The last two lines of output file $1, without blank lines and the
# loader's (LD_DEBUG) lines.
out_tail() {
	grep -vE '^ *$|^ *[0-9]+:'$'\t' "$1" | tail -n 2 | tr '\n' ' '
}

# Run an exchange program across the VMs: the server on VM0 with device
# $2, the client on VM1 with device $3, TCP port $4; $1 is the program,
# $5 the option that names the GID index (-g for ibverbs-utils, -x for
# perftest), $6 a regular expression the output must match; options follow.
# PASSIVE_SERVER=1: the server prints no result (perftest read/atomic
# latency servers only serve), so only its exit status is checked.
across() {
	local prog=$1 sdev=$2 cdev=$3 port=$4 gopt=$5 expect=$6 rc=0 srv
	shift 6
	local log=$STL_LOGDIR/${prog##*/}-$port
	if [[ $ROLE == server ]]; then
		start_server "$port" 30 "$log.server" \
			"$prog" -d "$sdev" "$gopt" "$STL_GIDX" -p "$port" "$@" || return 1
		srv=$SERVER_PID
		if ! wait_exit "$srv" "$SERVER_WAIT"; then
			cat "$log.server"
			why "server still running after $SERVER_WAIT s (client never came or hung)"
			return 1
		fi
		rc=$(exit_status "$srv")
		cat "$log.server"
		((rc == 0)) || why "server exited $rc: $(out_tail "$log.server")"
		[[ ${PASSIVE_SERVER:-0} == 1 ]] || grep -qE "$expect" "$log.server" ||
			why "server output has no result line"
		[[ -z ${RC_TREE_CHECK:-} ]] || rdma_core_libs_ok "$log.server"
	else
		run_client_retry "$CLIENT_RETRY" "$log.client" \
			"$prog" -d "$cdev" "$gopt" "$STL_GIDX" -p "$port" "$@" "$STL_PEER_IP" || rc=$?
		((rc == 0)) || why "client exited $rc: $(out_tail "$log.client")"
		grep -qE "$expect" "$log.client" || why "client output has no result line"
		[[ -z ${RC_TREE_CHECK:-} ]] || rdma_core_libs_ok "$log.client"
	fi
	[[ -z $WHY ]]
}

PP_RESULT='bytes in [0-9.]+ seconds'
# perftest's result line, printed once every iteration is done; its figures
# read inf when the clock calibration fails on a loaded TCG host (r^2 < 0.9)
PERF_RESULT='^ *[0-9]+ +[0-9]+ +([0-9.]+|inf)'

pingpong() { across "$1" "$2" "$3" "$4" -g "$PP_RESULT" "${@:5}"; }
perftest() { across "$1" "$2" "$3" "$4" -x "$PERF_RESULT" -F "${@:5}"; }

# Ring devices (named rxe*: the rxe user ABI) driven by the stock librxe
# of upstream rdma-core releases, built by the host under build/rdma-core
# (userlib/tests/rdma-core-build.sh; a release that is not built fails its
# steps, or skips them with STL_SCENARIO_RDMA_CORE_SKIP_MISSING=1).
s_rings_add_rxe_s0() {
	add_stellar rxe_s0 || return 1
	rdma link show
}

# Pingpong $2 of rdma-core release $1 across the VMs (server device $3 on
# VM0, client device $4 on VM1, TCP port $5), with that release's
# libibverbs and librxe, which each side checks it loaded (LD_DEBUG=libs:
# a pingpong server may be done before /proc/PID/maps could be read).
release_pingpong() {
	local ver=$1 prog=$2 saved=${RDMAV_DRIVERS-} rc=0
	shift 2
	rdma_core_tree "$ver" || return
	export RDMAV_DRIVERS=$RC_TREE/lib/librxe LD_DEBUG=libs
	RC_TREE_CHECK=1 pingpong "$RC_TREE/bin/$prog" "$@" || rc=$?
	unset LD_DEBUG
	export RDMAV_DRIVERS=$saved
	return "$rc"
}

s_rings_delete_rxe_s0() {
	run rdma link delete rxe_s0 || why "rdma link delete rxe_s0 failed"
}

# A pod's device across hosts.  Each VM has VLAN 300 on eth0 (the RDMA
# addresses, 192.168.30.1 and .2) and VLAN 301 (TCP for the programs'
# exchange).  VM1 switches to exclusive namespaces, creates spod on its
# eth0.300, moves spod and eth0.301 into namespace stl_pod and runs
# ibv_rc_pingpong there; VM0's plain rxe0 answers from its own eth0.300
# address and must see spod's traffic come from 192.168.30.2.
POD_NS=stl_pod
pod_me=$((STL_VM_INDEX + 1))
pod_peer=$((2 - STL_VM_INDEX))

s_pod_setup() {
	modprobe 8021q 2>/dev/null
	local v
	for v in 300 301; do
		ip link add link eth0 name "eth0.$v" type vlan id "$v" ||
			{ why "cannot create VLAN eth0.$v"; return 1; }
	done
	ip link set eth0.300 up && ip addr add "192.168.30.$pod_me/24" dev eth0.300 ||
		why "cannot configure eth0.300"
	if [[ $ROLE == server ]]; then
		ip link set eth0.301 up && ip addr add "192.168.31.$pod_me/24" dev eth0.301 ||
			why "cannot configure eth0.301"
		wait_gid rxe0 "$(addr_gid "192.168.30.$pod_me")" 10 >/dev/null ||
			why "rxe0 never listed eth0.300's address"
		return
	fi
	rdma_netns_mode exclusive || return 1
	add_stellar spod eth0.300 || return 1
	wait_gid spod "$(addr_gid "192.168.30.$pod_me")" 10 >"$STL_LOGDIR/spod.gidx" ||
		why "spod never listed eth0.300's address"
	ip netns add "$POD_NS" &&
		ip link set eth0.301 netns "$POD_NS" &&
		ip -n "$POD_NS" addr add "192.168.31.$pod_me/24" dev eth0.301 &&
		ip -n "$POD_NS" link set eth0.301 up &&
		rdma dev set spod netns "$POD_NS" ||
		why "cannot move spod and eth0.301 into $POD_NS"
	ip netns exec "$POD_NS" ibv_devices | grep -q spod || why "spod is not listed inside $POD_NS"
	ibv_devices | grep -q spod && why "spod is still listed outside $POD_NS"
	[[ -z $WHY ]]
}

s_pod_pingpong_to_rxe() {
	local port=18790 log=$STL_LOGDIR/pod-pingpong rc=0 gidx srv
	if [[ $ROLE == server ]]; then
		gidx=$(gid_index_of rxe0 "$(addr_gid "192.168.30.$pod_me")")
		start_server "$port" 30 "$log.server" \
			ibv_rc_pingpong -d rxe0 -g "${gidx:-1}" -p "$port" -n 200 -c || return 1
		srv=$SERVER_PID
		wait_exit "$srv" "$SERVER_WAIT" || why "server still running after $SERVER_WAIT s"
		rc=$(exit_status "$srv")
		cat "$log.server"
		((rc == 0)) || why "server exited $rc: $(out_tail "$log.server")"
		grep -qE "$PP_RESULT" "$log.server" || why "server output has no result line"
		grep -q "remote address: .*GID ::ffff:192.168.30.$pod_peer\$" "$log.server" ||
			why "rxe0 did not see the pod's traffic come from 192.168.30.$pod_peer"
	else
		gidx=$(cat "$STL_LOGDIR/spod.gidx")
		run_client_retry "$CLIENT_RETRY" "$log.client" ip netns exec "$POD_NS" \
			ibv_rc_pingpong -d spod -g "$gidx" -p "$port" -n 200 -c "192.168.31.$pod_peer" || rc=$?
		((rc == 0)) || why "client inside $POD_NS exited $rc: $(out_tail "$log.client")"
		grep -qE "$PP_RESULT" "$log.client" || why "client output has no result line"
	fi
	[[ -z $WHY ]]
}

s_pod_teardown() {
	if [[ $ROLE == client ]]; then
		run ip netns del "$POD_NS"
		wait_active spod 20 || why "spod did not come back when $POD_NS was deleted"
		run rdma link delete spod || why "rdma link delete spod failed"
		rdma_netns_mode shared
	fi
	ip link del eth0.301 2>/dev/null
	run ip link del eth0.300
	[[ -z $WHY ]]
}

# A dma-buf MR used from the other host (tests/kernel/stl_dmabuf_peer.c):
# VM0 registers a 16 MiB dma-buf of the test exporter (2 MiB chunks) on
# stellar0; VM1's stellar0 reads the pattern VM0 wrote through the
# buffer's mmap, writes one that VM0 finds there, and reads and writes
# again after VM0 had the exporter move the buffer (Stellar maps it again
# under the same key).
s_dmabuf_mr_across_hosts() {
	local port=18960 log=$STL_LOGDIR/dmabuf-peer rc=0 ko srv want
	if [[ $ROLE == server ]]; then
		ko=build/tests/dmabuf/$(uname -r)/stl_dmabuf_exp.ko
		run insmod "$ko" || { why "insmod $ko failed"; return 1; }
		build/tests/stl_dmabuf_peer -s -d stellar0 -g "$STL_GIDX" -p "$port" >"$log.server" 2>&1 &
		srv=$!
		bg_track "$srv"
		wait_exit "$srv" 240 || why "stl_dmabuf_peer -s still running after 240 s"
		rc=$(exit_status "$srv")
		cat "$log.server"
		want="3 passed, 0 failed"
		[[ $(tail -n 1 "$log.server") == "$want" ]] ||
			why "server (exit $rc): $(grep -E '^FAIL' "$log.server" | tr '\n' ' ') want '$want'"
		run rmmod stl_dmabuf_exp || why "the exporter module is still in use"
	else
		timeout -k 5 240 build/tests/stl_dmabuf_peer -d stellar0 -g "$STL_GIDX" -p "$port" \
			"$STL_PEER_IP" >"$log.client" 2>&1 || rc=$?
		cat "$log.client"
		want="4 passed, 0 failed"
		[[ $(tail -n 1 "$log.client") == "$want" ]] ||
			why "client (exit $rc): $(grep -E '^FAIL' "$log.client" | tr '\n' ' ') want '$want'"
	fi
	[[ -z $WHY ]]
}

# Packets this VM sent from UDP source port $1 since spray_count_port
# started counting it (a clsact egress filter on eth0, prio $2).
spray_port_packets() {
	tc -s filter show dev eth0 egress prio "$2" 2>/dev/null |
		awk '/Sent [0-9]+ bytes [0-9]+ pkt/ { for (i = 1; i < NF; i++) if ($i == "pkt") { print $(i - 1); exit } }'
}

# One RC QP across the hosts gets its paths (spray/spray_path.c): while
# ib_write_bw runs, each side sees its QP "up" with 4 paths (the exchange
# went both ways over the wire: vendor MADs between the hosts' QP1s), each
# connected to a peer path QP, on 4 different UDP source ports, each path
# checked (its state up, on both sides: the checks go both ways), and on
# VM0 the checks leave on the wire from each path's own source port
# (counted by a tc filter per port; only VM0 changes its filters while the
# traffic runs: rxe of 6.12 fails a QP whose packet the stack refuses).
# VM0's clsact qdisc is there before the traffic starts and goes after it
# ends: while packets flow only filters come and go (two runs on 6.1 lost
# the link between the VMs for good right after VM0 added or deleted its
# clsact qdisc under this traffic).
# Then VM0 drops what arrives from path 1's port (a black hole on that
# route, out of the senders' sight): path 1's checks get no answer, it is
# repaired (spray_path_repairs) and not up while the hole lasts; once the
# route is back it is up again on both sides with a recovery each, the
# other paths kept being checked, and ib_write_bw (path 0) never noticed.
# ib_write_bw keeps 16 writes in flight (1 MiB) with a 537 ms ACK timeout
# (-u 17): with its defaults (128, 67 ms) a guest starved by the host's
# other work resent QP 0's queue again and again (hundreds of duplicates
# at the responder), and in one such storm on 6.1, whose rxe runs a QP's
# requester and completer as separate tasks, QP 0 failed with status 9:
# the peer's responder NAKed a resend as an invalid request.
s_spray_paths_across_hosts() {
	local port=18717 log=$STL_LOGDIR/spray-across rc=0 pid a i n s sports="" up0 t0=$SECONDS
	local c2 r0 f0
	echo 4 >/sys/class/infiniband/stellar0/spray_paths || why "writing spray_paths 4 failed"
	up0=$(stat_counter stellar0 spray_qps_up)
	r0=$(stat_counter stellar0 spray_path_repairs)
	f0=$(stat_counter stellar0 spray_path_check_failures)
	if [[ $ROLE == server ]]; then
		# The tc modules load now, not while the QP lives (a loaded
		# guest takes seconds to load them).
		tc qdisc del dev eth0 clsact 2>/dev/null
		tc qdisc add dev eth0 clsact &&
			tc filter add dev eth0 egress protocol ip prio 1 u32 \
				match ip protocol 17 0xff match ip sport 1 0xffff action pass &&
			tc filter add dev eth0 ingress protocol ip prio 1 u32 \
				match ip protocol 17 0xff match ip sport 1 0xffff action drop &&
			tc filter del dev eth0 egress prio 1 &&
			tc filter del dev eth0 ingress prio 1 || why "tc: no clsact qdisc or u32 filter"
		start_server "$port" 30 "$log.server" \
			ib_write_bw -d stellar0 -x "$STL_GIDX" -F -p "$port" -s 65536 -t 16 -u 17 -D 40 || return 1
		pid=$SERVER_PID
	else
		run_client_retry "$CLIENT_RETRY" "$log.client" \
			ib_write_bw -d stellar0 -x "$STL_GIDX" -F -p "$port" -s 65536 -t 16 -u 17 -D 40 "$STL_PEER_IP" &
		pid=$!
		bg_track "$pid"
	fi
	for ((i = 0; i < 60; i++)); do
		a=$(spray_qps stellar0)
		[[ $(spray_attr "$a" spray) == up ]] && break
		sleep 0.5
	done
	# A path is up once its first check (one a second) has come back.
	for ((i = 0; i < 20; i++)); do
		[[ $a == *probing* ]] || break
		sleep 0.5
		a=$(spray_qps stellar0)
	done
	echo "stellar0 (t+$((SECONDS - t0)) s): $a"
	[[ $(spray_attr "$a" spray) == up ]] || why "the QP's spray state is '$(spray_attr "$a" spray)', want up"
	n=$(spray_attr "$a" spray_paths)
	[[ $n == 4 ]] || why "the QP has '$n' paths, want 4"
	for ((i = 1; i < ${n:-0}; i++)); do
		[[ $(spray_attr "$a" "path${i}_peer_qpn") =~ ^[0-9]+$ ]] || why "path $i has no peer QP"
		s=$(spray_attr "$a" "path${i}_sport")
		((s >= 49152 && s <= 65535)) || why "path $i source port '$s' is outside 49152..65535"
		[[ " $sports " != *" $s "* ]] || why "two paths share source port $s"
		sports+=" $s"
		[[ $(spray_attr "$a" "path${i}_state") == up ]] ||
			why "path $i state '$(spray_attr "$a" "path${i}_state")', want up"
	done
	if [[ $ROLE == server ]]; then
		i=0
		for s in $sports; do
			i=$((i + 1))
			tc filter add dev eth0 egress protocol ip prio "$i" u32 \
				match ip protocol 17 0xff match ip sport "$s" 0xffff action pass ||
				why "tc: no filter for source port $s"
		done
		sleep 3
		i=0
		for s in $sports; do
			i=$((i + 1))
			n=$(spray_port_packets "$s" "$i")
			echo "source port $s: ${n:-?} packets in 3 s (t+$((SECONDS - t0)) s)"
			((${n:-0} >= 1)) || why "no packet left from path source port $s in 3 s"
		done
		i=0
		for s in $sports; do
			i=$((i + 1))
			tc filter del dev eth0 egress prio "$i"
		done
		a=$(spray_qps stellar0)
		[[ $a == *" spray up "* ]] ||
			why "the QP was gone (ib_write_bw over) before its paths' packets were counted"
		c2=$(spray_attr "$a" path2_checks)
		# The black hole: path 1's packets (the peer's checks, and its
		# answers to ours) arrive no more.  (Dropped on the way out
		# instead, rxe sees the drop and sends again at once.)
		s=${sports# }
		s=${s%% *}
		tc filter add dev eth0 ingress protocol ip prio 1 u32 \
			match ip protocol 17 0xff match ip sport "$s" 0xffff action drop ||
			why "tc: no ingress drop filter for source port $s"
		for ((i = 0; i < 30; i++)); do
			(($(stat_counter stellar0 spray_path_repairs) > r0)) && break
			sleep 0.5
		done
		a=$(spray_qps stellar0)
		echo "black hole on port $s (t+$((SECONDS - t0)) s): $a"
		(($(stat_counter stellar0 spray_path_repairs) > r0)) ||
			why "path 1 was never repaired behind the black hole"
		(($(stat_counter stellar0 spray_path_check_failures) > f0)) ||
			why "spray_path_check_failures did not move behind the black hole"
		[[ $(spray_attr "$a" path1_state) != up ]] ||
			why "path 1 is up behind the black hole"
		sleep 2
		tc filter del dev eth0 ingress prio 1
	fi
	# Path 1 back: up, with a recovery, on both sides.
	for ((i = 0; i < 80; i++)); do
		a=$(spray_qps stellar0)
		[[ -n $a ]] || break
		[[ $(spray_attr "$a" path1_state) == up &&
			$(spray_attr "$a" path1_recoveries) -ge 1 ]] && break
		sleep 0.5
	done
	echo "stellar0 after (t+$((SECONDS - t0)) s): $a"
	[[ $(spray_attr "$a" path1_state) == up ]] ||
		why "path 1 is '$(spray_attr "$a" path1_state)' after the black hole, want up"
	(($(spray_attr "$a" path1_recoveries) + 0 >= 1)) ||
		why "path 1 recoveries '$(spray_attr "$a" path1_recoveries)', want >= 1"
	[[ $(spray_attr "$a" path2_state) == up && $(spray_attr "$a" path3_state) == up ]] ||
		why "paths 2 and 3 not both up"
	if [[ $ROLE == server ]]; then
		(($(spray_attr "$a" path2_checks) + 0 > c2)) ||
			why "path 2 checks stopped at $c2 ($(spray_attr "$a" path2_checks))"
		wait_exit "$pid" "$SERVER_WAIT" || why "server still running after $SERVER_WAIT s"
		rc=$(exit_status "$pid")
		cat "$log.server"
	else
		wait "$pid" || rc=$?
	fi
	[[ $ROLE == server ]] && tc qdisc del dev eth0 clsact
	((rc == 0)) || why "ib_write_bw exited $rc"
	((rc == 0)) || rdma statistic show link rxe0/1
	[[ -z $WHY ]] || net_state
	rdma statistic show link stellar0/1 | tr ' ' '\n' | grep -A1 '^spray_' | paste -sd ' '
	(($(stat_counter stellar0 spray_qps_up) == up0 + 1)) ||
		why "spray_qps_up went $up0 -> $(stat_counter stellar0 spray_qps_up), want +1"
	[[ -z $WHY ]]
}

s_pins_released_and_rmmod_succeeds() {
	local pins
	pins=$(pinned_total)
	echo "debugfs pinned_pages: $pins; stellar0 $(pinned_dev stellar0)"
	[[ $pins == 0 ]] || why "debugfs pinned_pages is '$pins' after all traffic, want 0"
	run rmmod stellar || why "rmmod stellar failed"
	[[ -z $(stellar_devices) ]] || why "devices left after rmmod: $(stellar_devices)"
	[[ -z $WHY ]]
}

echo "vm-two: vm$STL_VM_INDEX ($ROLE), $STL_MY_IP <-> $STL_PEER_IP, gid index $STL_GIDX"
# The peer's link address is fixed (scripts/vm.sh gives VM i 52:54:00:5e:00:0<i+1>):
# on a loaded host a neighbour probe could time out mid-test.
ip neigh replace "$STL_PEER_IP" lladdr "52:54:00:5e:00:0$((2 - STL_VM_INDEX))" \
	dev eth0 nud permanent || echo "vm-two: could not fix the peer's link address"
step module_loads_and_creates_stellar0 s_module_loads_and_creates_stellar0
# stellar <-> stellar across hosts
step rc_pingpong_rxe_to_rxe_link_works pingpong ibv_rc_pingpong rxe0 rxe0 18699 -n 200 -c
step rc_pingpong_stellar_to_stellar pingpong ibv_rc_pingpong stellar0 stellar0 18700 -n 200 -c
step ud_pingpong_stellar_to_stellar pingpong ibv_ud_pingpong stellar0 stellar0 18701 -n 200 -s 512 -c
step uc_pingpong_stellar_to_stellar pingpong ibv_uc_pingpong stellar0 stellar0 18702 -n 200 -c
# stellar <-> plain rxe on the other host, both ways round
step rc_pingpong_stellar_to_rxe pingpong ibv_rc_pingpong stellar0 rxe0 18703 -n 200 -c
step ud_pingpong_stellar_to_rxe pingpong ibv_ud_pingpong stellar0 rxe0 18704 -n 200 -s 512 -c
step rc_pingpong_rxe_to_stellar pingpong ibv_rc_pingpong rxe0 stellar0 18705 -n 200 -c
step ud_pingpong_rxe_to_stellar pingpong ibv_ud_pingpong rxe0 stellar0 18706 -n 200 -s 512 -c
# perftest between the stellar devices of the two hosts
step write_bw_stellar_to_stellar perftest ib_write_bw stellar0 stellar0 18710 -n 300 -s 65536
step read_bw_stellar_to_stellar perftest ib_read_bw stellar0 stellar0 18711 -n 300 -s 65536
step send_bw_stellar_to_stellar perftest ib_send_bw stellar0 stellar0 18712 -n 300 -s 65536
step atomic_bw_stellar_to_stellar perftest ib_atomic_bw stellar0 stellar0 18713 -n 300
step write_lat_stellar_to_stellar perftest ib_write_lat stellar0 stellar0 18714 -n 300 -s 64
step send_lat_stellar_to_stellar perftest ib_send_lat stellar0 stellar0 18715 -n 300 -s 64
PASSIVE_SERVER=1 step read_lat_stellar_to_stellar perftest ib_read_lat stellar0 stellar0 18716 -n 300 -s 64
step dmabuf_mr_across_hosts s_dmabuf_mr_across_hosts
step spray_paths_across_hosts s_spray_paths_across_hosts
# rdma-core releases' librxe: ring device <-> ring device, ring device
# <-> plain rxe0 on the other host, both ways round (the oldest and the
# newest release: provider ABI 34 and 64).
step rings_add_rxe_s0 s_rings_add_rxe_s0
port=18720
for ver in 39.0 64.0; do
	v=${ver%%.*}
	for p in rc ud; do
		opts=(-n 100 -c)
		[[ $p == ud ]] && opts+=(-s 512)
		step "rdma_core_${v}_${p}_pingpong_rxe_s0_to_rxe_s0" \
			release_pingpong "$ver" "ibv_${p}_pingpong" rxe_s0 rxe_s0 $((port += 1)) "${opts[@]}"
		step "rdma_core_${v}_${p}_pingpong_rxe_s0_to_rxe0" \
			release_pingpong "$ver" "ibv_${p}_pingpong" rxe_s0 rxe0 $((port += 1)) "${opts[@]}"
		step "rdma_core_${v}_${p}_pingpong_rxe0_to_rxe_s0" \
			release_pingpong "$ver" "ibv_${p}_pingpong" rxe0 rxe_s0 $((port += 1)) "${opts[@]}"
	done
done
step rings_delete_rxe_s0 s_rings_delete_rxe_s0
# a pod's device (own VLAN address, exclusive namespace) to plain rxe0
step pod_setup_vlan_device_in_namespace s_pod_setup
step pod_rc_pingpong_from_namespace_to_rxe s_pod_pingpong_to_rxe
step pod_teardown s_pod_teardown
step pins_released_and_rmmod_succeeds s_pins_released_and_rmmod_succeeds
finish
