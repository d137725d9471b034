"""An exercise that calls the library's own answer (attnviz.weighted_sum, a METHODS entry, the
reference, a fused kernel, a trace) is refused kindly, however the call is reached; helpers that
compute no answer stay allowed, and the check leaves any profiler it found in place."""

import sys
import types

import pytest
import torch

import attnviz
from attnviz import exercises as ex
from attnviz import fused, trace
from attnviz.aggregation import weighted_sum_bmm as my_helper


def through_an_alias(x, w):
    f = attnviz.weighted_sum
    return f(x, w)


def through_another_name(x, w):
    return my_helper(x, w)


def through_a_copied_code_object(x, w):
    copy = types.FunctionType(attnviz.aggregation.weighted_sum_broadcast.__code__, {})
    return copy(x, w)


def through_a_helper(x, w):
    return _helper(x, w)


def _helper(x, w):
    return attnviz.reference(x, w).to(x.dtype)


LIBRARY_ANSWERS = [
    (lambda x, w: attnviz.weighted_sum(x, w), "attnviz.weighted_sum"),
    (lambda x, w: attnviz.weighted_sum(x, w, method="einsum"), "attnviz.weighted_sum"),
    (through_an_alias, "attnviz.weighted_sum"),
    (through_another_name, "attnviz.aggregation.weighted_sum_bmm"),
    (through_a_copied_code_object, "attnviz.aggregation.weighted_sum_broadcast"),
    (through_a_helper, "attnviz.reference"),
    (lambda x, w: fused.weighted_sum_auto(x, w), "attnviz.fused.weighted_sum_auto"),
    (lambda x, w: trace.broadcast_steps(x, w)[-1].value, "attnviz.trace"),
] + [(lambda x, w, f=f: f(x, w), "attnviz.") for f in attnviz.METHODS.values()]


@pytest.mark.parametrize(("fn", "named"), LIBRARY_ANSWERS)
def test_calling_the_library_answer_is_refused_kindly(fn, named):
    result = ex.check_weighted_sum(fn, seed=0)
    assert result.status == "failed" and result.mistake == "answer_key", result.message
    assert f"your function calls `{named}" in result.message
    assert "answer key" in result.message and "Write it yourself" in result.message
    assert result.cases_passed == 0
    for leak in ("[..., None]", "sum(dim=1)", "bth,bt->bh", "tensor("):
        assert leak not in result.message


@pytest.mark.parametrize(
    ("checker", "fn"),
    [
        (ex.check_masked_weighted_sum, lambda x, w, m: attnviz.weighted_sum(x, w, mask=m)),
        (
            ex.check_softmax_weighted_sum,
            lambda x, s: attnviz.weighted_sum(x, s, normalize="softmax"),
        ),
        (
            ex.check_softmax_weighted_sum,
            lambda x, s: (x * attnviz.attention_weights(s, normalize="softmax")[..., None]).sum(1),
        ),
        (
            ex.check_weights_grad,
            lambda x, g: trace.gradients(x, torch.ones(x.shape[:2], dtype=x.dtype), g).att_scores,
        ),
    ],
    ids=["masked", "softmax", "attention_weights", "gradients"],
)
def test_every_lesson_2_check_refuses_the_library_answer(checker, fn):
    result = checker(fn, seed=1)
    assert result.mistake == "answer_key", result.message


def test_helpers_that_compute_no_answer_are_allowed():
    def uses_allowed_helpers(net_output, att_scores):
        attnviz.check_inputs(net_output, att_scores)  # validation only
        _ = attnviz.examples.classic()
        return (net_output * att_scores[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)

    assert ex.check_weighted_sum(uses_allowed_helpers, seed=0).passed


def test_the_name_in_the_source_alone_is_not_refused():
    def mentions_it(net_output, att_scores):
        """Not attnviz.weighted_sum(net_output, att_scores): my own."""
        note = "attnviz.weighted_sum"  # noqa: F841 -- only text
        return torch.einsum("bth,bt->bh", net_output, att_scores)

    assert ex.check_weighted_sum(mentions_it, seed=0).passed


def test_the_check_leaves_a_profiler_it_found_in_place():
    seen = []

    def profiler(frame, event, arg):
        seen.append(event)

    sys.setprofile(profiler)
    try:
        result = ex.check_weighted_sum(lambda x, w: attnviz.weighted_sum(x, w), seed=0)
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
    assert result.mistake == "answer_key"


def test_a_library_answer_that_raises_is_still_refused():
    result = ex.check_weighted_sum(lambda x, w: attnviz.weighted_sum(x, w[..., None]), seed=0)
    assert result.mistake == "answer_key"
