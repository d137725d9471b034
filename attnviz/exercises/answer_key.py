"""The library's own answers, which an exercise may not call.

attnviz computes every answer the exercises ask for: ``attnviz.weighted_sum``, each of
``attnviz.METHODS``, ``attnviz.reference``, ``attnviz.attention_weights``, the fused and native
kernels, and the traces (whose steps and gradients hold the answers). A function that calls one of
them passes every case and learns nothing, so the checker refuses it, kindly.

``Watch`` observes the call while the student's function runs (``sys.setprofile``: one look at every
Python call), not the text of the code: an alias, an import under another name, a helper defined in
another cell, or a copy of the library function's code object are all seen. What counts is where
the called code lives (``ANSWER_FILES``); input checks that compute nothing (``ALLOWED``) are fine.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from types import CodeType, FrameType

_PACKAGE = Path(__file__).resolve().parents[1]  # attnviz/

#: Source files whose functions compute an exercise's answer.
ANSWER_FILES: frozenset[str] = frozenset(
    str(p)
    for p in (
        _PACKAGE / "aggregation.py",
        _PACKAGE / "fused.py",
        _PACKAGE / "native.py",
        *sorted((_PACKAGE / "trace").glob("*.py")),
    )
)
#: Functions in those files that compute nothing an exercise asks for.
ALLOWED = frozenset({"check_inputs", "check_traceable", "_shape"})

HINT = (
    "That function is the answer key: attnviz's own version of what this exercise asks you to "
    "write, so the check would only compare the library with itself. Write it yourself with "
    "tensor operations (a new axis, broadcasting, a reduction); helpers that make inputs, such as "
    "`attnviz.examples`, are fine."
)


@functools.cache
def _is_answer_file(filename: str) -> bool:
    return os.path.realpath(filename) in ANSWER_FILES


def is_answer(code: CodeType) -> bool:
    """The code object is one of the library's answers."""
    return code.co_name not in ALLOWED and _is_answer_file(code.co_filename)


def public_name(frame: FrameType) -> str:
    """How a student reaches the function running in frame: `attnviz.weighted_sum` where the
    package exports it, else its module's dotted path (`attnviz.aggregation.weighted_sum_bmm`)."""
    name = frame.f_code.co_name
    package = sys.modules.get("attnviz")
    exported = getattr(package, name, None)
    if getattr(exported, "__code__", None) is frame.f_code:
        return f"attnviz.{name}"
    return f"{_module_of(frame.f_code.co_filename)}.{name}"


@functools.cache
def _module_of(filename: str) -> str:
    """attnviz/trace/step.py -> attnviz.trace.step (where the code lives, whatever its globals)."""
    parts = Path(os.path.realpath(filename)).relative_to(_PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Watch:
    """A context manager: while it is active, ``called`` becomes the public name of the first
    answer the running code calls ('' while there is none). Any profiler set before is suspended
    for that time and restored afterwards."""

    def __init__(self) -> None:
        self.called = ""
        self._previous = None

    def __enter__(self) -> Watch:
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> bool:
        sys.setprofile(self._previous)
        return False

    def _profile(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and not self.called and is_answer(frame.f_code):
            self.called = public_name(frame)
