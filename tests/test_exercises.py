"""The exercise checkers: right answers pass however they are written, each known mistake is named,
stubs are "not attempted", hard-coded answers fail, exceptions are explained, nothing leaks."""

import html
import re

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


def ws_cumsum(net_output, att_scores):
    return (net_output * att_scores[..., None]).cumsum(dim=1)[:, -1]  # running sum, last word


def ws_transposes(net_output, att_scores):
    return (net_output.transpose(1, 2) @ att_scores[..., None])[..., 0]  # (B,H,T) @ (B,T,1)


def ws_torch_einsum_transposed(net_output, att_scores):
    return torch.einsum("bht,bt->bh", net_output.mT, att_scores)


def ws_branches_on_dtype(net_output, att_scores):
    # a branch adds an operation on some inputs: that is not a loop
    if net_output.dtype == torch.float32:  # work in float64, give float32 back
        x, w = net_output.double(), att_scores.double()
        return (x * w[..., None]).sum(dim=1).to(net_output.dtype)
    return (net_output * att_scores[..., None]).sum(dim=1)


def ws_loops(net_output, att_scores):
    b_size, t_size, h_size = net_output.shape
    out = torch.zeros(b_size, h_size, dtype=net_output.dtype, device=net_output.device)
    for b in range(b_size):
        for t in range(t_size):
            out[b] += att_scores[b, t] * net_output[b, t]
    return out


def ws_stack_rows(net_output, att_scores):
    return torch.stack([w @ x for x, w in zip(net_output, att_scores, strict=True)])


RIGHT_WEIGHTED = [
    ws_broadcast,
    ws_unsqueeze,
    ws_einsum,
    ws_matmul,
    ws_bmm,
    ws_cumsum,
    ws_transposes,
    ws_torch_einsum_transposed,
    ws_branches_on_dtype,
]


@pytest.mark.parametrize("fn", RIGHT_WEIGHTED, ids=lambda f: f.__name__)
def test_right_weighted_sum_passes_however_written(fn):
    result = ex.check_weighted_sum(fn)
    assert result.passed, result.message
    assert result.status == "passed" and result.mistake is None
    assert result.cases_passed == result.cases_total >= 9


@pytest.mark.parametrize("fn", [ws_loops, ws_stack_rows], ids=lambda f: f.__name__)
def test_a_python_loop_fails_with_what_was_detected(fn):
    result = ex.check_weighted_sum(fn)
    assert result.status == "failed" and result.mistake == "python_loop"
    assert result.cases_passed == result.cases_total  # the numbers are right ...
    assert "no Python loop" in result.message  # ... but the task forbids the loop
    assert re.search(
        r"uses a (`for` loop|list comprehension) \(line \d+ of your function", result.message
    )


def _loop_in_a_helper(x, w):
    return torch.stack([(w[b, :, None] * x[b]).sum(dim=0) for b in range(x.shape[0])])


def ws_calls_a_looping_helper(net_output, att_scores):
    return _loop_in_a_helper(net_output, att_scores)


def test_a_loop_hidden_in_a_helper_is_found_by_counting_operations():
    result = ex.check_weighted_sum(ws_calls_a_looping_helper)
    assert result.mistake == "python_loop"
    assert "no loop in its own lines" in result.message
    assert "grows with the sizes" in result.message


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: ws_broadcast(x, w).detach(),
        lambda x, w: ws_broadcast(x.detach(), w),
        lambda x, w: torch.tensor(ws_broadcast(x, w).tolist(), dtype=x.dtype),
        lambda x, w: ws_broadcast(x.data, w.data),
    ],
)
def test_a_result_without_its_gradient_fails_saying_so(fn):
    result = ex.check_weighted_sum(fn)
    assert result.status == "failed" and result.mistake == "detached"
    assert "✗ inputs that require grad" in result.message
    assert "gradient" in result.message and "keeps its gradient" in result.message


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
    (lambda x, w: ws_broadcast(x, w).double(), "converted_dtype", "failed"),
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
        (lambda x, w: attnviz.check_inputs(x, w[..., None]), ["AttnvizError", "(2, 3, 1)"]),
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
# Display


def test_result_displays_as_html_with_escaped_text():
    result = ex.check_weighted_sum(lambda x, w: x.sum(dim=3))
    page = result._repr_html_()
    assert "weighted_sum: error" in page
    assert "<code>" in page
    assert "<script" not in page
    quoted = next(line for line in result.message.split("\n") if "'" in line or "`" in line)
    assert html.escape(quoted.split("`")[0]) in page  # the text is escaped, not raw


def test_result_displays_as_markdown_and_text():
    result = ex.check_weighted_sum(ws_broadcast)
    assert result._repr_markdown_().startswith("**✓ ws_broadcast: passed**")
    assert str(result).startswith("✓ ws_broadcast: passed\n")
    assert repr(result) == str(result)


def test_result_rejects_an_unknown_status():
    with pytest.raises(ValueError, match="status"):
        CheckResult("x", "maybe", "")


# every known mistake's words, for every exercise: what a message can add to the observations
REGISTRY_LEAKS = {
    "weighted_sum": ["att_scores[..., None]).sum", "sum(dim=1)", "sum(1)", "bth,bt->bh"],
    "masked_weighted_sum": ["* mask)[..., None]", "att_scores * mask", "masked_fill(~mask, 0)"],
    "softmax_weighted_sum": ["softmax(dim=1)", "softmax(1)", "softmax(dim=-1)"],
    "weights_grad": ["grad_weighted[:, None, :]", "bth,bh->bt", "sum(dim=2)", "sum(2)"],
    "add_axis": ["att_scores[..., None]", "unsqueeze(-1)", "unsqueeze(2)"],
    "expand_weights": ["expand(-1, -1, h)", "[..., None].expand"],
    "intermediate_bytes": ["b * t * h *", "element_size() *"],
}


@pytest.mark.parametrize("name", sorted(REGISTRY_LEAKS))
def test_no_registered_hint_gives_the_solution(name):
    from attnviz.exercises import lesson01, lesson02, lesson03

    exercises = {
        e.name: e
        for module in (lesson01, lesson02, lesson03)
        for e in vars(module).values()
        if isinstance(e, ex.engine.Exercise)
    }
    words = " ".join(f"{e.title} {e.hint}" for e in exercises[name].mistakes.values())
    assert words.strip()
    assert not re.search(r"\d\.\d", words)
    for fragment in REGISTRY_LEAKS[name]:
        assert fragment not in words, fragment


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w: ws_broadcast(x, w).to_sparse(),
        lambda x, w: torch.nested.nested_tensor(list(ws_broadcast(x, w))),
        lambda x, w: ws_broadcast(x, w).to(torch.complex64),
        lambda x, w: (i for i in range(3)),
    ],
    ids=["sparse", "nested", "complex", "generator"],
)
# making the nested answer: torch says its nested tensors are a prototype (the student's own call)
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
def test_odd_results_get_a_verdict_not_a_crash(fn):
    result = ex.check_weighted_sum(fn, seed=0)
    assert result.status == "failed"
    assert result.mistake in ("not_a_tensor", "wrong_dtype", "converted_dtype", "dtype_changed")
