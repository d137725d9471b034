"""The kernel through ctypes into a fresh huge-page output paged in two ways, interleaved per call:
all pages first by the calling thread ("touch1", what attnviz keeps today), or a run of pages at a
time, each run just before the kernel writes the rows that lie in it ("chunkN": N MiB a run, the
kernel called on those rows; Linux's zeroing leaves a page's lines in the cache, where the
kernel's writes then find them), and one output paged in once ("kept", the bound).

    .venv/bin/python benchmarks/runs/issue32af/chunked_ab.py THREADS BxTxH [CALLS]
"""

import ctypes
import mmap
import statistics
import sys
import time

import torch

from attnviz import native, native_build

HUGE = 2 << 20


def advised(count: int, touch: bool) -> tuple[torch.Tensor, mmap.mmap]:
    whole = -(-count * 4 // HUGE) * HUGE
    m = mmap.mmap(-1, whole + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_HUGEPAGE)
    start = -ctypes.addressof(ctypes.c_char.from_buffer(m)) % HUGE
    out = torch.frombuffer(m, dtype=torch.float32, count=count, offset=start)
    if touch:
        out[:: HUGE // 4].zero_()
    return out


torch.set_num_threads(int(sys.argv[1]))
b, t, h = map(int, sys.argv[2].split("x"))
calls = int(sys.argv[3]) if len(sys.argv) > 3 else 30
x, w = torch.randn(b, t, h), torch.rand(b, t)
_, lib = native_build._build()
native.weighted_rows(x, w)
shape, split = native.call_plan(b, t, h, torch.get_num_threads())
assert split == 1
print("plan", list(shape))
ref = (x.double() * w.double()[..., None]).sum(1)


def whole(y):
    lib.weighted_rows_f32(x.data_ptr(), w.data_ptr(), y.data_ptr(), y.data_ptr(), shape)


def chunked(mib):
    rows = max(1, (mib << 20) // (4 * h))
    part = (ctypes.c_long * 7)(*shape)

    def run(y):
        flat = y
        for b0 in range(0, b, rows):
            b1 = min(b, b0 + rows)
            flat[b0 * h : b1 * h : HUGE // 4].zero_()
            part[0] = b1 - b0
            lib.weighted_rows_f32(
                x.data_ptr() + b0 * t * h * 4,
                w.data_ptr() + b0 * t * 4,
                y.data_ptr() + b0 * h * 4,
                y.data_ptr(),
                part,
            )

    return run


kept = advised(b * h, touch=True).fill_(0)
ways = {
    "touch1": (lambda: advised(b * h, True), whole),
    "chunk2": (lambda: advised(b * h, False), chunked(2)),
    "chunk4": (lambda: advised(b * h, False), chunked(4)),
    "chunk8": (lambda: advised(b * h, False), chunked(8)),
    "kept": (lambda: kept, whole),
}
for name, (make, call) in ways.items():
    y = make()
    call(y)
    err = (y.view(b, h).double() - ref).abs().max().item()
    assert err < 1e-3 * (1 + ref.abs().max().item()), (name, err)
    del y
times = {name: [] for name in ways}
for _ in range(calls):
    for name, (make, call) in ways.items():
        t0 = time.perf_counter()
        y = make()
        call(y)
        times[name].append((time.perf_counter() - t0) * 1e3)
        del y
for name, ms in times.items():
    q1, med, q3 = statistics.quantiles(ms, n=4)
    print(
        f"{sys.argv[2]} threads {sys.argv[1]} {name:7s} q1 {q1:.2f} median {med:.2f} q3 {q3:.2f} max {max(ms):.1f} ms"
    )
