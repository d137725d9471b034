"""Numbers for people: every figure the CLI, the Performance page and lesson 03 show, to three
significant digits, in the largest unit that keeps it at 1 or more (4.10 µs, 42.0 MB/s, 96.2 MiB,
0.980, 51.0%). Plain Python: no torch needed."""

from __future__ import annotations

from collections.abc import Sequence

# (unit, its size): the scales of each kind of quantity, smallest first
_TIME_UNITS = (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0))
_BYTE_UNITS = (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40))
_RATE_UNITS = (("B/s", 1), ("kB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("TB/s", 1e12))


def format_quantity(
    value: float | None, units: Sequence[tuple[str, float]], digits: int = 3, whole: bool = False
) -> str:
    """``value`` in the largest unit that keeps it at 1 or more, to ``digits`` significant figures.

    Never a rounded zero: 4.6e-6 GB/s reads "4.60 kB/s", not "0.00". Trailing zeros are kept
    ("4.10 µs", "1.00 µs", "42.0 MB/s": three digits are three digits), except, with ``whole``,
    for a count that is a whole number of the unit ("8 B", "4 KiB"). Below the smallest unit the number keeps its significant figures
    ("0.250 ns"); above the largest it grows ("1500 TiB"). Negative values keep their sign; an
    exact 0 is "0" in the smallest unit; None -> "–".
    """
    if value is None:
        return "–"
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return f"{value} {units[-1][0]}"
    if value == 0:
        return f"0 {units[0][0]}"
    sign, mag = ("-" if value < 0 else ""), abs(value)
    # pick the unit after rounding, so 999.96 ns reads "1 µs", never "1e+03 ns"
    name, size = units[0]
    for unit, unit_size in units:
        if float(f"{mag / unit_size:.{digits}g}") >= 1:
            name, size = unit, unit_size
    scaled = float(f"{mag / size:.{digits}g}")
    if whole and mag / size == int(mag / size) and scaled < 10**digits:
        text = f"{int(mag / size)}"  # a whole number of the unit: exact, no padding
    elif scaled < 10**digits:
        text = format_number(scaled, digits)
    else:
        text = f"{mag / size:.0f}"
    return f"{sign}{text} {name}"


def format_number(value: float | None, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, trailing zeros kept: 0.98 -> "0.980",
    1 -> "1.00", 51.37 -> "51.4", 1234.5 -> "1234" (a number of ``digits`` or more digits before
    the point is written whole); None -> "–". The one rule for every number people read here:
    the CLI's table, the Performance page and lesson 03."""
    if value is None:
        return "–"
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if abs(value) >= 10 ** (digits - 1) and abs(value) >= 1:
        return f"{value:.0f}" if abs(round(value)) >= 10**digits else f"{value:.{digits}g}"
    return f"{value:#.{digits}g}".rstrip(".")


def format_share(ratio: float | None, digits: int = 3) -> str:
    """A ratio as a percentage to ``digits`` significant figures: 0.51 -> "51.0%",
    0.987 -> "98.7%", 1.234 -> "123%"; None -> "–"."""
    return "–" if ratio is None else f"{format_number(100 * ratio, digits)}%"


def format_bytes(n: float | None) -> str:
    """A byte count for people: 512 B, 4 KiB, 96.2 MiB, 1.50 KiB (three significant figures, a
    whole number of the unit written whole); None -> "–"."""
    return format_quantity(n, _BYTE_UNITS, whole=True)


def format_time(s: float | None) -> str:
    """Seconds for people: 45.0 ns, 1.40 µs, 2.31 ms, 1.20 s (three significant figures);
    None -> "–"."""
    return format_quantity(s, _TIME_UNITS)


def format_rate(bytes_per_s: float | None) -> str:
    """Throughput for people, in decimal units (GB = 1e9 bytes, as in ``Measurement.gbps``):
    4.60 kB/s, 312 MB/s, 51.4 GB/s, 1.20 TB/s (three significant figures); None -> "–"."""
    return format_quantity(bytes_per_s, _RATE_UNITS)
