"""attnviz.figures as data: z values, cell text, broadcast marks, annotations and descriptions."""

import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz import AttnvizError, examples, trace
from attnviz.figures import (
    COLORSCALE,
    PHONE,
    PROJECTOR,
    SCREEN,
    STRETCH_GLYPH,
    alignment_figure,
    description,
    figure_html,
    gradient_figure,
    mistake_figure,
    mistakes_figure,
    provenance_figure,
    shared_zrange,
    short_title,
    step_figure,
    story_figures,
    tensor_figure,
    view_copy_figure,
)
from attnviz.figures.heatmap import plain_label

# the classic, T == H and all ones in the inner loop; the other edge shapes with the slow tests
SHAPES = [(2, 3, 5), (3, 4, 4), (1, 1, 1)] + [
    pytest.param(s, marks=pytest.mark.slow) for s in [(1, 4, 2), (4, 1, 3), (2, 5, 1)]
]


def random_inputs(b, t, h, *, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g)  # (B,T,H)
    w = torch.rand(b, t, generator=g)  # (B,T)
    return x, w


def heatmaps(fig):
    return [tr for tr in fig.data if tr.type == "heatmap"]


def z_of(trace_):
    return np.array([[np.nan if v is None else v for v in row] for row in trace_.z], dtype=float)


def every_figure(x, w):
    """One of each builder on these inputs."""
    steps = trace.broadcast_steps(x, w)
    figs = story_figures(steps)
    figs.append(alignment_figure(trace.align_shapes(x.shape, w.shape)))
    figs.append(provenance_figure(trace.provenance(x, w, 0, 0)))
    items = trace.mistakes(x, w)
    figs.append(mistakes_figure(items))
    figs.extend(mistake_figure(m) for m in items)
    g = trace.gradients(x, w)
    figs.append(gradient_figure(g))
    figs.append(gradient_figure(g, part="net_output"))
    figs.append(view_copy_figure(trace.view_vs_copy(w, x.shape[2])))
    return figs


# ---------------------------------------------------------------- tensor_figure


def test_one_dimensional_tensor_is_one_row():
    fig = tensor_figure(torch.tensor([0.5, -1.0, 2.0]), title="w")
    (hm,) = heatmaps(fig)
    assert z_of(hm).tolist() == [[0.5, -1.0, 2.0]]
    assert fig.layout.xaxis.title.text == "word"
    assert [[plain_label(c) for c in row] for row in hm.text] == [["0.500", "-1.000", "2.000"]]


def test_two_dimensional_tensor_labels_sentence_and_word():
    _, w = examples.classic()
    fig = tensor_figure(w, title="att_scores")
    (hm,) = heatmaps(fig)
    np.testing.assert_allclose(z_of(hm), w.numpy(), rtol=1e-6)
    assert fig.layout.yaxis.title.text == "sentence"
    assert fig.layout.xaxis.title.text == "word"
    assert plain_label(hm.text[0][1]) == "0.528"


@pytest.mark.parametrize("shape", SHAPES)
def test_three_dimensional_tensor_has_one_panel_per_sentence(shape):
    x, _ = random_inputs(*shape)
    fig = tensor_figure(x, title="net_output")
    maps = heatmaps(fig)
    assert len(maps) == shape[0]
    for b, hm in enumerate(maps):
        np.testing.assert_allclose(z_of(hm), x[b].numpy(), rtol=1e-6)
    titles = [a.text for a in fig.layout.annotations]
    assert [f"sentence {b}" for b in range(shape[0])] == titles[: shape[0]]
    assert fig.layout.xaxis.title.text == "hidden" and fig.layout.yaxis.title.text == "word"


def test_every_cell_shows_its_number():
    x, _ = random_inputs(2, 3, 4)
    for b, hm in enumerate(heatmaps(tensor_figure(x, title="x"))):
        shown = np.array([[float(plain_label(s)) for s in row] for row in hm.text])
        np.testing.assert_allclose(shown, x[b].numpy(), atol=5e-4 + 1e-9, rtol=0)


def test_colour_scale_is_zero_centred_and_colour_blind_safe():
    fig = tensor_figure(torch.tensor([[0.1, 0.3]]), title="w")
    (hm,) = heatmaps(fig)
    assert hm.zmid == 0 and hm.zmin == -hm.zmax == pytest.approx(-0.3)
    assert [c[1] for c in hm.colorscale] == [c[1] for c in COLORSCALE]
    assert "#2166ac" in str(hm.colorscale) and "#b35806" in str(hm.colorscale)


def test_given_zrange_is_made_symmetric():
    (hm,) = heatmaps(tensor_figure(torch.ones(2, 2), title="w", zrange=(-0.5, 3.0)))
    assert (hm.zmin, hm.zmax) == (-3.0, 3.0)


def test_tensor_figure_rejects_four_axes():
    with pytest.raises(AttnvizError) as info:
        tensor_figure(torch.zeros(1, 2, 3, 4), title="x")
    assert "(1, 2, 3, 4)" in str(info.value)


def test_fonts_are_big_enough_for_a_projector():
    fig = tensor_figure(torch.rand(2, 3, 5), title="x")
    assert fig.layout.font.size >= 16 and fig.layout.title.font.size >= 20
    assert all(hm.textfont.size >= 14 for hm in heatmaps(fig))


def test_nan_cell_is_blank_but_labelled():
    (hm,) = heatmaps(tensor_figure(torch.tensor([[1.0, float("nan")]]), title="w"))
    assert hm.z[0][1] is None and plain_label(hm.text[0][1]) == "nan"


# ---------------------------------------------------------------- broadcast marks


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 4, 4), (1, 1, 3), (4, 2, 2)])
def test_expand_step_marks_exactly_the_broadcast_cells(shape):
    b, t, h = shape
    steps = trace.broadcast_steps(*random_inputs(*shape))
    fig = step_figure(next(s for s in steps if s.key == "expand"))
    for hm in heatmaps(fig):
        marked = [[STRETCH_GLYPH in cell for cell in row] for row in hm.text]
        assert marked == [[j > 0 for j in range(h)] for _ in range(t)]
    dotted = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    assert len(dotted) == b * t * (h - 1)
    note = " ".join(a.text for a in fig.layout.annotations)
    assert f"hidden axis stretched from 1 to {h} (stride 0)" in note
    assert f"{b * t * (h - 1)} of {b * t * h} cells are marked" in description(fig)


@pytest.mark.parametrize("key", ["net_output", "unsqueeze", "product", "sum", "result"])
def test_real_cells_are_not_marked(key):
    steps = trace.broadcast_steps(*random_inputs(2, 3, 5))
    fig = step_figure(next(s for s in steps if s.key == key))
    assert not any(STRETCH_GLYPH in cell for hm in heatmaps(fig) for row in hm.text for cell in row)
    assert not fig.layout.shapes


def test_expand_with_one_hidden_feature_marks_nothing():
    steps = trace.broadcast_steps(*random_inputs(2, 3, 1))
    fig = step_figure(next(s for s in steps if s.key == "expand"))
    assert not fig.layout.shapes


# ---------------------------------------------------------------- the story


@pytest.mark.parametrize("shape", SHAPES)
def test_story_shares_one_colour_range(shape):
    steps = trace.broadcast_steps(*random_inputs(*shape, seed=1))
    lo, hi = shared_zrange(steps)
    largest = max(float(s.value.abs().max()) for s in steps if s.value is not None)
    assert (lo, hi) == (pytest.approx(-largest), pytest.approx(largest))
    for fig in story_figures(steps):
        for hm in heatmaps(fig):
            assert (hm.zmin, hm.zmax) == (lo, hi)


def test_shared_zrange_of_zeros_is_not_empty():
    assert shared_zrange([torch.zeros(2, 3), None]) == (-1.0, 1.0)


@pytest.mark.parametrize("shape", SHAPES)
def test_step_figures_show_step_values(shape):
    steps = trace.broadcast_steps(*random_inputs(*shape, seed=2))
    for s, fig in zip(steps, story_figures(steps), strict=True):
        if s.value is None:
            continue
        maps = heatmaps(fig)
        z = np.stack([z_of(hm) for hm in maps]) if s.value.ndim == 3 else z_of(maps[0])
        want = s.value.numpy() if s.value.ndim > 1 else s.value.numpy()[None]
        np.testing.assert_allclose(z, want, rtol=1e-6)


def test_step_subtitle_gives_code_shape_and_strides():
    steps = trace.broadcast_steps(*examples.classic())
    fig = step_figure(next(s for s in steps if s.key == "expand"))
    sub = fig.layout.title.subtitle.text
    assert "att_scores[..., None].expand(2, 3, 5)" in sub
    assert "shape (2, 3, 5)" in sub and "strides (3, 1, 0)" in sub and "0 new bytes" in sub


def test_result_description_reports_the_cross_checks():
    steps = trace.broadcast_steps(*examples.classic())
    text = description(step_figure(steps[-1]))
    assert "einsum: agrees" in text and "bmm: agrees" in text


# ---------------------------------------------------------------- alignment


def test_alignment_figure_draws_each_outcome_with_a_glyph():
    al = trace.align_shapes((2, 3, 5), (2, 3, 1), name_a="net_output", name_b="w")
    fig = alignment_figure(al, axis_names=("sentence", "word", "hidden"))
    texts = [a.text for a in fig.layout.annotations]
    assert texts.count("= equal") == 2 and f"{STRETCH_GLYPH} stretch 1 → 5" in texts
    assert f"1 {STRETCH_GLYPH}" in texts
    assert list(fig.layout.yaxis.ticktext) == ["net_output", "w", "outcome", "result"]
    assert "(hidden)" in fig.layout.xaxis.ticktext[2]
    assert "broadcast to (2, 3, 5)" in description(fig)


def test_alignment_figure_shows_the_clash():
    al = trace.align_shapes((2, 3, 5), (2, 3), name_a="net_output", name_b="att_scores")
    fig = alignment_figure(al)
    texts = [a.text for a in fig.layout.annotations]
    assert texts.count("✗ clash") == 2 and "5 ✗" in texts and "3 ✗" in texts
    assert f"{STRETCH_GLYPH} new axis → 2" in texts
    assert "5 meets 3" in description(fig)


def test_align_step_figure_is_the_alignment_diagram():
    steps = trace.broadcast_steps(*examples.classic())
    fig = step_figure(next(s for s in steps if s.key == "align"))
    assert not heatmaps(fig)
    assert "torch.broadcast_shapes((2, 3, 5), (2, 3, 1))" in description(fig)


# ---------------------------------------------------------------- provenance


def test_provenance_figure_rows_are_weight_value_product():
    x, w = examples.classic()
    p = trace.provenance(x, w, 1, 3)
    fig = provenance_figure(p)
    z = z_of(heatmaps(fig)[0])
    np.testing.assert_allclose(z[0, :3], w[1].numpy(), rtol=1e-6)
    np.testing.assert_allclose(z[1, :3], x[1, :, 3].numpy(), rtol=1e-6)
    np.testing.assert_allclose(z[2, :3], (w[1] * x[1, :, 3]).numpy(), rtol=1e-6)
    assert z[2, 3] == pytest.approx(p.total)
    assert np.isnan(z[0, 3]) and np.isnan(z[1, 3])
    assert p.equation in description(fig)


# ---------------------------------------------------------------- mistakes


def test_error_mistake_shows_torch_message():
    m = next(m for m in trace.mistakes(*examples.classic()) if m.key == "forgot_new_axis")
    fig = mistake_figure(m)
    assert len(heatmaps(fig)) == 1  # only the right answer
    boxed = " ".join(a.text for a in fig.layout.annotations).replace("<br>", " ")
    assert "RuntimeError: The size of tensor a (5) must match" in boxed
    assert "Outcome: error" in description(fig)


def test_silent_mistake_marks_differing_cells_beside_right_answer():
    x, w = random_inputs(3, 4, 4, seed=9)
    m = next(m for m in trace.mistakes(x, w) if m.key == "axis_in_middle")
    fig = mistake_figure(m)
    got, right = heatmaps(fig)
    np.testing.assert_allclose(z_of(got), m.value.numpy(), rtol=1e-6)
    np.testing.assert_allclose(z_of(right), m.expected.numpy(), rtol=1e-6)
    differ = ~np.isclose(m.value.numpy(), m.expected.numpy(), rtol=1e-5, atol=1e-6)
    assert [["≠" in c for c in row] for row in got.text] == differ.tolist()
    assert "silently wrong" in description(fig)


def test_variant_mistake_figure_says_how_it_was_built():
    m = next(m for m in trace.mistakes(*examples.classic()) if m.variant)
    fig = mistake_figure(m)
    assert "T == H variant" in fig.layout.title.subtitle.text
    assert "keeps only the first 3 of its 5 hidden features" in description(fig)


def test_keepdim_mistake_is_drawn_flat_with_a_note():
    m = next(m for m in trace.mistakes(*examples.classic()) if m.key == "kept_dim")
    fig = mistake_figure(m)
    got = heatmaps(fig)[0]
    np.testing.assert_allclose(z_of(got), m.value[:, 0].numpy(), rtol=1e-6)
    assert "(2, 1, 5)" in description(fig) and "size-1 word axis" in description(fig)


def test_mistakes_table_has_a_row_per_form():
    items = trace.mistakes(*examples.classic())
    fig = mistakes_figure(items)
    (table,) = fig.data
    codes, outcomes = table.cells.values[0], table.cells.values[1]
    assert len(codes) == len(items)
    assert outcomes[0] == "✓ right"
    assert any(o == "⚠ silently wrong" for o in outcomes)
    assert "T == H variant, inputs (2, 3, 3)" in " ".join(codes)


def test_the_phone_gallery_keeps_torchs_whole_message():
    """Cut after four lines, "at non-singleton dimension 2" lost the axis that does not match."""
    items = trace.mistakes(*examples.classic())
    (table,) = mistakes_figure(items, style=PHONE).data
    for m, cell in zip(items, table.cells.values[1], strict=True):
        if m.error:
            assert " ".join(cell.split("<br>")).endswith(m.error.split()[-1]), cell
            assert "dimension" not in m.error or "dimension" in cell


def test_the_gallery_is_as_tall_as_its_rows_on_every_screen():
    """The rows' lines are as tall as their text: on a projector (the biggest text) the table was
    cut after its seventh row, at 20 px a line. Each row gets >= 1.35 lines of its cells' size."""
    items = trace.mistakes(*examples.classic())
    for style in (SCREEN, PROJECTOR, PHONE):
        fig = mistakes_figure(items, style=style)
        (table,) = fig.data
        size = table.cells.font.size
        lines = sum(
            max(len(c.split("<br>")) for c in row) for row in zip(*table.cells.values, strict=True)
        )
        room = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        assert room >= table.header.height + 1.35 * size * lines, (style.name, room)


# ---------------------------------------------------------------- gradients, view vs copy


def test_gradient_figure_shows_upstream_autograd_and_formula():
    x, w = random_inputs(2, 3, 4, seed=10)
    g = trace.gradients(x, w, torch.randn(2, 4))
    up, auto, formula = heatmaps(gradient_figure(g))
    np.testing.assert_allclose(z_of(up), g.upstream.numpy(), rtol=1e-6)
    np.testing.assert_allclose(z_of(auto), g.att_scores.numpy(), rtol=1e-6)
    np.testing.assert_allclose(z_of(formula), g.att_scores_formula.numpy(), rtol=1e-6)


def test_net_output_gradient_figure_has_a_panel_per_sentence():
    x, w = random_inputs(3, 2, 4, seed=11)
    g = trace.gradients(x, w)
    fig = gradient_figure(g, part="net_output")
    maps = heatmaps(fig)
    assert len(maps) == 3
    np.testing.assert_allclose(z_of(maps[2]), g.net_output[2].numpy(), rtol=1e-6)
    assert "matches" in description(fig)


def test_gradient_figure_rejects_unknown_part():
    with pytest.raises(AttnvizError):
        gradient_figure(trace.gradients(*examples.classic()), part="weights")


def test_view_copy_figure_counts_numbers_in_memory():
    _, w = random_inputs(2, 3, 5)
    fig = view_copy_figure(trace.view_vs_copy(w, 5))
    table, bars = fig.data
    assert list(bars.y) == [6, 6, 30]
    assert list(table.cells.values[2]) == ["(3, 1, 1)", "(3, 1, 0)", "(15, 5, 1)"]
    assert list(table.cells.values[4]) == ["0", "0", "120"]
    assert "120 new bytes" in description(fig)


# ---------------------------------------------------------------- every figure


@pytest.mark.parametrize("shape", SHAPES)
def test_every_figure_has_a_description(shape):
    for fig in every_figure(*random_inputs(*shape, seed=12)):
        assert isinstance(fig, go.Figure)
        text = description(fig)
        assert len(text) > 40 and "<br>" not in text


def test_figure_html_is_self_contained_with_description():
    fig = step_figure(trace.broadcast_steps(*examples.classic())[4])
    page = figure_html(fig)
    assert not re.search(r"<(script|link|img)[^>]*(src|href)=", page)  # nothing fetched
    assert "plotly.js v" in page  # the library itself is inlined
    assert "att_scores[..., None].expand(2, 3, 5)" in page
    assert "<figcaption" in page and page.startswith("<!DOCTYPE html>")


# ---------------------------------------------------------------- following one cell


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 4, 4), (1, 1, 1)])
def test_story_outlines_the_cells_feeding_one_result(shape):
    b, t, h = shape
    steps = trace.broadcast_steps(*random_inputs(*shape))
    figs = story_figures(steps, cell=(b - 1, h - 1))
    product = figs[5]
    solid = [s for s in product.layout.shapes if s.line.dash is None and s.line.width == 4]
    assert len(solid) == t
    hm = heatmaps(product)[b - 1]
    bold = [[plain_label(c).startswith("<b>") for c in row] for row in hm.text]
    assert bold == [[j == h - 1 for j in range(h)] for _ in range(t)]
    assert f"they feed weighted[{b - 1}, {h - 1}]" in description(product)
    result_bold = [
        c for row in heatmaps(figs[7])[0].text for c in row if plain_label(c).startswith("<b>")
    ]
    assert len(result_bold) == 1


def test_highlight_outside_the_tensor_is_refused():
    with pytest.raises(AttnvizError):
        tensor_figure(torch.zeros(2, 3), title="w", highlight=[(2, 0)])


def test_user_text_in_title_and_axis_names_is_escaped():
    fig = tensor_figure(torch.ones(2, 3), title="<b>x</b> < y", axis_names=["<i>s", "w"])
    assert fig.layout.title.text == "&lt;b&gt;x&lt;/b&gt; &lt; y"
    assert fig.layout.yaxis.title.text == "&lt;i&gt;s"
    assert description(fig).startswith("<b>x</b> < y. Heatmap")
    assert "<title>&lt;b&gt;x&lt;/b&gt; &lt; y</title>" in figure_html(fig)


def test_empty_tensor_is_refused():
    with pytest.raises(AttnvizError) as info:
        tensor_figure(torch.zeros(2, 0), title="w")
    assert "(2, 0)" in str(info.value)


@pytest.mark.slow
@settings(max_examples=6)  # each builds every figure in three styles (~3 s)
@given(b=st.integers(1, 4), t=st.integers(1, 6), h=st.integers(1, 8), seed=st.integers(0, 99))
def test_every_figure_builds_for_any_small_shape(b, t, h, seed):
    x, w = random_inputs(b, t, h, seed=seed)
    figs = every_figure(x, w)
    assert all(description(f) for f in figs)
    story = story_figures(trace.broadcast_steps(x, w), cell=(b - 1, h - 1))
    assert len(story) == 8


# ---- screens: projector and phone styles ------------------------------------------------------------


def _styled_figures(style):
    x, w = examples.classic()
    steps = trace.broadcast_steps(x, w)
    trap = next(m for m in trace.mistakes(x, w) if m.silent)
    return [
        *story_figures(steps, style=style),
        provenance_figure(trace.provenance(x, w, 0, 0), style=style),
        mistake_figure(trap, style=style),
        gradient_figure(trace.gradients(x, w), style=style),
        view_copy_figure(trace.view_vs_copy(w, 5), style=style),
    ]


def _text_sizes(fig: go.Figure) -> list[float]:
    """Every font size a figure draws text at (cells, axes, titles, annotations, tables)."""
    layout = fig.layout
    sizes = [layout.font.size, layout.title.font.size]
    sizes += [a.font.size or layout.font.size for a in layout.annotations]
    for trace_ in fig.data:
        if trace_.type == "heatmap":
            sizes.append(trace_.textfont.size)
            if trace_.showscale is not False and trace_.colorbar.tickfont.size:
                sizes.append(trace_.colorbar.tickfont.size)
        if trace_.type == "table":
            sizes += [trace_.header.font.size, trace_.cells.font.size]
    return [float(s) for s in sizes if s is not None]


def test_projector_figures_draw_no_text_under_24_px():
    for fig in _styled_figures(PROJECTOR):
        assert min(_text_sizes(fig)) >= 24, fig.layout.title.text


def test_phone_figures_draw_no_text_under_12_px():
    for fig in _styled_figures(PHONE):
        assert min(_text_sizes(fig)) >= 12, fig.layout.title.text


def test_phone_stacks_the_panels_of_a_3d_tensor():
    x, _ = examples.classic()
    wide = tensor_figure(x, title="x")
    tall = tensor_figure(x, title="x", style=PHONE)
    assert wide.layout.xaxis2.domain[0] > wide.layout.xaxis.domain[1]  # side by side
    assert tall.layout.yaxis2.domain[1] < tall.layout.yaxis.domain[0]  # one above the other


def test_phone_stacks_the_trap_beside_the_right_answer():
    x, w = examples.classic()
    trap = next(m for m in trace.mistakes(x, w) if m.silent)
    fig = mistake_figure(trap, style=PHONE)
    assert fig.layout.yaxis2.domain[1] < fig.layout.yaxis.domain[0]
    assert fig.layout.xaxis2.domain == fig.layout.xaxis.domain


def test_a_style_does_not_leak_into_the_next_figure():
    x, _ = examples.classic()
    tensor_figure(x, title="x", style=PROJECTOR)
    assert tensor_figure(x, title="x").data[0].textfont.size == SCREEN.cell


def test_the_colour_bar_ticks_are_its_range_and_zero():
    fig = tensor_figure(torch.tensor([[-2.0, 1.0]]), title="x", zrange=(-3, 3))
    assert list(fig.data[0].colorbar.tickvals) == [-3.0, 0.0, 3.0]


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
def test_numbered_axis_names_are_not_pluralised(shape):
    names = tuple(f"axis {i}" for i in range(len(shape)))
    fig = tensor_figure(torch.rand(shape), title="x", axis_names=names)
    text = description(fig)
    assert "axis 1 (" in text and "axis 1s" not in text and "axis 0s" not in text


def test_named_axes_are_still_pluralised():
    text = description(tensor_figure(torch.rand(2, 3, 4), title="x"))
    assert "words (3)" in text and "hidden features (4)" in text


@pytest.mark.parametrize(
    "text",
    [
        "(net_output * att_scores[..., None]).sum(axis=1) / att_scores.sum(dim=1, keepdim=True)",
        "torch.einsum('bth,bt->bh', net_output, att_scores_renormalised_by_their_own_sum)",
        "net_output.sum(1) * 0.333333333333333333333333333333333333333333333333333",
    ],
)
def test_a_long_title_is_cut_between_tokens(text):
    short = short_title(text)
    assert len(short) <= 60 and short.endswith(" …")
    kept = short[: -len(" …")]
    assert text.startswith(kept) and kept
    rest = text[len(kept) :]
    assert not (kept[-1].isalnum() and rest[0].isalnum()), (kept, rest)  # not inside a token


def test_a_short_title_is_kept_as_it_is():
    assert short_title("net_output.mean(1)") == "net_output.mean(1)"


def test_one_token_longer_than_a_title_is_cut_to_fit():
    assert short_title("x" * 90) == "x" * 58 + " …"


def test_a_long_title_is_wrapped_between_words_on_a_phone():
    steps = trace.broadcast_steps(*examples.classic())
    g = trace.gradients(*examples.classic())
    fig = gradient_figure(g, part="att_scores", style=PHONE)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) > 1 and all(len(line) <= 34 for line in lines)
    assert " ".join(lines) == gradient_figure(g, part="att_scores").layout.title.text
    assert "<br>" not in step_figure(steps[0], style=PHONE).layout.title.text  # short: one line


def _lines(label: str) -> list[str]:
    return re.sub(r"</?b>", "", label).split("<br>")


def test_a_long_subtitle_and_code_are_wrapped_on_a_phone():
    """Reflow at 320 CSS px (#31): every subtitle line fits a phone, words and code kept whole."""
    x, w = examples.classic()
    g = trace.gradients(x, w)
    sub = gradient_figure(g, part="att_scores", style=PHONE).layout.title.subtitle.text
    wide = gradient_figure(g, part="att_scores").layout.title.subtitle.text
    assert len(_lines(sub)) > 1 and all(len(line) <= 44 for line in _lines(sub))
    assert " ".join(_lines(sub)) == wide
    step = max(trace.broadcast_steps(x, w), key=lambda s: len(s.code))  # the longest line
    code = step_figure(step, style=PHONE).layout.title.subtitle.text.split("<br>shape")[0]
    assert len(_lines(code)) > 1 and all(len(line) <= 38 for line in _lines(code))
    assert " ".join(_lines(code)) == step.code  # split between tokens only, nothing lost


def test_a_phone_writes_one_result_cell_one_term_a_line():
    x, w = examples.classic()
    prov = trace.provenance(x, w, 0, 0)
    fig = provenance_figure(prov, style=PHONE)
    products = [plain_label(t) for t in fig.data[0].text[2][:-1]]
    assert all(not t.startswith("=") for t in products), products  # the number alone
    equation = fig.layout.annotations[0].text.split("<br>")
    assert len(equation) == len(prov.terms) + 2 and all(len(line) <= 30 for line in equation)
    assert all(t.startswith("= ") for t in provenance_figure(prov).data[0].text[2][:-1])


def test_a_phone_stacks_the_alignment_outcome_in_its_column():
    steps = trace.broadcast_steps(*examples.classic())
    align = next(s for s in steps if s.alignment is not None)
    wide = alignment_figure(align.alignment)
    tall = alignment_figure(align.alignment, style=PHONE)
    outcomes = [a.text for a in tall.layout.annotations if "equal" in a.text or "→" in a.text]
    assert outcomes and all(max(map(len, t.split("<br>"))) <= 8 for t in outcomes), outcomes
    assert any("stretch 1 → 5" in a.text for a in wide.layout.annotations)
