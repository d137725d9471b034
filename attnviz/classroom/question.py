"""Check-in questions as data: what is asked on which slide, the choices, the answer and why.

``questions(net_output, att_scores)`` builds them on the class's example, so every shape in a prompt
is the example's own and every answer is computed by running the code (never typed in by hand).
A student's answer is parsed strictly by ``parse_answer`` into a canonical string that the store
keeps and counts: a choice's index ("0", "1", ...) or a shape written as Python writes a tuple.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from attnviz.errors import AttnvizError

MAX_ANSWER_CHARS = 40
MAX_EXPRESSION_CHARS = 200
_NUMBER = re.compile(r"-?[0-9]{1,9}(?:\.[0-9]{1,6})?")
MAX_DIMS = 6
_SHAPE = re.compile(r"[(\[]?\s*([0-9]{1,4}(?:\s*,\s*[0-9]{1,4})*)\s*(,?)\s*[)\]]?")


class Kind(enum.Enum):
    """How a question is answered."""

    CHOICE = "choice"  # pick one of the choices
    SHAPE = "shape"  # type a shape, parsed as a tuple
    NUMBER = "number"  # type a number
    EXPRESSION = "expression"  # type an expression, judged as the Playground's box judges it


@dataclass(frozen=True)
class Question:
    """One check-in question. slide: the key of the slide it is asked before, the one that
    answers it (a ``trace.Step`` key or one of the walkthrough's own: "cell", "trap", "grad",
    "view"). answer: the canonical right answer (see ``parse_answer``; "right" for an expression
    question); why: the explanation shown after the reveal. needs: the code the question is
    about, shown with it. wrong: (canonical answer, explanation) of the wrong answers known to
    come from a mistake. judge(text) -> (canonical, explanation): an expression question's
    verdict."""

    id: str
    slide: str
    prompt: str
    kind: Kind
    answer: str
    why: str
    choices: tuple[str, ...] = ()
    needs: str = ""
    wrong: tuple[tuple[str, str], ...] = ()
    judge: Callable[[str], tuple[str, str]] | None = field(default=None, compare=False)

    def label(self, canonical: str) -> str:
        """A canonical answer as the students see it: the choice's words, or the shape."""
        if self.kind is Kind.CHOICE and canonical.isdigit() and int(canonical) < len(self.choices):
            return self.choices[int(canonical)]
        return canonical

    def explain(self, canonical: str) -> str:
        """Why a wrong answer is wrong, by the mistake it comes from ('' when none is known)."""
        return dict(self.wrong).get(canonical, "")


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
    if question.kind is Kind.NUMBER:
        if not isinstance(text, str) or not _NUMBER.fullmatch(text.strip()):
            raise AttnvizError("Type a number, like 12 or 0.5.")
        value = float(text.strip())
        return str(int(value)) if value.is_integer() else repr(value)
    if question.kind is Kind.EXPRESSION:
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_EXPRESSION_CHARS:
            raise AttnvizError(f"Type an expression of at most {MAX_EXPRESSION_CHARS} characters.")
        if question.judge is None:
            raise AttnvizError("This question cannot judge expressions here.")
        return question.judge(text.strip())[0]
    return format_shape(parse_shape(text))


def is_right(question: Question, canonical: str) -> bool:
    """Whether a canonical answer is the right one."""
    return canonical == question.answer
