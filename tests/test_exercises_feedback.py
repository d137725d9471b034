"""The checkers' words match what the student did (issue 27): a diagram that names each operand and
counts its axes, a renormalisation named however it is guarded, a dtype blamed on the conversion
that made it, and a header that names the student's own function."""

import pytest
import torch

from attnviz import exercises as ex

SEEDS = range(8)


def ws_unsqueeze_middle(net_output, att_scores):
    return (net_output * att_scores.unsqueeze(1)).sum(1)


def test_a_misplaced_axis_diagram_names_the_operand_and_counts_its_axes():
    message = ex.check_weighted_sum(ws_unsqueeze_middle, seed=0).message
    assert "    net_output              2   3   5\n    att_scores, new axis    2   1   3" in message
    assert "right    " not in message and "shorter" not in message
    assert "Both operands have 3 axes, so no axis is missing" in message
    assert "`unsqueeze(1)`" in message  # the mistake's title names the form the student wrote


def test_a_missing_axis_diagram_still_asks_for_one():
    message = ex.check_weighted_sum(lambda x, w: (x * w).sum(1), seed=0).message
    assert "    net_output    2   3   5\n    att_scores        2   3" in message
    assert "give the one with fewer axes a size-1 axis" in message
    assert "Both operands" not in message


def test_operands_that_are_no_input_are_named_by_position():
    result = ex.check_weighted_sum(lambda x, w: (x * w[..., None].expand(-1, -1, 2)).sum(1), seed=0)
    assert "1st operand" in result.message or "2nd operand" in result.message
    assert "    right" not in result.message and "    left" not in result.message


def renormalised_nan_to_num(x, w, mask):
    kept = w * mask  # (B,T)
    return (x * (kept / kept.sum(1, keepdim=True)).nan_to_num()[..., None]).sum(1)


def renormalised_clamped(x, w, mask):
    kept = w * mask  # (B,T)
    return (x * (kept / kept.sum(1, keepdim=True).clamp_min(1e-9))[..., None]).sum(1)


def renormalised_after_the_sum(x, w, mask):
    kept = w * mask  # (B,T)
    return (x * kept[..., None]).sum(1) / (kept.sum(1, keepdim=True) + 1e-9)


def renormalised_where(x, w, mask):
    kept = torch.where(mask, w, 0.0)  # (B,T)
    return (x * (kept / kept.sum(dim=-1, keepdim=True))[..., None]).sum(1)


def softmax_over_real_words(x, w, mask):
    return (x * w.masked_fill(~mask, float("-inf")).softmax(1).nan_to_num()[..., None]).sum(1)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "fn",
    [renormalised_nan_to_num, renormalised_clamped, renormalised_after_the_sum, renormalised_where],
)
def test_renormalised_masked_weights_are_named_however_guarded(fn, seed):
    result = ex.check_masked_weighted_sum(fn, seed=seed)
    assert result.mistake == "renormalised", result.message
    assert "renormalised the weights" in result.message
    assert "combines several words" not in result.message


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: (x * (w / (w.sum(1, keepdim=True) + 1e-9))[..., None]).sum(1),
        lambda x, w: (x * (w / w.abs().sum(1, keepdim=True))[..., None]).sum(1),
    ],
    ids=["guarded", "abs"],
)
def test_weights_divided_by_their_sum_are_named_however_guarded(fn, seed):
    result = ex.check_weighted_sum(fn, seed=seed)
    assert result.mistake == "normalised_weights", result.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_softmax_over_the_real_words_is_named(seed):
    result = ex.check_masked_weighted_sum(softmax_over_real_words, seed=seed)
    assert result.mistake == "softmax_over_real_words", result.message


@pytest.mark.parametrize(
    ("fn", "how"),
    [
        (lambda x, w: (x.float() * w.float()[..., None]).sum(1), "`.float()`"),
        (lambda x, w: (x * w[..., None]).sum(1).to(torch.float32), "`.to(...)`"),
        (lambda x, w: (x * w[..., None]).sum(1).type(torch.float32), "`.type(...)`"),
    ],
    ids=["float", "to", "type"],
)
def test_a_conversion_is_blamed_for_the_dtype_it_made(fn, how):
    result = ex.check_weighted_sum(fn, seed=0)
    assert result.mistake == "converted_dtype", result.message
    assert f"converted float64 to float32 with {how}" in result.message
    assert "torch.zeros" not in result.message and "torch.tensor" not in result.message


def test_a_new_tensor_in_the_default_dtype_is_blamed_as_such():
    def builds_a_float32_result(x, w):
        out = torch.zeros(x.shape[0], x.shape[2])  # (B,H), float32 whatever the inputs
        out[:] = (x * w[..., None]).sum(1)  # cast into float32 on assignment
        return out

    result = ex.check_weighted_sum(builds_a_float32_result, seed=0)
    assert result.mistake == "wrong_dtype", result.message
    assert "with `torch.zeros(...)`, which is float32 because no `dtype=` was given" in (
        result.message
    )


def test_a_dtype_change_the_checker_did_not_see_is_not_blamed_on_anything():
    def through_numpy(x, w):
        return torch.from_numpy((x * w[..., None]).sum(1).detach().numpy().astype("float32"))

    result = ex.check_weighted_sum(through_numpy, seed=0)
    assert "float32" in result.message
    assert "torch.zeros" not in result.message and "converted" not in result.message


def weighted_sum_einsum(net_output, att_scores):
    return torch.einsum("bth,bt->bh", net_output, att_scores)


def masked_weighted_sum_stub(net_output, att_scores, mask):
    raise NotImplementedError


@pytest.mark.parametrize(
    ("checker", "fn", "title"),
    [
        (ex.check_weighted_sum, weighted_sum_einsum, "✓ weighted_sum_einsum: passed"),
        (ex.check_weighted_sum, ws_unsqueeze_middle, "⚠ ws_unsqueeze_middle: error"),
        (ex.check_weighted_sum, lambda x, w: (x * w[..., None]).sum(1), "✓ weighted_sum: passed"),
        (
            ex.check_masked_weighted_sum,
            masked_weighted_sum_stub,
            "… masked_weighted_sum_stub: not attempted",
        ),
    ],
    ids=["named", "failed", "lambda", "stub"],
)
def test_the_header_names_the_students_function(checker, fn, title):
    result = checker(fn, seed=0)
    assert str(result).startswith(title + "\n")
    assert f"{title}</div>" in result._repr_html_()
