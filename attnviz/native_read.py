"""The machine's read limit: the C read loop of ``csrc/read_floats.c``, built
and threaded like the fused kernel (``attnviz.native``), which ``attnviz.bench`` times as the floor.

``read_mode`` guesses one stream where x fits in the last-level cache (3-8% faster there,
measured at 256 KiB-16 MiB; 0-17% slower on the host of 2026-12-03 20:40, and 18-28% slower at
24-28 MiB, so the benchmark times every way: ``bench.floor.floor_ways``) and READ_STREAMS streams
beyond (one stream was 15-30% slower from DRAM), there in units of READ_UNIT_NUMEL numbers
(4 MiB): the streams of a unit are then 1 MiB apart, which read from DRAM up to 19% faster than
streams a quarter of x apart (80 MiB, one thread: 25.5 against 21.5 GB/s; the fused kernel read
7 sentences of 12 MiB at 1.17x the old limit).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import Tensor

from attnviz import native, native_build
from attnviz.errors import AttnvizError

READ_UNIT_NUMEL = 1 << 20
# a third way to read (read_floats' mode 2): four streams side by side, each asking for its lines
# ahead as the kernel's stripes may (native.PREFETCH): where the kernel asks ahead, so can the
# floor (from DRAM on two threads on an Intel Xeon, 2026-12-05: 32.8 against 30.6 GB/s)
READ_AHEAD = 2


def read_plan(n: int, threads: int) -> tuple[int, int]:
    """(threads used, unit) for a plain read of ``n`` numbers: one thread under
    MIN_NUMEL_PER_THREAD numbers per thread; where x fits in the last-level cache, equal units, one
    per thread or a multiple of the threads, of at most MAX_UNIT_NUMEL numbers (units of at most
    that many and one short left the threads unequal work: 84 MiB in 16 MiB units on two threads,
    three units against two and a bit, read at 47 GB/s where the kernel's even cut read 54, and
    the benchmark flagged the kernel above the floor); beyond, units of READ_UNIT_NUMEL numbers
    that the threads take as they come free. (Cached, as ``plan`` is.)"""
    return _read_plan(n, threads, native.MIN_NUMEL_PER_THREAD, native.MAX_UNIT_NUMEL)


@functools.lru_cache(maxsize=256)
def _read_plan(n: int, threads: int, min_numel: int, max_unit: int):
    used = max(1, min(threads, n // min_numel))
    if not native._in_llc(n):  # from DRAM: units of READ_UNIT_NUMEL, the faster read there
        return min(used, math.ceil(n / READ_UNIT_NUMEL)), READ_UNIT_NUMEL
    if used == 1:
        return 1, max(1, n)
    units = used * math.ceil(n / (used * max_unit))  # in the last-level cache: equal units
    unit = min(max_unit, -(-math.ceil(n / units) // 256) * 256)  # whole KiB: from a line's start
    return min(used, math.ceil(n / unit)), unit


def call_mode(n: int, used: int, mode: int) -> int:
    """``mode`` as read_floats takes it for n numbers on ``used`` threads: with OWN_L2 where they
    sit in the threads' L2, so that each thread reads the same units every call, as the kernel's
    threads do there (``native._call_shape``): a floor whose units wandered between the cores'
    L2 caches read slower than the kernel (4x64x1024 and 2x1024x64 on two threads, plain C:
    fused at 0.99-1.07 of it)."""
    return mode | native.OWN_L2 if used > 1 and native._in_l2(n, used) else mode


def read_mode(n: int) -> int:
    """How ``read_sum`` reads n float32 numbers: in one stream (TILES) where they fit in the
    last-level cache, in streams side by side (STRIPES) beyond."""
    return native.TILES if native._in_llc(n) else native.STRIPES


def read_sum(x: Tensor, *, threads: int | None = None) -> float:
    """The sum of every number of ``x`` (float32, contiguous, CPU) by the C read loop: the
    machine's read limit for a one-pass method, ``reader(x, threads=threads)(x)``. The value is a
    double summed in no fixed order: it is there so that the reads happen, not to be compared bit
    for bit. Raises RuntimeError when the kernel could not be built."""
    return reader(x, threads=threads)(x)


def reader(
    x: Tensor, *, threads: int | None = None, mode: int | None = None
) -> Callable[[Tensor], float]:
    """A read of tensors shaped like ``x`` (float32, contiguous, CPU) by the C read loop, planned
    once: ``attnviz.bench`` times it as the floor.

    Built with the kernel's flags and run on the same OpenMP threads, cut the same way, reading
    one stream or four side by side (``read_mode``) into independent vector sums, so that it is
    bound by memory, not by a chain of adds. A call checks its tensor and reads it through
    ctypes, nothing more (``attnviz.native_op.reader`` calls the same loop through a builtin,
    leaner still): a floor slowed by its own call would let the kernel's leaner call seem to beat
    the machine (at 1x250x777, 7.6 µs a read planned once, 10.9 µs planned per call).
    ``mode``: TILES (one stream), STRIPES (four) or READ_AHEAD (four, asking for their lines
    ahead); ``read_mode``'s guess where None.
    """
    if not (x.is_cpu and x.dtype is torch.float32 and x.is_contiguous()):
        raise AttnvizError(
            f"read_sum needs a contiguous float32 CPU tensor; got {tuple(x.shape)} {x.dtype} "
            f"on {x.device}."
        )
    built = native_build._built
    built, lib = built if built is not None else native_build._build()
    if lib is None:
        raise RuntimeError(f"the C kernel is not available: {built.detail}")
    shape, numel, f32, read = x.shape, x.numel(), torch.float32, lib.read_floats
    n, unit = read_plan(numel, threads or torch.get_num_threads())
    mode_ = call_mode(numel, n, read_mode(numel) if mode is None else mode)

    def read_one(y: Tensor) -> float:
        if y.shape != shape or y.dtype is not f32 or not (y.is_cpu and y.is_contiguous()):
            raise AttnvizError(f"this reader reads {tuple(shape)} float32; got {tuple(y.shape)}.")
        return read(y.data_ptr(), numel, unit, n, mode_)  # c_double: a float

    return read_one
