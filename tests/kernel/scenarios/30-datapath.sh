# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 30-datapath.sh - queue entry quotas and their memory (sourced by vm-one.sh).
# The data path subtests themselves (all-or-nothing posting, wc_flags,
# controlled Q_Keys, quota errnos) are stl_verbs_test subtests run by the
# verbs_* scenarios; the stub race is stl_race_test.

# sysfs cqe_quota / wqe_quota: default, root-only writable, 0 = default,
# garbage refused; their counters and gauges are in rdma statistic.
# ibv_devinfo -v FIELD of device $1 (a number), or nothing.
devinfo_field() {
	ibv_devinfo -v -d "$1" 2>/dev/null | awk -v f="$2:" '$1 == f { print $2; exit }'
}

# The limit quota $1 (cqe_quota or wqe_quota) set to $2 bounds on stellar0:
# max_cqe <= the CQE quota; max_qp_wr = min(rxe0's, half the WQE quota),
# rounded down to what a ring holds (2^k - 1).
quota_limit_is() {
	local q=$1 v=$2 got want p
	if [[ $q == cqe_quota ]]; then
		got=$(devinfo_field stellar0 max_cqe)
		p=$(devinfo_field rxe0 max_cqe)
		want=$((p < v ? p : v))
		[[ $got == "$want" ]] || why "max_cqe is '$got' with cqe_quota $v (rxe0: $p), want $want"
	else
		got=$(devinfo_field stellar0 max_qp_wr)
		p=$(devinfo_field rxe0 max_qp_wr)
		want=$((p < v / 2 ? p : v / 2))
		# a ring holds 2^k - 1 entries: the largest such at most that
		local k=1
		while ((2 * k <= want + 1)); do k=$((2 * k)); done
		want=$((k - 1))
		[[ $got == "$want" ]] || why "max_qp_wr is '$got' with wqe_quota $v (rxe0: $p), want $want"
	fi
	echo "$q $v: max_cqe $(devinfo_field stellar0 max_cqe), max_qp_wr $(devinfo_field stellar0 max_qp_wr)"
}

s_queue_quota_attributes() {
	local d=/sys/class/infiniband/stellar0 a v m c
	for a in cqe_quota wqe_quota; do
		v=$(cat "$d/$a" 2>&1)
		m=$(stat -c '%a %U' "$d/$a" 2>&1)
		echo "$a: $v ($m)"
		[[ $v == 262144 ]] || why "$a is '$v', want the default 262144"
		[[ $m == "644 root" ]] || why "$a mode/owner is '$m', want '644 root'"
		echo 1000 >"$d/$a" || why "writing 1000 to $a failed"
		[[ $(cat "$d/$a") == 1000 ]] || why "$a reads $(cat "$d/$a") after writing 1000"
		# the queue limits the device reports follow its quotas: a QP
		# is charged its send plus receive entries
		quota_limit_is "$a" 1000
		echo 0 >"$d/$a" || why "writing 0 to $a failed"
		[[ $(cat "$d/$a") == 262144 ]] || why "$a reads $(cat "$d/$a") after writing 0, want 262144"
		quota_limit_is "$a" 262144
		if (echo banana >"$d/$a") 2>/dev/null; then
			why "$a accepted 'banana'"
		fi
	done
	rdma statistic show link stellar0/1
	for c in cqe_quota_refusals wqe_quota_refusals cqes_in_use wqes_in_use; do
		[[ $(stat_counter_nl stellar0 "$c") != -1 ]] ||
			why "counter $c missing from rdma statistic show link stellar0/1"
	done
	[[ -z $WHY ]]
}

# The CQ rings are charged to the memory cgroup of the process that
# creates the CQs: memory.current grows by at least their size (64 bytes
# an entry) and drops by as much when they are destroyed.  DEV ($1) may be
# a device driven by librxe, BYTES ($2) what each entry must be charged.
s_cq_rings_charged_to_memcg() {
	local dev=${1:-stellar0} per=${2:-64}
	local cg=/sys/fs/cgroup grp line total before after gone min
	local -a envx=()
	[[ $dev == rxe* ]] && envx=(-u RDMAV_DRIVERS)
	if [[ ! -e $cg/cgroup.controllers ]]; then
		mkdir -p "$cg"
		mount -t cgroup2 none "$cg" || { why "cannot mount cgroup2 on $cg"; return 1; }
	fi
	grep -qw memory "$cg/cgroup.controllers" ||
		{ why "no memory controller in $cg/cgroup.controllers"; return 1; }
	echo +memory >"$cg/cgroup.subtree_control" 2>/dev/null
	grp=$cg/stl-memcg-$$
	mkdir -p "$grp" || { why "cannot create $grp"; return 1; }
	[[ -e $grp/memory.current ]] || { why "$grp has no memory.current"; return 1; }
	coproc MC { exec env "${envx[@]}" build/tests/stl_cq_memcg -d "$dev" -n 6 -c 32767 2>&1; }
	bg_track "$MC_PID"
	read -r -t 60 line <&"${MC[0]}"
	[[ $line == open ]] || { why "stl_cq_memcg did not open $dev: $line"; return 1; }
	echo "$MC_PID" >"$grp/cgroup.procs" || { why "cannot move the process into $grp"; return 1; }
	before=$(cat "$grp/memory.current")
	echo create >&"${MC[1]}"
	read -r -t 120 line <&"${MC[0]}"
	[[ $line == created* ]] || { why "create: $line"; return 1; }
	total=${line#created }
	after=$(cat "$grp/memory.current")
	echo destroy >&"${MC[1]}"
	read -r -t 120 line <&"${MC[0]}"
	[[ $line == destroyed ]] || { why "destroy: $line"; return 1; }
	gone=$(cat "$grp/memory.current")
	eval "exec ${MC[1]}>&-"
	wait_exit "$MC_PID" 10 || why "stl_cq_memcg did not exit"
	min=$((total * per))
	echo "6 CQs, $total entries: memory.current $before -> $after -> $gone (ring >= $min bytes)"
	((after - before >= min)) ||
		why "memory.current grew by $((after - before)) bytes for $total CQ entries, want >= $min"
	((after - gone >= min)) ||
		why "memory.current dropped by $((after - gone)) bytes after the destroy, want >= $min"
	rmdir "$grp" 2>/dev/null
	[[ -z $WHY ]]
}

scenario queue_quota_attributes s_queue_quota_attributes
scenario cq_rings_charged_to_memcg s_cq_rings_charged_to_memcg
