"""Lesson 02's other checkers: masked, softmax and gradient exercises (right answers pass, each
mistake is named)."""

import pytest
import torch

from attnviz import exercises as ex


def ws_broadcast(net_output, att_scores):
    return (net_output * att_scores[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


def masked_where(x, w, mask):
    return torch.where(mask[..., None], x * w[..., None], 0).sum(dim=1)


def masked_fill(x, w, mask):
    return torch.einsum("bth,bt->bh", x, w.masked_fill(~mask, 0))


def masked_loops(x, w, mask):
    out = torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype)
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            if mask[b, t]:
                out[b] += w[b, t] * x[b, t]
    return out


def masked_in_place(x, w, mask):
    w[~mask] = 0
    return ws_broadcast(x, w)


@pytest.mark.parametrize("fn", [masked_where, masked_fill])
def test_right_masked_weighted_sum_passes(fn):
    result = ex.check_masked_weighted_sum(fn)
    assert result.passed, result.message


def test_masked_weighted_sum_with_a_python_loop_fails():
    result = ex.check_masked_weighted_sum(masked_loops)
    assert result.mistake == "python_loop" and result.cases_passed == result.cases_total


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda x, w, m: ws_broadcast(x, w), "ignored_mask"),
        (lambda x, w, m: ws_broadcast(x, w * ~m), "inverted_mask"),
        (lambda x, w, m: (x * w[..., None] * m[:, None, :]).sum(1), "mask_on_hidden"),
        (lambda x, w, m: ws_broadcast(x, w.masked_fill(~m, float("-inf"))), "minus_inf"),
        (lambda x, w, m: ws_broadcast(x, w * m) / (w * m).sum(1, keepdim=True), "renormalised"),
        (lambda x, w, m: (x * (w * m)[..., None]).sum(2), "wrong_axis"),
        (lambda x, w, m: (x * (w * m)[..., None]).mean(1), "mean_not_sum"),
        (masked_in_place, "mutated_input"),
    ],
)
def test_each_masked_mistake_is_named(fn, key):
    result = ex.check_masked_weighted_sum(fn)
    assert result.mistake == key, result.message


def test_masked_cases_include_a_sentence_that_is_all_padding():
    masks = []

    def fn(x, w, mask):
        masks.append(mask.clone())
        return masked_where(x, w, mask)

    ex.check_masked_weighted_sum(fn)
    assert any((~m).all(dim=1).any() for m in masks)


def softmax_manual(x, s):
    e = (s - s.amax(dim=1, keepdim=True)).exp()  # stable
    return ws_broadcast(x, e / e.sum(dim=1, keepdim=True))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, s: ws_broadcast(x, s.softmax(dim=1)),
        lambda x, s: torch.einsum("bth,bt->bh", x, torch.softmax(s, dim=-1)),
        softmax_manual,
    ],
)
def test_right_softmax_weighted_sum_passes(fn):
    result = ex.check_softmax_weighted_sum(fn)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda x, s: ws_broadcast(x, s), "forgot_softmax"),
        (lambda x, s: ws_broadcast(x, s.softmax(dim=0)), "softmax_over_sentences"),
        (lambda x, s: (x * s[..., None].softmax(dim=-1)).sum(1), "softmax_over_size_one_axis"),
        (
            lambda x, s: ws_broadcast(x, s.exp() / s.exp().sum(1, keepdim=True)),
            "naive_exp_overflow",
        ),
        (lambda x, s: ws_broadcast(x, s).softmax(dim=1), "softmax_after_sum"),
        (lambda x, s: (x * s.softmax(1)).sum(1), "forgot_new_axis"),
        (lambda x, s: (x * s.softmax(1)[..., None]).mean(1), "mean_not_sum"),
    ],
)
def test_each_softmax_mistake_is_named(fn, key):
    result = ex.check_softmax_weighted_sum(fn)
    assert result.mistake == key, result.message


def grad_autograd(x, g):
    w = torch.zeros(x.shape[:2], dtype=x.dtype, requires_grad=True)
    ws_broadcast(x, w).backward(g)
    return w.grad


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, g: (x * g[:, None, :]).sum(dim=2),
        lambda x, g: torch.einsum("bth,bh->bt", x, g),
        lambda x, g: (x @ g[..., None])[..., 0],
        grad_autograd,
    ],
)
def test_right_weights_grad_passes(fn):
    result = ex.check_weights_grad(fn)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda x, g: (x * g[..., None]).sum(2), "grad_on_words"),
        (lambda x, g: (x * g[:, None, :]).sum(1), "grad_wrong_axis"),
        (lambda x, g: x.sum(2), "grad_ignored_upstream"),
        (lambda x, g: (x * g[:, None, :]).sum(2, keepdim=True), "grad_kept_dim"),
        (lambda x, g: x * g[:, None, :], "grad_no_sum"),
    ],
)
def test_each_gradient_mistake_is_named(fn, key):
    result = ex.check_weights_grad(fn)
    assert result.mistake == key, result.message
