#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# deb-check.sh DEBDIR: the provider packages userlib/rdma-core-provider.sh
# wrote are bound to their release: on this machine apt accepts the one
# built for the installed libibverbs' release and refuses every other for
# its libibverbs dependency (a simulated install: nothing changes).
set -eu
debdir=${1:?usage: deb-check.sh DEBDIR}
mine=$(pkg-config --modversion libibverbs | awk -F. '{ print $3 ".0" }')
n=0
fail=0
for deb in "$debdir"/ibverbs-provider-stellar_*+rdmacore*_*.deb; do
	[ -f "$deb" ] || continue
	deb=$(realpath "$deb")
	n=$((n + 1))
	rel=${deb##*+rdmacore}
	rel=${rel%%_*}
	out=$(apt-get -s -o Debug::NoLocking=1 install "$deb" 2>&1) && rc=0 || rc=$?
	if [ "$rel" = "$mine" ]; then
		if [ "$rc" -ne 0 ] || ! echo "$out" | grep -q '^Inst ibverbs-provider-stellar'; then
			echo "deb-check: $deb (this machine's release $mine) does not install:"
			echo "$out" | tail -n 5
			fail=1
		else
			echo "deb-check: rdma-core $rel package installs here"
		fi
	elif [ "$rc" -eq 0 ] ||
	     ! echo "$out" | grep -q "Depends: libibverbs1 ("; then
		echo "deb-check: $deb (release $rel) is not refused on $mine:"
		echo "$out" | tail -n 5
		fail=1
	else
		echo "deb-check: rdma-core $rel package refused here (libibverbs $mine)"
	fi
done
[ "$n" -gt 0 ] || { echo "deb-check: no packages in $debdir"; exit 1; }
exit "$fail"
