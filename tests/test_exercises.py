"""The exercise checkers: right answers pass however they are written, each known mistake is named,
stubs are "not attempted", hard-coded answers fail, exceptions are explained, nothing leaks."""

import re

import numpy as np
import pytest
import torch

import attnviz
from attnviz import exercises as ex
from attnviz.exercises import CheckResult

# --------------------------------------------------------------------------------------------
# Right answers, written several ways


def ws_broadcast(net_output, att_scores):
    return (net_output * att_scores[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


def ws_unsqueeze(net_output, att_scores):
    return torch.mul(net_output, att_scores.unsqueeze(-1)).sum(axis=-2)


def ws_einsum(net_output, att_scores):
    return torch.einsum("bth,bt->bh", net_output, att_scores)


def ws_matmul(net_output, att_scores):
    return (att_scores[:, None, :] @ net_output).squeeze(1)  # (B,1,T) @ (B,T,H) -> (B,H)


def ws_bmm(net_output, att_scores):
    return torch.bmm(att_scores.unsqueeze(1), net_output)[:, 0]


def ws_loops(net_output, att_scores):
    b_size, t_size, h_size = net_output.shape
    out = torch.zeros(b_size, h_size, dtype=net_output.dtype, device=net_output.device)
    for b in range(b_size):
        for t in range(t_size):
            out[b] += att_scores[b, t] * net_output[b, t]
    return out


def ws_stack_rows(net_output, att_scores):
    return torch.stack([w @ x for x, w in zip(net_output, att_scores, strict=True)])


def ws_library(net_output, att_scores):
    return attnviz.weighted_sum(net_output, att_scores, method="bmm")


def ws_masked_all_true(net_output, att_scores):
    mask = torch.ones_like(att_scores, dtype=torch.bool)
    return attnviz.weighted_sum(net_output, att_scores, mask=mask)


RIGHT_WEIGHTED = [
    ws_broadcast,
    ws_unsqueeze,
    ws_einsum,
    ws_matmul,
    ws_bmm,
    ws_loops,
    ws_stack_rows,
    ws_library,
    ws_masked_all_true,
]


@pytest.mark.parametrize("fn", RIGHT_WEIGHTED, ids=lambda f: f.__name__)
def test_right_weighted_sum_passes_however_written(fn):
    result = ex.check_weighted_sum(fn)
    assert result.passed, result.message
    assert result.status == "passed" and result.mistake is None
    assert result.cases_passed == result.cases_total >= 8


# --------------------------------------------------------------------------------------------
# Each named mistake is named


def ws_forgot_axis(x, w):
    return (x * w).sum(dim=1)


def ws_axis_in_middle(x, w):
    return (x * w[:, None]).sum(dim=1)


def ws_hard_coded_batch(x, w):
    out = torch.zeros(2, x.shape[2], dtype=x.dtype)
    for b in range(2):
        out[b] = w[b] @ x[b]
    return out


def ws_hard_coded_shape(x, w):
    return (x * w.reshape(2, 3, 1)).sum(dim=1)


def ws_float32_loop(x, w):
    out = torch.zeros(x.shape[0], x.shape[2])  # float32 whatever the inputs
    for b in range(x.shape[0]):
        out[b] = (w[b, :, None] * x[b]).sum(dim=0)
    return out


def ws_mutates(x, w):
    x *= w[..., None]
    return x.sum(dim=1)


def ws_forgot_return(x, w):
    _ = (x * w[..., None]).sum(dim=1)


CLASSIC_ANSWER = ws_broadcast(*attnviz.examples.classic())


def ws_hard_coded_answer(x, w):
    return CLASSIC_ANSWER.clone()


WEIGHTED_MISTAKES = [
    (ws_forgot_axis, "forgot_new_axis", "error"),
    (ws_axis_in_middle, "axis_in_middle", "error"),
    (lambda x, w: (x * w[..., None]).sum(dim=2), "wrong_axis", "failed"),
    (lambda x, w: torch.einsum("bth,bt->bt", x, w), "wrong_axis", "failed"),
    (lambda x, w: (x * w[..., None]).sum(dim=0), "summed_sentences", "failed"),
    (lambda x, w: torch.einsum("bth,bt->h", x, w), "summed_everything_but_hidden", "failed"),
    (lambda x, w: (x * w[..., None]).sum(), "summed_everything", "failed"),
    (lambda x, w: (x * w[..., None]).sum(dim=1, keepdim=True), "kept_dim", "failed"),
    (lambda x, w: torch.bmm(w[:, None, :], x), "kept_dim", "failed"),
    (lambda x, w: x * w[..., None], "no_sum", "failed"),
    (lambda x, w: (x * w[..., None]).mean(dim=1), "mean_not_sum", "failed"),
    (lambda x, w: x.sum(dim=1), "unweighted_sum", "failed"),
    (lambda x, w: x.mean(dim=1), "unweighted_mean", "failed"),
    (lambda x, w: ws_broadcast(x, w.softmax(dim=-1)), "softmaxed_weights", "failed"),
    (lambda x, w: ws_broadcast(x, w / w.sum(1, keepdim=True)), "normalised_weights", "failed"),
    (lambda x, w: torch.einsum("bth,bt->hb", x, w), "transposed_result", "failed"),
    (lambda x, w: (x * w[0][None, :, None]).sum(1), "first_sentence_weights", "failed"),
    (ws_hard_coded_batch, "only_B", "failed"),
    (ws_hard_coded_shape, "only_shape", "error"),
    (ws_float32_loop, "wrong_dtype", "failed"),
    (lambda x, w: ws_broadcast(x, w).double(), "wrong_dtype", "failed"),
    (lambda x, w: ws_broadcast(x, w).numpy(), "not_a_tensor", "failed"),
    (lambda x, w: ws_broadcast(x, w).tolist(), "not_a_tensor", "failed"),
    (ws_mutates, "mutated_input", "failed"),
    (ws_forgot_return, "forgot_return", "failed"),
    (ws_hard_coded_answer, "hard_coded", "failed"),
]


@pytest.mark.parametrize(
    ("fn", "key", "status"), WEIGHTED_MISTAKES, ids=[k for _, k, _ in WEIGHTED_MISTAKES]
)
def test_each_weighted_sum_mistake_is_named(fn, key, status):
    result = ex.check_weighted_sum(fn)
    assert not result.passed
    assert result.mistake == key, result.message
    assert result.status == status
    assert "Not quite yet" in result.message


def test_wrong_device_is_named():
    result = ex.check_weighted_sum(lambda x, w: ws_broadcast(x, w).to("meta"))
    assert result.mistake == "wrong_device"
    assert "lives on meta but the inputs are on cpu" in result.message


def test_hard_coded_classic_answer_fails_on_fresh_values():
    result = ex.check_weighted_sum(ws_hard_coded_answer)
    assert result.cases_passed == 1  # the classic example itself, and nothing else
    assert "✗ the classic shape with fresh random values" in result.message


def test_t_equals_h_trap_is_caught_where_it_is_silent():
    # x * w runs without error when B = 1 and T == H, and gives the wrong numbers.
    result = ex.check_weighted_sum(ws_forgot_axis)
    assert "✗ B = 1 with T == H" in result.message
    assert "(B, T) → (B, T, 1)" in result.message


def test_forgot_axis_explains_right_alignment_with_the_case_shapes():
    result = ex.check_weighted_sum(ws_forgot_axis)
    assert "RIGHT" in result.message
    assert "    net_output    2   3   5\n    att_scores        2   3" in result.message
    assert "5 (H) met a size 3 (T)" in result.message


def test_shape_failure_names_the_expected_shape_in_letters():
    result = ex.check_weighted_sum(lambda x, w: (x * w[..., None]).sum(dim=2))
    assert "returned shape (2, 3); the answer has shape (B, H) = (2, 5)" in result.message


def test_only_batch_size_message_names_the_sizes():
    result = ex.check_weighted_sum(ws_hard_coded_batch)
    assert "batch size B is 2, but not when it is" in result.message


# --------------------------------------------------------------------------------------------
# Stubs, exceptions, misuse


def stub(net_output, att_scores):
    raise NotImplementedError("your turn")


@pytest.mark.parametrize("name", list(ex.CHECKERS))
def test_stub_is_not_attempted(name):
    def any_stub(*args):
        raise NotImplementedError

    result = ex.CHECKERS[name](any_stub)
    assert result.status == "not attempted"
    assert not result.passed and not result
    assert "NotImplementedError" in result.message


@pytest.mark.parametrize("name", list(ex.CHECKERS))
def test_passing_a_result_instead_of_a_function_is_explained(name):
    result = ex.CHECKERS[name](torch.zeros(2, 5))
    assert result.status == "error"
    assert f"check_{name}(my_function)" in result.message


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (lambda x, w: 1 / 0, ["ZeroDivisionError", "1 / 0"]),
        (lambda x, w: {}["k"], ["KeyError"]),
        (lambda x, w: x.sum(dim=3), ["IndexError", "axis the tensor does not have"]),
        (lambda x: x, ["TypeError", "(net_output, att_scores)"]),
        (lambda x, w: torch.bmm(w, x), ["batch1", "bmm"]),
        (lambda x, w: torch.einsum("bh,bt->bh", x, w), ["einsum", "each letter names one axis"]),
        (lambda x, w: attnviz.weighted_sum(x, w[..., None]), ["AttnvizError", "(2, 3, 1)"]),
    ],
)
def test_exceptions_are_caught_and_explained(fn, words):
    result = ex.check_weighted_sum(fn)
    assert result.status == "error"
    for word in words:
        assert word in result.message


def test_exception_message_quotes_the_students_line():
    def mine(net_output, att_scores):
        scaled = net_output * att_scores  # the line that fails
        return scaled.sum(dim=1)

    result = ex.check_weighted_sum(mine)
    assert "`scaled = net_output * att_scores  # the line that fails`" in result.message


# --------------------------------------------------------------------------------------------
# Fresh inputs, the right shapes, and no leaks


def spy(calls):
    def fn(net_output, att_scores):
        calls.append((net_output.clone(), att_scores.clone()))
        return ws_broadcast(net_output, att_scores)

    return fn


def test_cases_cover_the_traps():
    calls = []
    ex.check_weighted_sum(spy(calls))
    shapes = [tuple(x.shape) for x, _ in calls]
    assert shapes[0] == (2, 3, 5)
    assert torch.equal(calls[0][0], attnviz.examples.classic()[0])
    assert any(len({b, t, h}) == 3 and b != 2 for b, t, h in shapes)
    assert any(t == h and b != t for b, t, h in shapes)
    assert any(b == 1 and t != h for b, t, h in shapes)
    assert any(b == 1 and t == h for b, t, h in shapes)
    assert any(t == 1 for _, t, _ in shapes)
    assert any(x.dtype == torch.float64 for x, _ in calls)


def test_inputs_are_fresh_on_every_call():
    first, second = [], []
    ex.check_weighted_sum(spy(first))
    ex.check_weighted_sum(spy(second))
    assert torch.equal(first[0][0], second[0][0])  # the classic example is the classic example
    assert not torch.equal(first[1][0], second[1][0])  # everything else is new


def test_a_seed_repeats_the_inputs():
    first, second = [], []
    ex.check_weighted_sum(spy(first), seed=7)
    ex.check_weighted_sum(spy(second), seed=7)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(first, second, strict=True))


SOLUTION_FRAGMENTS = [
    "att_scores[..., None]).sum",
    "sum(dim=1)",
    "sum(axis=1)",
    "sum(1)",
    "sum(dim=-2)",
    "bth,bt->bh",
    "bth,bh->bt",
    "softmax(dim=1)",
    "softmax(1)",
    "expand(",
    "unsqueeze(-1)",
    "unsqueeze(2)",
]

LEAK_CASES = [
    (ex.check_weighted_sum, fn) for fn, _, _ in WEIGHTED_MISTAKES if fn is not ws_mutates
] + [
    (ex.check_masked_weighted_sum, lambda x, w, m: ws_broadcast(x, w)),
    (ex.check_softmax_weighted_sum, lambda x, s: ws_broadcast(x, s)),
    (ex.check_weights_grad, lambda x, g: x.sum(dim=2)),
    (ex.check_add_axis, lambda w: w[None]),
    (ex.check_expand_weights, lambda w, h: w[..., None].repeat(1, 1, h)),
]


@pytest.mark.parametrize(("checker", "fn"), LEAK_CASES)
def test_messages_never_show_a_value_or_the_solution(checker, fn):
    result = checker(fn, seed=3)
    text = str(result) + result._repr_html_() + result._repr_markdown_()
    # quoting the student's own line is fine
    text = re.sub(r"this line of your code: (`[^`]*`|<code>.*?</code>)", "", text)
    # Shapes and counts are whole numbers; any decimal number would be a value.
    assert not re.search(r"\d\.\d", text), text
    assert "tensor([" not in text
    for fragment in SOLUTION_FRAGMENTS:
        assert fragment not in text, fragment


def test_intermediate_bytes_message_never_shows_the_answer():
    seen = []

    def wrong(b, t, h, dtype):
        seen.append((b, t, h, torch.empty((), dtype=dtype).element_size()))
        return b * t * h

    result = ex.check_intermediate_bytes(wrong, seed=5)
    for b, t, h, size in seen:
        assert f"{b * t * h * size}" not in result.message.replace(f"{b * t * h}", "")


# --------------------------------------------------------------------------------------------
# The other tensor exercises


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


def masked_library(x, w, mask):
    return attnviz.weighted_sum(x, w, mask=mask)


def masked_in_place(x, w, mask):
    w[~mask] = 0
    return ws_broadcast(x, w)


@pytest.mark.parametrize("fn", [masked_where, masked_fill, masked_loops, masked_library])
def test_right_masked_weighted_sum_passes(fn):
    result = ex.check_masked_weighted_sum(fn)
    assert result.passed, result.message


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
        lambda x, s: attnviz.weighted_sum(x, s, normalize="softmax"),
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
    result = ex.check_expand_weights(lambda w, h: w[..., None].repeat(1, 1, h))
    assert "it stores 24 numbers where a view would store 6" in result.message or (
        "where a view would store" in result.message
    )


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


def test_intermediate_bytes_right_answer_passes():
    result = ex.check_intermediate_bytes(lambda b, t, h, d: b * t * h * d.itemsize)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (lambda b, t, h, d: b * t * h, "elements"),
        (lambda b, t, h, d: b * h * d.itemsize, "output_only"),
        (lambda b, t, h, d: 2 * b * t * h * d.itemsize, "counted_expand"),
        (lambda b, t, h, d: b * t * h * 4, "fixed_itemsize_4"),
        (lambda b, t, h, d: b * t * h * d.itemsize * 8, "bits"),
        (lambda b, t, h, d: float(b * t * h * d.itemsize), "not_int"),
    ],
)
def test_each_intermediate_bytes_mistake_is_named(fn, key):
    result = ex.check_intermediate_bytes(fn)
    assert result.mistake == key, result.message


def timer_right(op, repeats, clock, sync):
    op()  # warm-up
    sync()
    times = []
    for _ in range(repeats):
        start = clock()
        op()
        sync()
        times.append(clock() - start)
    return times


def timer_batched(op, repeats, clock, sync):
    op()
    sync()
    start = clock()
    for _ in range(repeats):
        op()
    sync()
    return [(clock() - start) / repeats] * repeats


def timer_no_sync(op, repeats, clock, sync):
    op()
    times = []
    for _ in range(repeats):
        start = clock()
        op()
        times.append(clock() - start)
    return times


def timer_no_warmup(op, repeats, clock, sync):
    return timer_right(lambda: None, 0, clock, sync) + [
        _timed_once(op, clock, sync) for _ in range(repeats)
    ]


def _timed_once(op, clock, sync):
    start = clock()
    op()
    sync()
    return clock() - start


def timer_warmup_unsynced(op, repeats, clock, sync):
    op()
    return [_timed_once(op, clock, sync) for _ in range(repeats)]


def timer_one_sample(op, repeats, clock, sync):
    op()
    sync()
    return [_timed_once(op, clock, sync)]


def timer_own_clock(op, repeats, clock, sync):
    import time

    op()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        op()
        sync()
        times.append(time.perf_counter() - start)
    return times


@pytest.mark.parametrize("fn", [timer_right, timer_batched])
def test_right_timer_passes(fn):
    result = ex.check_timer(fn)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "key"),
    [
        (timer_no_sync, "no_sync"),
        (timer_no_warmup, "no_warmup"),
        (timer_warmup_unsynced, "warmup_not_synced"),
        (timer_one_sample, "one_sample"),
        (timer_own_clock, "own_clock"),
    ],
)
def test_each_timing_mistake_is_named(fn, key):
    result = ex.check_timer(fn)
    assert result.mistake == key, result.message


# --------------------------------------------------------------------------------------------
# Display


def test_result_displays_as_html_with_escaped_text():
    result = ex.check_weighted_sum(lambda x, w: x.sum(dim=3))
    page = result._repr_html_()
    assert "weighted_sum: error" in page
    assert "<code>" in page
    assert "<script" not in page
    assert "&#x27;" in page or "&lt;" in page or "'" not in result.message


def test_result_displays_as_markdown_and_text():
    result = ex.check_weighted_sum(ws_broadcast)
    assert result._repr_markdown_().startswith("**✓ weighted_sum: passed**")
    assert str(result).startswith("✓ weighted_sum: passed\n")
    assert repr(result) == str(result)


def test_result_rejects_an_unknown_status():
    with pytest.raises(ValueError, match="status"):
        CheckResult("x", "maybe", "")


def test_exercises_import_without_the_web_stack():
    import subprocess
    import sys

    code = (
        "import sys, attnviz.exercises;"
        "bad = {'streamlit', 'plotly', 'pandas'} & set(sys.modules);"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")
