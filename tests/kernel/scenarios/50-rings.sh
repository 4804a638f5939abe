# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 50-rings.sh - devices that speak the rxe user ABI (named rxe*, driven by
# the distribution's own librxe with no Stellar file in the process):
# claimed by librxe, rdma-core's pingpongs over them against plain rxe0 and
# against each other, bytes checked (-c).

# librxe, not libstellar: the process sees only the system providers.
rings_env() { env -u RDMAV_DRIVERS "$@"; }

s_rings_claimed_by_stock_librxe() {
	local out d
	add_stellar rxe_s0 || return 1
	add_stellar rxe_s1 || return 1
	for d in rxe_s0 rxe_s1; do
		out=$(rings_env ibv_devinfo -v -d "$d" 2>&1)
		echo "$out" | head -30
		[[ $out == *PORT_ACTIVE* ]] || why "librxe did not open $d"
		[[ $(cat "/sys/class/infiniband/$d/parent" 2>&1) == rxe0 ]] ||
			why "$d parent is not rxe0"
	done
	[[ -z $WHY ]]
}

# Run "$@" (a scenario function) with no RDMAV_DRIVERS: the system's
# providers only, librxe among them.
with_librxe() {
	local saved=${RDMAV_DRIVERS-} rc
	unset RDMAV_DRIVERS
	"$@"
	rc=$?
	export RDMAV_DRIVERS=$saved
	return $rc
}

# The ways a process loses a device with rings mapped (the same as for
# stellarN devices: vm-one.sh): pages unpinned, the process sees an error,
# nothing hangs, the rest keeps working.
s_rings_kill9_with_rings_mapped() {
	with_librxe start_traffic rxe_s0 rxe_s1 || return 1
	grep -c uverbs /proc/"$TRAFFIC_PID"/maps | sed 's/^/uverbs mappings of stl_traffic: /'
	kill -9 "$TRAFFIC_PID"
	wait_exit "$TRAFFIC_PID" 10 || why "stl_traffic not dead 10 s after kill -9"
	wait_no_pins 10 || why "debugfs pinned_pages is $(pinned_total) 10 s after kill -9"
	run rdma resource show qp link rxe_s0/1
	! rdma resource show qp link rxe_s0/1 | grep -q ' pid [1-9]' ||
		why "rxe_s0 still has user QPs after kill -9"
	with_librxe pingpong_local ibv_rc_pingpong rxe_s1 rxe_s0 18720 -n 50 -c ||
		why "rxe_s0/rxe_s1 carry no traffic after the kill"
	[[ -z $WHY ]]
}

s_rings_delete_while_in_use() {
	with_librxe start_traffic rxe_s1 rxe_s1 || return 1
	delete_in_use rxe_s1 20 || return 1
	wait_gone rxe_s1 5 || why "rxe_s1 still in /sys/class/infiniband"
	traffic_sees_error 15
	wait_no_pins 10 || why "debugfs pinned_pages is $(pinned_total) after the delete"
	add_stellar rxe_s1 || return 1
	with_librxe pingpong_local ibv_rc_pingpong rxe_s1 rxe_s0 18721 -n 50 -c ||
		why "a new rxe_s1 carries no traffic"
	[[ -z $WHY ]]
}

s_rings_parent_delete_while_in_use() {
	with_librxe start_traffic rxe_s0 rxe_s1 || return 1
	delete_in_use rxe0 30 || return 1
	for d in rxe_s0 rxe_s1 stellar0 stellar1; do
		wait_gone "$d" 10 || why "$d still present after its parent rxe0 was deleted"
	done
	traffic_sees_error 15
	wait_no_pins 10 || why "debugfs pinned_pages is $(pinned_total) after the parent went"
	recreate_rxe0 || return 1
	for d in stellar0 stellar1 rxe_s0 rxe_s1; do
		add_stellar "$d" || return 1
	done
	[[ -z $WHY ]]
}

s_rings_rmmod_while_in_use() {
	local rpid rrc d
	with_librxe start_traffic rxe_s0 rxe_s1 || return 1
	echo "+ rmmod stellar (stl_traffic has rings mapped)"
	rmmod stellar &
	rpid=$!
	bg_track "$rpid"
	wait_exit "$rpid" 30 || { why "rmmod stellar blocked for 30 s"; return 1; }
	rrc=$(exit_status "$rpid")
	((rrc == 0)) || why "rmmod stellar exited $rrc"
	traffic_sees_error 15
	! module_loaded || why "/sys/module/stellar still present"
	load_stellar || return 1
	for d in stellar0 stellar1 rxe_s0 rxe_s1; do
		add_stellar "$d" || return 1
	done
	with_librxe pingpong_local ibv_rc_pingpong rxe_s1 rxe_s0 18722 -n 50 -c ||
		why "no traffic after the module was reloaded"
	[[ -z $WHY ]]
}

# Spraying with the stock provider: rxe_s0 and rxe_s1 given 4 paths
# (spray_paths), stl_spray_data between them through librxe. The send
# ring's entries go through the paths' queue: large WRITEs and READs cut
# into chunks over the paths, bytes intact, completions in post order with
# their byte counts; then its late-polling (-u) and error-state (-e) runs,
# and a run killed with chunks on its paths. The device counters moved;
# the paths go with the QPs.
s_rings_spray_data() {
	local log=$STL_LOGDIR/rings-spray-data.log d m c0 b0 before after i rc
	before=$(rxe0_qpns | wc -l)
	for d in rxe_s0 rxe_s1; do
		echo 4 >"/sys/class/infiniband/$d/spray_paths" ||
			why "spray_paths 4 refused on $d"
	done
	[[ -z $WHY ]] || return 1
	c0=$(stat_counter rxe_s0 spray_chunks)
	b0=$(stat_counter rxe_s0 spray_chunk_bytes)
	for m in -s -u -e; do
		rc=0
		if [[ $m == -s ]]; then
			timeout -k 5 120 build/tests/stl_spray_data -a rxe_s0 -b rxe_s1 \
				-g "$STL_GIDX" -s 4 >"$log" 2>&1 || rc=$?
		else
			timeout -k 5 120 build/tests/stl_spray_data -a rxe_s0 -b rxe_s1 \
				-g "$STL_GIDX" "$m" >"$log" 2>&1 || rc=$?
		fi
		cat "$log"
		((rc == 0)) || why "stl_spray_data $m exited $rc"
		grep -q '^SPRAYDATA ok' "$log" || why "stl_spray_data $m printed no ok line"
		! grep -q 'SPRAYDATA FAIL' "$log" ||
			why "stl_spray_data $m: $(grep -m1 'SPRAYDATA FAIL' "$log")"
		if [[ $m == -s ]]; then
			(($(stat_counter rxe_s0 spray_chunks) > c0)) ||
				why "rxe_s0 spray_chunks did not move"
			(($(stat_counter rxe_s0 spray_chunk_bytes) > b0)) ||
				why "rxe_s0 spray_chunk_bytes did not move"
		fi
	done
	# Killed with chunks on its paths: the ring QPs' paths go too.
	SPRAY_A=rxe_s0 SPRAY_B=rxe_s1 s_spray_data_kill9
	for d in rxe_s0 rxe_s1; do
		echo 1 >"/sys/class/infiniband/$d/spray_paths" ||
			why "spray_paths 1 refused on $d"
	done
	for ((i = 0; i < 20; i++)); do
		after=$(rxe0_qpns | wc -l)
		((after == before)) && break
		sleep 0.5
	done
	((after == before)) || why "rxe0 has $after QPs after the runs, $before before: paths left behind"
	[[ -z $WHY ]]
}

s_rings_delete() {
	run rdma link delete rxe_s0 || why "rdma link delete rxe_s0 failed"
	run rdma link delete rxe_s1 || why "rdma link delete rxe_s1 failed"
	[[ -z $WHY ]]
}

scenario rings_claimed_by_stock_librxe s_rings_claimed_by_stock_librxe
scenario rings_rc_pingpong_rxe_s0_rxe0 with_librxe pingpong_local ibv_rc_pingpong rxe0 rxe_s0 18700 -n 200 -c
scenario rings_rc_pingpong_rxe_s0_rxe_s1 with_librxe pingpong_local ibv_rc_pingpong rxe_s1 rxe_s0 18701 -n 200 -c
scenario rings_rc_pingpong_events_rxe_s0_rxe_s1 with_librxe pingpong_local ibv_rc_pingpong rxe_s1 rxe_s0 18702 -n 200 -c -e
scenario rings_ud_pingpong_rxe_s0_rxe0 with_librxe pingpong_local ibv_ud_pingpong rxe0 rxe_s0 18703 -n 200 -s 512 -c
scenario rings_ud_pingpong_rxe_s0_rxe_s1 with_librxe pingpong_local ibv_ud_pingpong rxe_s1 rxe_s0 18704 -n 200 -s 512 -c
scenario rings_uc_pingpong_rxe_s0_rxe_s1 with_librxe pingpong_local ibv_uc_pingpong rxe_s1 rxe_s0 18705 -n 200 -c
scenario rings_uc_pingpong_rxe_s0_rxe0 with_librxe pingpong_local ibv_uc_pingpong rxe0 rxe_s0 18706 -n 200 -c
# Shared receive queues: rings of receive entries that any of 16 QPs takes.
scenario rings_srq_pingpong_rxe_s0_rxe_s1 with_librxe pingpong_local ibv_srq_pingpong rxe_s1 rxe_s0 18707 -n 200 -c
scenario rings_srq_pingpong_events_rxe_s0_rxe_s1 with_librxe pingpong_local ibv_srq_pingpong rxe_s1 rxe_s0 18708 -n 200 -c -e
scenario rings_srq_pingpong_rxe_s0_rxe0 with_librxe pingpong_local ibv_srq_pingpong rxe0 rxe_s0 18709 -n 200 -c
# Stellar's verbs suite (the subtests that hold on any verbs device):
# RC/UD/UC traffic with bytes checked, CQ, MR and QP query paths.
scenario rings_verbs_rxe_s0_to_rxe_s1 with_librxe s_verbs rxe_s0 rxe_s1 "${POSITIVE[@]}"
scenario rings_verbs_rxe_s0_to_rxe0 with_librxe s_verbs rxe_s0 rxe0 "${POSITIVE[@]}"
# ibv_resize_cq on a ring (the suite above skips it where unsupported;
# here it must run): unpolled completions move, in order.
scenario rings_cq_resize_rxe_s0 with_librxe s_verbs rxe_s0 rxe_s1 -t 'cq_resize_*'
# The rings mapped into the process are charged to its memory cgroup
# (s_cq_rings_charged_to_memcg: 30-datapath.sh): 64 bytes an entry.
scenario rings_cq_charged_to_memcg s_cq_rings_charged_to_memcg rxe_s0 64
# Memory windows on the ring device (B, the second device named): bound to
# 4 KiB of an MR that grants no remote access itself, written through by
# A, and accesses past the window's end, before its start and into the rest
# of the MR refused with REM_ACCESS_ERR, no byte changed.  SEND with
# Invalidate from A: naming the window, from a QP of another PD, refused
# (REM_INV_REQ_ERR) and the window restored; from the window's PD,
# invalidated.  B sends SEND with Invalidate naming an MR of A: refused,
# the key restored where A is Stellar.  All six must run.
s_rings_mw() {
	local out rc=0
	out=$(timeout -k 5 600 "$VERBS_TEST" -a "$1" -b "$2" -g "$STL_GIDX" -t 'mw_*' \
		-t 'send_inv_*' 2>&1) || rc=$?
	echo "$out"
	((rc == 0)) ||
		why "stl_verbs_test exit $rc: $(grep -E '^FAIL' <<<"$out" | head -n 3 | tr '\n' ';')"
	[[ $(tail -n 1 <<<"$out") == '6 passed, 0 failed' ]] ||
		why "want '6 passed, 0 failed', got '$(tail -n 1 <<<"$out")'"
	[[ -z $WHY ]]
}
scenario rings_mw_rxe_s1_to_rxe_s0 with_librxe s_rings_mw rxe_s1 rxe_s0
scenario rings_mw_rxe0_to_rxe_s0 with_librxe s_rings_mw rxe0 rxe_s0
scenario rings_spray_data_over_paths_stock_librxe with_librxe s_rings_spray_data
scenario rings_write_bw_rxe_s0_rxe_s1 with_librxe perftest_local ib_write_bw rxe_s1 rxe_s0 18710 -n 200
scenario rings_send_lat_rxe_s0_rxe_s1 with_librxe perftest_local ib_send_lat rxe_s1 rxe_s0 18711 -n 200
scenario rings_read_lat_rxe_s0_rxe_s1 with_librxe perftest_local ib_read_lat rxe_s1 rxe_s0 18712 -n 200
scenario rings_kill9_with_rings_mapped s_rings_kill9_with_rings_mapped
scenario rings_delete_while_in_use s_rings_delete_while_in_use
scenario rings_parent_delete_while_in_use s_rings_parent_delete_while_in_use
scenario rings_rmmod_while_in_use s_rings_rmmod_while_in_use
scenario rings_delete s_rings_delete
