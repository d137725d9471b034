"""Judge an answer: is this tensor the current example's ``weighted``, and if not, which mistake?

    v = judge(result, net_output, att_scores, mask=None, normalize=None)
    v.outcome            # Outcome.RIGHT / WRONG_NUMBERS / OTHER_SHAPE / NOT_A_TENSOR
    v.mistake            # the known mistake it matches, or None
    v.wrong              # (B, H) bool: the cells that differ from the right answer

    v = judge_expression(expr, trace, net_output, att_scores, mask=None, normalize=None)
    # the same, and when the example's numbers match: the expression again on hidden inputs
    # (``attnviz.hidden``); right on the example only -> Outcome.EXAMPLE_ONLY, with the reasons

The right answer is the float64 reference ``weighted_sum(..., mask, normalize)``; every comparison
goes through ``attnviz.tolerance``, the table the checkers use. A mistake is recognised by running
each wrong form of ``attnviz.forms`` on the same inputs and comparing numbers, never by reading
the text: the T == H trap (``att_scores[:, None, :]``), a mean instead of a sum, the wrong axis,
softmax over the wrong axis, a missing softmax or mask, a transposed result...
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnviz import forms, hidden, sandbox, tolerance
from attnviz.aggregation import attention_weights, weighted_sum
from attnviz.forms import Inputs

__all__ = ["Mistake", "Outcome", "Verdict", "judge", "judge_expression", "mistakes"]

RIGHT_CODE = forms.RIGHT.code
EQUIVALENT = (
    'torch.einsum("bth,bt->bh", net_output, att_scores)',
    "torch.bmm(att_scores[:, None, :], net_output)[:, 0, :]",
)


class Outcome(enum.Enum):
    """What the answer is, compared with weighted (B, H)."""

    RIGHT = "right"
    EXAMPLE_ONLY = "right on this example only"
    WRONG_NUMBERS = "right shape, wrong numbers"
    OTHER_SHAPE = "other shape"
    NOT_A_TENSOR = "not a tensor"


@dataclass(frozen=True)
class Mistake:
    """A known wrong form, as the verdict names it (``forms.FORMS[key]`` with verdict words).
    title: its name. code: how it is usually written. fix: what to write instead. runs: the form
    on the example (each may raise: then it cannot match). when(normalize, masked): whether it is a
    mistake at all for this example (a missing softmax needs a softmax)."""

    key: str
    title: str
    code: str
    fix: str
    runs: tuple[Callable[[Inputs], Tensor], ...]
    when: Callable[[str | None, bool], bool]

    def applies(self, i: Inputs) -> bool:
        return self.when(i.normalize, i.mask is not None)


def mistakes() -> tuple[Mistake, ...]:
    """The wrong forms the verdict names by their numbers, in the catalogue's order, as it is now."""
    return tuple(
        Mistake(key, f.verdict.title, f.verdict.code or f.code, f.verdict.fix, f.runs, f.when)
        for key, f in forms.FORMS.items()
        if f.verdict is not None
    )


def _weights(i: Inputs) -> Tensor:
    return i.a  # (B,T)


def _other_shapes() -> tuple[tuple[str, Callable[[Inputs], Tensor]], ...]:
    """(how it reads, run) of every form named by its shape when that is not (B, H), then the
    weights themselves: an answer of another shape is named when its numbers match too."""
    named = tuple(
        (f.other_shape, run) for f in forms.FORMS.values() if f.other_shape for run in f.runs
    )
    return (*named, ("the weights (B, T), not the weighted sum: multiply and sum", _weights))


@dataclass(frozen=True)
class Verdict:
    """outcome: an Outcome. message: what it means, in plain words. shape: the answer's shape
    (None for a non-tensor). expected_shape: weighted's (B, H). mistake: the known mistake it
    matches (None if none); matches: every known mistake that gives these numbers on these
    sizes (e.g. unsqueeze(0) and no new axis broadcast alike), mistake first. wrong: (B, H) bool, the cells that differ (WRONG_NUMBERS only).
    expected: the right answer (B, H), float64. max_abs_diff: largest |answer - expected|.
    reasons: (EXAMPLE_ONLY) why it matches here only, in words ("every weight ... is 1/T").
    checked: the hidden inputs it was also run on, in words ("T == H (3, 4, 4)")."""

    outcome: Outcome
    message: str
    shape: tuple[int, ...] | None
    expected_shape: tuple[int, ...]
    mistake: Mistake | None = None
    matches: tuple[Mistake, ...] = ()
    wrong: Tensor | None = None
    expected: Tensor | None = None
    max_abs_diff: float | None = None
    reasons: tuple[str, ...] = ()
    checked: tuple[str, ...] = ()

    @property
    def right(self) -> bool:
        return self.outcome is Outcome.RIGHT


def _inputs(net_output: Tensor, att_scores: Tensor, mask: Tensor | None, normalize: str | None):
    x = net_output.detach().to("cpu", torch.float64)  # (B,T,H)
    s = att_scores.detach().to("cpu", torch.float64)  # (B,T)
    m = None if mask is None else mask.detach().to("cpu", torch.bool)  # (B,T)
    return Inputs(x, s, attention_weights(s, mask=m, normalize=normalize), m, normalize)


def _try(run: Callable[[Inputs], Tensor], i: Inputs) -> Tensor | None:
    try:
        return run(i)
    except RuntimeError:  # the form does not run on these sizes: it cannot be the answer
        return None


def _matches(got: Tensor, want: Tensor | None) -> bool:
    return want is not None and tolerance.close(got, want)


def judge(
    result: Any,
    net_output: Tensor,
    att_scores: Tensor,
    *,
    mask: Tensor | None = None,
    normalize: str | None = None,
) -> Verdict:
    """result: the answer (any value) -> a Verdict against weighted_sum(net_output (B, T, H),
    att_scores (B, T), mask (B, T) or None, normalize None or "softmax") -> (B, H)."""
    i = _inputs(net_output, att_scores, mask, normalize)
    expected = weighted_sum(i.x, i.s, mask=i.mask, normalize=normalize)  # (B,H) float64
    want = tuple(expected.shape)
    b, t, h = (int(n) for n in i.x.shape)
    if not isinstance(result, Tensor):
        return Verdict(
            Outcome.NOT_A_TENSOR,
            f"the answer is not a tensor; weighted is a tensor of shape (B, H) = {want}.",
            None,
            want,
            expected=expected,
        )
    got = result.detach().to("cpu")
    shape = tuple(got.shape)
    if shape != want:
        words = f"your result has shape {shape}; weighted has shape (B, H) = {want}."
        for meaning, run in _other_shapes():
            if _matches(got, _try(run, i)):
                return Verdict(Outcome.OTHER_SHAPE, f"{words} It is {meaning}.", shape, want)
        return Verdict(
            Outcome.OTHER_SHAPE,
            f"{words} Which axis should go? Sum over the word axis T = {t} and keep sentences "
            f"B = {b} and hidden features H = {h}.",
            shape,
            want,
        )
    diff = tolerance.max_abs_diff(got, expected)
    wrong = tolerance.mismatch(got, expected)  # (B,H)
    if not bool(wrong.any()):
        extra = []
        if normalize == "softmax":
            extra.append("softmax over the words")
        if mask is not None:
            extra.append("the mask")
        with_ = f" with {' and '.join(extra)}" if extra else ""
        return Verdict(
            Outcome.RIGHT,
            f"right: {shape} and every number matches weighted{with_}, the same as {RIGHT_CODE} "
            f"(and {' or '.join(EQUIVALENT)}).",
            shape,
            want,
            expected=expected,
            max_abs_diff=diff,
        )
    n_wrong = int(wrong.sum())
    cells = (
        f"{n_wrong} of {wrong.numel()} cells differ from weighted (largest difference {diff:.3g})"
    )
    found = tuple(
        m for m in mistakes() if m.applies(i) and any(_matches(got, _try(r, i)) for r in m.runs)
    )
    if found:
        m = found[0]
        same = "; ".join(f"the same numbers as {o.title} ({o.code})" for o in found[1:])
        return Verdict(
            Outcome.WRONG_NUMBERS,
            f"right shape {shape}, wrong numbers: {cells}. This is {m.title}: {m.fix}"
            + (f" (On these sizes it gives {same}.)" if same else ""),
            shape,
            want,
            mistake=m,
            matches=found,
            wrong=wrong,
            expected=expected,
            max_abs_diff=diff,
        )
    return Verdict(
        Outcome.WRONG_NUMBERS,
        f"right shape {shape}, wrong numbers: {cells}; the marked cells show where.",
        shape,
        want,
        wrong=wrong,
        expected=expected,
        max_abs_diff=diff,
    )


# ---- an expression, judged beyond the example ---------------------------------------------------


def _uses(trace: sandbox.Trace, name: str) -> bool:
    return any(step.op == "name" and step.source.strip() == name for step in trace.steps)


def _run(expr: str, case: hidden.Case) -> Any:
    """The expression's value on a hidden case, or the sandbox's SandboxError if it does not run."""
    try:
        return sandbox.evaluate(expr, case.variables()).result
    except sandbox.SandboxError as exc:
        return exc


def _right(got: Any, case: hidden.Case, normalize: str | None) -> bool:
    """got is weighted for the case (the float64 reference, the tolerance table): no mistake
    recognition, which only the case shown to the student needs."""
    if not isinstance(got, Tensor):
        return False
    i = _inputs(case.net_output, case.att_scores, case.mask, normalize)
    return tolerance.close(got, weighted_sum(i.x, i.s, mask=i.mask, normalize=normalize))


def _what(got: Any, case: hidden.Case, normalize: str | None) -> tuple[str, Mistake | None]:
    """What the expression does on a hidden case where it is wrong, in words, and the known
    mistake it is there (or None)."""
    if isinstance(got, sandbox.SandboxError):
        return f"does not run: {got.message}", None
    v = judge(got, case.net_output, case.att_scores, mask=case.mask, normalize=normalize)
    if v.outcome is Outcome.WRONG_NUMBERS and v.mistake is not None:
        return f"gives wrong numbers ({v.mistake.title})", v.mistake
    if v.outcome is Outcome.WRONG_NUMBERS:
        return "gives wrong numbers", None
    if v.outcome is Outcome.OTHER_SHAPE:
        return f"gives shape {v.shape} instead of {v.expected_shape}", None
    return "gives no tensor", None


def judge_expression(
    expr: str,
    trace: sandbox.Trace,
    net_output: Tensor,
    att_scores: Tensor,
    *,
    mask: Tensor | None = None,
    normalize: str | None = None,
) -> Verdict:
    """The expression box's verdict: trace (of expr on the example) judged like ``judge``; when
    its numbers match, expr runs again on hidden inputs (``hidden.cases``: the same shape with
    other numbers, T == H, B = 1), each judged against the float64 reference. RIGHT only when
    right on all of them and when expr uses att_scores; otherwise EXAMPLE_ONLY, whose reasons
    say which property of the example made it match (``hidden.probes``, each run too).

    net_output (B, T, H), att_scores (B, T), mask (B, T) or None -> a Verdict about (B, H).
    Every run goes through the sandbox with its limits; the hidden inputs are at most 6 per axis
    beyond the example's own shape, so judging costs three evaluations of about the example's
    size, and, for an answer right here only, at most one sandbox time budget of probes more.
    """
    v = judge(trace.result, net_output, att_scores, mask=mask, normalize=normalize)
    if not v.right:
        return v
    shape = tuple(int(n) for n in net_output.shape)
    b, t, h = shape
    dtypes = (net_output.dtype, att_scores.dtype)
    found = [
        (case, _run(expr, case))
        for case in hidden.cases(shape, dtypes, masked=mask is not None, normalize=normalize)
    ]
    checked = tuple(f"{case.label} {case.shape}" for case, _ in found)
    failed = [(case, got) for case, got in found if not _right(got, case, normalize)]
    uses = _uses(trace, "att_scores")
    if uses and not failed:
        return Verdict(
            Outcome.RIGHT,
            f"{v.message} It is also right on hidden inputs: {'; '.join(checked)}.",
            v.shape,
            v.expected_shape,
            expected=v.expected,
            max_abs_diff=v.max_abs_diff,
            checked=checked,
        )
    broken = []
    stop = time.perf_counter() + sandbox.DEFAULT_LIMITS.time_budget  # explaining is bounded too
    for p in hidden.probes(net_output, att_scores, mask, normalize):
        if time.perf_counter() > stop:
            break
        if not _right(_run(expr, p.case), p.case, normalize):
            broken.append(p)
    implied = {k for p in broken for k in p.implies}
    reasons = [p.because for p in broken if p.key not in implied]
    same_ok = all(case.shape != shape for case, _ in failed)
    if not reasons and failed and same_ok:
        other = all(c.shape[1] != c.shape[2] for c, _ in failed) and t == h
        reasons.append(f"T == H here ({t})" if other else f"of this example's sizes {shape}")
    if not uses:
        reasons.insert(0, "it never uses att_scores, so it cannot follow the weights")
    detail, mistake = "", None
    if failed:
        case, got = failed[0]
        what, mistake = _what(got, case, normalize)
        detail = f" On hidden inputs ({case.label}, shape {case.shape}) it {what}."
    because = "; and ".join(reasons) if reasons else "of this example's numbers"
    return Verdict(
        Outcome.EXAMPLE_ONLY,
        f"every number matches this example, but only because {because}: it is not weighted "
        f"in general.{detail}",
        v.shape,
        v.expected_shape,
        mistake=mistake,
        matches=() if mistake is None else (mistake,),
        expected=v.expected,
        max_abs_diff=v.max_abs_diff,
        reasons=tuple(reasons),
        checked=checked,
    )
