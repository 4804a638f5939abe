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
	echo "$out" | grep -qE '^7 passed, 0 failed$' || why "not all 7 subtests passed"
	run rdma statistic show link stellar0/1
	[[ -z $WHY ]]
}

scenario emtt_huge_pages_map_with_large_pages s_emtt_huge_pages_map_with_large_pages
