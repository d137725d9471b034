"""A call's arguments: how a call reads, and the checks every runner makes of its arguments.

``bind`` matches positional and keyword arguments to parameters (``axis=`` as ``dim=``),
``axis_of``/``axes_of`` turn an axis argument into a checked non-negative index, ``sizes`` reads a
shape given as numbers or as one tuple. Each names the call and the shapes in its message.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnviz.sandbox.language import ErrorKind
from attnviz.sandbox.messages import describe, is_int, plural

if TYPE_CHECKING:
    from attnviz.sandbox.interpreter import Interpreter

__all__ = ["Call", "axes_of", "axis_of", "bind", "sizes"]


@dataclass(frozen=True)
class Call:
    """A call as written. node: the ast.Call. name: how it reads in a message (".sum()",
    "torch.sum()"). receiver: the node of the tensor (x in x.sum() or torch.sum(x)), None for a
    function. arg_nodes: the positional argument nodes after the receiver."""

    node: ast.Call
    name: str
    receiver: ast.AST | None
    arg_nodes: tuple[ast.AST, ...]


def bind(
    ip: Interpreter,
    c: Call,
    args: list,
    kwargs: dict,
    params: tuple[str, ...],
    aliases: dict[str, str] | None = None,
) -> dict:
    """Match positional and keyword arguments to params (like Python), with dim=axis aliases."""
    aliases = aliases or {}
    if len(args) > len(params):
        raise ip.error(
            c.node,
            f"{c.name} takes at most {plural(len(params), 'argument')}, got {len(args)}.",
            kind=ErrorKind.TYPE,
        )
    bound = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        target = aliases.get(key, key)
        if target in bound:
            raise ip.error(
                c.node,
                f"{c.name} got `{key}` twice (axis and dim mean the same).",
                kind=ErrorKind.TYPE,
            )
        bound[target] = value
    return bound


def axis_of(
    ip: Interpreter, c: Call, value: Any, ndim: int, *, extra: int = 0, what: str = "axis"
) -> int:
    """A valid axis index for a tensor with ndim axes (+extra for unsqueeze), as non-negative."""
    name = ip.name_of(c.receiver, "the tensor")
    if not is_int(value):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: {what} must be a whole number, not {describe(value)}.",
            kind=ErrorKind.TYPE,
        )
    top = max(ndim + extra, 1)
    if not -top <= value < top:
        shape = tuple(ip.receiver_shape)
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: {name} {shape} has {plural(ndim, 'axis')}"
            + f", so {what} must be between {-top} and {top - 1}; {value} does not exist.",
            kind=ErrorKind.SHAPE,
        )
    return value % top


def axes_of(
    ip: Interpreter, c: Call, value: Any, ndim: int, *, empty: bool = False
) -> tuple[int, ...]:
    """One axis or a tuple of distinct axes, as non-negative indices; () only where empty."""
    items = value if isinstance(value, tuple) else (value,)
    if not items and empty:
        return ()
    if not items:
        raise ip.error(c.node, "give at least one axis.", kind=ErrorKind.VALUE)
    out = tuple(axis_of(ip, c, v, ndim) for v in items)
    if len(set(out)) != len(out):
        raise ip.error(c.node, f"`{ip.text(c.node)}` names an axis twice.", kind=ErrorKind.VALUE)
    return out


def sizes(ip: Interpreter, c: Call, args: list, bound: dict, key: str) -> tuple[int, ...]:
    """Shape arguments given as ints, or as one tuple/list (x.reshape(2, 15) or ((2, 15)))."""
    if key in bound and args:
        raise ip.error(
            c.node,
            f"give the shape either as numbers or as {key}=, not both.",
            kind=ErrorKind.TYPE,
        )
    raw = bound[key] if key in bound else tuple(args)
    if len(args) == 1 and isinstance(args[0], tuple):
        raw = args[0]
    if is_int(raw):
        raw = (raw,)
    if not isinstance(raw, tuple) or not all(is_int(s) for s in raw):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: a shape is a sequence of whole numbers.",
            kind=ErrorKind.TYPE,
        )
    return raw
