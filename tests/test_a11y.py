"""Accessibility as data: every heatmap label >= 4.5:1 on its cell (the colour scale at the cell's
value against the label's colour), and a figure's tables hold exactly its numbers under their
sentence / word / hidden headers. (In a browser, with axe-core: tests/test_a11y_browser.py.)"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from attnviz import examples, figures, trace
from attnviz.figures.contrast import BLACK, WHITE, contrast, label_color, luminance, scale_color
from attnviz.figures.heatmap import COLORSCALE, fmt
from attnviz.figures.table import figure_tables, tables_html

_COLOR = re.compile(r'<span style="color:(#[0-9a-f]{6})">')


def _label_color(text: str, trace_color: str) -> str:
    """The colour a label is drawn in: its span's, else the trace's textfont colour."""
    found = set(_COLOR.findall(text))
    assert len(found) <= 1, text
    return found.pop() if found else trace_color


def _story(b: int, t: int, h: int, seed: int) -> list:
    ex = examples.preset("classic", b, t, h, seed=seed)
    steps = trace.broadcast_steps(ex.net_output, ex.att_scores)
    figs = figures.story_figures(steps)
    g = trace.gradients(ex.net_output, ex.att_scores)
    figs.append(figures.gradient_figure(g, part="att_scores"))
    figs.append(figures.gradient_figure(g, part="net_output"))
    return figs


def _heatmap_labels(fig) -> list[tuple[float | None, str, float, float]]:
    """(value, label colour, zmin, zmax) of every cell of every heatmap in fig."""
    out = []
    for tr in fig.to_dict()["data"]:
        if tr.get("type") != "heatmap":
            continue
        color = tr.get("textfont", {}).get("color")
        for zrow, trow in zip(tr["z"], tr["text"], strict=True):
            for z, text in zip(zrow, trow, strict=True):
                out.append((z, _label_color(text, color), tr["zmin"], tr["zmax"]))
    return out


@pytest.mark.parametrize(("b", "t", "h", "seed"), [(2, 3, 5, 0), (3, 4, 4, 1), (4, 8, 16, 2)])
def test_every_heatmap_label_reads_at_aa_contrast(b, t, h, seed):
    figs = _story(b, t, h, seed)
    checked = 0
    for fig in figs:
        for z, color, zmin, zmax in _heatmap_labels(fig):
            assert color in (BLACK, WHITE)
            background = scale_color(COLORSCALE, z, zmin, zmax)
            assert contrast(color, background) >= 4.5, (fig.layout.title.text, z, color)
            checked += 1
    assert checked > 0


def test_black_or_white_always_reaches_aa_on_any_colour():
    rng = np.random.default_rng(0)
    for rgb in rng.integers(0, 256, size=(2000, 3)):
        background = "#" + "".join(f"{int(v):02x}" for v in rgb)
        assert contrast(label_color(background), background) >= 4.5


@pytest.mark.parametrize(
    ("a", "b", "ratio"), [("#000000", "#ffffff", 21.0), ("#777777", "#ffffff", 4.48)]
)
def test_contrast_matches_the_wcag_formula(a, b, ratio):
    assert contrast(a, b) == pytest.approx(ratio, abs=0.01)
    assert luminance("#ffffff") == pytest.approx(1.0)


def test_the_scale_colour_is_plotly_s_stops_at_their_values():
    assert scale_color(COLORSCALE, -1.0, -1.0, 1.0) == "#2166ac"
    assert scale_color(COLORSCALE, 0.0, -1.0, 1.0) == "#f7f7f7"
    assert scale_color(COLORSCALE, 1.0, -1.0, 1.0) == "#b35806"
    assert scale_color(COLORSCALE, None, -1.0, 1.0) == "#ffffff"


@pytest.mark.parametrize(("b", "t", "h"), [(2, 3, 5), (3, 4, 4)])
def test_a_3d_figure_s_tables_hold_its_numbers_under_their_axes(b, t, h):
    x = torch.randn(b, t, h, generator=torch.Generator().manual_seed(3))
    fig = figures.tensor_figure(x, title="net_output")
    tables = figure_tables(fig.to_dict())
    assert len(tables) == b  # one per sentence
    for i, table in enumerate(tables):
        assert table.columns == ("word", *(f"hidden {j}" for j in range(h)))
        assert [head for head, _ in table.rows] == [f"word {r}" for r in range(t)]
        got = [[float(c) for c in cells] for _, cells in table.rows]
        want = [[float(fmt(float(v))) for v in row] for row in x[i].double().tolist()]
        assert got == want


def test_stretched_cells_are_named_in_the_table():
    ex = examples.preset("classic", 2, 3, 4, seed=0)
    steps = trace.broadcast_steps(ex.net_output, ex.att_scores)
    expand = next(s for s in steps if s.stretched)
    fig = figures.step_figure(expand)
    (first, *_) = figure_tables(fig.to_dict())
    flat = [c for _, cells in first.rows for c in cells]
    assert any(c.endswith("(stretched copy)") for c in flat)
    assert not all(c.endswith("(stretched copy)") for c in flat)  # index 0 is the real cell


def test_table_html_escapes_every_text():
    fig = figures.tensor_figure(torch.ones(2, 2), title="<b>x</b>", axis_names=("<i>s", "w"))
    out = tables_html(figure_tables(fig.to_dict()))
    assert "<i>" not in out and "&lt;i&gt;s" in out
    assert out.count('<th scope="row">') == 2 and out.count("<caption>") == 1
