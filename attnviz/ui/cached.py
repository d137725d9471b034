"""Every cache of the Playground, in one place, and what each may hold.

Each function here is an ``st.cache_data`` around library calls, keyed by small numpy arrays (the
example is at most MAX_B x MAX_T x MAX_H = 4 x 8 x 16 numbers) and plain values, and returns only
what the page shows: strings, small float32 arrays, row dicts and figure specs (``Spec``: the
plotly JSON and the figure's text description). No tensor is ever cached, so no cached value can
drag a large storage along (a view pickles its whole storage).

Bounds. Every cache has a TTL, an entry count and a byte budget (``max_size``, counted in pickled
bytes by Streamlit); ``server.maxCacheDataSize`` in .streamlit/config.toml caps all of them
together (the expression tab's cache included). ``BUDGETS`` lists them; README "Memory" adds them up.

Figures. Unpickling a ``go.Figure`` rebuilds and re-validates it (~20 ms, measured), more than
drawing it; a cached ``Spec`` is a string. ``show`` hands it to ``st.plotly_chart`` as a
``_Prebuilt`` figure: a ``BaseFigure`` whose ``to_dict`` is the spec, already validated when it
was built, so nothing is validated or rebuilt per rerun.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import torch
from plotly.basedatatypes import BaseFigure

import attnviz
from attnviz import examples, figures, trace
from attnviz.figures.draft import Draft
from attnviz.forms import TRAP
from attnviz.ui import figure as figure_ui

TTL = "20m"
PLOT_CONFIG = figure_ui.PLOT_CONFIG
PHONE_PLOT_CONFIG = figure_ui.PHONE_PLOT_CONFIG
#: Figure styles by name (``figures.Style.name``): the cache keys carry the name.
STYLES = {s.name: s for s in (figures.SCREEN, figures.PROJECTOR, figures.PHONE)}


plot_config = figure_ui.plot_config


def _style(name: str) -> figures.Style:
    return STYLES.get(name, figures.SCREEN)


# name: (max_entries, max_size). A spec of the largest example is ~60 KB; rows and arrays less.
BUDGETS: dict[str, tuple[int, str]] = {
    "preset": (64, "2MiB"),
    "outcome": (256, "4MiB"),
    "steps": (64, "4MiB"),
    "step_figure": (256, "16MiB"),
    "cell": (256, "16MiB"),
    "result_figure": (64, "4MiB"),
    "forms": (64, "1MiB"),
    "mistakes": (64, "8MiB"),
    "mistake_figure": (128, "8MiB"),
    "trap": (64, "1MiB"),
    "gradients": (64, "8MiB"),
    "view_copy": (64, "4MiB"),
}


def _cache(name: str):
    entries, size = BUDGETS[name]
    return st.cache_data(max_entries=entries, max_size=size, ttl=TTL, show_spinner=False)


@dataclass(frozen=True)
class Spec:
    """A figure as the page shows it: plotly JSON (validated when built) and its description."""

    json: str
    description: str

    @classmethod
    def of(cls, fig: go.Figure | Draft) -> Spec:
        if isinstance(fig, Draft):  # the same JSON, without making and unmaking a go.Figure
            return cls(fig.to_json(), fig.description)
        return cls(pio.to_json(fig, validate=False), figures.description(fig))


class _Prebuilt(BaseFigure):
    """A figure already built and validated, carried as its spec: ``st.plotly_chart`` asks a
    ``BaseFigure`` for ``to_dict()`` and serialises that without validating it again."""

    def __init__(self, spec: dict) -> None:  # no BaseFigure.__init__: nothing to validate
        self._spec = spec

    def to_dict(self) -> dict:
        return self._spec


def figure(spec: Spec) -> BaseFigure:
    """What ``st.plotly_chart`` draws for a cached spec."""
    return _Prebuilt(json.loads(spec.json))


def show(spec: Spec, key: str, *, caption: bool = True, style: str = "screen") -> None:
    """A cached figure with its name, summary (unless caption is False) and numbers
    (``figure.show``; the camera icon saves a PNG; no toolbar on a phone)."""
    figure_ui.show(figure(spec), key, summary=spec.description if caption else "", style=style)


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


# ---- the example ------------------------------------------------------------------------------


@_cache("preset")
def preset(
    name: str, b: int, t: int, h: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, bool]:
    """-> x (B, T, H) float32, w (B, T) float32, mask (B, T) bool, softmax?, uses a mask?"""
    ex = examples.preset(name, b, t, h, seed=seed)
    mask = ex.mask if ex.mask is not None else torch.ones(b, t, dtype=torch.bool)
    return (
        ex.net_output.numpy().astype(np.float32),
        ex.att_scores.numpy().astype(np.float32),
        mask.numpy().copy(),
        ex.normalize == "softmax",
        ex.mask is not None,
    )


@_cache("outcome")
def outcome(
    x: np.ndarray, w: np.ndarray, m: np.ndarray | None, softmax: bool
) -> tuple[np.ndarray, np.ndarray]:
    """x (B, T, H), raw w (B, T), mask (B, T) or None -> (weighted (B, H), weights applied (B, T))."""
    xt, wt = _t(x), _t(w)
    mt = None if m is None else _t(m)
    normalize = "softmax" if softmax else None
    weighted = attnviz.weighted_sum(xt, wt, mask=mt, normalize=normalize)  # (B, H)
    applied = attnviz.attention_weights(wt, mask=mt, normalize=normalize)  # (B, T)
    return weighted.numpy().astype(np.float32), applied.numpy().astype(np.float32)


@_cache("forms")
def forms(x: np.ndarray, w: np.ndarray, m: np.ndarray | None, softmax: bool) -> list[dict]:
    """Every method in attnviz.METHODS on the example, against the float64 reference: table rows."""
    checks = attnviz.compare_methods(
        _t(x), _t(w), mask=None if m is None else _t(m), normalize="softmax" if softmax else None
    )
    return [
        {
            "method": c.method,
            "how": c.summary,
            "shape": str(tuple(c.result.shape)),
            "largest difference from float64": f"{c.max_abs_diff:.1e}",
            "agrees": "✓" if c.ok else "✗",
        }
        for c in checks
    ]


# ---- step by step (x (B, T, H), wa (B, T): the weights actually applied) -----------------------


def _story(x: np.ndarray, wa: np.ndarray) -> tuple[list[trace.Step], tuple[float, float]]:
    """The steps of one example and their shared colour range. A new example (a cell edit)
    misses several caches in one rerun (its steps' text, the open step's figure): they share
    one computation through a small per-process memo of the last few examples."""
    return _story_of(x.dtype.str, x.shape, x.tobytes(), wa.dtype.str, wa.shape, wa.tobytes())


@functools.lru_cache(maxsize=8)  # 8 examples of at most 4 x 8 x 16 numbers: a few KB in all
def _story_of(
    x_dtype: str, x_shape: tuple, x_bytes: bytes, w_dtype: str, w_shape: tuple, w_bytes: bytes
) -> tuple[list[trace.Step], tuple[float, float]]:
    x = np.frombuffer(x_bytes, dtype=x_dtype).reshape(x_shape)
    wa = np.frombuffer(w_bytes, dtype=w_dtype).reshape(w_shape)
    steps = trace.broadcast_steps(_t(x.copy()), _t(wa.copy()))
    return steps, figures.shared_zrange(steps)


@dataclass(frozen=True)
class StepText:
    """What the page writes about one step."""

    title: str
    code: str
    explanation: str
    shape: str
    strides: str
    new_bytes: str


@_cache("steps")
def steps(x: np.ndarray, wa: np.ndarray) -> tuple[StepText, ...]:
    """The one-liner's steps as text (titles, code, shapes, strides, bytes)."""
    story, _ = _story(x, wa)
    return tuple(
        StepText(
            s.title,
            s.code,
            s.explanation,
            str(s.shape),
            "" if s.strides is None else str(s.strides),
            "" if s.new_bytes is None else str(s.new_bytes),
        )
        for s in story
    )


def steps_table(x: np.ndarray, wa: np.ndarray) -> str:
    """Every step's code, shape, strides and new bytes, one row each, as a Markdown table. They
    depend on the shapes alone, so one table serves every example of a size (and a cell edit
    re-sends one text, not a dataframe)."""
    b, t, h = x.shape
    return _steps_table(int(b), int(t), int(h))


def _table_cell(text: str) -> str:
    return text.replace("|", "\\|")


@_cache("steps")
def _steps_table(b: int, t: int, h: int) -> str:
    rows = steps(np.zeros((b, t, h), np.float32), np.zeros((b, t), np.float32))
    lines = ["| # | step | code | shape | strides | new bytes |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {i} | {_table_cell(s.title)} | `{_table_cell(s.code)}` | {s.shape} | {s.strides or '–'} | "
        f"{s.new_bytes or '–'} |"
        for i, s in enumerate(rows, start=1)
    ]
    return "\n".join(lines)


@_cache("step_figure")
def step_figure(x: np.ndarray, wa: np.ndarray, i: int, style: str = "screen") -> Spec:
    """Step i's figure, on the colour range shared by the whole story, in style ``style``."""
    story, zrange = _story(x, wa)
    return Spec.of(figures.step_draft(story[i], zrange=zrange, style=_style(style)))


def step_html(x: np.ndarray, wa: np.ndarray, i: int) -> str:
    """Step i's figure as a self-contained HTML page (built when a visitor downloads it)."""
    story, zrange = _story(x, wa)
    return figures.figure_html(figures.step_figure(story[i], zrange=zrange))


@dataclass(frozen=True)
class CellView:
    """One result cell: its formula, its sum written out, and its figure."""

    formula: str
    equation: str
    figure: Spec


@_cache("cell")
def cell(x: np.ndarray, wa: np.ndarray, b: int, h: int, style: str = "screen") -> CellView:
    """weighted[b, h] = sum over t of wa[b, t] * x[b, t, h], written out."""
    prov = trace.provenance(_t(x), _t(wa), b, h)
    _, zrange = _story(x, wa)
    fig = figures.provenance_figure(prov, zrange=zrange, style=_style(style))
    return CellView(prov.formula, prov.equation, Spec.of(fig))


@_cache("result_figure")
def result_figure(x: np.ndarray, wa: np.ndarray, style: str = "screen") -> Spec:
    """The result weighted (B, H) as a heatmap whose cells can be clicked."""
    story, zrange = _story(x, wa)
    result = story[-1].value  # (B, H)
    fig = figures.tensor_draft(
        result,
        title="weighted: click a cell",
        axis_names=("sentence", "hidden"),
        zrange=zrange,
        name="weighted",
        style=_style(style),
    )
    # heatmaps can't be selected by a click; invisible markers on the cell centres can
    b, h = result.shape
    fig.add_trace(
        {
            "type": "scatter",
            "x": [j for _ in range(b) for j in range(h)],
            "y": [i for i in range(b) for _ in range(h)],
            "mode": "markers",
            "marker": {"size": 36, "opacity": 0, "symbol": "square"},
            "hovertemplate": "weighted[%{y}, %{x}]: click to see its sum<extra></extra>",
            "showlegend": False,
        }
    )
    fig.update_layout(clickmode="event+select", dragmode=False)
    return Spec.of(fig)


# ---- mistakes, gradients, expand vs repeat -------------------------------------------------------


@dataclass(frozen=True)
class MistakeText:
    """What the page writes about one wrong form."""

    code: str
    outcome: str
    explanation: str
    error: str | None
    variant_note: str | None
    silent: bool


@_cache("mistakes")
def mistakes(
    x: np.ndarray, wa: np.ndarray, style: str = "screen"
) -> tuple[tuple[MistakeText, ...], Spec]:
    """The gallery of wrong forms run on the example, and its overview figure."""
    items = trace.mistakes(_t(x), _t(wa))
    texts = tuple(
        MistakeText(m.code, m.outcome, m.explanation, m.error, m.variant_note, m.silent)
        for m in items
    )
    return texts, Spec.of(figures.mistakes_figure(items, style=_style(style)))


@dataclass(frozen=True)
class TrapView:
    """The T == H trap run on the example: its code, what it gives (B, H) beside the right answer
    (B, H), and whether those differ (False: right here by luck, e.g. every weight 1/T)."""

    code: str
    value: np.ndarray
    expected: np.ndarray
    wrong: bool


@_cache("trap")
def trap(x: np.ndarray, wa: np.ndarray) -> TrapView | None:
    """x (B, T, H), wa (B, T) -> the trap form (``attnviz.forms.TRAP``) run by torch on them, where T == H
    lets it run without an error; None where T != H (torch refuses it)."""
    if x.shape[1] != x.shape[2]:
        return None
    m = next(m for m in trace.mistakes(_t(x), _t(wa)) if m.key == TRAP and not m.variant)
    if m.value is None:  # torch refused it after all: nothing silent to show
        return None
    value = m.value.numpy().astype(np.float32)  # (B, H)
    return TrapView(m.code, value, m.expected.numpy().astype(np.float32), not m.correct)


@_cache("mistake_figure")
def mistake_figure(x: np.ndarray, wa: np.ndarray, i: int, style: str = "screen") -> Spec:
    item = trace.mistakes(_t(x), _t(wa))[i]
    return Spec.of(figures.mistake_figure(item, style=_style(style)))


@dataclass(frozen=True)
class GradientView:
    """The backward pass of one input: what it says, the formula, how well it matches autograd."""

    explanation: str
    code: str
    ok: bool
    max_abs_diff: float
    figure: Spec


@_cache("gradients")
def gradients(x: np.ndarray, wa: np.ndarray, part: str, style: str = "screen") -> GradientView:
    """part "att_scores" or "net_output": its gradient by formula against autograd."""
    g = trace.gradients(_t(x), _t(wa))
    fig = Spec.of(figures.gradient_figure(g, part=part, style=_style(style)))
    if part == "att_scores":
        return GradientView(
            g.explanation, g.att_scores_code, g.att_scores_ok, g.att_scores_max_abs_diff, fig
        )
    return GradientView(
        g.explanation, g.net_output_code, g.net_output_ok, g.net_output_max_abs_diff, fig
    )


@dataclass(frozen=True)
class ViewCopyView:
    """expand beside repeat: the explanation, one table row per layout, and the figure."""

    explanation: str
    rows: tuple[dict, ...]
    figure: Spec


@_cache("view_copy")
def view_copy(wa: np.ndarray, h: int, style: str = "screen") -> ViewCopyView:
    vc = trace.view_vs_copy(_t(wa), h)
    rows = tuple(
        {
            "code": lay.code,
            "shape": str(lay.shape),
            "strides": str(lay.strides),
            "shares memory with att_scores": "yes" if lay.same_memory else "no",
            "new bytes": lay.new_bytes,
            "numbers stored": lay.storage_numbers,
        }
        for lay in (vc.source, vc.expand, vc.repeat)
    )
    fig = figures.view_copy_figure(vc, style=_style(style))
    return ViewCopyView(vc.explanation, rows, Spec.of(fig))
