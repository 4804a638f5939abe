# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 35-addresses.sh - a device sends only from the addresses (GIDs) of the
# netdev it was created on (review finding M3).  ib_core offers a RoCE
# device the addresses of its netdev and of every VLAN, macvlan and ipvlan
# above it, in every network namespace; the parent rxe0 keeps them all, a
# Stellar device only its own.  Devices created on a VLAN or a macvlan of
# eth0 carry traffic from that address, and go away with that netdev.

ADDR_NS=stl_tenantb

# The lowest unused index of device $1's table.
gid_free_index() {
	gid_table "$1" | awk 'BEGIN { n = 0 } { used[$1] = 1 } END { while (n in used) n++; print n }'
}

# The environment for device $1's programs: devices named rxe* are driven
# by the system's librxe (50-rings.sh), the others by libstellar.
addr_env() {
	if [[ $1 == rxe* ]]; then
		echo "env -u RDMAV_DRIVERS"
	else
		echo env
	fi
}

# Check that every entry of device $1's table is an address of netdev $2
# and that none of the GIDs $3... is in it.
table_only_of() {
	local dev=$1 nd=$2 t g
	shift 2
	t=$(gid_table "$dev")
	echo "--- $dev GID table:"
	echo "$t"
	[[ -n $t ]] || why "$dev has an empty GID table"
	awk -v nd="$nd" '$3 != nd { bad = 1 } END { exit bad }' <<<"$t" ||
		why "$dev lists an address of a netdev other than $nd"
	for g in "$@"; do
		! grep -q " $g " <<<"$t" || why "$dev lists $g, which is not its address"
	done
}

# stl_gid_check on device $1 with source index $2: its result line.
gid_check() {
	local out
	# shellcheck disable=SC2046 # the words of the environment command
	out=$($(addr_env "$1") "$TESTS/stl_gid_check" -d "$1" -g "$2" 2>&1)
	echo "$out" >&2
	grep '^GID_CHECK ' <<<"$out"
}

addr_setup() {
	modprobe 8021q 2>/dev/null
	ip link add link eth0 name eth0.200 type vlan id 200 &&
		ip link set eth0.200 up &&
		ip addr add 192.168.200.1/24 dev eth0.200 ||
		{ why "cannot create VLAN eth0.200"; return 1; }
	ip netns add "$ADDR_NS" &&
		ip link add link eth0 name eth0.201 type vlan id 201 &&
		ip link set eth0.201 netns "$ADDR_NS" &&
		ip -n "$ADDR_NS" link set eth0.201 up &&
		ip -n "$ADDR_NS" addr add 192.168.201.2/24 dev eth0.201 ||
		{ why "cannot put VLAN eth0.201 in namespace $ADDR_NS"; return 1; }
}

addr_cleanup() {
	local d
	for d in sv200 rxe_v200 sv201 smv0; do
		dev_exists "$d" && rdma link delete "$d" 2>/dev/null
	done
	ip link del eth0.200 2>/dev/null
	ip link del stlmv0 2>/dev/null
	ip netns del "$ADDR_NS" 2>/dev/null
	true
}

# M3: stellar0 (created on eth0) sees neither a VLAN of eth0 in this
# namespace nor one in another namespace, though rxe0 lists both; naming a
# slot it does not hold is refused, its own address works.
s_addresses_only_of_own_netdev() {
	local g200 g201 gme r idx free res
	g200=$(addr_gid 192.168.200.1)
	g201=$(addr_gid 192.168.201.2)
	gme=$(addr_gid "$STL_MY_IP")
	addr_setup || { addr_cleanup; return 1; }
	# The parent offers both VLAN addresses: what a tenant must not get.
	r=$(wait_gid rxe0 "$g200" 10) || why "rxe0 never listed eth0.200's address"
	r=$(wait_gid rxe0 "$g201" 10) || why "rxe0 never listed eth0.201's address (namespace $ADDR_NS)"
	echo "rxe0 lists $g201 at index $r"
	for d in stellar0 stellar1; do
		table_only_of "$d" eth0 "$g200" "$g201"
		idx=$(gid_index_of "$d" "$gme")
		[[ -n $idx ]] || why "$d does not list its own address $STL_MY_IP"
	done
	res=$(gid_check stellar0 "$STL_GIDX")
	[[ $res == *" rtr=0 ah=0" ]] || why "own address: $res"
	# The index the tenant's VLAN address has on rxe0 is nothing on
	# stellar0 (or one of its own): any slot not in use is refused.
	free=$(gid_free_index stellar0)
	res=$(gid_check stellar0 "$free")
	[[ $res == *" gid=none rtr=ENODATA ah=ENODATA" ]] ||
		why "free slot $free: $res (want rtr=ENODATA ah=ENODATA)"
	addr_cleanup
	[[ -z $WHY ]]
}

# A device created on a VLAN: its table holds the VLAN's addresses only,
# it talks to rxe0 from 192.168.200.1, and leaves with the VLAN.  Both kinds
# of device (libstellar's stellarN, librxe's rxe*).
s_addresses_device_on_vlan() {
	local g200 gme d si ri out port=18720
	g200=$(addr_gid 192.168.200.1)
	gme=$(addr_gid "$STL_MY_IP")
	addr_setup || { addr_cleanup; return 1; }
	ri=$(wait_gid rxe0 "$g200" 10) || { why "rxe0 never listed eth0.200's address"; addr_cleanup; return 1; }
	for d in sv200 rxe_v200; do
		add_stellar "$d" eth0.200 || { addr_cleanup; return 1; }
		[[ $(cat "/sys/class/infiniband/$d/parent") == rxe0 ]] || why "$d parent is not rxe0"
		[[ $(cat "/sys/class/infiniband/$d/address_netdev") == eth0.200 ]] ||
			why "$d address_netdev is not eth0.200"
		si=$(wait_gid "$d" "$g200" 10) || why "$d never listed eth0.200's address"
		table_only_of "$d" eth0.200 "$gme" "$(addr_gid 192.168.201.2)"
		[[ -n $si ]] || continue
		out=$(gid_check "$d" "$si")
		[[ $out == *" rtr=0 ah=0" ]] || why "$d, its own address: $out"
		out=$(gid_check "$d" "$(gid_free_index "$d")")
		[[ $out == *" gid=none rtr=ENODATA ah=ENODATA" ]] ||
			why "$d, a free slot: $out (want rtr=ENODATA ah=ENODATA)"
		pingpong_gidx "$port" rxe0 "$ri" "$d" "$si" || true
		grep -q 'remote address: .*GID ::ffff:192.168.200.1$' "$STL_LOGDIR/gidx-rxe0-$d.server" ||
			why "rxe0 did not see $d's traffic come from 192.168.200.1"
		port=$((port + 1))
	done
	# The VLAN goes away: so do its devices.
	run ip link del eth0.200
	for d in sv200 rxe_v200; do
		wait_gone "$d" 20 || why "$d still present 20 s after eth0.200 was deleted"
	done
	addr_cleanup
	[[ -z $WHY ]]
}

# A device created from inside a namespace on the VLAN there: it holds that
# VLAN's address only, and goes away with the namespace (as a pod's would).
s_addresses_device_on_vlan_in_namespace() {
	local g201 out
	g201=$(addr_gid 192.168.201.2)
	addr_setup || { addr_cleanup; return 1; }
	out=$(rdma link add sv201 type stellar netdev eth0.201 2>&1) &&
		why "eth0.201 is not in this namespace, but rdma link add succeeded"
	echo "from the initial namespace: $out"
	run ip netns exec "$ADDR_NS" rdma link add sv201 type stellar netdev eth0.201 ||
		{ why "rdma link add sv201 inside $ADDR_NS failed"; addr_cleanup; return 1; }
	wait_active sv201 20 || why "sv201 not ACTIVE"
	wait_gid sv201 "$g201" 10 >/dev/null || why "sv201 never listed eth0.201's address"
	table_only_of sv201 eth0.201 "$(addr_gid "$STL_MY_IP")" "$(addr_gid 192.168.200.1)"
	run ip netns del "$ADDR_NS"
	wait_gone sv201 30 || why "sv201 still present 30 s after its namespace was deleted"
	addr_cleanup
	[[ -z $WHY ]]
}

# A device created on a macvlan of eth0 is told the macvlan as its netdev:
# its table holds the macvlan's addresses only.
s_addresses_device_on_macvlan() {
	local g gme si ri port=18725
	g=$(addr_gid 192.168.202.1)
	gme=$(addr_gid "$STL_MY_IP")
	if ! ip link add link eth0 name stlmv0 type macvlan mode bridge 2>/dev/null; then
		WHY="this kernel has no macvlan"
		return 77
	fi
	ip link set stlmv0 up && ip addr add 192.168.202.1/24 dev stlmv0 ||
		{ why "cannot configure stlmv0"; addr_cleanup; return 1; }
	add_stellar smv0 stlmv0 || { addr_cleanup; return 1; }
	rdma link show | grep 'smv0' || true
	rdma link show smv0/1 | grep -q 'netdev stlmv0' || why "rdma link does not show stlmv0 as smv0's netdev"
	si=$(wait_gid smv0 "$g" 10) || why "smv0 never listed stlmv0's address"
	ri=$(wait_gid rxe0 "$g" 10) || why "rxe0 never listed stlmv0's address"
	table_only_of smv0 stlmv0 "$gme"
	if [[ -n $si && -n $ri ]]; then
		pingpong_gidx "$port" rxe0 "$ri" smv0 "$si" || true
	fi
	run ip link del stlmv0
	wait_gone smv0 20 || why "smv0 still present 20 s after stlmv0 was deleted"
	addr_cleanup
	[[ -z $WHY ]]
}

# ibv_rc_pingpong on port $1 between server $2 (GID index $3) and client $4
# (GID index $5), bytes checked.
pingpong_gidx() {
	local port=$1 sd=$2 sg=$3 cd=$4 cg=$5 srv log=$STL_LOGDIR/gidx-$2-$4
	# shellcheck disable=SC2046 # the words of the environment command
	start_server "$port" 30 "$log.server" $(addr_env "$sd") \
		ibv_rc_pingpong -d "$sd" -g "$sg" -p "$port" -n 100 -c || return 1
	srv=$SERVER_PID
	# shellcheck disable=SC2046
	run_client_retry 10 "$log.client" $(addr_env "$cd") \
		ibv_rc_pingpong -d "$cd" -g "$cg" -p "$port" -n 100 -c "$STL_MY_IP" ||
		why "ibv_rc_pingpong $cd -> $sd failed"
	wait_exit "$srv" 30 || why "server still running 30 s after the client ended"
	cat "$log.server"
	grep -q "bytes in" "$log.server" || why "server printed no throughput line"
	[[ -z $WHY ]]
}

# An explicit address list: eth0.200 holds 192.168.200.1 and .3; a device
# created there with the list [.3] (link_add addr=, and stellarctl --addr
# for a ring device) holds .3 only, talks to rxe0 from it, and takes an
# address of the list that eth0.200 gets later.  A bad list is refused.
s_addresses_explicit_list() {
	local g1 g3 g4 d si ri out port=18725 la=/sys/kernel/stellar/link_add
	g1=$(addr_gid 192.168.200.1)
	g3=$(addr_gid 192.168.200.3)
	g4=$(addr_gid 192.168.200.4)
	addr_setup || { addr_cleanup; return 1; }
	run ip addr add 192.168.200.3/24 dev eth0.200
	ri=$(wait_gid rxe0 "$g3" 10) || { why "rxe0 never listed 192.168.200.3"; addr_cleanup; return 1; }
	echo "sv200 netdev=eth0.200 addr=192.168.200.3 addr=192.168.200.4" >"$la" ||
		{ why "link_add with an address list failed"; addr_cleanup; return 1; }
	"$PWD/build/stellarctl" create rxe_v200 --netdev eth0.200 --addr 192.168.200.3 --addr 192.168.200.4 ||
		{ why "stellarctl create --addr failed"; addr_cleanup; return 1; }
	for d in sv200 rxe_v200; do
		wait_active "$d" 20 || why "$d not ACTIVE"
		[[ $(cat "/sys/class/infiniband/$d/addresses" | tr '\n' ' ') == "192.168.200.3 192.168.200.4 " ]] ||
			why "$d addresses: '$(cat "/sys/class/infiniband/$d/addresses" | tr '\n' ' ')'"
		si=$(wait_gid "$d" "$g3" 10) || why "$d never listed 192.168.200.3"
		table_only_of "$d" eth0.200 "$g1" "$(addr_gid "$STL_MY_IP")"
		gid_table "$d" | awk -v a="$g3" '$2 != a { bad = 1 } END { exit bad }' ||
			why "$d lists an address that is not 192.168.200.3: the default GID or another"
		[[ -n $si ]] || continue
		out=$(gid_check "$d" "$si")
		[[ $out == *" rtr=0 ah=0" ]] || why "$d, a listed address: $out"
		pingpong_gidx "$port" rxe0 "$ri" "$d" "$si" || true
		grep -q 'remote address: .*GID ::ffff:192.168.200.3$' "$STL_LOGDIR/gidx-rxe0-$d.server" ||
			why "rxe0 did not see $d's traffic come from 192.168.200.3"
		port=$((port + 1))
	done
	# a listed address the netdev gets later is taken then; the others not
	run ip addr add 192.168.200.4/24 dev eth0.200
	for d in sv200 rxe_v200; do
		wait_gid "$d" "$g4" 10 >/dev/null || why "$d did not take 192.168.200.4 when eth0.200 got it"
		[[ -z $(gid_index_of "$d" "$g1") ]] || why "$d lists 192.168.200.1, which is not in its list"
	done
	[[ -z $(cat /sys/class/infiniband/stellar0/addresses) ]] || why "stellar0 (no list) has addresses"
	# refused: a bad address, too many, both a parent and a netdev
	(echo "sv9 netdev=eth0.200 addr=300.1.2.3" >"$la") 2>/dev/null && why "link_add took addr=300.1.2.3"
	(echo "sv9 netdev=eth0.200$(printf ' addr=10.0.0.%d' 1 2 3 4 5 6 7 8 9)" >"$la") 2>/dev/null &&
		why "link_add took 9 addresses"
	(echo "sv9 rxe0 netdev=eth0.200" >"$la") 2>/dev/null && why "link_add took a parent and a netdev"
	dev_exists sv9 && why "a refused link_add left sv9"
	addr_cleanup
	[[ -z $WHY ]]
}

scenario addresses_only_of_own_netdev s_addresses_only_of_own_netdev
scenario addresses_device_on_vlan s_addresses_device_on_vlan
scenario addresses_device_on_vlan_in_namespace s_addresses_device_on_vlan_in_namespace
scenario addresses_device_on_macvlan s_addresses_device_on_macvlan
scenario addresses_explicit_list s_addresses_explicit_list
