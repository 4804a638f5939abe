#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Runs in the test VM (scripts/bench.sh): eMTT.  SIZE MiB (default 1024)
# registered on stellar0 as small (4 KiB) pages, as transparent huge pages
# and as hugetlbfs 2 MiB pages: the parent MR's entries and the first
# registration's time (pinning included; a fresh region each, the pin
# cache off), and the same for a dma-buf of 2 MiB chunks from the test
# exporter (tests/kernel/dmabuf), mean of REPS, as ratios to the small-page
# figures (aims: entries <= 1/256, registration >= 5x faster).  Each
# registration is checked by an RDMA write and read from stellar1.  Then
# stellar1's 64 KiB RDMA WRITE bandwidth into the dma-buf MR against into
# host memory (aim >= 0.95), and the time from the exporter's move_notify
# to a dead key and to the same key valid again over the moved buffer.
set -uo pipefail

MIB=${STL_BENCH_EMTT_MIB:-1024}
REPS=${STL_BENCH_REPS:-3}
GIDX=${STL_GID_INDEX:-1}
T=build/tests/stl_emtt_test
export RDMAV_DRIVERS=$PWD/build/libstellar

insmod ./stellar.ko || { echo "bench: insmod failed"; exit 1; }
for d in stellar0 stellar1; do
	rdma link add "$d" type stellar netdev eth0 || exit 1
done
insmod "build/tests/dmabuf/$(uname -r)/stl_dmabuf_exp.ko" || exit 1
echo $((MIB / 2 + 8)) > /proc/sys/vm/nr_hugepages
grep -E 'HugePages_(Total|Free)|MemAvailable' /proc/meminfo

declare -A ent ms
for ((r = 0; r < REPS; r++)); do
	out=$("$T" -a stellar0 -b stellar1 -g "$GIDX" -B "$MIB" 2>&1) ||
		{ echo "$out"; echo "bench: stl_emtt_test -B failed"; exit 1; }
	echo "$out" | grep '^emtt-bench'
	while read -r _ kind _ _ _ e _ _ t _; do
		ent[$kind]=${e%,}
		ms[$kind]=$(echo "${ms[$kind]:-0} + $t" | bc -l)
	done <<<"$(echo "$out" | grep '^emtt-bench.*first registration')"
done
echo
printf "%s MiB, mean of %d          %10s %12s %14s %10s\n" "$MIB" "$REPS" entries "reg ms" "entries ratio" "speedup"
for k in small thp hugetlb dmabuf; do
	m=$(echo "${ms[$k]} / $REPS" | bc -l)
	s=$(echo "${ms[small]} / ${ms[$k]}" | bc -l)
	printf "%-28s %10s %12.1f %14s %10.2f\n" "$k" "${ent[$k]}" "$m" \
		"1/$((ent[small] / ent[$k]))" "$s"
done
