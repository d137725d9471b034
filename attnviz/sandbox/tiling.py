"""Copying a tensor side by side: ``.repeat(...)`` and ``.tile(...)``, sized before they run.

``x.repeat(r0, r1, ...)`` needs a count for every axis (more counts add leading axes) and writes
each axis's numbers r times into new memory; ``x.tile(...)`` is the same with missing counts taken
as 1 from the left. The step's note says when ``.expand(...)`` would give the same numbers as a
view (every repeated axis has size 1), and otherwise that a copy is the only way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from attnviz.sandbox.arguments import Call, bind, sizes
from attnviz.sandbox.language import ErrorKind
from attnviz.sandbox.messages import numel

if TYPE_CHECKING:
    from attnviz.sandbox.interpreter import Interpreter

__all__ = ["run_repeat", "run_tile"]


def expand_instead(shape: tuple[int, ...], counts: tuple[int, ...]) -> str | None:
    """The .expand(...) that gives the same numbers as .repeat(*counts) on shape, or None.

    counts has at least len(shape) entries (the leading ones make new axes). expand stretches
    only size-1 axes, so it applies when every axis repeated more than once has size 1.
    (2, 3, 1), (1, 1, 5) -> ".expand(2, 3, 5)"; (2, 3), (1, 2) -> None.
    """
    lead = len(counts) - len(shape)
    full = (1,) * lead + shape
    if any(r not in (0, 1) and s != 1 for s, r in zip(full, counts, strict=True)):
        return None
    if 0 in counts:
        return None
    return f".expand({', '.join(str(s * r) for s, r in zip(full, counts, strict=True))})"


def _copy(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict, name: str) -> Tensor:
    key = "dims" if name == "tile" else "repeats"
    counts = sizes(ip, c, args, bind(ip, c, [], kwargs, (key,)), key)
    shape = tuple(t.shape)
    if any(r < 0 for r in counts):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: a repeat count cannot be negative, got {counts}.",
            kind=ErrorKind.VALUE,
        )
    if name == "tile":
        counts = (1,) * max(len(shape) - len(counts), 0) + counts
    elif len(counts) < len(shape):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: .repeat needs a count for each of the {len(shape)} axes of "
            f"{shape}, got {counts}; .tile(...) takes fewer and treats the missing ones as 1.",
            kind=ErrorKind.SHAPE,
        )
    full = (1,) * (len(counts) - len(shape)) + shape
    target = tuple(s * r for s, r in zip(full, counts, strict=True))
    ip.check_size(c.node, target, name)
    ip.charge(c.node, numel(target))
    out = ip.torch_call(c.node, getattr(t, name), counts)
    view = expand_instead(shape, counts)
    how = (
        f"{view} would give the same numbers as a view, without copying"
        if view
        else "a copy (expand cannot do this: it stretches only size-1 axes)"
    )
    return ip.record(
        c.node,
        "." + name,
        out,
        operands=(t,),
        note=f"{shape} -> {tuple(out.shape)}: copied {counts} times along the axes; {how}",
    )


def run_repeat(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    """x.repeat(r0, r1, ...): (s0, s1, ...) -> (s0 * r0, s1 * r1, ...), a copy."""
    return _copy(ip, c, t, args, kwargs, "repeat")


def run_tile(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    """x.tile(r...): like repeat, with missing counts taken as 1 from the left."""
    return _copy(ip, c, t, args, kwargs, "tile")
