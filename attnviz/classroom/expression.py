"""Expression answers to a check-in question, judged as the Playground's expression box judges
them (``attnviz.sandbox`` runs the text, never eval; ``attnviz.verdict.judge_expression`` names it).

A student's expression is kept as the name of what it is (``right``, a catalogued mistake's
title, "shape (2, 3)", ...), never as the text typed: the class counts kinds of answers.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from attnviz import sandbox, verdict
from attnviz.classroom.question import format_shape

RIGHT = "right"
NOT_RUN = "does not run"


def judge_on(net_output: Tensor, att_scores: Tensor) -> Callable[[str], tuple[str, str]]:
    """judge(expression) -> (canonical, explanation) on net_output (B, T, H), att_scores (B, T)."""
    x, w = net_output.detach(), att_scores.detach()

    def judge(expr: str) -> tuple[str, str]:
        try:
            tr = sandbox.evaluate(expr, {"net_output": x, "att_scores": w})
        except sandbox.SandboxError as e:
            return NOT_RUN, f"{NOT_RUN}: {e.message}"
        v = verdict.judge_expression(expr, tr, x, w)
        if v.right:
            return RIGHT, v.message
        if v.mistake is not None:
            return v.mistake.title[:60], f"{v.mistake.title}: {v.mistake.fix}"
        if v.outcome is verdict.Outcome.OTHER_SHAPE and v.shape is not None:
            return f"shape {format_shape(v.shape)}", v.message
        return v.outcome.value, v.message

    return judge


def known_mistakes() -> tuple[tuple[str, str], ...]:
    """(canonical, explanation) of every mistake the verdict names, in the catalogue's order."""
    return tuple((m.title[:60], f"{m.title}: {m.fix}") for m in verdict.mistakes())
