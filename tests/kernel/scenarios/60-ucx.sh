# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 60-ucx.sh - UCX (Debian 12's ucx-utils 1.13: ucx_perftest, io_demo) over
# rc_verbs and ud_verbs: on plain rxe0, between the ring devices rxe_s0 and
# rxe_s1 (stock librxe), and between stellar0 and stellar1 (libstellar).
# Server and client are two processes in this VM, each restricted to its
# device with UCX_NET_DEVICES; every UCP case checks in UCX's own log
# (ep_cfg) that the lane it names really ran over the wanted transport and
# device.
#
# Data checking: ucx_perftest 1.13 has no validation option (libperf.h
# defines UCX_PERF_TEST_FLAG_VALIDATE, but nothing sets or reads it; -D is
# the data layout).  Its numbers only show that the traffic completed (the
# put tests do poll a sequence number written into the remote buffer).  The
# byte-checked cases are io_demo's and stl_ucx_check's.  io_demo -q fills
# every read and write buffer with a seeded pattern and the receiving side
# (server for writes, client for reads) aborts on the first wrong byte; it
# runs on rxe0 only (see s_ucx_iodemo).  stl_ucx_check
# (tests/kernel/stl_ucx_check.c, build/tests/) exchanges worker addresses
# over TCP like ucx_perftest, so it runs on any device pair: for 1 B to
# 1 MiB it checks every byte and the length of tag messages both ways, of
# ucp_put_nbx into the server's registered buffer (and the guard bytes
# around it) and of ucp_get_nbx from it (ud_verbs has no RMA: UCX emulates
# put and get over active messages there, still checked).  Its -X flips a
# byte of the first message sent: ucx_check_selftest_* shows that the
# other side then fails.
#
# Two settings are needed for UCX on Soft-RoCE at all:
#
# UCX_UD_VERBS_ETH_DGID_CHECK=n: on RoCE, ud_verbs drops every received
#   datagram whose GRH destination GID is not one of the port's GIDs
#   (uct_ud_iface_check_grh).  It decides how to read the 40-byte GRH area
#   from wc.sl, which mlx5 sets to the RoCE packet type (2 = IPv4).  rxe
#   leaves wc.sl 0 and, for RoCEv2 over IPv4, puts the IPv4 header in bytes
#   20..39 of that area; UCX reads bytes 24..39 as an IPv6-style GID,
#   finds no match and drops the packet.  UD endpoints then die with "UD
#   endpoint ... unhandled timeout error" after UCX_UD_VERBS_TIMEOUT (30 s).
#   The check only guards against multicast/misrouted packets on shared
#   Ethernet; nothing else changes.
# UCX_TLS=rc_v: rc_verbs needs ud_verbs as the auxiliary transport for UCP
#   wire-up when the worker addresses are exchanged out of band (ucx_perftest
#   does that over TCP).  UCX_TLS=rc_verbs alone fails in ucp_ep_create
#   with "no auxiliary transport" (exit status 255).  rc_v is UCX's alias for
#   rc_verbs + ud_verbs:aux (UD for the wire-up messages only).  io_demo
#   connects through a connection manager and needs no auxiliary transport.

UCX_IODEMO_ARGS=(-q -i 40 -o "read,write" -d 1024:65536)

# ucx_env DEV TLS: set UCX_ENV, the `env` arguments of a UCX process bound
# to port 1 of RDMA device DEV with transports TLS.  rxe* devices run with
# the system providers only (librxe), like 50-rings.sh.  UCX_LOG_LEVEL=info
# makes UCP print its lane choice (ep_cfg lines).
ucx_env() {
	UCX_ENV=()
	[[ $1 == rxe* ]] && UCX_ENV+=(-u RDMAV_DRIVERS)
	UCX_ENV+=(UCX_NET_DEVICES="$1:1" UCX_TLS="$2" UCX_IB_GID_INDEX="$STL_GIDX"
		UCX_UD_VERBS_ETH_DGID_CHECK=n UCX_LOG_LEVEL=info UCX_WARN_UNUSED_ENV_VARS=n)
}

# rc_verbs opens a shared receive queue on every interface (UCX 1.13 has no
# setting without one).  A device that reports max_srq 0 cannot carry it:
# SKIP (77) with the reason.  Devices that claim SRQs go on and must pass.
ucx_rc_needs_srq() {
	local d n
	for d in "$@"; do
		ucx_env "$d" rc_verbs
		n=$(env "${UCX_ENV[@]}" ibv_devinfo -v -d "$d" 2>/dev/null | awk '$1 == "max_srq:" { print $2 }')
		echo "$d: max_srq ${n:-?}"
		if [[ $n == 0 ]]; then
			why "$d has no SRQ (max_srq 0); UCX 1.13 rc_verbs needs one (ibv_create_srq fails: Operation not supported)"
			return 77
		fi
	done
}

# UCX tools installed (scripts/deps.sh: ucx-utils)?  Otherwise SKIP (77).
ucx_tools() {
	local p
	for p in ucx_perftest io_demo ucx_info; do
		command -v "$p" >/dev/null ||
			{ why "$p not installed (ucx-utils; scripts/deps.sh)"; return 77; }
	done
}

# Does UCX log $1 show an ep_cfg lane $2 (e.g. "tag(rc_verbs") on device $3?
ucx_lane_in_log() {
	grep -aE 'ep_cfg\[[0-9]+\]:' "$1" | grep -qF "$2/$3:1)"
}

# ucx_perftest between server device $1 and client device $2 with UCX_TLS
# $3; $4: the ep_cfg lane both sides must show ("-": none, UCT tests);
# $5: TCP port; $6: iterations; the rest: ucx_perftest options.  (UCP
# tests only between two devices: in a UCT test, -x TL -d DEV, the server
# takes the parameters, device included, from the client.)
s_ucx_perftest() {
	local sdev=$1 cdev=$2 tls=$3 lane=$4 port=$5 iters=$6 rc=0 srv src
	shift 6
	ucx_tools || return
	if [[ $tls == rc* ]]; then ucx_rc_needs_srq "$sdev" "$cdev" || return; fi
	local log=$STL_LOGDIR/ucx_perftest-$port
	ucx_env "$sdev" "$tls"
	start_server "$port" 60 "$log.server" \
		env "${UCX_ENV[@]}" ucx_perftest -p "$port" -n "$iters" -w 20 "$@" || return 1
	srv=$SERVER_PID
	ucx_env "$cdev" "$tls"
	echo "+ (client) ${UCX_ENV[*]} ucx_perftest -p $port -n $iters -w 20 $* $STL_MY_IP"
	timeout -k 5 60 env "${UCX_ENV[@]}" ucx_perftest -p "$port" -n "$iters" -w 20 "$@" \
		"$STL_MY_IP" >"$log.client" 2>&1 || rc=$?
	cat "$log.client"
	wait_exit "$srv" 30 || why "server still running 30 s after the client ended"
	src=$(exit_status "$srv")
	echo "--- server output:"
	cat "$log.server"
	((rc == 0)) || why "client exited $rc: $(grep -aE 'ERROR|Fatal|rror' "$log.client" | head -n 2 | tr '\n' ' ')"
	((src == 0)) || why "server exited $src: $(grep -aE 'ERROR|Fatal|rror' "$log.server" | head -n 2 | tr '\n' ' ')"
	grep -aqE "^Final: +$iters " "$log.client" || why "client printed no 'Final: $iters' result line"
	if [[ $lane != - ]]; then
		ucx_lane_in_log "$log.client" "$lane" "$cdev" ||
			why "client did not use $lane/$cdev:1): $(grep -a ep_cfg "$log.client" | head -n 1)"
		ucx_lane_in_log "$log.server" "$lane" "$sdev" ||
			why "server did not use $lane/$sdev:1): $(grep -a ep_cfg "$log.server" | head -n 1)"
	fi
	[[ -z $WHY ]]
}

# io_demo -q (every byte checked) between server device $1 and client
# device $2 with UCX_TLS $3 and port $4: reads and writes of 1 KiB to
# 64 KiB; the tag lanes must use transport $5 (e.g. "rc_verbs").  io_demo
# connects through UCX's rdmacm connection manager (no auxiliary transport
# needed; its listener is an RDMA CM one, not a TCP port).  That limits it
# to rxe0 here: rdma_cm resolves $STL_MY_IP to rxe0 (the first device with
# that GID), UCX refuses a connection whose CM device is not in
# UCX_NET_DEVICES ("device rxe0:1 is not enabled"), and with rxe0:1 enabled
# too it runs the data lanes on rxe0 (ep_cfg tag(ud_verbs/rxe0:1)).  UCX's
# TCP connection manager wants a transport on eth0 ("device eth0 is not
# enabled") and with tcp:aux still did not connect.  Other devices: SKIP.
s_ucx_iodemo() {
	local sdev=$1 cdev=$2 tls=$3 port=$4 tl=$5 rc=0 srv src end
	ucx_tools || return
	if [[ $sdev != rxe0 || $cdev != rxe0 ]]; then
		why "io_demo's rdma_cm connection resolves $STL_MY_IP to rxe0 and UCX refuses a CM device not in UCX_NET_DEVICES; with rxe0 enabled the data lanes go to rxe0, not $cdev/$sdev; the TCP CM does not connect"
		return 77
	fi
	if [[ $tls == rc* ]]; then ucx_rc_needs_srq "$sdev" "$cdev" || return; fi
	local log=$STL_LOGDIR/io_demo-$port
	# the server must know the largest size (-d) the client will ask for
	ucx_env "$sdev" "$tls"
	echo "+ (server) ${UCX_ENV[*]} io_demo -p $port ${UCX_IODEMO_ARGS[*]}"
	env "${UCX_ENV[@]}" io_demo -p "$port" "${UCX_IODEMO_ARGS[@]}" >"$log.server" 2>&1 &
	srv=$!
	bg_track "$srv"
	end=$((SECONDS + 60))
	until grep -aq "started listener" "$log.server"; do
		if ! kill -0 "$srv" 2>/dev/null || ((SECONDS >= end)); then
			cat -v "$log.server"
			why "io_demo server did not listen within 60 s"
			return 1
		fi
		sleep 0.2
	done
	ucx_env "$cdev" "$tls"
	echo "+ (client) ${UCX_ENV[*]} io_demo -p $port -n 20 -t 50 ${UCX_IODEMO_ARGS[*]} $STL_MY_IP"
	timeout -k 5 60 env "${UCX_ENV[@]}" io_demo -p "$port" -n 20 -t 50 "${UCX_IODEMO_ARGS[@]}" \
		"$STL_MY_IP" >"$log.client" 2>&1 || rc=$?
	cat -v "$log.client"
	# the server runs until told to stop; SIGINT ends it with status 0
	kill -INT "$srv" 2>/dev/null
	wait_exit "$srv" 20 || why "io_demo server still running 20 s after SIGINT"
	src=$(exit_status "$srv")
	echo "--- server output (exit $src):"
	cat -v "$log.server"
	((rc == 0)) || why "client exited $rc: $(grep -aiE 'corrupt|error|fail' "$log.client" | head -n 2 | tr '\n' ' ')"
	((src == 0)) || why "server exited $src: $(grep -aiE 'corrupt|error|fail' "$log.server" | head -n 2 | tr '\n' ' ')"
	grep -aq "Client exit with status 'OK'" "$log.client" || why "io_demo client did not end with status OK"
	! grep -aqi corruption "$log.client" "$log.server" || why "io_demo reported data corruption"
	grep -aqE '\| read [0-9.]+ MBs min:[1-9]' "$log.client" || why "io_demo client reported no completed read"
	grep -aqE '\| write [0-9.]+ MBs min:[1-9]' "$log.client" || why "io_demo client reported no completed write"
	ucx_lane_in_log "$log.client" "tag($tl" "$cdev" ||
		why "client did not use tag($tl/$cdev:1): $(grep -a ep_cfg "$log.client" | head -n 1)"
	ucx_lane_in_log "$log.server" "tag($tl" "$sdev" ||
		why "server did not use tag($tl/$sdev:1): $(grep -a ep_cfg "$log.server" | head -n 1)"
	[[ -z $WHY ]]
}

UCX_CHECK=build/tests/stl_ucx_check
# Sizes across the eager/rendezvous switch and UD segmentation; kept short
# (ud_verbs moves 1 MiB in software segments: ~10 s per MiB under TCG).
UCX_CHECK_ARGS=(-s "1,4096,65536,1048576" -n 2)

# ucx_check_pair SDEV CDEV TLS PORT XOPT: stl_ucx_check server on device
# SDEV and client on CDEV with UCX_TLS TLS over TCP port PORT; XOPT: "-" or
# an extra client option (-X).  Sets UCX_CHECK_LOG (output in .server and
# .client), UCX_CHECK_RC and UCX_CHECK_SRC (client and server exit status).
ucx_check_pair() {
	local sdev=$1 cdev=$2 tls=$3 port=$4 xopt=$5 srv
	local copts=("${UCX_CHECK_ARGS[@]}")
	[[ $xopt == - ]] || copts+=("$xopt")
	UCX_CHECK_LOG=$STL_LOGDIR/stl_ucx_check-$port
	UCX_CHECK_RC=0
	UCX_CHECK_SRC=1
	ucx_env "$sdev" "$tls"
	start_server "$port" 60 "$UCX_CHECK_LOG.server" \
		env "${UCX_ENV[@]}" "$UCX_CHECK" -p "$port" "${UCX_CHECK_ARGS[@]}" || return 1
	srv=$SERVER_PID
	ucx_env "$cdev" "$tls"
	echo "+ (client) ${UCX_ENV[*]} $UCX_CHECK -p $port ${copts[*]} $STL_MY_IP"
	timeout -k 5 300 env "${UCX_ENV[@]}" "$UCX_CHECK" -p "$port" "${copts[@]}" \
		"$STL_MY_IP" >"$UCX_CHECK_LOG.client" 2>&1 || UCX_CHECK_RC=$?
	cat -v "$UCX_CHECK_LOG.client"
	if ! wait_exit "$srv" 60; then
		why "stl_ucx_check server still running 60 s after the client ended"
		kill -9 "$srv" 2>/dev/null
		wait_exit "$srv" 10
	fi
	UCX_CHECK_SRC=$(exit_status "$srv")
	echo "--- server output (exit $UCX_CHECK_SRC):"
	cat -v "$UCX_CHECK_LOG.server"
}

# The first FAIL/error lines of stl_ucx_check log $1, on one line.
ucx_check_errors() {
	grep -aE 'FAIL|ERROR|Fatal' "$1" | head -n 2 | tr '\n' ' '
}

# stl_ucx_check must be built (make -C tests/kernel with libucx-dev
# installed: scripts/deps.sh); a missing one fails, never skips.
ucx_check_built() {
	[[ -x $UCX_CHECK ]] ||
		why "$UCX_CHECK not built: install libucx-dev (scripts/deps.sh) and run make -C tests/kernel"
}

# stl_ucx_check (every byte of tag messages both ways, put and get checked)
# between server device $1 and client device $2 with UCX_TLS $3; $4: the
# ep_cfg lane both sides must show (e.g. "tag(rc_verbs"); $5: TCP port.
# Both sides must exit 0 and print the same OK line.
s_ucx_check() {
	local sdev=$1 cdev=$2 tls=$3 lane=$4 port=$5 ok
	ucx_check_built || return 1
	if [[ $tls == rc* ]]; then ucx_rc_needs_srq "$sdev" "$cdev" || return; fi
	ucx_check_pair "$sdev" "$cdev" "$tls" "$port" - || return 1
	local log=$UCX_CHECK_LOG
	((UCX_CHECK_RC == 0)) || why "client exited $UCX_CHECK_RC: $(ucx_check_errors "$log.client")"
	((UCX_CHECK_SRC == 0)) || why "server exited $UCX_CHECK_SRC: $(ucx_check_errors "$log.server")"
	ok=$(grep -a '^stl_ucx_check: OK: ' "$log.client") || why "client printed no OK line"
	[[ -z $ok ]] || grep -aqxF "$ok" "$log.server" ||
		why "server printed no OK line like the client's ($ok)"
	ucx_lane_in_log "$log.client" "$lane" "$cdev" ||
		why "client did not use $lane/$cdev:1): $(grep -a ep_cfg "$log.client" | head -n 1)"
	ucx_lane_in_log "$log.server" "$lane" "$sdev" ||
		why "server did not use $lane/$sdev:1): $(grep -a ep_cfg "$log.server" | head -n 1)"
	[[ -z $WHY ]]
}

# The checking itself: the client (device $2) runs with -X and corrupts one
# byte of its first tag message; the server (device $1) must report that
# byte and both must exit 1.  UCX_TLS $3, TCP port $4.
s_ucx_check_selftest() {
	local sdev=$1 cdev=$2 tls=$3 port=$4
	ucx_check_built || return 1
	if [[ $tls == rc* ]]; then ucx_rc_needs_srq "$sdev" "$cdev" || return; fi
	ucx_check_pair "$sdev" "$cdev" "$tls" "$port" -X || return 1
	local log=$UCX_CHECK_LOG
	grep -aq '^stl_ucx_check: -X: corrupted byte' "$log.client" ||
		why "client did not corrupt a byte (-X)"
	grep -aqE '^stl_ucx_check: FAIL: tag receive: size [0-9]+ iteration 0: byte [0-9]+ differs' "$log.server" ||
		why "server did not report the corrupted byte: $(ucx_check_errors "$log.server")"
	((UCX_CHECK_SRC == 1)) || why "server exited $UCX_CHECK_SRC, want 1"
	((UCX_CHECK_RC == 1)) || why "client exited $UCX_CHECK_RC, want 1"
	! grep -aq '^stl_ucx_check: OK: ' "$log.client" "$log.server" ||
		why "a side printed OK despite the corrupted byte"
	[[ -z $WHY ]]
}

s_ucx_rings_create() {
	ucx_tools || return
	add_stellar rxe_s0 || return 1
	add_stellar rxe_s1 || return 1
	env -u RDMAV_DRIVERS UCX_NET_DEVICES=rxe_s0:1,rxe_s1:1 ucx_info -d 2>&1 |
		grep -E 'Transport|Device|Memory domain' | head -n 20
}

s_ucx_rings_delete() {
	run rdma link delete rxe_s0 || why "rdma link delete rxe_s0 failed"
	run rdma link delete rxe_s1 || why "rdma link delete rxe_s1 failed"
	[[ -z $WHY ]]
}

# plain Soft-RoCE, both processes on rxe0
scenario ucx_tag_lat_rc_rxe0 s_ucx_perftest rxe0 rxe0 rc_v "tag(rc_verbs" 18800 200 -t tag_lat
scenario ucx_tag_lat_ud_rxe0 s_ucx_perftest rxe0 rxe0 ud_verbs "tag(ud_verbs" 18801 200 -t tag_lat
scenario ucx_iodemo_rc_rxe0 s_ucx_iodemo rxe0 rxe0 rc_verbs 18802 rc_verbs
scenario ucx_iodemo_ud_rxe0 s_ucx_iodemo rxe0 rxe0 ud_verbs 18803 ud_verbs
scenario ucx_check_bytes_rc_rxe0 s_ucx_check rxe0 rxe0 rc_v "tag(rc_verbs" 18804
# Stellar ring devices (stock librxe), server on rxe_s1, client on rxe_s0
scenario ucx_rings_create s_ucx_rings_create
scenario ucx_tag_lat_rc_rxe_s0_rxe_s1 s_ucx_perftest rxe_s1 rxe_s0 rc_v "tag(rc_verbs" 18810 200 -t tag_lat
scenario ucx_tag_bw_64k_rc_rxe_s0_rxe_s1 s_ucx_perftest rxe_s1 rxe_s0 rc_v "tag(rc_verbs" 18811 50 -t tag_bw -s 65536
scenario ucx_put_bw_rc_rxe_s0_rxe_s1 s_ucx_perftest rxe_s1 rxe_s0 rc_v "rma(rc_verbs" 18812 100 -t ucp_put_bw -s 4096
scenario ucx_tag_lat_ud_rxe_s0_rxe_s1 s_ucx_perftest rxe_s1 rxe_s0 ud_verbs "tag(ud_verbs" 18813 200 -t tag_lat
scenario ucx_am_bw_ud_rxe_s0_rxe_s1 s_ucx_perftest rxe_s1 rxe_s0 ud_verbs "am(ud_verbs" 18814 100 -t ucp_am_bw -s 512
scenario ucx_iodemo_rc_rxe_s0_rxe_s1 s_ucx_iodemo rxe_s1 rxe_s0 rc_verbs 18815 rc_verbs
scenario ucx_iodemo_ud_rxe_s0_rxe_s1 s_ucx_iodemo rxe_s1 rxe_s0 ud_verbs 18816 ud_verbs
scenario ucx_check_bytes_rc_rxe_s0_rxe_s1 s_ucx_check rxe_s1 rxe_s0 rc_v "tag(rc_verbs" 18817
scenario ucx_check_bytes_ud_rxe_s0_rxe_s1 s_ucx_check rxe_s1 rxe_s0 ud_verbs "tag(ud_verbs" 18818
scenario ucx_check_selftest_ud_rxe_s0_rxe_s1 s_ucx_check_selftest rxe_s1 rxe_s0 ud_verbs 18819
scenario ucx_rings_delete s_ucx_rings_delete
# Stellar's own provider (libstellar, RDMAV_DRIVERS) on stellar0/stellar1
scenario ucx_tag_lat_rc_stellar0_stellar1 s_ucx_perftest stellar1 stellar0 rc_v "tag(rc_verbs" 18820 200 -t tag_lat
scenario ucx_tag_lat_ud_stellar0_stellar1 s_ucx_perftest stellar1 stellar0 ud_verbs "tag(ud_verbs" 18821 200 -t tag_lat
scenario ucx_iodemo_rc_stellar0_stellar1 s_ucx_iodemo stellar1 stellar0 rc_verbs 18822 rc_verbs
scenario ucx_iodemo_ud_stellar0_stellar1 s_ucx_iodemo stellar1 stellar0 ud_verbs 18823 ud_verbs
