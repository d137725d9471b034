"""attnviz.forms: the one catalogue of wrong forms. Each form's code computes what its run
computes (the sandbox is the oracle), the trap slide's form is named, and a form registered in the
catalogue alone reaches the gallery, the verdict and the lesson checker."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from attnviz import forms, trace, verdict
from attnviz.aggregation import attention_weights
from attnviz.exercises import check_weighted_sum
from attnviz.sandbox import SandboxError, evaluate

SHAPES = [(2, 3, 5), (3, 4, 4), (1, 3, 3), (4, 2, 3)]  # all differ; T == H; B = 1; B > T
SETTINGS = [(None, False), ("softmax", False), (None, True), ("softmax", True)]


def example(shape, normalize, masked, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)  # (B,T,H)
    s = torch.randn(shape[:2], generator=g, dtype=torch.float64)  # (B,T)
    mask = None
    if masked:
        mask = torch.rand(shape[:2], generator=g) < 0.7  # (B,T)
        mask[:, 0] = True
    a = attention_weights(s, mask=mask, normalize=normalize)  # (B,T)
    return forms.Inputs(x, s, a, mask, normalize)


def setting(form):
    """The first (normalize, masked) where the form is a mistake at all."""
    return next(st for st in SETTINGS if form.when(*st))


def outcome(fn):
    try:
        return fn()
    except (RuntimeError, SandboxError) as exc:  # torch's refusal, or the sandbox's
        return exc


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("key", sorted(forms.FORMS))
def test_form_code_computes_what_its_run_computes(key, shape):
    form = forms.FORMS[key]
    i = example(shape, *setting(form))
    names = {"net_output": i.x, "att_scores": i.s} | (
        {"mask": i.mask} if i.mask is not None else {}
    )
    got = outcome(lambda: evaluate(form.code, names).result)
    runs = [outcome(lambda r=r: r(i)) for r in form.runs]
    if isinstance(got, Exception):
        assert any(isinstance(r, Exception) for r in runs), f"{form.code}: {got}"
        return
    assert any(close(r, got) for r in runs), f"{form.code} gives {tuple(got.shape)}"


def close(run, got):
    """run is the tensor got, to assert_close's tolerance (runs may be written several ways)."""
    try:
        assert_close(run, got)
    except (AssertionError, TypeError):  # another value, shape or type
        return False
    return True


@pytest.mark.parametrize("key", sorted(forms.FORMS))
def test_a_form_the_gallery_shows_is_written_one_way(key):
    form = forms.FORMS[key]
    assert form.gallery is None or len(form.runs) == 1


def test_every_form_has_words_for_some_consumer():
    assert all(f.gallery or f.verdict or f.lesson or f.other_shape for f in forms.FORMS.values())


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 4, 4), (4, 3, 2)], ids=str)
def test_the_trap_is_the_named_form_silently_wrong(shape):
    i = example(shape, None, False, seed=1)
    x, w = i.x.float(), i.s.softmax(dim=1).float()
    trap = trace.trap(x, w)
    assert trap is not None and trap.key == forms.TRAP and trap.silent
    assert trap.code == forms.FORMS[forms.TRAP].code
    assert trap.variant == (shape[1] != shape[2])


def test_no_trap_where_the_named_form_is_right_by_luck():
    x = torch.randn(2, 4, 4)
    w = torch.full((2, 4), 0.25)  # every weight 1/T: hidden feature k's weight is word k's
    assert trace.trap(x, w) is None


# ---- a new form, registered in the catalogue alone -----------------------------------------------

DOUBLED = "(net_output * att_scores[..., None]).sum(axis=1) * 2"


@pytest.fixture
def doubled(monkeypatch):
    """A throwaway form: the right answer counted twice, with every consumer's words."""
    form = forms.Form(
        DOUBLED,
        lambda i: (i.x * i.a[..., None]).sum(dim=1) * 2,  # (B,H)
        gallery=forms.Gallery("Counted twice", lambda s: f"every number of {s} twice over"),
        verdict=forms.Verdict("counted twice", "drop the * 2."),
        lesson=forms.Lesson("counted every word twice", "Add each weighted word once."),
    )
    monkeypatch.setitem(forms.FORMS, "doubled", form)
    return form


def _x_w(shape=(2, 3, 5)):
    i = example(shape, None, False, seed=2)
    return i.x.float(), i.s.softmax(dim=1).float()


def _doubled_answer(x, w):
    return (x * w[..., None]).sum(dim=1) * 2  # (B,H)


def test_an_unregistered_form_is_not_named():
    x, w = _x_w()
    assert all(m.key != "doubled" for m in trace.mistakes(x, w))
    assert verdict.judge(_doubled_answer(x, w), x, w).mistake is None
    assert check_weighted_sum(_doubled_answer, seed=0).mistake is None


def test_a_registered_form_appears_in_the_gallery(doubled):
    x, w = _x_w()
    m = next(m for m in trace.mistakes(x, w) if m.key == "doubled")
    assert m.title == "Counted twice" and m.code == DOUBLED and m.silent
    assert m.explanation == "every number of (2, 3, 5) twice over"
    assert_close(m.value, _doubled_answer(x, w))


def test_a_registered_form_is_named_by_the_verdict(doubled):
    x, w = _x_w()
    v = verdict.judge(_doubled_answer(x, w), x, w)
    assert v.outcome is verdict.Outcome.WRONG_NUMBERS
    assert v.mistake is not None and v.mistake.key == "doubled"
    assert "This is counted twice: drop the * 2." in v.message


def test_a_registered_form_is_named_by_the_lesson_checker(doubled):
    result = check_weighted_sum(_doubled_answer, seed=0)
    assert not result.passed and result.mistake == "doubled"
    assert "counted every word twice" in result.message
