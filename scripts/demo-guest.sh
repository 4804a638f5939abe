#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Stellar demo, run inside the test VM by scripts/demo.sh: create two
# Stellar devices over the Soft-RoCE parent, move real traffic between them
# and between a Stellar device and the plain parent, and print a summary.
set -euo pipefail
export RDMAV_DRIVERS=$PWD/build/libstellar
GIDX=${STL_GID_INDEX:-1}

step() { printf '\n== %s\n' "$*"; }

step "load stellar.ko and create stellar0, stellar1 over rxe0 (netdev eth0)"
insmod ./stellar.ko
t0=$(date +%s%N)
rdma link add stellar0 type stellar netdev eth0
rdma link add stellar1 type stellar netdev eth0
t1=$(date +%s%N)
rdma link show
echo "two devices created in $(((t1 - t0) / 1000000)) ms"
ibv_devinfo -d stellar0 | grep -E 'hca_id|state|active_mtu|link_layer'

step "ibv_rc_pingpong stellar0 <-> stellar1"
ibv_rc_pingpong -d stellar0 -g "$GIDX" -n 200 >/dev/null &
sleep 1
ibv_rc_pingpong -d stellar1 -g "$GIDX" -n 200 127.0.0.1 | tail -2
wait

step "ibv_rc_pingpong stellar0 <-> plain rxe0"
ibv_rc_pingpong -d stellar0 -g "$GIDX" -n 200 >/dev/null &
sleep 1
ibv_rc_pingpong -d rxe0 -g "$GIDX" -n 200 127.0.0.1 | tail -2
wait

step "ib_write_bw 64 KiB, stellar0 -> stellar1"
ib_write_bw -d stellar0 -x "$GIDX" -F -s 65536 -n 1000 >/dev/null &
sleep 1.5
ib_write_bw -d stellar1 -x "$GIDX" -F -s 65536 -n 1000 127.0.0.1 |
	awk '/#bytes/ { print; getline; print }'
wait

step "counters"
rdma statistic show link stellar0/1
rdma statistic show link stellar1/1
echo "pages pinned now: stellar0 $(cat /sys/class/infiniband/stellar0/pinned_pages)," \
	"stellar1 $(cat /sys/class/infiniband/stellar1/pinned_pages)"

step "delete the devices and unload"
rdma link delete stellar1
rdma link delete stellar0
rmmod stellar
echo "demo done: Stellar devices created, traffic moved, everything released"
