"""What one call of a student's function is and what came of it: ``Case`` (the inputs, the hidden
expected answer), ``Kind`` and ``Outcome`` (what happened), and ``shape_words`` (a shape in the
lesson's letters). The engine, the observer and the lessons' checkers all read these.

A case's expected answer is computed by its ``answer`` (a function marked
``answer_key.reference``) only after the student's function has returned, from copies of the
inputs taken before the call: while the student's code runs, no right answer exists anywhere it
could find one (a caller's frame, ``gc``), and calling ``answer`` is refused as an answer key."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnviz.exercises.cases import dtype_name, expected_of
from attnviz.exercises.probe import DtypeChange


class Kind(enum.Enum):
    """What happened on one case."""

    OK = "ok"
    EXCEPTION = "exception"
    NONE = "none"
    TYPE = "type"
    SHAPE = "shape"
    DTYPE = "dtype"
    DEVICE = "device"
    VALUES = "values"
    MUTATED = "mutated"
    COPY = "copy"
    DETACHED = "detached"
    WRONG = "wrong"  # a judge of a non-tensor answer found it wrong (its keys say how)


@dataclass(frozen=True)
class Case:
    """One call of the student's function. expected is hidden: never formatted into a message.
    Given answer, expected is None until ``reveal`` computes it, after the student's call."""

    label: str  # "the T == H trap"
    args: tuple  # what the student's function is called with
    names: tuple[str, ...]  # the argument names, for messages
    expected: object = None
    sizes: dict[str, int] = field(default_factory=dict)  # {"B": 2, "T": 3, "H": 5}
    context: object = None  # what a judge needs besides the output (e.g. a pretend GPU)
    shapes: str = ""  # the inputs in words, fixed before the student's code can modify them
    answer: Callable[..., object] | None = None  # args -> the right result (a marked reference)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shapes", _describe(self.names, self.args))

    def reveal(self, clean: Sequence[object]) -> None:
        """Compute expected with answer from clean, the inputs as they were before the call: in
        float64 and back to the first input's dtype and device where the inputs are tensors."""
        if self.answer is None:
            return
        first = next((a for a in clean if isinstance(a, Tensor)), None)
        if first is None:
            value = self.answer(*clean)
        else:
            value = expected_of(self.answer, *clean, dtype=first.dtype)
        object.__setattr__(self, "expected", value)

    @property
    def where(self) -> str:
        return f"{self.label} ({self.shapes})" if self.shapes else self.label

    @property
    def needs_grad(self) -> bool:
        return any(isinstance(a, Tensor) and a.requires_grad for a in self.args)


def _describe(names: Sequence[str], args: Sequence[object]) -> str:
    parts = []
    for name, a in zip(names, args, strict=True):
        if isinstance(a, Tensor):
            dt = "" if a.dtype in (torch.float32, torch.bool) else f" {dtype_name(a.dtype)}"
            grad = " (requires grad)" if a.requires_grad else ""
            parts.append(f"{name} {tuple(a.shape)}{dt}{grad}")
        elif isinstance(a, torch.dtype):
            parts.append(f"{name}={dtype_name(a)}")
        elif not callable(a):
            parts.append(f"{name}={a!r}")
    return ", ".join(parts)


@dataclass
class Outcome:
    """What happened on one case."""

    case: Case
    kind: Kind = Kind.OK
    ok: bool = False
    detail: str = ""
    output: object = None
    exc: BaseException | None = None
    mutated: tuple[str, ...] = ()
    note: str = ""
    keys: tuple[str, ...] = ()  # mistakes the judge itself recognised
    ops: int = 0  # torch operations the call ran
    failed_op: tuple[str, tuple[tuple[int, ...], ...]] | None = None
    changes: tuple[DtypeChange, ...] = ()  # where a dtype was made or converted (the probe's)
    answer_key: str = ""  # the library answer the call used, e.g. "attnviz.weighted_sum"
    tampered: str = ""  # what the call did that lets the checker vouch for nothing (watch.Watch)


_OUT_LETTERS = {
    1: [("B",), ("H",), ("T",)],
    2: [("B", "H"), ("B", "T"), ("H", "B"), ("T", "H")],
    3: [("B", "T", "H"), ("B", "T", "1"), ("B", "1", "H")],
}


def shape_words(case: Case, want: Tensor | tuple) -> str:
    """A shape in letters and numbers, e.g. (B, H) = (2, 5), when the letters are unambiguous."""
    shape = tuple(want.shape) if isinstance(want, Tensor) else tuple(want)
    sizes = {**case.sizes, "1": 1}
    fits = [
        c
        for c in _OUT_LETTERS.get(len(shape), [])
        if case.sizes and all(sizes.get(x) == s for x, s in zip(c, shape, strict=True))
    ]
    return f"({', '.join(fits[0])}) = {shape}" if fits else str(shape)
