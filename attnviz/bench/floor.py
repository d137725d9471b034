"""The floor: a plain read of x at the machine's read limit, timed beside every method.

Every method must read x once, so none can beat a plain read of the same bytes on the same
threads; ``measure`` times the floor in the same rounds and flags a method that does (then the
floor is wrong, not the method). On the CPU, for contiguous float32 x, the floor is our C read
loop (``attnviz.native_read``), which can read x three ways; elsewhere (CUDA, MPS, other dtypes)
PyTorch's plain reads. Which way is the fastest depends on where x sits, so ``measure`` times
every way in every round and keeps the one with the lowest median (``floor_ways``).

A choice made once, before the rounds, was a contest of single calls: at 16 MiB on two threads
(an AMD EPYC with a 32 MiB L3, whose calls there spread by 15-25%) it picked the slowest way, four
streams asking ahead (20% slower than the others over 40 rounds), in 6 of 30 tries, and
``python -m attnviz.bench`` then showed fused at 1.22 of the floor, flagged as above it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

READ_LOOP = "C read loop"  # what the floor runs where attnviz.native builds (float32, CPU)
TORCH_READ = "PyTorch's plain reads"  # what it runs elsewhere
TORCH_SUM = "x.sum()"

# PyTorch's plain reads of x, for the floor where the C loop does not apply (CUDA, MPS, other
# dtypes): one reduction to a number, and the unweighted sum over T (the method without weights,
# which writes (B, H) from many blocks at once; on an H200 cuBLAS's bmm read 96 MiB 1.11x faster
# than x.sum(): benchmarks/RESULTS.md, GPU).
TORCH_READS: dict[str, Callable[[Tensor], Tensor]] = {
    TORCH_SUM: lambda x: x.sum(),
    "x.sum(1)": lambda x: x.sum(dim=1),
}

# the C read loop's ways (read_floats' modes, attnviz/csrc/read_floats.c), by what each reads
ONE_STREAM = "one stream"
FOUR_STREAMS = "four streams"
FOUR_AHEAD = "four streams asking ahead"
MAX_WAYS = 3  # the most ways a floor has (the worker's time budget counts each)


def floor_runs(x: Tensor) -> str:
    """What the floor runs on ``x``: the C read loop (float32, contiguous, CPU, where it builds),
    else PyTorch's plain reads."""
    from attnviz import native

    cpu_f32 = x.device.type == "cpu" and x.dtype == torch.float32 and x.is_contiguous()
    return READ_LOOP if cpu_f32 and native.available() else TORCH_READ


def floor_ways(x: Tensor) -> dict[str, Callable[[Tensor, Tensor], object]]:
    """Every way the floor may read inputs like ``x``, by name (``measure`` times each in every
    round and keeps the fastest): the C read loop in one stream, in four side by side, and in four
    asking for their lines ahead as the kernel's stripes may (``native.PREFETCH``), each planned
    once and called as leanly as fused calls its kernel (``native_op.reader``); else
    ``TORCH_READS``. None allocates a (B, T, H) anything; the C loop allocates nothing at all."""
    if floor_runs(x) == TORCH_READ:
        return {name: (lambda x, w, read=read: read(x)) for name, read in TORCH_READS.items()}
    from attnviz import native, native_op, native_read

    modes = {
        ONE_STREAM: native.TILES,
        FOUR_STREAMS: native.STRIPES,
        FOUR_AHEAD: native_read.READ_AHEAD,
    }
    ways = {}
    for name, mode in modes.items():
        read = native_op.reader(x, mode=mode)
        ways[f"{READ_LOOP}, {name}"] = lambda x, w, read=read: read(x)
    return ways


def floor_ways_words(records: Sequence, device: str) -> str:
    """Which way was the floor at each size on ``device``, in words, for the CLI's footer:
    "one stream (4x16x32, 8x32x64); four streams (32x256x512)" (``records``: Measurements,
    the floor's path naming its way)."""
    sizes: dict[str, list[str]] = {}
    for r in records:
        if r.method == "floor" and r.device == device:
            way = r.notes.get("path", "").removeprefix(f"{READ_LOOP}, ")
            sizes.setdefault(way, []).append("x".join(map(str, r.shape)))
    return "; ".join(f"{way} ({', '.join(shapes)})" for way, shapes in sizes.items())
