# SPDX-License-Identifier: MIT
"""Fork while other threads run, with most of the heap swapped out.

96 MiB of random bytes, three threads spinning, then 20 forks: each child
checks the list's length and every 16th block's SHA-256. Under
`uswap run --order 4 --limit 8M` the children saw zeros where the list's
items were (its pager's threads start in the child before the pager has
the heap, and glibc's start of a thread reads there). Run by
tests/run_daemon.sh, in-process and with --daemon.
"""
import hashlib
import os
import threading

blocks = [os.urandom(1 << 20) for _ in range(96)]
want = [hashlib.sha256(b).digest() for b in blocks]
stop = False


def spin():
    while not stop:
        pass


threads = [threading.Thread(target=spin) for _ in range(3)]
for t in threads:
    t.start()
bad = 0
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        ok = len(blocks) == 96 and all(
            hashlib.sha256(blocks[j]).digest() == want[j] for j in range(0, 96, 16))
        os._exit(0 if ok else 1)
    bad += os.waitpid(pid, 0)[1] != 0
stop = True
for t in threads:
    t.join()
print("fork with threads: ok" if bad == 0 else
      "fork with threads: %d of 20 children saw wrong data" % bad)
