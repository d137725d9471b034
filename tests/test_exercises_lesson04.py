"""Lesson 04's checkers: right answers pass in any form, a stub is "not attempted", each known
mistake is named, and no message writes out the answer."""

from __future__ import annotations

import pytest
import torch

from attnviz.exercises import CHECKERS, Status, check_masked_softmax, check_scores


@pytest.mark.parametrize(
    "fn",
    [
        lambda k, v: k @ v,
        lambda k, v: (k * v).sum(dim=-1),
        lambda k, v: torch.einsum("bth,h->bt", k, v),
        lambda k, v: torch.matmul(k, v[:, None])[..., 0],
    ],
)
def test_scores_right_forms_pass(fn):
    assert check_scores(fn, seed=0).status is Status.PASSED


@pytest.mark.parametrize(
    ("fn", "mistake"),
    [
        (lambda k, v: k @ v[:, None], "kept_axis"),
        (lambda k, v: k * v, "no_sum"),
        (lambda k, v: (k * v).sum(dim=1), "summed_words"),
        (lambda k, v: (k * v[:, None]).sum(dim=-1), "v_on_words"),
        (lambda k, v: (k @ v).detach(), "detached"),
    ],
)
def test_scores_mistakes_are_named(fn, mistake):
    result = check_scores(fn, seed=1)
    assert result.status in (Status.FAILED, Status.ERROR)  # v_on_words raises unless T == H
    assert result.mistake == mistake
    assert "keys @ v" not in result.message


def _stub(*_):
    raise NotImplementedError


@pytest.mark.parametrize("check", [check_scores, check_masked_softmax])
def test_stub_is_not_attempted(check):
    assert check(_stub).status is Status.NOT_ATTEMPTED


@pytest.mark.parametrize(
    "fn",
    [
        lambda s, m: s.masked_fill(~m, float("-inf")).softmax(dim=1).nan_to_num(0.0),
        lambda s, m: torch.where(m, s, float("-inf")).softmax(-1).nan_to_num(),
        lambda s, m: (e := (s - s.max()).exp() * m) / e.sum(1, keepdim=True).clamp(min=1e-30),
    ],
)
def test_masked_softmax_right_forms_pass(fn):
    assert check_masked_softmax(fn, seed=0).status is Status.PASSED


@pytest.mark.parametrize(
    ("fn", "mistake"),
    [
        (lambda s, m: s.softmax(dim=1), "no_mask"),
        (lambda s, m: (s * m).softmax(dim=1), "zero_scores"),
        (lambda s, m: s.softmax(dim=1) * m, "masked_after"),
        (lambda s, m: s.masked_fill(~m, float("-inf")).softmax(0).nan_to_num(0.0), "wrong_axis"),
        (lambda s, m: s.masked_fill(~m, float("-inf")).softmax(dim=1), "nan_for_padding_only"),
    ],
)
def test_masked_softmax_mistakes_are_named(fn, mistake):
    result = check_masked_softmax(fn, seed=2)
    assert result.status is Status.FAILED
    assert result.mistake == mistake
    assert '-inf"))' not in result.message


def test_checkers_are_registered():
    assert CHECKERS["scores"] is check_scores
    assert CHECKERS["masked_softmax"] is check_masked_softmax
