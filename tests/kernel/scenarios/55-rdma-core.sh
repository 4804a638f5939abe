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
# sees rxe_s0 ACTIVE; that release's own libstellar (built inside it)
# drives stellar0 and stellar1 (rc with events, ud, srq with events); ibv_{rc,uc,ud,srq}_pingpong, bytes checked (-c), with
# and without completion events (-e), between ring devices rxe_s0 and
# rxe_s1, and between rxe_s0 and plain rxe0 (both sides on the release's
# librxe).  Every server's /proc/PID/maps must show the release's
# libibverbs and librxe and no other.  A release that is not built FAILS
# its scenarios; STL_SCENARIO_RDMA_CORE_SKIP_MISSING=1 makes them SKIP.
# STL_SCENARIO_RDMA_CORE_RELEASES="39.0 64.0" runs only those releases.
#
# To keep TCG time down (about 5 s a pingpong, mostly process start-up) each
# pingpong runs 50 iterations and the pingpongs of one release and pair run
# at once (rc_batch); the plain-rxe pair runs rc (with -e), uc, ud and srq
# (with -e): the ring devices' user ABI is what differs between releases,
# and the rings pair covers every program both ways.

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
	local cmd=(env "RDMAV_DRIVERS=$RC_TREE/lib/${RC_PROV:-librxe}" "$RC_TREE/bin/$prog" -g "$STL_GIDX" -p "$port" "$@")
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

# rc_batch VER PAIR CASE...: the pingpongs CASE (PROG or PROG-e: with
# completion events) of release VER at once, each a server and a client on
# its own port and judged as rc_pingpong does; the scenario fails naming the
# cases that did.  PAIR: rings (rxe_s1 serves rxe_s0) or rxe0 (rxe0 serves
# rxe_s0).  At once because each pingpong spends most of its seconds in
# process start-up and TCP set-up under TCG, not in its 50 round trips.
rc_batch() {
	local ver=$1 pair=$2 sdev=rxe_s1 cdev=rxe_s0 c prog i dir failed=""
	local pids=() cases=() opts
	shift 2
	[[ $pair == rxe0 ]] && sdev=rxe0
	[[ $pair == stellar ]] && sdev=stellar1 cdev=stellar0
	rdma_core_tree "$ver" || return
	dir=$STL_LOGDIR/rdma-core-$ver-$pair
	mkdir -p "$dir"
	for c in "$@"; do
		prog=${c%-e}
		opts=(-n 50 -c)
		[[ $prog == ud ]] && opts+=(-s 512)
		[[ $c == *-e ]] && opts+=(-e)
		RC_PORT=$((RC_PORT + 1))
		(
			WHY=""
			STL_BG=()
			rc_pingpong "$ver" "ibv_${prog}_pingpong" "$sdev" "$cdev" "$RC_PORT" "${opts[@]}"
			printf '%s' "$WHY" >"$dir/$c.why"
			for p in "${STL_BG[@]}"; do
				kill -9 "$p" 2>/dev/null
			done
		) >"$dir/$c.log" 2>&1 &
		pids+=("$!")
		cases+=("$c")
	done
	for i in "${!pids[@]}"; do
		wait "${pids[i]}"
		echo "=== ${cases[i]}"
		cat "$dir/${cases[i]}.log"
		if [[ ! -e $dir/${cases[i]}.why ]]; then
			failed+="${cases[i]}: no verdict; "
		elif [[ -s $dir/${cases[i]}.why ]]; then
			failed+="${cases[i]}: $(cat "$dir/${cases[i]}.why"); "
		fi
	done
	[[ -z $failed ]] || why "$failed"
	[[ -z $WHY ]]
}

# Release $1's own libstellar, built inside it (userlib/rdma-core-provider.sh
# against its provider ABI), drives stellar0 and stellar1: ibv_rc_pingpong
# with completion events, ibv_ud_pingpong and ibv_srq_pingpong with events,
# bytes checked, on that release's libibverbs; the servers map that
# release's libstellar only.
s_rc_stellar() {
	local ver=$1 ret
	RC_PROV=libstellar
	rc_batch "$ver" stellar rc-e ud srq-e
	ret=$?
	RC_PROV=librxe
	return "$ret"
}

scenario rdma_core_rings_add s_rc_rings_add
for rc_ver in $(rdma_core_releases); do
	v=${rc_ver%%.*}
	scenario "rdma_core_${v}_devinfo_loads_own_librxe" s_rc_devinfo "$rc_ver"
	scenario "rdma_core_${v}_pingpongs_rxe_s0_rxe_s1" rc_batch "$rc_ver" rings \
		rc rc-e uc uc-e ud ud-e srq srq-e
	scenario "rdma_core_${v}_pingpongs_rxe_s0_rxe0" rc_batch "$rc_ver" rxe0 \
		rc-e uc ud srq-e
	scenario "rdma_core_${v}_own_libstellar_pingpongs_stellar0_stellar1" \
		s_rc_stellar "$rc_ver"
done
scenario rdma_core_rings_delete s_rc_rings_delete
echo "# 55-rdma-core.sh: $((SECONDS - RC_T0)) s"
