"""The expression sandbox: the gallery of right and wrong forms traced, and a table of attacks refused.

Every evaluation either returns a Trace or raises SandboxError (an AttnvizError) with a message:
nothing else may escape, nothing on disk may change, and the caller's tensors stay as they were.
"""

import os
import pickle
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.testing import assert_close

import attnviz
from attnviz import AttnvizError
from attnviz.examples import classic
from attnviz.sandbox import (
    ERROR_KINDS,
    FUNCTIONS,
    METHODS,
    ErrorKind,
    Limits,
    Node,
    SandboxError,
    Trace,
    evaluate,
    pointer,
)

RIGHT = "(net_output * att_scores[..., None]).sum(axis=1)"
SHAPES = [(2, 3, 5), (3, 4, 2), (4, 2, 3), (1, 5, 1)]  # B, T, H all different (or 1)


def random_inputs(b, t, h, *, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.to(dtype), w.to(dtype)


def variables(shape=(2, 3, 5), seed=0, dtype=torch.float64):
    x, w = random_inputs(*shape, seed=seed, dtype=dtype)
    return {"net_output": x, "att_scores": w}


def refusal(expr, vs=None, **kwargs) -> SandboxError:
    with pytest.raises(SandboxError) as info:
        evaluate(expr, vs if vs is not None else variables(), **kwargs)
    return info.value


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


# --------------------------------------------------------------------------------------------
# The rest of the language
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("net_output.shape", (2, 3, 5)),
        ("net_output.shape[0]", 2),
        ("net_output.shape[-2:]", (3, 5)),
        ("net_output.ndim", 3),
        ("att_scores.T.shape", (3, 2)),
        ("net_output.T.shape", (5, 3, 2)),
        ("net_output.shape + (1,)", (2, 3, 5, 1)),
        ("net_output.shape[0] * 2 - 1", 3),
        ("2 ** 3", 8),
    ],
)
def test_shape_and_number_results(expr, want):
    assert evaluate(expr, variables()).result == want


@pytest.mark.parametrize(
    ("expr", "shape"),
    [
        ("net_output.permute(2, 0, 1)", (5, 2, 3)),
        ("net_output.permute([2, 0, 1])", (5, 2, 3)),
        ("net_output.reshape(2, -1)", (2, 15)),
        ("net_output.reshape((6, 5))", (6, 5)),
        ("net_output.view(-1)", (30,)),
        ("net_output.flatten(0, 1)", (6, 5)),
        ("net_output[None].squeeze(0)", (2, 3, 5)),
        ("net_output[:, 1:, ::2]", (2, 2, 3)),
        ("net_output[0, ..., -1]", (3,)),
        ("att_scores[..., None].expand(2, 3, 4)", (2, 3, 4)),
        ("att_scores.exp().abs()", (2, 3)),
        ("(-att_scores) ** 2 / 2 + 1", (2, 3)),
        ("att_scores.mean(dim=(0, 1), keepdim=True)", (1, 1)),
        ("net_output.amax(axis=-1)", (2, 3)),
        ("net_output.transpose(0, 2)", (5, 3, 2)),
        ('einsum("bth->bh", net_output)', (2, 5)),
        ('einsum("...h,...->...h", net_output, att_scores)', (2, 3, 5)),
        ("net_output +\n  att_scores[..., None]", (2, 3, 5)),
    ],
)
def test_language_forms_give_pytorchs_shapes(expr, shape):
    assert tuple(evaluate(expr, variables()).result.shape) == shape


def test_results_match_pytorch_on_the_same_inputs():
    vs = variables((2, 3, 5), seed=11)
    x, w = vs["net_output"], vs["att_scores"]
    cases = {
        "net_output.permute(2, 0, 1).reshape(5, -1)": x.permute(2, 0, 1).reshape(5, -1),
        "(att_scores - att_scores.amax(1, keepdim=True)).exp()": (
            w - w.amax(1, keepdim=True)
        ).exp(),
        "att_scores.softmax(axis=-1) ** 0.5": w.softmax(-1) ** 0.5,
        "net_output.mean(1) @ net_output.mean(1).T": x.mean(1) @ x.mean(1).T,
    }
    for expr, want in cases.items():
        assert_close(evaluate(expr, vs).result, want)


small_shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@given(a=small_shapes, b=small_shapes, op=st.sampled_from(["+", "-", "*", "/"]))
def test_broadcasting_agrees_with_pytorch(a, b, op):
    vs = {"a": torch.rand(a, dtype=torch.float64), "b": torch.rand(b, dtype=torch.float64)}
    try:
        want = torch.broadcast_shapes(a, b)
    except RuntimeError:
        err = refusal(f"a {op} b", vs)
        assert err.kind == "shape" and "meets" in str(err)
        return
    trace = evaluate(f"a {op} b", vs)
    assert trace.result.shape == want
    assert trace.steps[-1].broadcast.result == tuple(want)


@given(a=small_shapes, b=small_shapes)
def test_matmul_agrees_with_pytorch(a, b):
    vs = {"a": torch.rand(a, dtype=torch.float64), "b": torch.rand(b, dtype=torch.float64)}
    try:
        want = vs["a"] @ vs["b"]
    except RuntimeError:
        assert refusal("a @ b", vs).kind == "shape"
        return
    assert_close(evaluate("a @ b", vs).result, want)


def test_view_of_a_transposed_tensor_suggests_reshape():
    err = refusal("net_output.transpose(1, 2).view(2, -1)")
    assert err.kind == "shape" and ".reshape(" in str(err)


def test_reshape_to_the_wrong_size_counts_the_elements():
    err = refusal("net_output.reshape(4, 4)")
    assert "30" in str(err) and "16" in str(err)


def test_matmul_clash_names_the_paired_axes():
    err = refusal("net_output @ att_scores")
    assert err.kind == "shape"
    assert "size 5" in str(err) and "size 2" in str(err)


def test_einsum_letter_size_mismatch_is_named():
    err = refusal('einsum("bth,bh->bt", net_output, att_scores)')
    assert err.kind == "shape" and "letter h" in str(err)


def test_misspelt_name_gets_a_did_you_mean():
    err = refusal("net_output * att_score[..., None]")
    assert err.kind == "name"
    assert "`att_scores`" in str(err)
    assert err.span == (13, 22)


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("att_scores.unsqeeze(-1)", "Did you mean `.unsqueeze`?"),
        ("net_output.size()", "Use .shape instead"),
        ("net_output.max(1)", "Use .amax(dim) instead"),
        ("att_scores.repeat(1, 5)", "Use .expand("),
    ],
)
def test_unknown_attribute_suggests_the_allowed_one(expr, fragment):
    err = refusal(expr)
    assert err.kind == "refused" and fragment in str(err)


def test_syntax_error_points_at_the_position():
    err = refusal("net_output * (att_scores")
    assert err.kind == "syntax" and err.span is not None


def test_leading_spaces_keep_spans_in_the_original_text():
    expr = "   net_output * att_scores"
    err = refusal(expr)
    assert expr[err.span[0] : err.span[1]] == "net_output * att_scores"


def test_every_error_kind_is_documented():
    kinds = {
        refusal(e).kind
        for e in ["x +", "a.__class__", "nope", "net_output ** 9", "net_output @ att_scores"]
    }
    assert kinds <= set(ERROR_KINDS)


def test_limits_are_checked_before_allocation():
    err = refusal("net_output * 2", limits=Limits(max_elements=10))
    assert err.kind == "limit" and "30 elements" in str(err)
    assert err.trace.steps == ()  # refused in the shape-only pass: nothing was even cloned


def test_a_refused_step_is_never_run_but_the_steps_before_it_are():
    vs = variables((2, 3, 5))
    err = refusal("net_output[..., None].expand(2, 3, 5, 10)", vs, limits=Limits(max_elements=40))
    assert err.kind == "limit" and "300 elements" in str(err)
    assert [s.source for s in err.trace.steps] == ["net_output", "net_output[..., None]"]
    assert_close(err.trace.steps[1].value, vs["net_output"][..., None])


def test_time_budget_stops_the_evaluation():
    err = refusal(RIGHT, limits=Limits(time_budget=0.0))
    assert err.kind is ErrorKind.TIME


def test_work_limit_counts_a_matrix_product():
    err = refusal(
        "net_output.reshape(-1)[:, None] @ net_output.reshape(-1)[None, :]",
        limits=Limits(max_work=100),
    )
    assert err.kind == "limit" and "computation" in str(err)


def test_result_does_not_share_memory_with_the_inputs():
    vs = variables()
    before = {k: v.clone() for k, v in vs.items()}
    trace = evaluate("att_scores", vs)
    trace.result.add_(100)  # the caller may do what it likes with the result
    for name, value in vs.items():
        assert torch.equal(value, before[name])


def test_result_carries_no_gradient_graph():
    x, w = random_inputs(2, 3, 5)
    x.requires_grad_(True)
    trace = evaluate(RIGHT, {"net_output": x, "att_scores": w})
    assert not trace.result.requires_grad and trace.result.grad_fn is None
    assert x.grad is None


def test_pointer_puts_carets_under_the_culprit():
    expr = "(net_output * att_scores).sum(axis=1)"
    err = refusal(expr)
    assert pointer(expr, err.span) == expr + "\n " + "^" * len("net_output * att_scores")


def test_pointer_shows_only_the_line_of_a_multiline_culprit():
    expr = "net_output +\n  att_scores * net_output"
    err = refusal(expr)
    assert pointer(expr, err.span) == "  att_scores * net_output\n  " + "^" * 23


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("mask - mask", "bool"),
        ("lengths @ att_scores", "same dtype"),
        ("mask.T @ mask", "bool"),
        ('einsum("bt,bth->bh", mask, net_output)', "one numeric dtype"),
        ("lengths.mean()", "floating-point"),
        ("lengths.softmax(0)", "floating-point"),
        ("lengths ** -1", "floats"),
    ],
)
def test_dtype_mistakes_are_named_before_pytorch_sees_them(expr, fragment):
    vs = variables()
    vs["mask"] = vs["att_scores"] > 0.5  # (B,T) bool
    vs["lengths"] = torch.tensor([3, 2])  # (B,) int64
    err = refusal(expr, vs)
    assert err.kind == "type" and fragment in str(err)


def test_a_tuple_holding_a_tensor_is_refused():
    err = refusal("(net_output, 1)")
    assert err.kind == "type" and "tuple" in str(err)


@pytest.mark.parametrize(
    "bad",
    [{"x": [1, 2]}, {"_x": torch.zeros(1)}, {"not a name": torch.zeros(1)}, [("x", 1)]],
)
def test_bad_variables_raise_sandbox_error(bad):
    with pytest.raises(SandboxError):
        evaluate("x", bad)


# --------------------------------------------------------------------------------------------
# Hostile and pathological inputs
# --------------------------------------------------------------------------------------------

HUGE = "net_output + " * 8000 + "net_output"  # about 100 kB
HOSTILE = [
    # (id, expression, expected kind or "ok", a fragment the message must contain)
    ("dunder", "net_output.__class__", "refused", "attribute `__class__` is not allowed"),
    ("dunder-chain", "net_output.__class__.__mro__[1].__subclasses__()", "refused", "__"),
    ("tuple-subclasses", "().__class__.__base__.__subclasses__()", "refused", "`__class__`"),
    ("dunder-name", "__builtins__", "refused", "`__builtins__`"),
    ("import", "__import__('os').system('touch pwned')", "refused", "__import__"),
    ("getattr", "getattr(net_output, 'numpy')", "refused", "getattr"),
    ("str-format", "'{0.__class__}'.format(net_output)", "refused", "string"),
    ("f-string", "f'{net_output.__class__}'", "refused", "f-string"),
    ("lambda", "(lambda: net_output)()", "refused", "lambda"),
    ("list-comp", "[t for t in net_output]", "refused", "list comprehension"),
    ("gen-exp", "sum(t for t in net_output)", "refused", "sum"),
    ("dict", "{'a': net_output}", "refused", "dict"),
    ("walrus", "(y := net_output)", "refused", "walrus"),
    ("open", "open('canary.txt', 'w')", "refused", "open"),
    ("eval", "eval('1 + 1')", "refused", "eval"),
    ("exec", "exec('import os')", "refused", "exec"),
    ("globals", "globals()", "refused", "globals"),
    ("torch-name", "torch.ones(10)", "refused", "torch.ones"),
    ("torch-bare", "torch", "name", "`torch`"),
    ("torch-attr", "torch.pi * net_output", "name", "`torch`"),
    ("torch-dunder", "torch.__dict__", "name", "`torch`"),
    ("torch-view-fn", "torch.view(net_output, -1)", "refused", "method"),
    ("torch-nested", "torch.nn.functional.softmax(att_scores, 1)", "name", "`torch`"),
    ("numpy-name", "np.fromfile('canary.txt')", "name", "`np`"),
    ("tofile", "net_output.numpy().tofile('pwned.bin')", "refused", "numpy"),
    ("numpy", "net_output.numpy()", "refused", "numpy"),
    (
        "storage-file",
        "net_output.untyped_storage().from_file('canary.txt', True, 10)",
        "refused",
        "untyped_storage",
    ),
    ("storage", "net_output.untyped_storage()", "refused", "untyped_storage"),
    ("in-place", "net_output.add_(1)", "refused", "in place"),
    ("iadd", "net_output.__iadd__(1)", "refused", "__iadd__"),
    ("setitem", "net_output.__setitem__(0, 1)", "refused", "__setitem__"),
    ("data", "net_output.data", "refused", "data"),
    ("out-kwarg", "net_output.sum(dim=1, out=att_scores)", "refused", "keyword `out`"),
    ("dtype-kwarg", "net_output.sum(dim=1, dtype=None)", "refused", "keyword `dtype`"),
    ("hook", "net_output.register_hook(print)", "refused", "register_hook"),
    ("grad", "net_output.grad", "refused", "grad"),
    ("to-cuda", "net_output.to('cuda')", "refused", "`to`"),
    ("cuda", "net_output.cuda()", "refused", "cuda"),
    ("cpu", "net_output.cpu()", "refused", "cpu"),
    ("method-unbound", "net_output.sum", "refused", "must be called"),
    ("duplicate-kwarg", "net_output.sum(dim=1, dim=2)", "syntax", "given twice"),
    ("kwargs-unpack", "net_output.sum(**{'dim': 1})", "refused", "unpacking"),
    ("args-unpack", "net_output.sum(*[1])", "refused", "unpacking"),
    ("comparison", "net_output[net_output > 0]", "refused", "comparison"),
    ("list-index", "net_output[[0, 1]]", "refused", "list"),
    ("tensor-index", "net_output[att_scores]", "type", "index"),
    ("string-op", "'ab' * 10**8", "refused", "string"),
    ("bytes", "b'x'", "refused", "bytes"),
    ("complex", "net_output * 1j", "refused", "complex"),
    ("huge-power", "net_output ** 10**9", "limit", "exponent"),
    ("power-tower", "2 ** 2 ** 2 ** 2 ** 2", "limit", "exponent"),
    ("power-chain", "((((9 ** 8) ** 8) ** 8) ** 8)", "limit", "too large"),
    ("tensor-exponent", "net_output ** net_output", "type", "exponent"),
    ("repeat", "att_scores.repeat(1000, 1000)", "refused", "repeat"),
    ("huge-expand", "att_scores[..., None].expand(2, 3, 1000000000)", "limit", "elements"),
    ("huge-expand-lead", "net_output.expand(1000000, 1000000, 2, 3, 5)", "limit", "elements"),
    (
        "huge-broadcast",
        "net_output.reshape(-1)[:, None, None, None, None] * net_output.reshape(-1)[:, None, None, None] * net_output.reshape(-1)[:, None, None] * net_output.reshape(-1)[:, None] * net_output.reshape(-1)",
        "limit",
        "elements",
    ),
    (
        "huge-matmul",
        "net_output[..., None, None].expand(2, 3, 5, 1000, 1) @ net_output[..., None, None].expand(2, 3, 5, 1, 1000)",
        "limit",
        "elements",
    ),
    (
        "huge-einsum",
        'einsum("i,j,k,l->", net_output.reshape(-1), net_output.reshape(-1), net_output.reshape(-1), net_output.reshape(-1)[None].expand(1000, 30).reshape(-1))',
        "limit",
        "",
    ),
    ("huge-reshape", "net_output.reshape(10**5, 10**5)", "shape", "elements"),
    ("merely-big", "net_output.reshape(-1)[:, None].expand(30, 30000).sum()", "ok", ""),
    ("huge-slice", "net_output[0:999999999:1, -999999999:]", "ok", ""),
    ("huge-index", "net_output[999999999]", "shape", "out of range"),
    ("huge-constant", "net_output * 1" + "0" * 40, "limit", "too large"),
    ("huge-int-literal", "1" * 2000, "limit", "too large"),
    ("inf-constant", "net_output * 1e999", "limit", "too large"),
    ("many-nones", "net_output" + "[None]" * 20, "limit", "axes"),
    ("deep-unary", "-" * 1000 + "net_output", "limit", "nested"),
    ("deep-parens", "(" * 500 + "net_output" + ")" * 500, "syntax", "not a valid expression"),
    ("deep-calls", "net_output" + ".abs()" * 60, "limit", "nested"),
    ("long-sum", " + ".join(["net_output"] * 150), "limit", ""),
    ("100kB", HUGE, "limit", "characters long"),
    ("nul", "net_output\0.sum()", "refused", "NUL"),
    ("cyrillic-a", "net_output * \u0430tt_scores[..., None]", "refused", "CYRILLIC"),
    ("fullwidth", "net_output * \uff41tt_scores[..., None]", "refused", "FULLWIDTH"),
    ("zero-width", "net_output * att_\u200bscores[..., None]", "refused", "ZERO WIDTH"),
    ("rtl-override", "net_output\u202e * att_scores", "refused", "RIGHT-TO-LEFT"),
    ("einsum-no-eq", "einsum(net_output, att_scores)", "refused", "equation"),
    (
        "einsum-bad-eq",
        "einsum('bth,bt->bh; import os', net_output, att_scores)",
        "value",
        "equation",
    ),
    (
        "einsum-kwargs",
        "einsum('bth,bt->bh', net_output, att_scores, out=net_output)",
        "refused",
        "keyword",
    ),
    ("tuple-repeat", "net_output.shape * 10**8", "type", "cannot be"),
    ("div-zero", "1 / 0", "value", "divides by zero"),
    ("empty", "   ", "syntax", "empty"),
    ("not-text", b"net_output", "type", "text"),
    ("breakpoint", "breakpoint()", "refused", "breakpoint"),
    ("yield", "(yield net_output)", "refused", "yield"),
    ("await", "await net_output", "refused", "await"),
    ("conditional", "net_output if net_output.ndim else att_scores", "refused", "conditional"),
    ("ellipsis-twice", "net_output[..., ...]", "value", "only once"),
    ("negative-step", "net_output[::-1]", "value", "positive"),
]


@pytest.fixture
def jail(tmp_path, monkeypatch):
    """Run in an empty folder holding a canary file; yield a function that checks nothing moved."""
    canary = tmp_path / "canary.txt"
    canary.write_text("tweet\n")
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path)), canary.read_bytes(), canary.stat().st_mtime_ns

    def unchanged() -> bool:
        now = sorted(os.listdir(tmp_path)), canary.read_bytes(), canary.stat().st_mtime_ns
        return now == before and Path.cwd() == tmp_path

    return unchanged


@pytest.mark.parametrize(
    ("expr", "kind", "fragment"), [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE]
)
def test_hostile_input_is_refused_or_answered_without_side_effects(jail, expr, kind, fragment):
    vs = variables((2, 3, 5))
    before = {k: v.clone() for k, v in vs.items()}
    try:
        trace = evaluate(expr, vs)
        outcome, message = "ok", ""
        assert isinstance(trace, Trace)
    except SandboxError as exc:  # any other exception fails the test by escaping
        outcome, message = exc.kind, str(exc)
    assert (outcome, fragment in message) == (kind, True), message
    if outcome != "ok":
        assert message.strip()
    for name, value in vs.items():
        assert torch.equal(value, before[name]), f"{name} changed"
    assert jail(), "the folder or the canary changed"


def test_hostile_table_has_at_least_forty_cases():
    assert len(HOSTILE) >= 40
    assert len({case[0] for case in HOSTILE}) == len(HOSTILE)


def test_nfkc_lookalike_never_reaches_a_variable():
    """Python folds fullwidth letters into ASCII in identifiers; the sandbox refuses them first."""
    err = refusal("\uff4eet_output")
    assert err.kind == "refused" and err.span == (0, 1)
    assert "'n'" in str(err)


# --------------------------------------------------------------------------------------------
# The registry, the torch. prefix and functional forms
# --------------------------------------------------------------------------------------------

# One call per registry entry, as a method and (where allowed) as torch.<name>(x, ...), with
# the same computation done by PyTorch directly.
CALLS = {
    "sum": ("net_output.sum(1)", "torch.sum(net_output, dim=1)", lambda x, w: x.sum(1)),
    "mean": ("net_output.mean(axis=2)", "torch.mean(net_output, 2)", lambda x, w: x.mean(2)),
    "amax": ("net_output.amax(0)", "torch.amax(net_output, dim=0)", lambda x, w: x.amax(0)),
    "softmax": ("att_scores.softmax(1)", "torch.softmax(att_scores, dim=1)", lambda x, w: w.softmax(1)),
    "cumsum": ("att_scores.cumsum(1)", "torch.cumsum(att_scores, 1)", lambda x, w: w.cumsum(1)),
    "unsqueeze": ("att_scores.unsqueeze(-1)", "torch.unsqueeze(att_scores, -1)", lambda x, w: w[..., None]),
    "squeeze": ("att_scores[:, None].squeeze(1)", "torch.squeeze(att_scores[:, None], 1)", lambda x, w: w),
    "transpose": ("net_output.transpose(1, 2)", "torch.transpose(net_output, 1, 2)", lambda x, w: x.transpose(1, 2)),
    "permute": ("net_output.permute(2, 0, 1)", "torch.permute(net_output, (2, 0, 1))", lambda x, w: x.permute(2, 0, 1)),
    "reshape": ("net_output.reshape(-1)", "torch.reshape(net_output, (-1,))", lambda x, w: x.reshape(-1)),
    "view": ("net_output.view(6, 5)", None, lambda x, w: x.view(6, 5)),
    "expand": ("att_scores[..., None].expand(2, 3, 5)", None, lambda x, w: w[..., None].expand(2, 3, 5)),
    "flatten": ("net_output.flatten(0, 1)", "torch.flatten(net_output, 0, 1)", lambda x, w: x.flatten(0, 1)),
    "exp": ("att_scores.exp()", "torch.exp(att_scores)", lambda x, w: w.exp()),
    "abs": ("net_output.abs()", "torch.abs(net_output)", lambda x, w: x.abs()),
    "matmul": ("att_scores[:, None].matmul(net_output)", "torch.matmul(att_scores[:, None], net_output)", lambda x, w: w[:, None] @ x),
    "einsum": ('einsum("bth,bt->bh", net_output, att_scores)', 'torch.einsum("bth,bt->bh", net_output, att_scores)', lambda x, w: torch.einsum("bth,bt->bh", x, w)),
    "bmm": ("bmm(att_scores[:, None], net_output)", "torch.bmm(att_scores[:, None], net_output)", lambda x, w: torch.bmm(w[:, None], x)),
}  # fmt: skip


def test_every_registry_entry_has_a_call_in_the_table():
    assert set(CALLS) == set(METHODS) | set(FUNCTIONS)


def test_registry_entries_are_runnable_and_functional_forms_are_flagged():
    for name, (_, functional, _) in CALLS.items():
        entry = METHODS.get(name) or FUNCTIONS[name]
        assert callable(entry.run)
        assert (functional is not None) == (name in FUNCTIONS or METHODS[name].functional)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_method_and_torch_prefix_give_pytorchs_result(name):
    vs = variables()
    method, functional, want = CALLS[name]
    expected = want(vs["net_output"], vs["att_scores"])
    for expr in (method, functional):
        if expr is not None:
            assert_close(evaluate(expr, vs).result, expected)


@pytest.mark.parametrize("name", [n for n, m in METHODS.items() if not m.functional])
def test_a_method_without_a_functional_form_is_refused_as_torch_call(name):
    err = refusal(f"torch.{name}(net_output, -1)")
    assert err.kind is ErrorKind.REFUSED and f"x.{name}(" in str(err)


def test_sandbox_step_is_renamed_node():
    from attnviz import sandbox

    assert not hasattr(sandbox, "Step")
    assert all(isinstance(s, Node) for s in evaluate(RIGHT, variables()).steps)


def test_error_kinds_are_an_enum_and_compare_as_values():
    err = refusal("nope")
    assert err.kind is ErrorKind.NAME and err.kind == "name"
    assert set(ERROR_KINDS) == {k.value for k in ErrorKind}


# --------------------------------------------------------------------------------------------
# einsum with an ellipsis: 1, 2 and 3 operands, torch.broadcast_shapes semantics
# --------------------------------------------------------------------------------------------

ELLIPSIS = [
    ("...->...", [(2, 3)]),
    ("...->", [(2, 3, 4)]),
    ("...", [(2, 3)]),
    ("i...->i", [(2, 3, 4)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("...,...->...", [(2, 3), (4,)]),  # does not broadcast
    ("b...,b...->b...", [(2, 3), (2, 3)]),
    ("...th,...t->...h", [(2, 3, 5), (2, 3)]),
    ("...th,...t->...h", [(2, 3, 5), (4, 3)]),  # 2 meets 4
    ("i...,...->i", [(2, 3), (3,)]),
    ("...,...,...->...", [(2, 3), (1, 3), (3,)]),
    ("...,...,...->...", [(2, 3), (1, 4), (3,)]),  # does not broadcast
    ("b...,b...,b...->b", [(2, 3), (2, 1), (2, 3)]),
    ("i...,...j,k...->ijk", [(2, 3), (3, 4), (5, 3)]),
    ("...a,a...,...->...", [(3, 2), (2, 3), (3,)]),
    ("...,...,...->...", [(2, 3), (3,)]),  # wrong operand count
]


@pytest.mark.parametrize(("eq", "shapes"), ELLIPSIS, ids=[f"{e}-{s}" for e, s in ELLIPSIS])
def test_einsum_ellipsis_gives_pytorchs_result_or_a_plain_message(eq, shapes):
    g = torch.Generator().manual_seed(0)
    ops = [torch.randn(*s, generator=g, dtype=torch.float64) for s in shapes]
    vs = {f"t{i}": t for i, t in enumerate(ops)}
    expr = f'torch.einsum("{eq}", {", ".join(vs)})'
    try:
        want = torch.einsum(eq, *ops)
    except RuntimeError:
        want = None
    if want is None:
        err = refusal(expr, vs)
        assert err.kind in (ErrorKind.SHAPE, ErrorKind.VALUE, ErrorKind.TYPE), str(err)
    else:
        assert_close(evaluate(expr, vs).result, want)


# --------------------------------------------------------------------------------------------
# Memory: distinct storages counted in bytes; a trace never holds a large storage
# --------------------------------------------------------------------------------------------

ATTACK = "(net_output.view(-1)[:,None]*att_scores[:1,:1].expand(1,{n}))[:1,:1]" + ".T" * 28


def test_views_add_no_bytes():
    vs = variables((2, 3, 5), dtype=torch.float32)
    base = evaluate("net_output", vs).bytes_touched
    assert base == 2 * 3 * 5 * 4
    assert evaluate("net_output.T.T[:, :1][None].expand(4, 2, 3, 5)", vs).bytes_touched == base


def test_every_distinct_storage_is_counted_once():
    vs = variables((2, 3, 5), dtype=torch.float32)
    trace = evaluate("net_output * 2 + net_output", vs)
    assert trace.bytes_touched == 3 * (2 * 3 * 5 * 4)  # the variable, the product, the sum


def test_memory_attack_counts_the_large_storage_once():
    vs = variables((2, 3, 5), dtype=torch.float32)
    trace = evaluate(ATTACK.format(n=30_000), vs)
    product = 30 * 30_000 * 4
    assert product <= trace.bytes_touched < product + 4096


def test_memory_attack_trace_keeps_no_large_storage():
    vs = variables((2, 3, 5), dtype=torch.float32)
    trace = evaluate(ATTACK.format(n=30_000), vs)
    kept = [s.value for s in trace.steps if isinstance(s.value, torch.Tensor)]
    assert all(v.untyped_storage().nbytes() == v.numel() * v.element_size() for v in kept)
    assert len(pickle.dumps(trace)) < 64 * 1024  # the storage is 3.6 MB; 36 steps kept views


def test_byte_budget_refuses_before_allocation():
    vs = variables((2, 3, 5), dtype=torch.float32)
    err = refusal(ATTACK.format(n=30_000), vs, limits=Limits(max_bytes=1_000_000))
    assert err.kind is ErrorKind.LIMIT and "3,600,144 bytes" in str(err)  # product + both inputs
    # refused on the shape-only pass: the real pass stops before the product, never making it
    assert all(s.shape != (30, 30_000) for s in err.trace.steps)
