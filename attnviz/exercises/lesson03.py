"""Lesson 03's checkers: the bytes of the one-liner's temporary, and a timer done right (against a
pretend GPU whose clock the checker controls)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from random import Random

import numpy as np
import torch

from attnviz.exercises.answer_key import reference
from attnviz.exercises.cases import distinct_sizes, dtype_name, fresh_seed
from attnviz.exercises.engine import Case, Entry, Exercise, Kind, Outcome, run
from attnviz.exercises.result import CheckResult

# --------------------------------------------------------------------------------------------
# Exercise 2: the bytes of the temporary


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


@reference
def _temporary_bytes(b: int, t: int, h: int, dtype: torch.dtype) -> int:
    return b * t * h * _itemsize(dtype)  # the (B, T, H) product, before the sum


def _judge_bytes(o: Outcome) -> Outcome:
    b, t, h, dtype = o.case.args
    got, want = o.output, o.case.expected
    pair = f"for b={b}, t={t}, h={h}, dtype={dtype_name(dtype)} your function returned"
    o.kind = Kind.WRONG
    if isinstance(got, bool) or not isinstance(got, int | np.integer):
        right = isinstance(got, float | np.floating) and math.isfinite(got) and got == want
        o.detail = f"{pair} a {type(got).__name__}; return a whole number of bytes as an int" + (
            " (the value itself is right)." if right else "."
        )
        o.keys = ("not_int",)
        return o
    if int(got) != want:
        o.detail = f"{pair} {int(got)}, which is not the size of that temporary."
        return o
    o.kind, o.ok = Kind.OK, True
    return o


BYTES: dict[str, Entry] = {
    "elements": Entry(
        "counted numbers, not bytes",
        "Each number takes as many bytes as its dtype needs: 2 for float16, 4 for float32, 8 for "
        "float64. Take that size from the dtype.",
        lambda b, t, h, d: b * t * h,
    ),
    "output_only": Entry(
        "counted the final (B, H) result",
        "The question is about the (B, T, H) temporary the product makes before the sum.",
        lambda b, t, h, d: b * h * _itemsize(d),
    ),
    "counted_expand": Entry(
        "also counted att_scores[..., None] stretched to (B, T, H)",
        "Broadcasting never materialises it: the stretched axis is a view with stride 0.",
        lambda b, t, h, d: 2 * b * t * h * _itemsize(d),
    ),
    "fixed_itemsize_4": Entry(
        "assumed 4 bytes per number",
        "That holds for float32 only. Take the size from the dtype.",
        lambda b, t, h, d: b * t * h * 4,
    ),
    "fixed_itemsize_8": Entry(
        "assumed 8 bytes per number",
        "That holds for float64 only. Take the size from the dtype.",
        lambda b, t, h, d: b * t * h * 8,
    ),
    "bits": Entry(
        "counted bits",
        "There are 8 bits in a byte.",
        lambda b, t, h, d: b * t * h * _itemsize(d) * 8,
    ),
    "with_output": Entry(
        "added the (B, H) result too",
        "Count only the (B, T, H) temporary.",
        lambda b, t, h, d: (b * t * h + b * h) * _itemsize(d),
    ),
    "not_int": Entry("", "Return an int."),
}

_BYTES = Exercise("intermediate_bytes", "b, t, h, dtype", BYTES, _judge_bytes)


def check_intermediate_bytes(
    fn: Callable[[int, int, int, torch.dtype], int], *, seed: int | None = None
) -> CheckResult:
    """Check fn(b, t, h, dtype) -> bytes of the temporary that `net_output * att_scores[..., None]`
    allocates before `.sum(dim=1)` reduces it, as an int."""
    rng = Random(fresh_seed(seed))
    cases = [("the classic shape, float32", 2, 3, 5, torch.float32)]
    for dtype in (torch.float32, torch.float16, torch.float64, torch.bfloat16):
        b, t, h = distinct_sizes(rng, 3, 2, 64)
        cases.append((f"a fresh shape in {dtype_name(dtype)}", b, t, h, dtype))
    b, t = rng.randint(16, 256), rng.randint(64, 1024)
    cases.append(("a realistic batch, float16", b, t, 768, torch.float16))
    names = ("b", "t", "h", "dtype")
    built = [
        Case(label, (b, t, h, d), names, answer=_temporary_bytes) for label, b, t, h, d in cases
    ]
    return run(_BYTES, fn, built)


# --------------------------------------------------------------------------------------------
# Exercise 1: a timer


class VirtualGPU:
    """A pretend accelerator with a pretend clock, so a timer can be checked exactly.

    op() queues `cost` seconds of work and returns after `launch` seconds of host time (like a CUDA
    kernel launch); the first call costs `cold` (like compilation and allocation); sync() waits
    until the queue is empty; clock() reads host time. A timer gets them as plain functions
    (``controls``), not as the device's methods.
    """

    def __init__(self, launch: float, warm: float, cold: float) -> None:
        self.launch, self.warm, self.cold = launch, warm, cold
        self.host = 0.0
        self.busy_until = 0.0
        self.calls = 0
        self.clock_reads = 0
        self.syncs = 0
        self.events: list[str] = []
        self.readings: list[float] = []  # what clock() returned, in order

    def op(self) -> None:
        self.calls += 1
        cost = self.cold if self.calls == 1 else self.warm
        self.busy_until = max(self.host, self.busy_until) + cost
        self.host += self.launch
        self.events.append("op")

    def sync(self) -> None:
        self.syncs += 1
        self.host = max(self.host, self.busy_until)
        self.events.append("sync")

    def clock(self) -> float:
        self.clock_reads += 1
        self.events.append("clock")
        self.readings.append(self.host)
        return self.host

    def controls(self) -> tuple[Callable[[], None], Callable[[], float], Callable[[], None]]:
        """op, clock and sync as plain functions: a bound method would hand the timer the device
        itself (`op.__self__`), and with it the cost it is asked to measure."""
        device = self

        def op() -> None:
            device.op()

        def clock() -> float:
            return device.clock()

        def sync() -> None:
            device.sync()

        for f in (op, clock, sync):  # printed, each says what it is, not where it lives
            f.__qualname__ = f.__name__
        return op, clock, sync


def measured(value: float, readings: Sequence[float], calls: int) -> bool:
    """value is what two of the readings measured: their difference, or that divided by a number
    of calls up to calls (one reading around several calls). readings never decrease."""
    for k in range(1, max(calls, 1) + 1):
        span = value * k
        for i, start in enumerate(readings):
            j = bisect.bisect_left(readings, start + span * (1 - 1e-9), lo=i)
            if j < len(readings) and math.isclose(
                readings[j] - start, span, rel_tol=1e-9, abs_tol=1e-15
            ):
                return True
    return False


def _judge_timer(o: Outcome) -> Outcome:
    dev: VirtualGPU = o.case.context
    repeats, warm = o.case.args[1], o.case.expected
    o.kind = Kind.WRONG
    try:
        times = [float(v) for v in np.asarray(o.output, dtype=np.float64).reshape(-1)]
    except (TypeError, ValueError):
        o.detail = f"your timer returned a {type(o.output).__name__}, not a list of numbers."
        o.keys = ("not_numbers",)
        return o
    first_clock = dev.events.index("clock") if "clock" in dev.events else 0
    if dev.clock_reads == 0:
        o.keys = ("own_clock",)
    elif len(times) == 1 and repeats > 1:
        o.keys = ("one_sample",)
    elif len(times) != repeats:
        o.keys = ("wrong_count",)
    elif all(math.isclose(v, warm, rel_tol=1e-6) for v in times):
        if all(measured(v, dev.readings, repeats) for v in set(times)):
            o.kind, o.ok = Kind.OK, True
            return o
        o.keys = ("not_measured",)
        o.detail = "your timer returned durations that its readings of `clock` did not measure."
        return o
    elif dev.syncs == 0 or all(v < warm / 2 for v in times):
        o.keys = ("no_sync",)
    elif times and times[0] > 5 * warm and "op" not in dev.events[:first_clock]:
        o.keys = ("no_warmup",)
    elif times and times[0] > 5 * warm:
        o.keys = ("warmup_not_synced",)
    elif all(math.isclose(v, warm * repeats, rel_tol=1e-3) for v in times):
        o.keys = ("total_not_per_call",)
    o.detail = (
        f"your timer returned {len(times)} durations that do not match the time one warm call of "
        f"op takes."
    )
    return o


TIMER: dict[str, Entry] = {
    "no_sync": Entry(
        "read the clock without waiting for the device",
        "op() only queues the work (as a GPU kernel launch does), so your times are the launch "
        "cost. Call sync() before each clock reading.",
    ),
    "no_warmup": Entry(
        "timed the first call too",
        "The first sample includes one-time costs (compilation, allocation, caches). Call op() "
        "once before you start timing, and don't count that call.",
    ),
    "warmup_not_synced": Entry(
        "started the clock while the warm-up was still running",
        "sync() after the warm-up, before the first clock reading.",
    ),
    "one_sample": Entry(
        "timed op once",
        "One sample tells you little: time it `repeats` times and return every duration.",
    ),
    "wrong_count": Entry("", "Return exactly `repeats` durations, one per timed call."),
    "own_clock": Entry(
        "used your own clock (e.g. time.perf_counter)", "Use the `clock` you were given."
    ),
    "not_numbers": Entry("", "Return a list of numbers (seconds)."),
    "not_measured": Entry(
        "",
        "Return what your timer measures: each duration is the difference of two readings of "
        "`clock` (divided by the number of calls it spans, if it spans several).",
    ),
    "total_not_per_call": Entry(
        "returned the total time of all calls each time",
        "Divide by the number of calls to get the time of one.",
    ),
}

_TIMER = Exercise("timer", "op, repeats, clock, sync", TIMER, _judge_timer)


def check_timer(
    fn: Callable[
        [Callable[[], None], int, Callable[[], float], Callable[[], None]], Sequence[float]
    ],
    *,
    seed: int | None = None,
) -> CheckResult:
    """Check fn(op, repeats, clock, sync) -> `repeats` durations in seconds, one per call of op.

    The checker runs fn against a pretend GPU: op() returns at once and the work finishes later,
    the first call of op is slow, sync() waits for the work, clock() reads the time. A timer that
    warms up, synchronises before reading the clock and takes `repeats` samples reports exactly
    the time one warm call takes.
    """
    rng = Random(fresh_seed(seed))
    cases = []
    for i in range(3):
        warm = rng.uniform(1e-4, 1e-3)
        dev = VirtualGPU(launch=rng.uniform(5e-6, 2e-5), warm=warm, cold=warm * rng.uniform(20, 50))
        repeats = rng.randint(3, 8)
        op, clock, sync = dev.controls()
        cases.append(
            Case(
                f"run {i + 1} (repeats={repeats})",
                (op, repeats, clock, sync),
                ("op", "repeats", "clock", "sync"),
                warm,
                context=dev,
            )
        )
    return run(_TIMER, fn, cases)
