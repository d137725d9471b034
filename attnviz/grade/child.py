"""The process that grades one notebook: it confines itself (``guard``), defines the student's
functions, runs each exercise's checker on them, and sends one message per exercise to the grader.

It is forked from the grading server (``pool``), which has already imported torch and the
checkers, so a notebook costs a fork, not an import. Only the notebook's imports, function and class
definitions and constant assignments run (its other top-level code, figures and timings, does not):
a function that needs a variable computed elsewhere in the notebook fails with a NameError, which
the checker explains.

Every message (4 bytes of length, then JSON) carries the nonce the server gave this process, which
no code of the student's can read (it lives in this module's frames only); the server ignores a
message without it and stops the process.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import gc
import importlib
import json
import linecache
import os
import re
import struct
import sys
import tempfile
import types
from collections.abc import Callable

import torch

from attnviz.exercises import CHECKERS
from attnviz.exercises.engine import Exercise
from attnviz.exercises.result import CheckResult
from attnviz.grade import guard
from attnviz.grade.book import NOT_RUN, Problem

_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)", re.MULTILINE)
_MAGIC = re.compile(r"^(\s*)[%!].*$", re.MULTILINE)
_DETAIL = 300
_PYTHON_CELL_MAGICS = frozenset({"%%time", "%%timeit", "%%capture", "%%prun"})


def titles() -> dict[str, dict[str, str]]:
    """{checker name: {mistake key: the title the checker gives it}}, read from every exercise
    the checkers' modules define."""
    table: dict[str, dict[str, str]] = {}
    modules = [m for n, m in list(sys.modules.items()) if n.startswith("attnviz.exercises.")]
    for module in modules:
        for value in list(vars(module).values()):
            if isinstance(value, Exercise):
                table[value.name] = {k: e.title for k, e in value.mistakes.items()}
    return table


def warm_up(modules: list[str]) -> None:
    """Import the attnviz modules the notebooks import and run every checker once on a function
    that returns nothing, so that what they load on first use is loaded once, in the server,
    before any fork (the student's code may not run attnviz's code for the first time)."""
    for name in modules:
        if name == "attnviz" or name.startswith("attnviz."):
            with contextlib.suppress(ImportError):  # a name imported from a module, not a module
                importlib.import_module(name)
    for checker in CHECKERS.values():
        checker(lambda *args: None)
    guard.fingerprint()


def main(spec: dict, fd: int, nonce: str) -> None:
    """Grade the exercises spec names on the cells it holds; report to the pipe fd."""

    def send(message: dict) -> None:
        data = json.dumps({**message, "nonce": nonce}).encode()
        data = struct.pack(">I", len(data)) + data
        while data:
            data = data[os.write(fd, data) :]

    workdir = spec["workdir"]
    _quiet(workdir)
    torch.set_num_threads(1)
    g = guard.Guard(workdir)
    try:
        abi = guard.landlock(workdir, g.readable) if spec["landlock"] else 0
    except (OSError, AttributeError, ValueError):  # no usable libc: the other layers still hold
        abi = 0
    limits = spec["limits"]
    guard.limit_resources(
        int(limits["seconds"] * (len(spec["exercises"]) + 2)) + 5,
        limits["memory_mb"] << 20,
        limits["file_mb"] << 20,
    )
    guard.disarm_torch()
    before = guard.fingerprint()
    sys.addaudithook(g.hook)
    namespace, errors = define(spec["cells"])
    tampered = guard.changed(before)
    send({"type": "ready", "landlock": abi, "alerts": g.alerts[:3]})
    table = titles()
    gc.disable()  # the student's finalizers run when the wrapper collects, not during a verdict
    for ex in spec["exercises"]:
        if tampered:
            row = _problem(Problem.TAMPERED, f"while defining the functions, it changed {tampered}")
        else:
            row = check(g, namespace, errors, ex, table)
        send({"type": "result", "index": ex["index"], **row})
        if row["mistake"] == Problem.TAMPERED.value and not tampered:
            send({"type": "restart"})  # the checker may no longer be what it was: a fresh process
            return
    send({"type": "done"})


def _quiet(workdir: str) -> None:
    """A session of its own, no terminal, an empty environment, the temporary directory."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update(HOME=workdir, TMPDIR=workdir, PATH="/usr/bin:/bin")
    tempfile.tempdir = workdir  # the server's choice is cached in the module


# --------------------------------------------------------------------------------------------
# The student's definitions


def _kept(node: ast.stmt) -> bool:
    """Imports, definitions, and assignments of constants, lambdas and other names: what an
    exercise may rely on."""
    if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.AsyncFunctionDef):
        return True
    if isinstance(node, ast.ClassDef):
        return True
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        if isinstance(node.value, ast.Lambda | ast.Name | ast.Attribute):
            return True  # add_axis = lambda w: ..., weighted_sum = my_version
        try:
            ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        return True
    return False


def _names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    return []


def define(cells: list[str]) -> tuple[dict, dict[str, tuple[Problem, str]]]:
    """Run the definitions of every code cell, in order, in one namespace. Returns it and, for
    each function that could not be defined, why (a syntax error in its cell, or what its
    definition raised)."""
    namespace: dict = {"__name__": guard.STUDENT_MODULE, "__builtins__": builtins}
    errors: dict[str, tuple[Problem, str]] = {}
    for n, source in enumerate(cells, start=1):
        if source.lstrip().startswith("%%"):
            first, _, body = source.lstrip().partition("\n")
            if first.split()[0] not in _PYTHON_CELL_MAGICS:
                continue  # a cell magic whose body is not Python (%%bash, %%html, ...)
            source = "\n" + body  # the body keeps its line numbers
        name = f"<cell {n}>"
        text = _MAGIC.sub(r"\1pass", source)
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        try:
            tree = ast.parse(text, name)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            where = f"cell {n}, line {getattr(exc, 'lineno', '?')}"
            why = f"{where}: {type(exc).__name__}: {getattr(exc, 'msg', '') or _text(exc)}"
            for fn in _DEF.findall(text):
                errors[fn] = (Problem.SYNTAX, why)
            continue
        for node in tree.body:
            if not _kept(node):
                continue
            try:
                exec(compile(ast.Module([node], []), name, "exec"), namespace)
            except BaseException as exc:  # the student's code may raise anything, SystemExit too
                why = f"cell {n}, line {node.lineno}: {_text(exc)}"
                for fn in _names(node):
                    errors[fn] = (Problem.DEFINITION, why)
    return namespace, errors


def _text(exc: BaseException) -> str:
    """An exception in a line of words, without trusting its class."""
    name = type.__dict__["__name__"].__get__(type(exc))
    try:
        words = str(exc) if type(exc).__module__ == "builtins" else ""
    except Exception:
        words = ""
    return f"{name}: {words}"[:_DETAIL] if words else name


# --------------------------------------------------------------------------------------------
# One exercise


def _problem(problem: Problem, detail: str) -> dict:
    return {"status": NOT_RUN, "mistake": problem.value, "title": "", "detail": detail[:_DETAIL]}


def check(g: guard.Guard, namespace: dict, errors: dict, ex: dict, table: dict) -> dict:
    """Run the exercise's checker on the student's function; a row of the gradebook."""
    name = ex["function"]
    fn = namespace.get(name)
    if fn is None:
        if name in errors:
            return _problem(*errors[name])
        defined = sorted(
            k
            for k, v in namespace.items()
            if type(v) is types.FunctionType and guard.module_of(v) == guard.STUDENT_MODULE
        )
        also = f"; the notebook defines {', '.join(defined)}" if defined else ""
        return _problem(Problem.MISSING, f"no function named {name}{also}")
    checker = CHECKERS[ex["checker"]]
    flags: dict[str, str] = {}
    before = guard.fingerprint()
    g.alerts.clear()
    try:
        result = checker(_guarded(g, fn, name, flags, before))
    except BaseException as exc:  # a checker that could not finish: say so, never stop
        return _problem(Problem.CRASHED, f"the check stopped: {_text(exc)}")
    if g.alerts:
        return _problem(Problem.FORBIDDEN, "refused: " + "; ".join(dict.fromkeys(g.alerts)))
    where = flags.get("tampered") or guard.changed(before)
    if not where and not (type(result) is CheckResult and type(result.message) is str):
        where = "the checker's result"
    if where:
        return _problem(Problem.TAMPERED, f"it changed {where}")
    if flags.get("memory"):
        return _problem(Problem.MEMORY, "it needed more memory than the limit")
    key = result.mistake or ""
    first = result.message.split("\n", 2)
    detail = " ".join(line for line in first[:2] if line)
    return {
        "status": result.status.value,
        "mistake": key,
        "title": table.get(ex["checker"], {}).get(key, ""),
        "detail": detail[:_DETAIL],
    }


def _out_of_memory(exc: BaseException) -> bool:
    # torch reports a failed CPU allocation only as a RuntimeError with these words
    return isinstance(exc, MemoryError) or (
        type(exc) is RuntimeError and "can't allocate memory" in str(exc)
    )


def _guarded(
    g: guard.Guard, fn: Callable, name: str, flags: dict, before: guard.Fingerprint
) -> Callable:
    """fn as the checker should see it: the checker's callables sealed before fn gets them, what
    fn returns kept only when plain, torch modes it leaves behind removed, the garbage it made
    collected (so that its finalizers run now, not while the checker judges), and a change to
    the checker's globals, an allocation over the limit or a SystemExit noted."""

    def guarded(*args: object) -> object:
        args = tuple(
            g.seal(a) if callable(a) and not isinstance(a, torch.Tensor | type) else a for a in args
        )
        modes = torch._C._len_torch_function_stack()
        dispatch = torch._C._len_torch_dispatch_stack()
        try:
            out = fn(*args)
        except Exception as exc:
            if _out_of_memory(exc):
                flags["memory"] = "yes"
            raise
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: not the end of the check
            raise RuntimeError(f"your function raised {_text(exc)}") from None
        finally:
            if gc.isenabled():
                flags.setdefault("tampered", "the garbage collector's settings")
                gc.disable()
            gc.collect(0)  # with collection off, every cycle the call made is young
            while torch._C._len_torch_function_stack() > modes:
                torch._C._pop_torch_function_stack()
                flags.setdefault("tampered", "torch's function modes")
            while torch._C._len_torch_dispatch_stack() > dispatch:
                torch._C._pop_torch_dispatch_stack()
                flags.setdefault("tampered", "torch's dispatch modes")
            where = guard.changed(before)
            if where:
                flags.setdefault("tampered", where)
        return out if guard.plain(out) else guard.stand_in(out)

    guarded.__name__ = guarded.__qualname__ = name
    if type(fn) is types.FunctionType:
        guarded.__wrapped__ = fn  # the no-loop rule reads the student's source through this
    return guarded
