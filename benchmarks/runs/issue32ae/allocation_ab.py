"""The kernel through ctypes into an output made three ways, interleaved per call (40 calls each):
torch.empty (4 KiB pages, mapped afresh by glibc each call at these sizes), an anonymous mapping
advised for huge pages ("huge", each page faulted in by whichever kernel thread writes it first),
the same paged in by the calling thread first ("touch1", what attnviz.large_outputs keeps), and
one output paged in once and written again every call ("kept": what no fresh memory can beat).

    .venv/bin/python benchmarks/runs/issue32ae/allocation_ab.py THREADS BxTxH
"""

import ctypes
import mmap
import statistics
import sys
import time

import torch

from attnviz import native, native_build

HUGE = 2 << 20


def advised(count: int, touch: bool) -> torch.Tensor:
    whole = -(-count * 4 // HUGE) * HUGE
    m = mmap.mmap(-1, whole + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_HUGEPAGE)
    start = -ctypes.addressof(ctypes.c_char.from_buffer(m)) % HUGE
    if touch:
        for at in range(start, start + whole, HUGE):
            m[at] = 0
    return torch.frombuffer(m, dtype=torch.float32, count=count, offset=start)


torch.set_num_threads(int(sys.argv[1]))
b, t, h = map(int, sys.argv[2].split("x"))
x, w = torch.randn(b, t, h), torch.rand(b, t)
_, lib = native_build._build()
native.weighted_rows(x, w)  # the shape's first call times its two ways to load
shape, split = native.call_plan(b, t, h, torch.get_num_threads())
assert split == 1
made = {
    "plain": lambda: torch.empty(b, h),
    "huge": lambda: advised(b * h, touch=False),
    "touch1": lambda: advised(b * h, touch=True),
    "kept": lambda: kept,
}
kept = advised(b * h, touch=True).fill_(0)
times: dict[str, list[float]] = {name: [] for name in made}
for _ in range(40):
    for name, make in made.items():
        t0 = time.perf_counter()
        y = make()
        lib.weighted_rows_f32(x.data_ptr(), w.data_ptr(), y.data_ptr(), y.data_ptr(), shape)
        times[name].append((time.perf_counter() - t0) * 1e3)
        del y
for name, ms in times.items():
    q1, med, q3 = statistics.quantiles(ms, n=4)
    print(
        f"{sys.argv[2]} threads {sys.argv[1]} {name:7s} q1 {q1:.1f} median {med:.1f} q3 {q3:.1f} "
        f"max {max(ms):.1f} ms"
    )
