#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in the test VM (scripts/bench.sh): pod start.  N containers started
# at once by podman, each registering REG MiB (default 1 GiB) of its memory
# and sending its first message (build/tests/stl_podstart) to one server QP
# on rxe0; the figure is the time from the first `podman run` to the last
# message's arrival, all in the same VM.  Both kinds get their network from
# the same CNI macvlan (host-local addresses); the difference is the RDMA
# device:
#  - Stellar: the CNI chain's Stellar plugin gives each container a device
#    of its own, created for it and moved into its namespace (exclusive
#    mode); the image's own stock librxe drives it.
#  - Baseline (rxe without Stellar): the containers share the host's rxe0,
#    which shared mode shows in every namespace: no device per pod, nothing
#    keeps one pod from another's addresses or resources.
# Either way a registration pins what it registers (Stellar's pin cache
# keeps the pins for the next registration of the same range), so a round
# runs only where N * REG fits in the VM's memory; otherwise its line says
# so.  Every container must print its client_ms line and the server must
# see each message once, intact; a round that loses one fails the run.
set -uo pipefail

PODS=${STL_BENCH_PODS:-"4 16"}
REG=${STL_BENCH_POD_REG_MIB:-1024}
GIDX=${STL_GID_INDEX:-1}
IMG=localhost/stellar-podstart:1
DIR=/tmp/stl-podstart
B=$PWD/build/tests/stl_podstart
# shellcheck source=tests/lib/podman.sh
source tests/lib/podman.sh

fail() {
	echo "bench: $*"
	exit 1
}

command -v podman >/dev/null || fail "no podman (scripts/deps.sh installs it)"
insmod ./stellar.ko || fail "insmod failed"
mkdir -p "$DIR"
stl_pm_config || fail "cannot configure podman"
cp tools/cni/stellar /usr/lib/cni/stellar
# conflist NAME [PLUGIN_JSON]: macvlan with host-local addresses, then PLUGIN
conflist() {
	jq -n --arg name "$1" --argjson more "${2:-null}" '{cniVersion: "1.0.0", name: $name,
		plugins: ([{type: "macvlan", master: "eth0", mode: "bridge",
			ipam: {type: "host-local", ranges: [[{subnet: "10.80.0.0/16",
				rangeStart: "10.80.0.10", rangeEnd: "10.80.3.250"}]]}}] +
			(if $more == null then [] else [$more] end))}' >"/etc/cni/net.d/$1.conflist"
}
conflist stlpod "$(jq -n --arg ctl "$PWD/build/stellarctl" '{type: "stellar", netdev: "eth0", stellarctl: $ctl}')"
conflist stlpodplain
stl_pm_image "$IMG" "$DIR" "$B" || fail "cannot build the image"

# round KIND N: prints "SECONDS MEDIAN_CLIENT_MS MAX_CLIENT_MS MEDIAN_REG_MS"
round() {
	local kind=$1 n=$2 qpn gid t0 last i srv rc=0
	local -a args dev=()
	if [[ $kind == stellar ]]; then
		args=(--network stlpod)
		rdma system set netns exclusive || return 1
	else
		args=(--network stlpodplain)
		dev=(-d rxe0)
		rdma system set netns shared || return 1
	fi
	# a registration pins: the containers may lock memory
	args+=(--ulimit memlock=-1:-1)
	args+=(-v /dev/infiniband:/dev/infiniband --device-cgroup-rule 'c 231:* rwm')
	rm -f "$DIR"/c*.log
	"$B" serve -d rxe0 -g "$GIDX" -n "$n" -t 900 >"$DIR/srv.log" 2>&1 &
	srv=$!
	for ((i = 0; i < 100; i++)); do
		grep -q '^qpn ' "$DIR/srv.log" && break
		sleep 0.1
	done
	read -r _ qpn _ gid <<<"$(grep '^qpn ' "$DIR/srv.log")"
	[[ -n $gid ]] || { cat "$DIR/srv.log" >&2; return 1; }
	t0=$EPOCHREALTIME
	for ((i = 0; i < n; i++)); do
		timeout -k 5 900 podman run --rm "${args[@]}" "$IMG" /bin/stl_podstart client \
			"${dev[@]}" -g "$GIDX" -q "$qpn" -G "$gid" -i "$i" -W "$REG" >"$DIR/c$i.log" 2>&1 &
	done
	wait_pods "$n"
	wait "$srv" || rc=1
	for ((i = 0; i < n; i++)); do
		grep -q '^client_ms ' "$DIR/c$i.log" ||
			{ echo "bench: $kind container $i: $(tail -n 3 "$DIR/c$i.log" | tr '\n' ' ')" >&2; rc=1; }
	done
	((rc == 0)) || { cat "$DIR/srv.log" >&2; return 1; }
	last=$(awk '$1 == "arrived" { print $3 }' "$DIR/srv.log" | sort -n | tail -n 1)
	printf "%.1f %s %s %s\n" "$(echo "$last - $t0" | bc -l)" \
		"$(col 2 | median)" "$(col 2 | sort -n | tail -n 1)" "$(col 4 | median)"
}

# col N: field N of the containers' client_ms lines
col() { awk -v f="$1" '$1 == "client_ms" { print $f }' "$DIR"/c*.log; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# wait_pods N: the N podman runs of this shell (not the server)
wait_pods() {
	local j
	for j in $(jobs -p); do
		[[ $j == "$srv" ]] || wait "$j"
	done
}

avail=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
echo "pod start: N containers at once, each registering $REG MiB and sending its first message"
echo "(VM memory available: $avail MiB; seconds from the first podman run to the last arrival)"
printf "%-4s %-26s %10s %12s %12s %10s\n" N kind seconds "client med" "client max" "reg med"
for n in $PODS; do
	for kind in rxe stellar; do
		label="stellar device per pod"
		[[ $kind == rxe ]] && label="rxe0 shared by the pods"
		if ((n * REG + 1536 > avail)); then
			printf "%-4s %-26s %s\n" "$n" "$label" \
				"does not fit: $((n * REG)) MiB pinned, $avail MiB in the VM"
			unset "base_$n"
			continue
		fi
		r=$(round "$kind" "$n") || fail "$kind round with $n containers failed"
		read -r s cm cx rm <<<"$r"
		printf "%-4s %-26s %10s %9s ms %9s ms %7s ms\n" "$n" "$label" "$s" "$cm" "$cx" "$rm"
		[[ $kind == rxe ]] && printf -v "base_$n" %s "$s"
		if [[ $kind == stellar ]]; then
			b=base_$n
			[[ -n ${!b:-} ]] && printf "%-4s %-26s %10.2f\n" "$n" "time stellar / rxe" \
				"$(echo "$s / ${!b}" | bc -l)"
		fi
	done
done
left=$(rdma link show | grep -c 'rxe_[0-9a-f]\{12\}')
((left == 0)) || fail "$left pod devices left after their containers ended"
