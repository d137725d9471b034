"""attnviz.verdict: an answer typed into the expression box is judged by its numbers against the
float64 reference, on shapes where T == H and where all axes differ."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from attnviz import examples, hidden, tolerance, trace
from attnviz.aggregation import weighted_sum
from attnviz.sandbox import SandboxError, evaluate
from attnviz.verdict import Outcome, judge, judge_expression, mistakes

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
        ("(net_output * att_scores[..., None]).mean(1)", "mean_not_sum", None, False),
        ("(net_output * att_scores[..., None]).sum(1)", "forgot_softmax", "softmax", False),
        (
            "(net_output * att_scores.softmax(1)[..., None]).sum(1)",
            "softmaxed_weights",
            None,
            False,
        ),
        ("(net_output * att_scores[..., None]).sum(1)", "ignored_mask", None, True),
        (
            "(net_output * (att_scores.softmax(1) * mask)[..., None]).sum(1)",
            "mask_after_softmax",
            "softmax",
            True,
        ),
        (
            "(net_output * att_scores.softmax(0)[..., None]).sum(1)",
            "softmax_over_sentences",
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
    assert v.mistake is not None and v.mistake.key == "axis_in_middle"
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
    assert len({m.key for m in mistakes()}) == len(mistakes())
    assert all(m.fix and m.title for m in mistakes())


@pytest.mark.parametrize(
    ("expr", "key"),
    [
        ("(net_output * att_scores[..., None]).sum(1).T", "transposed_result"),
        ("(net_output * att_scores[..., None]).sum(0)", "summed_sentences"),
        ("(net_output * att_scores).sum(1)", "forgot_new_axis"),
    ],
)
def test_mistakes_that_need_b_t_and_h_equal_are_named_when_they_are(expr, key):
    x, w = inputs((3, 3, 3))
    v = judge(run(expr, x, w), x, w)
    assert v.outcome is Outcome.WRONG_NUMBERS
    assert v.mistake is not None and v.mistake.key == key, v.message


# ---- judged beyond the example: hidden inputs -----------------------------------------------------

PRESETS = ["uniform", "one-hot", "classic", "random"]
PRESET_SHAPES = [(2, 4, 4), (3, 3, 3), (2, 3, 5), (1, 3, 4)]  # T == H (twice), then T != H

WRONG_FORMS = {
    "mean over words": "net_output.mean(1)",
    "the T == H trap": "(net_output * att_scores[:, None]).sum(1)",
    "renormalised": "(net_output * (att_scores/att_scores.sum(1, keepdim=True))[..., None]).sum(1)",
    "max over words": "(net_output * att_scores[..., None]).amax(1)",
    "sum / T": "net_output.sum(1) / net_output.shape[1]",
    "sum / T written in": "net_output.sum(1) / 4",
    "the hot word": "net_output[:, 1]",
}

HIDDEN_RIGHT_FORMS = [
    *RIGHT_FORMS,
    "(net_output * att_scores.view(*att_scores.shape, 1)).sum(1)",
    "(net_output * att_scores.reshape((*att_scores.shape, 1))).sum(1)",
    "(net_output * att_scores.view(att_scores.size(0), att_scores.size(1), 1)).sum(dim=1)",
    "(net_output * att_scores.view(*att_scores.size(), 1)).sum(1)",
    "(net_output.double() * att_scores.double()[..., None]).sum(1)",
    "(net_output.float() * att_scores.float()[..., None]).sum(1)",
    "(net_output * att_scores[..., None, ...]).sum(1)",
    "(net_output[..., ..., :] * att_scores[..., None]).sum(1)",
    "(net_output * att_scores[..., None]).sum(dim=(1,))",
    "torch.bmm(att_scores[:, None, :], net_output).squeeze(1).squeeze(())",
    "(net_output * att_scores[..., None].repeat(1, 1, net_output.shape[2])).sum(1)",
    "(net_output * att_scores[..., None].tile(net_output.size(-1))).sum(1)",
    "(net_output * att_scores[..., None].expand(*net_output.shape)).sum(1)",
    'torch.einsum("bth,bt,b,b,b->bh", net_output, att_scores, att_scores[:, 0] * 0 + 1, '
    "att_scores[:, 0] * 0 + 1, att_scores[:, 0] * 0 + 1)",
]


def _preset_verdict(expr: str, name: str, shape):
    ex = examples.preset(name, *shape)
    vs = {"net_output": ex.net_output, "att_scores": ex.att_scores}
    tr = evaluate(expr, vs)
    return tr, judge_expression(expr, tr, ex.net_output, ex.att_scores)


def _runs(expr, name, shape) -> bool:
    ex = examples.preset(name, *shape)
    try:
        evaluate(expr, {"net_output": ex.net_output, "att_scores": ex.att_scores})
    except SandboxError:
        return False
    return True


@pytest.mark.parametrize("shape", PRESET_SHAPES)
@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("form", sorted(WRONG_FORMS))
def test_the_box_approves_no_wrong_form_on_any_preset_and_shape(form, name, shape):
    expr = WRONG_FORMS[form]
    if not _runs(expr, name, shape):
        return  # a shape error on these sizes: nothing to approve
    _, v = _preset_verdict(expr, name, shape)
    assert not v.right, v.message
    assert v.outcome in (Outcome.EXAMPLE_ONLY, Outcome.WRONG_NUMBERS, Outcome.OTHER_SHAPE)


def _fooled(expr: str) -> list[tuple[str, tuple]]:
    """Where judging the example alone (judge) calls expr right."""
    out = []
    for name in PRESETS:
        for shape in PRESET_SHAPES:
            if _runs(expr, name, shape):
                ex = examples.preset(name, *shape)
                tr = evaluate(expr, {"net_output": ex.net_output, "att_scores": ex.att_scores})
                if judge(tr.result, ex.net_output, ex.att_scores).right:
                    out.append((name, shape))
    return out


@pytest.mark.parametrize("form", sorted(WRONG_FORMS))
def test_every_wrong_form_matches_some_preset_so_the_hidden_inputs_matter(form):
    """Each wrong form is right by the example's numbers alone somewhere (judge approves it
    there): the test above can fail, and only the hidden inputs tell it apart."""
    assert _fooled(WRONG_FORMS[form]), f"{form} never matches a preset's numbers"


@pytest.mark.parametrize(("name", "shape"), [("uniform", (2, 4, 4)), ("one-hot", (1, 3, 4))])
@pytest.mark.parametrize("expr", HIDDEN_RIGHT_FORMS)
def test_the_box_approves_every_right_form(expr, name, shape):
    _, v = _preset_verdict(expr, name, shape)
    assert v.outcome is Outcome.RIGHT, v.message
    assert len(v.checked) == 3


@pytest.mark.slow
@pytest.mark.parametrize("shape", PRESET_SHAPES)
@pytest.mark.parametrize("name", PRESETS)
def test_the_box_approves_every_right_form_on_every_preset_and_shape(name, shape):
    for expr in HIDDEN_RIGHT_FORMS:
        _, v = _preset_verdict(expr, name, shape)
        assert v.outcome is Outcome.RIGHT, (expr, v.message)


@pytest.mark.parametrize(
    ("expr", "name", "shape", "because"),
    [
        ("net_output.mean(1)", "uniform", (2, 4, 4), "every weight in this example is 1/T = 1/4"),
        ("net_output.sum(1) / 3", "uniform", (2, 3, 5), "1/T = 1/3"),
        (WRONG_FORMS["the T == H trap"], "uniform", (2, 4, 4), "1/T = 1/4"),
        (WRONG_FORMS["renormalised"], "classic", (2, 3, 5), "weights already sum to 1"),
        (WRONG_FORMS["max over words"], "one-hot", (2, 3, 5), "every weight here is 0 or 1"),
        (WRONG_FORMS["max over words"], "one-hot", (2, 3, 5), "no negative numbers"),
        (
            "(net_output * att_scores[..., None]).sum(1) + 0 * (net_output[:, 0, :] * att_scores)",
            "random",
            (2, 4, 4),
            "T == H here (4)",
        ),
        ("(net_output * att_scores.view(2, 3, 1)).sum(1)", "classic", (2, 3, 5), "sizes (2, 3, 5)"),
    ],
)
def test_right_here_only_says_which_property_of_the_example_made_it_match(
    expr, name, shape, because
):
    _, v = _preset_verdict(expr, name, shape)
    assert v.outcome is Outcome.EXAMPLE_ONLY
    assert any(because in r for r in v.reasons), v.reasons
    assert because in v.message


def test_a_renormalised_answer_does_not_blame_the_uniform_weights():
    _, v = _preset_verdict(WRONG_FORMS["renormalised"], "uniform", (2, 4, 4))
    assert v.reasons == ("each sentence's weights already sum to 1 here",)


def test_the_mean_names_one_over_t_not_also_the_sum_it_implies():
    _, v = _preset_verdict("(net_output * att_scores[..., None]).mean(1) * 4", "uniform", (2, 4, 4))
    assert [r for r in v.reasons if "sum to 1" in r] == [], v.reasons


def test_the_trap_on_hidden_inputs_is_named():
    _, v = _preset_verdict(WRONG_FORMS["the T == H trap"], "uniform", (2, 4, 4))
    assert v.mistake is not None and v.mistake.key == "axis_in_middle"


@pytest.mark.parametrize("expr", ["net_output.mean(1)", "net_output.sum(1) / 4"])
def test_an_answer_without_att_scores_is_never_right_and_says_so(expr):
    _, v = _preset_verdict(expr, "uniform", (2, 4, 4))
    assert v.outcome is Outcome.EXAMPLE_ONLY
    assert v.reasons[0].startswith("it never uses att_scores")


def test_an_answer_without_att_scores_is_refused_even_if_hidden_inputs_agreed(monkeypatch):
    """The explicit rule, apart from the hidden inputs: here they are all made uniform too."""
    real = hidden.cases

    def uniform_cases(shape, dtypes, **kw):
        return tuple(
            hidden.Case(c.label, c.net_output, torch.full_like(c.att_scores, 1 / c.shape[1]))
            for c in real(shape, dtypes, **kw)
        )

    monkeypatch.setattr(hidden, "cases", uniform_cases)
    _, v = _preset_verdict("net_output.mean(1)", "uniform", (2, 4, 4))
    assert v.outcome is Outcome.EXAMPLE_ONLY and "never uses att_scores" in v.message


@pytest.mark.parametrize(("name", "normalize"), [("padded", None), ("softmax", "softmax")])
def test_masked_and_softmax_examples_are_judged_with_hidden_masks_and_scores(name, normalize):
    ex = examples.preset(name, 2, 4, 4)
    vs = {"net_output": ex.net_output, "att_scores": ex.att_scores}
    if ex.mask is not None:
        vs["mask"] = ex.mask
    right = (
        "(net_output * ((att_scores + (mask * 1.0 - 1) * 1e9).softmax(1) * mask)[..., None]).sum(1)"
        if normalize
        else "(net_output * (att_scores * mask)[..., None]).sum(1)"
    )
    if normalize and ex.mask is None:
        right = "(net_output * att_scores.softmax(1)[..., None]).sum(1)"
    forgot = "(net_output * att_scores[..., None]).sum(1)"
    for expr, want in ((right, True), (forgot, False)):
        tr = evaluate(expr, vs)
        v = judge_expression(
            expr, tr, ex.net_output, ex.att_scores, mask=ex.mask, normalize=ex.normalize
        )
        assert v.right is want, (expr, v.message)


def test_forgetting_the_mask_on_the_padded_preset_names_the_zeros():
    ex = examples.preset("padded", 2, 4, 4)
    vs = {"net_output": ex.net_output, "att_scores": ex.att_scores, "mask": ex.mask}
    expr = "(net_output * att_scores[..., None]).sum(1)"
    tr = evaluate(expr, vs)
    assert judge(tr.result, ex.net_output, ex.att_scores, mask=ex.mask).right  # fooled alone
    v = judge_expression(expr, tr, ex.net_output, ex.att_scores, mask=ex.mask)
    assert v.outcome is Outcome.EXAMPLE_ONLY and "masked words" in v.message
    assert v.mistake is not None and v.mistake.key == "ignored_mask"


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 4, 4), (4, 8, 16), (1, 1, 1)])
def test_hidden_cases_have_the_shapes_and_none_of_the_accidents(shape):
    same, square, single = hidden.cases(shape, masked=True)
    assert same.shape == shape
    b, t, h = square.shape
    assert t == h and b != t
    b, t, h = single.shape
    assert b == 1 and t != h and 1 not in (t, h)
    for c in (same, square, single):
        w = c.att_scores.double()
        if c.shape[1] > 1:
            assert bool((w.amax(1) - w.amin(1) > 0.01).all())  # no sentence with equal weights
        assert bool(((w.sum(1) - 1).abs() > 0.05).all())  # no row sums to 1
        assert not bool(((w == 0) | (w == 1)).all())
        if c.net_output.numel() >= 4:
            assert bool((c.net_output < 0).any()) and bool((c.net_output > 0).any())
        assert bool(c.mask[:, 0].all())
    assert not bool(same.mask.all()) or shape[1] == 1


def test_hidden_cases_are_the_same_for_the_same_example():
    a, b = hidden.cases((2, 3, 5)), hidden.cases((2, 3, 5))
    assert all(torch.equal(x.net_output, y.net_output) for x, y in zip(a, b, strict=True))
