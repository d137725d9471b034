"""Performance figures from benchmark records (``attnviz.bench`` Measurements or their dicts).

- ``time_vs_bytes_figure``: median time vs input size, per method per device (log-log), the read
  limit (the floor: a plain read of x at the machine's speed) dotted, error bars from the
  interquartile range, and where a GPU overtakes the CPU.
- ``roofline_figure``: achieved GB/s vs input size, with the read limit drawn as a line at every
  size and each device's best read as its roof.

Both shade the sizes whose data fits in the last-level cache (faster reads than from memory, for
every method and for the limit alike), label the two regimes, and draw noisy points (IQR above
``NOISY_SPREAD`` of the median) as open markers, so a single unsteady point does not read like a
solid one.
- ``extra_memory_figure``: measured peak extra memory per method, against the size of x itself:
  the one-liner's (B, T, H) temporary.

Every figure stores a plain-text description in ``fig.layout.meta["description"]``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import plotly.graph_objects as go

from attnviz.bench.harness import (
    COPY,
    FLOOR,
    NOISY_SPREAD,
    Measurement,
    format_bytes,
    format_number,
    format_share,
    format_time,
    input_bytes,
    is_noisy,
    parse_dtype,
    regime,
)
from attnviz.bench.sweep import crossover, roofline
from attnviz.figures.text import (
    describe,
)

# Okabe-Ito: distinguishable with the common colour-vision deficiencies
PALETTE = {
    "broadcast": "#E69F00",
    "einsum": "#56B4E9",
    "bmm": "#009E73",
    "fused": "#D55E00",
    "loop": "#CC79A7",
    "auto": "#0072B2",
    FLOOR: "#000000",
    COPY: "#999999",
}
SYMBOL = {"cpu": "circle", "cuda": "diamond", "mps": "square"}
#: Each method's dash pattern, so lines differ by more than colour (WCAG 1.4.1).
METHOD_DASH = {
    "broadcast": "solid",
    "einsum": "dash",
    "bmm": "dashdot",
    "fused": "longdash",
    "loop": "longdashdot",
    "auto": "8px,3px,2px,3px",
}
FONT = {"size": 16}


def _records(records: Iterable[Measurement | dict]) -> list[dict]:
    return [r.as_dict() if isinstance(r, Measurement) else dict(r) for r in records]


def _xbytes(r: dict) -> int:
    return input_bytes(tuple(r["shape"]), parse_dtype(r["dtype"]))


def _series(records: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """(device, method) -> records sorted by input bytes."""
    out: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        out.setdefault((r["device"], r["method"]), []).append(r)
    for rs in out.values():
        rs.sort(key=_xbytes)
    return out


def _label(method: str) -> str:
    """A method's name in legends: the floor is the read limit."""
    return "read limit" if method == FLOOR else method


def _kind(device: str) -> str:
    return device.split(":")[0]


def _line(device: str, method: str) -> dict:
    """A method's colour and its own dash (the marker names the device): every line reads
    without colour too."""
    dash = "dot" if method in (FLOOR, COPY) else METHOD_DASH.get(method, "solid")
    return {"color": PALETTE.get(method, "#444444"), "dash": dash, "width": 2.5}


def _marker(device: str, rs: list[dict]) -> dict:
    """Solid markers for steady points, open ones for noisy points (IQR > NOISY_SPREAD)."""
    base = SYMBOL.get(_kind(device), "circle")
    return {"symbol": [f"{base}-open" if is_noisy(r) else base for r in rs], "size": 8}


def _cache_limit(records: list[dict]) -> float | None:
    """Input bytes up to which the data fits in cache on the CPU (None: no record says so).

    The boundary sits halfway (in log scale) between the largest size that fits and the next one.
    """
    sizes = sorted({(_xbytes(r), regime(r)) for r in records if _kind(r["device"]) == "cpu"})
    fits = [x for x, where in sizes if where == "cache"]
    if not fits:
        return None
    above = [x for x, where in sizes if where == "memory" and x > max(fits)]
    return math.sqrt(max(fits) * min(above)) if above else max(fits) * 2


def _shade_cache(fig: go.Figure, records: list[dict], ys: list[float]) -> float | None:
    """A grey band over the sizes whose data fits in cache, as a trace (data coordinates)."""
    limit = _cache_limit(records)
    ys = [y for y in ys if y and y > 0]
    if limit is None or not ys:
        return None
    lo_x = min(_xbytes(r) for r in records) / 1.5
    lo_y, hi_y = min(ys) / 1.5, max(ys) * 1.5
    fig.add_trace(
        go.Scatter(
            x=[lo_x, limit, limit, lo_x, lo_x],
            y=[lo_y, lo_y, hi_y, hi_y, lo_y],
            fill="toself",
            fillcolor="rgba(120, 120, 120, 0.12)",
            line={"width": 0},
            mode="lines",
            name="data fits in cache",
            hoverinfo="skip",
        )
    )
    fig.data = (fig.data[-1], *fig.data[:-1])  # the band goes behind the lines
    for text, anchor in (("in cache ", "right"), (" from memory", "left")):
        fig.add_annotation(
            x=math.log10(limit),  # annotations on a log axis take log10 positions
            y=0,
            yref="paper",
            yanchor="bottom",
            xanchor=anchor,
            text=text,
            showarrow=False,
            font={"color": "#333333"},
        )
    return limit


def _noisy_legend(fig: go.Figure, records: list[dict]) -> list[dict]:
    """A legend entry explaining open markers, when any point is noisy; the noisy records."""
    noisy = [r for r in records if is_noisy(r)]
    if noisy:
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={"symbol": "circle-open", "size": 8, "color": "#444444"},
                name=f"open: noisy (IQR > {NOISY_SPREAD:.0%} of median)",
            )
        )
    return noisy


def _regime_text(records: list[dict], noisy: list[dict], limit: float | None) -> str:
    parts = []
    if limit is not None:
        parts.append(
            f"The shaded sizes, up to about {format_bytes(limit)} of input, fit in the CPU's "
            f"last-level cache, which sits beside the cores, so they are read several times "
            f"faster than the larger sizes, which come from memory (DRAM), shared by every core "
            f"and farther away. At every size the read limit is the fastest any method can go: "
            f"each must read x at least once."
        )
    if noisy:
        names = ", ".join(
            f"{r['method']} at {'x'.join(map(str, r['shape']))}" for r in noisy[:6]
        ) + (f" and {len(noisy) - 6} more" if len(noisy) > 6 else "")
        parts.append(
            f"Open markers are noisy points whose spread (IQR) is above {NOISY_SPREAD:.0%} of "
            f"their median: {names}. Rerun to read them."
        )
    return (" " + " ".join(parts)) if parts else ""


def _byte_ticks(values: Iterable[float]) -> tuple[list[float], list[str]]:
    """Ticks every factor of 8 (powers of two) over ``values``, labelled in B / KiB / MiB / GiB."""
    vals = [v for v in values if v and v > 0]
    if not vals:
        return [], []
    lo, hi = min(vals), max(vals)
    ticks, k = [], 0
    while 2.0**k < lo / 8:
        k += 3
    while 2.0**k <= hi * 8:
        ticks.append(2.0**k)
        k += 3
    return ticks, [format_bytes(t).replace(".0 ", " ") for t in ticks]


def _time_ticks(values: Iterable[float]) -> tuple[list[float], list[str]]:
    """Ticks at powers of ten over ``values`` seconds, labelled µs / ms / s."""
    vals = [v for v in values if v and v > 0]
    if not vals:
        return [], []
    ticks = [10.0**k for k in range(-9, 3) if min(vals) / 10 <= 10.0**k <= max(vals) * 10]
    return ticks, [format_time(t) for t in ticks]


def _layout(fig: go.Figure, title: str, ytitle: str, ylog: bool = True) -> None:
    fig.update_layout(
        title=title,
        font=FONT,
        template="plotly_white",
        legend_title_text="method · device",
        hovermode="closest",
        margin={"l": 80, "r": 30, "t": 70, "b": 70},
    )
    xs = [x for t in fig.data for x in (t.x or ()) if x is not None]
    tickvals, ticktext = _byte_ticks(xs)
    fig.update_xaxes(title="input size (x and w)", type="log", tickvals=tickvals, ticktext=ticktext)
    # log axes: label powers of ten only (plotly's default also labels 2 and 5 between them, which
    # reads as a jumble of small numbers); figures with their own tick labels override this
    fig.update_yaxes(title=ytitle, type="log" if ylog else "linear", dtick=1 if ylog else None)


def _largest(records: list[dict], device: str) -> list[dict]:
    rs = [r for r in records if r["device"] == device]
    if not rs:
        return []
    top = max(_xbytes(r) for r in rs)
    return [r for r in rs if _xbytes(r) == top]


def _gpu(records: list[dict]) -> str | None:
    gpus = sorted({r["device"] for r in records if _kind(r["device"]) in ("cuda", "mps")})
    return gpus[0] if gpus else None


def time_vs_bytes_figure(records: Iterable[Measurement | dict]) -> go.Figure:
    """Median time per call vs input bytes, one line per method per device; floor dotted."""
    recs = _records(records)
    fig = go.Figure()
    for (device, method), rs in sorted(_series(recs).items()):
        fig.add_trace(
            go.Scatter(
                x=[_xbytes(r) for r in rs],
                y=[r["median_s"] for r in rs],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [max(0.0, r["q3_s"] - r["median_s"]) for r in rs],
                    "arrayminus": [max(0.0, r["median_s"] - r["q1_s"]) for r in rs],
                    "thickness": 1,
                },
                mode="lines+markers",
                name=f"{_label(method)} · {device}",
                line=_line(device, method),
                marker=_marker(device, rs),
                customdata=[
                    [
                        "x".join(map(str, r["shape"])),
                        format_time(r["median_s"]),
                        format_time(r.get("iqr_s")),
                    ]
                    for r in rs
                ],
                hovertemplate="%{customdata[0]} (%{x:.3s}B): %{customdata[1]}, IQR "
                "%{customdata[2]}<extra>" + f"{_label(method)} · {device}</extra>",
            )
        )
    limit = _shade_cache(fig, recs, [r["median_s"] for r in recs])
    noisy = _noisy_legend(fig, recs)
    _layout(fig, "Time per call vs input size", "median time per call")
    tickvals, ticktext = _time_ticks([r["median_s"] for r in recs])
    fig.update_yaxes(tickvals=tickvals, ticktext=ticktext)
    parts = []
    for device in sorted({r["device"] for r in recs}):
        top = _largest(recs, device)
        methods = [r for r in top if r["method"] not in (FLOOR, COPY)]
        if not methods:
            continue
        best = min(methods, key=lambda r: r["median_s"])
        shape = "x".join(map(str, best["shape"]))
        line = (
            f"On {device} at {shape} ({format_bytes(_xbytes(best))}) the fastest method is "
            f"{best['method']} at {format_time(best['median_s'])}"
        )
        naive = next((r for r in methods if r["method"] == "broadcast"), None)
        if naive is not None and naive is not best:
            ratio = format_number(naive["median_s"] / best["median_s"])
            line += f"; the broadcast one-liner takes {ratio}x as long"
        parts.append(line + ".")
    gpu = _gpu(recs)
    if gpu is not None and any(r["device"] == "cpu" for r in recs):
        at = crossover(recs, "cpu", gpu)
        if at is None:
            parts.append(f"{gpu} never overtakes the CPU at the measured sizes.")
        else:
            fig.add_vline(x=at, line={"color": "#555555", "dash": "dash", "width": 1})
            fig.add_annotation(
                x=math.log10(at),  # annotations on a log axis take log10 positions
                y=1,
                yref="paper",
                xanchor="left",
                text=f" {gpu} faster from {format_bytes(at)}",
                showarrow=False,
            )
            parts.append(
                f"{gpu} is faster than the CPU from {format_bytes(at)} of input up; below that, "
                f"kernel launches and fixed costs dominate and the CPU wins."
            )
    if not recs:
        parts.append("No measurements yet.")
    return describe(
        fig,
        "Time per call against input size on log-log axes. "
        + " ".join(parts)
        + _regime_text(recs, noisy, limit),
    )


def _gbps_band(r: dict) -> tuple[float, float]:
    """(above, below) the median GB/s: the speeds at the first and third quartile of the time."""
    q1, q3 = r.get("q1_s"), r.get("q3_s")
    if not q1 or not q3:
        return 0.0, 0.0
    per_s = r["gbps"] * r["median_s"]  # GB per call
    return max(0.0, per_s / q1 - r["gbps"]), max(0.0, r["gbps"] - per_s / q3)


def roofline_figure(records: Iterable[Measurement | dict]) -> go.Figure:
    """Achieved GB/s vs input bytes per method per device, each device's read floor as a roof."""
    recs = _records(records)
    fig = go.Figure()
    for (device, method), rs in sorted(_series(recs).items()):
        bands = [_gbps_band(r) for r in rs]
        fig.add_trace(
            go.Scatter(
                x=[_xbytes(r) for r in rs],
                y=[r["gbps"] for r in rs],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [b[0] for b in bands],
                    "arrayminus": [b[1] for b in bands],
                    "thickness": 1,
                },
                mode="lines+markers",
                name=f"{_label(method)} · {device}",
                line=_line(device, method),
                marker=_marker(device, rs),
                customdata=[
                    [
                        "x".join(map(str, r["shape"])),
                        format_share(r["ratio_to_floor"]),
                    ]
                    for r in rs
                ],
                hovertemplate="%{customdata[0]}: %{y:.3g} GB/s, %{customdata[1]} of the read "
                "limit (higher is faster)" + f"<extra>{_label(method)} · {device}</extra>",
            )
        )
    roofs = roofline(recs)
    xs = [_xbytes(r) for r in recs]
    for device, gbps in sorted(roofs.items()):
        # the roof: a horizontal trace (a shape's label would be placed in log units on log axes)
        fig.add_trace(
            go.Scatter(
                x=[min(xs), max(xs)],
                y=[gbps, gbps],
                mode="lines+text",
                text=[f"best read {device}: {format_number(gbps)} GB/s", ""],
                textposition="top right",
                name=f"roof · {device}",
                line={"color": "#000000", "dash": "dash", "width": 1},
                hoverinfo="skip",
            )
        )
    limit = _shade_cache(fig, recs, [r["gbps"] for r in recs])
    noisy = _noisy_legend(fig, recs)
    _layout(fig, "Bandwidth achieved vs input size", "GB/s (read x and w, write the output)")
    parts = []
    for device in sorted(roofs):
        top = [r for r in _largest(recs, device) if r["method"] not in (FLOOR, COPY)]
        if not top:
            continue
        shape = "x".join(map(str, top[0]["shape"]))
        shares = ", ".join(
            f"{r['method']} {format_share(r['ratio_to_floor'])}"
            for r in sorted(top, key=lambda r: -(r["ratio_to_floor"] or 0.0))
            if r["ratio_to_floor"] is not None
        )
        parts.append(
            f"On {device} the best plain read reaches {format_number(roofs[device])} GB/s; at "
            f"{shape} the methods reach this % of the read limit measured in the same rounds "
            f"(higher is faster): {shares}."
        )
    text = (
        "Achieved bandwidth against input size. The operation reads every number of x once and "
        "does two flops per number, so it is limited by how fast the machine reads: the read "
        "floor, a plain read of x at the machine's limit, is drawn as a dotted line at every "
        "size, and no method can beat it. "
        + (" ".join(parts) if parts else "No measurements yet.")
        + _regime_text(recs, noisy, limit)
    )
    return describe(fig, text)


def extra_memory_figure(records: Iterable[Measurement | dict]) -> go.Figure:
    """Measured peak extra memory per method vs input bytes, with x's own size as a guide."""
    recs = [r for r in _records(records) if r.get("extra_peak_bytes") is not None]
    recs = [r for r in recs if r["method"] not in (FLOOR, COPY)]
    fig = go.Figure()
    for (device, method), rs in sorted(_series(recs).items()):
        fig.add_trace(
            go.Scatter(
                x=[_xbytes(r) for r in rs],
                y=[max(1, r["extra_peak_bytes"]) for r in rs],
                mode="lines+markers",
                name=f"{_label(method)} · {device}",
                line=_line(device, method),
                marker=_marker(device, rs),
                customdata=[
                    ["x".join(map(str, r["shape"])), format_bytes(r["extra_peak_bytes"])]
                    for r in rs
                ],
                hovertemplate="%{customdata[0]}: %{customdata[1]} extra"
                + f"<extra>{method} · {device}</extra>",
            )
        )
    if recs:
        xs = sorted({_xbytes(r) for r in recs})
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=xs,
                mode="lines",
                name="size of x itself",
                line={"color": "#999999", "dash": "dot", "width": 1.5},
                hoverinfo="skip",
            )
        )
    _layout(fig, "Peak extra memory per call", "peak extra memory")
    tickvals, ticktext = _byte_ticks([y for t in fig.data for y in (t.y or ())])
    fig.update_yaxes(tickvals=tickvals, ticktext=ticktext)
    parts = []
    for device in sorted({r["device"] for r in recs}):
        top = _largest(recs, device)
        if not top:
            continue
        shape = "x".join(map(str, top[0]["shape"]))
        size = _xbytes(top[0])
        items = ", ".join(
            f"{r['method']} {format_bytes(r['extra_peak_bytes'])}"
            for r in sorted(top, key=lambda r: -r["extra_peak_bytes"])
        )
        parts.append(
            f"On {device} at {shape} (x and w: {format_bytes(size)}) the measured peak extra "
            f"memory is: {items}."
        )
    text = (
        "Peak memory allocated during one call, above the inputs, against input size. The "
        "broadcast one-liner materialises the (B, T, H) product before summing, so it needs "
        "about as much again as x; the one-pass methods need only the (B, H) output. "
        + (" ".join(parts) if parts else "No memory measurements yet (run with memory=True).")
    )
    return describe(fig, text)
