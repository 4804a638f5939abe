# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 40-mr.sh - memory registration: the registration QP, device limits, and
# tearing down many MRs.  Sourced by vm-one.sh (after lib.sh); starts and
# ends with stellar0 and stellar1 ACTIVE over rxe0.

MR_VERBS=build/tests/stl_verbs_test
MR_HOLD=build/tests/stl_mr_hold

# stl_verbs_test subtests $3... between devices $1 and $2.
mr_verbs() {
	local a=$1 b=$2 out rc=0
	shift 2
	out=$(timeout -k 5 600 "$MR_VERBS" -a "$a" -b "$b" -g "$STL_GIDX" "$@" 2>&1) || rc=$?
	echo "$out"
	((rc == 0)) || why "$(echo "$out" | grep -E '^FAIL' | head -n 3 | tr '\n' ';')"
	echo "$out" | grep -qE '^[1-9][0-9]* passed, 0 failed$' || why "no passing subtest"
	[[ -z $WHY ]]
}

# Packets from another tenant (stellar0, and rxe0 itself) at the
# registration QPs: they stay RTS and stellar1's next ibv_reg_mr works.
s_mr_reg_qp_ignores_tenant_packets() {
	run rdma resource show qp link rxe0/1
	mr_verbs stellar0 stellar1 -t mr_reg_works_after_packets_sprayed_at_reg_qps || return 1
	mr_verbs rxe0 stellar1 -t mr_reg_works_after_packets_sprayed_at_reg_qps || return 1
	run rdma resource show qp link rxe0/1
	! dmesg | grep -q 'REG_MR failed' || why "the kernel log has 'REG_MR failed'"
	[[ -z $WHY ]]
}

# max_mr_size is what a registration may cover; the port promises no CM;
# remote write or atomic without local write is refused.
s_mr_limits_match_device_attributes() {
	local out
	out=$(ibv_devinfo -v -d stellar0 2>&1)
	echo "$out" | grep -E 'max_mr_size|port_cap_flags'
	echo "$out" | grep -q 'CM_SUP' && why "ibv_devinfo -v lists CM_SUP for stellar0"
	mr_verbs stellar0 stellar1 -t 'reg_mr_*max_mr_size*' \
		-t 'reg_mr_remote_*_without_local_write_fails_einval' \
		-t port_does_not_advertise_cm_or_device_mgmt
}

# The uverbs ABI stellar.ko registers is the one the uapi header names.
s_mr_uverbs_abi_matches_uapi_header() {
	local want got="" d
	want=$(awk '$2 == "STELLAR_UVERBS_DRIVER_ABI" { print $3 }' include/uapi/stellar-abi.h)
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[[ $(cat "$d/ibdev" 2>/dev/null) == stellar0 ]] && got=$(cat "$d/abi_version")
	done
	echo "uapi STELLAR_UVERBS_DRIVER_ABI '$want', stellar0 uverbs abi_version '$got'"
	[[ -n $want ]] || why "include/uapi/stellar-abi.h has no STELLAR_UVERBS_DRIVER_ABI"
	[[ $got == "$want" ]] || why "stellar0 uverbs abi_version is '$got', want '$want'"
	[[ -z $WHY ]]
}

# Bring back rxe0 (eth0) with its IPv4 GID, then stellar0 and stellar1.
mr_restore_devices() {
	recreate_rxe0 || return 1
	dev_exists stellar0 || add_stellar stellar0 || return 1
	dev_exists stellar1 || add_stellar stellar1 || return 1
}

# A process holds $1 MRs on stellar0 when its parent rxe0 is deleted: the
# deletion (every MR torn down) ends within $2 s and no page stays pinned.
s_mr_parent_delete_with_many_mrs_is_bounded() {
	local n=$1 limit=$2 ready=/run/stellar-test/mr-hold.ready log pid dpid t0 ms rc i
	log=$STL_LOGDIR/mr-hold.log
	mkdir -p /run/stellar-test
	rm -f "$ready"
	echo "+ $MR_HOLD -d stellar0 -n $n"
	"$MR_HOLD" -d stellar0 -n "$n" -r "$ready" -t 600 >"$log" 2>&1 &
	pid=$!
	bg_track "$pid"
	for ((i = 0; i < 3000; i++)); do
		[[ -e $ready ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log"
	[[ -e $ready ]] || { why "stl_mr_hold did not register $n MRs"; return 1; }
	echo "holding: module $(pinned_total), stellar0 $(pinned_dev stellar0) pinned pages"
	(($(pinned_dev stellar0) >= n)) ||
		why "stellar0 pinned_pages $(pinned_dev stellar0) with $n MRs held"
	t0=$(date +%s%N)
	echo "+ rdma link delete rxe0"
	rdma link delete rxe0 &
	dpid=$!
	bg_track "$dpid"
	if ! wait_exit "$dpid" "$limit"; then
		why "rdma link delete rxe0 with $n MRs held still running after $limit s"
		wait_exit "$dpid" 600
	fi
	ms=$((($(date +%s%N) - t0) / 1000000))
	rc=$(exit_status "$dpid")
	echo "rdma link delete rxe0: exit $rc after $ms ms"
	((rc == 0)) || why "rdma link delete rxe0 exited $rc"
	wait_gone stellar0 10 || why "stellar0 still present after rxe0 was deleted"
	wait_exit "$pid" 15 || why "stl_mr_hold still running 15 s after its device went"
	cat "$log"
	wait_no_pins 10 || why "debugfs pinned_pages is $(pinned_total) after the teardown"
	mr_restore_devices || return 1
	[[ -z $WHY ]]
}

# The test helper module tests/kernel/stall built for the running kernel
# (make -C tests/kernel stall KVER=...); prints its path.
mr_stall_module() {
	local ko
	ko=build/tests/stall/$(uname -r)/stl_stall.ko
	[[ -f $ko ]] || return 1
	echo "$ko"
}

# A process holds $1 MRs on stellar0 when rxe0 stops completing Stellar's
# registration work requests (tests/kernel/stall): killed, it must be gone
# within $2 s (one LOCAL_INV times out, the rest are not waited for); once
# the parent answers again, registrations work and nothing stays pinned.
s_mr_teardown_with_stalled_parent_is_bounded() {
	local n=$1 limit=$2 ready=/run/stellar-test/mr-stall.ready log pid ko t0 ms i lost
	log=$STL_LOGDIR/mr-stall-hold.log
	# The helper is a kretprobe: a kernel without kprobes (the debug
	# kernel's tinyconfig) cannot run this scenario at all.
	grep -qw register_kretprobe /proc/kallsyms ||
		{ why "$(uname -r) has no kprobes (CONFIG_KRETPROBES) for stl_stall.ko"; return 77; }
	ko=$(mr_stall_module) ||
		{ why "$(uname -r): stl_stall.ko not built (make -C tests/kernel stall)"; return 1; }
	rm -f "$ready"
	echo "+ $MR_HOLD -d stellar0 -n $n"
	"$MR_HOLD" -d stellar0 -n "$n" -r "$ready" -t 600 >"$log" 2>&1 &
	pid=$!
	bg_track "$pid"
	for ((i = 0; i < 600; i++)); do
		[[ -e $ready ]] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log"
	[[ -e $ready ]] || { why "stl_mr_hold did not register $n MRs"; return 1; }
	run insmod "$ko" || { why "insmod $ko failed"; return 1; }
	t0=$(date +%s%N)
	echo "+ kill -9 $pid (holding $n MRs)"
	kill -9 "$pid"
	wait_exit "$pid" "$limit" ||
		why "a process holding $n MRs took over $limit s to exit while the parent stalls"
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "process gone after $ms ms (or still there: $(kill -0 "$pid" 2>/dev/null && echo yes || echo no))"
	run rmmod stl_stall
	wait_exit "$pid" 120 || why "the process is still there after the parent recovered"
	lost=$(dmesg | sed -n 's/.*stl_stall: unloaded; \([0-9]*\) completions were lost.*/\1/p' | tail -n 1)
	echo "completions lost while stalled: ${lost:-none}"
	[[ ${lost:-0} -ge 1 ]] || why "the stall helper swallowed no completion: the parent never stalled"
	dmesg | grep -q 'LOCAL_INV timed out' || why "no LOCAL_INV timed out: the parent never stalled"
	mr_verbs stellar0 stellar1 -t rc_write_lands_byte_exact -t mr_registered_after_qp_use_works ||
		why "stellar0 registrations do not work once the parent answers again"
	wait_no_pins 10 || why "debugfs pinned_pages is $(pinned_total) after the teardown"
	[[ -z $WHY ]]
}

scenario mr_reg_qp_ignores_tenant_packets s_mr_reg_qp_ignores_tenant_packets
scenario mr_limits_match_device_attributes s_mr_limits_match_device_attributes
scenario mr_uverbs_abi_matches_uapi_header s_mr_uverbs_abi_matches_uapi_header
scenario mr_parent_delete_with_2000_mrs_is_bounded s_mr_parent_delete_with_many_mrs_is_bounded 2000 30
scenario mr_teardown_with_stalled_parent_is_bounded s_mr_teardown_with_stalled_parent_is_bounded 10 40
