"""attnviz.trace: the broadcast story, shape alignment, provenance, mistakes, gradients, view vs copy.

Everything is checked against a float64 oracle computed here, on shapes with B, T, H all different,
the T == H trap, and the degenerate B = 1, T = 1 cases.
"""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

from attnviz import AttnvizError, examples
from attnviz.trace import (
    CLASH,
    EQUAL,
    STRETCHED,
    align_shapes,
    broadcast_steps,
    feeding_cells,
    gradients,
    mistakes,
    provenance,
    square_variant,
    view_vs_copy,
)

SHAPES = [(2, 3, 5), (3, 4, 4), (1, 1, 1), (1, 4, 2), (4, 1, 3), (2, 5, 1), (1, 3, 3), (3, 2, 6)]
KEYS = ["net_output", "att_scores", "unsqueeze", "align", "expand", "product", "sum", "result"]


def random_inputs(b, t, h, *, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.to(dtype), w.to(dtype)


def oracle(x, w):
    """float64 loop: weighted[b, h] = sum_t w[b, t] * x[b, t, h]."""
    b_size, t_size, h_size = x.shape
    out = torch.zeros(b_size, h_size, dtype=torch.float64)
    for b in range(b_size):
        for t in range(t_size):
            out[b] += w[b, t].double() * x[b, t].double()
    return out


def step(steps, key):
    return next(s for s in steps if s.key == key)


# ---------------------------------------------------------------- broadcast_steps


def test_steps_come_in_story_order():
    steps = broadcast_steps(*examples.classic())
    assert [s.key for s in steps] == KEYS
    assert all(s.title and s.code and s.explanation for s in steps)


@pytest.mark.parametrize("shape", SHAPES)
def test_step_value_has_step_shape(shape):
    for s in broadcast_steps(*random_inputs(*shape)):
        if s.key == "align":
            assert s.value is None
        else:
            assert tuple(s.value.shape) == s.shape
            assert len(s.axis_names) == len(s.shape)


@pytest.mark.parametrize("shape", SHAPES)
def test_step_shapes_follow_the_broadcast(shape):
    b, t, h = shape
    shapes = {s.key: s.shape for s in broadcast_steps(*random_inputs(*shape))}
    assert shapes == {
        "net_output": (b, t, h),
        "att_scores": (b, t),
        "unsqueeze": (b, t, 1),
        "align": (b, t, h),
        "expand": (b, t, h),
        "product": (b, t, h),
        "sum": (b, h),
        "result": (b, h),
    }


@pytest.mark.parametrize("shape", SHAPES)
def test_step_values_match_float64_oracle(shape):
    x, w = random_inputs(*shape, seed=sum(shape))
    steps = broadcast_steps(x, w)
    x64, w64 = x.double(), w.double()
    assert_close(step(steps, "unsqueeze").value.double(), w64[..., None])
    assert_close(step(steps, "expand").value.double(), w64[..., None].expand(*shape))
    assert_close(step(steps, "product").value.double(), x64 * w64[..., None], rtol=1e-6, atol=1e-6)
    assert_close(step(steps, "sum").value.double(), oracle(x, w), rtol=1e-5, atol=1e-5)
    assert_close(step(steps, "result").value.double(), oracle(x, w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_unsqueeze_is_a_view_of_att_scores(shape):
    b, t, h = shape
    s = step(broadcast_steps(*random_inputs(*shape)), "unsqueeze")
    assert s.view_of == "att_scores"
    assert s.new_bytes == 0
    assert s.strides[:2] == (t, 1)


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[2] > 1])
def test_expand_has_stride_zero_on_hidden_axis(shape):
    b, t, h = shape
    x, w = random_inputs(*shape)
    s = step(broadcast_steps(x, w), "expand")
    assert s.strides == (t, 1, 0)
    assert s.stretched == (2,)
    assert s.view_of == "att_scores"
    assert s.new_bytes == 0
    assert s.value.data_ptr() == w.data_ptr()
    assert "stride 0" in s.explanation


def test_expand_with_one_hidden_feature_stretches_nothing():
    s = step(broadcast_steps(*random_inputs(2, 5, 1)), "expand")
    assert s.stretched == ()
    assert s.shape == (2, 5, 1)


def test_expand_reports_strides_of_non_contiguous_scores():
    x, w_big = random_inputs(3, 4, 5)[0], torch.rand(4, 3)
    w = w_big.T  # (3, 4), strides (1, 3)
    s = step(broadcast_steps(x, w), "expand")
    assert s.strides == (1, 3, 0)
    assert s.view_of == "att_scores"


def test_product_is_new_memory_with_counted_bytes():
    s = step(broadcast_steps(*random_inputs(2, 3, 5)), "product")
    assert s.view_of is None
    assert s.new_bytes == 2 * 3 * 5 * 4
    assert s.strides == (15, 5, 1)


@pytest.mark.parametrize("shape", SHAPES)
def test_align_step_compares_shapes_from_the_right(shape):
    b, t, h = shape
    s = step(broadcast_steps(*random_inputs(*shape)), "align")
    assert s.alignment.ok and s.alignment.result == (b, t, h)
    outcomes = [m.outcome for m in s.alignment.axes]
    assert outcomes == [EQUAL, EQUAL, STRETCHED if h > 1 else EQUAL]
    assert str((b, t, h)) in s.code and str((b, t, 1)) in s.code


@pytest.mark.parametrize("shape", SHAPES)
def test_result_is_cross_checked_with_einsum_and_bmm(shape):
    s = step(broadcast_steps(*random_inputs(*shape)), "result")
    assert [c.method for c in s.checks] == ["einsum", "bmm"]
    assert all(c.ok for c in s.checks)
    assert all(c.max_abs_diff < 1e-5 for c in s.checks)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 1, 1), (3, 50, 7), (2, 64, 16)])
def test_the_cross_check_says_exactly_when_the_numbers_are_exactly_the_same(shape):
    """ "largest difference: einsum 0.0e+00, bmm 0.0e+00" read as notation on a phone: an exact
    match is said in words, any other difference in numbers (here torch 2.13 on the CPU matches
    exactly up to T = 5 and differs at T = 50 and 64; the test holds whichever it does)."""
    s = step(broadcast_steps(*random_inputs(*shape)), "result")
    exact = all(c.max_abs_diff == 0 for c in s.checks)
    assert ("exactly the same numbers" in s.explanation) == exact
    assert ("largest difference" in s.explanation) == (not exact)
    if not exact:
        for c in s.checks:
            assert f"{c.method} {c.max_abs_diff:.1e}" in s.explanation


def test_step_explanations_name_the_actual_shapes():
    steps = broadcast_steps(*random_inputs(3, 4, 6))
    assert "(3, 4) -> (3, 4, 1)" in step(steps, "unsqueeze").explanation
    assert "(3, 4, 1) -> (3, 4, 6)" in step(steps, "expand").explanation
    assert "(3, 4, 6) -> (3, 6)" in step(steps, "sum").explanation
    assert "one vector of H = 6 numbers per sentence" in step(steps, "result").explanation
    one = broadcast_steps(*random_inputs(2, 3, 1))
    assert "one vector of H = 1 number per sentence" in step(one, "result").explanation
    assert step(steps, "expand").code == "att_scores[..., None].expand(3, 4, 6)"


def test_steps_keep_the_input_dtype():
    steps = broadcast_steps(*random_inputs(2, 3, 4, dtype=torch.float64))
    assert step(steps, "result").value.dtype == torch.float64
    assert step(steps, "product").new_bytes == 2 * 3 * 4 * 8


@pytest.mark.parametrize(
    "x_shape, w_shape, words",
    [
        ((2, 3, 5), (2, 3, 1), ["(2, 3, 5)", "(2, 3, 1)"]),
        ((2, 3, 5), (3, 2), ["(2, 3, 5)", "(3, 2)", ".T"]),
        ((2, 3), (2, 3), ["(2, 3)", "3 axes"]),
    ],
)
def test_steps_reject_mismatched_shapes(x_shape, w_shape, words):
    with pytest.raises(AttnvizError) as info:
        broadcast_steps(torch.rand(x_shape), torch.rand(w_shape))
    assert all(word in str(info.value) for word in words)


def test_steps_do_not_modify_inputs():
    x, w = random_inputs(2, 3, 4)
    x0, w0 = x.clone(), w.clone()
    broadcast_steps(x, w)
    assert torch.equal(x, x0) and torch.equal(w, w0)


# ---------------------------------------------------------------- align_shapes

dims = st.lists(st.integers(1, 4), min_size=0, max_size=4)


@given(a=dims, b=dims)
def test_align_shapes_agrees_with_torch(a, b):
    got = align_shapes(tuple(a), tuple(b))
    try:
        want = tuple(torch.broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError:
        want = None
    assert got.result == want
    assert got.ok == (want is not None)
    assert len(got.axes) == max(len(a), len(b))


def test_align_shapes_names_the_clash_of_the_missing_axis():
    al = align_shapes((2, 3, 5), (2, 3), name_a="net_output", name_b="att_scores")
    assert [m.axis for m in al.axes] == [-3, -2, -1]
    assert [m.outcome for m in al.axes] == [STRETCHED, CLASH, CLASH]
    assert al.axes[0].size_b is None and al.axes[0].stretched == "b"
    assert (al.axes[2].size_a, al.axes[2].size_b) == (5, 3)
    assert al.result is None and not al.ok
    assert "5 meets 3" in al.explanation
    assert al.clashes == (al.axes[1], al.axes[2])


def test_align_shapes_marks_the_stretched_side():
    al = align_shapes((2, 1, 5), (2, 3, 1))
    assert [(m.outcome, m.stretched, m.result) for m in al.axes] == [
        (EQUAL, None, 2),
        (STRETCHED, "a", 3),
        (STRETCHED, "b", 5),
    ]
    assert al.result == (2, 3, 5)
    assert len(al.stretched_axes) == 2


@pytest.mark.parametrize("bad", [(2, -1), "abc", (2, True), None, (2.0, 3), ("2", 3)])
def test_align_shapes_rejects_non_shapes(bad):
    with pytest.raises(AttnvizError):
        align_shapes(bad, (2, 3))


# ---------------------------------------------------------------- provenance


@pytest.mark.parametrize("shape", SHAPES)
def test_provenance_total_matches_oracle_cell(shape):
    x, w = random_inputs(*shape, seed=3)
    b, h = shape[0] - 1, shape[2] - 1
    p = provenance(x, w, b, h)
    assert p.total == pytest.approx(float(oracle(x, w)[b, h]), abs=1e-6)
    assert p.result == pytest.approx(p.total, abs=1e-5)


def test_provenance_terms_are_the_actual_numbers():
    x, w = examples.classic()
    p = provenance(x, w, 1, 2)
    assert [t.t for t in p.terms] == [0, 1, 2]
    assert [t.weight for t in p.terms] == pytest.approx(w[1].tolist())
    assert [t.value for t in p.terms] == pytest.approx(x[1, :, 2].tolist())
    assert [t.product for t in p.terms] == pytest.approx((w[1] * x[1, :, 2]).tolist())


def test_provenance_equation_writes_the_numbers_out():
    x, w = examples.classic()
    p = provenance(x, w, 0, 1)
    assert p.formula == "weighted[0, 1] = Σ_t att_scores[0, t] · net_output[0, t, 1]"
    assert p.equation.startswith("weighted[0, 1] = 0.2425 · 0.3856 + 0.5279 · 0.3753 + ")
    assert p.equation.endswith("= 0.461")


def test_provenance_puts_negative_numbers_in_parentheses():
    x = torch.tensor([[[-0.5], [2.0]]])  # (1, 2, 1)
    w = torch.tensor([[0.25, -1.0]])  # (1, 2)
    p = provenance(x, w, 0, 0)
    assert p.equation == "weighted[0, 0] = 0.25 · (-0.5) + (-1) · 2 = (-2.125)"


@pytest.mark.parametrize("b, h", [(2, 0), (0, 5), (-1, 0), (0, 1.0), (True, 0)])
def test_provenance_rejects_cells_outside_the_result(b, h):
    with pytest.raises(AttnvizError) as info:
        provenance(*examples.classic(), b, h)
    assert "(2, 3, 5)" in str(info.value)


# ---------------------------------------------------------------- mistakes


def by_key(items, key, *, variant=False):
    return next(m for m in items if m.key == key and m.variant == variant)


def test_mistakes_start_with_the_right_form():
    items = mistakes(*examples.classic())
    right = items[0]
    assert right.key == "right" and right.correct and right.error is None
    assert right.outcome == "right"


@pytest.mark.parametrize("shape", SHAPES)
def test_every_expected_answer_matches_oracle(shape):
    x, w = random_inputs(*shape, seed=5)
    for m in mistakes(x, w):
        if m.key == "softmax_over_sentences":
            continue
        xv, wv = square_variant(x, w) if m.variant else (x, w)
        assert_close(m.expected.double(), oracle(xv, wv), rtol=1e-5, atol=1e-5)


def test_forgetting_the_axis_fails_with_torch_message():
    m = by_key(mistakes(*examples.classic()), "forgot_new_axis")
    assert m.outcome == "error" and not m.correct and m.value is None
    assert "must match the size of tensor b (3)" in m.error
    assert "5 meets 3" in m.explanation


def test_middle_axis_is_silently_wrong_when_t_equals_h():
    x, w = random_inputs(3, 4, 4, seed=1)
    m = by_key(mistakes(x, w), "axis_in_middle")
    assert m.error is None and m.silent and not m.correct
    assert m.shape == m.expected_shape == (3, 4)
    assert not torch.allclose(m.value, m.expected)


@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 2), (3, 2, 6), (4, 5, 3)])
def test_gallery_shows_t_equals_h_variant_beside_own_outcome(shape):
    x, w = random_inputs(*shape, seed=2)
    items = mistakes(x, w)
    own = by_key(items, "axis_in_middle")
    variant = by_key(items, "axis_in_middle", variant=True)
    assert own.outcome == "error" and own.input_shape == shape
    assert variant.silent and variant.input_shape == (shape[0], shape[1], shape[1])
    assert items.index(variant) == items.index(own) + 1
    assert "T == H" in variant.title and variant.variant_note


@pytest.mark.parametrize("shape", [(3, 4, 4), (1, 3, 3)])
def test_gallery_has_no_variant_when_t_equals_h(shape):
    assert not any(m.variant for m in mistakes(*random_inputs(*shape)))


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[1] > 1])
def test_gallery_always_shows_a_silent_trap(shape):
    items = mistakes(*random_inputs(*shape, seed=4))
    assert any(m.silent and m.key == "axis_in_middle" for m in items)


def test_square_variant_cycles_hidden_features():
    x, w = random_inputs(2, 5, 3)
    xv, wv = square_variant(x, w)
    assert xv.shape == (2, 5, 5) and wv is w
    assert torch.equal(xv[..., 3], x[..., 0]) and torch.equal(xv[..., 2], x[..., 2])
    xv2, _ = square_variant(*random_inputs(2, 2, 6))
    assert xv2.shape == (2, 2, 2)


def test_wrong_sum_axes_give_wrong_shapes():
    items = mistakes(*random_inputs(2, 3, 5))
    assert by_key(items, "summed_sentences").shape == (3, 5)
    assert by_key(items, "wrong_axis").shape == (2, 3)
    assert by_key(items, "wrong_axis").outcome == "wrong shape"
    assert by_key(items, "wrong_axis", variant=True).outcome == "silently wrong"


def test_keepdim_has_right_numbers_in_wrong_shape():
    x, w = random_inputs(2, 3, 5)
    m = by_key(mistakes(x, w), "kept_dim")
    assert m.outcome == "wrong shape" and m.shape == (2, 1, 5)
    assert_close(m.value[:, 0], m.expected)


def test_softmax_over_sentences_is_silently_wrong():
    x, w = random_inputs(3, 4, 5)
    m = by_key(mistakes(x, w), "softmax_over_sentences")
    assert m.silent and m.shape == (3, 5)
    assert_close(m.expected.double(), oracle(x, w.softmax(dim=1)), rtol=1e-5, atol=1e-5)


def test_unsqueeze_front_fails_on_classic():
    m = by_key(mistakes(*examples.classic()), "unsqueeze_front")
    assert m.outcome == "error" and "size of tensor" in m.error


def test_all_forms_agree_when_every_size_is_one():
    items = mistakes(*random_inputs(1, 1, 1))
    assert all(m.error is None for m in items)
    assert by_key(items, "axis_in_middle").correct


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("shape", SHAPES)
def test_gradients_match_the_formulas(shape):
    x, w = random_inputs(*shape, seed=6)
    g = gradients(x, w)
    assert g.att_scores_ok and g.net_output_ok
    assert_close(g.upstream, torch.ones(shape[0], shape[2]))
    # float64 oracle: with loss = weighted.sum(), d/dw = Σ_h x and d/dx = w stretched over H
    assert_close(g.att_scores.double(), x.double().sum(dim=2), rtol=1e-5, atol=1e-5)
    assert_close(g.net_output.double(), w.double()[..., None].expand(*shape))


def test_gradients_use_the_given_upstream():
    x, w = random_inputs(2, 3, 4, seed=7)
    up = torch.randn(2, 4, generator=torch.Generator().manual_seed(8))
    g = gradients(x, w, up)
    want_w = (x.double() * up.double()[:, None, :]).sum(dim=2)
    want_x = w.double()[..., None] * up.double()[:, None, :]
    assert_close(g.att_scores.double(), want_w, rtol=1e-5, atol=1e-5)
    assert_close(g.net_output.double(), want_x, rtol=1e-5, atol=1e-5)
    assert g.att_scores_max_abs_diff < 1e-5 and g.net_output_max_abs_diff < 1e-5


def test_gradients_do_not_touch_inputs():
    x, w = random_inputs(2, 3, 4)
    gradients(x, w)
    assert x.grad is None and w.grad is None and not x.requires_grad


def test_gradients_reject_wrong_upstream_shape():
    with pytest.raises(AttnvizError) as info:
        gradients(*examples.classic(), torch.ones(2, 3))
    assert "(2, 5)" in str(info.value) and "(2, 3)" in str(info.value)


# ---------------------------------------------------------------- view vs copy


@pytest.mark.parametrize("shape", SHAPES)
def test_expand_is_a_view_and_repeat_a_copy(shape):
    b, t, h = shape
    _, w = random_inputs(*shape)
    vc = view_vs_copy(w, h)
    assert vc.expand.same_memory and vc.expand.new_bytes == 0
    assert vc.expand.data_ptr == w.data_ptr()
    assert vc.expand.storage_numbers == b * t
    assert not vc.repeat.same_memory
    assert vc.repeat.new_bytes == b * t * h * 4
    assert vc.repeat.strides == (t * h, h, 1)
    assert torch.equal(vc.expand.value, vc.repeat.value)


def test_expand_strides_are_zero_on_hidden_axis():
    vc = view_vs_copy(torch.rand(2, 3), 5)
    assert vc.expand.strides == (3, 1, 0)
    assert vc.source.strides == (3, 1, 1) and vc.source.new_bytes == 0
    assert "120 new bytes" in vc.explanation


@pytest.mark.parametrize("h", [0, -2, 2.5, True])
def test_view_vs_copy_rejects_bad_hidden_size(h):
    with pytest.raises(AttnvizError):
        view_vs_copy(torch.rand(2, 3), h)


def test_view_vs_copy_rejects_three_axis_scores():
    with pytest.raises(AttnvizError) as info:
        view_vs_copy(torch.rand(2, 3, 1), 5)
    assert "(2, 3, 1)" in str(info.value)


# ---------------------------------------------------------------- following one cell


@pytest.mark.parametrize("shape", SHAPES)
def test_feeding_cells_hold_the_terms_of_the_provenance(shape):
    x, w = random_inputs(*shape, seed=13)
    b, h = shape[0] - 1, shape[2] - 1
    steps = broadcast_steps(x, w)
    p = provenance(x, w, b, h)
    products = [float(step(steps, "product").value[c]) for c in feeding_cells(steps[5], b, h)]
    assert products == pytest.approx([t.product for t in p.terms], abs=1e-6)
    weights = [float(step(steps, "att_scores").value[c]) for c in feeding_cells(steps[1], b, h)]
    assert weights == pytest.approx([t.weight for t in p.terms])
    assert feeding_cells(step(steps, "result"), b, h) == ((b, h),)
    assert feeding_cells(step(steps, "align"), b, h) == ()


def test_feeding_cells_reject_a_cell_outside_the_result():
    steps = broadcast_steps(*examples.classic())
    with pytest.raises(AttnvizError) as info:
        feeding_cells(step(steps, "product"), 0, 5)
    assert "(2, 3, 5)" in str(info.value)


@pytest.mark.parametrize("shape", [(0, 3, 5), (2, 0, 5), (2, 3, 0)])
@pytest.mark.parametrize("fn", [broadcast_steps, mistakes, gradients])
def test_empty_axis_is_refused_with_shapes(shape, fn):
    with pytest.raises(AttnvizError) as info:
        fn(torch.rand(shape), torch.rand(shape[:2]))
    assert str(shape) in str(info.value)


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ((2, 3, 5), "keeps only the first 3 of its 5 hidden features: (2, 3, 3)"),
        ((2, 4, 3), "reuses its 3 hidden features, from the first one again, until there are 4"),
    ],
)
def test_the_variant_note_says_in_plain_words_how_it_was_made(shape, words):
    variant = by_key(mistakes(*random_inputs(*shape, seed=1)), "axis_in_middle", variant=True)
    assert words in variant.variant_note
    assert "mod" not in variant.variant_note and "cycled" not in variant.variant_note
