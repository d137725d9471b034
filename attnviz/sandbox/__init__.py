"""Type your own expression: a safe tensor-expression interpreter that traces every shape.

    trace = evaluate("(net_output * att_scores[..., None]).sum(axis=1)", {...})
    trace.result          # (B, H)
    trace.steps           # one Node per sub-expression, in evaluation order

The text may come from anyone, so it is never given to ``eval``/``exec``/``compile``. It is parsed
with ``ast.parse(mode="eval")`` and a small interpreter walks a whitelist of node types itself:

- the variables passed in; int, float, True/False/None and ``...`` constants (bounded);
- ``+ - * / @``, unary ``-``/``+``, ``**`` with a small constant exponent;
- subscripts with ints, slices, ``None`` and ``...`` (and tuples of those), ``x.shape[0]``;
- the attributes ``.T``, ``.shape``, ``.ndim``;
- what the one registry allows (``registry.METHODS``, ``registry.FUNCTIONS``): tensor methods
  with their keyword arguments, their functional forms ``torch.sum(x, dim=1)``, and the
  functions ``einsum("equation", a, b)``/``torch.einsum``, ``bmm``; a string only as an equation.

Anything else is refused with a message that names the construct. Every evaluation runs twice:
first on ``meta`` tensors (shapes, dtypes and storage sizes, no memory), where every limit in
``Limits`` is checked (including the bytes of every distinct storage touched), then for real,
executing only the operations the first pass approved. The caller's tensors are never modified.
Every failure is a ``SandboxError`` (an ``AttnvizError``) with a kind (``ErrorKind``), the partial
trace and the span of the culprit.

Modules: ``language`` (allow-lists, limits, kinds), ``parse`` (text and the static checker),
``interpreter`` (+ ``arithmetic``, ``indexing``), ``registry`` (what may be called), ``einsum``
(equation checks), ``memory`` (storage bytes), ``record`` (Node, Trace), ``messages``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

import torch
from torch import Tensor

from attnviz.sandbox.interpreter import Interpreter, Stop
from attnviz.sandbox.language import (
    ATTRIBUTES,
    DEFAULT_LIMITS,
    ERROR_KINDS,
    NOT_SUPPORTED,
    PLAIN_DTYPES,
    ErrorKind,
    Limits,
)
from attnviz.sandbox.messages import SandboxError, plain, pointer
from attnviz.sandbox.parse import Checker, parse
from attnviz.sandbox.record import Node, Trace
from attnviz.sandbox.registry import FUNCTIONS, METHODS

__all__ = [
    "ATTRIBUTES",
    "DEFAULT_LIMITS",
    "ERROR_KINDS",
    "FUNCTIONS",
    "METHODS",
    "NOT_SUPPORTED",
    "ErrorKind",
    "Limits",
    "Node",
    "SandboxError",
    "Trace",
    "evaluate",
    "plain",
    "pointer",
]

_WARM = threading.Lock()
_warmed = False


def _warm_up() -> None:
    """Run every operation once on tiny tensors, outside any time budget.

    PyTorch loads parts of itself on first use (the first ``meta`` multiplication alone takes
    about a second), which must not count against the first user's budget.
    """
    global _warmed
    with _WARM:
        if _warmed:
            return
        x = torch.zeros(2, 3, 4)  # (B,T,H)
        w = torch.zeros(2, 3)  # (B,T)
        for device in ("meta", "cpu"):
            a, b = x.to(device), w.to(device)
            c = a * b[..., None] + a - a / 2  # (B,T,H)
            (-(c**2)).sum(dim=(1,), keepdim=True).mean(dim=(0,)).amax()
            b.softmax(1).unsqueeze(0).squeeze((0,)).transpose(0, 1).permute(1, 0).cumsum(0)
            c.reshape(-1).view(2, 12).flatten(0, 1).exp().abs()
            b.expand(2, 2, 3).matmul(a) @ a.transpose(1, 2)
            torch.bmm(b[:, None, :], a)
            torch.einsum("bth,bt->bh", a, b)
            torch.neg(b)
            c.untyped_storage().nbytes()
        _warmed = True


def _check_variables(variables: Mapping[str, Tensor]) -> None:
    if not isinstance(variables, Mapping):
        raise SandboxError("variables must be a mapping of names to tensors.", kind="type")
    for name, value in variables.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise SandboxError(f"variable name {name!r} is not a valid name.", kind="type")
        if not isinstance(value, Tensor) or value.layout != torch.strided:
            raise SandboxError(
                f"variable {name} must be a dense torch.Tensor, got {type(value).__name__}.",
                kind="type",
            )
        if value.is_quantized or not (
            value.is_floating_point() or value.is_complex() or value.dtype in PLAIN_DTYPES
        ):
            raise SandboxError(
                f"variable {name} {tuple(value.shape)} has dtype {value.dtype}; use a float, "
                f"int or bool tensor.",
                kind="type",
            )


def evaluate(expr: str, variables: Mapping[str, Tensor], *, limits: Limits | None = None) -> Trace:
    """Evaluate a tensor expression safely and trace every step.

    expr: text such as "(net_output * att_scores[..., None]).sum(axis=1)". variables: the names the
    text may use, e.g. {"net_output": (B, T, H), "att_scores": (B, T)}; they are never modified.
    Returns a Trace whose result is a Tensor in its own storage (or a tuple for .shape, a number
    for .ndim) and whose steps list every sub-expression. Raises SandboxError (an AttnvizError)
    with .kind, .span and the partial .trace, for anything it cannot or will not evaluate.
    """
    limits = limits or DEFAULT_LIMITS
    if not _warmed:
        _warm_up()
    start = time.perf_counter()
    text = expr if isinstance(expr, str) else ""
    try:
        return _evaluate(expr, variables, limits, start)
    except SandboxError as exc:
        if not exc.trace.expr and isinstance(expr, str):
            exc.trace = Trace(expr=expr, result=None, steps=exc.trace.steps)
        raise
    except RecursionError:
        raise SandboxError(
            f"the expression is nested too deeply (the limit is {limits.max_depth} levels).",
            kind=ErrorKind.LIMIT,
            trace=Trace(expr=text, result=None),
        ) from None
    except Exception as exc:  # a bug in the sandbox: still never let it escape as-is
        raise SandboxError(
            f"the expression could not be evaluated ({type(exc).__name__}); please report it.",
            kind=ErrorKind.INTERNAL,
            trace=Trace(expr=text, result=None),
        ) from exc


def _evaluate(expr: str, variables: Mapping[str, Tensor], limits: Limits, start: float) -> Trace:
    _check_variables(variables)
    tree, src = parse(expr, limits)
    checker = Checker(src, limits, variables)
    checker.check(tree)
    deadline = start + limits.time_budget

    first = Interpreter(src, checker, limits, variables, meta=True, deadline=deadline)
    try:
        first.run(tree)
        failure = None
    except SandboxError as exc:
        if exc.kind == ErrorKind.TIME:
            exc.trace = Trace(expr=expr, result=None, steps=tuple(first.steps))
            raise
        failure = exc

    # The real pass runs only what the first pass approved: on a failure, up to that step.
    second = Interpreter(
        src,
        checker,
        limits,
        variables,
        meta=False,
        deadline=deadline,
        max_steps=len(first.steps) if failure else None,
    )
    try:
        result = second.run(tree)
    except Stop:
        failure.trace = Trace(expr=expr, result=None, steps=tuple(second.steps))
        raise failure from None
    except SandboxError as exc:
        exc.trace = Trace(expr=expr, result=None, steps=tuple(second.steps))
        raise
    if failure is not None:  # the real pass succeeded where the first failed: trust the refusal
        failure.trace = Trace(expr=expr, result=None, steps=tuple(second.steps))
        raise failure
    if isinstance(result, Tensor):
        result = second.result_copy(result)
    return Trace(
        expr=expr, result=result, steps=tuple(second.steps), bytes_touched=first.ledger.total
    )
