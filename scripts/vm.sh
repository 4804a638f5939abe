#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# vm.sh - run a script as root inside one or two throw-away QEMU VMs that boot
# the distribution kernel with Soft-RoCE (rxe0) up, and fail on kernel errors.
#
# Usage:
#   scripts/vm.sh [-n 1|2] [-t TIMEOUT_S] [-m MEM_MB] [-o OUTDIR] [-q] SCRIPT [ARGS...]
#
#   -n 1|2      number of VMs (default 1; env STL_VM_NVMS)
#   -t SECONDS  wall-clock limit for the whole run, boot included (default 600;
#               env STL_VM_TIMEOUT)
#   -m MB       memory per VM (default 2048; env STL_VM_MEM)
#   -o OUTDIR   where results go (default: a fresh mktemp -d, printed)
#   -q          do not stream the serial consoles to stdout (env STL_VM_QUIET=1)
#
# The guest runs `bash SCRIPT ARGS` as root, stdin /dev/null, with the
# repository root as the current directory.  In two-VM mode both VMs run the
# same SCRIPT, which picks its role from STL_VM_INDEX.
#
# Environment seen by SCRIPT:
#   STL_VM_INDEX   0 or 1 (which VM this is)
#   STL_NVMS       1 or 2
#   STL_MY_IP      this VM's IPv4 address on eth0 (/24): 10.0.2.15 with one VM
#                  (QEMU user networking), 10.0.0.1 (vm0) / 10.0.0.2 (vm1) with two
#   STL_PEER_IP    the other VM's address (two-VM mode); empty with one VM
#   STL_OUT        writable directory whose contents come back to the host
#                  (OUTDIR/vmN); script.log, rc and dmesg.log also land there
#   STL_REPO       the repository root (also the current directory)
#   STL_NETDEV     eth0;  STL_RXE: rxe0
#   STL_GID_INDEX  GID index of rxe0's IPv4-mapped RoCEv2 GID (1 in practice);
#                  perftest wants `-d rxe0 -x $STL_GID_INDEX -F`
#   STL_VM_ACTIVITY a file where SCRIPT may say what it is doing; if the VM
#                  runs into the timeout, its first 200 bytes are in the verdict
# Before SCRIPT starts: virtio_net, rdma_rxe, ib_uverbs and rdma_ucm are
# loaded (with their dependencies, as `modprobe --show-depends` lists them);
# lo and eth0 are up with the address; rxe0 (on eth0) is ACTIVE and
# has its IPv4 GID; `ulimit -l` is unlimited; the hostname is stellar-vmN (and
# /etc/hosts knows stellar-vm0/1 in two-VM mode).
#
# Filesystem in the guest: the host's / exported read-only over virtio-9p,
# with a tmpfs overlay on top: everything is writable, but writes stay in
# guest RAM and vanish at power-off.  Host files built before the run (the
# modules and binaries in the repository) are used in place, at the same
# path.  /proc, /sys, /dev are the guest's own, /dev/pts, /dev/shm and /run
# are fresh.  /tmp is NOT a tmpfs: it is the host's /tmp through the overlay,
# so host files under /tmp are visible in the guest (guest writes there do
# not reach the host).  Only files written under $STL_OUT come back.  The
# root is mounted with 9p cache=loose (fast; host changes made while a VM
# runs may not be seen) - set STL_VM_9P_CACHE=none to change that.
#
# Outputs (OUTDIR/vmN/): console.log (serial console: kernel + SCRIPT output),
# script.log (SCRIPT stdout+stderr), rc (SCRIPT exit status), dmesg.log (the
# whole kernel log at the end), boot_s (guest uptime when SCRIPT started),
# boot-steps (guest set-up timings), job.env and qemu.cmd (what was run), plus
# whatever SCRIPT put in $STL_OUT.
#
# The run fails (exit status non-zero; the reason and the last 150 console
# lines of the offending VM are printed) when, in this order of precedence:
#   124   a VM ran into the timeout (hang).  15 s before the limit the guest
#         dumps blocked tasks and CPU backtraces (sysrq w, l) to the console;
#   N     SCRIPT exited with status N != 0;
#   1     the kernel log shows an oops, BUG, WARNING, general protection fault,
#         "Call Trace", list corruption, refcount_t error, hung task, soft or
#         hard lockup, RCU stall, UBSAN/KASAN report or panic; or the guest
#         never reported an exit status (set-up failure, crash).  Set
#         STL_VM_IGNORE_RE to an ERE matching kernel lines a test provokes on
#         purpose.
# With two VMs, once one VM has failed the other gets STL_VM_PEER_GRACE
# seconds (default 30) to finish, then it is stopped.  2 means the harness
# itself could not run (bad usage, missing tools).
# A VM whose guest has not started SCRIPT STL_VM_BOOT_LIMIT seconds (default
# 240; a boot takes ~10 s) after QEMU started hung while booting: it is
# stopped, and every VM boots again, once (as after a kernel that died
# while booting, below).
#
# Other environment: KVER (kernel version; default from scripts/kver.sh),
# STL_VM_APPEND (extra kernel command line, e.g. "dyndbg=module stellar +p").
# STL_VM_CPU: QEMU's -cpu (default qemu64,-cx16).  The plain x86-64 model,
# not "max": with max the guest kernel sees ERMS/FSRM and copies with
# REP MOVSB/STOSB, which TCG runs a byte at a time; with qemu64 it copies
# with REP MOVSQ.  Measured in one guest (Debian 12's 6.1, idle host):
# 2 GB from /dev/zero 0.56 s against 3.7 s, rxe's loopback ib_write_bw
# 64 KiB 79 MB/s against 34, a fork 3.6 ms against 5.6, python3's start
# 10% less.  Debian's userspace and both test kernels need nothing beyond
# x86-64.  CMPXCHG16B is hidden from
# the guest: Debian 12's QEMU (7.2) computes EFLAGS in its CMPXCHG16B helper
# from a lazy flags state the translator has not written back, so the
# guest's flags can take the bits of an unrelated register; kernel 6.12's
# SLUB runs CMPXCHG16B on every allocation, and the next interrupt return
# double-faulted (seen in rxe's requester, EFLAGS = a slab pointer | 0x202).
# Without CX16 the kernel's SLUB takes its locked path instead.
# Every STL_FUZZ_*, STL_SCENARIO_*, STL_LC_* and STL_BENCH_* variable is
# exported to SCRIPT as it is here (STL_SCENARIO_SKIP: see tests/kernel/lib.sh;
# STL_LC_ITER: tests/kernel/scenarios/20-lifecycle.sh; STL_BENCH_*:
# tests/bench/perf-guest.sh).
#
# Another kernel (the debug kernel of scripts/debug-kernel.sh):
#   STL_VM_KERNEL=FILE  boot FILE (a bzImage, or a vmlinux with a PVH entry
#               point: not for a KASAN kernel, whose PVH entry runs
#               instrumented code before the shadow exists) instead of the
#               distribution kernel.  KVER then
#               defaults to the release in the object tree FILE lies in
#               (DIR/include/config/kernel.release).  Every module stage 1
#               and stage 2 load must be built into that kernel: the guest
#               gets /lib/modules/KVER/ with its modules.builtin* (depmod
#               run on the host), so `modprobe rdma_rxe` and the like
#               succeed as no-ops, and build -> the object tree (for
#               `make -C /lib/modules/$(uname -r)/build M=...`).  The kernel
#               log buffer is 4 MiB (log_buf_len) so lockdep/KASAN reports
#               are not lost, and KASAN reports every bug, not only the
#               first (kasan_multi_shot; lockdep still stops after its
#               first report).  E.g.:
#     eval "$(scripts/debug-kernel.sh)"
#     scripts/build-module.sh "$release" "$objtree"
#     STL_VM_KERNEL=$image scripts/vm.sh -t 2400 tests/kernel/vm-one.sh
#
# How it works.  Cached in build/vm/ (rebuilt when the kernel or this
# script changes; keyed on KVER): an initramfs (static busybox, the modules
# needed to mount the root, and a copy of this script), and the uncompressed kernel
# (vmlinux, booted through its PVH entry point: no decompression under TCG;
# falls back to /boot/vmlinuz when that is not possible).  Stage 1 (/init,
# busybox) loads virtio_pci, 9pnet_virtio, 9p, overlay, mounts the host root
# and the overlay, moves /proc /sys /dev, mounts /dev/pts /dev/shm /run and
# the results export, and switch_roots to "bash vm.sh --guest" (stage 2,
# guest_main below, as PID 1).  Stage 2 brings up eth0 and rxe0, runs SCRIPT,
# saves the results and powers off with sysrq o.  The kernel does not panic
# on oops; the host scans the console and dmesg.log instead.

set -euo pipefail

SELF=$(realpath "${BASH_SOURCE[0]}")
SCRIPT_DIR=$(dirname "$SELF")
REPO_ROOT=$(dirname "$SCRIPT_DIR")

# Modules stage 1 needs (their dependencies are added by modprobe).
STAGE1_MODULES=(virtio_pci 9pnet_virtio 9p overlay)
# Modules stage 2 loads before SCRIPT.
GUEST_MODULES=(virtio_net rdma_rxe ib_uverbs rdma_ucm)
# 9p message size: the most 9pnet_virtio accepts (125 pages).
NINEP_MSIZE=512000
# Where stage 1 mounts the per-VM writable export, and stage 2's own files.
GUEST_DIR=/run/stellar
GUEST_OUT=$GUEST_DIR/out

# Kernel log markers that fail a run (extended regular expression).  Only
# lines carrying a printk timestamp "[    1.234567]" are considered, so that
# SCRIPT output cannot trigger them by accident.
KERNEL_ERROR_RE='Oops|BUG:|BUG [[:alnum:]_.:-]+ \(|kernel BUG|WARNING:|cut here|general protection fault|Call Trace|list_(add|del) corruption|refcount_t|blocked for more than|hung_task_timeout_secs|hung_task: blocked|UBSAN|KASAN|Kernel panic|soft lockup|hard LOCKUP|detected stall|detected stalls|unable to handle'

log() { printf 'vm.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

# Print the header comment (full help).
usage() {
	sed -n '4,/^$/s/^# \{0,1\}//p' "$SELF"
}

usage_error() {
	echo "usage: $(sed -n '8s/^# *//p' "$SELF")  (-h: help)" >&2
	exit 2
}

###########################################################################
# Guest side (stage 2): runs as PID 1 inside the VM.  Every external
# command costs ~50-100 ms under TCG, so builtins are used where possible.
###########################################################################

# Print a status line on the console.
glog() { printf 'stellar-vm: %s\n' "$*"; }

# Record guest uptime at each set-up step (written to boot-steps).
STEPS=""
gstep() {
	local up
	read -r up _ </proc/uptime
	STEPS+="$up $*"$'\n'
}

# Power the VM off now.  Never returns.  A kernel without ACPI cannot
# power off: then a reboot ends QEMU (it runs with -no-reboot).
guest_poweroff() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 3
	echo b >/proc/sysrq-trigger
	sleep 60
}

# Report a set-up failure (on the console and in $GUEST_OUT/setup-error)
# and power off without an rc file: the host counts that as a failure.
guest_die() {
	trap - EXIT
	glog "SET-UP FAILED: $*"
	printf '%s\n' "$*" >"$GUEST_OUT/setup-error"
	dmesg >"$GUEST_OUT/dmesg.log"
	guest_poweroff
}

# Wait until rxe0 port 1 is ACTIVE and has the RoCEv2 GID of IPv4 address
# $1; sets STL_GID_INDEX.
guest_wait_rxe() {
	local ip=$1 want i f g t n state
	local port=/sys/class/infiniband/rxe0/ports/1
	local -a o
	# The IPv4-mapped IPv6 address as sysfs prints it: ...:ffff:0a00:020f
	IFS=. read -r -a o <<<"$ip"
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		"${o[0]}" "${o[1]}" "${o[2]}" "${o[3]}"
	for ((i = 0; i < 300; i++)); do
		state=""
		read -r state <"$port/state" 2>/dev/null
		if [[ $state == *ACTIVE* ]]; then
			for f in "$port"/gids/*; do
				g="" t=""
				read -r g <"$f" 2>/dev/null
				[[ $g == "$want" ]] || continue
				n=${f##*/}
				read -r t <"$port/gid_attrs/types/$n" 2>/dev/null
				if [[ $t == "RoCE v2" ]]; then
					STL_GID_INDEX=$n
					return 0
				fi
			done
		fi
		sleep 0.1
	done
	return 1
}

# Load GUEST_MODULES.  The host resolved them with `modprobe --show-depends`
# into STL_INSMOD ("FILE [OPTIONS]" lines, dependencies first); static
# busybox insmod runs them several times faster than modprobe under TCG.
# modprobe remains the fallback.
guest_load_modules() {
	local line name
	local -a w
	if [[ -x /bin/busybox && ${#STL_INSMOD[@]} -gt 0 ]]; then
		for line in "${STL_INSMOD[@]}"; do
			read -r -a w <<<"$line"
			name=${w[0]##*/}
			name=${name%%.ko*}
			[[ -d /sys/module/${name//-/_} ]] && continue
			/bin/busybox insmod "${w[@]}" || break
		done
		for name in "${GUEST_MODULES[@]}"; do
			[[ -d /sys/module/$name ]] || break
		done
		[[ -d /sys/module/$name ]] && return 0
	fi
	modprobe -a "${GUEST_MODULES[@]}"
}

# Shortly before the host's timeout, dump where the guest is stuck.
guest_watchdog() {
	local limit=$1 up
	((limit > 40)) || return 0
	read -r up _ </proc/uptime
	up=${up%.*}
	if ((limit - 15 - up > 0)); then
		sleep $((limit - 15 - up))
	fi
	# The host ignores kernel errors logged after this line.
	echo "<4>stellar-vm: timeout is near: dumping blocked tasks and CPU backtraces" >/dev/kmsg
	# what SCRIPT said it was doing (STL_VM_ACTIVITY), for the host's verdict
	[[ -s $STL_VM_ACTIVITY ]] &&
		echo "<4>stellar-vm: running: $(head -c 200 "$STL_VM_ACTIVITY")" >/dev/kmsg
	echo 8 >/proc/sys/kernel/printk
	echo w >/proc/sysrq-trigger
	echo l >/proc/sysrq-trigger
	sleep 2
	dmesg >"$GUEST_OUT/dmesg.log"
	sync
}

guest_main() {
	local rc fifo teepid spid i up
	# PID 1 must not just exit (that panics the kernel): report instead.
	set +e
	trap 'guest_die "stage 2 stopped unexpectedly (line $LINENO)"' EXIT
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	export HOME=/root LANG=C.UTF-8
	cd /
	gstep "stage 2 started"

	# Stage 1 mounted everything, the results export included.
	[[ -r $GUEST_OUT/job.env ]] || guest_die "no job.env in the results export"
	STL_PEER_IP="" STL_INSMOD=() STL_TIMEOUT=600 STL_MODDIR=""
	# shellcheck source=/dev/null
	source "$GUEST_OUT/job.env"
	export STL_VM_INDEX STL_NVMS STL_MY_IP STL_PEER_IP STL_REPO
	export STL_OUT=$GUEST_OUT STL_NETDEV=eth0 STL_RXE=rxe0
	export STL_VM_ACTIVITY=/run/stellar-vm-activity
	guest_watchdog "$STL_TIMEOUT" &

	echo "stellar-vm$STL_VM_INDEX" >/proc/sys/kernel/hostname
	if ((STL_NVMS > 1)); then
		for ((i = 0; i < STL_NVMS; i++)); do
			printf '10.0.0.%d\tstellar-vm%d\n' $((i + 1)) "$i"
		done >>/etc/hosts
	fi
	ulimit -l unlimited

	# A kernel with its modules built in: its /lib/modules/KVER (in the
	# overlay: nothing reaches the host).
	if [[ -n $STL_MODDIR ]]; then
		read -r i </proc/sys/kernel/osrelease
		if ! { mkdir -p /lib/modules && rm -rf "/lib/modules/$i" &&
			cp -a "$STL_MODDIR" "/lib/modules/$i"; }; then
			guest_die "could not set up /lib/modules/$i"
		fi
		gstep "/lib/modules/$i set up"
	fi
	guest_load_modules || guest_die "could not load ${GUEST_MODULES[*]}"
	gstep "loaded ${GUEST_MODULES[*]}"
	printf '%s\n' "link set lo up" "link set eth0 up" \
		"addr add $STL_MY_IP/24 dev eth0" | ip -batch - ||
		guest_die "could not configure eth0"
	gstep "eth0 up"
	rdma link add rxe0 type rxe netdev eth0 || guest_die "rdma link add rxe0"
	gstep "rdma link add rxe0"
	guest_wait_rxe "$STL_MY_IP" ||
		guest_die "rxe0 not ACTIVE with an IPv4 RoCEv2 GID after 30 s"
	export STL_GID_INDEX
	gstep "rxe0 ACTIVE, GID index $STL_GID_INDEX"

	printf '%s' "$STEPS" >"$STL_OUT/boot-steps"
	read -r up _ </proc/uptime
	echo "$up" >"$STL_OUT/boot_s"
	glog "ready after $up s: running ${STL_CMD[*]}"

	# SCRIPT output goes through a fifo to tee (console + script.log).  The
	# script's own exit is awaited, not EOF on the pipe: background
	# processes it leaves behind may keep the pipe open.
	cd "$STL_REPO" || guest_die "no $STL_REPO in the guest"
	fifo=$GUEST_DIR/script.fifo
	mkfifo "$fifo"
	tee "$STL_OUT/script.log" <"$fifo" &
	teepid=$!
	bash "${STL_CMD[@]}" </dev/null >"$fifo" 2>&1 &
	spid=$!
	wait "$spid"
	rc=$?
	for ((i = 0; i < 20; i++)); do
		kill -0 "$teepid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$teepid" 2>/dev/null
	cd /

	glog "script exited with status $rc"
	dmesg >"$STL_OUT/dmesg.log"
	echo "$rc" >"$STL_OUT/rc.tmp" && mv "$STL_OUT/rc.tmp" "$STL_OUT/rc"
	guest_poweroff
}

###########################################################################
# Host side.
###########################################################################

# Print the path of a kernel image for $KVER that QEMU boots fastest: the
# uncompressed vmlinux (PVH entry point) cached in build/vm/, else the
# bzImage from /boot.
kernel_image() {
	local bz=/boot/vmlinuz-$KVER dir=$REPO_ROOT/build/vm
	local out=$dir/vmlinux-$KVER tmp magic off
	local -A cmd=([xz]='xz -dc --single-stream' [gzip]='gzip -dc'
		[zstd]='zstd -qdc')
	local -A pat=([xz]='\xfd7zXZ\x00' [gzip]='\x1f\x8b\x08' [zstd]='\x28\xb5\x2f\xfd')

	if [[ -s $out && $out -nt $bz ]]; then
		printf '%s\n' "$out"
		return 0
	fi
	if command -v readelf >/dev/null 2>&1; then
		mkdir -p "$dir"
		tmp=$(mktemp "$dir/.vmlinux.XXXXXX")
		# The compressed payload starts at the first offset where a
		# decompressor accepts the data and yields an ELF file.
		for magic in xz zstd gzip; do
			command -v "${cmd[$magic]%% *}" >/dev/null 2>&1 || continue
			while read -r off; do
				tail -c +$((off + 1)) "$bz" | ${cmd[$magic]} >"$tmp" 2>/dev/null ||
					true
				[[ $(head -c 4 "$tmp" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] &&
					break 2
			done < <(LC_ALL=C grep -obUaP "${pat[$magic]}" "$bz" | cut -d: -f1 | head -n 8)
		done
		# PVH entry point: ELF note XEN_ELFNOTE_PHYS32_ENTRY (18).
		if LC_ALL=C readelf -n "$tmp" 2>/dev/null |
			grep -E 'Xen.*(type: \(0x00000012\)|PHYS32_ENTRY)' >/dev/null; then
			chmod 0644 "$tmp"
			mv -f "$tmp" "$out"
			printf '%s\n' "$out"
			return 0
		fi
		rm -f "$tmp"
	fi
	log "note: booting the compressed $bz (slower: no PVH vmlinux)"
	printf '%s\n' "$bz"
}

# For STL_VM_KERNEL: print the object tree its image $1 lies in (the
# directory with include/config/kernel.release, at most 3 levels up).
kernel_objtree() {
	local d n
	d=$(dirname "$1")
	for ((n = 0; n < 4; n++)); do
		if [[ -f $d/include/config/kernel.release ]]; then
			printf '%s\n' "$d"
			return 0
		fi
		d=$(dirname "$d")
	done
	return 1
}

# For STL_VM_KERNEL: build (or reuse) build/vm/modules-$KVER/, a depmod base
# directory whose lib/modules/$KVER/ has the kernel's modules.builtin* and
# build -> the object tree $1; prints the base directory.
builtin_moddir() {
	local obj=$1 base=$REPO_ROOT/build/vm/modules-$KVER tmp d f
	d=$base/lib/modules/$KVER
	if [[ -s $d/modules.builtin.bin && $d/modules.builtin.bin -nt $obj/modules.builtin &&
		$(readlink "$d/build") == "$obj" ]]; then
		printf '%s\n' "$base"
		return 0
	fi
	for f in modules.builtin modules.builtin.modinfo; do
		[[ -f $obj/$f ]] || die "STL_VM_KERNEL: no $obj/$f"
	done
	command -v depmod >/dev/null 2>&1 || die "depmod not found (run scripts/deps.sh)"
	mkdir -p "$REPO_ROOT/build/vm"
	tmp=$(mktemp -d "$REPO_ROOT/build/vm/.modules.XXXXXX")
	d=$tmp/lib/modules/$KVER
	mkdir -p "$d"
	cp "$obj/modules.builtin" "$obj/modules.builtin.modinfo" "$d/"
	: >"$d/modules.order"
	ln -s "$obj" "$d/build"
	depmod -b "$tmp" "$KVER" || die "depmod -b $tmp $KVER failed"
	chmod 0755 "$tmp"
	rm -rf "$base"
	mv "$tmp" "$base"
	printf '%s\n' "$base"
}

# Is module $1 built into the STL_VM_KERNEL kernel?
is_builtin() {
	local out
	out=$(modprobe -d "$MODBASE" -S "$KVER" --show-depends "$1" 2>/dev/null) || return 1
	[[ $out == "builtin "* ]]
}

# Build (or reuse) the initramfs for $KVER and this version of the script;
# prints its path.
build_initramfs() {
	local dir=$REPO_ROOT/build/vm hash out stage m f dst deps n=0
	local -a mods=()

	hash=$(sha256sum "$SELF" | cut -c1-12)
	out=$dir/initramfs-$KVER-$hash.cpio
	if [[ -s $out ]]; then
		printf '%s\n' "$out"
		return 0
	fi
	log "building $out"
	f=$(command -v busybox) || die "busybox not found (run scripts/deps.sh)"
	if command -v readelf >/dev/null 2>&1 &&
		readelf -l "$f" 2>/dev/null | grep 'program interpreter' >/dev/null; then
		die "$f is dynamically linked; install busybox-static"
	fi

	mkdir -p "$dir"
	stage=$(mktemp -d "$dir/.initramfs.XXXXXX")
	mkdir -p "$stage"/{bin,dev,proc,sys,lower,rw,newroot,modules}
	cp "$f" "$stage/bin/busybox"
	cp "$SELF" "$stage/vm.sh"

	# Module files in load order, each once.  A kernel of STL_VM_KERNEL
	# has them built in: none to load; a module built into a distribution
	# kernel (virtio_pci on 6.12) needs no file.
	for m in "${STAGE1_MODULES[@]}"; do
		if [[ -n $MODBASE ]]; then
			is_builtin "$m" || die "STL_VM_KERNEL: $m is not built into $KVER"
			continue
		fi
		deps=$(modprobe -S "$KVER" --show-depends "$m" 2>/dev/null) ||
			die "modprobe -S $KVER --show-depends $m failed (no such module?)"
		while read -r f; do
			[[ " ${mods[*]} " == *" $f "* ]] || mods+=("$f")
		done < <(awk '$1 == "insmod" { print $2 }' <<<"$deps")
	done
	for f in "${mods[@]}"; do
		dst=$stage/modules/$(printf '%02d' $n)-$(basename "${f%%.ko*}").ko
		case $f in
		*.ko)		cp "$f" "$dst" ;;
		*.ko.xz)	xz -dc "$f" >"$dst" ;;
		*.ko.gz)	gzip -dc "$f" >"$dst" ;;
		*.ko.zst)	zstd -qdc "$f" >"$dst" ;;
		*)		die "unknown module file type: $f" ;;
		esac
		n=$((n + 1))
	done

	# Stage 1.  The cache mode of the root is a kernel parameter
	# (stl_9p_cache=...; parameters without a dot reach init as
	# environment variables).
	cat >"$stage/init" <<EOF
#!/bin/busybox sh
# Stellar test VM, stage 1: mount the host root read-only under a tmpfs
# overlay, plus the results export, and switch into it.
bb=/bin/busybox
\$bb mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
\$bb mount -t proc proc /proc
\$bb mount -t sysfs sys /sys
k=/dev/kmsg
mark() { echo "<6>stellar-vm: stage 1: \$*" >\$k; }
mark "started"
fail() {
	echo "stellar-vm: stage 1 failed: \$*"
	echo o >/proc/sysrq-trigger || echo o >/newroot/proc/sysrq-trigger
	\$bb sleep 3
	echo b >/proc/sysrq-trigger || echo b >/newroot/proc/sysrq-trigger
	\$bb sleep 60
}
for m in /modules/*.ko; do
	[ -e "\$m" ] || continue
	\$bb insmod "\$m" || fail "insmod \$m"
done
mark "modules loaded"
n=/newroot
\$bb mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=$NINEP_MSIZE,cache=\${stl_9p_cache:-loose} \\
	hostroot /lower || fail "mount the host root (9p)"
\$bb mount -t tmpfs -o mode=0755 rw /rw || fail "mount tmpfs"
\$bb mkdir -p /rw/upper /rw/work
\$bb mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \\
	overlay \$n || fail "mount overlay"
mark "root mounted"
for d in dev proc sys; do
	\$bb mount --move /\$d \$n/\$d || fail "move /\$d"
done
k=\$n/dev/kmsg
# Fresh /dev/pts, /dev/shm (devtmpfs has neither) and /run; the results.
\$bb mkdir -p \$n/dev/pts \$n/dev/shm
\$bb mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts \$n/dev/pts ||
	fail "mount devpts"
\$bb mount -t tmpfs -o mode=1777 shm \$n/dev/shm || fail "mount /dev/shm"
\$bb mount -t tmpfs -o mode=0755 run \$n/run || fail "mount /run"
\$bb mkdir -p \$n$GUEST_OUT
\$bb mount -t 9p -o trans=virtio,version=9p2000.L,msize=$NINEP_MSIZE \\
	stlout \$n$GUEST_OUT || fail "mount the results export (9p)"
# Stage 2 is the copy of vm.sh made with this initramfs.
\$bb cp /vm.sh \$n$GUEST_DIR/vm.sh
[ -x \$n/bin/bash ] || fail "no /bin/bash in the host root"
mark "switching root"
exec \$bb switch_root \$n /bin/bash $GUEST_DIR/vm.sh --guest
fail "switch_root"
EOF
	chmod 0755 "$stage/init" "$stage/bin/busybox"

	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc --quiet -R 0:0) >"$stage.cpio"
	mv -f "$stage.cpio" "$out"
	rm -rf "$stage"
	# Drop initramfs images of older versions of this script.
	find "$dir" -maxdepth 1 -name "initramfs-$KVER-*.cpio" ! -newer "$out" \
		! -name "${out##*/}" -mmin +10 -delete 2>/dev/null || true
	printf '%s\n' "$out"
}

# GUEST_MODULES and their dependencies as "FILE [OPTIONS]" words for a bash
# array, in load order, each once.  Busybox insmod cannot read compressed
# modules (6.12 ships .ko.xz): those are decompressed once into
# build/vm/modules-$KVER/ and loaded from there.
insmod_plan() {
	local m f rest plain dir=$REPO_ROOT/build/vm/modules-$KVER
	if [[ -n $MODBASE ]]; then
		# Built in: the guest's modprobe finds them in modules.builtin.
		for m in "${GUEST_MODULES[@]}"; do
			is_builtin "$m" || die "STL_VM_KERNEL: $m is not built into $KVER"
		done
		return 0
	fi
	for m in "${GUEST_MODULES[@]}"; do
		modprobe -S "$KVER" --show-depends "$m" 2>/dev/null || true
	done | awk '$1 == "insmod" && !seen[$2]++ { $1 = ""; sub(/^ +/, ""); sub(/ +$/, ""); print }' |
		while read -r f rest; do
			plain=$dir/$(basename "${f%.ko*}").ko
			case $f in
			*.ko.xz | *.ko.gz | *.ko.zst)
				if [[ ! -s $plain || $f -nt $plain ]]; then
					mkdir -p "$dir"
					case $f in
					*.xz) xz -dc "$f" ;;
					*.gz) gzip -dc "$f" ;;
					*) zstd -qdc "$f" ;;
					esac >"$plain.tmp" && mv -f "$plain.tmp" "$plain"
				fi
				[[ -s $plain ]] && f=$plain
				;;
			esac
			printf '%q ' "$f${rest:+ $rest}"
		done
}

# Kernel messages in FILE matching KERNEL_ERROR_RE (minus STL_VM_IGNORE_RE),
# up to the guest watchdog's own dump.
kernel_errors() {
	local file=$1
	[[ -f $file ]] || return 0
	sed '/stellar-vm: timeout is near/q' "$file" |
		grep -aE '\[ *[0-9]+\.[0-9]{6}\] ' | grep -aE "$KERNEL_ERROR_RE" |
		if [[ -n ${STL_VM_IGNORE_RE:-} ]]; then
			grep -avE "$STL_VM_IGNORE_RE"
		else
			cat
		fi || true
}

# Is the QEMU of VM $1 still running?
vm_running() { [[ ! -e $OUTDIR/vm$1/qemu.status ]]; }

# Stop VM $1: SIGTERM to its QEMU, by the pid QEMU wrote.
vm_stop() {
	local pid=""
	vm_running "$1" || return 0
	pid=$(cat "$OUTDIR/vm$1/qemu.pid" 2>/dev/null) || true
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null || true
	fi
}

cleanup() {
	local i
	for ((i = 0; i < ${NVMS:-0}; i++)); do
		vm_stop "$i"
	done
	if [[ -n ${SOCKDIR:-} ]]; then
		rm -rf "$SOCKDIR"
	fi
}

# Start VM $1 in the background: QEMU under `timeout`, its serial console
# (CR and terminal escapes removed) into console.log and, unless quiet, to
# stdout (prefixed "[vmN] " with two VMs).
vm_start() {
	local i=$1 dir=$OUTDIR/vm$1 net prefix=""
	local -a qemu mon=()
	local clean='s/\r//g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g'

	if ((NVMS > 1)); then
		prefix="[vm$i] "
	fi
	if ((NVMS == 1)); then
		net="user,id=n0"
	else
		net="stream,id=n0,server=$( ((i == 0)) && echo on || echo off),addr.type=unix,addr.path=$SOCK"
		# A QMP monitor on a pair of fifos, for qmp_net_dump().
		rm -f "$SOCKDIR/qmp$i.in" "$SOCKDIR/qmp$i.out"
		mkfifo "$SOCKDIR/qmp$i.in" "$SOCKDIR/qmp$i.out"
		mon=(-chardev "pipe,id=qmp,path=$SOCKDIR/qmp$i" -mon chardev=qmp,mode=control)
	fi
	qemu=(qemu-system-x86_64
		-accel tcg -cpu "$CPU" -machine pc
		-nographic -nodefaults -no-user-config -no-reboot
		-serial stdio
		-m "$MEM" -smp "$SMP"
		-kernel "$KERNEL" -initrd "$INITRAMFS" -append "$CMDLINE"
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=$dir,mount_tag=stlout,security_model=none,multidevs=remap"
		-netdev "$net"
		-device "virtio-net-pci,id=nic0,netdev=n0,mac=52:54:00:5e:00:0$((i + 1)),speed=10000,duplex=full,romfile="
		"${mon[@]}"
		-pidfile "$dir/qemu.pid"
	)
	printf '%q ' "${qemu[@]}" >"$dir/qemu.cmd"
	echo >>"$dir/qemu.cmd"
	(
		set +e +o pipefail
		if [[ $QUIET == 1 ]]; then
			timeout -k 10 "$TIMEOUT" "${qemu[@]}" </dev/null 2>&1 |
				sed -u "$clean" >"$dir/console.log"
		else
			timeout -k 10 "$TIMEOUT" "${qemu[@]}" </dev/null 2>&1 |
				sed -u "$clean" | tee "$dir/console.log" | sed -u "s/^/$prefix/"
		fi
		echo "${PIPESTATUS[0]}" >"$dir/qemu.status"
	) &
}

# Two VMs: append to vmN/qemu-net.log, for each running VM, what its QEMU
# holds of the link: the netdev and NIC (info network) and both virtqueues
# of the NIC (0 receive, 1 transmit) as QEMU sees them, with the guest's own
# avail index.  Asked for by a guest (a file net-dump in its output, whose
# text says why) when the link looks dead: it tells a guest that stopped
# giving buffers or kicking from a QEMU that stopped taking them.
qmp_net_dump() {
	local why=$1 i q dev=/machine/peripheral/nic0/virtio-backend
	for ((i = 0; i < NVMS; i++)); do
		vm_running "$i" || continue
		{
			echo "=== $(date +%T) vm$i, asked for by $why"
			{
				echo '{"execute":"qmp_capabilities"}'
				echo '{"execute":"human-monitor-command","arguments":{"command-line":"info network"}}'
				for q in 0 1; do
					printf '{"execute":"x-query-virtio-queue-status","arguments":{"path":"%s","queue":%d}}\n' "$dev" "$q"
					printf '{"execute":"x-query-virtio-queue-element","arguments":{"path":"%s","queue":%d}}\n' "$dev" "$q"
				done
			} | timeout 2 tee "$SOCKDIR/qmp$i.in" >/dev/null
			timeout 2 cat "$SOCKDIR/qmp$i.out"
			echo
		} >>"$OUTDIR/vm$i/qemu-net.log" 2>&1 || true
	done
	if command -v ss >/dev/null; then
		echo "=== $(date +%T) the socket between the QEMUs (ss -x)"
		ss -xp 2>&1 | grep -F "$SOCK" || echo "(no socket $SOCK)"
	fi >>"$OUTDIR/vm0/qemu-net.log" 2>&1 || true
}

# Judge VM $1 after it stopped: sets REASON (empty when fine), CODE and
# KERNEL_ERRS.
vm_verdict() {
	local dir=$OUTDIR/vm$1 status rc act
	local -a why=()
	CODE=0
	status=$(cat "$dir/qemu.status" 2>/dev/null || echo 255)
	rc=$(cat "$dir/rc" 2>/dev/null || true)
	KERNEL_ERRS=$(
		{
			kernel_errors "$dir/console.log"
			kernel_errors "$dir/dmesg.log"
		} | awk '!seen[$0]++'
	)
	if [[ $status == 124 || $status == 137 ]]; then
		why+=("timed out after $TIMEOUT s (hang?)")
		act=$(grep -a -m1 -o 'stellar-vm: running: .*' "$dir/console.log" 2>/dev/null)
		[[ -z $act ]] || why+=("${act#stellar-vm: }")
		if grep -q 'stellar-vm: timeout is near' "$dir/console.log"; then
			why+=("blocked tasks and CPU backtraces are at the end of the console log")
		fi
		CODE=124
	elif [[ -e $dir/boot-hung ]]; then
		why+=("the guest did not start within $BOOT_LIMIT s (boot hung), twice")
		CODE=1
	elif [[ -e $dir/stopped-by-host ]]; then
		why+=("stopped $PEER_GRACE s after the other VM failed")
		CODE=1
	fi
	if [[ -n $rc && $rc != 0 ]]; then
		why+=("script exited with status $rc")
		((CODE != 0)) || CODE=$rc
	elif [[ -z $rc && $CODE == 0 ]]; then
		if [[ -s $dir/setup-error ]]; then
			why+=("guest set-up failed: $(cat "$dir/setup-error")")
		else
			why+=("no exit status from the guest (QEMU exit status $status)")
		fi
		CODE=1
	fi
	if [[ -n $KERNEL_ERRS ]]; then
		why+=("kernel errors in the log")
		((CODE != 0)) || CODE=1
	fi
	REASON=""
	if ((${#why[@]} > 0)); then
		REASON=$(printf '%s; ' "${why[@]}")
		REASON=${REASON%; }
	fi
}

# Stop VM $1 if its guest has not started the script (no boot_s) BOOT_LIMIT
# seconds after this attempt's start (seen once: the debug kernel stuck at
# 0.17 s, after a failed TSC calibration on a loaded host); boot_died() then
# boots every VM again.
boot_hung() {
	local dir=$OUTDIR/vm$1
	[[ -e $dir/boot_s || -e $dir/boot-hung ]] && return 0
	(($(date +%s) - VM_T0 >= BOOT_LIMIT)) || return 0
	touch "$dir/boot-hung"
	log "vm$1: the guest has not started $BOOT_LIMIT s after QEMU did: stopping it"
	vm_stop "$1"
}

# Did a VM's kernel die or hang while booting, before the guest side started
# the script (no boot_s) and before Stellar was loaded?  That is the
# distribution kernel under TCG (seen once: an int3 Oops in
# sched_clock_idle_wakeup_event at 4 s, 6.12), not the code under test: boot
# every VM again, once, keeping the first console log as console-boot1.log.
boot_died() {
	local i dir died=""
	for ((i = 0; i < NVMS; i++)); do
		dir=$OUTDIR/vm$i
		[[ -e $dir/boot_s ]] && continue
		if [[ -e $dir/boot-hung ]]; then
			died+=" vm$i"
			continue
		fi
		grep -qE 'Kernel panic|Oops:' "$dir/console.log" 2>/dev/null || continue
		grep -q 'Modules linked in:.*stellar' "$dir/console.log" && continue
		died+=" vm$i"
	done
	[[ -n $died ]] || return 1
	log "kernel of$died died or hung while booting, before the test started: booting again (once)"
	for ((i = 0; i < NVMS; i++)); do
		dir=$OUTDIR/vm$i
		mv -f "$dir/console.log" "$dir/console-boot1.log" 2>/dev/null
		rm -f "$dir"/{script.log,rc,rc.tmp,dmesg.log,boot_s,boot-steps} \
			"$dir"/{setup-error,qemu.pid,qemu.status,qemu.cmd,stopped-by-host,boot-hung}
	done
	[[ -z ${SOCKDIR:-} ]] || rm -f "$SOCK"
	return 0
}

host_main() {
	local opt i w m dir script running total boot objtree attempt
	local t0 t1 now first_fail_t="" failed=0 code=0 reason=""
	NVMS=${STL_VM_NVMS:-1}
	TIMEOUT=${STL_VM_TIMEOUT:-600}
	MEM=${STL_VM_MEM:-2048}
	CPU=${STL_VM_CPU:-qemu64,-cx16}
	QUIET=${STL_VM_QUIET:-0}
	PEER_GRACE=${STL_VM_PEER_GRACE:-30}
	BOOT_LIMIT=${STL_VM_BOOT_LIMIT:-240}
	OUTDIR=""
	while getopts ':n:t:m:o:qh' opt; do
		case $opt in
		n) NVMS=$OPTARG ;;
		t) TIMEOUT=$OPTARG ;;
		m) MEM=$OPTARG ;;
		o) OUTDIR=$OPTARG ;;
		q) QUIET=1 ;;
		h) usage; exit 0 ;;
		:) die "-$OPTARG needs a value" ;;
		*) usage_error ;;
		esac
	done
	shift $((OPTIND - 1))
	[[ $# -ge 1 ]] || usage_error
	[[ $NVMS == 1 || $NVMS == 2 ]] || die "-n must be 1 or 2"
	[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "bad timeout: $TIMEOUT"
	[[ $MEM =~ ^[1-9][0-9]*$ ]] || die "bad memory size: $MEM"
	[[ $PEER_GRACE =~ ^[0-9]+$ ]] || die "bad STL_VM_PEER_GRACE: $PEER_GRACE"
	[[ $BOOT_LIMIT =~ ^[1-9][0-9]*$ ]] || die "bad STL_VM_BOOT_LIMIT: $BOOT_LIMIT"
	command -v qemu-system-x86_64 >/dev/null 2>&1 ||
		die "qemu-system-x86_64 not found (run scripts/deps.sh)"

	script=$(realpath -e "$1" 2>/dev/null) || die "no such script: $1"
	shift
	[[ -f $script ]] || die "not a file: $script"
	case $script/ in
	/proc/* | /sys/* | /dev/* | /run/*)
		die "$script is hidden in the guest (/proc /sys /dev /run are the guest's own)" ;;
	esac

	MODBASE=""
	if [[ -n ${STL_VM_KERNEL:-} ]]; then
		KERNEL=$(realpath -e "$STL_VM_KERNEL" 2>/dev/null) ||
			die "STL_VM_KERNEL: no such file: $STL_VM_KERNEL"
		objtree=$(kernel_objtree "$KERNEL") ||
			die "STL_VM_KERNEL: $KERNEL is not in a kernel object tree"
		if [[ -z ${KVER:-} ]]; then
			KVER=$(cat "$objtree/include/config/kernel.release")
		fi
		MODBASE=$(builtin_moddir "$objtree")
	else
		KVER=$("$SCRIPT_DIR/kver.sh") || exit 2
		for m in "${GUEST_MODULES[@]}"; do
			modprobe -S "$KVER" --show-depends "$m" >/dev/null 2>&1 ||
				die "kernel $KVER has no module $m"
		done
		KERNEL=$(kernel_image)
	fi
	INITRAMFS=$(build_initramfs)
	INSMOD=$(insmod_plan)
	# Two VMs: one vCPU each, but room for two (maxcpus).  With a single
	# possible vCPU, QEMU 7.2's TCG drops the guest's memory barriers
	# (a translation is "parallel" only when max_cpus > 1; QEMU 8.1 always
	# emits them), yet QEMU's main loop reads the virtio rings at the same
	# time: the guest's "publish the avail index, then read avail_event"
	# and QEMU's "write avail_event, then re-read the index" can both read
	# the old value, and a kick is lost for good.  Seen as the link between
	# the two VMs dying under load: a transmit queue the guest filled that
	# QEMU never looked at again (NETDEV WATCHDOG in the guest; QMP showed
	# the guest's avail index 238 entries past QEMU's last).
	SMP=1,maxcpus=2
	if ((NVMS == 1)); then
		SMP=2
	fi
	SMP=${STL_VM_SMP:-$SMP}
	# Console: kernel warnings (level 4) and worse, with timestamps.  No
	# panic on oops: the host scans the log.  panic=-1 and -no-reboot make
	# QEMU exit at once on a panic.
	CMDLINE="console=ttyS0 loglevel=5 printk.time=1 panic=-1 cryptomgr.notests acpi=noirq"
	if [[ -n $MODBASE ]]; then
		CMDLINE+=" log_buf_len=4M kasan_multi_shot"
	fi
	if [[ $SMP == 1,* ]]; then
		# One vCPU that the kernel counts as two possible ones: it
		# would take the TSC for unsynchronized (a non-Intel CPU
		# without constant_tsc) and keep time with the emulated HPET,
		# slow enough under load that perftest's clock calibration
		# fails (its bandwidth reads 0.00).  One online vCPU has
		# nothing to be out of sync with.
		CMDLINE+=" tsc=reliable"
	fi
	CMDLINE+=" stl_9p_cache=${STL_VM_9P_CACHE:-loose} ${STL_VM_APPEND:-}"

	if [[ -z $OUTDIR ]]; then
		OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/stellar-vm.XXXXXX")
	fi
	mkdir -p "$OUTDIR"
	OUTDIR=$(realpath "$OUTDIR")
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	log "kernel $KVER ($KERNEL), $NVMS VM(s), timeout ${TIMEOUT}s, output in $OUTDIR"

	if ((NVMS > 1)); then
		# A unix socket path must be short (108 bytes): not under OUTDIR.
		SOCKDIR=$(mktemp -d /tmp/stellar-net.XXXXXX)
		SOCK=$SOCKDIR/sock
	fi

	for ((i = 0; i < NVMS; i++)); do
		dir=$OUTDIR/vm$i
		mkdir -p "$dir"
		rm -f "$dir"/{console.log,script.log,rc,rc.tmp,dmesg.log,boot_s,boot-steps} \
			"$dir"/{job.env,setup-error,qemu.pid,qemu.status,qemu.cmd,stopped-by-host,boot-hung} \
			"$dir"/{net-dump,net-dump.taken,qemu-net.log}
		{
			echo "# Stellar VM job, read by the guest side of scripts/vm.sh"
			printf 'STL_VM_INDEX=%d\n' "$i"
			printf 'STL_NVMS=%d\n' "$NVMS"
			if ((NVMS == 1)); then
				printf 'STL_MY_IP=10.0.2.15\nSTL_PEER_IP=\n'
			else
				printf 'STL_MY_IP=10.0.0.%d\n' $((i + 1))
				printf 'STL_PEER_IP=10.0.0.%d\n' $((2 - i))
			fi
			printf 'STL_REPO=%q\n' "$REPO_ROOT"
			printf 'STL_TIMEOUT=%d\n' "$TIMEOUT"
			printf 'STL_INSMOD=(%s)\n' "$INSMOD"
			if [[ -n $MODBASE ]]; then
				printf 'STL_MODDIR=%q\n' "$MODBASE/lib/modules/$KVER"
			fi
			printf 'STL_CMD=(%s)\n' "$(printf '%q ' "$script" "$@")"
			# the fuzzer's knobs (tests/fuzz/fuzz-lib.sh), the
			# scenario filter (tests/kernel/lib.sh) and the
			# scenarios' own knobs reach the guest
			for v in ${!STL_FUZZ_@} ${!STL_SCENARIO_@} ${!STL_LC_@} ${!STL_BENCH_@} ${!STL_PVDMA_@}; do
				printf 'export %s=%q\n' "$v" "${!v}"
			done
		} >"$dir/job.env"
	done

	t0=$(date +%s.%N)
	for attempt in 1 2; do
		first_fail_t=""
		VM_T0=$(date +%s)
		for ((i = 0; i < NVMS; i++)); do
			vm_start "$i"
			if ((NVMS > 1 && i == 0)); then
				# The client side connects at start-up: wait for the socket.
				for ((w = 0; w < 100; w++)); do
					[[ -S $SOCK ]] && break
					vm_running 0 || break
					sleep 0.1
				done
				[[ -S $SOCK ]] || log "warning: vm0 did not create $SOCK"
			fi
		done

		# Wait for all VMs; once one has failed, give the others PEER_GRACE s.
		while :; do
			running=0
			for ((i = 0; i < NVMS; i++)); do
				if vm_running "$i"; then
					running=$((running + 1))
					boot_hung "$i"
				elif [[ -z $first_fail_t &&
					$(cat "$OUTDIR/vm$i/rc" 2>/dev/null || echo none) != 0 ]]; then
					first_fail_t=$(date +%s)
				fi
			done
			((running > 0)) || break
			if ((NVMS > 1)); then
				for ((i = 0; i < NVMS; i++)); do
					dir=$OUTDIR/vm$i
					[[ -e $dir/net-dump ]] || continue
					mv -f "$dir/net-dump" "$dir/net-dump.taken"
					qmp_net_dump "vm$i: $(head -c 200 "$dir/net-dump.taken")"
				done
			fi
			if [[ -n $first_fail_t ]]; then
				now=$(date +%s)
				if ((now - first_fail_t >= PEER_GRACE)); then
					for ((i = 0; i < NVMS; i++)); do
						if vm_running "$i"; then
							touch "$OUTDIR/vm$i/stopped-by-host"
							vm_stop "$i"
						fi
					done
				fi
			fi
			sleep 0.2
		done
		wait
		if ((attempt == 2)) || ! boot_died; then
			break
		fi
	done
	t1=$(date +%s.%N)
	total=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

	# Verdict.  Exit status precedence: timeout, script status, 1.
	for ((i = 0; i < NVMS; i++)); do
		vm_verdict "$i"
		boot=$(cat "$OUTDIR/vm$i/boot_s" 2>/dev/null || echo "?")
		if [[ -z $REASON ]]; then
			log "vm$i: OK (script exit status 0; ready ${boot}s after boot)"
			continue
		fi
		failed=1
		# the verdict and the kernel's errors last, where a reader of
		# the output's tail sees them
		log "vm$i: last 150 lines of $OUTDIR/vm$i/console.log:"
		tail -n 150 "$OUTDIR/vm$i/console.log" >&2 2>/dev/null || true
		log "vm$i: end of console log"
		if [[ -n $KERNEL_ERRS ]]; then
			log "vm$i: kernel error lines:"
			printf '%s\n' "$KERNEL_ERRS" | head -n 40 >&2
			# what printed the first (a bare "Call Trace:" follows
			# a line the markers do not name)
			log "vm$i: console around the first:"
			grep -aF -m 1 -B 8 -A 24 -- "$(printf '%s\n' "$KERNEL_ERRS" | head -n 1)" \
				"$OUTDIR/vm$i/console.log" >&2 2>/dev/null || true
		fi
		log "vm$i: FAILED: $REASON"
		if ((code == 0)) || { ((CODE == 124)) && ((code != 124)); } ||
			{ ((code == 1)) && ((CODE != 1)); }; then
			code=$CODE
			reason="vm$i: $REASON"
		fi
	done
	if ((failed)); then
		log "FAIL ($reason): exit $code after ${total}s; output in $OUTDIR"
		exit "$code"
	fi
	log "PASS after ${total}s; output in $OUTDIR"
}

if [[ ${1:-} == --guest ]]; then
	guest_main
else
	host_main "$@"
fi
