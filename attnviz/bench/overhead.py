"""The library's own overhead: ``weighted_sum(method=...)`` against the bare torch op it runs.

    python -m attnviz.bench --overhead               # the classic 2x3x5, one thread
    python -m attnviz.bench --overhead --sizes 48x512x1024 --threads 2

Paired, in one run: each round times one block of ``calls`` calls of the library call and one of
the bare op (in a shuffled order), so load that comes and goes hits both alike; the overhead is
the median over rounds of (library - bare) per call, with the medians of each beside it.
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
        if fused_path(x, w) != "bmm":
            raise AttnvizError(
                f"'fused' runs {fused_path(x, w)} at {tuple(x.shape)}, which has no bare torch "
                f"one-liner to compare with; measure the overhead at a size where it runs bmm."
            )
        method = "bmm"
    if method not in BARE:
        raise AttnvizError(
            f"No bare op for {method!r}; choose from {', '.join(repr(m) for m in OVERHEAD_METHODS)}."
        )
    return BARE[method]


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
    calls: int = 20_000,
    seed: int = 0,
) -> list[Overhead]:
    """Time ``weighted_sum(x, w, method=m)`` and its bare op, paired per round, for each m."""
    from attnviz.aggregation import weighted_sum

    if rounds < 1 or calls < 1:
        raise AttnvizError(f"rounds and calls must be at least 1, got {rounds} and {calls}.")
    pairs = {}
    for m in methods:
        source, bare = bare_for(m, x, w)
        pairs[m] = (source, lambda m=m: weighted_sum(x, w, method=m), lambda b=bare: b(x, w))
    for _source, lib, bare in pairs.values():  # warm-up: lazy init, caches
        _block(lib, 200)
        _block(bare, 200)
    rng = random.Random(seed)
    samples: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in pairs}
    for _ in range(rounds):
        order = [(m, k) for m in pairs for k in (0, 1)]
        rng.shuffle(order)
        for m, k in order:
            samples[m][k].append(_block(pairs[m][1 + k], calls))
    out = []
    for m, (lib_s, bare_s) in samples.items():
        diffs = [a - b for a, b in zip(lib_s, bare_s, strict=True)]
        out.append(
            Overhead(
                method=m,
                bare=pairs[m][0],
                shape=tuple(x.shape),
                library_s=statistics.median(lib_s),
                bare_s=statistics.median(bare_s),
                overhead_s=statistics.median(diffs),
                rounds=rounds,
                calls=calls,
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
