"""The floor: a plain read of x at the machine's read limit, timed beside every method.

Every method must read x once, so none can beat a plain read of the same bytes on the same
threads; ``measure`` times the floor in the same rounds and flags a method that does (then the
floor is wrong, not the method). On the CPU, for contiguous float32 x, the floor is our C read
loop (``attnviz.native``, the fastest of its three ways of reading, timed on x); elsewhere (CUDA,
MPS, other dtypes) the faster of PyTorch's plain reads, timed on x.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import Tensor

from attnviz.bench.devices import synchronize

READ_LOOP = "C read loop"  # what the floor runs where attnviz.native builds (float32, CPU)
TORCH_SUM = "x.sum()"

# PyTorch's plain reads of x, for the floor where the C loop does not apply (CUDA, MPS, other
# dtypes): one reduction to a number, and the unweighted sum over T (the method without weights,
# which writes (B, H) from many blocks at once; on an H200 cuBLAS's bmm read 96 MiB 1.11x faster
# than x.sum(): benchmarks/RESULTS.md, GPU). The floor is the faster of them, timed on x.
TORCH_READS: dict[str, Callable[[Tensor], Tensor]] = {
    TORCH_SUM: lambda x: x.sum(),
    "x.sum(1)": lambda x: x.sum(dim=1),
}
_torch_read_picked: dict[tuple, str] = {}


def _fastest_torch_read(x: Tensor, tries: int = 3) -> str:
    """The name of the faster TORCH_READS entry on x (best of ``tries`` synchronized calls each,
    after one warm-up), picked once per device, shape, dtype and strides."""
    key = (str(x.device), tuple(x.shape), x.dtype, x.stride())
    if key not in _torch_read_picked:
        best = {}
        for name, read in TORCH_READS.items():
            read(x)  # warm-up: kernel selection, allocator
            times = []
            for _ in range(tries):
                synchronize(x.device)
                start = time.perf_counter()
                read(x)
                synchronize(x.device)
                times.append(time.perf_counter() - start)
            best[name] = min(times)
        _torch_read_picked[key] = min(best, key=best.get)
    return _torch_read_picked[key]


def floor_runs(x: Tensor) -> str:
    """What the floor runs on ``x``: the C read loop (float32, contiguous, CPU, where it builds),
    else the faster of PyTorch's plain reads (TORCH_READS) on x."""
    from attnviz import native

    cpu_f32 = x.device.type == "cpu" and x.dtype == torch.float32 and x.is_contiguous()
    return READ_LOOP if cpu_f32 and native.available() else _fastest_torch_read(x)


def floor_function(x: Tensor) -> Callable[[Tensor, Tensor], object]:
    """The floor for inputs like ``x``: a plain read of x at the machine's limit (``floor_runs``).
    Neither allocates a (B, T, H) anything; the C loop allocates nothing at all."""
    from attnviz import native_op

    runs = floor_runs(x)
    if runs == READ_LOOP:
        read = native_op.fastest_reader(x)  # planned once, called as fused calls its kernel
        return lambda x, w: read(x)  # read x once, C, vector accumulators
    torch_read = TORCH_READS[runs]
    return lambda x, w: torch_read(x)  # read x once
