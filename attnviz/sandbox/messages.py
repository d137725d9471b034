"""The sandbox's error type and the words its messages are made of.

Every failure is a ``SandboxError`` (an ``AttnvizError``) with a kind (``ErrorKind``), the span of
the culprit in the text and the partial trace. Messages name shapes and the fix; a visitor's own
text inside a message is clipped to one line (the page shows messages as plain text).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from torch import Tensor

from attnviz.errors import AttnvizError
from attnviz.sandbox.language import ErrorKind

if TYPE_CHECKING:
    from attnviz.sandbox.record import Trace

__all__ = ["SandboxError", "plain", "pointer"]


class SandboxError(AttnvizError):
    """An expression that cannot be evaluated.

    kind: an ErrorKind (a str enum: ``exc.kind == "limit"`` holds). span: (start, end) character
    offsets of the culprit in the expression (None when the whole text is at fault). trace: the
    steps evaluated before the failure.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | str = ErrorKind.VALUE,
        span: tuple[int, int] | None = None,
        trace: Trace | None = None,
    ) -> None:
        from attnviz.sandbox.record import Trace

        super().__init__(message)
        self.message = message
        self.kind = ErrorKind(kind)
        self.span = span
        self.trace = trace if trace is not None else Trace(expr="", result=None)


def pointer(expr: str, span: tuple[int, int] | None) -> str:
    """The line of expr holding span, with carets under the span (for a notebook or a log).

    pointer("net_output * att_scores", (0, 23)) ->
        net_output * att_scores
        ^^^^^^^^^^^^^^^^^^^^^^^
    """
    if span is None:
        return expr
    start, end = span
    line_start = expr.rfind("\n", 0, start) + 1
    line_end = expr.find("\n", start)
    line_end = len(expr) if line_end == -1 else line_end
    line = expr[line_start:line_end].expandtabs(1)
    width = max(1, min(end, line_end) - start)
    return f"{line}\n{' ' * (start - line_start)}{'^' * width}"


def plain(message: str) -> str:
    """A message for plain text: code between backticks in quotation marks, no backtick shown.

    "`net_output * att_scores`: 5 meets 3" -> "“net_output * att_scores”: 5 meets 3".
    """
    return re.sub(r"`([^`\n]*)`", "\u201c\\1\u201d", message).replace("`", "'")


def clip(text: str, limit: int = 80) -> str:
    """Text for a message: one line, at most about limit characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def axis_words(axis: int) -> str:
    """-1 -> 'the last axis', -2 -> 'the second-to-last axis', -3 -> 'axis -3'."""
    if axis == -1:
        return "the last axis"
    if axis == -2:
        return "the second-to-last axis"
    if axis == -3:
        return "the third axis from the right"
    return f"axis {axis} (counted from the right)"


def is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def describe(v: Any) -> str:
    """What a value is, in words: 'a tensor (2, 3)', 'the number 4', 'a slice'..."""
    if isinstance(v, Tensor):
        return f"a tensor {tuple(v.shape)}"
    if isinstance(v, tuple):
        return f"a tuple {v}"
    if isinstance(v, bool):
        return f"{v}"
    if is_number(v):
        return f"the number {v}"
    if v is None:
        return "None"
    if v is Ellipsis:
        return "..."
    if isinstance(v, slice):
        return "a slice"
    if isinstance(v, str):
        return "a string"
    return type(v).__name__


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def plural(n: int, word: str) -> str:
    """plural(1, "axis") -> "1 axis"; plural(2, "axis") -> "2 axes"; plural(2, "word") -> "2 words"."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-2]}es" if word.endswith("is") else f"{n} {word}s"
