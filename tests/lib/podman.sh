# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# podman.sh - podman in the test VM, for the scenarios and the benchmarks
# that start containers (sourced): Debian's podman with the CNI backend,
# vfs storage and cgroupfs, and images built from this machine's files
# (no registry).

# stl_pm_config: podman's configuration (the VM's root is a throwaway
# overlay, so /etc is ours to write).
stl_pm_config() {
	mkdir -p /etc/containers /etc/cni/net.d /usr/lib/cni || return 1
	if ! mountpoint -q /sys/fs/cgroup && ! mount -t cgroup2 none /sys/fs/cgroup; then
		echo "podman.sh: cannot mount cgroup2" >&2
		return 1
	fi
	printf '[storage]\ndriver = "vfs"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' \
		>/etc/containers/storage.conf &&
		printf '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n[network]\nnetwork_backend = "cni"\n' \
			>/etc/containers/containers.conf
}

# stl_pm_image IMAGE DIR PROGRAM...: import IMAGE, a root file system (made
# under DIR) holding each PROGRAM (also in /bin), every library they load,
# and the distribution's librxe with its driver file: the image's own
# rdma-core provider.
stl_pm_image() {
	local image=$1 root=$2/rootfs f l
	shift 2
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/etc/libibverbs.d" "$root/dev" "$root/proc" "$root/sys" "$root/tmp"
	for f in "$@" /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so; do
		if [[ ! -e $f ]]; then
			echo "podman.sh: no $f on this machine" >&2
			return 1
		fi
		mkdir -p "$root$(dirname "$f")"
		cp -L "$f" "$root$f"
		for l in $(ldd "$f" | awk '/=>/ { print $3 } /^\t\/lib/ { print $1 }'); do
			mkdir -p "$root$(dirname "$l")"
			cp -L "$l" "$root$l"
		done
	done
	cp "$@" "$root/bin/" && cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/" || return 1
	tar -C "$root" -cf "$root.tar" . || { echo "podman.sh: cannot pack the image" >&2; return 1; }
	podman import "$root.tar" "$image" >/dev/null || { echo "podman.sh: podman import failed" >&2; return 1; }
}
