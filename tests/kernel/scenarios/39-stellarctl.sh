# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 39-stellarctl.sh - the operator's tool: create (by netdev, by parent,
# with limits), list, set, show and stats (JSON read with jq), delete; the
# exit codes scripts rely on (0 done, 1 refused, 2 usage, 3 no device).

CTL=build/stellarctl

# Run stellarctl with arguments $2...; its exit status must be $1.
ctl_rc() {
	local want=$1 rc=0
	shift
	echo "+ stellarctl $*"
	"$CTL" "$@" || rc=$?
	((rc == want)) || why "stellarctl $* exited $rc, want $want"
}

# A "container": a process in a network namespace of its own; sets pid and
# state (what a runtime hands an OCI hook on stdin).
container_proc() {
	unshare --net sleep 120 &
	pid=$!
	bg_track "$pid"
	sleep 0.5
	state="{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":$pid,\"bundle\":\"/tmp\"}"
}

s_stellarctl() {
	local d=/sys/class/infiniband out res cdi f node pid state
	[[ -x $CTL ]] || { why "no $CTL (make tools)"; return 1; }
	"$CTL" --help | grep -q 'create NAME' || why "--help does not describe create"
	ctl_rc 2 frobnicate
	ctl_rc 2 create sc0
	ctl_rc 2 create sc0 --netdev eth0 --parent rxe0
	ctl_rc 2 create sc0 --netdev eth0 qp=banana
	ctl_rc 2 create sc0 --netdev eth0 colour=blue
	dev_exists sc0 && why "sc0 was created by a refused command"
	ctl_rc 1 create sc0 --netdev nosuchnet0

	# Created with its limits in place.
	ctl_rc 0 create sc0 --netdev eth0 qp=8 mr=16 pin_quota=1M
	wait_active sc0 10 || why "sc0 not ACTIVE"
	[[ $(cat $d/sc0/qp_quota) == 8 ]] || why "sc0 qp_quota is $(cat $d/sc0/qp_quota), want 8"
	[[ $(cat $d/sc0/mr_quota) == 16 ]] || why "sc0 mr_quota is $(cat $d/sc0/mr_quota), want 16"
	[[ $(cat $d/sc0/pin_quota_bytes) == 1048576 ]] || why "sc0 pin_quota_bytes is $(cat $d/sc0/pin_quota_bytes)"
	ctl_rc 1 create sc0 --netdev eth0
	ctl_rc 0 create sc1 --parent rxe0:1 cq=5
	[[ $(cat $d/sc1/parent) == rxe0 ]] || why "sc1 parent is not rxe0"
	[[ $(cat $d/sc1/cq_quota) == 5 ]] || why "sc1 cq_quota is not 5"
	# a refused limit leaves no device behind
	ctl_rc 1 create sc2 --netdev eth0 qp=99999999
	dev_exists sc2 && why "sc2 left behind after a refused limit"

	# list
	out=$("$CTL" --json list)
	echo "$out"
	jq -e . >/dev/null <<<"$out" || why "list --json is not JSON"
	res=$(jq -r '[.[].name] | join(" ")' <<<"$out")
	[[ " $res " == *" sc0 "* && " $res " == *" sc1 "* && " $res " == *" stellar0 "* ]] ||
		why "list names '$res'"
	[[ " $res " == *" rxe0 "* ]] && why "list names rxe0, which is no Stellar device"
	res=$(jq -r '.[] | select(.name == "sc0") | "\(.kind) \(.parent) \(.address_netdev) \(.state)"' <<<"$out")
	[[ $res == "stellar rxe0 eth0 ACTIVE" ]] || why "list says sc0 is '$res'"
	"$CTL" list | grep -qE '^sc1 +stellar +rxe0 +eth0 +ACTIVE' || why "list table has no sc1 row"

	# set, show, stats
	ctl_rc 0 set sc0 qp=3 pin_cache=64K kmem=16M
	[[ $(cat $d/sc0/qp_quota) == 3 ]] || why "set did not make qp_quota 3"
	[[ $(cat $d/sc0/kmem_quota) == 16777216 ]] || why "set did not make kmem_quota 16777216"
	[[ $(cat $d/sc0/pin_cache_bytes) == 65536 ]] || why "set did not make pin_cache_bytes 65536"
	ctl_rc 0 set sc0 weight=200 class=latency
	[[ $(cat $d/sc0/weight) == 200 && $(cat $d/sc0/traffic_class) == latency ]] ||
		why "set did not make weight 200 and class latency: $(cat $d/sc0/weight) $(cat $d/sc0/traffic_class)"
	ctl_rc 0 set sc0 class=bulk weight=100 share_yield=40
	[[ $(cat $d/sc1/share_yield_percent) == 40 ]] ||
		why "set share_yield=40 on sc0: sc1 (same parent) reads $(cat $d/sc1/share_yield_percent)"
	ctl_rc 1 set sc0 share_yield=95
	ctl_rc 0 set sc0 share_yield=75
	ctl_rc 2 set sc0 class=fast
	ctl_rc 0 set sc0 paths=8
	[[ $(cat $d/sc0/spray_paths) == 8 ]] || why "set did not make spray_paths 8: $(cat $d/sc0/spray_paths)"
	ctl_rc 1 set sc0 paths=17
	ctl_rc 1 set sc0 paths=0
	ctl_rc 0 set sc0 paths=4
	ctl_rc 1 set sc0 weight=5000
	ctl_rc 3 set nosuch0 qp=3
	ctl_rc 1 set sc0 qp=99999999
	ctl_rc 2 set sc0 qp=-1
	res=$("$TESTS/stl_quota_fill" -d sc0 -k qp -n 5 -g "$STL_GIDX")
	echo "$res"
	[[ $res == *"made=3 err=ENOMEM"* ]] || why "qp=3 on sc0: $res"
	out=$("$CTL" --json show sc0)
	echo "$out"
	res=$(jq -r '"\(.quotas.qp.used) \(.quotas.qp.limit) \(.quotas.mr.limit) \(.counters.object_quota_refusals) \(.quotas.kmem.used) \(.quotas.kmem.limit)"' <<<"$out")
	[[ $res == "0 3 16 1 0 16777216" ]] ||
		why "show sc0: qp used, qp limit, mr limit, refusals, kmem used, kmem limit '$res', want '0 3 16 1 0 16777216'"
	res=$(jq -r '.bandwidth | "\(.rate) \(.weight) \(.class) \(.share_total) \(.share_yield) \(.share) \(.paths)"' <<<"$out")
	[[ $res == "0 100 bulk 0 75 0 4" ]] ||
		why "show sc0: rate, weight, class, share_total, share_yield, share, paths '$res', want '0 100 bulk 0 75 0 4'"
	"$CTL" show sc0 | grep -qE '^share_yield +75$' || why "show table has no 'share_yield 75' row"
	out=$("$CTL" --json stats sc0)
	jq -e '.counters | has("send_wrs")' >/dev/null <<<"$out" || why "stats --json has no send_wrs"
	ctl_rc 3 show nosuch0

	# A CDI spec, and its hook run as a runtime runs it: the container's
	# state on stdin, its process in a network namespace of its own.
	cdi=$STL_LOGDIR/cdi
	mkdir -p "$cdi"
	ctl_rc 0 cdi sc0 --dir "$cdi"
	f=$cdi/stellar.io-sc0.json
	cat "$f"
	jq -e . "$f" >/dev/null || why "the CDI spec is not JSON"
	res=$(jq -r '.devices[0] as $d | $d.containerEdits.hooks[0] as $h |
		"\(.cdiVersion) \(.kind) \($d.name) \($d.containerEdits.env[0]) \($h.hookName) \($h.args | join(" "))"' "$f")
	[[ $res == "0.5.0 stellar.io/rdma sc0 STELLAR_DEVICE=sc0 createRuntime stellarctl oci-hook sc0" ]] ||
		why "CDI spec says '$res'"
	node=$(jq -r '.devices[0].containerEdits.deviceNodes[0].path' "$f")
	[[ -c $node && $(cat "/sys/class/infiniband_verbs/${node##*/}/ibdev") == sc0 ]] ||
		why "the CDI device node $node is not sc0's"
	[[ -x $(jq -r '.devices[0].containerEdits.hooks[0].path' "$f") ]] || why "the hook path is not executable"
	# shared mode: every namespace sees the device, the hook leaves it
	container_proc
	echo "$state" | ctl_rc 0 oci-hook sc0
	dev_exists sc0 || why "the hook moved sc0 in shared mode"
	kill "$pid"
	wait "$pid" 2>/dev/null
	rdma_netns_mode exclusive || return 1
	container_proc
	echo "$state" | ctl_rc 0 oci-hook sc0
	dev_exists sc0 && why "sc0 is still in the initial namespace after the hook"
	nsenter --net="/proc/$pid/ns/net" unshare --mount --propagation private \
		sh -c 'mount -t sysfs sysfs /sys && ibv_devices' | grep -q sc0 ||
		why "sc0 is not in the container's namespace"
	echo '{"id":"c2"}' | ctl_rc 2 oci-hook sc1
	kill "$pid"
	wait "$pid" 2>/dev/null
	wait_active sc0 20 || why "sc0 did not come back when the container's namespace went"
	rdma_netns_mode shared

	# delete
	ctl_rc 0 delete sc0
	dev_exists sc0 && why "sc0 still present"
	ctl_rc 3 delete sc0
	ctl_rc 3 delete rxe0
	ctl_rc 0 delete sc1
	[[ -z $WHY ]]
}

scenario stellarctl_create_list_set_show_delete s_stellarctl
