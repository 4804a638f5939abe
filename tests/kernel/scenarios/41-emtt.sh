# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# 41-emtt.sh - eMTT: MRs over transparent huge pages, hugetlbfs pages,
# small pages and mixes of them get the largest parent page size their
# layout allows; bytes cross huge-page boundaries intact.  Sourced by
# vm-one.sh (after lib.sh); starts and ends with stellar0 and stellar1
# ACTIVE over rxe0.

EMTT_TEST=build/tests/stl_emtt_test

# stl_emtt_test between stellar0 and stellar1, with 2 MiB pages reserved
# for hugetlbfs and THP allowed (madvise); both restored afterwards.
s_emtt_huge_pages_map_with_large_pages() {
	local out rc=0 nr thp
	nr=$(cat /proc/sys/vm/nr_hugepages)
	thp=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled)
	echo "nr_hugepages $nr, THP $thp"
	echo 16 > /proc/sys/vm/nr_hugepages
	[[ $thp == never ]] && echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
	grep -E 'HugePages_(Total|Free)' /proc/meminfo
	out=$(timeout -k 5 600 "$EMTT_TEST" -a stellar0 -b stellar1 -g "$STL_GIDX" 2>&1) || rc=$?
	echo "$out"
	echo "$nr" > /proc/sys/vm/nr_hugepages
	[[ $thp == never ]] && echo never > /sys/kernel/mm/transparent_hugepage/enabled
	((rc == 0)) || why "$(echo "$out" | grep -E '^FAIL' | head -n 3 | tr '\n' ';')"
	echo "$out" | grep -qE '^8 passed, 0 failed$' || why "not all 8 subtests passed"
	run rdma statistic show link stellar0/1
	[[ -z $WHY ]]
}

scenario emtt_huge_pages_map_with_large_pages s_emtt_huge_pages_map_with_large_pages

# ibv_reg_dmabuf_mr on stellar0 over every exporter this kernel has: the
# test exporter (tests/kernel/dmabuf: 4 KiB, 64 KiB and 2 MiB chunks, moves
# and revocation), udmabuf (memfd pages, and hugetlbfs pages from 6.2) and
# the system dma-heap where the kernel has them (6.12 must); libstellar-gpu
# (stellar_reg_gpu_mr, stellar-gpu-check) over a fake CUDA driver; peers
# stellar1 and plain rxe0.  The exporter module unloads afterwards: nothing
# holds a buffer.
s_emtt_dmabuf_mrs_move_and_revoke() {
	local ko out rc peer kinds="exp4k,exp64k,exp2m" nr
	ko=build/tests/dmabuf/$(uname -r)/stl_dmabuf_exp.ko
	run insmod "$ko" || { why "insmod $ko failed"; return 1; }
	# udmabuf takes hugetlbfs memfds from 6.2 on.
	if [[ -e /dev/udmabuf && $(uname -r) == 6.1.* ]]; then
		kinds+=",udmabuf"
	elif [[ -e /dev/udmabuf ]]; then
		kinds+=",udmabuf,udmabuf-huge"
	elif [[ $(uname -r) == 6.12* ]]; then
		why "no /dev/udmabuf on $(uname -r)"
	fi
	if [[ -e /dev/dma_heap/system ]]; then
		kinds+=",heap"
	elif [[ $(uname -r) == 6.12* ]]; then
		why "no /dev/dma_heap/system on $(uname -r)"
	fi
	nr=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo none)
	[[ $nr != none ]] && echo 16 > /proc/sys/vm/nr_hugepages
	[[ $nr == none ]] && kinds=${kinds/,udmabuf-huge/}
	# libstellar-gpu over the fake CUDA driver, whose memory is exp2m's.
	kinds+=",gpu"
	export STELLAR_LIBCUDA=$PWD/build/tests/fakecuda/libcuda.so.1
	for peer in stellar1 rxe0; do
		[[ $peer == rxe0 ]] && kinds=exp2m,gpu
		rc=0
		out=$(timeout -k 5 600 "$EMTT_TEST" -a stellar0 -b "$peer" -g "$STL_GIDX" -e "$kinds" 2>&1) || rc=$?
		echo "$out"
		((rc == 0)) || why "peer $peer: $(echo "$out" | grep -E '^FAIL' | head -n 3 | tr '\n' ';')"
		echo "$out" | grep -qE '^[1-9][0-9]* passed, 0 failed$' || why "peer $peer: not every subtest passed"
	done
	[[ $nr != none ]] && echo "$nr" > /proc/sys/vm/nr_hugepages
	run rdma statistic show link stellar0/1
	run rmmod stl_dmabuf_exp || why "the exporter module is still in use"
	[[ -z $WHY ]]
}

scenario emtt_dmabuf_mrs_move_and_revoke s_emtt_dmabuf_mrs_move_and_revoke
