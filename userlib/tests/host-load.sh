#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Load libstellar through the real libibverbs on a machine without RDMA
# devices.  libibverbs loads providers only once it has found a device no
# loaded provider claims, so this builds a fake sysfs (SYSFS_PATH) with two
# uverbs devices, "stellar0" carrying the stellar_abi_version attribute and
# "other0" without it, and fake /dev/infiniband nodes inside a private mount
# namespace.  Expected from ibv_devices: libstellar dlopened and initialised,
# stellar0 listed (claimed by libstellar's match_device), other0 left
# unclaimed.  Needs root for the mount namespace; skips otherwise.
set -eu
build=$(cd "${1:?usage: host-load.sh BUILDDIR}" && pwd)
lib=$build/libstellar-rdmav34.so
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT

if ! unshare -m true 2>/dev/null; then
	echo "host-load: SKIP (no mount namespace; run as root)"
	exit 0
fi

sys=$tmp/sys
mkdir -p "$sys/class/infiniband_verbs" "$tmp/dev"
echo 6 >"$sys/class/infiniband_verbs/abi_version"
n=0
for dev in stellar0 other0; do
	uv=$sys/class/infiniband_verbs/uverbs$n
	ib=$sys/class/infiniband/$dev
	mkdir -p "$uv" "$ib"
	echo "$dev" >"$uv/ibdev"
	echo "231:$((192 + n))" >"$uv/dev"
	echo 1 >"$uv/abi_version"
	echo "1: CA" >"$ib/node_type"
	echo "0000:0000:0000:000$((n + 1))" >"$ib/node_guid"
	n=$((n + 1))
done
echo 1 >"$sys/class/infiniband/stellar0/stellar_abi_version"

# In the namespace: a tmpfs /dev holding only null and the two fake nodes.
unshare -m --propagation private sh -c '
	set -e
	mount --bind /dev "$0/dev"
	mount -t tmpfs stellar-test /dev
	touch /dev/null && mount --bind "$0/dev/null" /dev/null
	mkdir /dev/infiniband
	touch /dev/infiniband/uverbs0 /dev/infiniband/uverbs1
	SYSFS_PATH="$0/sys" RDMAV_DRIVERS="$1/libstellar" IBV_SHOW_WARNINGS=1 \
		LD_DEBUG=libs ibv_devices >"$0/out" 2>"$0/err" || true
' "$tmp" "$build"

fail() {
	echo "host-load: FAIL: $*" >&2
	echo "--- ibv_devices stdout:" >&2; cat "$tmp/out" >&2
	echo "--- ibv_devices stderr (LD_DEBUG filtered):" >&2
	grep -v '^ *[0-9]*:' "$tmp/err" >&2 || true
	exit 1
}

grep -q "calling init: $lib" "$tmp/err" ||
	fail "libibverbs did not load and initialise $lib"
grep -q '^ *stellar0 ' "$tmp/out" ||
	fail "stellar0 was not claimed"
! grep -q '^ *other0 ' "$tmp/out" ||
	fail "other0 (no stellar_abi_version) was claimed"
grep -q 'no userspace device-specific driver found for other0' "$tmp/err" ||
	fail "other0 was not reported unclaimed"
! grep -v '^ *[0-9]*:' "$tmp/err" | grep -q 'libstellar\|stellar0' ||
	fail "warnings mention libstellar or stellar0"
echo "host-load: ok (libibverbs loaded $lib; it claimed stellar0 and left other0)"
