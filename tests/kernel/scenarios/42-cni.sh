# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 42-cni.sh - the Stellar CNI plugin (tools/cni/stellar) chained after
# Debian's macvlan plugin (containernetworking-plugins, static IPAM), as a
# container runtime calls it: CNI_* environment, the configuration with
# prevResult on stdin.  ADD gives the pod namespace a device (for its own
# librxe) with the configured limits; a pingpong from inside the pod moves
# bytes to rxe0 (TCP over the pod's macvlan); CHECK, DEL (twice), VERSION
# and the error objects.

CNI_PLUGIN=$PWD/tools/cni/stellar
CNI_DIR=/usr/lib/cni
CNI_POD=stl_cnipod
CNI_CID=c0ffee0123456789

cni_conf_macvlan='{"cniVersion":"1.0.0","name":"rdmanet","type":"macvlan","master":"eth0","mode":"bridge",
 "ipam":{"type":"static","addresses":[{"address":"10.78.0.2/24"}]}}'

# The plugin's configuration, with prevResult $1.
cni_conf_stellar() {
	jq -n --argjson prev "$1" --arg ctl "$PWD/build/stellarctl" \
		'{cniVersion: "1.0.0", name: "rdmanet", type: "stellar", netdev: "eth0",
		  stellarctl: $ctl, limits: {qp: 16, mr: 64, weight: 200, class: "latency"}, prevResult: $prev}'
}

# Run plugin $1 with CNI_COMMAND $2, configuration on stdin.
cni_run() {
	local plugin=$1 cmd=$2
	env CNI_COMMAND="$cmd" CNI_CONTAINERID="$CNI_CID" CNI_NETNS="/var/run/netns/$CNI_POD" \
		CNI_IFNAME=eth0 CNI_PATH="$CNI_DIR" "$plugin"
}

cni_cleanup() {
	ip -n "$CNI_POD" link del eth0 2>/dev/null
	ip link del stlmvh 2>/dev/null
	ip netns del "$CNI_POD" 2>/dev/null
	rdma_netns_mode shared
}

s_cni_plugin() {
	local prev out rc dev srv port=18760 log=$STL_LOGDIR/cni-pingpong conf
	[[ -x $CNI_DIR/macvlan ]] || { why "no $CNI_DIR/macvlan (containernetworking-plugins)"; return 1; }
	dev=rxe_$(printf '%s/%s' "$CNI_CID" eth0 | sha256sum | cut -c1-12)
	# The host's side of the pods' macvlan network (the pingpong's TCP).
	if ! ip link add link eth0 name stlmvh type macvlan mode bridge 2>/dev/null; then
		WHY="this kernel has no macvlan"
		return 77
	fi
	ip addr add 10.78.0.1/24 dev stlmvh && ip link set stlmvh up ||
		{ why "cannot configure macvlan stlmvh"; cni_cleanup; return 1; }
	rdma_netns_mode exclusive || { cni_cleanup; return 1; }
	ip netns add "$CNI_POD" || { why "cannot add namespace $CNI_POD"; cni_cleanup; return 1; }

	# The errors a runtime may meet.
	out=$(CNI_COMMAND=VERSION "$CNI_PLUGIN" </dev/null)
	echo "$out"
	jq -e '.supportedVersions | index("1.0.0")' >/dev/null <<<"$out" || why "VERSION: $out"
	out=$(cni_conf_stellar '{}' | jq '.cniVersion = "9.9.9"' | cni_run "$CNI_PLUGIN" ADD) && why "ADD with cniVersion 9.9.9 succeeded"
	[[ $(jq -r .code <<<"$out") == 1 ]] || why "cniVersion 9.9.9: $out (want code 1)"
	out=$(cni_conf_stellar '{}' | env -u CNI_NETNS CNI_COMMAND=ADD CNI_CONTAINERID=x CNI_IFNAME=eth0 "$CNI_PLUGIN") &&
		why "ADD without CNI_NETNS succeeded"
	[[ $(jq -r .code <<<"$out") == 4 ]] || why "no CNI_NETNS: $out (want code 4)"
	out=$(cni_conf_stellar '{}' | jq '.limits.qp = "lots"' | cni_run "$CNI_PLUGIN" ADD) && why "ADD with bad limits succeeded"
	[[ $(jq -r .code <<<"$out") == 7 ]] || why "bad limits: $out (want code 7)"
	out=$(cni_conf_stellar '{}' | jq '.limits.class = "fast"' | cni_run "$CNI_PLUGIN" ADD) && why "ADD with class fast succeeded"
	[[ $(jq -r .code <<<"$out") == 7 ]] || why "class fast: $out (want code 7)"
	out=$(echo 'not json' | cni_run "$CNI_PLUGIN" ADD) && why "ADD of garbage succeeded"
	[[ $(jq -r .code <<<"$out") == 6 ]] || why "garbage: $out (want code 6)"
	dev_exists "$dev" && why "a refused ADD left $dev behind"

	# macvlan, then Stellar with macvlan's result.
	prev=$(cni_run "$CNI_DIR/macvlan" ADD <<<"$cni_conf_macvlan") ||
		{ why "macvlan ADD failed: $prev"; cni_cleanup; return 1; }
	echo "macvlan: $prev"
	conf=$(cni_conf_stellar "$prev")
	out=$(cni_run "$CNI_PLUGIN" ADD <<<"$conf") || why "stellar ADD failed: $out"
	echo "stellar: $out"
	[[ $(jq -c .ips <<<"$out") == "$(jq -c .ips <<<"$prev")" ]] ||
		why "ADD did not pass macvlan's result on"
	dev_exists "$dev" && why "$dev is visible in the initial namespace"
	out=$(ip netns exec "$CNI_POD" env -u RDMAV_DRIVERS ibv_devinfo -d "$dev" 2>&1)
	[[ $out == *PORT_ACTIVE* ]] || why "the pod cannot open $dev with its librxe: $out"
	out=$(ip netns exec "$CNI_POD" cat "/sys/class/infiniband/$dev/qp_quota" 2>&1)
	[[ $out == 16 ]] || why "$dev qp_quota is '$out', want 16 (from the configuration)"
	out=$(ip netns exec "$CNI_POD" cat "/sys/class/infiniband/$dev/weight" "/sys/class/infiniband/$dev/traffic_class" 2>&1)
	[[ $(echo $out) == "200 latency" ]] || why "$dev weight and class are '$(echo $out)', want '200 latency'"
	cni_run "$CNI_PLUGIN" CHECK <<<"$conf" || why "CHECK failed after ADD"

	# From inside the pod to rxe0, bytes checked.
	start_server "$port" 30 "$log.server" \
		ibv_rc_pingpong -d rxe0 -g "$STL_GIDX" -p "$port" -n 200 -c || { cni_cleanup; return 1; }
	srv=$SERVER_PID
	run_client_retry 10 "$log.client" ip netns exec "$CNI_POD" env -u RDMAV_DRIVERS \
		ibv_rc_pingpong -d "$dev" -g "$STL_GIDX" -p "$port" -n 200 -c 10.78.0.1 ||
		why "ibv_rc_pingpong from the pod failed"
	wait_exit "$srv" 30 || why "server still running 30 s after the client ended"
	cat "$log.server"
	grep -q "bytes in" "$log.server" || why "rxe0's side printed no throughput line"

	# DEL removes it, twice is fine; CHECK then says so.
	cni_run "$CNI_PLUGIN" DEL <<<"$conf" || why "DEL failed"
	ip netns exec "$CNI_POD" ls /sys/class/infiniband | grep -q "$dev" && why "$dev still in the pod after DEL"
	dev_exists "$dev" && why "$dev in the initial namespace after DEL"
	cni_run "$CNI_PLUGIN" DEL <<<"$conf" || why "a second DEL failed"
	out=$(cni_run "$CNI_PLUGIN" CHECK <<<"$conf") && why "CHECK passed after DEL"
	[[ $(jq -r .code <<<"$out") == 101 ]] || why "CHECK after DEL: $out (want code 101)"
	cni_run "$CNI_DIR/macvlan" DEL <<<"$cni_conf_macvlan" >/dev/null || why "macvlan DEL failed"
	cni_cleanup
	[[ -z $WHY ]]
}

scenario cni_plugin_chained_after_macvlan s_cni_plugin
