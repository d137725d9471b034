"""attnviz.bench: time the aggregation methods on every device, against the read floor.

    python -m attnviz.bench --device all --sizes 2x3x5,48x512x1024 --json

Core layer: torch and numpy only. ``measure`` times one size side by side, ``sweep`` runs a ladder
of sizes, ``BenchWorker`` / ``submit`` run jobs in an isolated worker process for the app.
"""

from attnviz.bench.devices import DeviceInfo, free_memory_bytes, list_devices, resolve_devices
from attnviz.bench.harness import (
    COPY,
    DEFAULT_METHODS,
    FLOOR,
    Measurement,
    format_bytes,
    format_quantity,
    format_rate,
    format_table,
    format_time,
    make_inputs,
    measure,
    moved_bytes,
    parse_dtype,
    parse_shape,
    peak_extra_bytes,
)

__all__ = [
    "COPY",
    "DEFAULT_METHODS",
    "FLOOR",
    "DeviceInfo",
    "Measurement",
    "format_bytes",
    "format_quantity",
    "format_rate",
    "format_table",
    "format_time",
    "free_memory_bytes",
    "list_devices",
    "make_inputs",
    "measure",
    "moved_bytes",
    "parse_dtype",
    "parse_shape",
    "peak_extra_bytes",
    "resolve_devices",
]
