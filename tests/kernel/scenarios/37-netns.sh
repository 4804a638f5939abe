# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 37-netns.sh - a device that belongs to one network namespace.  With the
# RDMA subsystem in exclusive mode (`rdma system set netns exclusive`),
# `rdma dev set DEV netns NS` moves a device: it is listed and opened only
# inside NS, a process using it when it moves gets an error (never a hang),
# and from inside NS it carries traffic to a device of the initial
# namespace.  Deleting NS gives the device back to the initial namespace.
# The namespace reaches the initial one for the programs' TCP exchange
# through a veth pair; RDMA traffic uses the device's own addresses (rxe
# has no namespace support: its addresses are on netdevs of the initial
# namespace, see README).

NETNS_POD=stl_pod
NETNS_HOST_IP=10.77.0.1
NETNS_POD_IP=10.77.0.2

in_pod() { ip netns exec "$NETNS_POD" "$@"; }

# $1: the device.
netns_cleanup() {
	local sp0=$1
	dev_exists "$sp0" && rdma link delete "$sp0" 2>/dev/null
	ip link del stlveth0 2>/dev/null
	ip netns del "$NETNS_POD" 2>/dev/null
	# the device may come back from the deleted namespace a little later
	wait_gone "$sp0" 1 || { wait_active "$sp0" 10; rdma link delete "$sp0" 2>/dev/null; }
	rdma_netns_mode shared
}

# Device $1 (a stellarN one, libstellar's; or an rxe* one, the system's
# librxe's) in namespace $NETNS_POD; TCP port $2.
s_netns_exclusive() {
	local sp0=$1 port=$2 out srv log=$STL_LOGDIR/netns-pingpong-$1 rc=0
	local saved=${RDMAV_DRIVERS-}
	[[ $sp0 == rxe* ]] && unset RDMAV_DRIVERS
	netns_exclusive "$sp0" "$port" || rc=$?
	[[ -n $saved ]] && export RDMAV_DRIVERS=$saved
	return "$rc"
}

netns_exclusive() {
	rdma_netns_mode exclusive || return 1
	add_stellar "$sp0" || { netns_cleanup "$sp0"; return 1; }
	ip netns add "$NETNS_POD" &&
		ip link add stlveth0 type veth peer name stlveth1 &&
		ip link set stlveth1 netns "$NETNS_POD" &&
		ip addr add "$NETNS_HOST_IP/24" dev stlveth0 && ip link set stlveth0 up &&
		in_pod ip addr add "$NETNS_POD_IP/24" dev stlveth1 &&
		in_pod ip link set stlveth1 up && in_pod ip link set lo up ||
		{ why "cannot set up namespace $NETNS_POD"; netns_cleanup "$sp0"; return 1; }
	# A namespace other than the initial one sees no device at all.
	out=$(in_pod ibv_devices 2>&1)
	echo "$out"
	grep -qE "rxe0|stellar0|$sp0" <<<"$out" && why "a new namespace lists devices in exclusive mode"

	# A process using $sp0 when it moves gets an error, and the move does
	# not wait for it.
	start_traffic "$sp0" rxe0 || { netns_cleanup "$sp0"; return 1; }
	echo "+ rdma dev set $sp0 netns $NETNS_POD"
	timeout 30 rdma dev set "$sp0" netns "$NETNS_POD" ||
		why "rdma dev set $sp0 netns $NETNS_POD failed or hung"
	traffic_sees_error 15

	# Listed, opened and usable only inside the namespace.
	dev_exists "$sp0" && why "$sp0 is still in this namespace's /sys/class/infiniband"
	rdma dev show | grep -q "$sp0" && why "rdma dev in the initial namespace lists $sp0"
	ibv_devices | grep -q "$sp0" && why "ibv_devices in the initial namespace lists $sp0"
	out=$(in_pod ibv_devices 2>&1)
	echo "inside $NETNS_POD: $out"
	grep -q "$sp0" <<<"$out" || why "$sp0 is not listed inside $NETNS_POD"
	grep -qE 'rxe0|stellar[01]' <<<"$out" && why "$NETNS_POD lists a device of the initial namespace"
	out=$(in_pod ibv_devinfo -d "$sp0" 2>&1)
	[[ $out == *PORT_ACTIVE* ]] || why "$sp0 cannot be opened inside $NETNS_POD: $out"
	out=$(ibv_devinfo -d "$sp0" 2>&1) && why "$sp0 opened from the initial namespace"

	# From inside the namespace to rxe0 in the initial one, bytes checked.
	start_server "$port" 30 "$log.server" \
		ibv_rc_pingpong -d rxe0 -g "$STL_GIDX" -p "$port" -n 200 -c || { netns_cleanup "$sp0"; return 1; }
	srv=$SERVER_PID
	run_client_retry 10 "$log.client" ip netns exec "$NETNS_POD" \
		ibv_rc_pingpong -d "$sp0" -g "$STL_GIDX" -p "$port" -n 200 -c "$NETNS_HOST_IP" ||
		why "ibv_rc_pingpong from $sp0 inside $NETNS_POD failed"
	wait_exit "$srv" 30 || why "server still running 30 s after the client ended"
	cat "$log.server"
	grep -q "bytes in" "$log.server" || why "rxe0's side printed no throughput line"

	# The namespace goes away: the device comes back to the initial one.
	run ip netns del "$NETNS_POD"
	wait_active "$sp0" 20 || why "$sp0 did not come back 20 s after its namespace was deleted"
	netns_cleanup "$sp0"
	[[ -z $WHY ]]
}

scenario netns_exclusive_stellar_device_belongs_to_one_namespace s_netns_exclusive sp0 18740
scenario netns_exclusive_ring_device_belongs_to_one_namespace s_netns_exclusive rxe_p0 18741
