#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fork_swapped.py - how long fork() takes when most of a process is swapped out.

    fork_swapped.py [MIB]      (default 1024)

Writes MIB MiB of pages, each holding its own index (compressible, as most
program memory is), sleeps a second so that a limit below MIB has swapped
most of it out, then times os.fork() in the parent, from the call to its
return. The child checks every 64th page and rewrites some; the parent
then checks every page, so both sides must see their own bytes. Prints the
verification on stdout (the same under any swap) and, on stderr,
"fork_ms=... maxrss_mib=..." (the parent's peak RSS, from getrusage).

For bench/compare-kernel.sh: the kernel copies page tables and shares swap
entries; `uswap run` brings every swapped folio back in before a fork
(docs/run.md), so its fork time and peak RSS grow with MIB.
"""
import os
import resource
import struct
import sys
import time

PAGE = 4096


def page(i, tag):
    return struct.pack("<QQ", i, tag) * (PAGE // 16)


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    n = mib * 256
    buf = bytearray(n * PAGE)
    for i in range(n):
        buf[i * PAGE:(i + 1) * PAGE] = page(i, 1)
    time.sleep(1)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        for i in range(0, n, 64):
            if buf[i * PAGE:(i + 1) * PAGE] != page(i, 1):
                os._exit(3)
            buf[i * PAGE:(i + 1) * PAGE] = page(i, 2)
        os._exit(0)
    fork_ms = (time.monotonic() - t0) * 1e3
    _, status = os.waitpid(pid, 0)
    if status != 0:
        print("child saw wrong bytes (status %d)" % status)
        return 1
    bad = sum(buf[i * PAGE:(i + 1) * PAGE] != page(i, 1) for i in range(n))
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("fork_ms=%.1f maxrss_mib=%.0f" % (fork_ms, maxrss), file=sys.stderr)
    print("verified %d MiB in parent and child%s" % (mib, "" if not bad else ": %d BAD" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
