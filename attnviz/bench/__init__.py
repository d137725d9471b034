"""attnviz.bench: time the aggregation methods on every device, against the read limit.

    python -m attnviz.bench --device all --sizes 2x3x5,48x512x1024 --json

Core layer: torch and numpy only. ``measure`` times one size side by side, ``sweep`` runs a ladder
of sizes, ``BenchWorker`` / ``submit`` run jobs in an isolated, bounded worker process for the app,
``request.parse_request`` turns a browser's widget values into a job, and ``overhead`` measures
what ``weighted_sum`` adds to the bare op it runs (``python -m attnviz.bench --overhead``).
``format_time`` / ``format_bytes`` / ``format_rate`` / ``format_number`` / ``format_share`` write
every number with three significant digits at every scale.
"""

from attnviz.bench.devices import DeviceInfo, free_memory_bytes, list_devices, resolve_devices
from attnviz.bench.harness import (
    COPY,
    DEFAULT_METHODS,
    FLOOR,
    NOISY_SPREAD,
    Measurement,
    above_floor,
    floor_warnings,
    format_bytes,
    format_number,
    format_quantity,
    format_rate,
    format_share,
    format_table,
    format_time,
    is_noisy,
    make_inputs,
    measure,
    moved_bytes,
    parse_dtype,
    parse_shape,
    peak_extra_bytes,
    regime,
)

__all__ = [
    "COPY",
    "DEFAULT_METHODS",
    "FLOOR",
    "NOISY_SPREAD",
    "DeviceInfo",
    "Measurement",
    "above_floor",
    "floor_warnings",
    "format_bytes",
    "format_number",
    "format_quantity",
    "format_rate",
    "format_share",
    "format_table",
    "format_time",
    "free_memory_bytes",
    "is_noisy",
    "list_devices",
    "make_inputs",
    "measure",
    "moved_bytes",
    "parse_dtype",
    "parse_shape",
    "peak_extra_bytes",
    "regime",
    "resolve_devices",
]
