"""How often the floor's old one-time choice (attnviz.native_op.fastest_reader before 2026-12-06 21:50:
each way timed three times, ~16 MiB of reads a try, the best kept) picked each way to read, and how
fast each way really is over 40 alternating rounds of 20 calls (median per call).

    .venv/bin/python benchmarks/runs/issue32z/floor_picks.py SHAPE THREADS [PICKS]
"""

import collections
import math
import sys
import time

import torch

from attnviz import native, native_op, native_read

b, t, h = (int(v) for v in sys.argv[1].split("x"))
threads = int(sys.argv[2])
picks_wanted = int(sys.argv[3]) if len(sys.argv) > 3 else 30
torch.set_num_threads(threads)
names = {
    native.TILES: "one stream",
    native.STRIPES: "four streams",
    native_read.READ_AHEAD: "ahead",
}
picks = collections.Counter()
for _ in range(picks_wanted):
    x = torch.randn(b, t, h)
    readers = {how: native_op.reader(x, threads=threads, mode=how) for how in names}
    calls = max(1, min(1000, (1 << 22) // max(x.numel(), 1)))
    best = dict.fromkeys(readers, math.inf)
    for _ in range(3):  # the old choice, as it was
        for how, read in readers.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                read(x)
            best[how] = min(best[how], time.perf_counter() - t0)
    picks[names[min(best, key=best.__getitem__)]] += 1
rounds = {how: [] for how in names}
for _ in range(40):
    for how, read in readers.items():
        t0 = time.perf_counter()
        for _ in range(20):
            read(x)
        rounds[how].append((time.perf_counter() - t0) / 20)
medians = {names[how]: round(sorted(v)[20] * 1e6, 1) for how, v in rounds.items()}
print(
    f"{sys.argv[1]} on {threads} threads: picked {dict(picks)} of {picks_wanted}; medians (us) {medians}"
)
