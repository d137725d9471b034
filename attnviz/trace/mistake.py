"""The gallery of wrong forms of the one-liner, each run live by torch (``mistakes``).

Each ``Mistake`` is one form run on the inputs: torch's own error, or what it gave beside the right
answer. The dangerous one is silent: right shape, wrong numbers, which with T == H a wrong axis
gives without any error; ``square_variant`` builds T == H inputs so the gallery always shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.aggregation import weighted_sum_broadcast
from attnviz.tolerance import close
from attnviz.trace.alignment import align_shapes
from attnviz.trace.inputs import check_traceable

__all__ = ["Mistake", "mistakes", "square_variant", "variant_words"]


@dataclass(frozen=True)
class Mistake:
    """One form of the one-liner, run live on some inputs.

    code: the form. error: torch's message when it raised, None when it ran. correct: it ran and
    gave the right shape and numbers. silent: it ran without any error, gave the right shape, but
    wrong numbers -- the dangerous case. value: what it gave (None on an error); expected: the right
    answer on the same inputs, from expected_code. input_shape: (B, T, H) of the inputs it ran on.
    axis_names: the names of value's axes (e.g. sentence, hidden) when it runs.
    variant: True for the T == H variant built from the current inputs (see ``mistakes``), with
    variant_note saying how it was built.
    """

    key: str
    title: str
    code: str
    explanation: str
    error: str | None
    correct: bool
    silent: bool
    shape: tuple[int, ...] | None
    expected_shape: tuple[int, ...]
    value: Tensor | None
    expected: Tensor
    expected_code: str
    input_shape: tuple[int, int, int]
    axis_names: tuple[str, ...] = ()
    variant: bool = False
    variant_note: str | None = None

    @property
    def outcome(self) -> str:
        """'right', 'error', 'wrong shape' or 'silently wrong'."""
        if self.error is not None:
            return "error"
        if self.correct:
            return "right"
        return "silently wrong" if self.silent else "wrong shape"


_RIGHT = "(net_output * att_scores[..., None]).sum(axis=1)"
_RIGHT_SOFTMAX = "(net_output * att_scores.softmax(dim=1)[..., None]).sum(axis=1)"


@dataclass(frozen=True)
class _Form:
    """One form of the gallery: its code, how torch runs it, and what goes wrong, from (B,T,H)."""

    key: str
    title: str
    code: str
    run: Callable[[Tensor, Tensor], Tensor]
    why: Callable[[tuple[int, int, int]], str]  # explanation of what goes wrong, from (B,T,H)
    axis_names: tuple[str, ...] = ("sentence", "hidden")  # of the result, when it runs
    expected_code: str = _RIGHT  # the right answer it is compared with
    expected: Callable[[Tensor, Tensor], Tensor] = weighted_sum_broadcast  # (B,H)


def _right_softmax(x: Tensor, w: Tensor) -> Tensor:
    return (x * w.softmax(dim=1)[..., None]).sum(dim=1)  # (B,H)


def _align_text(x_shape: tuple, w_shape: tuple, w_name: str) -> str:
    return align_shapes(x_shape, w_shape, name_a="net_output", name_b=w_name).explanation


def _why_no_axis(s: tuple[int, int, int]) -> str:
    b, t, h = s
    text = _align_text(s, (b, t), "att_scores")
    return (
        f"{text} Without [..., None] the T = {t} weights line up with the last axis, the H = {h} "
        "hidden features, instead of the words. Add a trailing axis: att_scores[..., None]."
    )


def _why_middle_axis(s: tuple[int, int, int]) -> str:
    b, t, h = s
    text = _align_text(s, (b, 1, t), "att_scores[:, None]")
    return (
        f"{text} [:, None] puts the new axis in the middle, (B, 1, T): the T weights face the "
        f"hidden axis. When T == H it runs anyway and weights hidden feature k by word k's "
        "weight -- wrong numbers, no error. The new axis belongs at the end: [..., None]."
    )


def _why_unsqueeze0(s: tuple[int, int, int]) -> str:
    b, t, h = s
    text = _align_text(s, (1, b, t), "att_scores.unsqueeze(0)")
    return (
        f"{text} unsqueeze(0) adds the axis at the front, (1, B, T), so the weights face the "
        "wrong axes. Use unsqueeze(-1) (the same as [..., None])."
    )


def _why_sum0(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"axis 0 is the sentence axis: this adds the B = {b} sentences together and gives "
        f"(T, H) = {(t, h)} instead of (B, H) = {(b, h)}. Sum over the words: axis=1."
    )


def _why_sum2(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"axis 2 is the hidden axis: this adds up each word's features and gives (B, T) = "
        f"{(b, t)} instead of (B, H) = {(b, h)}. When T == H the shape looks right but the "
        "numbers are not. Sum over the words: axis=1."
    )


def _why_softmax0(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"softmax(dim=0) normalises each word across the B = {b} sentences, so a sentence's "
        f"weights no longer sum to 1. The shape is right, so nothing complains. Softmax over "
        "the words: dim=1."
    )


def _why_keepdim(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"keepdim=True leaves the summed word axis in place as size 1: (B, 1, H) = {(b, 1, h)} "
        f"instead of (B, H) = {(b, h)}. The numbers are right, the shape is not; drop keepdim."
    )


def _why_right(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"(B, T, H) {s} * (B, T, 1) {(b, t, 1)} broadcasts to {s}; .sum(axis=1) adds over the "
        f"words and gives (B, H) = {(b, h)}."
    )


_FORMS = (
    _Form("right", "The right form", _RIGHT, weighted_sum_broadcast, _why_right),
    _Form(
        "no_new_axis",
        "Forgot the new axis",
        "(net_output * att_scores).sum(axis=1)",
        lambda x, w: (x * w).sum(dim=1),
        _why_no_axis,
    ),
    _Form(
        "middle_axis",
        "New axis in the wrong place",
        "(net_output * att_scores[:, None]).sum(axis=1)",
        lambda x, w: (x * w[:, None]).sum(dim=1),
        _why_middle_axis,
    ),
    _Form(
        "unsqueeze_front",
        "unsqueeze at the front",
        "(net_output * att_scores.unsqueeze(0)).sum(axis=1)",
        lambda x, w: (x * w.unsqueeze(0)).sum(dim=1),
        _why_unsqueeze0,
    ),
    _Form(
        "sum_sentences",
        "Summed over sentences",
        "(net_output * att_scores[..., None]).sum(axis=0)",
        lambda x, w: (x * w[..., None]).sum(dim=0),
        _why_sum0,
        ("word", "hidden"),
    ),
    _Form(
        "sum_hidden",
        "Summed over hidden features",
        "(net_output * att_scores[..., None]).sum(axis=2)",
        lambda x, w: (x * w[..., None]).sum(dim=2),
        _why_sum2,
        ("sentence", "word"),
    ),
    _Form(
        "softmax_wrong_axis",
        "Softmax over the wrong axis",
        "(net_output * att_scores.softmax(dim=0)[..., None]).sum(axis=1)",
        lambda x, w: (x * w.softmax(dim=0)[..., None]).sum(dim=1),
        _why_softmax0,
        expected_code=_RIGHT_SOFTMAX,
        expected=_right_softmax,
    ),
    _Form(
        "keepdim",
        "keepdim left on",
        "(net_output * att_scores[..., None]).sum(axis=1, keepdim=True)",
        lambda x, w: (x * w[..., None]).sum(dim=1, keepdim=True),
        _why_keepdim,
        ("sentence", "word", "hidden"),
    ),
)


def variant_words(shape: tuple[int, int, int]) -> str:
    """How the T == H variant of inputs with T != H is made (see ``square_variant``), in plain
    words: shape is the original (B, T, H)."""
    b, t, h = shape
    if h > t:
        how = f"keeps only the first {t} of its {h} hidden features"
    else:
        how = f"reuses its {h} hidden features, from the first one again, until there are {t}"
    return (
        f"This trap needs T == H, and this example has T = {t} words but H = {h} hidden features, "
        f"so the form ran on a copy of net_output that {how}: {(b, t, t)}; att_scores stays as it is."
    )


def square_variant(net_output: Tensor, att_scores: Tensor) -> tuple[Tensor, Tensor]:
    """net_output (B, T, H), att_scores (B, T) -> (B, T, T), (B, T): the same numbers with H = T.

    Hidden feature k of the variant is feature k mod H of net_output: the first T features when
    H >= T, cycled when H < T. att_scores is returned unchanged.
    """
    check_traceable(net_output, att_scores)
    t, h = net_output.shape[1], net_output.shape[2]
    idx = torch.arange(t, device=net_output.device) % h  # (T,)
    return net_output[..., idx], att_scores  # (B,T,T), (B,T)


def _run(form: _Form, x: Tensor, w: Tensor, *, variant_of: tuple[int, int, int] | None) -> Mistake:
    """Run one form on x (B, T, H), w (B, T); variant_of: the original shape when x is the T == H
    variant of it."""
    variant = variant_of is not None
    b, t, h = (int(s) for s in x.shape)
    expected = form.expected(x, w)  # (B,H)
    try:
        value: Tensor | None = form.run(x, w)
        error = None
    except RuntimeError as exc:  # torch's own message is the point
        value, error = None, str(exc).strip()
    shape = None if value is None else tuple(value.shape)
    correct = value is not None and close(value, expected)
    silent = value is not None and not correct and shape == tuple(expected.shape)
    return Mistake(
        key=form.key,
        title=form.title + (" (T == H)" if variant else ""),
        code=form.code,
        explanation=(
            "With these sizes it happens to give the right answer, by luck: " + form.why((b, t, h))
            if correct and form.key != "right"
            else form.why((b, t, h))
        ),
        error=error,
        correct=correct,
        silent=silent,
        shape=shape,
        expected_shape=tuple(expected.shape),
        value=value,
        expected=expected,
        expected_code=form.expected_code,
        input_shape=(b, t, h),
        axis_names=form.axis_names,
        variant=variant,
        variant_note=variant_words(variant_of) if variant_of is not None else None,
    )


def mistakes(net_output: Tensor, att_scores: Tensor) -> list[Mistake]:
    """net_output (B, T, H), att_scores (B, T) -> the gallery of forms, each run live by torch.

    The right form comes first, then each wrong one. When T != H, a wrong form that is not already
    silently wrong here but would be with T == H is followed by its T == H variant (``variant=True``), run on
    ``square_variant(net_output, att_scores)``: so the silent trap is always in the gallery, beside
    the current inputs' own outcome and the right answer (``expected``).
    """
    check_traceable(net_output, att_scores)
    x, w = net_output.detach(), att_scores.detach()
    t, h = x.shape[1], x.shape[2]
    square = square_variant(x, w) if t != h else None
    out: list[Mistake] = []
    for form in _FORMS:
        own = _run(form, x, w, variant_of=None)
        out.append(own)
        if square is not None and form.key != "right" and not own.silent:
            v = _run(form, *square, variant_of=tuple(x.shape))
            if v.silent:
                out.append(v)
    return out
