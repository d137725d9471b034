"""Check-in questions as data: what is asked on which slide, the choices, the answer and why.

``questions(net_output, att_scores)`` builds them on the class's example, so every shape in a prompt
is the example's own and every answer is computed by running the code (never typed in by hand).
A student's answer is parsed strictly by ``parse_answer`` into a canonical string that the store
keeps and counts: a choice's index ("0", "1", ...) or a shape written as Python writes a tuple.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from torch import Tensor

from attnviz import forms, trace
from attnviz.errors import AttnvizError

MAX_ANSWER_CHARS = 40
MAX_DIMS = 6
_SHAPE = re.compile(r"[(\[]?\s*([0-9]{1,4}(?:\s*,\s*[0-9]{1,4})*)\s*(,?)\s*[)\]]?")


class Kind(enum.Enum):
    """How a question is answered."""

    CHOICE = "choice"  # pick one of the choices
    SHAPE = "shape"  # type a shape, parsed as a tuple


@dataclass(frozen=True)
class Question:
    """One check-in question. slide: the key of the slide it belongs to (a ``trace.Step`` key or
    one of the walkthrough's own: "cell", "trap", "grad", "view"). answer: the canonical right
    answer (see ``parse_answer``); why: the explanation shown after the reveal."""

    id: str
    slide: str
    prompt: str
    kind: Kind
    answer: str
    why: str
    choices: tuple[str, ...] = ()

    def label(self, canonical: str) -> str:
        """A canonical answer as the students see it: the choice's words, or the shape."""
        if self.kind is Kind.CHOICE and canonical.isdigit() and int(canonical) < len(self.choices):
            return self.choices[int(canonical)]
        return canonical


def format_shape(shape: tuple[int, ...]) -> str:
    """(2, 3, 1) -> '(2, 3, 1)', (5,) -> '(5,)': as Python prints a tuple."""
    return str(tuple(int(s) for s in shape))


def parse_shape(text: object) -> tuple[int, ...]:
    """'(2, 3, 1)', '2,3,1', '[2, 3, 1]' or '(5,)' -> a tuple of ints; anything else AttnvizError.

    ASCII digits only (no '²', no '٣'), at most 4 digits per size and 6 sizes, brackets that match.
    """
    help_ = "Type a shape as a tuple, like (2, 3, 1)."
    if not isinstance(text, str) or len(text) > MAX_ANSWER_CHARS or not text.isascii():
        raise AttnvizError(help_)
    stripped = text.strip()
    match = _SHAPE.fullmatch(stripped)
    if not match:
        raise AttnvizError(help_)
    opens, closes = stripped[:1], stripped[-1:]
    pairs = {"(": ")", "[": "]"}
    if (opens in pairs) != (closes in pairs.values()) or (
        opens in pairs and pairs[opens] != closes
    ):
        raise AttnvizError(help_ + " Its brackets do not match.")
    sizes = tuple(int(p) for p in match[1].split(","))
    if len(sizes) > MAX_DIMS:
        raise AttnvizError(f"A shape here has at most {MAX_DIMS} sizes.")
    return sizes


def parse_answer(question: Question, text: object) -> str:
    """A student's raw answer -> its canonical form, or AttnvizError saying what to type."""
    if question.kind is Kind.CHOICE:
        if (
            not isinstance(text, str)
            or not re.fullmatch(r"[0-9]{1,2}", text)
            or not 0 <= int(text) < len(question.choices)
        ):
            raise AttnvizError("Pick one of the answers.")
        return str(int(text))
    return format_shape(parse_shape(text))


def is_right(question: Question, canonical: str) -> bool:
    """Whether a canonical answer is the right one."""
    return canonical == question.answer


def questions(net_output: Tensor, att_scores: Tensor) -> tuple[Question, ...]:
    """The check-in questions on this example: net_output (B, T, H), att_scores (B, T).

    In the order of the slides: the shape after [..., None], the axis .sum(axis=1) removes, the
    shape of weighted, what the T == H trap does, and whether expand copies.
    """
    x, w = net_output.detach(), att_scores.detach()
    b, t, h = (int(s) for s in x.shape)
    w3 = w[..., None]  # (B,T,1)
    summed = (x * w3).sum(dim=1)  # (B,H)
    out = [
        Question(
            id="unsqueeze_shape",
            slide="unsqueeze",
            prompt=(
                f"att_scores has shape {format_shape((b, t))}. "
                "What is the shape of att_scores[..., None]?"
            ),
            kind=Kind.SHAPE,
            answer=format_shape(tuple(w3.shape)),
            why=(
                f"[..., None] keeps every axis (the ... ) and adds one of size 1 at the end: "
                f"{format_shape((b, t))} -> {format_shape(tuple(w3.shape))}. That new axis lines "
                "up with net_output's hidden axis."
            ),
        ),
        Question(
            id="sum_axis",
            slide="sum",
            prompt=(
                f"The product has shape {format_shape((b, t, h))} (B, T, H). "
                "Which axis does .sum(axis=1) remove?"
            ),
            kind=Kind.CHOICE,
            choices=(
                f"axis 0, the sentences (B = {b})",
                f"axis 1, the words (T = {t})",
                f"axis 2, the hidden features (H = {h})",
            ),
            answer="1",  # axis 1 of (B, T, H): the words
            why=(
                f"Axes count from 0: axis 1 is the word axis. Adding along it turns the T = {t} "
                f"weighted word vectors of each sentence into one: {format_shape((b, t, h))} -> "
                f"{format_shape(tuple(summed.shape))}."
            ),
        ),
        Question(
            id="result_shape",
            slide="result",
            prompt=(
                f"net_output is {format_shape((b, t, h))} and att_scores {format_shape((b, t))}. "
                "What is the shape of weighted?"
            ),
            kind=Kind.SHAPE,
            answer=format_shape(tuple(summed.shape)),
            why=(
                f"One vector of H = {h} numbers per sentence: (B, H) = "
                f"{format_shape(tuple(summed.shape))}. The word axis was summed away."
            ),
        ),
        _trap_question(x, w),
        _view_question(w, h),
    ]
    return tuple(out)


_TRAP_CHOICES = (
    "torch raises a shape error",
    "it gives the right numbers",
    "it runs, with the right shape and wrong numbers",
    "it gives a result of another shape",
)


def _trap_question(x: Tensor, w: Tensor) -> Question:
    """What the trap slide's form (forms.TRAP: (net_output * att_scores[:, None]).sum(axis=1))
    does when T == H, found by running it."""
    square_x, square_w = trace.square_variant(x, w) if x.shape[1] != x.shape[2] else (x, w)
    b, t, h = (int(s) for s in square_x.shape)
    run = next(
        m for m in trace.mistakes(square_x, square_w) if m.key == forms.TRAP and not m.variant
    )
    if run.error is not None:
        answer = 0
    elif run.correct:
        answer = 1
    elif run.silent:
        answer = 2
    else:
        answer = 3
    return Question(
        id="trap",
        slide="trap",
        prompt=(
            f"Now T == H: net_output {format_shape((b, t, h))}, att_scores {format_shape((b, t))}. "
            f"What does {forms.FORMS[forms.TRAP].code} do?"
        ),
        kind=Kind.CHOICE,
        choices=_TRAP_CHOICES,
        answer=str(answer),
        why=(
            f"[:, None] gives shape {format_shape((b, 1, t))}: the {t} weights face the hidden "
            f"axis, and because T == H = {t} the sizes match, so nothing complains. Hidden "
            "feature k gets word k's weight: the shape is right and the numbers are wrong."
        ),
    )


def _view_question(w: Tensor, h: int) -> Question:
    """Whether expand copies, found by looking at the memory it uses."""
    vc = trace.view_vs_copy(w, h)
    e = vc.expand
    b, t = (int(s) for s in w.shape)
    return Question(
        id="view_copy",
        slide="view",
        prompt=f"att_scores[..., None].expand({b}, {t}, {h}): a view or a copy?",
        kind=Kind.CHOICE,
        choices=(
            "a view: it re-reads att_scores' memory, no new bytes",
            f"a copy: {b * t * h} new numbers in memory",
        ),
        answer="0" if e.same_memory and e.new_bytes == 0 else "1",
        why=(
            f"expand has strides {e.strides}: the stride 0 on the hidden axis means the same "
            f"number is read {h} times, so it allocates {e.new_bytes} new bytes. repeat is the "
            "one that copies."
        ),
    )
