#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# libstellar against the real stellar.ko, inside the test VM:
#   scripts/vm.sh userlib/tests/vm-provider.sh      (after make; make -C userlib check)
# Needs stellar.ko in the repository root and build/libstellar-rdmav34.so,
# build/userlib/verbs_smoke, build/userlib/verbs_batch.  Every step is logged; the exit status counts
# the failed ones.
set -uo pipefail

repo=${STL_REPO:-$PWD}
out=${STL_OUT:-/tmp}
ip=${STL_MY_IP:-10.0.2.15}
rxe_gid=${STL_GID_INDEX:-1}
failed=0

step() { printf '\n=== %s\n' "$*"; }
pass() { printf 'PASS: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; failed=$((failed + 1)); }

# GID index of DEV's IPv4-mapped RoCE v2 GID for address $ip.
ipv4_gid_index() {
	local dev=$1 want f g n
	IFS=. read -r -a o <<<"$ip"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		"${o[0]}" "${o[1]}" "${o[2]}" "${o[3]}")
	for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		read -r g <"$f" 2>/dev/null || continue
		[[ $g == "$want" ]] || continue
		n=${f##*/}
		[[ $(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$n" 2>/dev/null) == "RoCE v2" ]] || continue
		echo "$n"
		return 0
	done
	return 1
}

# pingpong NAME PORT ARGS...: server and client of one ibv_*_pingpong.
pingpong() {
	local name=$1 port=$2 spid rc_s rc_c i
	shift 2
	timeout 60 "$name" -p "$port" "$@" >"$out/$name-$port-server.log" 2>&1 &
	spid=$!
	# Under TCG the server may take more than a second to listen.
	for ((i = 0; i < 100; i++)); do
		[[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]] && break
		sleep 0.1
	done
	timeout 60 "$name" -p "$port" "$@" "$ip" >"$out/$name-$port-client.log" 2>&1
	rc_c=$?
	wait "$spid"
	rc_s=$?
	tail -n 2 "$out/$name-$port-client.log"
	[[ $rc_c == 0 && $rc_s == 0 ]] || {
		echo "server rc $rc_s, client rc $rc_c"
		cat "$out/$name-$port-server.log" "$out/$name-$port-client.log"
		return 1
	}
}

step "load stellar.ko"
modprobe ib_uverbs
if ! insmod "$repo/stellar.ko"; then
	fail "insmod $repo/stellar.ko"
	dmesg | tail -n 30
	exit 1
fi
rdma link add stellar0 type stellar netdev eth0 || { fail "rdma link add"; dmesg | tail -n 30; exit 1; }
for ((i = 0; i < 300; i++)); do
	gid=$(ipv4_gid_index stellar0) && break
	sleep 0.1
done
if [[ -z ${gid:-} ]]; then
	fail "stellar0 has no IPv4 RoCE v2 GID after 30 s"
	rdma link show
	exit 1
fi
rdma link show
ls -l /sys/class/infiniband/stellar0/ 2>&1 | grep -i stellar || true
echo "stellar_abi_version: $(cat /sys/class/infiniband/stellar0/stellar_abi_version 2>&1)"
echo "stellar0 GID index $gid, rxe0 GID index $rxe_gid"

export RDMAV_DRIVERS=$repo/build/libstellar IBV_SHOW_WARNINGS=1

step "ibv_devices lists rxe0 (rxe provider) and stellar0 (libstellar)"
ibv_devices >"$out/devices.log" 2>&1
cat "$out/devices.log"
grep -q '^ *stellar0 ' "$out/devices.log" && grep -q '^ *rxe0 ' "$out/devices.log" &&
	! grep -qi 'warning' "$out/devices.log" && pass "both claimed, no warnings" ||
	fail "device list"

step "ibv_devinfo -d stellar0"
ibv_devinfo -v -d stellar0 >"$out/devinfo-stellar0.log" 2>&1
head -n 40 "$out/devinfo-stellar0.log"
grep -q 'PORT_ACTIVE' "$out/devinfo-stellar0.log" && pass "stellar0 PORT_ACTIVE" ||
	fail "stellar0 not PORT_ACTIVE"

step "ibv_devinfo -d rxe0 with libstellar loaded"
ibv_devinfo -d rxe0 >"$out/devinfo-rxe0.log" 2>&1
grep -q 'PORT_ACTIVE' "$out/devinfo-rxe0.log" && pass "rxe0 PORT_ACTIVE" ||
	{ cat "$out/devinfo-rxe0.log"; fail "rxe0 not PORT_ACTIVE"; }

step "verbs_smoke stellar0"
timeout 120 "$repo/build/userlib/verbs_smoke" stellar0 "$gid" && pass "verbs_smoke" ||
	fail "verbs_smoke"

step "verbs_batch stellar0 (batches, long lists, ex-CQ polling, QP creation)"
timeout 300 "$repo/build/userlib/verbs_batch" stellar0 "$gid" && pass "verbs_batch" ||
	fail "verbs_batch"

step "ibv_rc_pingpong on stellar0"
pingpong ibv_rc_pingpong 18515 -d stellar0 -g "$gid" -n 200 && pass "rc_pingpong stellar0" ||
	fail "rc_pingpong stellar0"

step "ibv_rc_pingpong -N (ibv_create_qp_ex + ibv_wr_* send API) on stellar0"
pingpong ibv_rc_pingpong 18519 -d stellar0 -g "$gid" -n 200 -N && pass "rc_pingpong -N stellar0" ||
	fail "rc_pingpong -N stellar0"

step "ibv_uc_pingpong on stellar0"
pingpong ibv_uc_pingpong 18516 -d stellar0 -g "$gid" -n 200 && pass "uc_pingpong stellar0" ||
	fail "uc_pingpong stellar0"

step "ibv_ud_pingpong on stellar0"
pingpong ibv_ud_pingpong 18517 -d stellar0 -g "$gid" -n 200 -s 512 && pass "ud_pingpong stellar0" ||
	fail "ud_pingpong stellar0"

step "ibv_rc_pingpong on rxe0 with libstellar loaded"
pingpong ibv_rc_pingpong 18518 -d rxe0 -g "$rxe_gid" -n 200 && pass "rc_pingpong rxe0" ||
	fail "rc_pingpong rxe0"

step "a renamed device is still claimed (matching ignores the name)"
if rdma dev set stellar0 name fabric7; then
	ibv_devinfo -d fabric7 >"$out/devinfo-fabric7.log" 2>&1
	grep -q 'PORT_ACTIVE' "$out/devinfo-fabric7.log" && pass "fabric7 PORT_ACTIVE" ||
		{ cat "$out/devinfo-fabric7.log"; fail "fabric7 not usable"; }
	rdma dev set fabric7 name stellar0 || fail "rename back"
else
	fail "rdma dev set stellar0 name fabric7"
fi

step "installed provider is found without RDMAV_DRIVERS (guest overlay only)"
if make -s -C "$repo/userlib" install >"$out/install.log" 2>&1; then
	env -u RDMAV_DRIVERS ibv_devinfo -d stellar0 >"$out/devinfo-installed.log" 2>&1
	grep -q 'PORT_ACTIVE' "$out/devinfo-installed.log" && pass "found via /etc/libibverbs.d" ||
		{ cat "$out/devinfo-installed.log"; fail "installed provider not used"; }
else
	cat "$out/install.log"
	fail "make install"
fi

step "rdma link delete stellar0"
rdma link delete stellar0 && pass "deleted" || fail "rdma link delete stellar0"

step "kernel log (stellar lines)"
dmesg | grep -i stellar | tail -n 40

echo
echo "vm-provider: $failed step(s) failed"
exit "$failed"
