"""The gallery of wrong forms of the one-liner, each run live by torch (``mistakes``).

The forms are the catalogue's (``attnviz.forms``) that carry gallery words, after the right one.
Each ``Mistake`` is one form run on the inputs: torch's own error, or what it gave beside the right
answer. The dangerous one is silent: right shape, wrong numbers, which with T == H a wrong axis
gives without any error; ``square_variant`` builds T == H inputs so the gallery always shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz import forms
from attnviz.aggregation import weighted_sum_broadcast
from attnviz.tolerance import close
from attnviz.trace.alignment import align_shapes
from attnviz.trace.inputs import check_traceable

__all__ = ["Mistake", "mistakes", "square_variant", "trap", "variant_words"]

Shape = tuple[int, int, int]  # (B, T, H)


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


def _gallery() -> list[tuple[str, forms.Form, forms.Gallery]]:
    """(key, form, its gallery words): the right form, then every catalogued form with gallery
    words, in the catalogue's order."""
    everything = [("right", forms.RIGHT), *forms.FORMS.items()]
    return [(key, f, f.gallery) for key, f in everything if f.gallery is not None]


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


def _run(
    key: str,
    form: forms.Form,
    shown: forms.Gallery,
    x: Tensor,
    w: Tensor,
    *,
    variant_of: Shape | None,
) -> Mistake:
    """Run one form of the gallery (shown: its words) on x (B, T, H), w (B, T); variant_of: the
    original shape when x is the T == H variant of it."""
    variant = variant_of is not None
    b, t, h = (int(s) for s in x.shape)
    a = w.softmax(dim=1) if shown.normalize == "softmax" else w  # (B,T), the weights applied
    expected = weighted_sum_broadcast(x, a)  # (B,H)
    try:
        value: Tensor | None = form.runs[0](forms.Inputs(x, w, a, None, shown.normalize))
        error = None
    except RuntimeError as exc:  # torch's own message is the point
        value, error = None, str(exc).strip()
    shape = None if value is None else tuple(value.shape)
    correct = value is not None and close(value, expected)
    silent = value is not None and not correct and shape == tuple(expected.shape)
    why = shown.why((b, t, h))
    if shown.operand is not None:
        written, operand_shape = shown.operand
        aligned = align_shapes(
            (b, t, h), operand_shape((b, t, h)), name_a="net_output", name_b=written
        )
        why = f"{aligned.explanation} {why}"
    return Mistake(
        key=key,
        title=shown.title + (" (T == H)" if variant else ""),
        code=form.code,
        explanation=(
            "With these sizes it happens to give the right answer, by luck: " + why
            if correct and key != "right"
            else why
        ),
        error=error,
        correct=correct,
        silent=silent,
        shape=shape,
        expected_shape=tuple(expected.shape),
        value=value,
        expected=expected,
        expected_code=forms.right_code(shown.normalize),
        input_shape=(b, t, h),
        axis_names=shown.axis_names,
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
    for key, form, shown in _gallery():
        own = _run(key, form, shown, x, w, variant_of=None)
        out.append(own)
        if square is not None and key != "right" and not own.silent:
            v = _run(key, form, shown, *square, variant_of=(int(x.shape[0]), int(t), int(h)))
            if v.silent:
                out.append(v)
    return out


def trap(net_output: Tensor, att_scores: Tensor) -> Mistake | None:
    """net_output (B, T, H), att_scores (B, T) -> the gallery's item for ``forms.TRAP`` that is
    silently wrong (on these inputs, or their T == H variant), or None where it is not (right by
    luck, e.g. when every weight is 1/T)."""
    found = (m for m in mistakes(net_output, att_scores) if m.key == forms.TRAP and m.silent)
    return next(found, None)
