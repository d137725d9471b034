"""Regression tests for misdiagnoses (issue 12): each of these mistakes is named on every seed, and
a fallback never blames a cause it has not checked (no "written into your code" unless two
different inputs gave the same output, or the same size came back whatever the input)."""

import re

import pytest
import torch

from attnviz import exercises as ex

SEEDS = range(12)


def softmax_max_no_keepdim(x, s):
    e = (s - s.max(dim=1).values).exp()
    return (x * (e / e.sum(dim=1, keepdim=True))[..., None]).sum(dim=1)


def softmax_sum_no_keepdim(x, s):
    e = (s - s.amax(dim=1, keepdim=True)).exp()
    return (x * (e / e.sum(dim=1))[..., None]).sum(dim=1)


def masked_boolean_index(x, w, mask):
    return (x[mask] * w[mask][:, None]).sum(dim=0, keepdim=True)


def uses_an_undefined_name(x, w):
    return (x * weights[..., None]).sum(dim=1)  # noqa: F821 -- the student's typo


NAMED = [
    (
        "einsum_other_letters",
        ex.check_weighted_sum,
        lambda x, w: torch.einsum("nji,ni->nj", x, w),
        "einsum_letters_swapped",
    ),
    (
        "einsum_operand_order",
        ex.check_weighted_sum,
        lambda x, w: torch.einsum("nij,ni->nj", w, x),
        "einsum_operands_swapped",
    ),
    (
        "einsum_bht",
        ex.check_weighted_sum,
        lambda x, w: torch.einsum("bht,bt->bh", x, w),
        "einsum_letters_swapped",
    ),
    (
        "einsum_tb",
        ex.check_weighted_sum,
        lambda x, w: torch.einsum("bth,tb->bh", x, w),
        "einsum_letters_swapped",
    ),
    (
        "einsum_bh_bt",
        ex.check_weighted_sum,
        lambda x, w: torch.einsum("bth,bh->bt", x, w),
        "einsum_letters_swapped",
    ),
    (
        "bmm_squeeze",
        ex.check_weighted_sum,
        lambda x, w: torch.bmm(w[:, None, :], x).squeeze(),
        "squeezed_batch",
    ),
    (
        "matmul_squeeze",
        ex.check_weighted_sum,
        lambda x, w: (w[:, None, :] @ x).squeeze(),
        "squeezed_batch",
    ),
    ("boolean_index", ex.check_masked_weighted_sum, masked_boolean_index, "boolean_index_flattens"),
    (
        "max_no_keepdim",
        ex.check_softmax_weighted_sum,
        softmax_max_no_keepdim,
        "max_without_keepdim",
    ),
    (
        "sum_no_keepdim",
        ex.check_softmax_weighted_sum,
        softmax_sum_no_keepdim,
        "sum_without_keepdim",
    ),
    (
        "detached",
        ex.check_weighted_sum,
        lambda x, w: (x * w[..., None]).sum(dim=1).detach(),
        "detached",
    ),
    (
        "python_loop",
        ex.check_weighted_sum,
        lambda x, w: torch.stack([a.T @ b for a, b in zip(x, w, strict=True)]),
        "python_loop",
    ),
]


@pytest.mark.parametrize(("name", "checker", "fn", "key"), NAMED, ids=[n[0] for n in NAMED])
def test_each_misdiagnosed_mistake_is_named(name, checker, fn, key):
    result = checker(fn)  # fresh inputs
    assert not result.passed
    assert result.mistake == key, result.message


@pytest.mark.slow  # the same on many seeds: a property test
@pytest.mark.parametrize(("name", "checker", "fn", "key"), NAMED, ids=[n[0] for n in NAMED])
def test_each_misdiagnosed_mistake_is_named_on_every_seed(name, checker, fn, key):
    for seed in SEEDS:
        result = checker(fn, seed=seed)
        assert not result.passed
        assert result.mistake == key, (seed, result.message)


@pytest.mark.parametrize(("name", "checker", "fn", "key"), NAMED, ids=[n[0] for n in NAMED])
def test_no_message_blames_a_number_written_into_the_code(name, checker, fn, key):
    for seed in SEEDS[:2]:
        message = checker(fn, seed=seed).message
        assert "written into" not in message and "hard-coded" not in message, message


def test_a_name_error_gets_a_name_error_message_not_shape_advice():
    for seed in SEEDS[:4]:
        result = ex.check_weighted_sum(uses_an_undefined_name, seed=seed)
        assert result.status == "error"
        assert "NameError" in result.message
        assert "`weights` is not defined" in result.message
        assert "shape" not in result.message.split("Cases:")[0].lower()


def test_max_without_keepdim_names_the_subtraction_and_its_operands():
    result = ex.check_softmax_weighted_sum(softmax_max_no_keepdim, seed=0)
    assert "The operation that failed was a subtraction (`-`), on shapes (2, 3) and (2,)" in (
        result.message
    )
    # the table shows the subtraction's operands, not the function's inputs as if multiplied
    assert "net_output" not in result.message.split("It happened")[1].split("Looks like")[0]
    assert "multiply" not in result.message


def test_squeeze_message_says_what_squeeze_did_when_b_is_1():
    result = ex.check_weighted_sum(lambda x, w: torch.bmm(w[:, None, :], x).squeeze(), seed=1)
    assert "✗ B = 1" in result.message and "✓ the classic example" in result.message
    assert "`squeeze()` drops EVERY axis of size 1" in result.message
    assert "sentences as well as the words" not in result.message


def test_a_fixed_batch_size_is_blamed_only_with_evidence():
    def fixed_rows(x, w):  # always 2 rows whatever B is: the evidence is the constant size
        out = torch.zeros(2, x.shape[2], dtype=x.dtype)
        for b in range(min(2, x.shape[0])):
            out[b] = w[b] @ x[b]
        return out

    result = ex.check_weighted_sum(fixed_rows, seed=2)
    assert result.mistake == "only_B"
    assert re.search(r"axis 0 has size 2 whatever B is", result.message), result.message


def test_a_fallback_says_which_cases_failed_on_which_sizes():
    def odd(x, w):  # wrong only where T is odd: no known mistake explains it
        out = (x * w[..., None]).sum(dim=1)
        return out * 1.5 if x.shape[1] % 2 else out

    for seed in SEEDS[:4]:
        result = ex.check_weighted_sum(odd, seed=seed)
        assert result.mistake in (None, "only_T"), result.message
        if result.mistake is None:
            assert "What the checker saw" in result.message
            assert re.search(r"\(B=\d+, T=\d+, H=\d+\)", result.message)
        assert "written into" not in result.message


SOLUTION_FRAGMENTS = ["att_scores[..., None]).sum", "bth,bt->bh", "keepdim=True).exp", "squeeze(1)"]


@pytest.mark.parametrize(("name", "checker", "fn", "key"), NAMED, ids=[n[0] for n in NAMED])
def test_new_messages_never_show_a_value_or_the_solution(name, checker, fn, key):
    result = checker(fn, seed=5)
    text = str(result) + result._repr_html_()
    text = re.sub(r"this line of your code: (`[^`]*`|<code>.*?</code>)", "", text)
    assert not re.search(r"\d\.\d", text), text
    assert "tensor([" not in text
    for fragment in SOLUTION_FRAGMENTS:
        assert fragment not in text, fragment


def test_a_size_that_comes_from_the_inputs_is_never_blamed_as_written_into_the_code():
    # att_scores.T gives results whose first axis is T (or B): sizes of the inputs, not constants
    for seed in SEEDS[:4]:
        message = ex.check_weighted_sum(lambda x, w: (x * w.T[..., None]).sum(1), seed=seed).message
        assert "written into" not in message, message


def test_right_only_with_one_word_says_so():
    result = ex.check_weighted_sum(lambda x, w: x[:, 0] * w[:, :1], seed=0)
    assert result.mistake == "only_shape"
    assert "single word per sentence (T = 1)" in result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda x, w: (x * w[..., None]).amax(dim=1), "max_not_sum"),
        (lambda x, w: torch.einsum("bth,bt->b", x, w), "summed_hidden_too"),
    ],
)
def test_more_weighted_sum_mistakes_are_named(fn, key):
    assert ex.check_weighted_sum(fn, seed=1).mistake == key


def test_a_function_that_turns_gradients_off_cannot_leak_that_into_the_check():
    def switches_grad_off(x, w):
        torch.set_grad_enabled(False)
        return (x * w[..., None]).sum(dim=1)

    result = ex.check_weighted_sum(switches_grad_off, seed=0)
    assert torch.is_grad_enabled()
    assert result.mistake == "detached"  # the grad case sees what the function did to its result
