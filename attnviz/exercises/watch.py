"""What the student's function does while it runs that no right answer needs: calling an answer
key, switching the watcher off, starting a thread, or changing torch or the checker itself.

``Watch`` is a context manager around one call of the student's function. It sets a profiler
(``sys.setprofile``: one look at every Python call and every call of a built-in) that notes

- the first call of an answer key (``answer_key.is_answer``), as the name a student reaches it by;
- a call of ``sys.setprofile`` (which would switch the watcher off, even for a moment) or of
  the interpreter's thread start (``start_new_thread`` of the ``_thread`` built-in module, which
  ``threading`` calls: a thread runs where the watcher cannot see);

and, when the call is over, whether the profiler is still its own and whether a global of torch,
numpy, math, the builtins or the checker's modules (``attnviz.exercises``, ``attnviz.tolerance``)
is no longer what it was (the checker computes the expected answer and judges with those).

The profiler is a module-level function: what ``sys.getprofile()`` hands a student has no
``__self__``, no closure and no attributes, and the names of the answer keys it compares with are
strings (``answer_key``), nothing to call. What it notes lives in this module, written only by the
profiler. This is a watcher for a student's own notebook, not a sandbox (``attnviz.grade.guard``
confines code that graders run): it makes sure that no answer passes by accident or casual poking,
and that switching it off is said plainly, never passed.
"""

from __future__ import annotations

import builtins
import itertools
import math
import operator
import sys
from types import FrameType, ModuleType

import numpy as np
import torch

from attnviz.exercises.answer_key import is_answer, public_name

_HERE = __file__

_STARTS_A_THREAD = (
    "your function starts a thread, and the checker's watcher (it looks out for calls of an "
    "answer key) only sees your function's own thread, so it cannot vouch for the result."
)

#: Built-ins whose call means the watcher cannot vouch for the result, and what to say.
#: Keyed by (module, name) of the built-in: the thread start is named, not imported (its module is
#: the interpreter's private ``_thread``; ``start_joinable_thread`` is its name from Python 3.13).
_TAMPERING = {
    ("sys", "setprofile"): (
        "your function calls `sys.setprofile`, which switches off the checker's watcher (it "
        "looks out for calls of an answer key), so the checker cannot vouch for the result."
    ),
    ("_thread", "start_new_thread"): _STARTS_A_THREAD,
    ("_thread", "start_joinable_thread"): _STARTS_A_THREAD,
}
_CHANGED = (
    "your function changed `{}` while it ran, and the checker computes the answer and judges "
    "with it, so it cannot vouch for the result."
)
_OFF = (
    "your function replaced the checker's profiler (`sys.setprofile`), which looks out for calls "
    "of an answer key, so the checker cannot vouch for the result."
)


class _Record:
    __slots__ = ("called", "tampered")

    def __init__(self) -> None:
        self.called = ""
        self.tampered = ""


_records: list[_Record] = []  # the watches running now, innermost last


def _profile(frame: FrameType, event: str, arg: object) -> None:
    if not _records:
        return
    record = _records[-1]
    if event == "call":
        if not record.called and is_answer(frame.f_code):
            record.called = public_name(frame)
    elif event == "c_call" and not record.tampered and frame.f_code.co_filename != _HERE:
        key = (getattr(arg, "__module__", None), getattr(arg, "__name__", None))
        said = _TAMPERING.get(key)  # type: ignore[arg-type]
        if said is not None:
            record.tampered = said


Fingerprint = list[tuple[str, object, bool, tuple, tuple]]


def _owners() -> list[tuple[str, object, bool]]:
    """(name, owner, is a class) of every namespace the checker's verdict depends on."""
    out: list[tuple[str, object, bool]] = [
        ("torch.Tensor", torch.Tensor, True),
        ("torch.Tensor", torch._C.TensorBase, True),
    ]
    for module in (torch, torch.nn.functional, np, math, builtins):
        out.append((module.__name__, module, False))
    for name, module in list(sys.modules.items()):
        if isinstance(module, ModuleType) and (
            name.startswith("attnviz.exercises") or name == "attnviz.tolerance"
        ):
            out.append((name, module, False))
    return out


def fingerprint() -> Fingerprint:
    """Every namespace the verdict depends on: (its name, its owner, whether the owner is a class,
    its keys, their values)."""
    out: Fingerprint = []
    for name, owner, is_class in _owners():
        items = tuple(vars(owner).items())
        out.append((name, owner, is_class, tuple(k for k, _ in items), tuple(v for _, v in items)))
    return out


_GONE = object()


def changed(before: Fingerprint) -> str:
    """The first global noted in before that is no longer what it was, e.g. 'torch.Tensor.sum'
    ('' if none). A module may gain names (a submodule imported on first use); a class may not
    (a method added to torch.Tensor hides the one it inherits). Compares in C (map), so that the
    profiler, still watching, sees a handful of calls."""
    for name, owner, is_class, keys, values in before:
        now = vars(owner)
        same = all(map(operator.is_, map(now.get, keys, itertools.repeat(_GONE)), values))
        if same and not (is_class and len(now) != len(keys)):
            continue
        for key, value in zip(keys, values, strict=True):
            if now.get(key, _GONE) is not value:
                return f"{name}.{key}"[:120]
        added = sorted(str(k) for k in now if k not in set(keys))
        return f"{name}.{added[0]}"[:120] if added else name
    return ""


class Watch:
    """A context manager: while it is active, the profiler notes the first answer key the running
    code calls; on exit ``called`` is its public name and ``tampered`` says, in a sentence, what
    the code did that lets the checker vouch for nothing ('' for each while there is none). Any
    profiler set before is suspended for that time and restored afterwards."""

    def __init__(self) -> None:
        self.called = ""
        self.tampered = ""
        self._previous = None
        self._record = _Record()
        self._before: Fingerprint = []

    def __enter__(self) -> Watch:
        self._before = fingerprint()
        self._previous = sys.getprofile()
        _records.append(self._record)
        sys.setprofile(_profile)
        return self

    def __exit__(self, *exc: object) -> bool:
        still_mine = sys.getprofile() is _profile
        sys.setprofile(None)
        if self._record in _records:
            _records.remove(self._record)
        sys.setprofile(self._previous)
        self.called = self._record.called
        self.tampered = self._record.tampered
        if not self.tampered and not still_mine:
            self.tampered = _OFF
        if not self.tampered:
            where = changed(self._before)
            if where:
                self.tampered = _CHANGED.format(where)
        self._before = []
        return False
