"""The expression sandbox on the gallery: the right forms traced step by step and matching
weighted_sum, and the wrong forms with the clash, the wrong shape or the silent wrong numbers named.
"""

import pytest
import torch
from sandbox_inputs import RIGHT, SHAPES, refusal, variables
from torch.testing import assert_close

import attnviz
from attnviz import AttnvizError
from attnviz.examples import classic
from attnviz.sandbox import evaluate

# --------------------------------------------------------------------------------------------
# The gallery: right forms
# --------------------------------------------------------------------------------------------

RIGHT_FORMS = [
    RIGHT,
    "(net_output * att_scores[:, :, None]).sum(1)",
    "(net_output * att_scores.unsqueeze(-1)).sum(dim=1)",
    "(att_scores[..., None] * net_output).sum(axis=-2)",
    'einsum("bth,bt->bh", net_output, att_scores)',
    "(att_scores[:, None, :] @ net_output)[:, 0, :]",
    "att_scores.unsqueeze(1).matmul(net_output).squeeze(1)",
    "(net_output.transpose(1, 2) @ att_scores[..., None]).squeeze(-1)",
    "(net_output * att_scores.reshape(net_output.shape[0], net_output.shape[1], 1)).sum(axis=1)",
    "(net_output * att_scores[..., None].expand(-1, -1, net_output.shape[2])).sum(axis=1)",
]


@pytest.mark.parametrize("expr", RIGHT_FORMS)
@pytest.mark.parametrize("shape", SHAPES)
def test_right_form_matches_weighted_sum(expr, shape):
    vs = variables(shape, seed=sum(shape))
    trace = evaluate(expr, vs)
    assert trace.result.shape == (shape[0], shape[2])
    assert_close(trace.result, attnviz.weighted_sum(vs["net_output"], vs["att_scores"]))
    assert_close(trace.result, attnviz.reference(vs["net_output"], vs["att_scores"]))


def test_right_form_on_the_classic_example_matches_weighted_sum():
    x, w = classic()
    trace = evaluate(RIGHT, {"net_output": x, "att_scores": w})
    assert trace.result.dtype == torch.float32
    assert_close(trace.result, attnviz.weighted_sum(x, w))


def test_right_form_traces_every_step_in_order():
    x, w = classic()
    trace = evaluate(RIGHT, {"net_output": x, "att_scores": w})
    got = [(s.source, s.op, s.shape) for s in trace.steps]
    assert got == [
        ("net_output", "name", (2, 3, 5)),
        ("att_scores", "name", (2, 3)),
        ("att_scores[..., None]", "index", (2, 3, 1)),
        ("net_output * att_scores[..., None]", "*", (2, 3, 5)),
        ("(net_output * att_scores[..., None]).sum(axis=1)", ".sum", (2, 5)),
    ]
    assert [s.index for s in trace.steps] == list(range(5))
    for step in trace.steps:
        assert RIGHT[step.span[0] : step.span[1]] == step.source
        assert step.dtype == torch.float32
        assert step.note
        assert isinstance(step.value, torch.Tensor) and tuple(step.value.shape) == step.shape
    assert trace.steps[2].stride == (3, 1, 1)
    assert trace.result is trace.steps[-1].value


def test_broadcast_step_shows_right_aligned_shapes_and_the_stretch():
    x, w = classic()
    product = evaluate(RIGHT, {"net_output": x, "att_scores": w}).steps[3]
    assert product.operands == ((2, 3, 5), (2, 3, 1))
    bc = product.broadcast
    assert (bc.shape_a, bc.shape_b, bc.result) == ((2, 3, 5), (2, 3, 1), (2, 3, 5))
    assert [(a.axis, a.size_a, a.size_b, a.outcome) for a in bc.axes] == [
        (-3, 2, 2, "equal"),
        (-2, 3, 3, "equal"),
        (-1, 5, 1, "stretched"),
    ]
    assert "stretched to 5" in product.note


def test_keepdim_keeps_the_summed_axis_as_size_one():
    vs = variables((2, 3, 5))
    trace = evaluate("(net_output * att_scores[..., None]).sum(axis=1, keepdim=True)", vs)
    assert trace.result.shape == (2, 1, 5)
    assert_close(trace.result[:, 0, :], attnviz.weighted_sum(vs["net_output"], vs["att_scores"]))
    assert "keepdim=True" in trace.steps[-1].note


def test_softmax_over_words_matches_weighted_sum_with_softmax():
    vs = variables((3, 4, 2))
    trace = evaluate("(net_output * att_scores.softmax(dim=1)[..., None]).sum(axis=1)", vs)
    want = attnviz.weighted_sum(vs["net_output"], vs["att_scores"], normalize="softmax")
    assert_close(trace.result, want)


# --------------------------------------------------------------------------------------------
# The gallery: wrong forms
# --------------------------------------------------------------------------------------------


def test_missing_trailing_axis_names_the_clash_on_the_classic_example():
    x, w = classic()
    expr = "net_output * att_scores"
    err = refusal(expr, {"net_output": x, "att_scores": w})
    assert isinstance(err, AttnvizError)
    assert err.kind == "shape"
    assert err.span == (0, len(expr))
    msg = str(err)
    assert "5 meets 3 on the last axis" in msg
    assert "(2, 3, 5)" in msg and "(2, 3)" in msg
    assert "equal, or one of them must be 1" in msg
    assert "att_scores[..., None]" in msg


def test_clash_keeps_the_partial_trace_with_real_values():
    x, w = classic()
    err = refusal("net_output * att_scores", {"net_output": x, "att_scores": w})
    assert [s.source for s in err.trace.steps] == ["net_output", "att_scores"]
    assert_close(err.trace.steps[0].value, x)
    assert_close(err.trace.steps[1].value, w)
    assert err.trace.result is None
    assert err.trace.expr == "net_output * att_scores"


def test_new_axis_in_the_middle_points_at_the_product():
    expr = "(net_output * att_scores[:, None]).sum(axis=1)"
    err = refusal(expr, variables((2, 3, 5)))
    assert err.kind == "shape"
    assert expr[err.span[0] : err.span[1]] == "net_output * att_scores[:, None]"
    assert "(2, 1, 3)" in str(err) and "5 meets 3" in str(err)
    assert "att_scores[..., None]" in str(err)
    assert err.trace.steps[-1].source == "att_scores[:, None]"
    assert err.trace.steps[-1].shape == (2, 1, 3)


def test_unsqueeze_zero_points_at_the_product():
    expr = "(net_output * att_scores.unsqueeze(0)).sum(axis=1)"
    err = refusal(expr, variables((2, 3, 5)))
    assert expr[err.span[0] : err.span[1]] == "net_output * att_scores.unsqueeze(0)"
    assert "(1, 2, 3)" in str(err) and "5 meets 3" in str(err)


@pytest.mark.parametrize("shape", SHAPES)
def test_sum_over_sentences_gives_the_wrong_shape(shape):
    b, t, h = shape
    trace = evaluate("(net_output * att_scores[..., None]).sum(axis=0)", variables(shape))
    assert trace.result.shape == (t, h)


@pytest.mark.parametrize("shape", SHAPES)
def test_sum_over_hidden_gives_the_wrong_shape(shape):
    b, t, h = shape
    trace = evaluate("(net_output * att_scores[..., None]).sum(axis=2)", variables(shape))
    assert trace.result.shape == (b, t)


def test_sum_over_a_missing_axis_names_the_valid_range():
    err = refusal("att_scores.sum(axis=2)", variables((2, 3, 5)))
    assert err.kind == "shape"
    assert "(2, 3)" in str(err) and "between -2 and 1" in str(err)


def test_softmax_over_the_wrong_axis_runs_but_gives_other_numbers():
    vs = variables((3, 4, 2), seed=3)
    trace = evaluate("(net_output * att_scores.softmax(dim=0)[..., None]).sum(axis=1)", vs)
    want = attnviz.weighted_sum(vs["net_output"], vs["att_scores"], normalize="softmax")
    assert trace.result.shape == want.shape
    assert not torch.allclose(trace.result, want)
    assert trace.steps[2].op == ".softmax" and "axis 0" in trace.steps[2].note


def test_t_equals_h_trap_runs_silently_with_the_wrong_numbers():
    vs = variables((3, 4, 4), seed=5)  # T == H: the middle-axis form broadcasts by accident
    trace = evaluate("(net_output * att_scores[:, None]).sum(axis=1)", vs)
    want = attnviz.weighted_sum(vs["net_output"], vs["att_scores"])
    assert trace.result.shape == want.shape == (3, 4)
    assert not torch.allclose(trace.result, want)
    product = trace.steps[3]
    assert product.shape == (3, 4, 4)
    stretched = [a for a in product.broadcast.axes if a.outcome == "stretched"]
    assert [(a.axis, a.size_b) for a in stretched] == [(-2, 1)]  # words stretched, not hidden
