"""The sweep: from the 2x3x5 example up to what memory allows, every method on every device.

``sweep`` returns flat Measurement records (floor included, naive's extra memory measured);
``crossover`` finds where one device overtakes another; ``roofline`` gives each device's best
read bandwidth. The figures in ``attnviz.figures.performance`` draw these records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch

from attnviz.bench.devices import (
    cache_bytes,
    cache_levels,
    free_memory_bytes,
    resolve_devices,
    system_memory_bytes,
)
from attnviz.bench.harness import (
    DEFAULT_METHODS,
    FLOOR,
    LOOP_MAX_WORDS,
    MEMORY_FACTOR,
    Measurement,
    input_bytes,
    measure,
    parse_dtype,
)
from attnviz.errors import AttnvizError

# the ladder: the classic example, then x growing ~4x per step (H, then T, then B)
LADDER: tuple[tuple[int, int, int], ...] = (
    (2, 3, 5),
    (4, 16, 32),
    (8, 32, 64),
    (8, 64, 128),
    (16, 128, 128),
    (16, 128, 512),
    (32, 256, 512),
    (48, 512, 1024),
    (64, 1024, 1024),
    (8, 16384, 1024),
    (256, 1024, 1024),
    (64, 8192, 1024),
)


RAM_SHARE = 4  # a sweep's inputs stay under 1/RAM_SHARE of the machine's memory
PAST_CACHE = 2  # "past the last-level cache": inputs at least this many times its size


def crossing_limit(
    cap_bytes: int,
    *,
    llc_bytes: int | None = None,
    ram_bytes: int | None = None,
    hard_cap_bytes: int | None = None,
    dtype: torch.dtype = torch.float32,
    ladder: Sequence = LADDER,
) -> tuple[int, str]:
    """(input bytes the sweep goes up to, a sentence saying where that is against the caches).

    The sweep should cross the cache on any machine: from sizes that sit in L2 to inputs at
    least PAST_CACHE x the last-level cache (``llc_bytes``, default: read from the machine). It
    goes at least to ``cap_bytes`` (the usual bound), further when that stops short of the
    cache, never above 1/RAM_SHARE of RAM (``ram_bytes``), ``hard_cap_bytes`` (a server's cap per
    job) nor past the ladder's largest size. The sentence says plainly when a cap stops the sweep
    short of memory.
    """
    llc = llc_bytes if llc_bytes is not None else cache_bytes("cpu")
    ram = ram_bytes if ram_bytes is not None else (system_memory_bytes() or 0)
    want = PAST_CACHE * llc
    reach = [input_bytes(s, dtype) for s in ladder if input_bytes(s, dtype) >= want]
    target = max(cap_bytes, min(reach) if reach else input_bytes(ladder[-1], dtype))
    ram_cap = ram // RAM_SHARE if ram else target
    hard = hard_cap_bytes if hard_cap_bytes is not None else target
    limit = min(target, ram_cap, hard)
    top = max(input_bytes(s, dtype) for s in sizes_up_to(limit, dtype, ladder))
    from attnviz.bench.harness import format_bytes

    if top >= want:
        return limit, (
            f"The sizes run up to {format_bytes(top)} of input, past {PAST_CACHE}x the "
            f"{format_bytes(llc)} last-level cache, so the largest ones come from memory."
        )
    why = (
        f"a quarter of this machine's {format_bytes(ram)} of memory"
        if limit == ram_cap and ram_cap < target
        else f"this server's cap of {format_bytes(hard)} per job"
        if limit == hard and hard < target
        else "the largest size there is to time"
        if not reach
        else f"the cap of {format_bytes(cap_bytes)}"
    )
    return limit, (
        f"The sizes stop at {format_bytes(top)} of input ({why}), short of {PAST_CACHE}x the "
        f"{format_bytes(llc)} last-level cache: on this machine every size here is partly or "
        f"wholly read from cache, and the in-memory speed is not shown."
    )


def cache_marks(llc_bytes: int | None = None) -> dict[str, int]:
    """{"L2": bytes, "L3": bytes, ...} of the CPU's caches for figures; the last level at least."""
    levels = cache_levels()
    marks = {f"L{k}": v for k, v in sorted(levels.items()) if k >= 2}
    if not marks:
        marks = {"last-level cache": llc_bytes or cache_bytes("cpu")}
    return marks


def max_bytes(device: str | torch.device, fraction: float = 0.5) -> int:
    """Largest x the sweep allows on ``device``: ``fraction`` of free memory / MEMORY_FACTOR."""
    return int(free_memory_bytes(device) * fraction / MEMORY_FACTOR)


def sizes_up_to(
    limit_bytes: int, dtype: torch.dtype = torch.float32, ladder: Sequence = LADDER
) -> list[tuple[int, int, int]]:
    """The ladder's sizes whose inputs fit in ``limit_bytes`` (the first one always)."""
    out = [s for s in ladder if input_bytes(s, dtype) <= limit_bytes]
    return out or [tuple(ladder[0])]


def sweep(
    *,
    devices: str | Iterable[str] = "all",
    sizes: Sequence[tuple[int, int, int]] | None = None,
    methods: Sequence[str] = DEFAULT_METHODS,
    dtype: str | torch.dtype = torch.float32,
    rounds: int = 9,
    min_block_s: float = 0.01,
    memory: bool = True,
    max_input_bytes: int | None = None,
    progress: Callable[[Measurement], None] | None = None,
    max_input_sets: int = 1,
) -> list[Measurement]:
    """Measure ``methods`` (+ floor) at every size on every device; a flat list of records
    (``max_input_sets``: see ``measure``; 1, the default, reads each size where it sits).

    sizes defaults to the ladder up to what each device's free memory allows (``max_bytes``);
    a given size that does not fit is refused with AttnvizError before anything is allocated.
    "loop" runs only where B*T <= LOOP_MAX_WORDS. ``memory=True`` measures each method's peak
    extra memory (the one-liner's (B, T, H) temporary). ``progress`` is called per record.
    """
    dtype = parse_dtype(dtype)
    if isinstance(devices, str):
        devices = resolve_devices(devices)
    records: list[Measurement] = []
    for device in devices:
        limit = max_input_bytes if max_input_bytes is not None else max_bytes(device)
        todo = sizes_up_to(limit, dtype) if sizes is None else [tuple(s) for s in sizes]
        for shape in todo:
            need = input_bytes(shape, dtype)
            if need > limit:
                raise AttnvizError(
                    f"Size {shape} needs {need / 2**20:.1f} MiB of inputs on {device}, above the "
                    f"cap of {limit / 2**20:.1f} MiB computed from free memory. Use a smaller B, T or H."
                )
            ms = [m for m in methods if m != "loop" or shape[0] * shape[1] <= LOOP_MAX_WORDS]
            for rec in measure(
                shape,
                device=device,
                dtype=dtype,
                methods=ms,
                rounds=rounds,
                min_block_s=min_block_s,
                memory=memory,
                max_input_sets=max_input_sets,
            ):
                records.append(rec)
                if progress is not None:
                    progress(rec)
    return records


def _as_dict(r: Measurement | dict) -> dict:
    return r.as_dict() if isinstance(r, Measurement) else dict(r)


def best_times(records: Iterable[Measurement | dict], device: str) -> dict[int, tuple[str, float]]:
    """bytes -> (fastest method, its median_s) on ``device``, floor and copy excluded."""
    best: dict[int, tuple[str, float]] = {}
    for r in map(_as_dict, records):
        if r["device"] != device or r["method"] in (FLOOR, "copy"):
            continue
        key = input_bytes(tuple(r["shape"]), parse_dtype(r["dtype"]))
        if key not in best or r["median_s"] < best[key][1]:
            best[key] = (r["method"], r["median_s"])
    return best


def crossover(
    records: Iterable[Measurement | dict], slow: str = "cpu", fast: str = "cuda:0"
) -> int | None:
    """Smallest input size in bytes from which ``fast``'s best method beats ``slow``'s best at
    every measured size; None if it never does (or a device is missing)."""
    records = list(records)
    a, b = best_times(records, slow), best_times(records, fast)
    common = sorted(set(a) & set(b))
    answer = None
    for key in reversed(common):
        if b[key][1] < a[key][1]:
            answer = key
        else:
            break
    return answer


def roofline(records: Iterable[Measurement | dict]) -> dict[str, float]:
    """device -> its best measured floor bandwidth in GB/s (a plain read of x)."""
    out: dict[str, float] = {}
    for r in map(_as_dict, records):
        if r["method"] == FLOOR:
            out[r["device"]] = max(out.get(r["device"], 0.0), r["gbps"])
    return out


def ranking(
    records: Iterable[Measurement | dict], device: str = "cpu"
) -> dict[tuple[int, int, int], list[list[str]]]:
    """shape -> the methods from fastest to slowest in tiers: methods whose interquartile ranges
    overlap (a chain of them) share a tier, since the rounds cannot tell them apart. Floor and
    copy excluded."""
    by_shape: dict[tuple[int, int, int], list[dict]] = {}
    for r in map(_as_dict, records):
        if r["device"] == device and r["method"] not in (FLOOR, "copy"):
            by_shape.setdefault(tuple(r["shape"]), []).append(r)
    out: dict[tuple[int, int, int], list[list[str]]] = {}
    for shape, rs in by_shape.items():
        tiers: list[list[str]] = []
        top = -1.0  # the highest third quartile in the current tier
        for r in sorted(rs, key=lambda r: r["median_s"]):
            if tiers and r["q1_s"] <= top:
                tiers[-1].append(r["method"])
            else:
                tiers.append([r["method"]])
            top = max(top, r["q3_s"]) if len(tiers[-1]) > 1 else r["q3_s"]
        out[shape] = tiers
    return out


def contradictions(
    a: dict[tuple[int, int, int], list[list[str]]], b: dict[tuple[int, int, int], list[list[str]]]
) -> list[tuple[tuple[int, int, int], str, str]]:
    """(shape, m1, m2) where one ranking puts m1 in a faster tier than m2 and the other the reverse."""
    out = []
    for shape in sorted(set(a) & set(b)):
        tier_a = {m: i for i, tier in enumerate(a[shape]) for m in tier}
        tier_b = {m: i for i, tier in enumerate(b[shape]) for m in tier}
        common = sorted(set(tier_a) & set(tier_b))
        for i, m1 in enumerate(common):
            for m2 in common[i + 1 :]:
                da, db = tier_a[m1] - tier_a[m2], tier_b[m1] - tier_b[m2]
                if da * db < 0:
                    out.append((shape, m1, m2))
    return out
