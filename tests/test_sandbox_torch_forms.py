"""The sandbox agrees with PyTorch itself on every form a student may write: `*` unpacking,
.size(), .double()/.float(), .round(), .repeat/.tile, einsum with any number of operands,
several ... in one index, dim=() and squeeze(()). Where PyTorch refuses, the sandbox refuses too;
what it does not run is refused as "not supported here", never as an unknown name."""

import itertools

import pytest
import torch
from sandbox_inputs import refusal, variables
from torch.testing import assert_close

from attnviz.sandbox import ErrorKind, evaluate
from attnviz.sandbox.tiling import expand_instead

# (expression, what PyTorch gives for x = net_output (2, 3, 5), w = att_scores (2, 3))
FORMS = [
    ("att_scores.view(*att_scores.shape, 1)", lambda x, w: w.view(*w.shape, 1)),
    ("att_scores.reshape((*att_scores.shape, 1))", lambda x, w: w.reshape((*w.shape, 1))),
    ("att_scores[..., None].expand(*net_output.shape)", lambda x, w: w[..., None].expand(*x.shape)),
    ("net_output.sum(*[1])", lambda x, w: x.sum(*[1])),
    ("net_output.permute(*(2, 0, 1))", lambda x, w: x.permute(*(2, 0, 1))),
    ("net_output.size()", lambda x, w: tuple(x.size())),
    ("net_output.size(0)", lambda x, w: x.size(0)),
    ("net_output.size(-1)", lambda x, w: x.size(-1)),
    ("net_output.size(dim=1)", lambda x, w: x.size(dim=1)),
    ("att_scores.float()", lambda x, w: w.float()),
    ("att_scores.float().double()", lambda x, w: w.float().double()),
    ("(att_scores * 10).round()", lambda x, w: (w * 10).round()),
    ("net_output.round(decimals=2)", lambda x, w: x.round(decimals=2)),
    ("torch.round(net_output, decimals=1)", lambda x, w: torch.round(x, decimals=1)),
    ("att_scores.repeat(2, 1, 3)", lambda x, w: w.repeat(2, 1, 3)),
    ("att_scores[..., None].repeat(1, 1, 5)", lambda x, w: w[..., None].repeat(1, 1, 5)),
    ("att_scores.tile(2)", lambda x, w: w.tile(2)),
    ("att_scores.tile((3, 1, 1))", lambda x, w: w.tile((3, 1, 1))),
    ("net_output.sum(dim=())", lambda x, w: x.sum(dim=())),
    ("net_output.sum(dim=(), keepdim=True)", lambda x, w: x.sum(dim=(), keepdim=True)),
    ("net_output.mean(dim=())", lambda x, w: x.mean(dim=())),
    ("net_output.amax(dim=())", lambda x, w: x.amax(dim=())),
    ("net_output.amax(dim=[], keepdim=True)", lambda x, w: x.amax(dim=[], keepdim=True)),
    ("torch.sum(net_output, ())", lambda x, w: torch.sum(x, ())),
    ("net_output.squeeze(())", lambda x, w: x.squeeze(())),
    ("net_output[:, :1].squeeze(())", lambda x, w: x[:, :1].squeeze(())),
    ("net_output[..., ..., :, :]", lambda x, w: x[..., ..., :, :]),
    ("net_output[..., ...]", lambda x, w: x[..., ...]),
    ("net_output[..., 0, ...]", lambda x, w: x[..., 0, ...]),
    ("net_output[..., None, ...]", lambda x, w: x[..., None, ...]),
    ("net_output[0, ..., ..., :]", lambda x, w: x[0, ..., ..., :]),
    ("net_output[..., 1:, ...]", lambda x, w: x[..., 1:, ...]),
    ("att_scores[..., None, ...]", lambda x, w: w[..., None, ...]),
    ("net_output[*(0, 1)]", lambda x, w: x[0, 1]),
]
for n in range(1, 8):  # einsum with 1 to 7 operands
    letters = ",".join(["bth"] + ["bt"] * (n - 1))
    FORMS.append(
        (
            f'einsum("{letters}->bh", net_output{", att_scores" * (n - 1)})',
            lambda x, w, n=n, letters=letters: torch.einsum(f"{letters}->bh", x, *[w] * (n - 1)),
        )
    )


@pytest.mark.parametrize(("expr", "want"), FORMS, ids=[f for f, _ in FORMS])
def test_the_sandbox_gives_what_torch_gives(expr, want):
    vs = variables()
    got = evaluate(expr, vs).result
    expected = want(vs["net_output"], vs["att_scores"])
    if isinstance(expected, torch.Tensor):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert_close(got, expected, rtol=0, atol=0)
    else:
        assert got == expected


# (expression, the same in PyTorch, which raises) for x = net_output, w = att_scores, m = mask
REFUSED_BY_TORCH = [
    ("net_output[..., 0, ..., 1]", lambda x, w, m: x[..., 0, ..., 1]),
    ("att_scores[..., ..., None]", lambda x, w, m: w[..., ..., None]),
    ("net_output[0, 0, 0, ..., ..., 0]", lambda x, w, m: x[0, 0, 0, ..., ..., 0]),
    ("att_scores.repeat(2)", lambda x, w, m: w.repeat(2)),
    ("net_output[0, ..., ..., 1:]", lambda x, w, m: x[0, ..., ..., 1:]),
    ("net_output.size(3)", lambda x, w, m: x.size(3)),
    ("mask.round()", lambda x, w, m: m.round()),
    ("net_output.sum(dim=(1, 1))", lambda x, w, m: x.sum(dim=(1, 1))),
]


@pytest.mark.parametrize(
    ("expr", "torch_form"), REFUSED_BY_TORCH, ids=[e for e, _ in REFUSED_BY_TORCH]
)
def test_what_torch_refuses_the_sandbox_refuses_as_a_mistake(expr, torch_form):
    vs = variables()
    vs["mask"] = torch.ones(2, 3, dtype=torch.bool)
    with pytest.raises((IndexError, RuntimeError, NotImplementedError)):
        torch_form(vs["net_output"], vs["att_scores"], vs["mask"])
    err = refusal(expr, vs)
    assert err.kind not in (ErrorKind.REFUSED, ErrorKind.INTERNAL), err.message


def _index_text(item) -> str:
    if item is Ellipsis:
        return "..."
    if item is None or isinstance(item, int):
        return str(item)
    parts = ["" if v is None else str(v) for v in (item.start, item.stop)]
    return ":".join(parts) + ("" if item.step is None else f":{item.step}")


ITEMS = [Ellipsis, None, 0, -1, slice(None), slice(1, None), slice(None, None, 2), 4]
SEVERAL = [
    c
    for n in (2, 3, 4)
    for c in itertools.product(ITEMS, repeat=n)
    if sum(i is Ellipsis for i in c) >= 2
]


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 5), (1, 2, 3, 5)])
def test_several_ellipses_agree_with_torch_on_every_small_index(shape):
    """Every index of 2 to 4 items with at least two ... (hundreds): same values, or both refuse."""
    x = torch.arange(float(torch.tensor(shape).prod())).reshape(shape)
    for items in SEVERAL:
        text = f"x[{', '.join(_index_text(i) for i in items)}]"
        try:
            want = x[items]
        except (IndexError, RuntimeError):
            want = None
        if want is None:
            refusal(text, {"x": x})
        else:
            got = evaluate(text, {"x": x}).result
            assert got.shape == want.shape and torch.equal(got, want), text


@pytest.mark.parametrize(
    "expr",
    [
        "net_output.view(torch.int32)",
        "net_output.view(torch.float16)",
        "torch.float64",
        "torch.pi * net_output",
        "net_output.sum(**{'dim': 1})",
        "net_output.sum(*net_output)",
    ],
)
def test_what_the_sandbox_does_not_run_is_refused_neutrally(expr):
    err = refusal(expr)
    assert err.kind is ErrorKind.REFUSED
    assert err.message.startswith("not supported here")
    assert "not defined" not in err.message


@pytest.mark.parametrize(
    ("shape", "counts", "hint"),
    [
        ((2, 3, 1), (1, 1, 5), ".expand(2, 3, 5)"),
        ((1, 3), (4, 1), ".expand(4, 3)"),
        ((3,), (2, 1), ".expand(2, 3)"),
        ((2, 3), (1, 2), None),  # axis 1 has size 3: only a copy tiles it
        ((2, 3, 1), (2, 1, 5), None),
        ((1,), (0,), None),
    ],
)
def test_the_repeat_note_offers_expand_only_where_expand_gives_the_same(shape, counts, hint):
    assert expand_instead(shape, counts) == hint
    x = torch.rand(shape)
    if hint is not None:  # the oracle: the suggested expand gives repeat's numbers
        sizes = tuple(int(s) for s in hint[len(".expand(") : -1].split(", "))
        assert torch.equal(x.expand(*sizes), x.repeat(*counts))
    note = evaluate(f"x.repeat{counts}", {"x": x}).steps[-1].note
    assert (hint in note) if hint else ("expand cannot do this" in note)
