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

from attnviz.bench.number import format_bytes, format_number

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

# below this many bytes of x a call's fixed costs (Python, dispatch, ctypes) outweigh its reads,
# so no floor is a read limit there and nothing is flagged for beating it (``small_call_words``)
FLAG_MIN_BYTES = 2**20

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


def small_call_words(records: Sequence, times: str = "x") -> str:
    """Why a method shows above the read limit at a size too small to flag (x under
    FLAG_MIN_BYTES), in a sentence per size, or "": such a call's time is its fixed costs, not its
    reads, and a method's speed counts w and the output, which the plain read of x does not move
    (2x3x5: 120 B of x, 64 B more). ``records``: Measurements or their dicts; ``times`` joins a
    shape's sizes (the page writes 2 × 3 × 5)."""
    rows = [r if isinstance(r, dict) else r.as_dict() for r in records]
    floors = {(r["device"], tuple(r["shape"])): r for r in rows if r["method"] == "floor"}
    above: dict[tuple, list[str]] = {}
    for r in rows:
        floor = floors.get((r["device"], tuple(r["shape"])))
        if r["method"] in ("floor", "copy") or floor is None or floor["bytes"] >= FLAG_MIN_BYTES:
            continue
        if (r.get("ratio_to_floor") or 0.0) > 1.0:
            above.setdefault((r["device"], tuple(r["shape"])), []).append(r["method"])
    sentences = []
    for (device, shape), methods in above.items():
        floor = floors[(device, shape)]
        more = max(
            r["bytes"]
            for r in rows
            if r["method"] in methods and r["device"] == device and tuple(r["shape"]) == shape
        )
        sentences.append(
            f"At {times.join(map(str, shape))} on {device} ({format_bytes(floor['bytes'])} of x) "
            f"{' and '.join(methods)} {'shows' if len(methods) == 1 else 'show'} above the read "
            f"limit: a call this small times its fixed costs (the call, the dispatch), not its "
            f"reads, and a method's speed counts "
            f"att_scores and weighted too ({format_bytes(more - floor['bytes'])} more than the "
            f"read of x alone). Below {format_bytes(FLAG_MIN_BYTES)} of x nothing is flagged."
        )
    return " ".join(sentences)


def writes_words(records: Sequence, times: str = "x") -> str:
    """Why a method shows above the read limit at a size large enough to flag, in a sentence per
    size, or "": it took longer than the plain read of x (its median time against the floor's: so
    it is not flagged, see ``harness.above_floor``), but its speed counts w and the output too, and
    writing those while it reads cost it less than reading as many bytes (at T = 2 from memory the
    output is half the size of x, stored past the caches). ``records``: Measurements or their
    dicts; ``times`` joins a shape's sizes."""
    rows = [r if isinstance(r, dict) else r.as_dict() for r in records]
    floors = {(r["device"], tuple(r["shape"])): r for r in rows if r["method"] == "floor"}
    above: dict[tuple, list[dict]] = {}
    for r in rows:
        floor = floors.get((r["device"], tuple(r["shape"])))
        if r["method"] in ("floor", "copy") or floor is None or floor["bytes"] < FLAG_MIN_BYTES:
            continue
        slower = (r.get("median_s") or 0.0) > (floor.get("median_s") or 0.0) > 0.0
        if (r.get("ratio_to_floor") or 0.0) > 1.0 and slower:
            above.setdefault((r["device"], tuple(r["shape"])), []).append(r)
    sentences = []
    for (device, shape), methods in above.items():
        floor = floors[(device, shape)]
        more = max(r["bytes"] for r in methods) - floor["bytes"]
        least = min(r["median_s"] for r in methods) / floor["median_s"]
        names = " and ".join(r["method"] for r in methods)
        one = len(methods) == 1
        sentences.append(
            f"At {times.join(map(str, shape))} on {device} ({format_bytes(floor['bytes'])} of x) "
            f"{names} {'shows' if one else 'show'} above the read limit, yet "
            f"{'it' if one else 'each'} took {'' if one else 'at least '}"
            f"{format_number(least)}× as long as the read of x alone: a method's speed counts "
            f"att_scores and weighted too ({format_bytes(more)} more than x), and writing them "
            f"while reading cost less than reading as many bytes."
        )
    return " ".join(sentences)
