#!/bin/sh
# SPDX-License-Identifier: MIT
#
# perf-buckets.sh - where the CPU time of a `perf record -a` profile went,
# in the buckets of a swap fault's path (issue "Faults at the kernel's
# speed"): traps, userfaultfd messages and wake-ups, mapping, write
# protection, TLB shootdowns, zaps, compression, the kernel's own swap
# and reclaim, the program itself, idle. One line per bucket: its share
# of the samples of the run's processes and its CPU seconds.
#
#   bench/perf-buckets.sh PERF_DATA [HZ [COMMS]]
#
# PERF_DATA: from `perf record -a -F HZ` (bench/compare-kernel.sh writes
# one per side with PERF=DIR); HZ (default 999) turns samples into CPU
# seconds. COMMS: a regular expression of the command names that are the
# run's (default: stress-ng, python, java, node, sort, uswap, and the
# kernel's swap threads and idle); other processes' samples are counted
# apart, in no share. The run's samples are bucketed by symbol name (the
# first pattern that matches, in the order below); what matches none is
# "other"; the program's own code (its binary) is "the program".
# PER=N adds a column: each bucket's CPU microseconds per one of N events
# (the run's swap-ins, say). BUCKETS_DEBUG=BUCKET prints that bucket's symbols, with their samples,
# on stderr (to refine the patterns). Needs perf.
set -u

data=${1:?usage: perf-buckets.sh PERF_DATA [HZ [COMMS]]}
hz=${2:-999}
comms=${3:-^(stress-ng|python|java|node|sort|uswap|kswapd|kcompressd|kworker|swapper|ksoftirqd|zram)}
command -v perf > /dev/null || { echo "perf-buckets: no perf" >&2; exit 1; }
[ -r "$data" ] || { echo "perf-buckets: cannot read $data" >&2; exit 1; }

perf report -i "$data" --stdio --no-children --sort comm,dso,sym -g none --percent-limit 0 \
	-F overhead,sample,comm,dso,sym 2> /dev/null | awk -v hz="$hz" -v comms="$comms" -v per="${PER:-0}" '
BEGIN {
	# First match wins: both spaces, then kernel symbols ([k]), then
	# user space ([.]).
	n = 0
	b[++n] = "lz4 compress";                      p[n] = "LZ4_compress|LZ4_putPosition|LZ4_count"
	b[++n] = "lz4 decompress";                    p[n] = "LZ4_decompress"
	nc = n
	b[++n] = "idle";                              p[n] = "halt|idle|mwait|cpuidle"
	b[++n] = "TLB shootdowns";                    p[n] = "flush_tlb|smp_call_function|native_flush|flush_smp|llist_|tlb_flush"
	b[++n] = "write protection";                  p[n] = "change_prot|mwriteprotect|change_pte|do_wp_page|wp_page|uffd_wp|userfaultfd_writeprotect"
	b[++n] = "uffd: messages, wake-ups";          p[n] = "handle_userfault|userfaultfd_|uffd|wake_up|try_to_wake|futex|poll|ioctl|ksys_read|vfs_read|fdget"
	b[++n] = "irq enable, context switches";      p[n] = "finish_task_switch|_raw_spin_unlock_irq|schedule|__switch_to|switch_mm|pick_next|dequeue|enqueue|update_curr|sched_|psi_|native_write_msr"
	b[++n] = "mapping (UFFDIO_COPY/MOVE)";        p[n] = "mfill_|move_pages|move_present|copy_page|copy_mc|_copy_from_user|_copy_to_user|copy_user|rep_movs"
	b[++n] = "zaps (MADV_DONTNEED)";              p[n] = "zap_|unmap_page|madvise|tlb_finish_mmu|free_pages_and_swap|release_pages|free_unref|tlb_batch|folios_put"
	b[++n] = "kernel swap, reclaim";              p[n] = "shrink_|reclaim|swap_|swapin|do_swap|alloc_swap|zram|bio|blk|obj_malloc|obj_free|xa_load|xas_|try_to_unmap|folio_referenced|lru|kswapd|vmscan|zs_|rmap|page_vma_mapped|isolate_|anon_vma|workingset"
	b[++n] = "memory cgroup";                     p[n] = "mem_cgroup|memcg|page_counter"
	b[++n] = "page allocation, zeroing";          p[n] = "clear_page|alloc_pages|get_page_from_freelist|rmqueue|__alloc|prep_new|free_pcp|free_page|__free_|post_alloc|memset"
	b[++n] = "traps: entry, exit, hypervisor";    p[n] = "pvm_|entry_SYSCALL|syscall_|irqentry|asm_exc|exc_page_fault|error_entry|native_irq|swapgs|do_syscall|x64_sys|restore_regs|ret_from|rseq"
	b[++n] = "page faults, other";                p[n] = "handle_mm_fault|do_anonymous|__handle_mm|do_fault|lock_vma|do_user_addr|handle_pte|pte_|pmd_|mas_|vma_|vm_normal"
	nk = n
	b[++n] = "uswap: reclaim (clock, eviction)";  p[n] = "reclaim|clock_pick|evict|stage_|victim"
	b[++n] = "uswap: fault handlers";             p[n] = "fault_|handler_main|folio_load|swap_in|swapin|readahead"
	b[++n] = "user copies (memcpy, memset)";      p[n] = "memcpy|memset|memmove"
	nu = n
}
/^#/ || NF < 6 { next }
$3 !~ comms { others += $2; next }
{
	samples = $2; dso = $4; kernel = $5 == "[k]"; sym = $6
	for (i = 7; i <= NF; i++) sym = sym " " $i
	k = ""
	if (!kernel && dso ~ /^(stress-ng|python|java|node|sort)/)
		k = "the program"
	for (i = 1; k == "" && i <= nu; i++)
		if ((i <= nc || (i <= nk) == kernel) && sym ~ p[i])
			k = b[i]
	if (k == "")
		k = kernel ? "kernel, other" : dso ~ /uswap/ ? "uswap: other (allocator, devices)" : "libraries, other"
	cnt[k] += samples; total += samples
	if (ENVIRON["BUCKETS_DEBUG"] != "" && k == ENVIRON["BUCKETS_DEBUG"]) print samples, sym > "/dev/stderr"
}
END {
	printf "%7s %9s %s %s\n", "share", "CPU s", per ? sprintf("%9s ", "us/event") : "", "bucket"
	for (k in cnt)
		printf "%6.1f%% %9.2f %s %s\n", 100 * cnt[k] / total, cnt[k] / hz,
		       per ? sprintf("%9.2f ", cnt[k] / hz * 1e6 / per) : "", k | "sort -rn"
	close("sort -rn")
	printf "%7s %9.2f %s %s\n", "", total / hz, per ? sprintf("%9.2f ", total / hz * 1e6 / per) : "",
	       "the run\047s processes"
	printf "%7s %9.2f  %s\n", "", others / hz, "other processes (not in the shares)"
}'
