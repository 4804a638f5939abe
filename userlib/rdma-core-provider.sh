#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma-core-provider.sh VERSION BUILDDIR [DEBDIR]: build libstellar the way
# rdma-core builds its own providers, as providers/stellar inside the
# source of rdma-core release VERSION with its CMake, against that
# release's real provider ABI (infiniband/driver.h), and print the path of
# the provider library (TREE/lib/libstellar-rdmavN.so).  The tree is the
# one userlib/tests/rdma-core-build.sh builds and caches under BUILDDIR
# (from ../shared/third_party/rdma-core/, checked against SHA256SUMS).  The
# run-time guard stays: the library registers only inside the libibverbs
# file of that release.
#
# With DEBDIR, also write DEBDIR/ibverbs-provider-stellar_<v>_amd64.deb:
# the provider and its .driver file for the distribution's paths, with
# Depends: libibverbs1 (>= VERSION), libibverbs1 (<< NEXT~), the release it
# was built for and nothing else (a provider is bound to one release).
#
# Exit status as rdma-core-build.sh's (77: tarball or tool missing).
set -eu
ver=${1:?usage: rdma-core-provider.sh VERSION BUILDDIR [DEBDIR]}
build=${2:?usage: rdma-core-provider.sh VERSION BUILDDIR [DEBDIR]}
debdir=${3:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$(sh "$repo/userlib/tests/rdma-core-build.sh" "$ver" "$build") || exit $?
src=$(dirname "$tree")

# The release's libibverbs file and provider ABI, as its build made them.
verbs=$(cd "$tree/lib" && ls libibverbs.so.1.* | head -n 1)
verbs_version=${verbs#libibverbs.so.}
pabi=$(sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")/\1/p' "$src/CMakeLists.txt")
[ -n "$pabi" ] && [ -n "$verbs_version" ] || {
	echo "rdma-core-provider: cannot tell $ver's provider ABI" >&2
	exit 1
}

# Calls whose arguments changed between releases: read the release's own
# prototypes (infiniband/driver.h of its build tree).
proto() {
	awk -v f="$1" '$0 ~ "^int " f "\\(" { p = 1 } p { printf "%s", $0 } p && /;/ { exit }' \
		"$tree/include/infiniband/driver.h"
}
defs=""
proto ibv_cmd_get_context | grep -q fd_arr && defs="$defs STELLAR_CMD_GET_CONTEXT_FD_ARR=1"
proto ibv_cmd_reg_dmabuf_mr | grep -q ibv_command_buffer &&
	defs="$defs STELLAR_CMD_REG_DMABUF_MR_DRIVER=1"
proto ibv_cmd_create_cq_ex | grep -q prov_attr &&
	defs="$defs STELLAR_CMD_CREATE_CQ_EX_PROV_ATTR=1"

# providers/stellar: the sources as they are, and rdma-core's CMake rule.
dst=$src/providers/stellar
mkdir -p "$dst"
for f in stellar.c stellar_cq.c stellar_qp.c stellar.h; do
	cmp -s "$repo/userlib/provider/$f" "$dst/$f" ||
		cp "$repo/userlib/provider/$f" "$dst/$f"
done
cmp -s "$repo/include/uapi/stellar-abi.h" "$dst/stellar-abi.h" ||
	cp "$repo/include/uapi/stellar-abi.h" "$dst/stellar-abi.h"
cat >"$dst/CMakeLists.txt.new" <<CMAKE
# Stellar (userlib/rdma-core-provider.sh): the release's own provider ABI.
string(REGEX MATCH "^[0-9]+" STELLAR_RELEASE "\${PACKAGE_VERSION}")
rdma_provider(stellar stellar.c stellar_cq.c stellar_qp.c)
target_compile_definitions(stellar-rdmav\${IBVERBS_PABI_VERSION} PRIVATE
  STELLAR_IN_TREE=1 STELLAR_RDMA_CORE_RELEASE=\${STELLAR_RELEASE}
  STELLAR_LIBIBVERBS_VERSION="$verbs_version"$defs)
CMAKE
if cmp -s "$dst/CMakeLists.txt.new" "$dst/CMakeLists.txt"; then
	rm "$dst/CMakeLists.txt.new"
else
	mv "$dst/CMakeLists.txt.new" "$dst/CMakeLists.txt"
fi
grep -q '^add_subdirectory(providers/stellar)' "$src/CMakeLists.txt" ||
	sed -i 's|^add_subdirectory(providers/rxe)$|&\nadd_subdirectory(providers/stellar)|' \
		"$src/CMakeLists.txt"
grep -q '^add_subdirectory(providers/stellar)' "$src/CMakeLists.txt" || {
	echo "rdma-core-provider: no providers/rxe line in $ver's CMakeLists.txt" >&2
	exit 1
}
log=$tree/stellar-provider.log
if ! (cd "$tree" && cmake . >"$log" 2>&1 && ninja "stellar-rdmav$pabi" >>"$log" 2>&1); then
	tail -n 40 "$log" >&2
	echo "rdma-core-provider: building libstellar in rdma-core $ver failed" >&2
	exit 1
fi
lib=$tree/lib/libstellar-rdmav$pabi.so

if [ -n "$debdir" ]; then
	major=${ver%%.*}
	stl_version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$repo/dkms.conf")
	arch=$(dpkg --print-architecture)
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
	pkg=$(mktemp -d)
	chmod 0755 "$pkg"
	mkdir -p "$pkg/DEBIAN" "$pkg/usr/lib/$multiarch/libibverbs" "$pkg/etc/libibverbs.d"
	install -m 0644 "$lib" "$pkg/usr/lib/$multiarch/libibverbs/libstellar-rdmav$pabi.so"
	echo "driver stellar" >"$pkg/etc/libibverbs.d/stellar.driver"
	cat >"$pkg/DEBIAN/control" <<CONTROL
Package: ibverbs-provider-stellar
Version: $stl_version+rdmacore$ver
Architecture: $arch
Maintainer: Stellar authors <stellar@localhost>
Depends: libibverbs1 (>= $ver), libibverbs1 (<< $((major + 1))~), libc6
Section: libs
Priority: optional
Description: Stellar para-virtual RDMA devices: rdma-core provider
 libstellar built inside rdma-core $ver for that release's provider ABI
 (libibverbs $verbs_version).  It drives Stellar's stellarN devices,
 ibv_reg_dmabuf_mr included; rxe_* Stellar devices use librxe.
CONTROL
	mkdir -p "$debdir"
	deb=$debdir/ibverbs-provider-stellar_${stl_version}+rdmacore${ver}_$arch.deb
	dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
	rm -rf "$pkg"
	echo "rdma-core-provider: $deb" >&2
fi
echo "$lib"
