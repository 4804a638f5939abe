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
# The guest runs `bash SCRIPT ARGS` as root with the repository root as the
# current directory.  SCRIPT and anything it uses must be visible in the
# guest, see "Filesystem" below.  In two-VM mode both VMs run the same SCRIPT
# and it picks its role from STL_VM_INDEX.
#
# Environment seen by SCRIPT:
#   STL_VM_INDEX   0 or 1 (which VM this is)
#   STL_NVMS       1 or 2
#   STL_MY_IP      this VM's IPv4 address on eth0 (10.0.2.15 with one VM,
#                  10.0.0.1 / 10.0.0.2 with two)
#   STL_PEER_IP    the other VM's address (two-VM mode), empty with one VM
#   STL_OUT        writable directory whose contents come back to the host
#                  (OUTDIR/vmN); script.log, rc and dmesg.log also land there
#   STL_REPO       the repository root (also the current directory)
#   STL_NETDEV     eth0;  STL_RXE: rxe0
#   STL_GID_INDEX  GID index of the IPv4-mapped RoCEv2 GID of rxe0 (usually 1);
#                  perftest wants `-x $STL_GID_INDEX -F`
# Before SCRIPT starts: virtio_net, rdma_rxe, ib_uverbs and rdma_ucm are
# loaded, eth0 is up with its address, rxe0 is ACTIVE with its IPv4 GID,
# `ulimit -l` is unlimited, the hostname is stellar-vmN (and /etc/hosts knows
# stellar-vm0/1 in two-VM mode).
#
# Filesystem in the guest: the host's / exported read-only over virtio-9p,
# with a tmpfs overlay on top (so everything is writable, but writes stay in
# guest RAM and vanish at power-off).  /proc, /sys, /dev are the guest's own;
# /dev/pts, /dev/shm and /run are fresh.  /tmp is NOT a tmpfs: it is the
# host's /tmp seen through the overlay, so host files under /tmp are readable
# in the guest (guest writes there do not reach the host).  Only what is
# written under $STL_OUT comes back.  The host files are read at the time of
# use: build before starting the VM.
#
# Outputs (OUTDIR/vmN/): console.log (serial console, kernel + SCRIPT output),
# script.log (SCRIPT stdout+stderr), rc (SCRIPT exit status), dmesg.log
# (full kernel log at the end), boot_s (guest uptime when SCRIPT started),
# job.env (the run's parameters), plus whatever SCRIPT put in $STL_OUT.
#
# The run fails (non-zero exit, reason and the last 150 console lines of the
# offending VM printed) when, in this order of precedence for the exit status:
#   124   a VM ran into the timeout (hang).  Shortly before the limit the
#         guest dumps blocked tasks and CPU backtraces (sysrq w, l) to the
#         console, to show where it hung;
#   N     SCRIPT exited with status N != 0;
#   1     the kernel log shows an oops, BUG, WARNING, GPF, "Call Trace",
#         list corruption, refcount_t error, hung task, soft/hard lockup, RCU
#         stall, UBSAN/KASAN report or panic; or the guest never reported an
#         exit status (failed setup, crash).  Set STL_VM_IGNORE_RE to an ERE
#         matching kernel lines that a test provokes on purpose.
# With two VMs, once one VM has failed the other gets STL_VM_PEER_GRACE
# seconds (default 30) to finish before it is stopped.
#
# The initramfs (static busybox + the modules needed to mount the 9p root)
# is built once into build/vm/ and rebuilt when the kernel version changes
# or this script is newer.  The kernel is found by scripts/kver.sh (newest
# with headers and an image; override with KVER).
#
# How it works: stage 1 (/init in the initramfs, busybox) loads virtio_pci,
# 9pnet_virtio, 9p and overlay, mounts the host root and the overlay, moves
# /proc /sys /dev and switch_roots into it running "bash vm.sh --guest"
# (this very file, seen through 9p).  Stage 2 (guest_main below) mounts the
# rest, brings up the network and rxe0, runs SCRIPT, saves the results and
# powers off with sysrq o.  The kernel does not panic on oops; the host scans
# the console and dmesg.log instead.

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
# Where stage 2 mounts the per-VM writable export.
GUEST_OUT=/run/stellar/out

# Kernel log markers that fail a run (extended regular expression).  Only
# lines carrying a printk timestamp "[    1.234567]" are considered, so that
# SCRIPT output cannot trigger them by accident.
KERNEL_ERROR_RE='Oops|BUG:|kernel BUG|WARNING:|cut here|general protection fault|Call Trace|list_(add|del) corruption|refcount_t|hung_task_timeout_secs|hung_task: blocked|blocked for more than|UBSAN|KASAN|Kernel panic|soft lockup|hard LOCKUP|rcu_(sched|preempt) (self-)?detected stall|detected stalls on CPUs|unable to handle'

log() { printf 'vm.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

usage() {
	sed -n '4,/^$/s/^# \{0,1\}//p' "$SELF" | sed '$d'
}

###########################################################################
# Guest side (stage 2): runs as PID 1 inside the VM.
###########################################################################

# Print a status line on the console.
glog() { printf 'stellar-vm: %s\n' "$*"; }

# Record how long set-up steps take (guest uptime), kept in boot-steps.
STEPS=""
gstep() {
	local up
	read -r up _ </proc/uptime
	STEPS+="$up $*"$'\n'
}

# Power the VM off now.  Never returns.
guest_poweroff() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 60
}

# Report a setup failure (to the console and, if possible, to the host) and
# power off without an rc file: the host counts that as a failure.
guest_die() {
	glog "SETUP FAILED: $*"
	if mountpoint -q "$GUEST_OUT" 2>/dev/null; then
		printf '%s\n' "$*" >"$GUEST_OUT/setup-error"
		dmesg >"$GUEST_OUT/dmesg.log" 2>/dev/null || true
	fi
	guest_poweroff
}

# Wait until rxe0 port 1 is ACTIVE and has the RoCEv2 GID of our IPv4
# address; sets STL_GID_INDEX.
guest_wait_rxe() {
	local ip=$1 want i f g n state
	# IPv4-mapped IPv6 address as sysfs prints it: ...:ffff:0a00:020f
	IFS=. read -r -a o <<<"$ip"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		"${o[0]}" "${o[1]}" "${o[2]}" "${o[3]}")
	for ((i = 0; i < 300; i++)); do
		state=$(rdma link show rxe0/1 2>/dev/null || true)
		if [[ $state == *"state ACTIVE"* ]]; then
			for f in /sys/class/infiniband/rxe0/ports/1/gids/*; do
				read -r g <"$f" 2>/dev/null || continue
				[[ $g == "$want" ]] || continue
				n=${f##*/}
				if [[ $(cat "/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$n" 2>/dev/null) == "RoCE v2" ]]; then
					STL_GID_INDEX=$n
					return 0
				fi
			done
		fi
		sleep 0.1
	done
	return 1
}

# Shortly before the host's timeout, dump where the guest is stuck.
guest_watchdog() {
	local limit=$1 up
	((limit > 40)) || return 0
	up=$(cut -d. -f1 /proc/uptime)
	((limit - 15 - up > 0)) && sleep $((limit - 15 - up))
	glog "timeout is near: dumping blocked tasks and CPU backtraces"
	echo 8 >/proc/sys/kernel/printk
	echo w >/proc/sysrq-trigger
	echo l >/proc/sysrq-trigger
	sleep 2
	dmesg >"$GUEST_OUT/dmesg.log" 2>/dev/null || true
	sync
}

guest_main() {
	local rc fifo teepid spid i
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	export HOME=/root LANG=C.UTF-8
	cd /
	gstep "stage 2 started"

	# Stage 1 mounted everything, the results export included.
	[[ -r $GUEST_OUT/job.env ]] || guest_die "no job.env in the output export"
	# shellcheck source=/dev/null
	source "$GUEST_OUT/job.env"

	export STL_VM_INDEX STL_NVMS STL_MY_IP STL_PEER_IP STL_REPO
	export STL_OUT=$GUEST_OUT STL_NETDEV=eth0 STL_RXE=rxe0
	guest_watchdog "$STL_TIMEOUT" &

	hostname "stellar-vm$STL_VM_INDEX"
	if ((STL_NVMS > 1)); then
		for ((i = 0; i < STL_NVMS; i++)); do
			printf '10.0.0.%d\tstellar-vm%d\n' $((i + 1)) "$i"
		done >>/etc/hosts
	fi
	ulimit -l unlimited

	gstep "hostname, watchdog"
	modprobe -a "${GUEST_MODULES[@]}" || guest_die "modprobe ${GUEST_MODULES[*]}"
	gstep "modprobe ${GUEST_MODULES[*]}"
	ip link set lo up
	ip link set eth0 up || guest_die "no eth0"
	ip addr add "$STL_MY_IP/24" dev eth0 || guest_die "ip addr add"
	gstep "eth0 up"
	rdma link add rxe0 type rxe netdev eth0 || guest_die "rdma link add rxe0"
	gstep "rdma link add"
	guest_wait_rxe "$STL_MY_IP" ||
		guest_die "rxe0 not ACTIVE with an IPv4 RoCEv2 GID after 30 s"
	export STL_GID_INDEX
	gstep "rxe0 ACTIVE with GID $STL_GID_INDEX"

	printf '%s' "$STEPS" >"$STL_OUT/boot-steps"
	cut -d' ' -f1 /proc/uptime >"$STL_OUT/boot_s"
	glog "ready after $(cat "$STL_OUT/boot_s") s: running ${STL_CMD[*]}"

	# SCRIPT output goes through a fifo to tee (console + script.log).  The
	# script's own exit is awaited, not EOF on the pipe: background
	# processes it leaves behind may keep the pipe open.
	cd "$STL_REPO"
	fifo=/run/stellar/script.fifo
	mkfifo "$fifo"
	tee "$STL_OUT/script.log" <"$fifo" &
	teepid=$!
	bash "${STL_CMD[@]}" </dev/null >"$fifo" 2>&1 &
	spid=$!
	rc=0
	wait "$spid" || rc=$?
	for ((i = 0; i < 20; i++)); do
		kill -0 "$teepid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$teepid" 2>/dev/null || true
	cd /

	glog "script exited with status $rc"
	dmesg >"$STL_OUT/dmesg.log" 2>/dev/null || true
	echo "$rc" >"$STL_OUT/rc.tmp" && mv "$STL_OUT/rc.tmp" "$STL_OUT/rc"
	guest_poweroff
}

###########################################################################
# Host side.
###########################################################################

# Build (or reuse) the initramfs for kernel $KVER; prints its path.
build_initramfs() {
	local dir=$REPO_ROOT/build/vm
	local out=$dir/initramfs-$KVER.cpio
	local stage m f dst n=0
	local -a mods=()

	if [[ -s $out && $out -nt $SELF ]]; then
		printf '%s\n' "$out"
		return 0
	fi
	log "building $out"
	command -v busybox >/dev/null 2>&1 || die "busybox not found (scripts/deps.sh)"
	f=$(command -v busybox)
	if command -v readelf >/dev/null 2>&1 &&
		readelf -l "$f" 2>/dev/null | grep -q 'program interpreter'; then
		die "$f is dynamically linked; install busybox-static"
	fi

	mkdir -p "$dir"
	stage=$(mktemp -d "$dir/.initramfs.XXXXXX")
	mkdir -p "$stage"/{bin,dev,proc,sys,lower,rw,newroot,modules}
	cp "$f" "$stage/bin/busybox"

	# Module files in load order, each once.
	for m in "${STAGE1_MODULES[@]}"; do
		while read -r f; do
			[[ " ${mods[*]} " == *" $f "* ]] || mods+=("$f")
		done < <(modprobe -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" { print $2 }')
	done
	[[ ${#mods[@]} -ge ${#STAGE1_MODULES[@]} ]] ||
		die "modprobe -S $KVER --show-depends found too few modules"
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

	# Stage 1.  $stl_self comes from the kernel command line (parameters
	# without a dot are handed to init as environment variables).
	cat >"$stage/init" <<EOF
#!/bin/busybox sh
# Stellar test VM, stage 1: mount the host root read-only with a tmpfs
# overlay and switch into it.
bb=/bin/busybox
\$bb mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
\$bb mount -t proc proc /proc
\$bb mount -t sysfs sys /sys
fail() {
	echo "stellar-vm: stage 1 failed: \$*"
	echo o >/proc/sysrq-trigger
	\$bb sleep 60
}
for m in /modules/*.ko; do
	\$bb insmod "\$m" || fail "insmod \$m"
done
\$bb mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=$NINEP_MSIZE,cache=${STL_VM_9PCACHE:-none} \\
	hostroot /lower || fail "mount the host root (9p)"
\$bb mount -t tmpfs -o mode=0755 rw /rw || fail "mount tmpfs"
\$bb mkdir -p /rw/upper /rw/work
\$bb mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \\
	overlay /newroot || fail "mount overlay"
for d in dev proc sys; do
	\$bb mount --move /\$d /newroot/\$d || fail "move /\$d"
done
# Fresh /dev/pts, /dev/shm (devtmpfs has neither) and /run, and the
# per-VM writable export for results.
\$bb mkdir -p /newroot/dev/pts /newroot/dev/shm
\$bb mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /newroot/dev/pts ||
	fail "mount devpts"
\$bb mount -t tmpfs -o mode=1777 shm /newroot/dev/shm || fail "mount /dev/shm"
\$bb mount -t tmpfs -o mode=0755 run /newroot/run || fail "mount /run"
\$bb mkdir -p /newroot$GUEST_OUT
\$bb mount -t 9p -o trans=virtio,version=9p2000.L,msize=$NINEP_MSIZE \\
	stlout /newroot$GUEST_OUT || fail "mount the output export (9p)"
[ -f "/newroot\$stl_self" ] || fail "\$stl_self not visible in the guest"
exec \$bb switch_root /newroot /bin/bash "\$stl_self" --guest
fail "switch_root"
EOF
	chmod 0755 "$stage/init" "$stage/bin/busybox"

	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc --quiet -R 0:0) >"$stage.cpio"
	mv -f "$stage.cpio" "$out"
	rm -rf "$stage"
	printf '%s\n' "$out"
}

# Lines of FILE that are kernel messages matching KERNEL_ERROR_RE (minus
# STL_VM_IGNORE_RE).
kernel_errors() {
	local file=$1
	[[ -f $file ]] || return 0
	grep -aE '\[ *[0-9]+\.[0-9]{6}\] ' "$file" | grep -aE "$KERNEL_ERROR_RE" |
		{ if [[ -n ${STL_VM_IGNORE_RE:-} ]]; then grep -avE "$STL_VM_IGNORE_RE"; else cat; fi; } ||
		true
}

# Is QEMU of VM $1 still running?
vm_running() { [[ ! -e $OUTDIR/vm$1/qemu.status ]]; }

# Stop VM $1 (its QEMU, by the pid QEMU wrote).
vm_stop() {
	local pid
	vm_running "$1" || return 0
	pid=$(cat "$OUTDIR/vm$1/qemu.pid" 2>/dev/null) || return 0
	[[ -n $pid ]] && kill "$pid" 2>/dev/null || true
}

cleanup() {
	local i
	for ((i = 0; i < NVMS; i++)); do
		vm_stop "$i"
	done
	[[ -n ${SOCKDIR:-} ]] && rm -rf "$SOCKDIR"
	return 0
}

# Start VM $1 in the background: QEMU under `timeout`, its console going to
# console.log (and to stdout unless quiet).
vm_start() {
	local i=$1 dir=$OUTDIR/vm$1 net prefix=""
	local -a qemu

	((NVMS > 1)) && prefix="[vm$i] "
	if ((NVMS == 1)); then
		net="user,id=n0"
	elif ((i == 0)); then
		net="stream,id=n0,server=on,addr.type=unix,addr.path=$SOCK"
	else
		net="stream,id=n0,server=off,addr.type=unix,addr.path=$SOCK"
	fi
	qemu=(qemu-system-x86_64
		-accel tcg -cpu max -machine pc
		-nographic -nodefaults -no-user-config -no-reboot
		-serial stdio
		-m "$MEM" -smp "$SMP"
		-kernel "${STL_VM_KERNEL:-/boot/vmlinuz-$KVER}" -initrd "$INITRAMFS"
		-append "$CMDLINE"
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=$dir,mount_tag=stlout,security_model=none,multidevs=remap"
		-netdev "$net"
		-device "virtio-net-pci,netdev=n0,mac=52:54:00:5e:00:0$((i + 1)),romfile="
		-pidfile "$dir/qemu.pid"
	)
	printf '%q ' "${qemu[@]}" >"$dir/qemu.cmd"
	echo >>"$dir/qemu.cmd"
	(
		set +e +o pipefail
		if [[ $QUIET == 1 ]]; then
			timeout -k 10 "$TIMEOUT" "${qemu[@]}" </dev/null 2>&1 |
				sed -u 's/\r//g' >"$dir/console.log"
		else
			timeout -k 10 "$TIMEOUT" "${qemu[@]}" </dev/null 2>&1 |
				sed -u 's/\r//g' | tee "$dir/console.log" | sed -u "s/^/$prefix/"
		fi
		echo "${PIPESTATUS[0]}" >"$dir/qemu.status"
	) &
}

# Classify VM $1 after it stopped: sets REASON (empty when fine) and CODE.
vm_verdict() {
	local i=$1 dir=$OUTDIR/vm$1 status rc errs
	REASON="" CODE=0
	status=$(cat "$dir/qemu.status" 2>/dev/null || echo 255)
	rc=$(cat "$dir/rc" 2>/dev/null || true)
	errs=$(
		kernel_errors "$dir/console.log"
		kernel_errors "$dir/dmesg.log"
	)
	if [[ $status == 124 || $status == 137 ]]; then
		REASON="timed out after $TIMEOUT s (hang?)"
		CODE=124
	elif [[ -e $dir/stopped-by-host ]]; then
		REASON="stopped $PEER_GRACE s after the other VM failed"
		CODE=1
	elif [[ -n $rc && $rc != 0 ]]; then
		REASON="script exited with status $rc"
		CODE=$rc
	elif [[ -n $errs ]]; then
		REASON="kernel errors in the log"
		CODE=1
	elif [[ -z $rc ]]; then
		if [[ -s $dir/setup-error ]]; then
			REASON="guest setup failed: $(cat "$dir/setup-error")"
		else
			REASON="no exit status from the guest (QEMU exit status $status; crash?)"
		fi
		CODE=1
	fi
	if [[ -n $errs && $REASON != "kernel errors in the log" ]]; then
		REASON+="; kernel errors in the log"
	fi
	KERNEL_ERRS=$errs
}

host_main() {
	local opt i t0 t1 failed=0 first_fail_t="" now code=0 reason boot
	NVMS=${STL_VM_NVMS:-1}
	TIMEOUT=${STL_VM_TIMEOUT:-600}
	MEM=${STL_VM_MEM:-2048}
	QUIET=${STL_VM_QUIET:-0}
	PEER_GRACE=${STL_VM_PEER_GRACE:-30}
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
		*) usage >&2; exit 2 ;;
		esac
	done
	shift $((OPTIND - 1))
	[[ $# -ge 1 ]] || { usage >&2; exit 2; }
	[[ $NVMS == 1 || $NVMS == 2 ]] || die "-n must be 1 or 2"
	[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "bad timeout: $TIMEOUT"
	[[ $MEM =~ ^[1-9][0-9]*$ ]] || die "bad memory size: $MEM"

	local script
	script=$(realpath -e "$1") || die "no such script: $1"
	shift
	[[ -f $script ]] || die "not a file: $script"
	case $script/ in
	/proc/* | /sys/* | /dev/* | /run/*)
		die "$script is hidden in the guest (/proc /sys /dev /run are the guest's own)" ;;
	esac
	case $SELF in
	*[[:space:]]*) die "the repository path must not contain whitespace" ;;
	esac

	KVER=$("$SCRIPT_DIR/kver.sh")
	INITRAMFS=$(build_initramfs)
	SMP=1
	((NVMS == 1)) && SMP=2
	# Console: kernel warnings (level 4) and worse, with timestamps.  No
	# panic on oops: the host scans the log.  panic=-1 plus -no-reboot
	# make QEMU exit at once on a panic.
	CMDLINE="console=ttyS0 loglevel=5 printk.time=1 panic=-1 ${STL_VM_APPEND:-} stl_self=$SELF"

	if [[ -z $OUTDIR ]]; then
		OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/stellar-vm.XXXXXX")
	fi
	mkdir -p "$OUTDIR"
	OUTDIR=$(realpath "$OUTDIR")
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	log "kernel $KVER, $NVMS VM(s), timeout ${TIMEOUT}s, output in $OUTDIR"

	if ((NVMS > 1)); then
		SOCKDIR=$(mktemp -d /tmp/stl-net.XXXXXX)
		SOCK=$SOCKDIR/sock
	fi

	for ((i = 0; i < NVMS; i++)); do
		local dir=$OUTDIR/vm$i
		mkdir -p "$dir"
		rm -f "$dir"/{console.log,script.log,rc,rc.tmp,dmesg.log,boot_s,boot-steps,job.env,setup-error,qemu.pid,qemu.status,qemu.cmd,stopped-by-host}
		{
			echo "# Stellar VM job (read by scripts/vm.sh --guest)"
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
			printf 'STL_CMD=(%s)\n' "$(printf '%q ' "$script" "$@")"
		} >"$dir/job.env"
	done

	t0=$(date +%s.%N)
	for ((i = 0; i < NVMS; i++)); do
		vm_start "$i"
		if ((NVMS > 1 && i == 0)); then
			# The client side connects at start-up: wait for the socket.
			local w
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
		local running=0
		for ((i = 0; i < NVMS; i++)); do
			if vm_running "$i"; then
				running=$((running + 1))
			elif [[ $(cat "$OUTDIR/vm$i/rc" 2>/dev/null || echo x) != 0 &&
				-z $first_fail_t ]]; then
				first_fail_t=$(date +%s)
			fi
		done
		((running == 0)) && break
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
	t1=$(date +%s.%N)

	# Verdict: the first VM with the highest-precedence failure decides.
	for ((i = 0; i < NVMS; i++)); do
		vm_verdict "$i"
		boot=$(cat "$OUTDIR/vm$i/boot_s" 2>/dev/null || echo "?")
		if [[ -z $REASON ]]; then
			log "vm$i: OK (script rc 0, ready after ${boot}s of guest uptime)"
			continue
		fi
		failed=1
		log "vm$i: FAILED: $REASON"
		if [[ -n $KERNEL_ERRS ]]; then
			log "vm$i: kernel error lines:"
			printf '%s\n' "$KERNEL_ERRS" | head -n 40 >&2
		fi
		log "vm$i: last 150 lines of $OUTDIR/vm$i/console.log:"
		tail -n 150 "$OUTDIR/vm$i/console.log" >&2 2>/dev/null || true
		log "vm$i: end of console log"
		if ((code == 0)) || { ((CODE == 124)) && ((code != 124)); } ||
			{ ((code == 1)) && ((CODE != 1)); }; then
			code=$CODE
			reason=$REASON
		fi
	done
	local total
	total=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	if ((failed)); then
		log "FAIL ($reason), exit $code, ${total}s, output in $OUTDIR"
		exit "$code"
	fi
	log "PASS in ${total}s, output in $OUTDIR"
}

if [[ ${1:-} == --guest ]]; then
	guest_main
else
	host_main "$@"
fi
