"""The expression sandbox's language: shapes and numbers, PyTorch's results and broadcasting,
the messages for each kind of mistake, the limits, the registry of methods and functions (with the
torch. prefix) and einsum with an ellipsis.

Every evaluation either returns a Trace or raises SandboxError (an AttnvizError) with a message.
"""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sandbox_inputs import RIGHT, random_inputs, refusal, variables
from torch.testing import assert_close

from attnviz.sandbox import (
    ERROR_KINDS,
    FUNCTIONS,
    METHODS,
    ErrorKind,
    Limits,
    Node,
    SandboxError,
    evaluate,
    pointer,
)

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
        ("net_output.max(1)", "Use .amax(dim) instead"),
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
    "size": ("net_output.size(1)", None, lambda x, w: x.size(1)),
    "double": ("att_scores.float().double()", None, lambda x, w: w.float().double()),
    "float": ("att_scores.float()", None, lambda x, w: w.float()),
    "round": ("net_output.round(decimals=1)", "torch.round(net_output, decimals=1)", lambda x, w: x.round(decimals=1)),
    "repeat": ("att_scores.repeat(2, 1, 2)", None, lambda x, w: w.repeat(2, 1, 2)),
    "tile": ("att_scores.tile(2)", "torch.tile(att_scores, (2,))", lambda x, w: w.tile(2)),
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
