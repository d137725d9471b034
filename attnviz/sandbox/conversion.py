"""Methods that read a tensor's size or turn its numbers into another type: ``.size()``,
``.double()``, ``.float()`` and ``.round()``, each run as PyTorch runs it (checked first).

``x.size()`` is the shape as a tuple and ``x.size(d)`` one size, like ``x.shape`` and
``x.shape[d]``; ``.double()``/``.float()`` copy into float64/float32; ``.round(decimals=k)``
rounds floats half to even, as PyTorch does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from attnviz.sandbox.arguments import Call, axis_of, bind
from attnviz.sandbox.language import ErrorKind
from attnviz.sandbox.messages import describe, is_int

if TYPE_CHECKING:
    from attnviz.sandbox.interpreter import Interpreter

__all__ = ["run_double", "run_float", "run_round", "run_size"]


def run_size(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Any:
    """x.size() -> the shape (a tuple); x.size(d) or x.size(dim=d) -> the size of axis d."""
    bound = bind(ip, c, args, kwargs, ("dim",))
    shape = tuple(t.shape)
    if bound.get("dim") is None:
        return ip.record(c.node, ".size", shape, operands=(t,), note=f"the shape {shape}")
    d = axis_of(ip, c, bound["dim"], t.ndim)
    return ip.record(
        c.node, ".size", shape[d], operands=(t,), note=f"axis {d} of {shape} has size {shape[d]}"
    )


def _convert(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict, dtype) -> Tensor:
    name = c.name.strip(".()")
    if args or kwargs:
        raise ip.error(c.node, f".{name}() takes no arguments here.", kind=ErrorKind.TYPE)
    ip.check_size(c.node, tuple(t.shape))
    ip.charge(c.node, t.numel())
    out = ip.torch_call(c.node, t.to, dtype)
    was = str(t.dtype).replace("torch.", "")
    now = str(dtype).replace("torch.", "")
    what = "the same tensor (already " + now + ")" if t.dtype == dtype else f"{was} -> {now}"
    return ip.record(c.node, "." + name, out, operands=(t,), note=f"{tuple(t.shape)}: {what}")


def run_double(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    """x.double() -> x in float64 (B, T, H) -> (B, T, H)."""
    return _convert(ip, c, t, args, kwargs, torch.float64)


def run_float(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    """x.float() -> x in float32 (B, T, H) -> (B, T, H)."""
    return _convert(ip, c, t, args, kwargs, torch.float32)


def run_round(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    """x.round() or x.round(decimals=k): each element rounded (half to even), same shape."""
    if args:
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: give the number of decimals by name, e.g. .round(decimals=2).",
            kind=ErrorKind.TYPE,
        )
    decimals = kwargs.get("decimals", 0)
    if not is_int(decimals):
        raise ip.error(
            c.node,
            f"decimals must be a whole number, not {describe(decimals)}.",
            kind=ErrorKind.TYPE,
        )
    if t.dtype == torch.bool or (not t.is_floating_point() and decimals != 0):
        # PyTorch refuses these on the CPU (its shape-only pass lets them through)
        why = "bool tensors" if t.dtype == torch.bool else f"{t.dtype} with decimals"
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: PyTorch does not round {why}; turn them into floats first, "
            f"e.g. .float().",
            kind=ErrorKind.TYPE,
        )
    ip.charge(c.node, t.numel())
    if decimals == 0:
        out = ip.torch_call(c.node, t.round)
    else:
        out = ip.torch_call(c.node, t.round, decimals=decimals)
    places = "whole numbers" if decimals == 0 else f"{decimals} decimal places"
    return ip.record(
        c.node, ".round", out, operands=(t,), note=f"{tuple(t.shape)}: rounded to {places}"
    )
