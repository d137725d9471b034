"""The figure builders assemble dicts (``attnviz.figures.draft.Draft``) and skip plotly's
validation while they build: here plotly validates every builder's figure, in every style, and a
``Draft`` is held to what the same calls on a real ``go.Figure`` / ``make_subplots`` give."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch
from plotly.subplots import make_subplots

from attnviz import figures, trace
from attnviz.figures import PHONE, PROJECTOR, SCREEN
from attnviz.figures.draft import Draft, merge

STYLES = [SCREEN, PROJECTOR, PHONE]
# B, T, H all different; T == H (the trap); more sentences than a row of panels holds; all ones
SHAPES = [
    (2, 3, 5),
    (1, 4, 4),
    pytest.param((5, 3, 2), marks=pytest.mark.slow),
    pytest.param((2, 1, 1), marks=pytest.mark.slow),
]


def _example(shape: tuple[int, int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(hash(shape) % 10_000)
    return torch.randn(shape, generator=g), torch.rand(shape[:2], generator=g)


def _every_figure(shape: tuple[int, int, int], style) -> dict[str, go.Figure]:
    x, w = _example(shape)
    steps = trace.broadcast_steps(x, w)
    grads = trace.gradients(x, w)
    gallery = trace.mistakes(x, w)
    out = {f"step {i}": f for i, f in enumerate(figures.story_figures(steps, style=style))}
    out |= {
        f"step {i} with a cell": f
        for i, f in enumerate(figures.story_figures(steps, cell=(0, shape[2] - 1), style=style))
    }
    out |= {f"mistake {i}": figures.mistake_figure(m, style=style) for i, m in enumerate(gallery)}
    out["gallery"] = figures.mistakes_figure(gallery, style=style)
    out["provenance"] = figures.provenance_figure(trace.provenance(x, w, 0, 0), style=style)
    out["grad w"] = figures.gradient_figure(grads, style=style)
    out["grad x"] = figures.gradient_figure(grads, part="net_output", style=style)
    out["view copy"] = figures.view_copy_figure(trace.view_vs_copy(w, shape[2]), style=style)
    out["1-D"] = figures.tensor_figure(w[0], title="<one> row", style=style)
    return out


@pytest.mark.parametrize("style", STYLES, ids=lambda s: s.name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_builder_figure_passes_plotly_validation(shape, style):
    for name, fig in _every_figure(shape, style).items():
        spec = fig.to_dict()
        try:
            checked = go.Figure(spec)  # validates every property; raises on an unknown one
        except ValueError as e:
            pytest.fail(f"{name} on {shape} ({style.name}): {e}")
        assert checked.to_dict()["data"], f"{name}: no traces"
        assert figures.description(fig), f"{name}: no description"


GRIDS = [
    {"rows": 1, "cols": 2, "horizontal_spacing": 0.12, "subplot_titles": ["a", "b"]},
    {"rows": 2, "cols": 1, "vertical_spacing": 0.22, "subplot_titles": ["a", "b"]},
    {"rows": 2, "cols": 4, "subplot_titles": [f"sentence {i}" for i in range(5)]},
    {"rows": 3, "cols": 1, "vertical_spacing": 0.16},
    {
        "rows": 1,
        "cols": 2,
        "column_widths": [0.62, 0.38],
        "specs": [[{"type": "table"}, {"type": "xy"}]],
        "horizontal_spacing": 0.1,
    },
    {
        "rows": 2,
        "cols": 1,
        "row_heights": [0.55, 0.45],
        "specs": [[{"type": "table"}], [{"type": "xy"}]],
        "vertical_spacing": 0.08,
    },
]


def _same_calls(fig, rows: int, cols: int, specs=None):
    """The building calls the builders make, on a go.Figure or a Draft."""
    for r in range(1, rows + 1):
        for c in range(1, cols + 1):
            kind = specs[r - 1][c - 1]["type"] if specs else "xy"
            if kind == "table":
                fig.add_trace({"type": "table", "cells": {"values": [[1, 2]]}}, row=r, col=c)
                continue
            fig.add_trace({"type": "heatmap", "z": [[r, c]], "colorbar": None}, row=r, col=c)
            fig.update_xaxes(title={"text": f"x{r}{c}"}, row=r, col=c)
            fig.update_yaxes(autorange="reversed", row=r, col=c)
            fig.add_shape(type="rect", x0=0, x1=1, y0=0, y1=1, line={"width": 2}, row=r, col=c)
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, tickmode="linear", dtick=1)
    fig.add_annotation(text="note", xref="paper", yref="paper", x=0, y=0, showarrow=False)
    fig.update_layout(margin={"l": 10, "t": 20}, height=300, title={"text": "t"})
    fig.update_layout(margin={"b": 5})
    fig.update_traces(visible=True)


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g['rows']}x{g['cols']}")
def test_a_draft_grid_builds_what_make_subplots_builds(grid):
    real = make_subplots(**grid)
    draft = Draft.grid(**grid)
    _same_calls(real, grid["rows"], grid["cols"], grid.get("specs"))
    _same_calls(draft, grid["rows"], grid["cols"], grid.get("specs"))
    assert draft.figure().to_dict() == real.to_dict()


def test_a_draft_grid_can_be_built_again_unchanged():
    """The grid's layout is computed once and kept: building on one draft leaves the next fresh."""
    grid = GRIDS[0]
    first = Draft.grid(**grid)
    _same_calls(first, 1, 2)
    assert Draft.grid(**grid).figure().to_dict() == make_subplots(**grid).to_dict()


def test_a_plain_draft_builds_what_a_figure_builds():
    real, draft = go.Figure(), Draft()
    for fig in (real, draft):
        fig.add_trace({"type": "scatter", "x": [1, 2], "y": [3, 4], "marker": {"opacity": 0}})
        fig.update_xaxes(range=[0, 2], side="top")
        fig.update_yaxes(range=[-4, 0])
        fig.add_shape(type="rect", x0=0, x1=1, y0=0, y1=-1, layer="below")
        fig.update_layout(meta={"description": "d"}, margin={"l": 3})
    assert draft.figure().to_dict() == real.to_dict()


def test_merge_merges_nested_dicts_and_drops_none():
    into = {"margin": {"l": 1, "t": 2}, "title": "a"}
    merge(into, {"margin": {"t": 5}, "title": None, "height": 3, "font": {"size": None}})
    assert into == {"margin": {"l": 1, "t": 5}, "title": "a", "height": 3, "font": {}}


def test_a_cell_outside_the_grid_is_refused():
    draft = Draft.grid(rows=1, cols=2)
    with pytest.raises(ValueError, match="row 2, col 1"):
        draft.add_trace({"type": "heatmap", "z": [[1]]}, row=2, col=1)


@pytest.mark.parametrize("style", STYLES, ids=lambda s: s.name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_drafts_json_is_its_figures_json(shape, style):
    """The Playground sends ``Draft.to_json()`` (no go.Figure made): plotly's own JSON, template
    and base64 arrays included, for every step of the story and a tensor with marked cells."""
    x, w = _example(shape)
    steps = trace.broadcast_steps(x, w)
    zrange = figures.shared_zrange(steps)
    drafts = {
        f"step {i}": figures.step_draft(s, zrange=zrange, cell=cell, style=style)
        for i, s in enumerate(steps)
        for cell in (None, (0, shape[2] - 1))
    }
    drafts["3-D"] = figures.tensor_draft(x, title="x <b>", stretched=(2,), style=style)
    for name, draft in drafts.items():
        sent = json.loads(draft.to_json())
        assert sent == json.loads(pio.to_json(draft.figure(), validate=False)), name
        assert sent["layout"]["template"]["layout"], name  # plotly's default template is kept
        assert draft.description and draft.description == figures.description(draft.figure())


def test_a_steps_draft_and_figure_agree():
    x, w = _example((2, 3, 5))
    step = trace.broadcast_steps(x, w)[2]
    fig, draft = figures.step_figure(step), figures.step_draft(step)
    assert fig.to_dict() == draft.figure().to_dict()
