# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# lib.sh - helpers shared by the VM scenario runners (vm-one.sh, vm-two.sh).
# Sourced inside the guest that scripts/vm.sh boots; the current directory
# is the repository root.
#
# A scenario is a shell function that returns 0 when the behaviour it names
# holds; on failure it calls `why "text"` (which returns 1) to say what was
# observed.  `scenario NAME FUNC [ARGS...]` runs it with its output in
# $STL_OUT/scenarios/NAME.log, kills the background processes it left,
# fails it on new kernel error lines or on pinned pages left behind, and
# prints "PASS NAME" or "FAIL NAME: why".  A scenario that cannot run here
# returns 77 after `why "reason"`: it prints "SKIP NAME: reason" and counts
# as skipped, never as passed.  `finish` prints the totals and returns 1 if
# any scenario failed.
#
# A scenario still running STL_SCENARIO_LIMIT seconds (default 600) after it
# started is stopped: its processes are killed (again every 10 s until it
# returns), "TIMEOUT NAME" is printed at once, and it fails with that reason,
# so that a hang names itself and the scenarios after it still run.  While a
# scenario runs its name is in $STL_VM_ACTIVITY (when set), which
# scripts/vm.sh prints if the whole VM runs into its own timeout.

STL_GIDX=${STL_GID_INDEX:-1}
STL_LOGDIR=${STL_OUT:-/tmp}/scenarios
STL_DEBUGFS=/sys/kernel/debug/stellar
STL_PASSED=0
STL_FAILED=0
STL_SKIPPED=0
STL_BG=()		# pids of background processes of the current scenario
WHY=""
STL_SCENARIO_LIMIT=${STL_SCENARIO_LIMIT:-600}

# Kernel log lines that fail the scenario in which they appear (the same
# markers scripts/vm.sh fails a whole run on; "BUG kmalloc-2k (...)" is
# how slab debugging reports a corrupted object).
STL_KERNEL_ERROR_RE='Oops|BUG:|BUG [[:alnum:]_.:-]+ \(|kernel BUG|WARNING:|cut here|general protection fault|Call Trace|list_(add|del) corruption|refcount_t|blocked for more than|UBSAN|KASAN|Kernel panic|soft lockup|hard LOCKUP|detected stall|unable to handle'

mkdir -p "$STL_LOGDIR"

# Say why the current scenario fails; returns 1 so `why ...; return 1` or
# `cond || why ...` both read naturally.  Keeps the first reason.
why() {
	[[ -n $WHY ]] || WHY=$*
	echo "why: $*"
	return 1
}

note() { echo "# $*"; }

# Remember a background pid of this scenario (killed when it ends).
bg_track() { STL_BG+=("$1"); }

# Every wait below has a deadline in wall-clock seconds ($SECONDS), never an
# iteration count: under TCG spawning even `sleep` or `ss` takes a while.

# Wait up to $2 seconds for pid $1 to exit.
wait_exit() {
	local pid=$1 end=$((SECONDS + $2))
	while kill -0 "$pid" 2>/dev/null; do
		((SECONDS < end)) || return 1
		sleep 0.1
	done
	return 0
}

# Exit status of background pid $1, which must have exited already.
exit_status() {
	local rc=0
	wait "$1" 2>/dev/null || rc=$?
	echo "$rc"
}

# Is there a TCP listener on port $1 of this host, or a connection it
# accepted?  (bash builtins only)  perftest closes its listening socket as
# soon as the client connects: on a loaded guest the listener can come and
# go between two looks, and the accepted connection is then what shows the
# server did listen.
tcp_listening() {
	local hex f laddr st
	hex=$(printf '%04X' "$1")
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r $f ]] || continue
		while read -r _ laddr _ st _; do
			[[ $laddr == *":$hex" && ($st == 0A || $st == 01) ]] && return 0
		done <"$f"
	done
	return 1
}

# Wait up to $2 s for a TCP listener on port $1 (this host); gives up
# early (status 2) when pid $3, the would-be listener, has exited.
wait_listen() {
	local port=$1 end=$((SECONDS + ${2:-20})) pid=${3:-}
	until tcp_listening "$port"; do
		[[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null && return 2
		((SECONDS < end)) || return 1
		sleep 0.1
	done
	return 0
}

dev_exists() { [[ -e /sys/class/infiniband/$1 ]]; }

# Wait up to $2 s for RDMA device $1 port 1 to be ACTIVE.
wait_active() {
	local dev=$1 end=$((SECONDS + ${2:-20}))
	until [[ $(rdma link show "$dev/1" 2>/dev/null) == *"state ACTIVE"* ]]; do
		((SECONDS < end)) || return 1
		sleep 0.1
	done
	return 0
}

# Wait up to $2 s for device $1 to disappear.
wait_gone() {
	local dev=$1 end=$((SECONDS + ${2:-20}))
	while dev_exists "$dev"; do
		((SECONDS < end)) || return 1
		sleep 0.1
	done
	return 0
}

stellar_devices() {
	local d
	for d in /sys/class/infiniband/*; do
		[[ -e $d/stellar_abi_version ]] && printf '%s\n' "${d##*/}"
	done
	return 0
}

module_loaded() { [[ -d /sys/module/stellar ]]; }

mount_debugfs() {
	mountpoint -q /sys/kernel/debug 2>/dev/null ||
		mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
}

# Pages pinned by the whole module now (debugfs), or -1 (see stat_counter).
pinned_total() {
	local v
	if read -r v <"$STL_DEBUGFS/pinned_pages" 2>/dev/null; then
		echo "$v"
	else
		echo -1
	fi
}

# Pages pinned by device $1's MRs now (sysfs), or -1 (see stat_counter).
pinned_dev() {
	local v
	if read -r v <"/sys/class/infiniband/$1/pinned_pages" 2>/dev/null; then
		echo "$v"
	else
		echo -1
	fi
}

# Wait up to $1 s for the module-wide pin count to be 0.
wait_no_pins() {
	local end=$((SECONDS + ${1:-10}))
	until [[ $(pinned_total) == 0 ]]; do
		((SECONDS < end)) || return 1
		sleep 0.1
	done
	return 0
}

# Value of counter $2 of device $1 port 1, or -1 when it is not there (a
# number still: a word in (( )) is an unbound variable, and under set -u
# that ends the whole runner).  Read from the port's hw_counters file in
# sysfs, which ib_core fills from the same get_hw_stats call as the
# netlink query (at most its 10 ms lifespan old), without starting a
# program: each rdma and awk costs ~40 ms in a TCG guest.  A counter with
# no file falls back to stat_counter_nl.
stat_counter() {
	local v
	if read -r v <"/sys/class/infiniband/$1/ports/1/hw_counters/$2" 2>/dev/null &&
	   [[ $v =~ ^[0-9]+$ ]]; then
		echo "$v"
	else
		stat_counter_nl "$1" "$2"
	fi
}

# Value of counter $2 in `rdma statistic show link $1/1` (netlink), or -1.
stat_counter_nl() {
	rdma statistic show link "$1/1" 2>/dev/null |
		awk -v name="$2" '{ for (i = 1; i < NF; i++) if ($i == name) { print $(i + 1); found = 1 } }
			END { if (!found) print -1 }'
}

# The stellar.ko built for the running kernel: the newer of
# build/kmod/$(uname -r)/stellar.ko (scripts/build-module.sh) and
# ./stellar.ko (make), counting only a module whose vermagic names this
# kernel.  Prints nothing if there is none.
stellar_ko() {
	local m best="" kver
	kver=$(uname -r)
	for m in "build/kmod/$kver/stellar.ko" ./stellar.ko; do
		[[ -f $m ]] || continue
		[[ $(modinfo -F vermagic "$m" 2>/dev/null) == "$kver "* ]] || continue
		[[ -n $best && ! $m -nt $best ]] || best=$m
	done
	echo "$best"
}

# A module source file newer than module $1, or nothing.  A module older
# than its sources would test code that is no longer there.
stellar_ko_stale() {
	find Kbuild include kmod pvdma emtt spray -type f -newer "$1" \
		\( -name '*.[ch]' -o -name 'Kbuild*' \) -print -quit 2>/dev/null
}

# Load stellar.ko and the provider environment.
load_stellar() {
	local ko newer
	ko=$(stellar_ko)
	[[ -n $ko ]] ||
		{ why "no stellar.ko built for $(uname -r) (run make first)"; return 1; }
	newer=$(stellar_ko_stale "$ko")
	[[ -z $newer ]] || { why "$ko is older than $newer: rebuild it"; return 1; }
	[[ -f build/libstellar-rdmav34.so ]] ||
		{ why "build/libstellar-rdmav34.so not built"; return 1; }
	modprobe ib_uverbs
	insmod "$ko" || { why "insmod $ko failed"; return 1; }
	module_loaded || { why "no /sys/module/stellar after insmod"; return 1; }
	mount_debugfs
	return 0
}

# Create stellar device $1 over netdev $2 (default eth0) and wait ACTIVE.
add_stellar() {
	local dev=$1 nd=${2:-eth0} out
	if ! out=$(rdma link add "$dev" type stellar netdev "$nd" 2>&1); then
		why "rdma link add $dev type stellar netdev $nd failed: $out"
		return 1
	fi
	wait_active "$dev" 20 || { why "$dev not ACTIVE 20 s after rdma link add"; return 1; }
	return 0
}

# Run `timeout`-bounded command, echoing it first.
run() {
	echo "+ $*"
	"$@"
}

# Start an RDMA TCP-exchange server in the background (pingpong or
# perftest) and wait up to $2 s for its listening port.  Sets SERVER_PID
# (the server itself, not a wrapper: kill -9 must reach it).  The scenario
# kills it at the end if it is still running.
start_server() {
	local port=$1 limit=$2 log=$3
	shift 3
	echo "+ (server) $*"
	"$@" >"$log" 2>&1 &
	SERVER_PID=$!
	bg_track "$SERVER_PID"
	# a server that already exited (its client came and went) is judged
	# by its exit status later
	if ! wait_listen "$port" "$limit" "$SERVER_PID" && kill -0 "$SERVER_PID" 2>/dev/null; then
		cat "$log"
		why "server did not listen on port $port within $limit s: $(tail -n 2 "$log" | tr '\n' ' ')"
		return 1
	fi
	return 0
}

# Run a client that connects over TCP to a server that may not be
# listening yet: retried while it fails to connect, for up to $1 s.
# Output in $2; returns the client's exit status.  Each run is killed
# after $CLIENT_TIMEOUT s (default 120).
run_client_retry() {
	local limit=$1 log=$2 rc end
	shift 2
	end=$((SECONDS + limit))
	while :; do
		echo "+ (client) $*"
		rc=0
		timeout -k 5 "${CLIENT_TIMEOUT:-120}" "$@" >"$log" 2>&1 || rc=$?
		cat "$log"
		if ((rc != 0)) && grep -qiE "couldn't connect|connection refused|unable to open file descriptor" "$log" &&
			((SECONDS < end)); then
			sleep 0.5
			continue
		fi
		return "$rc"
	done
}

# Recreate rxe0 on eth0 (if it is missing) and wait until it is ACTIVE with
# this VM's IPv4 address as GID $STL_GIDX.
recreate_rxe0() {
	local want g="" i o
	dev_exists rxe0 || run rdma link add rxe0 type rxe netdev eth0 ||
		{ why "cannot recreate rxe0"; return 1; }
	wait_active rxe0 30 || { why "recreated rxe0 not ACTIVE"; return 1; }
	IFS=. read -r -a o <<<"$STL_MY_IP"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${o[@]}")
	for ((i = 0; i < 100; i++)); do
		g=$(cat "/sys/class/infiniband/rxe0/ports/1/gids/$STL_GIDX" 2>/dev/null)
		[[ $g == "$want" ]] && return 0
		sleep 0.1
	done
	why "rxe0 GID $STL_GIDX is $g, want $want"
	return 1
}

# kill -9 every descendant of pid $1 except pid $2 and its own descendants.
kill_tree() {
	local top=$1 keep=$2 f s pid ppid k
	local -A kids=()
	local -a todo=("$top") victims=()

	for f in /proc/[0-9]*/stat; do
		read -r s 2>/dev/null <"$f" || continue
		pid=${s%% *}
		s=${s##*) }
		read -r _ ppid _ <<<"$s"
		kids[$ppid]+=" $pid"
	done
	while ((${#todo[@]})); do
		pid=${todo[0]}
		todo=("${todo[@]:1}")
		for k in ${kids[$pid]:-}; do
			[[ $k == "$keep" ]] && continue
			victims+=("$k")
			todo+=("$k")
		done
	done
	((${#victims[@]} == 0)) || kill -9 "${victims[@]}" 2>/dev/null
	return 0
}

# The time limit of scenario $1 (see the top of this file): from $2 (the
# shell running it) kill everything but this watchdog, and touch $3.  What
# its processes were waiting in goes to its log $4 first.
scenario_watchdog() {
	local name=$1 top=$2 flag=$3 log=$4 me=$BASHPID s=""

	trap 'kill "$s" 2>/dev/null; exit 0' TERM
	sleep "$STL_SCENARIO_LIMIT" </dev/null >/dev/null 2>&1 &
	s=$!
	wait "$s"
	echo "TIMEOUT $name: still running after $STL_SCENARIO_LIMIT s; killing its processes"
	{
		echo "timed out; the processes (newest last):"
		ps -e -o pid,ppid,stat,wchan:24,etimes,args --forest | tail -n 30
	} >>"$log" 2>&1
	echo "<4>stellar-test: scenario $name timed out after $STL_SCENARIO_LIMIT s" 2>/dev/null >/dev/kmsg
	# where the kernel's tasks wait, in the console log (a failed run)
	echo w 2>/dev/null >/proc/sysrq-trigger
	: >"$flag"
	while :; do
		kill_tree "$top" "$me"
		sleep 10 </dev/null >/dev/null 2>&1 &
		s=$!
		wait "$s"
	done
}

# The kernel's log since this scenario began: what follows the marker
# scenario() wrote to /dev/kmsg (the whole log if the ring buffer has
# wrapped past it since).  One read serves the check and the excerpt, so
# both see the same lines.
kernel_log_since() {
	dmesg | awk -v m="stellar-test: scenario $1 begins" '
		{ line[NR] = $0 }
		index($0, m) { at = NR }
		END { for (i = at + 1; i <= NR; i++) print line[i] }'
}

# The kernel's report of the first error in the log on standard input,
# short enough for the end of a failed scenario's log: the lines before it
# (what printed the trace that follows, as "... invoked oom-killer" or
# "page allocation failure" do), what went wrong (the BUG, WARNING or
# KASAN line, where an object was allocated and freed), the faulting
# function, the first frames of the call trace.  Slab hex dumps and
# register lines are left out.
kernel_error_excerpt() {
	STL_RE=$STL_KERNEL_ERROR_RE awk '
		BEGIN { re = ENVIRON["STL_RE"] }
		!on && $0 ~ re {
			on = 1
			for (i = NR - 6; i < NR; i++)
				if (i > 0) print before[i % 6]
		}
		!on { before[NR % 6] = $0; next }
		/ (Object|Redzone|Padding|Bytes b4) +[0-9a-f]+:|R[A-Z0-9]+: [0-9a-f]{16}|Code: / { next }
		{ print; if (++n == 40) exit }' |
		sed 's/^/kernel: /'
}

# Run one scenario (see the top of this file).
scenario() {
	local name=$1 log t0 rc pid pins wd flag top
	shift
	log=$STL_LOGDIR/$name.log
	# STL_SCENARIO_SKIP: an extended regular expression; the scenarios
	# whose whole name it matches are not run on this boot and say SKIP
	# (scripts/check.sh trims the debug-kernel pass with it).
	if [[ -n ${STL_SCENARIO_SKIP:-} ]] &&
		grep -qxE -- "$STL_SCENARIO_SKIP" <<<"$name"; then
		echo "SKIP $name: not run on this kernel (STL_SCENARIO_SKIP)"
		STL_SKIPPED=$((STL_SKIPPED + 1))
		return 0
	fi
	# STL_SCENARIO_ONLY: the same, the other way round (to run a few
	# scenarios while working on them)
	if [[ -n ${STL_SCENARIO_ONLY:-} ]] &&
		! grep -qxE -- "$STL_SCENARIO_ONLY" <<<"$name"; then
		echo "SKIP $name: not run on this boot (STL_SCENARIO_ONLY)"
		STL_SKIPPED=$((STL_SKIPPED + 1))
		return 0
	fi
	WHY=""
	STL_BG=()
	# where this scenario's part of the kernel log begins (info level:
	# not on the console)
	echo "<6>stellar-test: scenario $name begins" 2>/dev/null >/dev/kmsg
	t0=$SECONDS
	rc=0
	flag=$STL_LOGDIR/.timeout-$name
	rm -f "$flag"
	[[ -z ${STL_VM_ACTIVITY:-} ]] || echo "scenario $name" >"$STL_VM_ACTIVITY"
	# not a child of this shell: a scenario's bare `wait` must not wait for it
	top=$BASHPID
	(
		scenario_watchdog "$name" "$top" "$flag" "$log" &
		echo $! >"$flag.pid"
	)
	{ echo "### scenario $name"; "$@"; } >"$log" 2>&1 || rc=$?
	read -r wd 2>/dev/null <"$flag.pid" && kill "$wd" 2>/dev/null
	rm -f "$flag.pid"
	if [[ -e $flag ]]; then
		rm -f "$flag"
		rc=1
		WHY="did not finish within $STL_SCENARIO_LIMIT s (STL_SCENARIO_LIMIT); its processes were killed"
		echo "timed out: $WHY" >>"$log"
	fi
	for pid in "${STL_BG[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -9 "$pid" 2>/dev/null || true
			wait_exit "$pid" 10 || echo "pid $pid did not die" >>"$log"
		fi
		wait "$pid" 2>/dev/null || true
	done
	# kernel errors raised during this scenario
	local klog kerr
	klog=$(kernel_log_since "$name")
	kerr=$(grep -E "$STL_KERNEL_ERROR_RE" <<<"$klog" | head -n 3)
	if [[ -n $kerr ]]; then
		rc=1
		[[ -n $WHY ]] || WHY="kernel: $(echo "$kerr" | head -n 1)"
		kernel_error_excerpt <<<"$klog" >>"$log"
		echo "kernel errors: $kerr" >>"$log"
	fi
	# every process is gone: the module must hold no pinned page
	if module_loaded && [[ -e $STL_DEBUGFS/pinned_pages ]] && ! wait_no_pins 10; then
		pins=$(pinned_total)
		rc=1
		[[ -n $WHY ]] || WHY="debugfs pinned_pages is $pins after the scenario's processes exited"
		echo "pinned_pages left: $pins" >>"$log"
	fi
	if ((rc == 77)); then
		echo "SKIP $name: ${WHY:-no reason given}"
		STL_SKIPPED=$((STL_SKIPPED + 1))
	elif ((rc == 0)); then
		echo "PASS $name ($((SECONDS - t0)) s)"
		STL_PASSED=$((STL_PASSED + 1))
	else
		[[ -n $WHY ]] || WHY="failed (exit $rc), see scenarios/$name.log"
		echo "FAIL $name: $WHY"
		echo "--- last lines of scenarios/$name.log:"
		tail -n 25 "$log" | sed 's/^/    /'
		echo "---"
		STL_FAILED=$((STL_FAILED + 1))
	fi
	return 0
}

# Print the totals; returns 1 if any scenario failed.
finish() {
	echo "$STL_PASSED passed, $STL_FAILED failed, $STL_SKIPPED skipped"
	((STL_FAILED == 0))
}

# Pingpong between server device $2 (this host) and client device $3 of
# ibverbs-utils program $1 (ibv_rc_pingpong, ...), both in this VM, over
# $STL_MY_IP and TCP port $4; extra options after that.
pingpong_local() {
	local prog=$1 sdev=$2 cdev=$3 port=$4 rc srv
	shift 4
	local log=$STL_LOGDIR/$prog-$sdev-$cdev
	start_server "$port" 30 "$log.server" \
		"$prog" -d "$sdev" -g "$STL_GIDX" -p "$port" "$@" || return 1
	srv=$SERVER_PID
	rc=0
	run_client_retry 10 "$log.client" \
		"$prog" -d "$cdev" -g "$STL_GIDX" -p "$port" "$@" "$STL_MY_IP" || rc=$?
	wait_exit "$srv" 30 || why "server still running 30 s after the client ended"
	local src
	src=$(exit_status "$srv")
	echo "--- server output:"
	cat "$log.server"
	((rc == 0)) || why "client exited $rc: $(tail -n 2 "$log.client" | tr '\n' ' ')"
	((src == 0)) || why "server exited $src: $(tail -n 2 "$log.server" | tr '\n' ' ')"
	grep -q "bytes in" "$log.client" || why "client printed no throughput line"
	grep -q "bytes in" "$log.server" || why "server printed no throughput line"
	[[ -z $WHY ]]
}

# --- spray paths (spray/spray_path.c) -------------------------------------

# The driver attributes of device $1's RC QPs in `rdma res show qp -dd`,
# one line per QP: "lqpn N NAME VALUE NAME VALUE ..." (without the "drv_"
# that rdma puts before a driver's attribute names).
spray_qps() {
	rdma -dd res show qp link "$1/1" 2>/dev/null | awk '
		/lqpn/ { if (line != "") print line; line = ""; rc = 0 }
		{ for (i = 1; i < NF; i++) {
			if ($i == "lqpn") line = "lqpn " $(i + 1)
			if ($i == "type" && $(i + 1) == "RC") rc = 1
		  }
		  for (i = 1; i < NF; i++)
			if ($i ~ /^drv_(spray|spray_paths|spray_data|spray_chunk|path[0-9]+_(qpn|peer_qpn|sport|state|checks|recoveries|bytes|chunks|reposts|errors|credit|data))$/)
				line = line " " substr($i, 5) " " $(i + 1)
		  if (!rc) line = "" }
		END { if (line != "") print line }' | grep spray
}

# Attribute $2 of a spray_qps line $1.
spray_attr() {
	local -a w
	local i
	read -r -a w <<<"$1"
	for ((i = 0; i + 1 < ${#w[@]}; i++)); do
		[[ ${w[i]} == "$2" ]] && { echo "${w[i + 1]}"; return; }
	done
}

# --- GID tables -----------------------------------------------------------

# The sysfs form of the IPv4-mapped GID of address $1.
addr_gid() {
	local IFS=.
	# shellcheck disable=SC2086 # split the address on dots
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}

# The GID table of device $1, one "INDEX GID NETDEV" line per entry in use
# (one grep over the ~1000 entries, not a process each).
gid_table() {
	local d=/sys/class/infiniband/$1/ports/1 line f i n
	while IFS= read -r line; do
		[[ -n $line ]] || continue
		f=${line%%:*}
		i=${f##*/}
		read -r n <"$d/gid_attrs/ndevs/$i" 2>/dev/null || n='?'
		echo "$i ${line#*:} $n"
	done <<<"$(grep -H -v -x '0000:0000:0000:0000:0000:0000:0000:0000' "$d"/gids/* 2>/dev/null)"
}

# Index of GID $2 in device $1's table (empty when absent).
gid_index_of() { gid_table "$1" | awk -v g="$2" '$2 == g { print $1; exit }'; }

# Wait up to $3 s for GID $2 in device $1's table; prints its index.
wait_gid() {
	local dev=$1 gid=$2 end=$((SECONDS + $3)) i
	while :; do
		i=$(gid_index_of "$dev" "$gid")
		[[ -n $i ]] && { echo "$i"; return 0; }
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# `rdma system set netns MODE`: refused with EBUSY while any namespace
# other than the initial one exists (also one being cleaned up after
# `ip netns del`), so retried for up to 20 s.
rdma_netns_mode() {
	local mode=$1 end=$((SECONDS + 20))
	until rdma system set netns "$mode" 2>/dev/null; do
		((SECONDS < end)) || { why "rdma system set netns $mode still refused after 20 s"; return 1; }
		sleep 0.5
	done
	rdma system show | grep -q "netns $mode" || { why "rdma system does not say netns $mode"; return 1; }
}

# --- upstream rdma-core releases (userlib/tests/rdma-core-build.sh) -------
# The host builds each release's libibverbs, stock rxe provider (librxe)
# and example programs under build/rdma-core/rdma-core-VER/build before the
# VM boots; the guest runs them in place.  Their libibverbs is not built
# IN_PLACE: it reads no /etc/libibverbs.d and finds librxe only through
# RDMAV_DRIVERS=TREE/lib/librxe (it appends -rdmavN.so itself); the
# programs find that libibverbs through their RUNPATH.

# The releases to test: userlib/tests/rdma-core-build.sh --list, or the
# ones STL_SCENARIO_RDMA_CORE_RELEASES names (e.g. "39.0 64.0").
rdma_core_releases() {
	if [[ -n ${STL_SCENARIO_RDMA_CORE_RELEASES:-} ]]; then
		echo "$STL_SCENARIO_RDMA_CORE_RELEASES"
	else
		sh userlib/tests/rdma-core-build.sh --list
	fi
}

# Look up the build of release $1: sets RC_TREE (its build tree) and
# RC_PABI (its provider ABI: lib/librxe-rdmav$RC_PABI.so).  A missing build
# fails the scenario, or skips it (status 77, a SKIP line) when
# STL_SCENARIO_RDMA_CORE_SKIP_MISSING=1.
rdma_core_tree() {
	local ver=$1 tree lib p
	RC_TREE=""
	RC_PABI=""
	tree=$PWD/build/rdma-core/rdma-core-$ver/build
	for lib in "$tree"/lib/librxe-rdmav*.so; do
		[[ -f $lib ]] && break
	done
	for p in ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong; do
		[[ -x $tree/bin/$p ]] || lib=""
	done
	# libstellar built inside the release (userlib/rdma-core-provider.sh)
	[[ ${RC_PROV:-librxe} == librxe || -f ${lib/librxe/libstellar} ]] || lib=""
	if [[ ! -f $lib ]]; then
		why "rdma-core $ver (with ${RC_PROV:-librxe}) is not built in build/rdma-core (userlib/rdma-core-provider.sh $ver build)"
		[[ ${STL_SCENARIO_RDMA_CORE_SKIP_MISSING:-0} == 1 ]] && return 77
		return 1
	fi
	RC_TREE=$(realpath "$tree")
	RC_PABI=${lib##*-rdmav}
	RC_PABI=${RC_PABI%.so}
	return 0
}

# Run "$@" with the libibverbs and librxe of the release RC_TREE.
rdma_core_env() { env RDMAV_DRIVERS="$RC_TREE/lib/librxe" "$@"; }

# Process $1 must have mapped RC_TREE's libibverbs and its provider
# RC_PROV (librxe, or libstellar built inside the release) and no other
# libibverbs or provider (not Debian's in /usr/lib).
rdma_core_maps_ok() {
	local pid=$1 libs l
	libs=$(awk '$6 ~ /libibverbs\.so|-rdmav[0-9]+\.so|libstellar/ { print $6 }' \
		"/proc/$pid/maps" 2>/dev/null | sort -u)
	echo "libraries mapped by $pid: $(tr '\n' ' ' <<<"$libs")"
	[[ -n $libs ]] || { why "no libibverbs mapped by pid $pid (gone?)"; return 1; }
	grep -q "^$RC_TREE/lib/libibverbs\.so\." <<<"$libs" ||
		why "pid $pid has not mapped $RC_TREE/lib/libibverbs.so.*"
	grep -qx "$RC_TREE/lib/${RC_PROV:-librxe}-rdmav$RC_PABI\.so" <<<"$libs" ||
		why "pid $pid has not mapped $RC_TREE/lib/${RC_PROV:-librxe}-rdmav$RC_PABI.so"
	for l in $libs; do
		[[ $l == "$RC_TREE/lib/"* ]] || why "pid $pid has mapped $l"
	done
	[[ -z $WHY ]]
}

# The output $1 of a program of the release RC_TREE run with LD_DEBUG=libs
# must show that it initialised RC_TREE's libibverbs and librxe and no
# other libibverbs, provider or libstellar.
rdma_core_libs_ok() {
	local out=$1 inits
	inits=$(grep -E 'calling init: .*(libibverbs|-rdmav[0-9]+\.so|libstellar)' "$out" |
		sed 's/.*calling init: //' | sort -u)
	echo "libraries initialised: $(tr '\n' ' ' <<<"$inits")"
	grep -qx "$RC_TREE/lib/libibverbs\.so\.1" <<<"$inits" ||
		why "$RC_TREE/lib/libibverbs.so.1 not loaded"
	grep -qx "$RC_TREE/lib/librxe-rdmav$RC_PABI\.so" <<<"$inits" ||
		why "$RC_TREE/lib/librxe-rdmav$RC_PABI.so not loaded"
	! grep -v "^$RC_TREE/lib/" <<<"$inits" || why "a library from outside $RC_TREE was loaded"
	[[ -z $WHY ]]
}

# Two VMs meet: VM0 ($ROLE server) accepts one connection on port $1 +
# STEP (a port per meeting; STEP counts them), VM1 connects until that
# works or $2 s have passed.
vm_barrier() {
	local port end=$((SECONDS + $2))
	STEP=$((STEP + 1))
	port=$(($1 + STEP))
	if [[ $ROLE == server ]]; then
		timeout "$2" busybox nc -l -p "$port" </dev/null >/dev/null 2>&1
	else
		until (exec 3<>"/dev/tcp/$STL_PEER_IP/$port") 2>/dev/null; do
			((SECONDS >= end)) && return 0
			sleep 0.2
		done
	fi
	return 0
}
