"""attnviz.verdict: an answer typed into the expression box is judged by its numbers against the
float64 reference, on shapes where T == H and where all axes differ."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from attnviz import tolerance, trace
from attnviz.aggregation import weighted_sum
from attnviz.sandbox import evaluate
from attnviz.verdict import MISTAKES, Outcome, judge

SHAPES = [
    (2, 3, 5),
    (4, 3, 2),
    (3, 5, 4),
    (2, 3, 3),
    (3, 4, 4),
    (3, 3, 3),
]  # all differ; T == H; all equal
SEEDS = [0, 1, 2]


def inputs(shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)  # (B,T,H)
    w = torch.rand(shape[:2], generator=g, dtype=torch.float64).to(dtype)  # (B,T)
    return x, w


def run(expr, x, w, mask=None):
    vs = {"net_output": x, "att_scores": w}
    if mask is not None:
        vs["mask"] = mask
    return evaluate(expr, vs).result


def gallery_cases(keep=lambda m: True):
    """(shape, seed, key, variant) of every gallery form for which keep(Mistake) holds."""
    for shape in SHAPES:
        for seed in SEEDS:
            x, w = inputs(shape, seed)
            for m in trace.mistakes(x, w):
                if keep(m):
                    tag = f"{m.key}-{shape}-{seed}" + ("-variant" if m.variant else "")
                    yield pytest.param(shape, seed, m.key, m.variant, id=tag)


def _gallery_item(shape, seed, key, variant):
    x, w = inputs(shape, seed)
    m = next(m for m in trace.mistakes(x, w) if m.key == key and m.variant == variant)
    xi, wi = trace.square_variant(x, w) if variant else (x, w)
    normalize = "softmax" if "softmax" in m.expected_code else None
    return m, xi, wi, normalize


RUNS = list(gallery_cases(lambda m: m.error is None))  # a form that raises is explained instead
SILENT = list(gallery_cases(lambda m: m.silent))  # (B, H) and wrong numbers


def test_gallery_has_silent_forms_on_every_shape():
    assert {p.values[0] for p in SILENT} == set(SHAPES)


@pytest.mark.parametrize(("shape", "seed", "key", "variant"), RUNS)
def test_gallery_form_is_right_exactly_when_it_is_the_right_form(shape, seed, key, variant):
    m, x, w, normalize = _gallery_item(shape, seed, key, variant)
    v = judge(run(m.code, x, w), x, w, normalize=normalize)
    assert (v.outcome is Outcome.RIGHT) == (key == "right"), v.message


@pytest.mark.parametrize(("shape", "seed", "key", "variant"), SILENT)
def test_silently_wrong_gallery_form_is_named(shape, seed, key, variant):
    m, x, w, normalize = _gallery_item(shape, seed, key, variant)
    v = judge(run(m.code, x, w), x, w, normalize=normalize)
    assert v.outcome is Outcome.WRONG_NUMBERS
    assert key in {f.key for f in v.matches}, v.message  # forms may coincide on these sizes


RIGHT_FORMS = [
    "(net_output * att_scores[..., None]).sum(axis=1)",  # broadcast
    "(att_scores.unsqueeze(-1) * net_output).sum(dim=-2)",  # broadcast, other spelling
    'einsum("bth,bt->bh", net_output, att_scores)',  # einsum
    'torch.einsum("bth,bt->bh", net_output, att_scores)',
    'torch.einsum("...th,...t->...h", net_output, att_scores)',
    "torch.bmm(att_scores[:, None, :], net_output)[:, 0, :]",  # bmm / matmul
    "torch.matmul(att_scores.unsqueeze(1), net_output).squeeze(1)",
    "(net_output.transpose(1, 2) @ att_scores[..., None])[..., 0]",  # transposes
    "(net_output.permute(2, 0, 1) * att_scores).sum(2).T",
    "(net_output * att_scores[..., None]).cumsum(1)[:, -1, :]",  # loop-free: cumsum
    "(net_output * att_scores[..., None]).cumsum(1)[:, -1] - 0 * net_output[:, 0]",
    "torch.sum(net_output * att_scores[..., None], dim=1)",  # the functional form
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("expr", RIGHT_FORMS)
def test_right_answer_written_any_way_is_right(expr, shape):
    x, w = inputs(shape)
    v = judge(run(expr, x, w), x, w)
    assert v.outcome is Outcome.RIGHT, v.message


@pytest.mark.parametrize("shape", SHAPES)
def test_right_answer_with_softmax_and_mask_is_right(shape):
    x, w = inputs(shape)
    mask = torch.ones(shape[:2], dtype=torch.bool)
    mask[:, -1] = False
    expr = (
        "(net_output * ((att_scores + (mask * 1.0 - 1) * 1e9).softmax(1) * mask)[..., None]).sum(1)"
    )
    v = judge(run(expr, x, w, mask), x, w, mask=mask, normalize="softmax")
    assert v.outcome is Outcome.RIGHT, v.message


@pytest.mark.parametrize(
    ("expr", "key", "normalize", "masked"),
    [
        ("(net_output * att_scores[..., None]).mean(1)", "mean", None, False),
        ("(net_output * att_scores[..., None]).sum(1)", "missing_softmax", "softmax", False),
        ("(net_output * att_scores.softmax(1)[..., None]).sum(1)", "extra_softmax", None, False),
        ("(net_output * att_scores[..., None]).sum(1)", "missing_mask", None, True),
        (
            "(net_output * (att_scores.softmax(1) * mask)[..., None]).sum(1)",
            "mask_after_softmax",
            "softmax",
            True,
        ),
        (
            "(net_output * att_scores.softmax(0)[..., None]).sum(1)",
            "softmax_wrong_axis",
            None,
            False,
        ),
    ],
)
@pytest.mark.parametrize("shape", SHAPES)
def test_known_mistake_is_named(expr, key, normalize, masked, shape):
    x, w = inputs(shape)
    mask = None
    if masked:
        mask = torch.ones(shape[:2], dtype=torch.bool)
        mask[0, 0] = False
    v = judge(run(expr, x, w, mask), x, w, mask=mask, normalize=normalize)
    assert v.outcome is Outcome.WRONG_NUMBERS
    assert v.mistake is not None and v.mistake.key == key, v.message


@pytest.mark.parametrize("shape", [(2, 3, 3), (3, 4, 4)])
def test_t_equals_h_trap_marks_the_differing_cells(shape):
    x, w = inputs(shape)
    got = run("(net_output * att_scores[:, None, :]).sum(1)", x, w)
    v = judge(got, x, w)
    assert v.mistake is not None and v.mistake.key == "middle_axis"
    want = tolerance.mismatch(got, weighted_sum(x.double(), w.double()))
    assert torch.equal(v.wrong, want) and bool(v.wrong.any())


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("net_output * att_scores[..., None]", "before the sum"),
        ("(net_output * att_scores[..., None]).sum(1, keepdim=True)", "keepdim"),
        ("(net_output * att_scores[..., None]).sum(axis=0)", "sentences"),
        ("att_scores", "the weights"),
        ("net_output[0]", "Which axis"),
    ],
)
def test_other_shape_says_what_it_is(expr, says):
    x, w = inputs((2, 3, 5))
    v = judge(run(expr, x, w), x, w)
    assert v.outcome is Outcome.OTHER_SHAPE and v.expected_shape == (2, 5)
    assert says in v.message


def test_a_shape_is_not_a_tensor():
    x, w = inputs((2, 3, 5))
    v = judge(run("net_output.shape", x, w), x, w)
    assert v.outcome is Outcome.NOT_A_TENSOR


def test_unnamed_wrong_numbers_are_counted_not_guessed():
    x, w = inputs((2, 3, 5))
    got = run("(net_output * att_scores[..., None]).sum(1) + 1", x, w)
    v = judge(got, x, w)
    assert v.outcome is Outcome.WRONG_NUMBERS and v.mistake is None
    assert "10 of 10 cells" in v.message


def test_expected_is_the_float64_reference():
    x, w = inputs((3, 4, 2))
    v = judge(torch.zeros(3, 2), x, w)
    assert v.expected.dtype == torch.float64
    assert_close(v.expected, weighted_sum(x.double(), w.double()))


def test_every_mistake_has_a_fix_and_a_unique_key():
    assert len({m.key for m in MISTAKES}) == len(MISTAKES)
    assert all(m.fix and m.title for m in MISTAKES)


@pytest.mark.parametrize(
    ("expr", "key"),
    [
        ("(net_output * att_scores[..., None]).sum(1).T", "transposed"),
        ("(net_output * att_scores[..., None]).sum(0)", "sum_sentences"),
        ("(net_output * att_scores).sum(1)", "no_new_axis"),
    ],
)
def test_mistakes_that_need_b_t_and_h_equal_are_named_when_they_are(expr, key):
    x, w = inputs((3, 3, 3))
    v = judge(run(expr, x, w), x, w)
    assert v.outcome is Outcome.WRONG_NUMBERS
    assert v.mistake is not None and v.mistake.key == key, v.message
