"""The harness: time every method and the read floor on one size, side by side, the way experts do.

- Warm-up: the first call is timed alone (``first_call_s``: lazy init, Triton JIT, compile), then a
  few more calls run untimed before any timed block.
- Timed blocks go through ``torch.utils.benchmark.Timer`` (it sets the thread count and runs the
  statement in a tight ``timeit`` loop) with a timer that synchronizes the device at both ends, so
  queued GPU kernels are counted. Each block runs enough calls to last ``min_block_s``.
- Rounds are interleaved: round r times one block of every method (in a shuffled order), so a
  neighbour's load on a shared machine hits all methods alike; the median and the interquartile
  range are taken over rounds.
- The floor is the machine's read limit: a plain read of the same bytes, timed in the same
  rounds. On the CPU (float32) it is the C read loop built with the fused kernel
  (``attnviz.native_read.read_sum``: same flags, same threads, independent vector accumulators),
  planned once and called as leanly as fused calls its kernel (``attnviz.native_op.reader``), since
  ``x.sum()`` is slower than a one-pass method on some CPUs and so no floor; elsewhere PyTorch's
  plain reads. Each of the floor's ways to read (``floor_ways``) is timed in every round, and the
  one with the lowest median is the floor (``notes["floor_ways"]`` on its record has them all).
  Every method's GB/s counts reading x and w once and writing the output once, and
  ``ratio_to_floor`` is the median over rounds of method GB/s / floor GB/s within each round
  (paired, so load that comes and goes on a shared machine cancels out).
- No method can read faster than the machine reads: a method that took less time than the plain
  read of x, its paired ratio counted on x's bytes alone above 1 by more than that ratio's own
  interquartile range, is flagged (``notes["above_floor"]``, ``above_floor``), and the CLI says so
  loudly: then the floor is wrong, not the method. Its speed counting w and the output too may
  show above the read limit without that (``writes_words`` says why).
- Every call reads the same inputs by default, so a size that fits in a cache is timed where it
  sits (the regimes the sweep shades: L2, the last-level cache, memory), as a tensor reused in a
  loop would be. ``max_input_sets`` > 1 (the CLI's ``--cold``) rotates among several input sets
  up to twice the last-level cache instead, so that a later call does not find the previous
  call's bytes there (``n_input_sets``).
- Host->device transfer (``transfer_s``) is timed once and never counted as compute.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor
from torch.utils.benchmark import Timer

from attnviz.bench.devices import cache_bytes, device_name, move, synchronize
from attnviz.bench.floor import (  # noqa: F401 (re-exported)
    FLAG_MIN_BYTES,
    READ_LOOP,
    TORCH_SUM,
    floor_runs,
    floor_ways,
)
from attnviz.bench.inputs import (  # noqa: F401  (re-exported: attnviz.bench.harness.parse_*)
    dtype_name,
    input_bytes,
    make_inputs,
    moved_bytes,
    parse_dtype,
    parse_shape,
)
from attnviz.bench.number import (  # noqa: F401  (re-exported: attnviz.bench.harness.format_*)
    format_bytes,
    format_number,
    format_quantity,
    format_rate,
    format_share,
    format_time,
)
from attnviz.errors import AttnvizError

FLOOR = "floor"  # a plain read of x: the machine's read limit, the speed limit of a one-pass method
COPY = "copy"  # dst.copy_(x): read + write x, the device copy bandwidth (CUDA targets)
DEFAULT_METHODS = ("broadcast", "einsum", "bmm", "fused")
# what each timed name runs, for tables ("fused" and "auto" depend on device, dtype and size and
# are filled in per measurement from attnviz.fused.fused_path / choose_method)
RUNS_AS = {
    FLOOR: TORCH_SUM,
    COPY: "dst.copy_(x)",
    "broadcast": "(x * w[..., None]).sum(1)",
    "einsum": 'einsum("bth,bt->bh", x, w)',
    "bmm": "bmm(w[:, None, :], x)",
    "loop": "Python loops over b and t",
}
LOOP_MAX_WORDS = 4096  # the Python loop runs B*T steps: only for small B*T
# what one measure() may hold at once, as a multiple of x: the inputs, the one-liner's (B, T, H)
# temporary, the copy's destination and the rotating input sets (at most 2x the cache)
MEMORY_FACTOR = 4
SLOW_CALL_S = 0.05  # above this per call, time single synchronized calls (no per-block warm-up)


@dataclass
class Measurement:
    """One method timed on one size and device. Times in seconds, bytes in bytes, GB = 1e9 bytes."""

    method: str
    device: str
    device_name: str
    shape: tuple[int, int, int]  # (B, T, H)
    dtype: str
    median_s: float
    iqr_s: float
    q1_s: float
    q3_s: float
    bytes: int  # bytes one call must move: read x and w, write the output (floor: x only)
    gbps: float
    ratio_to_floor: float | None  # median over rounds of (GB/s / floor GB/s in that round)
    first_call_s: float  # the very first call: includes lazy init / JIT / compile time
    transfer_s: float | None  # host->device copy of x and w (None on cpu)
    min_s: float  # the fastest round: the least disturbed by other load on a shared machine
    best_ratio_to_floor: float | None  # GB/s at min_s over the floor's GB/s at its min_s
    rounds: int
    calls_per_round: int
    n_input_sets: int
    threads: int
    tf32: bool
    torch_version: str
    extra_peak_bytes: int | None = None  # measured peak memory above the inputs, when asked
    ratio_iqr: float | None = None  # the interquartile range of the per-round ratios to the floor
    notes: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """A JSON-safe dict (shape as a list)."""
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d


# a point whose interquartile range is above this share of its median is too noisy to read
NOISY_SPREAD = 0.10


def is_noisy(r: Measurement | dict) -> bool:
    """True when the rounds of ``r`` spread too widely (IQR > NOISY_SPREAD x median) to trust."""
    d = r if isinstance(r, dict) else r.as_dict()
    return d["median_s"] <= 0 or d.get("iqr_s", 0.0) > NOISY_SPREAD * d["median_s"]


def faster_than_reading(ratio: float, iqr: float, read_share: float) -> bool:
    """Whether a method with this paired ratio to the floor (and the ratio's IQR over the rounds)
    took less time than the plain read of x beyond that noise. ``read_share``: x's bytes over the
    bytes its speed counts (x, w and the output). Every method reads x, so none can take less time
    than reading it; but its speed also counts what it writes, which may cost less than reading
    as many bytes (stores past the caches, made while it reads), so the ratio of speeds alone may
    pass 1 where nothing is wrong (T = 2 from memory: an output half the size of x)."""
    return ratio * read_share - 1.0 > iqr * read_share


def above_floor(r: Measurement | dict) -> bool:
    """True when ``r`` ran faster than the read limit by more than its noise: it took less time
    than the plain read of x, by more than the interquartile range of its paired ratio over the
    rounds (``faster_than_reading``; for x of at least FLAG_MIN_BYTES: smaller calls measure fixed
    costs, not reads). Never the copy: its speed counts reading and writing x."""
    d = r if isinstance(r, dict) else r.as_dict()
    ratio = d.get("ratio_to_floor")
    if d["method"] in (FLOOR, COPY) or ratio is None:  # the copy reads and writes x
        return False
    shape = tuple(d["shape"])
    dtype = parse_dtype(d.get("dtype", "float32"))
    b, t, h = shape
    x_bytes = b * t * h * torch.empty((), dtype=dtype).element_size()
    if x_bytes < FLAG_MIN_BYTES:
        return False
    counted = d.get("bytes") or moved_bytes(shape, dtype)
    return faster_than_reading(ratio, d.get("ratio_iqr") or 0.0, x_bytes / counted)


def regime(r: Measurement | dict) -> str:
    """ "cache" when the inputs the rounds rotate through fit in the last-level cache (the floor
    is then not a memory floor), "memory" when they do not, "unknown" for records without notes."""
    d = r if isinstance(r, dict) else r.as_dict()
    fits = d.get("notes", {}).get("fits_in_cache")
    return "unknown" if fits is None else ("cache" if fits else "memory")


def environment(device: str | torch.device) -> dict:
    """What a reader needs to trust a number: device name, torch version, threads, TF32."""
    device = torch.device(device)
    tf32 = bool(torch.backends.cuda.matmul.allow_tf32) if device.type == "cuda" else False
    env = {
        "device": str(device),
        "device_name": device_name(device),
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "tf32": tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    if device.type == "cuda":
        env["cuda_version"] = torch.version.cuda
    if device.type == "cpu":
        from attnviz import native, native_op

        built = native.build()  # the C kernel behind "fused" on the CPU (built once, cached)
        env["cpu_kernel"] = built.detail if built.ok else f"none: {built.detail}"
        if built.ok:  # and called as a PyTorch operator, built now: never timed while compiling
            op = native_op.build()
            how = "Python builtin" if op.detail.endswith("builtin") else "PyTorch operator"
            env["cpu_kernel_call"] = how if op.ok else f"ctypes ({op.detail})"
    from attnviz.fused import triton_available

    if triton_available():
        import triton

        env["triton_version"] = triton.__version__
    return env


def method_function(name: str) -> Callable[[Tensor, Tensor], Tensor]:
    """The function timed for ``name``: a METHODS entry, or the ``x.sum()`` floor (see
    ``floor_ways`` for the floor ``measure`` times)."""
    from attnviz.aggregation import METHODS

    if name == FLOOR:
        return lambda x, w: x.sum()  # read x once, contiguous
    if name in METHODS:
        return METHODS[name]
    raise AttnvizError(
        f"Unknown method {name!r}; choose from {', '.join(repr(m) for m in METHODS)}."
    )


def check_methods(methods: Sequence[str], shape: tuple[int, int, int]) -> list[str]:
    """Validate names, dropping repeats (the order of first appearance is kept); refuse "loop"
    above LOOP_MAX_WORDS words (it runs B*T Python steps)."""
    from attnviz.aggregation import METHODS

    out = []
    for m in methods:
        if m not in METHODS:
            raise AttnvizError(
                f"Unknown method {m!r}; choose from {', '.join(repr(k) for k in METHODS)}."
            )
        if m == "loop" and shape[0] * shape[1] > LOOP_MAX_WORDS:
            raise AttnvizError(
                f"'loop' runs B*T = {shape[0] * shape[1]} Python steps for {shape}; it is allowed "
                f"up to B*T = {LOOP_MAX_WORDS}. Drop it or use a smaller B or T."
            )
        if m not in out:
            out.append(m)
    return out


def peak_extra_bytes(fn: Callable[[], object], device: str | torch.device) -> int:
    """Peak memory allocated while ``fn()`` runs, above what was allocated before (measured).

    CUDA: the caching allocator's peak counter. CPU: torch.profiler's memory events (allocations
    by each op and frees, in time order), summed to a running total whose maximum is the peak,
    and never less than the tensor ``fn()`` returns: fused's C++ operator makes its output in
    blocks of its own, which the profiler does not see (it showed 0 B where bmm, writing the same
    (B, H) output, showed its size).
    """
    device = torch.device(device)
    if device.type == "cuda":
        synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - before)
    if device.type == "mps":
        before = torch.mps.current_allocated_memory()
        out = fn()
        synchronize(device)
        after = torch.mps.current_allocated_memory()
        del out
        return int(max(0, after - before))  # MPS has no peak counter: what is still held
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
    held = out.untyped_storage().nbytes() if isinstance(out, torch.Tensor) else 0
    events = []
    for e in prof.events():
        if e.name == "[memory]":
            events.append((e.time_range.start, e.cpu_memory_usage))  # a free (negative)
        elif e.self_cpu_memory_usage > 0:
            events.append((e.time_range.start, e.self_cpu_memory_usage))  # an op's allocations
    running = peak = 0
    for _t, delta in sorted(events):
        running += delta
        peak = max(peak, running)
    return int(max(peak, held))


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2 for a moment: the profiler's C++ side (kineto) prints two
    "USDT: profiler_start/stop" lines per use, with no switch to turn them off."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr: nothing to silence
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _quantiles(values: list[float]) -> tuple[float, float, float]:
    v = torch.tensor(values, dtype=torch.float64)
    q = torch.quantile(v, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    return float(q[0]), float(q[1]), float(q[2])


def _sync_timer(device: torch.device) -> Callable[[], float]:
    def timer() -> float:
        synchronize(device)
        return time.perf_counter()

    return timer


def measure(
    shape: tuple[int, int, int],
    *,
    device: str | torch.device = "cpu",
    dtype: str | torch.dtype = torch.float32,
    methods: Sequence[str] = DEFAULT_METHODS,
    rounds: int = 15,
    min_block_s: float = 0.02,
    seed: int = 0,
    memory: bool = False,
    copy: bool | None = None,
    max_input_sets: int = 1,
) -> list[Measurement]:
    """Time ``methods`` and the floor on x (B, T, H) = ``shape`` side by side in one run.

    Returns one Measurement per method, the floor first (``method == "floor"``), then ``"copy"``
    (on CUDA by default: the copy bandwidth the CUDA target refers to), then the methods in order.
    ``memory=True`` adds each method's measured ``extra_peak_bytes``.
    """
    device = torch.device(device)
    dtype = parse_dtype(dtype)
    shape = tuple(int(s) for s in shape)
    methods = check_methods(methods, shape)
    if copy is None:
        copy = device.type == "cuda"
    env = environment(device)

    # inputs: the first set made on the host and moved (transfer timed); with max_input_sets > 1,
    # more sets when it fits in cache, so rotating among them reads from memory, not from cache
    host = make_inputs(shape, dtype, seed=seed)
    (x0, w0), transfer_s = move(host, device)
    one_set = input_bytes(shape, dtype)
    n_sets = max(1, min(max_input_sets, math.ceil(2 * cache_bytes(device) / one_set)))
    sets = [(x0, w0)] + [
        tuple(t.to(device) for t in make_inputs(shape, dtype, seed=seed + i))
        for i in range(1, n_sets)
    ]
    del host

    names = [FLOOR] + ([COPY] if copy else []) + list(methods)
    # what is timed: every way the floor may read x (the fastest over the rounds is the floor),
    # then the copy and the methods
    ways = {f"{FLOOR}: {way}": fn for way, fn in floor_ways(x0).items()}
    fns: dict[str, Callable] = dict(ways)
    for name in names[1:]:
        if name == COPY:
            dst = torch.empty_like(x0)
            fns[name] = lambda x, w, dst=dst: dst.copy_(x)
        else:
            fns[name] = method_function(name)

    first_call: dict[str, float] = {}
    number: dict[str, int] = {}
    slow: dict[str, bool] = {}
    timers: dict[str, Timer] = {}
    timer_fn = _sync_timer(device)
    for name, fn in fns.items():
        synchronize(device)
        t0 = time.perf_counter()
        fn(*sets[0])
        synchronize(device)
        first_call[name] = time.perf_counter() - t0
        # warm-up: a few more calls, then an estimate of one call for the block size
        t0 = time.perf_counter()
        n_warm = 0
        while n_warm < 2 or (time.perf_counter() - t0 < 0.05 and n_warm < 1000):
            fn(*sets[n_warm % n_sets])
            n_warm += 1
        synchronize(device)
        per_call = (time.perf_counter() - t0) / n_warm
        number[name] = max(1, math.ceil(min_block_s / max(per_call, 1e-9)))
        slow[name] = per_call > SLOW_CALL_S
        timers[name] = Timer(
            stmt="fn(*sets[next(idx)])",
            globals={"fn": fn, "sets": sets, "idx": itertools.cycle(range(n_sets))},
            timer=timer_fn,
            num_threads=torch.get_num_threads(),
            label=name,
        )

    samples: dict[str, list[float]] = {name: [] for name in fns}
    rng = random.Random(seed)
    for r in range(rounds):
        order = list(fns)
        rng.shuffle(order)
        for name in order:
            if slow[name]:
                # Timer.timeit runs 2 untimed warm-up calls per block: for a call that takes
                # longer than SLOW_CALL_S we time single synchronized calls instead
                x, w = sets[r % n_sets]
                t0 = timer_fn()
                fns[name](x, w)
                samples[name].append(timer_fn() - t0)
            else:
                samples[name].append(timers[name].timeit(number[name]).times[0])

    # the floor: the way that read x fastest over the rounds (its median), timed as it was
    way_medians = {key: _quantiles(samples[key])[1] for key in ways}
    fastest = min(way_medians, key=way_medians.__getitem__)
    for table in (fns, samples, first_call, number, slow):
        table[FLOOR] = table[fastest]
    extra: dict[str, int | None] = dict.fromkeys(names)
    if memory:
        for name in names:
            extra[name] = peak_extra_bytes(lambda f=fns[name]: f(*sets[0]), device)

    from attnviz.fused import choose_method, fused_path, fused_reason

    # what the floor, "fused" and "auto" ran on these inputs
    paths = dict(RUNS_AS, fused=fused_path(x0, w0), **{FLOOR: fastest.removeprefix(f"{FLOOR}: ")})
    picked = choose_method(device, shape, dtype)
    paths["auto"] = (
        f"fused: {paths['fused']}" if picked == "fused" else f"{picked}: {RUNS_AS[picked]}"
    )
    x_bytes = x0.numel() * x0.element_size()
    floor_medians = {key.removeprefix(f"{FLOOR}: "): t for key, t in way_medians.items()}

    def runs_fused(name: str) -> bool:  # its reason (fused_reason) is the one to show
        return name == "fused" or (name == "auto" and picked == "fused")

    out: list[Measurement] = []
    for name in names:
        q1, med, q3 = _quantiles(samples[name])
        nbytes = {FLOOR: x_bytes, COPY: 2 * x_bytes}.get(name, moved_bytes(shape, dtype))
        gbps = nbytes / med / 1e9
        # paired: this method's GB/s over the floor's GB/s in the same round, median over rounds;
        # a neighbour's load that slows one round slows both, so the ratio is steadier than
        # the ratio of two medians
        paired = [
            (nbytes / t) / (x_bytes / f) for t, f in zip(samples[name], samples[FLOOR], strict=True)
        ]
        best = (nbytes / min(samples[name])) / (x_bytes / min(samples[FLOOR]))
        pq1, pmed, pq3 = _quantiles(paired)
        out.append(
            Measurement(
                method=name,
                device=str(device),
                device_name=env["device_name"],
                shape=shape,
                dtype=dtype_name(dtype),
                median_s=med,
                iqr_s=q3 - q1,
                q1_s=q1,
                q3_s=q3,
                bytes=nbytes,
                gbps=gbps,
                ratio_to_floor=1.0 if name == FLOOR else pmed,
                ratio_iqr=0.0 if name == FLOOR else pq3 - pq1,
                first_call_s=first_call[name],
                min_s=min(samples[name]),
                best_ratio_to_floor=1.0 if name == FLOOR else best,
                transfer_s=None if device.type == "cpu" else transfer_s,
                rounds=rounds,
                calls_per_round=number[name],
                n_input_sets=n_sets,
                threads=env["threads"],
                tf32=env["tf32"],
                torch_version=env["torch_version"],
                extra_peak_bytes=extra[name],
                notes={
                    **({"path": paths[name]} if name in paths else {}),
                    **({"why": fused_reason(x0, w0)} if runs_fused(name) else {}),
                    # faster than the machine can read, beyond the rounds' noise: a wrong floor.
                    # Not the copy: it reads and writes x, and its speed counts both
                    "above_floor": name not in (FLOOR, COPY)
                    and x_bytes >= FLAG_MIN_BYTES
                    and faster_than_reading(pmed, pq3 - pq1, x_bytes / nbytes),
                    "floor": floor_runs(x0),
                    # the floor's record: each of its ways' median time over the rounds (the
                    # fastest is the floor)
                    **({"floor_ways": floor_medians} if name == FLOOR else {}),
                    **({k: env[k] for k in ("cpu_kernel", "cpu_kernel_call") if k in env}),
                    "cache_bytes": cache_bytes(device),
                    # one input set fits in the last-level cache: the calls read it from
                    # there (even rotating among sets, part of it stays: victim caches,
                    # per-core L2), so the floor is not a memory floor at this size
                    "fits_in_cache": one_set <= cache_bytes(device),
                    "rotated_bytes": n_sets * one_set,
                    **(
                        {"triton_version": env["triton_version"]} if "triton_version" in env else {}
                    ),
                },
            )
        )
    return out


def format_table(records: Sequence[Measurement]) -> str:
    """A fixed-width text table: one line per measurement, grouped as given."""
    """A fixed-width text table: one line per measurement, grouped as given. 'x floor' is the
    paired ratio to the read limit; a '!' after it marks a method that took less time than the
    read of x alone, beyond noise (``above_floor``)."""
    head = (
        f"{'device':<8} {'shape':<18} {'dtype':<9} {'method':<10} {'median':>10} {'IQR':>10} "
        f"{'speed':>11} {'x floor':>8} {'best':>6} {'1st call':>10} {'extra mem':>10}"
    )
    lines = [head, "-" * len(head)]
    for r in records:
        ratio = format_number(r.ratio_to_floor) + ("!" if above_floor(r) else "")
        mem = format_bytes(r.extra_peak_bytes) if r.extra_peak_bytes is not None else "-"
        lines.append(
            f"{r.device:<8} {'x'.join(map(str, r.shape)):<18} {r.dtype:<9} {r.method:<10} "
            f"{format_time(r.median_s):>10} {format_time(r.iqr_s):>10} "
            f"{format_rate(r.gbps * 1e9):>11} {ratio:>8} {format_number(r.best_ratio_to_floor):>6} "
            f"{format_time(r.first_call_s):>10} {mem:>10}"
        )
    return "\n".join(lines)


def floor_warnings(records: Sequence[Measurement | dict]) -> list[str]:
    """One loud sentence per method that ran faster than the read limit beyond its noise."""
    out = []
    for r in records:
        d = r if isinstance(r, dict) else r.as_dict()
        if above_floor(d):
            out.append(
                f"WARNING: {d['method']} at {'x'.join(map(str, d['shape']))} on {d['device']} ran "
                f"at {format_number(d['ratio_to_floor'])}x the read limit (IQR of the ratio "
                f"{format_number(d.get('ratio_iqr'))}): no method can read faster than the "
                f"machine, so the floor ({d.get('notes', {}).get('floor', 'a plain read')}) is "
                f"wrong here, not the method."
            )
    return out
