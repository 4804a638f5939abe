#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# host-load.sh BUILDDIR [COMPAT_VERSION...]
#
# Load libstellar through a real libibverbs on a machine without RDMA
# devices.  libibverbs loads providers only once it has found a device no
# loaded provider claims, so this builds a fake sysfs (SYSFS_PATH) with two
# uverbs devices, "stellar0" carrying the stellar_abi_version attribute and
# "other0" without it, and fake /dev/infiniband nodes inside a private mount
# namespace, and runs ibv_devices there:
#   - system libibverbs, matching module ABI: libstellar dlopened and
#     initialised, stellar0 listed (claimed by its match_device), other0
#     left unclaimed, no warning about stellar;
#   - a module speaking another Stellar ABI: stellar0 unclaimed, nothing on
#     stderr unless IBV_SHOW_WARNINGS is set, and then the reason;
#   - for each COMPAT_VERSION (an rdma-core release, built from its tarball
#     by rdma-core-build.sh under BUILDDIR): that release's ibv_devices and
#     libibverbs; libstellar, built for the system's, must refuse to
#     register with exactly one line on stderr, leaving stellar0 unclaimed.
# Needs root for the mount namespace; skips otherwise.
set -eu
build=$(cd "${1:?usage: host-load.sh BUILDDIR [COMPAT_VERSION...]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
lib=$build/libstellar-rdmav34.so
sysver=$(pkg-config --modversion libibverbs)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT

if ! unshare -m true 2>/dev/null; then
	echo "host-load: SKIP (no mount namespace; run as root)"
	exit 0
fi

# fake_sysfs DIR ABI: the two devices, stellar0 marked with Stellar ABI ABI.
fake_sysfs() {
	sys=$1
	mkdir -p "$sys/class/infiniband_verbs"
	echo 6 >"$sys/class/infiniband_verbs/abi_version"
	n=0
	for dev in stellar0 other0; do
		uv=$sys/class/infiniband_verbs/uverbs$n
		ib=$sys/class/infiniband/$dev
		mkdir -p "$uv" "$ib"
		echo "$dev" >"$uv/ibdev"
		echo "231:$((192 + n))" >"$uv/dev"
		echo 2 >"$uv/abi_version"	# the rxe user ABI's
		echo "1: CA" >"$ib/node_type"
		echo "0000:0000:0000:000$((n + 1))" >"$ib/node_guid"
		n=$((n + 1))
	done
	echo "$2" >"$sys/class/infiniband/stellar0/stellar_abi_version"
}

# run NAME ABI IBV_DEVICES [VAR=VALUE...]: ibv_devices in the namespace, with
# a tmpfs /dev holding only null and the two fake nodes.  Output in
# $tmp/NAME.out, .err; the dynamic loader's trace in $tmp/NAME.ld.*.
run() {
	name=$1 abi=$2 bin=$3
	shift 3
	mkdir -p "$tmp/$name/dev"
	fake_sysfs "$tmp/$name/sys" "$abi"
	unshare -m --propagation private sh -c '
		set -e
		d=$1 bin=$2 drivers=$3
		shift 3
		mount --bind /dev "$d/dev"
		mount -t tmpfs stellar-test /dev
		touch /dev/null && mount --bind "$d/dev/null" /dev/null
		mkdir /dev/infiniband
		touch /dev/infiniband/uverbs0 /dev/infiniband/uverbs1
		env SYSFS_PATH="$d/sys" RDMAV_DRIVERS="$drivers" \
			LD_DEBUG=libs LD_DEBUG_OUTPUT="$d.ld" "$@" "$bin" \
			>"$d.out" 2>"$d.err" || true
	' sh "$tmp/$name" "$bin" "$build/libstellar" "$@"
}

fail() {
	echo "host-load: FAIL ($name): $*" >&2
	echo "--- ibv_devices stdout:" >&2; cat "$tmp/$name.out" >&2
	echo "--- ibv_devices stderr:" >&2; cat "$tmp/$name.err" >&2
	exit 1
}

loaded() { cat "$tmp/$name.ld".* 2>/dev/null | grep -q "calling init: $lib"; }

# 1. The system libibverbs, matching Stellar ABI.
name=match
run match 2 ibv_devices IBV_SHOW_WARNINGS=1
loaded || fail "libibverbs did not load and initialise $lib"
grep -q '^ *stellar0 ' "$tmp/$name.out" || fail "stellar0 was not claimed"
! grep -q '^ *other0 ' "$tmp/$name.out" ||
	fail "other0 (no stellar_abi_version) was claimed"
grep -q 'no userspace device-specific driver found for other0' "$tmp/$name.err" ||
	fail "other0 was not reported unclaimed"
! grep -q 'libstellar\|stellar0' "$tmp/$name.err" ||
	fail "warnings mention libstellar or stellar0"
echo "host-load: ok: libibverbs $sysver loaded $lib; it claimed stellar0 and left other0"

# 2. A module of another Stellar ABI: quiet, unless warnings are asked for.
name=abi-quiet
run abi-quiet 99 ibv_devices
loaded || fail "libibverbs did not load and initialise $lib"
! grep -q '^ *stellar0 ' "$tmp/$name.out" || fail "stellar0 (Stellar ABI 99) was claimed"
[ ! -s "$tmp/$name.err" ] || fail "stderr not empty without IBV_SHOW_WARNINGS"
name=abi-warn
run abi-warn 99 ibv_devices IBV_SHOW_WARNINGS=1
! grep -q '^ *stellar0 ' "$tmp/$name.out" || fail "stellar0 (Stellar ABI 99) was claimed"
grep -q '^libstellar: stellar0: kernel module speaks Stellar ABI 99, this provider 2; device ignored$' \
	"$tmp/$name.err" || fail "IBV_SHOW_WARNINGS did not give the reason"
echo "host-load: ok: Stellar ABI 99 refused, silent without IBV_SHOW_WARNINGS, explained with it"

# 3. Other rdma-core releases: the provider must refuse their libibverbs.
for ver in "$@"; do
	name=compat-$ver
	rc=0
	tree=$("$here/rdma-core-build.sh" "$ver" "$build") || rc=$?
	if [ "$rc" = 77 ]; then
		echo "host-load: SKIP: rdma-core $ver (tarball or build tools missing)"
		continue
	fi
	[ "$rc" = 0 ] || fail "could not build rdma-core $ver"
	other=$(basename "$(readlink -f "$tree/lib/libibverbs.so.1")")
	run "$name" 2 "$tree/bin/ibv_devices"
	loaded || fail "libibverbs $ver did not load and initialise $lib"
	! grep -q '^ *stellar0 ' "$tmp/$name.out" ||
		fail "stellar0 claimed under rdma-core $ver's libibverbs"
	# A build-tree libibverbs complains about its own missing config
	# directory; everything else on stderr is libstellar's one line.
	grep -v "^libibverbs: Warning: couldn't open config directory" \
		"$tmp/$name.err" >"$tmp/$name.rest" || true
	[ "$(wc -l <"$tmp/$name.rest")" = 1 ] || fail "not exactly one line from libstellar"
	grep -qx "libstellar: built for libibverbs $sysver, running with $other: not registering" \
		"$tmp/$name.rest" || fail "not the refusal line"
	echo "host-load: ok: under rdma-core $ver ($other) libstellar refused with: $(cat "$tmp/$name.rest")"
done
