"""Lesson 01's checkers: add_axis, expand_weights and broadcast_shape."""

import numpy as np
import pytest
import torch

from attnviz import exercises as ex


@pytest.mark.parametrize(
    "fn", [lambda w: w[..., None], lambda w: w.unsqueeze(-1), lambda w: w.view(*w.shape, 1)]
)
def test_right_add_axis_passes_without_a_note(fn):
    result = ex.check_add_axis(fn)
    assert result.passed, result.message
    assert "copy" not in result.message


def test_add_axis_by_copy_passes_with_a_note():
    result = ex.check_add_axis(lambda w: w.clone().reshape(*w.shape, 1))
    assert result.passed
    assert "Note: your result is a copy" in result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda w: w[None], "axis_in_front"),
        (lambda w: w[:, None], "axis_in_middle"),
        (lambda w: w[..., None, None], "two_axes"),
        (lambda w: w, "unchanged"),
        (lambda w: w.reshape(-1, 1), "flattened"),
        (lambda w: w.T[..., None], "transposed"),
        (lambda w: w.unsqueeze_(-1), "mutated_input"),
    ],
)
def test_each_add_axis_mistake_is_named(fn, key):
    result = ex.check_add_axis(fn)
    assert result.mistake == key, result.message


@pytest.mark.parametrize(
    "fn",
    [
        lambda w, h: w[..., None].expand(-1, -1, h),
        lambda w, h: w.unsqueeze(2).expand(*w.shape, h),
        lambda w, h: torch.broadcast_to(w[..., None], (*w.shape, h)),
    ],
)
def test_right_expand_weights_passes(fn):
    result = ex.check_expand_weights(fn)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda w, h: w[..., None].repeat(1, 1, h), "copied"),
        (lambda w, h: w[..., None].expand(-1, -1, h).contiguous(), "copied"),
        (lambda w, h: w[..., None] * torch.ones(h), "copied"),
        (lambda w, h: w[:, None, :].expand(w.shape[0], h, w.shape[1]), "expanded_wrong_axis"),
        (lambda w, h: w.expand(*w.shape, h), "expand_without_axis"),
    ],
)
def test_each_expand_mistake_is_named(fn, key):
    result = ex.check_expand_weights(fn)
    assert result.mistake == key, result.message


def test_expand_copy_message_counts_the_memory():
    calls = []

    def copies(w, h):
        calls.append((w.numel(), h))
        return w[..., None].repeat(1, 1, h)

    result = ex.check_expand_weights(copies)
    n, h = calls[0]  # the first case (the classic att_scores) is the one the message describes
    assert f"it stores {n * h} numbers where a view would store {n}" in result.message


# --------------------------------------------------------------------------------------------
# The exercises that are not about tensors


def broadcast_right(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError(f"{x} and {y} do not fit")
        out.append(max(x, y))
    return tuple(out)


def broadcast_numpy(a, b):
    try:
        return tuple(int(s) for s in np.broadcast_shapes(a, b))
    except ValueError as err:
        raise ValueError(str(err)) from err


def broadcast_left(a, b):
    n = max(len(a), len(b))
    a, b = tuple(a) + (1,) * (n - len(a)), tuple(b) + (1,) * (n - len(b))
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError("no")
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


def broadcast_zip(a, b):
    out = []
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y and 1 not in (x, y):
            raise ValueError("no")
        out.append(max(x, y))
    return tuple(reversed(out))


def broadcast_no_check(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


def broadcast_forgot_reverse(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(reversed(a), reversed(b), strict=False):
        if x != y and 1 not in (x, y):
            raise ValueError("no")
        out.append(max(x, y))
    return tuple(out)


def broadcast_list(a, b):
    return list(broadcast_right(a, b))


def broadcast_assert(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    assert all(x == y or 1 in (x, y) for x, y in zip(a, b, strict=True))
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("fn", [broadcast_right, broadcast_numpy])
def test_right_broadcast_shape_passes(fn):
    result = ex.check_broadcast_shape(fn)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (broadcast_left, "left_aligned"),
        (broadcast_zip, "dropped_axes"),
        (broadcast_no_check, "no_check"),
        (broadcast_forgot_reverse, "reversed"),
        (broadcast_list, "list"),
        (broadcast_assert, "wrong_exception"),
    ],
)
def test_each_broadcast_shape_mistake_is_named(fn, key):
    result = ex.check_broadcast_shape(fn)
    assert not result.passed
    assert result.mistake == key, result.message
