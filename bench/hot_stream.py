#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hot_stream.py - a hot set used at memory speed beside a stream: does the
swap keep the hot set in memory?

    hot_stream.py [HOT_MIB [COLD_MIB [PASSES]]]     (default 12 64 12)

Fills HOT_MIB MiB (the hot set), then PASSES times writes one byte to each
page of COLD_MIB MiB in turn (the stream, a new value each pass) and,
after every MiB of it, reads one byte of every hot page. A swap that can
tell the hot pages from the stream keeps the hot set resident and swaps
the stream through the rest of its memory; one that evicts by age alone
evicts the hot pages too and they fault straight back. Prints the sum of
the hot bytes read (the same under any swap) on stdout and, on stderr,
"seconds=..." for the passes. Its swap-ins are the swap's to count
(`uswap run --stats`, the kernel's pswpin).

For bench/compare-kernel.sh and docs/benchmarks.md, "The working set".
"""
import sys
import time

PAGE = 4096
STEP = 1 << 20


def main():
    defaults = [12, 64, 12]
    try:
        args = [int(a) for a in sys.argv[1:]]
    except ValueError:
        args = []
    if len(sys.argv) > 4 or len(args) != len(sys.argv) - 1 or any(a < 1 for a in args):
        sys.exit("usage: hot_stream.py [HOT_MIB [COLD_MIB [PASSES]]] (whole numbers >= 1)")
    hot_mib, cold_mib, passes = args + defaults[len(args):]
    hot = bytearray(hot_mib << 20)
    cold = bytearray(cold_mib << 20)
    hot[::PAGE] = b"h" * (len(hot) // PAGE)
    total = 0
    t0 = time.monotonic()
    for p in range(passes):
        fill = bytes([p + 1 & 255]) * (STEP // PAGE)
        for off in range(0, len(cold), STEP):
            cold[off:off + STEP:PAGE] = fill
            total += hot[::PAGE].count(b"h")
    print("seconds=%.3f" % (time.monotonic() - t0), file=sys.stderr)
    print(total)


if __name__ == "__main__":
    main()
