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
scenario rings_write_bw_rxe_s0_rxe_s1 with_librxe perftest_local ib_write_bw rxe_s1 rxe_s0 18710 -n 200
scenario rings_send_lat_rxe_s0_rxe_s1 with_librxe perftest_local ib_send_lat rxe_s1 rxe_s0 18711 -n 200
scenario rings_read_lat_rxe_s0_rxe_s1 with_librxe perftest_local ib_read_lat rxe_s1 rxe_s0 18712 -n 200
scenario rings_delete s_rings_delete
