"""The one catalogue of wrong forms of the one-liner ``(net_output * att_scores[..., None]).sum(1)``.

    FORMS["axis_in_middle"].run(Inputs.of_weights(x, w))   # what that form gives, (B, H) here
    FORMS[TRAP]                                            # the form the trap slide is about

Every consumer reads ``FORMS`` when it runs, in its order: the Playground's gallery
(``trace.mistakes``, forms with ``gallery`` words), the expression box's verdict (``verdict``,
forms with ``verdict`` words), the lessons' checkers (``exercises.lesson02``, forms with ``lesson``
words), the Walkthrough's trap slide and its check-in question (``TRAP``). A form is recognised by
running it on the same inputs and comparing numbers, never by reading text. Adding a form is one
entry here; each consumer's words say how that consumer names and explains it.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.aggregation import attention_weights

__all__ = [
    "FORMS",
    "RIGHT",
    "TRAP",
    "Form",
    "Gallery",
    "Inputs",
    "Lesson",
    "Setting",
    "Verdict",
    "always",
    "right_code",
]

Shape = tuple[int, int, int]  # (B, T, H)


@dataclass(frozen=True)
class Inputs:
    """One example, as every form reads it: x net_output (B, T, H), s the raw scores (B, T), a the
    weights applied (B, T), mask (B, T) bool or None, normalize None or "softmax"."""

    x: Tensor
    s: Tensor
    a: Tensor
    mask: Tensor | None = None
    normalize: str | None = None

    @classmethod
    def of_weights(cls, x: Tensor, w: Tensor) -> Inputs:
        """x (B, T, H) and the weights w (B, T) applied as they are (no softmax, no mask)."""
        return cls(x, w, w)

    @classmethod
    def of_scores(cls, x: Tensor, s: Tensor) -> Inputs:
        """x (B, T, H) and raw scores s (B, T) softmaxed over the words."""
        return cls(x, s, s.softmax(dim=1), None, "softmax")

    @classmethod
    def of_masked(cls, x: Tensor, w: Tensor, mask: Tensor) -> Inputs:
        """x (B, T, H), weights w (B, T) and mask (B, T): the padded words' weights are zero."""
        return cls(x, w, w * mask, mask, None)


Run = Callable[[Inputs], Tensor]


class Setting(enum.Enum):
    """Which lesson exercise recognises a form (see ``Lesson``)."""

    WEIGHTS = "weights"  # the plain weighted sum, and every exercise built on it
    SOFTMAX = "softmax"  # only where raw scores go through a softmax first
    MASK = "mask"  # only where a mask removes the padded words


@dataclass(frozen=True)
class Gallery:
    """How the Playground's gallery shows a form. title: its name there. why(B, T, H): what goes
    wrong, in words. operand: (how the weights are written in the product, their shape from
    (B, T, H)): the gallery starts ``why`` with how that operand's shape lines up with
    net_output's. axis_names: the result's axes when it runs. normalize: "softmax" when the form is
    about a softmax (att_scores are then raw scores, softmaxed over the words by the right form)."""

    title: str
    why: Callable[[Shape], str]
    operand: tuple[str, Callable[[Shape], tuple[int, ...]]] | None = None
    axis_names: tuple[str, ...] = ("sentence", "hidden")
    normalize: str | None = None


@dataclass(frozen=True)
class Verdict:
    """How the expression box names a form whose numbers an answer has: title, what to write
    instead, and code: how it is quoted there (the form's own code when empty)."""

    title: str
    fix: str
    code: str = ""


@dataclass(frozen=True)
class Lesson:
    """How the lessons' checkers name a form: title, a hint that never gives the solution, and the
    exercise that recognises it (``Setting``; WEIGHTS forms are lifted into the softmax and mask
    exercises, on the weights those apply, wherever ``Form.when`` allows)."""

    title: str
    hint: str
    setting: Setting = Setting.WEIGHTS


def always(normalize: str | None, masked: bool) -> bool:
    """A form that is a mistake on every example."""
    return True


@dataclass(frozen=True)
class Form:
    """One form of the one-liner. code: how it is written (the sandbox runs it on net_output,
    att_scores and mask). run: what it gives on Inputs, in the inputs' dtype and device (may
    raise); several runs when it is written several ways (the gallery shows the first). when(
    normalize, masked): whether it is a mistake at all on such an example (a missing softmax needs
    a softmax). gallery, verdict, lesson: each consumer's words, None where it does not show it.
    other_shape: the expression box's words for an answer of this form's shape when that is not
    (B, H), recognised by its numbers too (empty: not named by its shape)."""

    code: str
    run: Run | tuple[Run, ...]
    gallery: Gallery | None = None
    verdict: Verdict | None = None
    lesson: Lesson | None = None
    when: Callable[[str | None, bool], bool] = always
    other_shape: str = ""

    @property
    def runs(self) -> tuple[Run, ...]:
        return self.run if isinstance(self.run, tuple) else (self.run,)


# ---- what the forms compute ---------------------------------------------------------------------


def _prod(i: Inputs) -> Tensor:
    return i.x * i.a[..., None]  # (B,T,H) * (B,T,1) -> (B,T,H)


def _right(i: Inputs) -> Tensor:
    return _prod(i).sum(dim=1)  # (B,T,H) -> sum over T -> (B,H)


def _softmax_over(i: Inputs, d: int) -> Tensor:
    """The scores softmaxed over axis d (B, T), the padded words' weights zero."""
    s = i.s if i.mask is None else i.s.masked_fill(~i.mask, float("-inf"))
    w = s.softmax(dim=d)  # (B,T)
    return w if i.mask is None else torch.where(i.mask, w, torch.zeros((), dtype=w.dtype))


def _weighted_by(i: Inputs, w: Tensor) -> Tensor:
    return (i.x * w[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


def _swapped_specs() -> tuple[Run, ...]:
    """The einsum spec with two of its letters swapped (every such spec but the right one and the
    transposed output, which is a form of its own)."""
    spec = "bth,bt->bh"
    where = [i for i, c in enumerate(spec) if c.isalpha()]
    out: list[Run] = []
    seen = {spec, "bth,bt->hb"}
    for i, j in itertools.combinations(where, 2):
        s = list(spec)
        s[i], s[j] = s[j], s[i]
        swapped = "".join(s)
        if swapped not in seen:
            seen.add(swapped)
            out.append(lambda g, s=swapped: torch.einsum(s, g.x, g.a))
    return tuple(out)


# ---- the gallery's words --------------------------------------------------------------------------


def _why_no_axis(s: Shape) -> str:
    b, t, h = s
    return (
        f"Without [..., None] the T = {t} weights line up with the last axis, the H = {h} "
        "hidden features, instead of the words. Add a trailing axis: att_scores[..., None]."
    )


def _why_middle_axis(s: Shape) -> str:
    return (
        "[:, None] puts the new axis in the middle, (B, 1, T): the T weights face the "
        "hidden axis. When T == H it runs anyway and weights hidden feature k by word k's "
        "weight -- wrong numbers, no error. The new axis belongs at the end: [..., None]."
    )


def _why_unsqueeze0(s: Shape) -> str:
    return (
        "unsqueeze(0) adds the axis at the front, (1, B, T), so the weights face the "
        "wrong axes. Use unsqueeze(-1) (the same as [..., None])."
    )


def _why_sum0(s: Shape) -> str:
    b, t, h = s
    return (
        f"axis 0 is the sentence axis: this adds the B = {b} sentences together and gives "
        f"(T, H) = {(t, h)} instead of (B, H) = {(b, h)}. Sum over the words: axis=1."
    )


def _why_sum2(s: Shape) -> str:
    b, t, h = s
    return (
        f"axis 2 is the hidden axis: this adds up each word's features and gives (B, T) = "
        f"{(b, t)} instead of (B, H) = {(b, h)}. When T == H the shape looks right but the "
        "numbers are not. Sum over the words: axis=1."
    )


def _why_softmax0(s: Shape) -> str:
    b, t, h = s
    return (
        f"softmax(dim=0) normalises each word across the B = {b} sentences, so a sentence's "
        f"weights no longer sum to 1. The shape is right, so nothing complains. Softmax over "
        "the words: dim=1."
    )


def _why_keepdim(s: Shape) -> str:
    b, t, h = s
    return (
        f"keepdim=True leaves the summed word axis in place as size 1: (B, 1, H) = {(b, 1, h)} "
        f"instead of (B, H) = {(b, h)}. The numbers are right, the shape is not; drop keepdim."
    )


def _why_right(s: Shape) -> str:
    b, t, h = s
    return (
        f"(B, T, H) {s} * (B, T, 1) {(b, t, 1)} broadcasts to {s}; .sum(axis=1) adds over the "
        f"words and gives (B, H) = {(b, h)}."
    )


_RIGHT_CODE = "(net_output * att_scores[..., None]).sum(axis=1)"
_RIGHT_SOFTMAX_CODE = "(net_output * att_scores.softmax(dim=1)[..., None]).sum(axis=1)"


def right_code(normalize: str | None) -> str:
    """The right form as written, with the softmax over the words when normalize is "softmax"."""
    return _RIGHT_SOFTMAX_CODE if normalize == "softmax" else _RIGHT_CODE


RIGHT = Form(_RIGHT_CODE, _right, gallery=Gallery("The right form", _why_right))
"""The right form: the gallery shows it first; everything else is compared with it."""

_NEW_AXIS = (
    "Shapes align from the right, so att_scores (B, T) met net_output's LAST two axes: words "
    "met hidden features (silently when T == H). It needs a trailing axis: (B, T) → (B, T, 1)."
)


def _no_softmax(normalize: str | None, masked: bool) -> bool:
    return normalize is None


# ---- the catalogue --------------------------------------------------------------------------------

TRAP = "axis_in_middle"
"""The form of the Walkthrough's trap slide and its check-in question: silently wrong when T == H."""

FORMS: dict[str, Form] = {
    "axis_in_middle": Form(
        "(net_output * att_scores[:, None]).sum(axis=1)",
        lambda i: (i.x * i.a[:, None, :]).sum(dim=1),  # (B,T,H) * (B,1,T): T meets H
        gallery=Gallery(
            "New axis in the wrong place",
            _why_middle_axis,
            operand=("att_scores[:, None]", lambda s: (s[0], 1, s[1])),
        ),
        verdict=Verdict(
            "the T == H trap: the new axis in the middle",
            "[:, None, :] makes (B, 1, T), so word k's weight multiplies hidden feature k; it only "
            "runs because T == H. Put the new axis last: att_scores[..., None] -> (B, T, 1).",
            code="(net_output * att_scores[:, None, :]).sum(1)",
        ),
        lesson=Lesson(
            "put the new axis in the middle (`[:, None]` or `unsqueeze(1)`) instead of at the end",
            "att_scores became (B, 1, T), so its words met net_output's hidden axis (silently "
            "when T == H). The size-1 axis has to be the last one: (B, T, 1).",
        ),
    ),
    "forgot_new_axis": Form(
        "(net_output * att_scores).sum(axis=1)",
        lambda i: (i.x * i.a).sum(dim=1),  # (B,T,H) * (B,T): T meets H, B meets T
        gallery=Gallery(
            "Forgot the new axis", _why_no_axis, operand=("att_scores", lambda s: (s[0], s[1]))
        ),
        verdict=Verdict(
            "forgot the new axis",
            "(B, T) lines up with the last two axes (T, H) of net_output, not (B, T). Add a "
            "trailing axis: att_scores[..., None].",
            code="(net_output * att_scores).sum(1)",
        ),
        lesson=Lesson("forgot `[..., None]`", _NEW_AXIS),
    ),
    "unsqueeze_front": Form(
        "(net_output * att_scores.unsqueeze(0)).sum(axis=1)",
        lambda i: (i.x * i.a.unsqueeze(0)).sum(dim=1),  # (B,T,H) * (1,B,T)
        gallery=Gallery(
            "unsqueeze at the front",
            _why_unsqueeze0,
            operand=("att_scores.unsqueeze(0)", lambda s: (1, s[0], s[1])),
        ),
        verdict=Verdict(
            "unsqueeze at the front",
            "unsqueeze(0) makes (1, B, T); the new axis belongs at the end: unsqueeze(-1).",
            code="(net_output * att_scores.unsqueeze(0)).sum(1)",
        ),
    ),
    "mean_not_sum": Form(
        "(net_output * att_scores[..., None]).mean(axis=1)",
        lambda i: _prod(i).mean(dim=1),  # (B,H), divided by T
        verdict=Verdict(
            "a mean instead of a sum",
            "the weights already say how much each word counts; .mean(1) divides by T once more. "
            "Use .sum(axis=1).",
            code="(net_output * att_scores[..., None]).mean(1)",
        ),
        lesson=Lesson(
            "took the mean instead of the sum",
            "The mean divides by the number of words T. The weights already say how much each "
            "word counts: add the weighted words up.",
        ),
    ),
    "wrong_axis": Form(
        "(net_output * att_scores[..., None]).sum(axis=2)",
        lambda i: _prod(i).sum(dim=2),  # (B,T,H) -> sum over H -> (B,T)
        gallery=Gallery("Summed over hidden features", _why_sum2, axis_names=("sentence", "word")),
        verdict=Verdict(
            "summed over the hidden axis",
            "axis 2 is the hidden axis: this adds each word's features and gives (B, T); it has "
            "the shape of (B, H) only because T == H. Sum over the words: axis=1.",
            code="(net_output * att_scores[..., None]).sum(2)",
        ),
        other_shape="summed over the hidden axis (B, T): sum over axis=1",
        lesson=Lesson(
            "summed the wrong axis",
            "Your sum collapsed the hidden axis H and kept the words. Add up the words of each "
            "sentence (axis T) instead. Which axis number is T in (B, T, H)?",
        ),
    ),
    "summed_sentences": Form(
        "(net_output * att_scores[..., None]).sum(axis=0)",
        lambda i: _prod(i).sum(dim=0),  # (B,T,H) -> sum over B -> (T,H)
        gallery=Gallery("Summed over sentences", _why_sum0, axis_names=("word", "hidden")),
        verdict=Verdict(
            "summed over the sentences",
            "axis 0 is the sentence axis: this gives (T, H), which looks like (B, H) only because "
            "T == B. Sum over the words: axis=1.",
            code="(net_output * att_scores[..., None]).sum(0)",
        ),
        other_shape="summed over the sentences (T, H): sum over axis=1",
        lesson=Lesson(
            "summed over the sentences (axis B) instead of the words",
            "Each sentence must keep its own result. Which axis number holds the words?",
        ),
    ),
    "transposed_result": Form(
        "(net_output * att_scores[..., None]).sum(axis=1).T",
        lambda i: _right(i).T,  # (H,B)
        verdict=Verdict(
            "the result transposed",
            "the numbers are right but laid out (H, B); weighted is (B, H): drop the transpose.",
            code="(...).sum(1).T",
        ),
        other_shape="the right numbers transposed (H, B): drop the transpose",
        lesson=Lesson(
            "returned the result transposed, (H, B)",
            "The result should have one row per sentence: (B, H).",
        ),
    ),
    "softmax_over_sentences": Form(
        "(net_output * att_scores.softmax(dim=0)[..., None]).sum(axis=1)",
        lambda i: _weighted_by(i, _softmax_over(i, 0)),  # softmax over B, then (B,H)
        gallery=Gallery("Softmax over the wrong axis", _why_softmax0, normalize="softmax"),
        verdict=Verdict(
            "softmax over the wrong axis",
            "softmax(dim=0) normalises each word across the sentences; a sentence's weights must "
            "sum to 1 over its words: softmax(dim=1).",
            code="att_scores.softmax(dim=0)",
        ),
        lesson=Lesson(
            "took the softmax over the sentences (axis 0) instead of the words",
            "The weights of each sentence's words should sum to 1: the softmax runs along the "
            "word axis of the (B, T) scores.",
            Setting.SOFTMAX,
        ),
    ),
    "forgot_softmax": Form(
        "(net_output * att_scores[..., None]).sum(axis=1)",
        lambda i: _weighted_by(i, attention_weights(i.s, mask=i.mask)),  # raw scores as weights
        verdict=Verdict(
            "the softmax is missing",
            "this example normalises the scores first: use att_scores.softmax(dim=1) as the "
            "weights.",
            code="(net_output * att_scores[..., None]).sum(1)",
        ),
        lesson=Lesson(
            "used the raw scores as weights (no softmax)",
            "The scores here are any real numbers; a softmax over each sentence's words turns "
            "them into weights that are positive and sum to 1.",
            Setting.SOFTMAX,
        ),
        when=lambda normalize, masked: normalize == "softmax",
    ),
    "softmaxed_weights": Form(
        "(net_output * att_scores.softmax(dim=1)[..., None]).sum(axis=1)",
        lambda i: _weighted_by(i, attention_weights(i.s, mask=i.mask, normalize="softmax")),
        verdict=Verdict(
            "a softmax this example does not use",
            "this example weights by the raw att_scores (normalize is off): drop the softmax.",
            code="att_scores.softmax(dim=1)",
        ),
        lesson=Lesson(
            "applied a softmax to att_scores",
            "Here att_scores are already the weights: use them as they are.",
        ),
        when=_no_softmax,
    ),
    "ignored_mask": Form(
        "(net_output * att_scores[..., None]).sum(axis=1)",
        lambda i: _weighted_by(i, attention_weights(i.s, normalize=i.normalize)),  # no mask
        verdict=Verdict(
            "the mask is missing",
            "masked words (mask False) must get weight 0: multiply the weights by mask (and, with "
            "a softmax, mask the scores before it).",
            code="(net_output * att_scores[..., None]).sum(1)",
        ),
        lesson=Lesson(
            "ignored the mask",
            "The padded words (mask False) still counted: their weight must be zero.",
            Setting.MASK,
        ),
        when=lambda normalize, masked: masked,
    ),
    "mask_after_softmax": Form(
        "(net_output * (att_scores.softmax(dim=1) * mask)[..., None]).sum(axis=1)",
        lambda i: _weighted_by(i, i.s.softmax(dim=1) * i.mask),  # rows no longer sum to 1
        verdict=Verdict(
            "masked after the softmax, not before",
            "masking after the softmax leaves weights that no longer sum to 1: mask the scores "
            "before the softmax (a masked score becomes -inf, its weight 0).",
            code="(att_scores.softmax(1) * mask)",
        ),
        when=lambda normalize, masked: masked and normalize == "softmax",
    ),
    "summed_everything_but_hidden": Form(
        "(net_output * att_scores[..., None]).sum(axis=(0, 1))",
        lambda i: _prod(i).sum(dim=(0, 1)),  # (H,)
        lesson=Lesson(
            "summed over the sentences as well as the words",
            "Each sentence must keep its own vector: one row per sentence.",
        ),
    ),
    "squeezed_batch": Form(
        "torch.bmm(att_scores[:, None, :], net_output).squeeze()",
        lambda i: torch.bmm(i.a[:, None, :], i.x).squeeze(),  # (B,1,H) -> (H,) when B = 1
        lesson=Lesson(
            "called `squeeze()` with no axis, which also removed the sentence axis when B = 1",
            "`squeeze()` drops EVERY axis of size 1, so with one sentence (B = 1) the result lost "
            "its B axis too: (1, H) became (H,). Name the one axis you mean to remove, or index "
            "it.",
        ),
    ),
    "summed_hidden_too": Form(
        "(net_output * att_scores[..., None]).sum(axis=(1, 2))",
        lambda i: _prod(i).sum(dim=(1, 2)),  # (B,)
        lesson=Lesson(
            "summed over the hidden axis as well as the words",
            "Each sentence keeps a vector of H numbers: add up the words only.",
        ),
    ),
    "summed_everything": Form(
        "(net_output * att_scores[..., None]).sum()",
        lambda i: _prod(i).sum(),  # ()
        lesson=Lesson(
            "summed every number into one",
            "A sum with no axis adds everything up. Name the axis to collapse.",
        ),
    ),
    "no_sum": Form(
        "net_output * att_scores[..., None]",
        _prod,  # (B,T,H)
        other_shape="the product before the sum over the words (B, T, H): add .sum(axis=1)",
        lesson=Lesson(
            "multiplied but did not sum",
            "The product (B, T, H) scales each word by its weight; the words of each sentence "
            "still have to be added up.",
        ),
    ),
    "kept_dim": Form(
        "(net_output * att_scores[..., None]).sum(axis=1, keepdim=True)",
        lambda i: _prod(i).sum(dim=1, keepdim=True),  # (B,1,H)
        gallery=Gallery("keepdim left on", _why_keepdim, axis_names=("sentence", "word", "hidden")),
        other_shape=(
            "the right numbers with the word axis kept as size 1 (B, 1, H): drop keepdim=True"
        ),
        lesson=Lesson(
            "kept the word axis (a size-1 axis is left over)",
            "Your result has shape (B, 1, H): remove that size-1 axis so the result is (B, H).",
        ),
    ),
    "max_not_sum": Form(
        "(net_output * att_scores[..., None]).amax(axis=1)",
        lambda i: _prod(i).amax(dim=1),  # (B,H)
        lesson=Lesson(
            "took the maximum over the words instead of the sum",
            "The maximum keeps one word per hidden feature; the weighted sum adds every word up.",
        ),
    ),
    "unweighted_sum": Form(
        "net_output.sum(axis=1)",
        lambda i: i.x.sum(dim=1),  # (B,H)
        lesson=Lesson(
            "added up the words without the weights",
            "att_scores never entered your result: multiply each word by its weight before adding.",
        ),
    ),
    "unweighted_mean": Form(
        "net_output.mean(axis=1)",
        lambda i: i.x.mean(dim=1),  # (B,H)
        lesson=Lesson(
            "averaged the words without the weights", "That is mean pooling; it ignores att_scores."
        ),
    ),
    "normalised_weights": Form(
        "(net_output * att_scores[..., None]).sum(axis=1) / att_scores.sum(axis=1, keepdim=True)",
        lambda i: _right(i) / i.a.sum(dim=1, keepdim=True),  # (B,H) / (B,1)
        lesson=Lesson(
            "divided by the sum of the weights",
            "Use the weights exactly as given, even when they do not add up to 1.",
        ),
        when=_no_softmax,
    ),
    "einsum_letters_swapped": Form(
        'torch.einsum("bht,bt->bh", net_output, att_scores)',
        _swapped_specs(),
        lesson=Lesson(
            "swapped two letters in the einsum spec",
            "Each letter names one axis, in the operand's own order: net_output is (sentence, "
            "word, hidden), att_scores is (sentence, word). With T == H a swap runs silently.",
        ),
    ),
    "einsum_operands_swapped": Form(
        'torch.einsum("bth,bt->bh", att_scores, net_output)',
        (
            lambda i: torch.einsum("bth,bt->bh", i.a, i.x),
            lambda i: torch.einsum("bt,bth->bh", i.x, i.a),
        ),
        lesson=Lesson(
            "passed the operands to einsum in another order than its spec",
            "The spec's comma-separated parts describe the operands in the order you pass them: "
            "three letters for net_output (B, T, H), two for att_scores (B, T).",
        ),
    ),
    "first_sentence_weights": Form(
        "(net_output * att_scores[:1, :, None]).sum(axis=1)",
        lambda i: (i.x * i.a[:1, :, None]).sum(dim=1),  # every sentence weighted by sentence 0's
        lesson=Lesson(
            "used the first sentence's weights for every sentence",
            "Each sentence has its own row of att_scores.",
        ),
    ),
}
"""Every known form of the one-liner but the right one, by key. A consumer shows the forms that
carry its words, in this order (the first that matches an answer names it)."""
