# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 55-rdma-core.sh - the stock rxe provider (librxe) of every upstream
# rdma-core release of `userlib/tests/rdma-core-build.sh --list` drives
# Stellar's ring devices (named rxe*): each release's own libibverbs, librxe
# and example programs (built by the host under build/rdma-core before the
# VM booted; scripts/check.sh does that), not Debian's in /usr/lib.
#
# Per release: ibv_devinfo loads that release's libibverbs and librxe and
# sees rxe_s0 ACTIVE; ibv_{rc,uc,ud,srq}_pingpong, bytes checked (-c), with
# and without completion events (-e), between ring devices rxe_s0 and
# rxe_s1, and between rxe_s0 and plain rxe0 (both sides on the release's
# librxe).  Every server's /proc/PID/maps must show the release's
# libibverbs and librxe and no other.  A release that is not built FAILS
# its scenarios; STL_SCENARIO_RDMA_CORE_SKIP_MISSING=1 makes them SKIP.
# STL_SCENARIO_RDMA_CORE_RELEASES="39.0 64.0" runs only those releases.
# SRQ: "Couldn't create SRQ" on the ring devices until they support SRQs.
#
# To keep TCG time down (about 5 s a pingpong on an idle machine, twice that
# on a busy one) each pingpong runs 50 iterations, and the plain-rxe pair
# runs only rc (with -e) and ud (without): the ring devices' user ABI is
# what differs between releases, and the rings pair covers every program.

RC_PORT=19000
RC_T0=$SECONDS

s_rc_rings_add() {
	add_stellar rxe_s0 || return 1
	add_stellar rxe_s1 || return 1
	rdma link show
}

# ibv_devinfo of release $1 opens rxe_s0 through that release's librxe.
s_rc_devinfo() {
	local ver=$1 out rc=0
	rdma_core_tree "$ver" || return
	out=$STL_LOGDIR/rdma-core-$ver-devinfo.out
	echo "+ LD_DEBUG=libs RDMAV_DRIVERS=$RC_TREE/lib/librxe $RC_TREE/bin/ibv_devinfo -v -d rxe_s0"
	LD_DEBUG=libs rdma_core_env "$RC_TREE/bin/ibv_devinfo" -v -d rxe_s0 >"$out" 2>&1 || rc=$?
	# its own output (without the loader's), then what it loaded
	grep -vE '^ *[0-9]+:' "$out" | head -n 60
	((rc == 0)) || why "ibv_devinfo exited $rc"
	grep -q PORT_ACTIVE "$out" || why "release $ver's librxe did not open rxe_s0"
	rdma_core_libs_ok "$out"
	[[ -z $WHY ]]
}

# Pingpong $2 (ibv_rc_pingpong, ...) of release $1 between server device
# $3 and client device $4 in this VM, TCP port $5; options follow.
rc_pingpong() {
	local ver=$1 prog=$2 sdev=$3 cdev=$4 port=$5 rc=0 srv src grace=30
	shift 5
	rdma_core_tree "$ver" || return
	local log=$STL_LOGDIR/rdma-core-$ver-$prog-$sdev-$cdev-$port
	local cmd=(env "RDMAV_DRIVERS=$RC_TREE/lib/librxe" "$RC_TREE/bin/$prog" -g "$STL_GIDX" -p "$port" "$@")
	start_server "$port" 30 "$log.server" "${cmd[@]}" -d "$sdev" || return 1
	srv=$SERVER_PID
	# A server listens once it has set up its device: its libraries are
	# mapped now.  One that exited already failed: its status says why.
	if kill -0 "$srv" 2>/dev/null; then
		rdma_core_maps_ok "$srv"
	else
		echo "server exited before it listened"
	fi
	run_client_retry 10 "$log.client" "${cmd[@]}" -d "$cdev" "$STL_MY_IP" || rc=$?
	# a failed client leaves its server waiting for it: do not wait long
	((rc == 0)) || grace=3
	wait_exit "$srv" "$grace" || ((rc != 0)) ||
		why "server still running $grace s after the client ended"
	src=$(exit_status "$srv")
	echo "--- server output:"
	cat "$log.server"
	((src == 0)) || why "server exited $src: $(rc_tail "$log.server")"
	((rc == 0)) || why "client exited $rc: $(rc_tail "$log.client")"
	grep -q "bytes in" "$log.client" || why "client printed no throughput line"
	grep -q "bytes in" "$log.server" || why "server printed no throughput line"
	[[ -z $WHY ]]
}

# The last lines of a program's output $1, without the warning of a
# libibverbs not built IN_PLACE about its missing config directory.
rc_tail() {
	grep -v "couldn't open config directory" "$1" | grep -v '^ *$' | tail -n 2 | tr '\n' ' '
}

s_rc_rings_delete() {
	run rdma link delete rxe_s0 || why "rdma link delete rxe_s0 failed"
	run rdma link delete rxe_s1 || why "rdma link delete rxe_s1 failed"
	[[ -z $WHY ]]
}

# rc_case VER PROG PAIR EVENTS: one pingpong scenario.  PAIR: rings
# (rxe_s1 serves rxe_s0) or rxe0 (rxe0 serves rxe_s0); EVENTS: 1 for -e.
rc_case() {
	local ver=$1 prog=$2 pair=$3 ev=$4 name opts=(-n 50 -c) sdev=rxe_s1
	[[ $prog == ud ]] && opts+=(-s 512)
	name=rdma_core_${ver%%.*}_${prog}_pingpong
	if ((ev)); then
		opts+=(-e)
		name+=_events
	fi
	if [[ $pair == rxe0 ]]; then
		sdev=rxe0
		name+=_rxe_s0_rxe0
	else
		name+=_rxe_s0_rxe_s1
	fi
	RC_PORT=$((RC_PORT + 1))
	scenario "$name" rc_pingpong "$ver" "ibv_${prog}_pingpong" "$sdev" rxe_s0 "$RC_PORT" "${opts[@]}"
}

scenario rdma_core_rings_add s_rc_rings_add
for rc_ver in $(rdma_core_releases); do
	scenario "rdma_core_${rc_ver%%.*}_devinfo_loads_own_librxe" s_rc_devinfo "$rc_ver"
	for rc_prog in rc uc ud srq; do
		rc_case "$rc_ver" "$rc_prog" rings 0
		rc_case "$rc_ver" "$rc_prog" rings 1
	done
	rc_case "$rc_ver" rc rxe0 1
	rc_case "$rc_ver" ud rxe0 0
done
scenario rdma_core_rings_delete s_rc_rings_delete
echo "# 55-rdma-core.sh: $((SECONDS - RC_T0)) s"
