"""Small sizes, before/after the C kernel ran at every size: µs per call of
weighted_sum(x, w, method=m), medians of 15 interleaved rounds of 2000-call blocks.

    python benchmarks/runs/small_sizes/measure.py THREADS   (run from the tree being measured)
"""

import statistics
import subprocess
import sys
import time

import torch

import attnviz
from attnviz import native_op

threads = int(sys.argv[1])
torch.set_num_threads(threads)
native_op.build(timeout=600)  # the operator loaded: never timed while compiling
commit = subprocess.run(
    ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
).stdout.strip()
dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "attnviz"], check=False).returncode
print(f"attnviz from {attnviz.__file__}")
print(f"tree {commit}{'+changes' if dirty else ''}, {threads} thread(s), torch {torch.__version__}")
SHAPES = [(2, 3, 5), (1, 8, 16), (4, 16, 32), (8, 16, 96), (16, 32, 64)]
METHODS = ("auto", "fused", "bmm", "broadcast")
g = torch.Generator().manual_seed(0)
for shape in SHAPES:
    x, w = torch.randn(shape, generator=g), torch.rand(shape[:2], generator=g)
    ref = attnviz.reference(x, w)
    calls = {m: (lambda m=m, x=x, w=w: attnviz.weighted_sum(x, w, method=m)) for m in METHODS}
    for m, f in calls.items():  # warm-up, plans, and the result against float64
        for _ in range(2000):
            out = f()
        assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-5), m
    times = {m: [] for m in METHODS}
    for _ in range(15):
        for m, f in calls.items():
            t0 = time.perf_counter()
            for _ in range(2000):
                f()
            times[m].append((time.perf_counter() - t0) / 2000 * 1e6)
    cells = "  ".join(f"{m} {statistics.median(v):6.2f}" for m, v in times.items())
    print(f"{str(shape):13s} {cells}")
