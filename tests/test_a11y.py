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


# ---- what the page's live region is given to say (attnviz.ui.figure.announce) --------------------

_SAY = re.compile(
    r'<div class="attnviz-say" data-slot="([^"]*)" data-rank="(\d+)" data-key="([0-9a-f]+)" '
    r'data-first="([01])" data-say="([^"]*)"></div>'
)


def said(at) -> dict[str, tuple[str, str, bool]]:
    """Each slot's sentence as the page hands it to its live region: {slot: (text, key, first)}
    (the last of a slot on the page, as the page's script reads them)."""
    import html as _html

    out = {}
    for element in at.get("html"):
        for slot, _, key, first, text in _SAY.findall(element.proto.body):
            out[slot] = (_html.unescape(text), key, first == "1")
    return out


def _playground():
    from tests.test_app import _app

    return _app()


def _edit(at, sentence: int, row: int, column: str, value) -> None:
    from attnviz.ui.playground import editor_key
    from tests.test_app import _edit as edit
    from tests.test_app import _version

    edit(at, editor_key("x", _version(at), sentence), {"edited_rows": {row: {column: value}}})


def test_an_edit_is_said_once_with_the_cell_and_the_result_it_moved():
    at = _playground()
    assert "result" not in said(at)  # nothing changed yet: nothing to say
    _edit(at, 1, 2, "h4", "2.5")
    text, key, _ = said(at)["result"]
    x, w = examples.classic()
    x[1, 2, 4] = 2.5
    cell = float((x * w[..., None]).sum(1)[1, 4])
    assert text == (
        "Result updated: weighted (2, 5); net_output[1, 2, 4] is now 2.5, "
        f"so weighted[1, 4] is {cell:.4f}."
    )
    at.run()  # a rerun that changes nothing: the same key, so the script says nothing
    assert said(at)["result"] == (text, key, True)
    _edit(at, 1, 2, "h4", "2.5")  # the same value again: no change, nothing new
    assert said(at)["result"][1] == key
    _edit(at, 1, 2, "h4", "3")
    assert said(at)["result"][0].startswith(
        "Result updated: weighted (2, 5); net_output[1, 2, 4] is now 3,"
    )
    assert said(at)["result"][1] != key


def test_a_refused_value_is_said_in_plain_words():
    at = _playground()
    _edit(at, 0, 0, "h0", "oops")
    text = said(at)["refused"][0]
    assert text.startswith("Refused: ") and "oops" in text, text
    assert "result" not in said(at)  # the result did not change


def test_a_preset_and_a_shape_are_said_with_the_new_result_shape():
    at = _playground()
    at.selectbox(key="pg_preset").select("square").run()
    text = said(at)["result"][0]
    b, t, h = (int(at.session_state[k]) for k in ("pg_b", "pg_t", "pg_h"))
    assert text.startswith(f"Result updated: weighted {(b, h)}; the square preset"), text
    at.number_input(key="pg_b").set_value(3).run()
    assert said(at)["result"][0].startswith(
        f"Result updated: weighted {(3, h)}; 3 sentences, {t} words, {h} hidden"
    )


def test_a_verdict_asked_for_is_said_even_where_the_page_never_noted_the_one_before():
    """The expression's verdict: the one the tab opens on is noted, not said (first False);
    the verdict of an expression the visitor typed is said whatever the page noted before
    (first True: on a busy server the page's script may never have seen the tab's verdict
    between two runs, and it would then have taken the typed one's as the tab's); a rerun, or
    the tab opened again, says nothing new."""
    from attnviz.ui.sections import TABS

    at = _playground()
    at.session_state["pg_tab"] = dict(TABS)["expr"]
    at.run()
    opened, opened_key, first = said(at)["verdict"]
    assert opened.startswith("Result: shape (2, 5). ") and not first
    at.text_input(key="pg_expr").input("(net_output * att_scores[:, None, :]).sum(1)").run()
    text, key, first = said(at)["verdict"]
    assert text.startswith("This expression has a mistake: ") and first, (text, first)
    assert key != opened_key
    at.run()  # the same expression again: not asked for anew
    assert said(at)["verdict"] == (text, key, False)
    at.session_state["pg_tab"] = dict(TABS)["steps"]
    at.run()
    at.session_state["pg_tab"] = dict(TABS)["expr"]
    at.run()
    assert said(at)["verdict"] == (text, key, False)  # the tab opened again on it
