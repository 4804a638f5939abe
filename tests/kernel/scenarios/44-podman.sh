# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 44-podman.sh - a real container runtime: Debian's podman (CNI backend,
# vfs storage, cgroupfs) runs containers from an image built here from the
# machine's own files (ibv_rc_pingpong, libibverbs and the stock librxe of
# the distribution's rdma-core: the image's own provider; no registry).
#  - Its network config chains the Stellar CNI plugin after macvlan: the
#    container gets a device of its own, moves bytes to rxe0 from inside,
#    and the device is gone when the container is.  The container is not
#    privileged: /dev/infiniband is bound in and the verbs character
#    devices allowed by a device cgroup rule (the node is made by the
#    plugin, after the runtime has fixed the container's device list;
#    exclusive mode keeps every other device out of its reach).
#  - A device named by its CDI spec (stellarctl cdi, podman run --device
#    stellar.io/rdma=NAME): its OCI hook moves it into the container, which
#    moves bytes with it; it comes back when the container ends.

PM_IMAGE=localhost/stellar-rdma-test:1
PM_DIR=/tmp/stl-podman

# shellcheck source=tests/lib/podman.sh
source "$PWD/tests/lib/podman.sh"

pm_setup() {
	stl_pm_config || { why "cannot configure podman"; return 1; }
	mkdir -p "$PM_DIR"
	cp "$PWD/tools/cni/stellar" /usr/lib/cni/stellar
	jq -n --arg ctl "$PWD/build/stellarctl" '{cniVersion: "1.0.0", name: "stlrdma", plugins: [
		{type: "macvlan", master: "eth0", mode: "bridge",
		 ipam: {type: "static", addresses: [{address: "10.79.0.2/24"}]}},
		{type: "stellar", netdev: "eth0", stellarctl: $ctl, limits: {qp: 16}}]}' \
		>/etc/cni/net.d/stlrdma.conflist
	jq -n '{cniVersion: "1.0.0", name: "stlplain", plugins: [
		{type: "macvlan", master: "eth0", mode: "bridge",
		 ipam: {type: "static", addresses: [{address: "10.79.0.3/24"}]}}]}' \
		>/etc/cni/net.d/stlplain.conflist
	ip link add link eth0 name stlpmh type macvlan mode bridge &&
		ip addr add 10.79.0.1/24 dev stlpmh && ip link set stlpmh up ||
		{ why "cannot configure macvlan stlpmh"; return 1; }
	rdma_netns_mode exclusive
}

pm_cleanup() {
	ip link del stlpmh 2>/dev/null
	dev_exists rxe_cdi0 && rdma link delete rxe_cdi0 2>/dev/null
	rdma_netns_mode shared
	rm -f /etc/cni/net.d/stlrdma.conflist /etc/cni/net.d/stlplain.conflist /var/run/cdi/stellar.io-rxe_cdi0.json
}

# A pingpong server on rxe0 (port $1), a container (podman run ARGS $2...)
# as its client; both sides must report the bytes.
pm_pingpong() {
	local port=$1 log=$STL_LOGDIR/podman-$1 srv
	shift
	start_server "$port" 30 "$log.server" \
		ibv_rc_pingpong -d rxe0 -g "$STL_GIDX" -p "$port" -n 100 -c || return 1
	srv=$SERVER_PID
	echo "+ podman run $*"
	timeout -k 5 180 podman run --rm "$@" >"$log.client" 2>&1
	cat "$log.client"
	grep -q "usec/iter" "$log.client" || why "the container's ibv_rc_pingpong moved nothing: $(tail -n 2 "$log.client" | tr '\n' ' ')"
	wait_exit "$srv" 30 || why "rxe0's server still running after the container ended"
	grep -q "bytes in" "$log.server" || why "rxe0's side printed no throughput line"
}

s_podman() {
	local before after k
	command -v podman >/dev/null || { why "no podman (scripts/deps.sh installs it)"; return 1; }
	[[ -x /usr/lib/cni/macvlan ]] || { why "no /usr/lib/cni/macvlan (containernetworking-plugins)"; return 1; }
	pm_setup || { pm_cleanup; return 1; }
	stl_pm_image "$PM_IMAGE" "$PM_DIR" /usr/bin/ibv_rc_pingpong /usr/bin/ibv_devinfo ||
		{ why "cannot build the image (see the log)"; pm_cleanup; return 1; }
	before=$(stellar_devices | sort | tr '\n' ' ')

	# CNI: the network config makes the device (the kernel log names it)
	k=$(dmesg | wc -l)
	pm_pingpong 18770 --network stlrdma -v /dev/infiniband:/dev/infiniband \
		--device-cgroup-rule 'c 231:* rwm' "$PM_IMAGE" \
		/bin/ibv_rc_pingpong -g "$STL_GIDX" -p 18770 -n 100 -c 10.79.0.1
	after=$(stellar_devices | sort | tr '\n' ' ')
	[[ $after == "$before" ]] || why "devices before the container '$before', after it '$after'"
	dmesg | tail -n +"$((k + 1))" | grep -qE 'rxe_[0-9a-f]{12}: created over rxe0' ||
		why "no rxe_<12 hex> device was created for the container"
	dmesg | tail -n +"$((k + 1))" | grep -qE 'rxe_[0-9a-f]{12}: removed from' ||
		why "the container's device was not removed"

	# CDI: a device made beforehand, named on the command line
	"$PWD/build/stellarctl" create rxe_cdi0 --netdev eth0 qp=8 ||
		{ why "stellarctl create rxe_cdi0 failed"; pm_cleanup; return 1; }
	"$PWD/build/stellarctl" cdi rxe_cdi0 || why "stellarctl cdi rxe_cdi0 failed"
	pm_pingpong 18771 --network stlplain --device stellar.io/rdma=rxe_cdi0 "$PM_IMAGE" \
		/bin/ibv_rc_pingpong -d rxe_cdi0 -g "$STL_GIDX" -p 18771 -n 100 -c 10.79.0.1
	wait_active rxe_cdi0 30 || why "rxe_cdi0 did not come back when the container ended"
	pm_cleanup
	[[ -z $WHY ]]
}

scenario podman_cni_and_cdi_containers_move_bytes s_podman
