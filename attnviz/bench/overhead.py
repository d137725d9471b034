"""The library's own overhead: ``weighted_sum(method=...)`` against the bare torch op it runs.

    python -m attnviz.bench --overhead               # the classic 2x3x5, one thread
    python -m attnviz.bench --overhead --sizes 48x512x1024 --threads 2

Paired, in one run: each round times ``pairs`` pairs of short blocks (``calls`` calls of the library
call, then ``calls`` of the bare op, or the other way round, at random), each block well under a
scheduler time slice, so load that comes and goes hits both halves of a pair alike and a preempted
block is one outlier the median drops. Per round: the median over pairs of (library - bare) per call,
and the median block of each; reported: the median of these over rounds.
Core layer: torch only.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.errors import AttnvizError

# the bare operation each method name stands for, as a student would type it
BARE: dict[str, tuple[str, Callable[[Tensor, Tensor], Tensor]]] = {
    "broadcast": ("(x * w[..., None]).sum(dim=1)", lambda x, w: (x * w[..., None]).sum(dim=1)),
    "einsum": ('torch.einsum("bth,bt->bh", x, w)', lambda x, w: torch.einsum("bth,bt->bh", x, w)),
    "bmm": (
        "torch.bmm(w[:, None, :], x)[:, 0, :]",
        lambda x, w: torch.bmm(w[:, None, :], x)[:, 0, :],
    ),
}
OVERHEAD_METHODS = ("auto", "broadcast", "einsum", "bmm", "fused")


@dataclass(frozen=True)
class Overhead:
    """One method's library call against its bare op, per call, in seconds."""

    method: str
    bare: str  # the bare op's source, as timed
    shape: tuple[int, int, int]
    library_s: float  # median over rounds of weighted_sum(..., method=method)
    bare_s: float  # median over rounds of the bare op
    overhead_s: float  # median over rounds of (library - bare) in the same round
    rounds: int
    calls: int


def bare_for(method: str, x: Tensor, w: Tensor) -> tuple[str, Callable[[Tensor, Tensor], Tensor]]:
    """The bare op that ``weighted_sum(x, w, method=method)`` ends up running on these inputs."""
    from attnviz.fused import choose_method, fused_path

    if method == "auto":
        method = choose_method(x.device, tuple(x.shape), x.dtype)
    if method == "fused":
        path = fused_path(x, w)
        if path == "C row-sum kernel":
            return _kernel_call(x, w)
        if path != "bmm":
            raise AttnvizError(
                f"'fused' runs {path} at {tuple(x.shape)}, which has no bare torch one-liner to "
                f"compare with; measure the overhead on float32 (the C kernel) or where it runs bmm."
            )
        method = "bmm"
    if method not in BARE:
        raise AttnvizError(
            f"No bare op for {method!r}; choose from {', '.join(repr(m) for m in OVERHEAD_METHODS)}."
        )
    return BARE[method]


def _kernel_call(x: Tensor, w: Tensor) -> tuple[str, Callable[[Tensor, Tensor], Tensor]]:
    """The C kernel's call that fused makes on x: its operator's builtin, built and given x's plan
    here first (waited for: never timed while compiling), else the ctypes call."""
    from attnviz import native, native_op

    native_op.build()
    native_op.learn(x, torch.get_num_threads())
    op = native_op.loaded
    if op is not None and op(x, w) is not None:
        return "attnviz.native_op.loaded(x, w)", op
    return "attnviz.native.try_weighted_rows(x, w)", native.try_weighted_rows


def _block(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def measure_overhead(
    x: Tensor,
    w: Tensor,
    *,
    methods: Sequence[str] = OVERHEAD_METHODS,
    rounds: int = 7,
    calls: int = 200,
    pairs: int = 100,
    seed: int = 0,
) -> list[Overhead]:
    """Time ``weighted_sum(x, w, method=m)`` and its bare op, paired block by block, for each m."""
    from attnviz.aggregation import weighted_sum

    if min(rounds, calls, pairs) < 1:
        raise AttnvizError(
            f"rounds, calls and pairs must be at least 1, got {rounds}, {calls}, {pairs}."
        )
    fns = {}
    for m in methods:
        source, bare = bare_for(m, x, w)
        fns[m] = (source, lambda m=m: weighted_sum(x, w, method=m), lambda b=bare: b(x, w))
    for _source, lib, bare in fns.values():  # warm-up: lazy init, caches
        _block(lib, 1000)
        _block(bare, 1000)
    rng = random.Random(seed)
    per_round: dict[str, list[tuple[float, float, float]]] = {m: [] for m in fns}
    for _ in range(rounds):
        order = list(fns)
        rng.shuffle(order)
        for m in order:
            _source, lib, bare = fns[m]
            lib_s, bare_s = [], []
            for _ in range(pairs):
                if rng.random() < 0.5:
                    lib_s.append(_block(lib, calls))
                    bare_s.append(_block(bare, calls))
                else:
                    bare_s.append(_block(bare, calls))
                    lib_s.append(_block(lib, calls))
            diffs = [a - b for a, b in zip(lib_s, bare_s, strict=True)]
            per_round[m].append(
                (statistics.median(lib_s), statistics.median(bare_s), statistics.median(diffs))
            )
    out = []
    for m, rows in per_round.items():
        out.append(
            Overhead(
                method=m,
                bare=fns[m][0],
                shape=tuple(x.shape),
                library_s=statistics.median(r[0] for r in rows),
                bare_s=statistics.median(r[1] for r in rows),
                overhead_s=statistics.median(r[2] for r in rows),
                rounds=rounds,
                calls=calls * pairs,
            )
        )
    return out


def format_overhead(rows: Sequence[Overhead]) -> str:
    """A fixed-width table: method, library call, bare op, overhead, and the bare op's source."""
    from attnviz.bench.harness import format_time

    head = f"{'method':<10} {'weighted_sum':>13} {'bare op':>10} {'overhead':>10}  bare op run"
    lines = [head, "-" * (len(head) + 30)]
    for r in rows:
        lines.append(
            f"{r.method:<10} {format_time(r.library_s):>13} {format_time(r.bare_s):>10} "
            f"{format_time(r.overhead_s):>10}  {r.bare}"
        )
    return "\n".join(lines)
