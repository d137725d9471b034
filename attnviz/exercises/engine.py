"""The one checking engine: cases, outcomes, judges, mistake recognisers, and the verdict.

A checker builds fresh ``Case``s and an ``Exercise`` (its name, its registry of known mistakes
``{key: Entry}``, its judge, the rules the task states) and calls ``run``. ``run`` calls the
student's function on every case under a ``Probe`` (which counts torch operations, remembers the
one that raised and where a dtype changed) and a ``watch.Watch`` (which sees a call of an answer
key, the library's or the checker's, and what lets the checker vouch for nothing: its watcher
switched off, a thread, torch or the checker changed), computes the case's expected answer only
then (``Case.reveal``), judges each ``Outcome`` (a ``Kind``), enforces the rules (no answer key,
nothing tampered with, no Python loop, the result keeps its gradient), then writes one
``CheckResult``:

- a mistake is recognised by computing what each registered mistake gives on the same inputs and
  comparing with what the student's function gave, on every case (the passed ones too), never by
  reading the student's code (only the no-loop rule looks at the source, see ``rules``); a judge
  may also name a mistake from what it observed (``keys``);
- when nothing is recognised the message says what was observed (which cases failed, on which
  sizes, which shapes came back) and never guesses a cause it has not checked: a size "written into
  the code" only when two different inputs gave the same output, or the same size, one none of
  the inputs has, came back for inputs of different sizes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from attnviz import tolerance
from attnviz.exercises import rules
from attnviz.exercises.answer_key import HINT as ANSWER_KEY_HINT
from attnviz.exercises.answer_key import hint_for
from attnviz.exercises.cases import dtype_name
from attnviz.exercises.explain import explain
from attnviz.exercises.observe import observe
from attnviz.exercises.outcome import Case, Kind, Outcome, shape_words
from attnviz.exercises.probe import Probe, dtype_change, dtype_key
from attnviz.exercises.result import NOT_ATTEMPTED, CheckResult, Status
from attnviz.exercises.watch import Watch

# kinds that name their own mistake (the key of its entry in the registry)
_KIND_KEYS = {
    Kind.NONE: "forgot_return",
    Kind.TYPE: "not_a_tensor",
    Kind.MUTATED: "mutated_input",
    Kind.COPY: "copied",
    Kind.DEVICE: "wrong_device",
    Kind.DETACHED: "detached",
}


@dataclass(frozen=True)
class Entry:
    """A known mistake: its title ("summed the wrong axis"), a short kind hint that never gives the
    solution, and what it computes from the case's arguments (one form or several), if it can be
    computed. flat: compare values whatever the shape (same number of elements)."""

    title: str
    hint: str
    compute: Callable[..., object] | tuple[Callable[..., object], ...] | None = None
    flat: bool = False

    @property
    def forms(self) -> tuple[Callable[..., object], ...]:
        if self.compute is None:
            return ()
        return self.compute if isinstance(self.compute, tuple) else (self.compute,)


Registry = Mapping[str, Entry]


def lift(entries: Registry, adapt: Callable[[Callable[..., object]], Callable[..., object]]):
    """The same mistakes for a related exercise: every form wrapped by adapt (e.g. masking the
    weights first), titles and hints unchanged."""
    return {
        key: Entry(e.title, e.hint, tuple(adapt(f) for f in e.forms) or None, e.flat)
        for key, e in entries.items()
    }


#: Mistakes every tensor exercise shares; a judge or a rule names them (no compute).
COMMON: dict[str, Entry] = {
    "forgot_return": Entry("", ""),  # the detail says it all
    "not_a_tensor": Entry("", ""),
    "mutated_input": Entry("", ""),
    "wrong_device": Entry("", ""),
    "detached": Entry("", ""),
    "wrong_dtype": Entry(
        "",
        "Your numbers are right; only the dtype is off. A tensor made with `torch.zeros(...)` or "
        "`torch.tensor(...)` is float32 unless you say otherwise: pass `dtype=` (and `device=`) "
        "from an input, or build the result from the inputs themselves.",
    ),
    "converted_dtype": Entry(
        "",
        "Your numbers are right; only the dtype is off, because your code converts it: `.float()`, "
        "`.double()`, `.half()`, `.to(dtype)` and `.type(...)` give that dtype whatever the inputs "
        "are. Leave the dtype alone (torch operations keep it), or convert back with "
        "`.to(x.dtype)`, where x is one of your function's inputs.",
    ),
    "dtype_changed": Entry(
        "",
        "Your numbers are right; only the dtype is off: the result should have the inputs' dtype. "
        "Print `.dtype` after each step of your function to see where it changes.",
    ),
    "answer_key": Entry("", ANSWER_KEY_HINT),  # a rule names it (see answer_key)
    "watch_off": Entry("", ""),  # the engine says it all (see watch)
    "python_loop": Entry(
        "",
        "A Python loop runs one small operation per sentence or word, which is slow on real "
        "sizes and on a GPU. Let broadcasting and one reduction do the whole batch at once.",
    ),
}


WATCH_OFF_HINT = (
    "The exercise needs none of that: compute the result from your function's inputs, and the "
    "checker can judge it."
)


@dataclass(frozen=True)
class Exercise:
    """What the engine needs to know about one exercise."""

    name: str
    arg_names: str
    mistakes: Registry
    judge: Callable[[Outcome], Outcome]
    no_loop: bool = False  # the task says "no Python loop"
    judge_exceptions: bool = False  # raising can be the right answer: the judge sees exceptions


class NotAttempted(Exception):
    """The student's function still raises NotImplementedError."""


# --------------------------------------------------------------------------------------------
# Calling and judging


def call(fn: Callable, case: Case) -> Outcome:
    """Run the student's function on one case; catch what it raises and what it modifies, and
    observe what it did (torch operations, dtype changes, a call of an answer key, what lets the
    checker vouch for nothing). The case's expected answer is computed afterwards, from copies of
    the inputs taken before the call."""
    before = [a.detach().clone() if isinstance(a, Tensor) else None for a in case.args]
    out = Outcome(case)
    probe, watch = Probe(), Watch()
    try:  # grad mode on, and restored afterwards whatever the student's code does to it
        with torch.enable_grad(), probe, watch:
            out.output = fn(*case.args)
    except NotImplementedError as exc:
        raise NotAttempted from exc
    except Exception as exc:  # the student's code may raise anything: explain it, never crash
        out.kind, out.exc = Kind.EXCEPTION, exc
        if probe.failed is not None and _caused_by(exc, probe.failed_exc):
            out.failed_op = probe.failed
        out.ops, out.answer_key, out.tampered = probe.ops, watch.called, watch.tampered
        case.reveal(_clean(case, before))
        return out
    out.ops, out.changes = probe.ops, tuple(probe.changes)
    out.answer_key, out.tampered = watch.called, watch.tampered
    case.reveal(_clean(case, before))
    out.mutated = tuple(
        name
        for name, a, b in zip(case.names, case.args, before, strict=True)
        if isinstance(a, Tensor) and not (a.shape == b.shape and torch.equal(a.detach(), b))
    )
    return out


def _clean(case: Case, before: list[Tensor | None]) -> tuple[object, ...]:
    """The case's arguments as they were before the call (tensors copied then, the rest as is)."""
    return tuple(a if b is None else b for a, b in zip(case.args, before, strict=True))


def _caused_by(exc: BaseException, inner: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 10:
        if exc is inner:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def as_float64(x: object) -> Tensor | None:
    try:
        return torch.as_tensor(np.asarray(x, dtype=np.float64))
    except (TypeError, ValueError, RuntimeError):
        return None


def close_values(a: object, b: object, *, flat: bool = False) -> bool:
    """Same values (and shape, unless flat) whatever the dtypes, within the project's tolerance."""
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return False
    if a.is_complex() or b.is_complex() or a.is_nested or a.layout is not torch.strided:
        return False
    if flat:
        if a.numel() != b.numel():
            return False
        a, b = a.reshape(-1), b.reshape(-1)
    try:
        return tolerance.close(a, b)
    except (RuntimeError, TypeError, ValueError):
        return False


def judge_tensor(out: Outcome) -> Outcome:
    """Type, exact shape, dtype, device, values, untouched inputs, then the gradient."""
    got, want = out.output, out.case.expected
    assert isinstance(want, Tensor)
    if got is None:
        out.kind = Kind.NONE
        out.detail = (
            "your function returned `None`. Did you forget the `return`? A function that computes "
            "the answer but does not return it gives back None."
        )
        return out
    if isinstance(got, Tensor) and (got.is_nested or got.layout is not torch.strided):
        out.kind = Kind.TYPE
        what = "nested" if got.is_nested else str(got.layout).replace("torch.", "")
        out.detail = f"your function returned a {what} tensor; return an ordinary (dense) tensor."
        return out
    if not isinstance(got, Tensor):
        kind = type(got).__module__.split(".")[0] + "." + type(got).__name__
        kind = type(got).__name__ if kind.startswith("builtins.") else kind
        out.kind = Kind.TYPE
        out.detail = f"your function returned a {kind}, not a torch.Tensor."
        as_t = as_float64(got)
        if as_t is not None and close_values(as_t, want):
            out.detail += (
                " The numbers in it are right. Stay in torch from start to end (no `.numpy()`, "
                "`.tolist()` or `.item()`), so the result keeps its dtype, device and gradient."
            )
        return out
    if tuple(got.shape) != tuple(want.shape):
        out.kind = Kind.SHAPE
        out.detail = (
            f"your function returned shape {tuple(got.shape)}; the answer has shape "
            f"{shape_words(out.case, want)}."
        )
        return out
    if got.dtype != want.dtype:
        out.kind = Kind.DTYPE
        out.detail = (
            f"your result is {dtype_name(got.dtype)} but the inputs are {dtype_name(want.dtype)}: "
            f"the result should keep the inputs' dtype."
        )
        change = dtype_change(out.changes, got)
        if change is not None and change.source is not None:
            out.detail += (
                f" Your code converted {dtype_name(change.source)} to "
                f"{dtype_name(change.dtype)} with {change.how}."
            )
        elif change is not None:
            out.detail += (
                f" Your code made a new tensor with {change.how}, which is "
                f"{dtype_name(change.dtype)} because no `dtype=` was given."
            )
        return out
    if got.device != want.device:
        out.kind = Kind.DEVICE
        out.detail = (
            f"your result lives on {got.device} but the inputs are on {want.device}. Create "
            f"new tensors with `device=` taken from an input (e.g. `net_output.device`)."
        )
        return out
    if got.is_floating_point() or want.is_floating_point():
        bad = int(tolerance.mismatch(got, want).sum())
    else:
        bad = int((got != want).sum())
    if bad:
        out.kind = Kind.VALUES
        if (
            want.is_floating_point()
            and torch.isfinite(want).all()
            and not torch.isfinite(got).all()
        ):
            out.detail = "your result has the right shape but contains inf or NaN."
        else:
            out.detail = (
                f"the shape, dtype and device are right, but {bad} of the {want.numel()} numbers "
                f"are wrong."
            )
        return out
    if out.mutated:
        out.kind = Kind.MUTATED
        names = " and ".join(f"`{m}`" for m in out.mutated)
        out.detail = (
            f"the result is right, but your function changed its input {names} in place "
            f"(`*=`, `+=`, an indexed assignment, or a method ending in `_` like `mul_`). "
            f"Whoever called it now has different data. Compute a new tensor instead."
        )
        return out
    if out.case.needs_grad:
        problem = rules.gradient_problem(out.case, got)
        if problem:
            out.kind, out.detail = Kind.DETACHED, problem
            return out
    out.ok = True
    return out


# --------------------------------------------------------------------------------------------
# Recognising a mistake by computing it


def _run_form(form: Callable[..., object], case: Case) -> object:
    args = tuple(a.detach().clone() if isinstance(a, Tensor) else a for a in case.args)
    try:
        return form(*args)
    except Exception as exc:  # a mistake's own error is what the student would see
        return exc


def _matches(o: Outcome, m_out: object, entry: Entry) -> bool:
    """The student's function gave what the mistake gives (the very same exception, or values)."""
    if isinstance(m_out, BaseException):
        return (
            o.exc is not None
            and type(o.exc) is type(m_out)
            and _letters_free(str(o.exc)) == _letters_free(str(m_out))
        )
    if o.exc is not None:
        return False
    got = o.output
    if isinstance(m_out, Tensor):
        return isinstance(got, Tensor) and close_values(got, m_out, flat=entry.flat)
    if isinstance(m_out, int) and isinstance(got, int | np.integer) and not isinstance(got, bool):
        return int(got) == m_out
    return type(got) is type(m_out) and got == m_out


def _letters_free(message: str) -> str:
    """An error message without the einsum letters it names (the student's letters may differ)."""
    return re.sub(r"subscript \w\b", "subscript ?", message)


def _is_wrong(m_out: object, case: Case, entry: Entry) -> bool:
    """The mistake's own result is wrong on this case (so it can explain a failure)."""
    want = case.expected
    if isinstance(m_out, BaseException):
        return True
    if isinstance(want, Tensor):
        return not (
            isinstance(m_out, Tensor)
            and tuple(m_out.shape) == tuple(want.shape)
            and close_values(m_out, want)
        )
    return m_out != want


def recognise(outcomes: list[Outcome], ex: Exercise) -> str | None:
    """The registered mistake that reproduces the student's results on EVERY case: the same
    numbers (or the very same exception) where the student failed, the right answer where the
    student passed. One that reproduces numbers counts more than one that only raises the same."""
    best, best_score = None, 0.0
    for key, entry in ex.mistakes.items():
        for form in entry.forms:
            score = 0.0
            for o in outcomes:
                m_out = _run_form(form, o.case)
                if o.ok:
                    if not _matches(o, m_out, entry):
                        break
                    continue
                if not (_is_wrong(m_out, o.case, entry) and _matches(o, m_out, entry)):
                    break
                score += 0.5 if isinstance(m_out, BaseException) else 1.0
            else:
                if score > best_score:
                    best, best_score = key, score
    return best


def case_list(outcomes: list[Outcome], total: list[Case]) -> str:
    done = {id(o.case): o for o in outcomes}
    marks = []
    for c in total:
        o = done.get(id(c))
        mark = "✓" if o is not None and o.ok else ("✗" if o is not None else "·")
        marks.append(f"{mark} {c.label}")
    return "Cases: " + "  ".join(marks)


# --------------------------------------------------------------------------------------------
# The engine


def not_a_function(name: str, fn: object, arg_names: str) -> CheckResult:
    return CheckResult(
        name,
        Status.ERROR,
        f"`check_{name}` expects your function itself, e.g. `check_{name}(my_function)` "
        f"(no parentheses after the name), but it got a {type(fn).__name__}. Your function "
        f"should take ({arg_names}).",
    )


def not_attempted(name: str, total: int, function: str = "") -> CheckResult:
    return CheckResult(
        name, Status.NOT_ATTEMPTED, NOT_ATTEMPTED, cases_total=total, function=function
    )


def function_name(fn: object, ex: Exercise) -> str:
    """The name the student gave the function (for the result's header), or the exercise's."""
    name = getattr(fn, "__name__", "")
    return name if isinstance(name, str) and name.isidentifier() else ex.name


def _judge(ex: Exercise, o: Outcome) -> Outcome:
    """The exercise's judge, with a safety net: whatever the student returned, a verdict."""
    try:
        return ex.judge(o)
    except Exception:  # an object the judge cannot even compare
        o.ok, o.kind = False, Kind.TYPE
        o.detail = (
            f"the checker could not read what your function returned (a "
            f"{type(o.output).__name__}); return an ordinary torch.Tensor."
        )
        return o


def run(ex: Exercise, fn: object, cases: list[Case]) -> CheckResult:
    """Check fn on every case and say what was found."""
    if not callable(fn):
        return not_a_function(ex.name, fn, ex.arg_names)
    name = function_name(fn, ex)
    outcomes: list[Outcome] = []
    try:
        for case in cases:
            o = call(fn, case)
            if o.kind is not Kind.EXCEPTION or ex.judge_exceptions:
                o = _judge(ex, o)
            outcomes.append(o)
    except NotAttempted:
        return not_attempted(ex.name, len(cases), name)
    used = next((o.answer_key for o in outcomes if o.answer_key), "")
    if used:
        msg = f"Not quite yet: your function calls `{used}`.\n\n{hint_for(used)}"
        return CheckResult(ex.name, Status.FAILED, msg, "answer_key", 0, len(cases), name)
    tampered = next((o for o in outcomes if o.tampered), None)
    if tampered is not None:
        msg = f"Not quite yet: on {tampered.case.label}, {tampered.tampered}\n\n{WATCH_OFF_HINT}"
        return CheckResult(ex.name, Status.FAILED, msg, "watch_off", 0, len(cases), name)
    loop = rules.find_loop(fn, outcomes) if ex.no_loop else ""
    passed = [o for o in outcomes if o.ok]
    failed = [o for o in outcomes if not o.ok]
    listing = case_list(outcomes, cases)
    n = len(cases)
    if not failed and loop:
        entry = ex.mistakes["python_loop"]
        msg = (
            f"Not quite yet: your function gives the right answer on all {n} cases, but the task "
            f"says no Python loop. {loop}\n\n{entry.hint}\n\n{listing}"
        )
        return CheckResult(ex.name, Status.FAILED, msg, "python_loop", n, n, name)
    if not failed:
        notes = sorted({o.note for o in outcomes if o.note})
        msg = f"All {n} cases passed. Well done!"
        if notes:
            msg += "\n" + "\n".join(notes)
        return CheckResult(ex.name, Status.PASSED, msg + "\n" + listing, None, n, n, name)

    first = failed[0]
    status = Status.ERROR if first.kind is Kind.EXCEPTION else Status.FAILED
    parts = [f"Not quite yet: {len(passed)} of {n} cases passed."]
    if first.kind is Kind.EXCEPTION:
        inputs = tuple(
            (nm, tuple(a.shape))
            for nm, a in zip(first.case.names, first.case.args, strict=True)
            if isinstance(a, Tensor)
        )
        parts.append(
            explain(
                first.exc,
                first.case.where,
                first.case.sizes,
                ex.arg_names,
                first.failed_op,
                inputs,
            )
        )
    elif first.kind is Kind.WRONG:  # a non-tensor answer: the detail names the inputs itself
        parts.append(f"On {first.case.label}, {first.detail}")
    else:
        parts.append(f"On {first.case.where}, {first.detail}")
    key = _KIND_KEYS.get(first.kind)
    if key is None and any(o.keys for o in failed):
        keys = [k for o in failed for k in o.keys]
        key = max(dict.fromkeys(keys), key=keys.count)
    if key is None:
        try:
            key = recognise(outcomes, ex)
        except Exception:  # an odd result no mistake can be compared with: none is named
            key = None
    text = ""
    if key is None and all(o.kind is Kind.DTYPE for o in failed):
        key, text = dtype_key([dtype_change(o.changes, o.output) for o in failed]), ""
    if key is None:
        try:
            key, text = observe(passed, failed, outcomes)
        except Exception:  # odd results: the case list below still says what failed
            key, text = None, ""
    entry = ex.mistakes.get(key) if key else None
    if entry is not None and entry.hint:
        title = f"Looks like you {entry.title}. " if entry.title else ""
        parts.append(f"\n{title}{entry.hint}")
    elif text:
        parts.append(text)
    if first.mutated and first.kind is not Kind.MUTATED:
        parts.append(
            f"\nAlso: your function changed its input {' and '.join(first.mutated)} in place; "
            f"compute a new tensor instead."
        )
    if loop:
        parts.append(f"\nAlso: the task says no Python loop. {loop}")
    parts.append("\n" + listing)
    return CheckResult(ex.name, status, "\n".join(parts), key, len(passed), n, name)
