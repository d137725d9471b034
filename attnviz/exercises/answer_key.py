"""The answers an exercise may not call: the library's own, and the checkers' own.

attnviz computes every answer the exercises ask for: ``attnviz.weighted_sum``, each of
``attnviz.METHODS``, ``attnviz.reference``, ``attnviz.attention_weights``, the fused and native
kernels, and the traces (whose steps and gradients hold the answers). What counts is where the
called code lives (``ANSWER_FILES``); input checks that compute nothing (``ALLOWED``) are fine.

The checkers hold answers too: each case's ``answer`` (``lesson02._ws``, ``lesson04._scores``, ...)
computes the right result the student's is compared with. Every such function is marked with
``@reference`` where it is defined, so that it is refused before any check has used it (a test
builds every checker's cases and asserts that each case's answer is marked).

A function that calls one of them passes every case and learns nothing, so the checker refuses it,
kindly. ``attnviz.exercises.watch`` sees the call while the student's function runs, not the text
of the code: an alias, an import under another name, a helper defined in another cell, or a new
function made from an answer's code object are all seen.

What this module keeps is names (file, line, qualified name), never the functions: reading it gives
nothing to call.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import TypeVar

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

#: The checkers' own answers, as (file, first line, qualified name): strings, never callables.
_REFERENCES: set[tuple[str, int, str]] = set()

HINT = (
    "That function is the answer key: attnviz's own version of what this exercise asks you to "
    "write, so the check would only compare the library with itself. Write it yourself with "
    "tensor operations (a new axis, broadcasting, a reduction); helpers that make inputs, such as "
    "`attnviz.examples`, are fine."
)
REFERENCE_HINT = (
    "That function is the checker's own answer key: the right result yours is compared with, so "
    "calling it would only compare the key with itself. Write your own version; nothing in "
    "`attnviz.exercises` needs to be called from your function."
)

F = TypeVar("F", bound=Callable[..., object])


def _where(code: CodeType) -> tuple[str, int, str]:
    return (os.path.realpath(code.co_filename), code.co_firstlineno, code.co_qualname)


def reference(fn: F) -> F:
    """Mark fn as one of the checkers' answers (it computes what a case expects): a student's
    function that calls it is refused like a call of ``attnviz.weighted_sum``."""
    _REFERENCES.add(_where(fn.__code__))
    _is_reference.cache_clear()
    return fn


def is_reference(fn: object) -> bool:
    """fn (a function) is marked with ``@reference``."""
    code = getattr(fn, "__code__", None)
    return isinstance(code, CodeType) and _is_reference(
        code.co_filename, code.co_firstlineno, code.co_qualname
    )


@functools.cache
def _is_reference(filename: str, line: int, qualname: str) -> bool:
    return (os.path.realpath(filename), line, qualname) in _REFERENCES


@functools.cache
def _is_answer_file(filename: str) -> bool:
    return os.path.realpath(filename) in ANSWER_FILES


def is_answer(code: CodeType) -> bool:
    """The code object is one of the library's answers or one of the checkers'."""
    if _is_reference(code.co_filename, code.co_firstlineno, code.co_qualname):
        return True
    return code.co_name not in ALLOWED and _is_answer_file(code.co_filename)


def hint_for(name: str) -> str:
    """The kind hint for a call of the answer named name (as ``public_name`` gives it)."""
    return REFERENCE_HINT if name.startswith("attnviz.exercises.") else HINT


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
