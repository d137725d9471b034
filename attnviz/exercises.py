"""Exercise checkers for the lessons: strict, kind, and they never leak the answer.

Every checker takes the student's function (or a value, where the exercise asks for one) and returns a
``CheckResult``: ``passed`` (bool), ``status`` ("passed", "failed", "not attempted" or "error") and a
``message`` that says what went wrong, on which inputs, and, when it recognises the mistake, names it.

How a checker works:

- fresh random inputs on every call (so a hard-coded answer fails), in shapes chosen to expose the
  classic mistakes: B, T, H all different, the T == H trap where a wrong axis goes unnoticed, B = 1,
  T = 1, the classic example, float64 inputs;
- it checks the type, then the exact shape, dtype and device, then the values
  (``torch.testing.assert_close`` against a float64 oracle), then that the inputs were not modified;
- any exception the student's code raises is caught and explained (a shape error gets the
  right-alignment rule, drawn with the shapes involved);
- a mistake is recognised by computing what each known mistake would give on the same inputs and
  comparing (values, or the very same exception), never by reading the student's code;
- a stub that raises ``NotImplementedError`` is "not attempted";
- messages name shapes, dtypes and the cases by name, and never print an expected value or the
  solution.

The checkers (each also takes ``seed=`` to repeat a run; ``CHECKERS`` maps names to them):

- lesson 01: ``check_broadcast_shape(fn(shape_a, shape_b) -> tuple)``,
  ``check_add_axis(fn(att_scores) -> (B, T, 1))``, ``check_expand_weights(fn(att_scores, h) ->
  (B, T, H) view)``;
- lesson 02: ``check_weighted_sum(fn(net_output, att_scores) -> (B, H))``,
  ``check_softmax_weighted_sum(fn(net_output, scores))``,
  ``check_masked_weighted_sum(fn(net_output, att_scores, mask))``,
  ``check_weights_grad(fn(net_output, grad_weighted) -> (B, T))``;
- lesson 03: ``check_timer(fn(op, repeats, clock, sync) -> list of seconds)`` (against a
  ``VirtualGPU``), ``check_intermediate_bytes(fn(b, t, h, dtype) -> int)``.
"""

from __future__ import annotations

import html
import math
import os
import re
import secrets
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random

import numpy as np
import torch
from torch import Tensor

from attnviz import examples

STATUSES = ("passed", "failed", "not attempted", "error")
_ICONS = {"passed": "✓", "failed": "✗", "not attempted": "…", "error": "⚠"}
# Okabe-Ito colours (colour-blind safe); the icon and the word carry the meaning too.
_COLOURS = {
    "passed": "#009E73",
    "failed": "#D55E00",
    "not attempted": "#999999",
    "error": "#E69F00",
}
_TOL = {
    torch.float64: dict(rtol=1e-7, atol=1e-7),
    torch.float32: dict(rtol=1e-4, atol=1e-5),
}


# --------------------------------------------------------------------------------------------
# The result


@dataclass(frozen=True, repr=False)
class CheckResult:
    """What a checker found. Displays as a coloured box in a notebook and as text elsewhere."""

    exercise: str
    status: str
    message: str
    mistake: str | None = None  # key of the recognised mistake, e.g. "wrong_axis"
    cases_passed: int = 0
    cases_total: int = 0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __bool__(self) -> bool:
        return self.passed

    @property
    def title(self) -> str:
        return f"{_ICONS[self.status]} {self.exercise}: {self.status}"

    def __str__(self) -> str:
        return f"{self.title}\n{self.message}"

    __repr__ = __str__

    def _blocks(self) -> list[tuple[bool, str]]:
        """The message as (is_code, text) blocks: lines indented by 4 spaces are a code block."""
        blocks: list[tuple[bool, str]] = []
        for line in self.message.split("\n"):
            code = line.startswith("    ")
            if blocks and blocks[-1][0] == code:
                blocks[-1] = (code, blocks[-1][1] + "\n" + line)
            else:
                blocks.append((code, line))
        return blocks

    def _repr_markdown_(self) -> str:
        parts = [f"**{self.title}**", ""]
        for code, text in self._blocks():
            if code:
                parts += ["", text, ""]
            else:
                parts += [line + "  " if line else "" for line in text.split("\n")]
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        colour = _COLOURS[self.status]
        body = []
        for code, text in self._blocks():
            if code:
                body.append(f'<pre style="margin:4px 0 4px 8px">{html.escape(text)}</pre>')
            else:
                escaped = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(text))
                body.append(f'<div style="white-space:pre-wrap">{escaped}</div>')
        return (
            f'<div class="attnviz-check attnviz-{self.status.replace(" ", "-")}" '
            f'style="border-left:6px solid {colour};padding:6px 12px;margin:4px 0;'
            f"background:{colour}1a;color:#1a1a1a;font-family:system-ui,sans-serif;"
            f'line-height:140%">'
            f'<div style="font-weight:bold">{html.escape(self.title)}</div>'
            + "".join(body)
            + "</div>"
        )


# --------------------------------------------------------------------------------------------
# Cases, mistakes and outcomes


@dataclass(frozen=True)
class _Case:
    label: str  # "the T == H trap"
    args: tuple  # what the student's function is called with
    names: tuple[str, ...]  # the argument names, for messages
    expected: object  # hidden: never formatted into a message
    sizes: dict[str, int] = field(default_factory=dict)  # {"B": 2, "T": 3, "H": 5}
    shapes: str = ""  # the inputs in words, fixed before the student's code can modify them

    def __post_init__(self) -> None:
        object.__setattr__(self, "shapes", self._describe())

    def describe(self) -> str:
        return self.shapes

    def _describe(self) -> str:
        parts = []
        for name, a in zip(self.names, self.args, strict=True):
            if isinstance(a, Tensor):
                dt = "" if a.dtype in (torch.float32, torch.bool) else f" {_dtype(a.dtype)}"
                parts.append(f"{name} {tuple(a.shape)}{dt}")
            elif isinstance(a, torch.dtype):
                parts.append(f"{name}={_dtype(a)}")
            elif not callable(a):
                parts.append(f"{name}={a!r}")
        return ", ".join(parts)


@dataclass(frozen=True)
class _Mistake:
    key: str
    title: str  # "summed the wrong axis"
    hint: str  # kind, concrete, and never the solution
    compute: Callable[..., object]  # what the mistake gives, same arguments as the student's fn


@dataclass
class _Outcome:
    """What happened on one case."""

    case: _Case
    ok: bool = False
    kind: str = "ok"  # ok | exception | none | type | shape | dtype | device | values | mutated
    detail: str = ""
    output: object = None
    exc: BaseException | None = None
    mutated: tuple[str, ...] = ()
    note: str = ""


class _NotAttempted(Exception):
    pass


def _dtype(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


def _fresh_seed(seed: int | None) -> int:
    return secrets.randbits(62) if seed is None else int(seed)


def _sizes(rng: Random, n: int, lo: int, hi: int, *, avoid: Sequence[int] = ()) -> list[int]:
    """n distinct sizes in [lo, hi], none in avoid."""
    pool = [s for s in range(lo, hi + 1) if s not in avoid]
    return rng.sample(pool, n)


def _call(fn: Callable, case: _Case) -> _Outcome:
    """Run the student's function on one case; catch what it raises and what it modifies."""
    before = [a.clone() if isinstance(a, Tensor) else None for a in case.args]
    out = _Outcome(case)
    try:
        out.output = fn(*case.args)
    except NotImplementedError as exc:
        raise _NotAttempted from exc
    except Exception as exc:  # the student's code may raise anything: explain it, never crash
        out.kind, out.exc = "exception", exc
        return out
    out.mutated = tuple(
        name
        for name, a, b in zip(case.names, case.args, before, strict=True)
        if isinstance(a, Tensor) and not (a.shape == b.shape and torch.equal(a, b))
    )
    return out


def _same(a: object, b: object) -> bool:
    """Same tensor up to the tolerance of its dtype (shape and dtype included)."""
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return False
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.is_floating_point():
        tol = _TOL.get(a.dtype, dict(rtol=1e-2, atol=1e-2))
        try:
            torch.testing.assert_close(a.detach(), b.detach(), equal_nan=True, **tol)
        except AssertionError:
            return False
        return True
    return torch.equal(a, b)


def _close_values(a: Tensor, b: Tensor) -> bool:
    """Same shape and values, whatever the dtypes (compared in float64)."""
    if a.shape != b.shape:
        return False
    try:
        torch.testing.assert_close(
            a.detach().to("cpu", torch.float64),
            b.detach().to("cpu", torch.float64),
            rtol=1e-3,
            atol=1e-4,
            equal_nan=True,
        )
    except (AssertionError, RuntimeError, TypeError):
        return False
    return True


def _as_tensor(x: object) -> Tensor | None:
    try:
        return torch.as_tensor(np.asarray(x, dtype=np.float64))
    except (TypeError, ValueError, RuntimeError):
        return None


def _judge_tensor(out: _Outcome) -> _Outcome:
    """Type, shape, dtype, device, values, then untouched inputs."""
    got, want = out.output, out.case.expected
    assert isinstance(want, Tensor)
    if got is None:
        out.kind = "none"
        out.detail = (
            "your function returned `None`. Did you forget the `return`? A function that computes "
            "the answer but does not return it gives back None."
        )
        return out
    if not isinstance(got, Tensor):
        kind = type(got).__module__.split(".")[0] + "." + type(got).__name__
        kind = type(got).__name__ if kind.startswith("builtins.") else kind
        out.kind = "type"
        out.detail = f"your function returned a {kind}, not a torch.Tensor."
        as_t = _as_tensor(got)
        if as_t is not None and _close_values(as_t, want):
            out.detail += (
                " The numbers in it are right. Stay in torch from start to end (no `.numpy()`, "
                "`.tolist()` or `.item()`), so the result keeps its dtype, device and gradient."
            )
        return out
    if tuple(got.shape) != tuple(want.shape):
        out.kind = "shape"
        out.detail = (
            f"your function returned shape {tuple(got.shape)}; the answer has shape "
            f"{_shape_words(out.case, want)}."
        )
        return out
    if got.dtype != want.dtype:
        out.kind = "dtype"
        out.detail = (
            f"your result is {_dtype(got.dtype)} but the inputs are {_dtype(want.dtype)}: "
            f"the result should keep the inputs' dtype."
        )
        return out
    if got.device != want.device:
        out.kind = "device"
        out.detail = (
            f"your result lives on {got.device} but the inputs are on {want.device}. Create "
            f"new tensors with `device=` taken from an input (e.g. `net_output.device`)."
        )
        return out
    if not _same(got, want):
        out.kind = "values"
        if (
            want.is_floating_point()
            and not torch.isfinite(got).all()
            and torch.isfinite(want).all()
        ):
            out.detail = "your result has the right shape but contains inf or NaN."
        else:
            n = want.numel()
            bad = n
            if want.is_floating_point():
                tol = _TOL.get(want.dtype, dict(rtol=1e-2, atol=1e-2))
                diff = (got.detach() - want).abs()
                bad = int((~(diff <= tol["atol"] + tol["rtol"] * want.abs())).sum())
            out.detail = (
                f"the shape, dtype and device are right, but {bad} of the {n} numbers are wrong."
            )
        return out
    if out.mutated:
        out.kind = "mutated"
        names = " and ".join(f"`{m}`" for m in out.mutated)
        out.detail = (
            f"the result is right, but your function changed its input {names} in place "
            f"(an in-place operation such as `*=`, `+=`, an indexed assignment, or a method ending "
            f"in `_` like `mul_`). Whoever called it now has different data. Compute a new tensor "
            f"instead of overwriting the input."
        )
        return out
    out.ok = True
    return out


def _shape_words(case: _Case, want: Tensor) -> str:
    """The expected shape in letters and numbers, e.g. (B, H) = (2, 5)."""
    shape = tuple(want.shape)
    sizes = {**case.sizes, "1": 1}
    for candidate in _OUT_LETTERS.get(len(shape), []):
        if case.sizes and all(sizes.get(c) == s for c, s in zip(candidate, shape, strict=True)):
            return f"({', '.join(candidate)}) = {shape}"
    return str(shape)


_OUT_LETTERS = {2: [("B", "H"), ("B", "T")], 3: [("B", "T", "H"), ("B", "T", "1")]}


# --------------------------------------------------------------------------------------------
# Explaining an exception


def _student_line(exc: BaseException) -> str:
    """The last line of the student's own code in the traceback (not torch's, not ours)."""
    here = os.path.abspath(__file__)
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    numpy_dir = os.path.dirname(os.path.abspath(np.__file__))
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [
        f
        for f in frames
        if os.path.abspath(f.filename) != here
        and not os.path.abspath(f.filename).startswith((torch_dir, numpy_dir))
    ]
    if not mine or not (mine[-1].line or "").strip():
        return ""
    return f"It happened on this line of your code: `{mine[-1].line.strip()}`"


def _alignment_table(case: _Case) -> str:
    """The tensor inputs' shapes, right-aligned, as a code block."""
    shapes = [
        (n, tuple(a.shape))
        for n, a in zip(case.names, case.args, strict=True)
        if isinstance(a, Tensor)
    ]
    if not shapes:
        return ""
    width = max(len(s) for _, s in shapes)
    name_w = max(len(n) for n, _ in shapes)
    rows = []
    for name, shape in shapes:
        cells = ["   "] * (width - len(shape)) + [f"{s:>3}" for s in shape]
        rows.append(f"    {name:<{name_w}}  " + " ".join(cells))
    return "\n".join(rows)


def _letters_for(case: _Case, size: int) -> str:
    letters = [k for k, v in case.sizes.items() if v == size]
    if not letters:
        return f"{size}"
    return f"{size} ({' or '.join(letters)})"


def _explain_exception(exc: BaseException, case: _Case, arg_names: str) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > 300:
        text = text[:300] + "…"
    head = (
        f"Your code raised `{type(exc).__name__}: {text}`"
        if text
        else (f"Your code raised `{type(exc).__name__}`")
    )
    lines = [head + f" on {case.label} ({case.describe()})."]
    where = _student_line(exc)
    if where:
        lines.append(where)
    m = re.search(
        r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
        r"dimension (\d+)",
        text,
    )
    m2 = re.search(
        r"expanded size of the tensor \((-?\d+)\) must match the existing size \((\d+)\)", text
    )
    if m or ("broadcast" in text.lower() and "shape" in text.lower()):
        lines.append(
            "\nThis is a broadcasting error. PyTorch lines shapes up from the RIGHT and compares "
            "them axis by axis; two sizes fit when they are equal or one of them is 1 (a size-1 "
            "axis stretches). Your inputs, right-aligned:\n\n" + _alignment_table(case) + "\n"
        )
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            lines.append(
                f"Somewhere a size {_letters_for(case, a)} met a size {_letters_for(case, b)}: "
                f"neither is 1, so they cannot broadcast. Print the shapes of the two tensors you "
                f"multiply, right-align them like above, and put a size-1 axis where the other "
                f"tensor has an axis yours should not meet."
            )
    elif m2:
        lines.append(
            "\n`expand` lines shapes up from the RIGHT, like broadcasting: it can only stretch "
            "axes of size 1 (or add new axes on the left). An axis that should stretch must "
            "exist with size 1 first."
        )
    elif re.search(r"shape '\[[-\d, ]*\]' is invalid for input of size", text):
        lines.append(
            "\n`view` and `reshape` keep every number: the sizes you ask for must multiply to the "
            "number of elements the tensor holds. Fixed sizes fit one input shape only; take "
            "them from `.shape` (or let one of them be -1)."
        )
    elif "Dimension out of range" in text or "dimension out of range" in text:
        lines.append(
            "\nYou asked for an axis the tensor does not have. A tensor with n axes has axes "
            "0 … n-1 (or -n … -1 counted from the right); check which tensor you were indexing "
            "and print its `.shape`."
        )
    elif "cannot be multiplied" in text or "batch1" in text or "batch2" in text:
        lines.append(
            "\nA matrix product `(…, n, k) @ (…, k, m)` needs the last axis of the left operand "
            "to match the second-to-last axis of the right one, and `bmm` needs two 3-axis "
            "tensors with the same first size. Print both shapes and check which axes meet."
        )
    elif "einsum" in text:
        lines.append(
            "\nIn an einsum spec each letter names one axis: each operand needs exactly as many "
            "letters as it has axes, a repeated letter must have the same size everywhere, and "
            "letters missing after `->` are summed over."
        )
    elif isinstance(exc, TypeError) and ("positional argument" in text or "argument" in text):
        lines.append(f"\nYour function should take exactly these arguments: ({arg_names}).")
    elif isinstance(exc, IndexError):
        lines.append(
            "\nAn index went past the end of an axis. If you loop over an axis, take its length "
            "from the tensor's `.shape` rather than a fixed number."
        )
    else:
        lines.append(
            "\nRead the last line of the error first; then print the shapes of your intermediate "
            "tensors (`print(t.shape)`) to see where they stop fitting."
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The engine shared by every tensor-valued exercise


def _outputs_match(student: _Outcome, mistake_out: object) -> bool:
    if isinstance(mistake_out, BaseException):
        return (
            student.exc is not None
            and type(student.exc) is type(mistake_out)
            and str(student.exc) == str(mistake_out)
        )
    got = student.output
    if isinstance(got, Tensor) and isinstance(mistake_out, Tensor):
        return _close_values(got, mistake_out)
    return False


def _run_mistake(mistake: _Mistake, case: _Case) -> object:
    args = tuple(a.clone() if isinstance(a, Tensor) else a for a in case.args)
    try:
        return mistake.compute(*args)
    except Exception as exc:  # a mistake's own error is what the student would see
        return exc


def _recognise(failed: list[_Outcome], mistakes: Sequence[_Mistake]) -> _Mistake | None:
    """The known mistake that reproduces the student's results on the most failing cases.

    A mistake must reproduce every failing case (the same numbers, or the very same exception); one
    that reproduces numbers counts more than one that only raises the same error.
    """
    best, best_score = None, 0.0
    for mistake in mistakes:
        score, ok = 0.0, True
        for o in failed:
            m_out = _run_mistake(mistake, o.case)
            explains = not (isinstance(m_out, Tensor) and isinstance(o.case.expected, Tensor))
            explains = explains or not _close_values(m_out, o.case.expected)
            if not (explains and _outputs_match(o, m_out)):
                ok = False
                break
            score += 0.5 if isinstance(m_out, BaseException) else 1.0
        if ok and score > best_score:
            best, best_score = mistake, score
    return best


def _partition(passed: list[_Outcome], failed: list[_Outcome]) -> str:
    """'B' if the cases that passed and the ones that failed differ exactly by B (then T, H)."""
    if len(passed) < 2 or len(failed) < 2:
        return ""
    letters = [k for k in ("B", "T", "H") if all(k in o.case.sizes for o in passed + failed)]
    for letter in letters:
        good = {o.case.sizes[letter] for o in passed}
        bad = {o.case.sizes[letter] for o in failed}
        if not good & bad and len(bad) >= 2:
            return letter
    return ""


def _case_list(outcomes: list[_Outcome], total: list[_Case]) -> str:
    done = {id(o.case): o for o in outcomes}
    marks = []
    for c in total:
        o = done.get(id(c))
        mark = "✓" if o is not None and o.ok else ("✗" if o is not None else "·")
        marks.append(f"{mark} {c.label}")
    return "Cases: " + "  ".join(marks)


def _check(
    exercise: str,
    fn: object,
    cases: list[_Case],
    mistakes: Sequence[_Mistake],
    *,
    arg_names: str,
    judge: Callable[[_Outcome], _Outcome] = _judge_tensor,
    extra: Callable[[_Outcome], _Outcome] | None = None,
) -> CheckResult:
    if not callable(fn):
        return CheckResult(
            exercise,
            "error",
            f"`check_{exercise}` expects your function itself, e.g. `check_{exercise}(my_function)` "
            f"(no parentheses after the name), but it got a {type(fn).__name__}. Your function "
            f"should take ({arg_names}).",
        )
    outcomes: list[_Outcome] = []
    try:
        for case in cases:
            o = _call(fn, case)
            if o.kind != "exception":
                o = judge(o)
            if o.ok and extra is not None:
                o = extra(o)
            outcomes.append(o)
    except _NotAttempted:
        return CheckResult(
            exercise,
            "not attempted",
            "Not attempted yet: your function still raises `NotImplementedError`. Replace that "
            "line with your code, run its cell, then run this check again.",
            cases_total=len(cases),
        )
    passed = [o for o in outcomes if o.ok]
    failed = [o for o in outcomes if not o.ok]
    listing = _case_list(outcomes, cases)
    if not failed:
        notes = sorted({o.note for o in outcomes if o.note})
        msg = f"All {len(cases)} cases passed. Well done!"
        if notes:
            msg += "\n" + "\n".join(notes)
        return CheckResult(exercise, "passed", msg + "\n" + listing, None, len(cases), len(cases))

    first = failed[0]
    status = "error" if first.kind == "exception" else "failed"
    parts = [f"Not quite yet: {len(passed)} of {len(cases)} cases passed."]
    if first.kind == "exception":
        parts.append(_explain_exception(first.exc, first.case, arg_names))
    else:
        parts.append(f"On {first.case.label} ({first.case.describe()}), {first.detail}")
    key = {
        "none": "forgot_return",
        "type": "not_a_tensor",
        "mutated": "mutated_input",
        "copy": "copied",
        "device": "wrong_device",
    }.get(first.kind)
    named = {m.key: m for m in mistakes}
    if key in named:
        parts.append(f"\nLooks like you {named[key].title}. {named[key].hint}")
    mistake = _recognise(failed, mistakes) if key is None else None
    letter = _partition(passed, failed)
    same_shape = [o for o in outcomes if o.case.sizes and o.case.sizes == first.case.sizes]
    if key is not None:
        pass  # the detail above already says what to do
    elif mistake is not None:
        key = mistake.key
        parts.append(f"\nLooks like you {mistake.title}. {mistake.hint}")
    elif all(o.kind == "dtype" for o in failed):
        key = "wrong_dtype"
        parts.append(
            "\nYour numbers are right; only the dtype is off. A tensor made with "
            "`torch.zeros(...)` or `torch.tensor(...)` is float32 unless you say otherwise: pass "
            "`dtype=` (and `device=`) from an input, or build the result from the inputs "
            "themselves."
        )
    elif len({tuple(o.case.sizes.items()) for o in passed}) == 1 and all(
        o.case.sizes != passed[0].case.sizes for o in failed
    ):
        key = "only_shape"
        shape = tuple(passed[0].case.sizes.values())
        parts.append(
            f"\nYour function works only when the inputs have the sizes {shape}. A size is "
            f"probably written into your code as a number (in a `view`, `reshape`, `zeros`, a "
            f"`range`, or an index): take every size from the inputs' `.shape` instead."
        )
    elif letter:
        key = f"only_{letter}"
        good = sorted({o.case.sizes[letter] for o in passed})
        bad = sorted({o.case.sizes[letter] for o in failed})
        name = {"B": "batch size B", "T": "number of words T", "H": "hidden size H"}[letter]
        parts.append(
            f"\nYour function works when the {name} is {_join(good)}, but not when it is "
            f"{_join(bad)}. A size is probably written into your code as a number (in a "
            f"`view`, `reshape`, `zeros`, a `range`, or an index): take every size from the "
            f"inputs' `.shape` instead."
        )
    elif _constant_output(same_shape):
        key = "hard_coded"
        parts.append(
            "\nYour function gave exactly the same numbers for two different inputs of the same "
            "shape, so the answer seems to be written into the code. Compute it from the "
            "inputs: the checker uses fresh random numbers every time."
        )
    if first.mutated and first.kind != "mutated":
        parts.append(
            f"\nAlso: your function changed its input {' and '.join(first.mutated)} in place; "
            f"compute a new tensor instead."
        )
    parts.append("\n" + listing)
    return CheckResult(exercise, status, "\n".join(parts), key, len(passed), len(cases))


def _join(values: Sequence[int]) -> str:
    v = [str(x) for x in values]
    return v[0] if len(v) == 1 else ", ".join(v[:-1]) + " or " + v[-1]


def _constant_output(outcomes: list[_Outcome]) -> bool:
    outs = [o.output for o in outcomes if isinstance(o.output, Tensor)]
    if len(outs) < 2:
        return False
    return all(torch.equal(outs[0].detach().cpu(), x.detach().cpu()) for x in outs[1:])


def _expected(f: Callable[..., Tensor], *args: Tensor, dtype: torch.dtype) -> Tensor:
    """The oracle in float64, returned in the dtype the student's result must have."""
    device = args[0].device
    a64 = tuple(
        a.detach().to("cpu", torch.float64) if a.is_floating_point() else a.cpu() for a in args
    )
    return f(*a64).to(device, dtype)


# --------------------------------------------------------------------------------------------
# Lesson 02: the weighted sum, masked, softmaxed, and its gradient


def _xw(gen: torch.Generator, b: int, t: int, h: int, *, dtype=torch.float32, raw: bool = False):
    x = torch.randn(b, t, h, generator=gen, dtype=torch.float64)  # (B,T,H)
    s = torch.randn(b, t, generator=gen, dtype=torch.float64)  # (B,T)
    w = s * 2 if raw else s.softmax(dim=1)  # (B,T)
    return x.to(dtype), w.to(dtype)


def _weighted_cases(seed: int | None) -> tuple[list[tuple], Random, torch.Generator]:
    """(label, x, w, sizes) for the standard set of shapes, fresh values each call."""
    s = _fresh_seed(seed)
    rng, gen = Random(s), torch.Generator().manual_seed(s % 2**63)
    out = []
    x, w = examples.classic()
    out.append(("the classic example", x, w))
    out.append(("the classic shape with fresh random values", *_xw(gen, 2, 3, 5)))
    b, t, h = _sizes(rng, 3, 3, 7)
    while b == 2:
        b, t, h = _sizes(rng, 3, 3, 7)
    out.append(("B, T, H all different", *_xw(gen, b, t, h)))
    # B = 2 also meets T != 3 and T = 3 also meets B != 2, so a hard-coded size is pinned down
    t = rng.choice([4, 6])
    out.append(("the T == H trap", *_xw(gen, 2, t, t)))
    out.append(("B = 1", *_xw(gen, 1, 3, rng.choice([2, 4, 5, 6]))))
    t = rng.choice([3, 4, 5])
    out.append(("B = 1 with T == H", *_xw(gen, 1, t, t)))
    b, h = _sizes(rng, 2, 3, 6)
    out.append(("T = 1", *_xw(gen, b, 1, h)))
    b, t, h = _sizes(rng, 3, 2, 7, avoid=(2,))
    out.append(
        (
            "float64 inputs with weights that do not sum to 1",
            *_xw(gen, b, t, h, dtype=torch.float64, raw=True),
        )
    )
    if torch.cuda.is_available():  # where there is a GPU, the device is checked too
        b, t, h = _sizes(rng, 3, 2, 7)
        out.append(("inputs on the GPU", *(a.cuda() for a in _xw(gen, b, t, h))))
    return out, rng, gen


def _sizes_of(x: Tensor) -> dict[str, int]:
    b, t, h = x.shape
    return {"B": b, "T": t, "H": h}


def _ws(x: Tensor, w: Tensor) -> Tensor:
    return (x * w[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


_HINT_NEW_AXIS = (
    "PyTorch lines shapes up from the right, so att_scores (B, T) meets the LAST two axes of "
    "net_output (B, T, H): its words were multiplied along the hidden axis. This fails loudly when "
    "T != H and silently when T == H with B = 1. att_scores needs a trailing axis of size 1, "
    "(B, T) → (B, T, 1), so that T meets T and the 1 stretches along H."
)

_WEIGHTED_MISTAKES = [
    _Mistake(
        "forgot_new_axis",
        "forgot `[..., None]`",
        _HINT_NEW_AXIS,
        lambda x, w: (x * w).sum(dim=1),
    ),
    _Mistake(
        "axis_in_middle",
        "put the new axis in the middle (`[:, None]`) instead of at the end",
        "att_scores became (B, 1, T), so its words met net_output's hidden axis: that fails "
        "loudly when T != H and silently when T == H. The size-1 axis has to be the last one, "
        "(B, T, 1), so that T meets T and the 1 stretches along H.",
        lambda x, w: (x * w[:, None]).sum(dim=1),
    ),
    _Mistake(
        "wrong_axis",
        "summed the wrong axis",
        "Your sum collapsed the hidden axis H and kept the words. The sum should add up the "
        "words of each sentence (axis T) and keep one vector of H numbers per sentence. Which "
        "axis number is T in (B, T, H)?",
        lambda x, w: (x * w[..., None]).sum(dim=2),
    ),
    _Mistake(
        "summed_sentences",
        "summed over the sentences (axis B) instead of the words",
        "Axis 0 is the batch of sentences; each sentence must keep its own result. Which axis "
        "number holds the words?",
        lambda x, w: (x * w[..., None]).sum(dim=0),
    ),
    _Mistake(
        "summed_everything_but_hidden",
        "summed over the sentences as well as the words",
        "Each sentence must keep its own vector, so the result has one row per sentence.",
        lambda x, w: (x * w[..., None]).sum(dim=(0, 1)),
    ),
    _Mistake(
        "summed_everything",
        "summed every number into one",
        "A sum with no axis adds everything up. Name the axis to collapse.",
        lambda x, w: (x * w[..., None]).sum(),
    ),
    _Mistake(
        "kept_dim",
        "kept the word axis (a size-1 axis is left over)",
        "Your result has shape (B, 1, H): the sum kept the collapsed axis. Drop `keepdim=True` "
        "(or remove that axis) so the result is (B, H).",
        lambda x, w: (x * w[..., None]).sum(dim=1, keepdim=True),
    ),
    _Mistake(
        "no_sum",
        "multiplied but did not sum",
        "The product (B, T, H) scales each word by its weight; the words of each sentence still "
        "have to be added up.",
        lambda x, w: x * w[..., None],
    ),
    _Mistake(
        "mean_not_sum",
        "took the mean instead of the sum",
        "The mean divides by the number of words T. The weights already say how much each word "
        "counts, so add the weighted words up; don't average them.",
        lambda x, w: (x * w[..., None]).mean(dim=1),
    ),
    _Mistake(
        "unweighted_sum",
        "added up the words without the weights",
        "att_scores never entered your result: multiply each word by its weight before adding.",
        lambda x, w: x.sum(dim=1),
    ),
    _Mistake(
        "unweighted_mean",
        "averaged the words without the weights",
        "That is mean pooling; it ignores att_scores. Multiply each word by its weight, then add.",
        lambda x, w: x.mean(dim=1),
    ),
    _Mistake(
        "softmaxed_weights",
        "applied a softmax to att_scores",
        "Here att_scores are already the weights: use them as they are. (A softmax belongs to "
        "raw scores; that is the next exercise.)",
        lambda x, w: (x * w.softmax(dim=1)[..., None]).sum(dim=1),
    ),
    _Mistake(
        "normalised_weights",
        "divided by the sum of the weights",
        "Use the weights exactly as given, even when they do not add up to 1.",
        lambda x, w: (x * w[..., None]).sum(dim=1) / w.sum(dim=1, keepdim=True),
    ),
    _Mistake(
        "transposed_result",
        "returned the result transposed, (H, B)",
        "The result should have one row per sentence: (B, H).",
        lambda x, w: (x * w[..., None]).sum(dim=1).T,
    ),
    _Mistake(
        "first_sentence_weights",
        "used the first sentence's weights for every sentence",
        "Each sentence has its own row of att_scores; index them per sentence (or let "
        "broadcasting pair them up).",
        lambda x, w: (x * w[:1, :, None]).sum(dim=1),
    ),
]


def check_weighted_sum(
    fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), att_scores (B, T)) -> weighted (B, H).

    weighted[b, h] = sum over t of att_scores[b, t] * net_output[b, t, h]; the result keeps the
    inputs' dtype and device. Fresh random inputs on every call (pass seed= to repeat one).
    """
    raw, _, _ = _weighted_cases(seed)
    cases = [
        _Case(
            label,
            (x, w),
            ("net_output", "att_scores"),
            _expected(_ws, x, w, dtype=x.dtype),
            _sizes_of(x),
        )
        for label, x, w in raw
    ]
    return _check("weighted_sum", fn, cases, _WEIGHTED_MISTAKES, arg_names="net_output, att_scores")


def _masked_ws(x: Tensor, w: Tensor, mask: Tensor) -> Tensor:
    return (x * (w * mask)[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


_MASKED_MISTAKES = [
    _Mistake(
        "ignored_mask",
        "ignored the mask",
        "The padded words (mask False) still counted. Their weight must be zero, whatever "
        "att_scores says there.",
        lambda x, w, m: _ws(x, w),
    ),
    _Mistake(
        "inverted_mask",
        "kept the padding and dropped the real words (the mask is inverted)",
        "In this mask True marks a real word and False marks padding.",
        lambda x, w, m: _masked_ws(x, w, ~m),
    ),
    _Mistake(
        "mask_on_hidden",
        "lined the mask up with the hidden axis",
        "mask (B, T) meets the last two axes of (B, T, H) when shapes are aligned from the "
        "right, so it landed on the hidden axis. Like att_scores, it needs a trailing axis of "
        "size 1 before it meets net_output.",
        lambda x, w, m: (x * w[..., None] * m[:, None, :]).sum(dim=1),
    ),
    _Mistake(
        "minus_inf",
        "put -inf on the padded words",
        "-inf is the trick for raw scores that go through a softmax afterwards (exp(-inf) = 0). "
        "Here the weights multiply the words directly, so padding needs weight 0: -inf times a "
        "number gives -inf or NaN.",
        lambda x, w, m: _ws(x, w.masked_fill(~m, float("-inf"))),
    ),
    _Mistake(
        "renormalised",
        "renormalised the weights over the real words",
        "Keep the weights as given and just leave the padding out; don't divide by their sum.",
        lambda x, w, m: _masked_ws(x, w, m) / (w * m).sum(dim=1, keepdim=True),
    ),
    _Mistake(
        "masked_after_sum",
        "applied the mask after summing",
        "Once the words are added up you cannot take the padding back out: zero the padded "
        "words' weights before the sum.",
        lambda x, w, m: _ws(x, w) * m.any(dim=1, keepdim=True),
    ),
] + [
    _Mistake(m.key, m.title, m.hint, (lambda f: lambda x, w, mask: f(x, w * mask))(m.compute))
    for m in _WEIGHTED_MISTAKES
]


def check_masked_weighted_sum(
    fn: Callable[[Tensor, Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), att_scores (B, T), mask (B, T) bool) -> (B, H).

    Only the real words (mask True) count: weighted[b, h] = sum over t with mask[b, t] of
    att_scores[b, t] * net_output[b, t, h]. The padded words hold nonzero numbers and nonzero
    weights in every case, so ignoring the mask shows; one case has a sentence that is all padding
    (its result is zeros).
    """
    raw, rng, gen = _weighted_cases(seed)
    cases = []
    for i, (label, x, w) in enumerate(raw):
        b, t, _ = x.shape
        if i == 0:
            mask = examples.padded(2, 3, 5)[2]  # (2, 3): the classic padded mask
        else:
            mask = (torch.rand(b, t, generator=gen) < 0.6).to(x.device)  # (B,T)
            mask[0, 0] = True  # sentence 0 keeps a real word ...
            if t > 1:
                mask[0, -1] = False  # ... and some padding
            if b > 2:
                mask[-1] = False  # a sentence that is all padding
        cases.append(
            _Case(
                label,
                (x, w, mask),
                ("net_output", "att_scores", "mask"),
                _expected(_masked_ws, x, w, mask, dtype=x.dtype),
                _sizes_of(x),
            )
        )
    return _check(
        "masked_weighted_sum",
        fn,
        cases,
        _MASKED_MISTAKES,
        arg_names="net_output, att_scores, mask",
    )


def _softmax_ws(x: Tensor, s: Tensor) -> Tensor:
    return _ws(x, s.softmax(dim=1))  # softmax over words, then (B,T,H) * (B,T,1) -> (B,H)


def _naive_softmax(s: Tensor, dim: int) -> Tensor:
    e = s.exp()
    return e / e.sum(dim=dim, keepdim=True)


_SOFTMAX_MISTAKES = [
    _Mistake(
        "forgot_softmax",
        "used the raw scores as weights (no softmax)",
        "The scores here are any real numbers; turn them into weights that are positive and sum "
        "to 1 over each sentence's words with a softmax first.",
        lambda x, s: _ws(x, s),
    ),
    _Mistake(
        "softmax_over_sentences",
        "took the softmax over the sentences (axis 0) instead of the words",
        "The weights of each sentence's words should sum to 1, so the softmax runs along the "
        "word axis of the (B, T) scores.",
        lambda x, s: _ws(x, s.softmax(dim=0)),
    ),
    _Mistake(
        "softmax_over_size_one_axis",
        "took the softmax over an axis of size 1",
        "A softmax over a single number always gives 1, so every word got weight 1 and your "
        "result is the plain sum. Take the softmax over the words, before adding the new axis.",
        lambda x, s: x.sum(dim=1),
    ),
    _Mistake(
        "naive_exp_overflow",
        "computed the softmax as exp(s) / sum(exp(s)) without subtracting the maximum",
        "On large scores exp overflows to inf (float32 overflows above about 88) and inf / inf "
        "is NaN. Subtracting each sentence's largest score first changes nothing mathematically "
        "and keeps exp finite; `torch.softmax` does this for you.",
        lambda x, s: _ws(x, _naive_softmax(s, 1)),
    ),
    _Mistake(
        "softmax_after_sum",
        "applied the softmax to the result instead of the scores",
        "The softmax turns the scores (B, T) into weights; it goes before the weighted sum.",
        lambda x, s: _ws(x, s).softmax(dim=1),
    ),
] + [
    _Mistake(m.key, m.title, m.hint, (lambda f: lambda x, s: f(x, s.softmax(dim=1)))(m.compute))
    for m in _WEIGHTED_MISTAKES
    if m.key not in ("softmaxed_weights", "normalised_weights")
]


def check_softmax_weighted_sum(
    fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), scores (B, T)) -> (B, H): softmax over words, then weight.

    scores are raw, any real numbers; one case has large scores (tens to a hundred), where a
    softmax written as exp(s) / sum(exp(s)) overflows.
    """
    raw, rng, gen = _weighted_cases(seed)
    cases = []
    for label, x, w in raw:
        s = (w.double().clamp_min(1e-6).log() * 1.5).to(x.dtype)  # raw scores, not summing to 1
        cases.append(
            _Case(
                label,
                (x, s),
                ("net_output", "scores"),
                _expected(_softmax_ws, x, s, dtype=x.dtype),
                _sizes_of(x),
            )
        )
    b, t, h = _sizes(rng, 3, 2, 6)
    x, _ = _xw(gen, b, t, h)
    s = (60 + 60 * torch.rand(b, t, generator=gen)).to(torch.float32)  # (B,T), exp(s) overflows
    cases.append(
        _Case(
            "large scores",
            (x, s),
            ("net_output", "scores"),
            _expected(_softmax_ws, x, s, dtype=x.dtype),
            _sizes_of(x),
        )
    )
    return _check(
        "softmax_weighted_sum", fn, cases, _SOFTMAX_MISTAKES, arg_names="net_output, scores"
    )


def _weights_grad(x: Tensor, g: Tensor) -> Tensor:
    return (x * g[:, None, :]).sum(dim=2)  # (B,T,H) * (B,1,H) -> sum over H -> (B,T)


_GRAD_MISTAKES = [
    _Mistake(
        "grad_on_words",
        "lined grad_weighted up with the word axis",
        "grad_weighted is (B, H): one number per sentence and hidden feature. To meet net_output "
        "(B, T, H) it has to line up with B and H, so its missing axis is the word axis, in the "
        "middle. Aligned from the right without it, H meets H only by luck when T == H.",
        lambda x, g: (x * g[..., None]).sum(dim=2),
    ),
    _Mistake(
        "grad_wrong_axis",
        "summed over the words instead of the hidden axis",
        "Each weight att_scores[b, t] touched a whole word vector of H numbers; its gradient adds "
        "up over those H numbers and keeps one number per word: (B, T).",
        lambda x, g: (x * g[:, None, :]).sum(dim=1),
    ),
    _Mistake(
        "grad_ignored_upstream",
        "left grad_weighted out",
        "Without grad_weighted you computed the gradient of a plain sum (as if every upstream "
        "gradient were 1). The chain rule multiplies by the gradient coming from above.",
        lambda x, g: x.sum(dim=2),
    ),
    _Mistake(
        "grad_kept_dim",
        "kept the hidden axis (a size-1 axis is left over)",
        "The gradient of att_scores has att_scores' own shape, (B, T).",
        lambda x, g: (x * g[:, None, :]).sum(dim=2, keepdim=True),
    ),
    _Mistake(
        "grad_no_sum",
        "multiplied but did not sum",
        "Broadcasting copied each weight along H in the forward pass, so the backward pass adds "
        "up the gradients of those copies: sum over the axis the weight was stretched along.",
        lambda x, g: x * g[:, None, :],
    ),
    _Mistake(
        "grad_of_net_output",
        "returned the gradient of net_output instead of att_scores",
        "That one would be (B, T, H); this exercise asks for the gradient of att_scores, (B, T).",
        lambda x, g: g[:, None, :].expand_as(x),
    ),
]


def check_weights_grad(
    fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), grad_weighted (B, H)) -> grad of att_scores (B, T).

    With weighted = (net_output * att_scores[..., None]).sum(dim=1) and grad_weighted the gradient
    of the loss with respect to weighted, the answer is what autograd puts in att_scores.grad.
    """
    raw, rng, gen = _weighted_cases(seed)
    cases = []
    for label, x, _ in raw:
        b, _, h = x.shape
        g = torch.randn(b, h, generator=gen, dtype=torch.float64).to(x.device, x.dtype)  # (B,H)
        cases.append(
            _Case(
                label,
                (x, g),
                ("net_output", "grad_weighted"),
                _expected(_weights_grad, x, g, dtype=x.dtype),
                _sizes_of(x),
            )
        )
    return _check("weights_grad", fn, cases, _GRAD_MISTAKES, arg_names="net_output, grad_weighted")


# --------------------------------------------------------------------------------------------
# Lesson 01: a new axis, expand, and the broadcasting rule itself


def _bt_cases(seed: int | None) -> tuple[list[tuple[str, Tensor]], Random]:
    s = _fresh_seed(seed)
    rng, gen = Random(s), torch.Generator().manual_seed(s % 2**63)
    out = [("the classic att_scores", examples.classic()[1])]
    b, t = _sizes(rng, 2, 3, 7)
    out.append(("B and T different", torch.rand(b, t, generator=gen)))
    n = rng.choice([3, 4, 5])
    out.append(
        ("B == T (a square, where a transpose goes unnoticed)", torch.rand(n, n, generator=gen))
    )
    out.append(("B = 1", torch.rand(1, rng.randint(2, 6), generator=gen)))
    out.append(("T = 1", torch.rand(rng.randint(2, 6), 1, generator=gen)))
    b, t = _sizes(rng, 2, 2, 6)
    out.append(("float64", torch.rand(b, t, generator=gen, dtype=torch.float64)))
    return out, rng


_ADD_AXIS_MISTAKES = [
    _Mistake(
        "axis_in_front",
        "added the new axis in front",
        "`None` (or `unsqueeze`) puts the new size-1 axis exactly where you write it; the new "
        "axis should come last, after B and T.",
        lambda w: w[None],
    ),
    _Mistake(
        "axis_in_middle",
        "added the new axis in the middle",
        "Your shape is (B, 1, T): the new size-1 axis sits between B and T. It should come last.",
        lambda w: w[:, None],
    ),
    _Mistake(
        "two_axes",
        "added two axes",
        "One new axis of size 1 is enough: (B, T) → (B, T, 1).",
        lambda w: w[..., None, None],
    ),
    _Mistake(
        "unchanged",
        "returned att_scores unchanged",
        "The result should have one more axis than the input, of size 1, at the end.",
        lambda w: w,
    ),
    _Mistake(
        "flattened",
        "flattened the weights into one column",
        "reshape(-1, 1) mixes B and T into a single axis of B·T numbers; keep B and T as they are "
        "and add a size-1 axis after them.",
        lambda w: w.reshape(-1, 1),
    ),
    _Mistake(
        "transposed",
        "transposed the weights",
        "The shape fits only because B == T here: B and T swapped places. Keep their order.",
        lambda w: w.T[..., None],
    ),
]


def _note_copy(o: _Outcome) -> _Outcome:
    w, out = o.case.args[0], o.output
    if out.untyped_storage().data_ptr() != w.untyped_storage().data_ptr():
        o.note = (
            "Note: your result is a copy. Adding an axis with `None` or `unsqueeze` gives a view "
            "that shares att_scores' memory and costs nothing."
        )
    return o


def check_add_axis(fn: Callable[[Tensor], Tensor], *, seed: int | None = None) -> CheckResult:
    """Check fn(att_scores (B, T)) -> (B, T, 1), the same numbers with a trailing axis of size 1."""
    raw, _ = _bt_cases(seed)
    cases = [
        _Case(
            label, (w,), ("att_scores",), w.clone()[..., None], {"B": w.shape[0], "T": w.shape[1]}
        )
        for label, w in raw
    ]
    return _check(
        "add_axis", fn, cases, _ADD_AXIS_MISTAKES, arg_names="att_scores", extra=_note_copy
    )


def _expand_ok(o: _Outcome) -> _Outcome:
    w, h = o.case.args
    out = o.output
    shares = out.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
    if not shares or (h > 1 and out.stride(-1) != 0):
        o.ok, o.kind = False, "copy"
        o.detail = (
            f"the numbers are right, but your result is a copy: it stores {out.numel()} numbers "
            f"where a view would store {w.numel()}."
        )
    return o


_EXPAND_MISTAKES = [
    _Mistake(
        "copied",
        "made a copy (with `repeat`, `.contiguous()`, `torch.cat` or a multiplication)",
        "`repeat` writes every number H times into new memory. `expand` gives the same tensor "
        "as a view: the new axis gets stride 0, so stepping along it stays on the same number "
        "and nothing is copied. Check with `.stride()` and `.untyped_storage().data_ptr()`.",
        lambda w, h: w[..., None].repeat(1, 1, h),
    ),
    _Mistake(
        "expanded_wrong_axis",
        "stretched the weights along the wrong axis",
        "Your result is (B, H, T): the new axis went in the middle. The weights of the words "
        "must stay on the word axis and be repeated along a new, last axis of size H.",
        lambda w, h: w[:, None, :].expand(w.shape[0], h, w.shape[1]),
    ),
    _Mistake(
        "expand_without_axis",
        "asked `expand` to stretch an axis that is not of size 1",
        "`expand` aligns shapes from the right, like broadcasting, and only stretches axes of "
        "size 1. Give att_scores its trailing size-1 axis first, then expand that axis to H.",
        lambda w, h: w.expand(w.shape[0], w.shape[1], h),
    ),
]


def check_expand_weights(
    fn: Callable[[Tensor, int], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(att_scores (B, T), h) -> (B, T, H): each weight repeated along hidden, as a VIEW.

    The result must share att_scores' memory with stride 0 along the new axis (what `expand`
    gives); a copy (what `repeat` gives) has the right numbers but fails, with the reason.
    """
    raw, rng = _bt_cases(seed)
    cases = []
    for label, w in raw:
        b, t = w.shape
        h = rng.choice([s for s in range(2, 8) if s not in (b, t)])
        if label.startswith("B == T"):
            h = t  # the trap: (B, H, T) has the same shape as (B, T, H)
        cases.append(
            _Case(
                label,
                (w, h),
                ("att_scores", "h"),
                w.clone()[..., None].expand(b, t, h).clone(),
                {"B": b, "T": t, "H": h},
            )
        )
    return _check(
        "expand_weights",
        fn,
        cases,
        _EXPAND_MISTAKES,
        arg_names="att_scores, h",
        judge=_judge_expand,
    )


def _judge_expand(o: _Outcome) -> _Outcome:
    o = _judge_tensor(o)
    return _expand_ok(o) if o.ok else o


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The oracle: torch's own rule; None when the shapes do not broadcast."""
    try:
        return tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        return None


def _left_aligned(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    n = max(len(a), len(b))
    a2, b2 = a + (1,) * (n - len(a)), b + (1,) * (n - len(b))
    if any(x != y and 1 not in (x, y) for x, y in zip(a2, b2, strict=True)):
        return None
    return tuple(max(x, y) for x, y in zip(a2, b2, strict=True))


def _broadcast_cases(rng: Random) -> list[tuple[str, tuple, tuple]]:
    def dims(n: int) -> tuple[int, ...]:
        return tuple(rng.randint(2, 7) for _ in range(n))

    b, t, h = _sizes(rng, 3, 2, 9)
    pairs = [
        ("net_output and att_scores[..., None]", (2, 3, 5), (2, 3, 1)),
        ("net_output and att_scores, no new axis", (2, 3, 5), (2, 3)),
        ("fresh (B, T, H) and (B, T, 1)", (b, t, h), (b, t, 1)),
        ("fresh (B, T, H) and (B, T)", (b, t, h), (b, t)),
        ("a shorter shape on the left", (t, h), (b, t, h)),
        ("size-1 axes on both sides", (b, 1, h), (1, t, 1)),
        ("a scalar, shape ()", (), dims(2)),
        ("the T == H trap, (B, T, T) and (B, T)", (b, t, t), (b, t)),
    ]
    a = dims(3)
    pairs.append(("equal shapes", a, a))
    a = dims(4)
    pairs.append(("a 4-axis shape and its last two axes", a, a[2:]))
    pairs.append(("sizes that differ and are not 1", (b, t), (b, t + 1)))
    return pairs


def check_broadcast_shape(
    fn: Callable[[tuple[int, ...], tuple[int, ...]], tuple[int, ...]], *, seed: int | None = None
) -> CheckResult:
    """Check fn(shape_a, shape_b) -> the broadcast shape (a tuple), raising ValueError if none.

    The rule: align the shapes from the right; two sizes fit when they are equal or one is 1; a
    missing axis counts as 1; the result takes the larger size.
    """
    exercise = "broadcast_shape"
    if not callable(fn):
        return _check(exercise, fn, [], [], arg_names="shape_a, shape_b")
    rng = Random(_fresh_seed(seed))
    pairs = _broadcast_cases(rng)
    results: list[tuple[str, bool, str, str]] = []  # label, ok, detail, mistake
    for label, a, b in pairs:
        want = _broadcast(a, b)
        try:
            got = fn(a, b)
        except NotImplementedError:
            return CheckResult(
                exercise,
                "not attempted",
                "Not attempted yet: your function still raises `NotImplementedError`. Replace "
                "that line with your code, run its cell, then run this check again.",
                cases_total=len(pairs),
            )
        except ValueError:
            if want is None:
                results.append((label, True, "", ""))
            else:
                results.append(
                    (
                        label,
                        False,
                        f"for {a} and {b} your function raised ValueError, but these shapes do broadcast.",
                        "too_strict" + (" left_aligned" if _left_aligned(a, b) is None else ""),
                    )
                )
            continue
        except Exception as exc:
            detail = (
                f"for {a} and {b} your function raised `{type(exc).__name__}: {str(exc)[:200]}`."
            )
            where = _student_line(exc)
            if want is None:
                detail += " These shapes indeed do not broadcast, but say so with `raise ValueError(...)`."
            results.append(
                (
                    label,
                    False,
                    detail + (" " + where if where else ""),
                    "wrong_exception" if want is None else "crashed",
                )
            )
            continue
        if want is None:
            results.append(
                (
                    label,
                    False,
                    f"for {a} and {b} your function returned {got!r}, but these shapes cannot broadcast: it should raise ValueError.",
                    "no_check" + (" left_aligned" if _astuple(got) == _left_aligned(a, b) else ""),
                )
            )
            continue
        if isinstance(got, list) and tuple(got) == want:
            results.append(
                (
                    label,
                    False,
                    f"for {a} and {b} your function returned a list; return a tuple (e.g. `tuple(result)`).",
                    "list",
                )
            )
            continue
        if not isinstance(got, tuple) or tuple(got) != want or any(type(v) is not int for v in got):
            mistake = ""
            if isinstance(got, tuple | list):
                g = tuple(got)
                if g == _left_aligned(a, b):
                    mistake = "left_aligned"
                elif g == tuple(reversed(want)):
                    mistake = "reversed"
                elif len(g) == min(len(a), len(b)):
                    mistake = "dropped_axes"
                elif len(g) == len(want) and all(
                    x == min(p, q)
                    for x, p, q in zip(
                        g,
                        (1,) * (len(want) - len(a)) + a,
                        (1,) * (len(want) - len(b)) + b,
                        strict=True,
                    )
                ):
                    mistake = "took_min"
                elif tuple(got) == want:
                    mistake = "not_ints"
            results.append(
                (
                    label,
                    False,
                    f"for {a} and {b} your function returned {got!r}, which is not their broadcast shape.",
                    mistake,
                )
            )
            continue
        results.append((label, True, "", ""))
    hints = {
        "left_aligned": "Looks like you aligned the shapes from the LEFT. Broadcasting aligns them from the right: the last axes meet first, and a shorter shape gets 1s added on its left.",
        "reversed": "Looks like you built the result from the right but forgot to turn it back around at the end.",
        "dropped_axes": "Looks like the result stops at the shorter shape (what `zip` does). The longer shape's extra axes on the left are kept: treat the missing sizes as 1.",
        "took_min": "Looks like you took the smaller size where one of them is 1. A size-1 axis stretches to the other size.",
        "no_check": "Looks like you never check whether two sizes fit. They fit only when they are equal or one of them is 1; otherwise raise ValueError.",
        "too_strict": "Looks like your check is too strict: two sizes fit when they are equal OR one of them is 1, and a missing axis counts as 1.",
        "wrong_exception": "Raise ValueError (with a message naming the sizes) when the shapes do not fit.",
        "list": "The numbers are right; return them as a tuple, like `torch.Size` and numpy's `.shape`.",
        "not_ints": "Return plain ints in the tuple.",
        "crashed": "Your function crashed on shapes that do broadcast; print the sizes it compares step by step.",
    }
    return _summarise(exercise, results, hints)


def _astuple(x: object) -> tuple | None:
    try:
        return tuple(x)
    except TypeError:
        return None


# --------------------------------------------------------------------------------------------
# Lesson 03: memory of the one-liner, and a timer done right


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def check_intermediate_bytes(
    fn: Callable[[int, int, int, torch.dtype], int], *, seed: int | None = None
) -> CheckResult:
    """Check fn(b, t, h, dtype) -> bytes of the temporary that `net_output * att_scores[..., None]`
    allocates before `.sum(dim=1)` reduces it, as an int."""
    exercise = "intermediate_bytes"
    if not callable(fn):
        return _check(exercise, fn, [], [], arg_names="b, t, h, dtype")
    rng = Random(_fresh_seed(seed))
    dtypes = [torch.float32, torch.float16, torch.float64, torch.bfloat16]
    cases = [("the classic shape, float32", 2, 3, 5, torch.float32)]
    for dtype in dtypes:
        b, t, h = _sizes(rng, 3, 2, 64)
        cases.append((f"a fresh shape in {_dtype(dtype)}", b, t, h, dtype))
    b, t = rng.randint(16, 256), rng.randint(64, 1024)
    cases.append(("a realistic batch, float16", b, t, 768, torch.float16))
    mistakes = {
        "elements": lambda b, t, h, s: b * t * h,
        "output_only": lambda b, t, h, s: b * h * s,
        "counted_expand": lambda b, t, h, s: 2 * b * t * h * s,
        "fixed_itemsize_4": lambda b, t, h, s: b * t * h * 4,
        "fixed_itemsize_8": lambda b, t, h, s: b * t * h * 8,
        "bits": lambda b, t, h, s: b * t * h * s * 8,
        "with_output": lambda b, t, h, s: (b * t * h + b * h) * s,
    }
    hints = {
        "elements": "Looks like you counted numbers, not bytes: each number takes as many bytes as its dtype needs (`torch.empty((), dtype=dtype).element_size()`).",
        "output_only": "Looks like you counted the final (B, H) result; the question is about the (B, T, H) temporary made by the product before the sum.",
        "counted_expand": "Looks like you also counted att_scores[..., None] stretched to (B, T, H). Broadcasting never materialises it: the new axis is a view with stride 0 and costs no memory.",
        "fixed_itemsize_4": "Looks like you assumed 4 bytes per number: that holds for float32 only. Take the size from the dtype.",
        "fixed_itemsize_8": "Looks like you assumed 8 bytes per number: that holds for float64 only. Take the size from the dtype.",
        "bits": "Looks like you counted bits; there are 8 bits in a byte.",
        "with_output": "Looks like you added the (B, H) result too; count only the (B, T, H) temporary.",
    }
    results = []
    for label, b, t, h, dtype in cases:
        want = b * t * h * _itemsize(dtype)
        try:
            got = fn(b, t, h, dtype)
        except NotImplementedError:
            return CheckResult(
                exercise,
                "not attempted",
                "Not attempted yet: your function still raises `NotImplementedError`. Replace that line with your code, run its cell, then run this check again.",
                cases_total=len(cases),
            )
        except Exception as exc:
            where = _student_line(exc)
            results.append(
                (
                    label,
                    False,
                    f"for b={b}, t={t}, h={h}, dtype={_dtype(dtype)} your function raised `{type(exc).__name__}: {str(exc)[:200]}`."
                    + (" " + where if where else ""),
                    "crashed",
                )
            )
            continue
        if isinstance(got, bool) or not isinstance(got, int | np.integer):
            ok_value = isinstance(got, float | np.floating) and math.isfinite(got) and got == want
            results.append(
                (
                    label,
                    False,
                    f"for b={b}, t={t}, h={h}, dtype={_dtype(dtype)} your function returned a {type(got).__name__}; return a whole number of bytes as an int"
                    + (" (the value itself is right)." if ok_value else "."),
                    "not_int",
                )
            )
            continue
        if int(got) == want:
            results.append((label, True, "", ""))
            continue
        s = _itemsize(dtype)
        key = " ".join(k for k, f in mistakes.items() if f(b, t, h, s) == int(got) != want)
        results.append(
            (
                label,
                False,
                f"for b={b}, t={t}, h={h}, dtype={_dtype(dtype)} your function returned {int(got)}, which is not the size of that temporary.",
                key,
            )
        )
    return _summarise(
        exercise,
        results,
        hints
        | {
            "crashed": "Your function crashed; check it with a small example by hand.",
            "not_int": "Return an int.",
        },
    )


def _summarise(
    exercise: str, results: list[tuple[str, bool, str, str]], hints: dict[str, str]
) -> CheckResult:
    n_ok = sum(ok for _, ok, _, _ in results)
    listing = "Cases: " + "  ".join(("✓ " if ok else "✗ ") + label for label, ok, _, _ in results)
    if n_ok == len(results):
        return CheckResult(
            exercise,
            "passed",
            f"All {len(results)} cases passed. Well done!\n{listing}",
            None,
            n_ok,
            n_ok,
        )
    first = next(r for r in results if not r[1])
    # each failing case names the mistakes that explain it; pick the one explaining the most
    keys = [k for r in results if not r[1] for k in r[3].split()]
    key = max(dict.fromkeys(keys), key=keys.count) if keys else None
    msg = f"Not quite yet: {n_ok} of {len(results)} cases passed.\nOn {first[0]}, {first[2]}"
    if key:
        msg += "\n\n" + hints[key]
    status = "error" if "crashed" in first[3].split() else "failed"
    return CheckResult(exercise, status, msg + "\n\n" + listing, key, n_ok, len(results))


class VirtualGPU:
    """A pretend accelerator with a pretend clock, so a timer can be checked exactly.

    op() queues `cost` seconds of work and returns after `launch` seconds of host time (like a CUDA
    kernel launch); the first call costs `cold` (like compilation and allocation); sync() waits
    until the queue is empty; clock() reads host time.
    """

    def __init__(self, launch: float, warm: float, cold: float) -> None:
        self.launch, self.warm, self.cold = launch, warm, cold
        self.host = 0.0
        self.busy_until = 0.0
        self.calls = 0
        self.clock_reads = 0
        self.syncs = 0
        self.events: list[str] = []

    def op(self) -> None:
        self.calls += 1
        cost = self.cold if self.calls == 1 else self.warm
        self.busy_until = max(self.host, self.busy_until) + cost
        self.host += self.launch
        self.events.append("op")

    def sync(self) -> None:
        self.syncs += 1
        self.host = max(self.host, self.busy_until)
        self.events.append("sync")

    def clock(self) -> float:
        self.clock_reads += 1
        self.events.append("clock")
        return self.host


def check_timer(
    fn: Callable[
        [Callable[[], None], int, Callable[[], float], Callable[[], None]], Sequence[float]
    ],
    *,
    seed: int | None = None,
) -> CheckResult:
    """Check fn(op, repeats, clock, sync) -> `repeats` durations in seconds, one per call of op.

    The checker runs fn against a pretend GPU: op() returns at once and the work finishes later,
    the first call of op is slow, sync() waits for the work, clock() reads the time. A timer that
    warms up, synchronises before reading the clock and takes `repeats` samples reports exactly
    the time one warm call takes.
    """
    exercise = "timer"
    if not callable(fn):
        return _check(exercise, fn, [], [], arg_names="op, repeats, clock, sync")
    rng = Random(_fresh_seed(seed))
    hints = {
        "no_sync": "Looks like you read the clock without waiting for the device: op() only queues the work (as a GPU kernel launch does), so your times are the launch cost. Call sync() before each clock reading.",
        "no_warmup": "Looks like the first sample includes the one-time cost of the first call (compilation, memory allocation, caches). Call op() once (or a few times) before you start timing, and don't count those calls.",
        "warmup_not_synced": "Looks like you warmed up but started the clock while the warm-up was still running on the device: sync() after the warm-up, before the first clock reading.",
        "one_sample": "Looks like you timed op once. One sample tells you little: time it `repeats` times and return every duration (then look at the median and the spread).",
        "wrong_count": "Return exactly `repeats` durations, one per timed call.",
        "own_clock": "Looks like you used your own clock (e.g. time.perf_counter) instead of the `clock` you were given; use the one passed in.",
        "not_numbers": "Return a list of numbers (seconds).",
        "crashed": "Your timer crashed; read the error above.",
        "total_not_per_call": "Looks like you returned the total time of all calls each time; divide by the number of calls to get the time of one.",
    }
    results = []
    for i in range(3):
        warm = rng.uniform(1e-4, 1e-3)
        dev = VirtualGPU(launch=rng.uniform(5e-6, 2e-5), warm=warm, cold=warm * rng.uniform(20, 50))
        repeats = rng.randint(3, 8)
        label = f"run {i + 1} (repeats={repeats})"
        try:
            got = fn(dev.op, repeats, dev.clock, dev.sync)
        except NotImplementedError:
            return CheckResult(
                exercise,
                "not attempted",
                "Not attempted yet: your function still raises `NotImplementedError`. Replace that line with your code, run its cell, then run this check again.",
                cases_total=3,
            )
        except Exception as exc:
            where = _student_line(exc)
            results.append(
                (
                    label,
                    False,
                    f"your timer raised `{type(exc).__name__}: {str(exc)[:200]}`."
                    + (" " + where if where else ""),
                    "crashed",
                )
            )
            continue
        try:
            times = [float(v) for v in np.asarray(got, dtype=np.float64).reshape(-1)]
        except (TypeError, ValueError):
            results.append(
                (
                    label,
                    False,
                    f"your timer returned a {type(got).__name__}, not a list of numbers.",
                    "not_numbers",
                )
            )
            continue
        key = ""
        if dev.clock_reads == 0:
            key = "own_clock"
        elif len(times) == 1 and repeats > 1:
            key = "one_sample"
        elif len(times) != repeats:
            key = "wrong_count"
        elif all(math.isclose(v, warm, rel_tol=1e-6) for v in times):
            results.append((label, True, "", ""))
            continue
        elif dev.syncs == 0 or all(v < warm / 2 for v in times):
            key = "no_sync"
        elif times and times[0] > 5 * warm and "op" not in dev.events[: dev.events.index("clock")]:
            key = "no_warmup"
        elif times and times[0] > 5 * warm:
            key = "warmup_not_synced"
        elif all(math.isclose(v, warm * repeats, rel_tol=1e-3) for v in times):
            key = "total_not_per_call"
        results.append(
            (
                label,
                False,
                f"your timer returned {len(times)} durations that do not match the time one warm call of op takes.",
                key,
            )
        )
    return _summarise(exercise, results, hints)


CHECKERS: dict[str, Callable[..., CheckResult]] = {
    "add_axis": check_add_axis,
    "broadcast_shape": check_broadcast_shape,
    "expand_weights": check_expand_weights,
    "weighted_sum": check_weighted_sum,
    "masked_weighted_sum": check_masked_weighted_sum,
    "softmax_weighted_sum": check_softmax_weighted_sum,
    "weights_grad": check_weights_grad,
    "intermediate_bytes": check_intermediate_bytes,
    "timer": check_timer,
}
