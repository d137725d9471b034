"""The one registry of what may be called: it is both the allow-list and the dispatch.

``METHODS[name]`` is a tensor method ``x.<name>(...)``: its keyword arguments, whether its
functional form ``torch.<name>(x, ...)`` is allowed, and the function that runs it. ``FUNCTIONS``
holds what is only a function (``einsum``, ``bmm``; also callable as ``torch.einsum``...). The
static checker approves a call only if its name is here; the interpreter runs exactly the entry
it finds here, so the two can never disagree. Every runner checks its arguments and sizes
itself, before PyTorch sees them, and records one Node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from attnviz.sandbox import einsum as einsum_check
from attnviz.sandbox.arguments import Call, axes_of, axis_of, bind, sizes
from attnviz.sandbox.conversion import run_double, run_float, run_round, run_size
from attnviz.sandbox.language import ErrorKind
from attnviz.sandbox.messages import describe, numel
from attnviz.sandbox.tiling import run_repeat, run_tile

if TYPE_CHECKING:
    from attnviz.sandbox.interpreter import Interpreter

__all__ = ["FUNCTIONS", "METHODS", "Call", "Function", "Method", "call_names"]


@dataclass(frozen=True)
class Method:
    """x.name(...): kwargs it accepts; functional: torch.name(x, ...) is allowed too."""

    kwargs: tuple[str, ...]
    run: Callable[..., Any]  # (ip, Call, tensor, args, kwargs) -> value
    functional: bool = True


@dataclass(frozen=True)
class Function:
    """name(...) and torch.name(...): kwargs it accepts; equation: its first argument is an
    einsum equation string; bare: callable without the torch. prefix."""

    kwargs: tuple[str, ...]
    run: Callable[..., Any]  # (ip, Call, args, kwargs) -> value
    equation: bool = False
    bare: bool = True


# ---- methods ---------------------------------------------------------------------------------


def _sum(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    return _reduce(ip, c, t, args, kwargs, "sum")


def _mean(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    return _reduce(ip, c, t, args, kwargs, "mean")


def _amax(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    return _reduce(ip, c, t, args, kwargs, "amax")


def _reduce(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict, name: str) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("dim", "keepdim"), {"axis": "dim"})
    keepdim = bound.get("keepdim", False)
    if not isinstance(keepdim, bool):
        raise ip.error(
            c.node, f"keepdim must be True or False, not {describe(keepdim)}.", kind=ErrorKind.TYPE
        )
    dim = bound.get("dim")
    shape = tuple(t.shape)
    # dim=() (or []) reduces over every axis, as PyTorch does; so does no dim at all.
    every = dim is None or dim == ()
    dims = tuple(range(t.ndim)) if every else axes_of(ip, c, dim, t.ndim)
    if name == "mean" and not (t.is_floating_point() or t.is_complex()):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: mean needs floating-point numbers, but this tensor is "
            f"{t.dtype}; multiply by 1.0 first.",
            kind=ErrorKind.TYPE,
        )
    if name == "amax" and any(shape[d] == 0 for d in dims if d < len(shape)):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: the maximum of nothing is undefined, and an axis to "
            f"reduce over has size 0 in {shape}.",
            kind=ErrorKind.VALUE,
        )
    ip.charge(c.node, t.numel())
    fn = getattr(t, name)
    if every and not keepdim:
        out = ip.torch_call(c.node, fn)  # every axis
    else:
        out = ip.torch_call(c.node, fn, dim=dims, keepdim=keepdim)
    removed = ", ".join(f"{d} (size {shape[d] if d < len(shape) else 1})" for d in dims)
    verb = {"sum": "sums", "mean": "averages", "amax": "takes the max"}[name]
    fate = "kept as size 1 (keepdim=True)" if keepdim else "removed"
    note = f"{shape} -> {tuple(out.shape)}: {verb} over axis {removed}; " + (
        f"{'it is' if len(dims) == 1 else 'they are'} {fate}" if dims else "nothing to reduce"
    )
    return ip.record(c.node, "." + name, out, operands=(t,), note=note)


def _softmax(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("dim",), {"axis": "dim"})
    if "dim" not in bound:
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: softmax needs the axis to normalise over, e.g. "
            f".softmax(dim=1) for the word axis of (B, T) scores.",
            kind=ErrorKind.TYPE,
        )
    d = axis_of(ip, c, bound["dim"], t.ndim)
    if not t.is_floating_point():
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: softmax needs floating-point numbers, not {t.dtype}.",
            kind=ErrorKind.TYPE,
        )
    ip.charge(c.node, 3 * t.numel())
    out = ip.torch_call(c.node, t.softmax, d)
    shape = tuple(t.shape)
    return ip.record(
        c.node,
        ".softmax",
        out,
        operands=(t,),
        note=f"{shape} -> {shape}: softmax over axis {d} (size {shape[d] if shape else 1}); "
        f"values along it now sum to 1",
    )


def _unsqueeze(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("dim",))
    if "dim" not in bound:
        raise ip.error(
            c.node, ".unsqueeze() needs the position of the new axis.", kind=ErrorKind.TYPE
        )
    d = axis_of(ip, c, bound["dim"], t.ndim, extra=1, what="the new axis position")
    ip.check_size(c.node, tuple(t.shape) + (1,))
    out = ip.torch_call(c.node, t.unsqueeze, d)
    return ip.record(
        c.node,
        ".unsqueeze",
        out,
        operands=(t,),
        note=f"{tuple(t.shape)} -> {tuple(out.shape)}: a size-1 axis inserted at position {d}",
    )


def _squeeze(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("dim",))
    what = "size-1 axes removed (others stay)"
    if bound.get("dim") is None:
        out = ip.torch_call(c.node, t.squeeze)
    else:
        dims = axes_of(ip, c, bound["dim"], t.ndim, empty=True)  # () names no axis: no change
        out = ip.torch_call(c.node, t.squeeze, dims)
        what = what if dims else "dim=() names no axis, so nothing is removed"
    return ip.record(
        c.node,
        ".squeeze",
        out,
        operands=(t,),
        note=f"{tuple(t.shape)} -> {tuple(out.shape)}: {what}",
    )


def _transpose(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("dim0", "dim1"))
    if len(bound) != 2:
        raise ip.error(
            c.node,
            ".transpose() needs the two axes to swap, e.g. .transpose(0, 1).",
            kind=ErrorKind.TYPE,
        )
    d0 = axis_of(ip, c, bound["dim0"], t.ndim)
    d1 = axis_of(ip, c, bound["dim1"], t.ndim)
    out = ip.torch_call(c.node, t.transpose, d0, d1)
    return ip.record(
        c.node,
        ".transpose",
        out,
        operands=(t,),
        note=f"{tuple(t.shape)} -> {tuple(out.shape)}: axes {d0} and {d1} swapped (a view)",
    )


def _permute(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    order = sizes(ip, c, args, bind(ip, c, [], kwargs, ("dims",)), "dims")
    ndim = t.ndim
    norm = tuple(axis_of(ip, c, d, ndim) for d in order)
    if sorted(norm) != list(range(ndim)):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: permute needs every axis of {tuple(t.shape)} exactly once "
            f"(a reordering of {tuple(range(ndim))}), got {order}.",
            kind=ErrorKind.SHAPE,
        )
    out = ip.torch_call(c.node, t.permute, norm)
    return ip.record(
        c.node,
        ".permute",
        out,
        operands=(t,),
        note=f"{tuple(t.shape)} -> {tuple(out.shape)}: axes reordered as {norm} (a view)",
    )


def _reshape_like(
    ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict, name: str, key: str
) -> Tensor:
    bound = bind(ip, c, [], kwargs, (key,))
    target = sizes(ip, c, args, bound, key)
    shape = tuple(t.shape)
    if sum(s == -1 for s in target) > 1 or any(s < -1 for s in target):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: a shape may hold one -1 (size to infer) and otherwise "
            f"sizes of 0 or more, got {target}.",
            kind=ErrorKind.VALUE,
        )
    known = numel(tuple(s for s in target if s != -1))
    n = t.numel()
    if -1 in target:
        if known == 0 or n % known:
            raise ip.error(
                c.node,
                f"`{ip.text(c.node)}`: cannot {name} {shape} ({n:,} elements) into {target}: "
                f"the other sizes multiply to {known:,}, which does not divide {n:,}.",
                kind=ErrorKind.SHAPE,
            )
        full = tuple(n // known if s == -1 else s for s in target)
    else:
        full = target
        if known != n:
            raise ip.error(
                c.node,
                f"`{ip.text(c.node)}`: cannot {name} {shape} ({n:,} elements) into {target} "
                f"({known:,} elements): the number of elements must stay the same.",
                kind=ErrorKind.SHAPE,
            )
    ip.check_size(c.node, full)
    ip.charge(c.node, n)
    try:
        out = getattr(t, name)(full)
    except Exception as exc:
        if name == "view" and "stride" in str(exc):
            raise ip.error(
                c.node,
                f"`{ip.text(c.node)}`: .view() cannot reshape {shape} here, because its "
                f"elements are not laid out in order in memory (strides {tuple(t.stride())}, "
                f"e.g. after a transpose). Use .reshape(...), which copies when it must.",
                kind=ErrorKind.SHAPE,
            ) from None
        raise ip.translate(c.node, exc) from None
    return ip.record(
        c.node,
        "." + name,
        out,
        operands=(t,),
        note=f"{shape} -> {tuple(out.shape)}: same {n:,} elements, read in order",
    )


def _reshape(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    return _reshape_like(ip, c, t, args, kwargs, "reshape", "shape")


def _view(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    return _reshape_like(ip, c, t, args, kwargs, "view", "size")


def _expand(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    target = sizes(ip, c, args, bind(ip, c, [], kwargs, ("size",)), "size")
    shape = tuple(t.shape)
    if len(target) < len(shape):
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: expand needs at least {len(shape)} sizes for {shape}, "
            f"got {target}.",
            kind=ErrorKind.SHAPE,
        )
    lead = len(target) - len(shape)
    full = []
    for i, s in enumerate(target):
        old = shape[i - lead] if i >= lead else None
        if s == -1:
            if old is None:
                raise ip.error(
                    c.node,
                    f"`{ip.text(c.node)}`: -1 cannot size a new leading axis.",
                    kind=ErrorKind.VALUE,
                )
            full.append(old)
        elif s < 0:
            raise ip.error(
                c.node, f"`{ip.text(c.node)}`: size {s} is negative.", kind=ErrorKind.VALUE
            )
        elif old is not None and old not in (1, s):
            raise ip.error(
                c.node,
                f"`{ip.text(c.node)}`: expand can only stretch size-1 axes; axis {i - lead} "
                f"of {shape} has size {old} and cannot become {s}.",
                kind=ErrorKind.SHAPE,
            )
        else:
            full.append(s)
    ip.check_size(c.node, tuple(full), "expand into")
    out = ip.torch_call(c.node, t.expand, tuple(full))
    return ip.record(
        c.node,
        ".expand",
        out,
        operands=(t,),
        note=f"{shape} -> {tuple(out.shape)}: size-1 axes stretched without copying (stride 0)",
    )


def _flatten(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("start_dim", "end_dim"))
    start = axis_of(ip, c, bound.get("start_dim", 0), t.ndim)
    end = axis_of(ip, c, bound.get("end_dim", -1), t.ndim)
    if t.ndim and start > end:
        raise ip.error(
            c.node, f"`{ip.text(c.node)}`: start_dim comes after end_dim.", kind=ErrorKind.VALUE
        )
    ip.charge(c.node, t.numel())
    out = ip.torch_call(c.node, t.flatten, start, end)
    return ip.record(
        c.node,
        ".flatten",
        out,
        operands=(t,),
        note=f"{tuple(t.shape)} -> {tuple(out.shape)}: axes {start} to {end} merged into one",
    )


def _elementwise(
    ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict, name: str
) -> Tensor:
    if args or kwargs:
        raise ip.error(c.node, f".{name}() takes no arguments.", kind=ErrorKind.TYPE)
    if t.dtype == torch.bool:
        raise ip.error(c.node, f".{name}() does not work on bool tensors.", kind=ErrorKind.TYPE)
    ip.charge(c.node, t.numel())
    out = ip.torch_call(c.node, getattr(t, name))
    what = {"exp": "e to the power of each element", "abs": "the size of each element"}[name]
    return ip.record(c.node, "." + name, out, operands=(t,), note=f"{tuple(t.shape)}: {what}")


def _exp(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    return _elementwise(ip, c, t, args, kwargs, "exp")


def _abs(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    return _elementwise(ip, c, t, args, kwargs, "abs")


def _matmul(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("other",))
    if "other" not in bound:
        raise ip.error(c.node, ".matmul() needs the other tensor.", kind=ErrorKind.TYPE)
    other_node = c.arg_nodes[0] if c.arg_nodes else c.node.keywords[0].value
    return ip.matmul(c.node, c.receiver, t, other_node, bound["other"])


def _cumsum(ip: Interpreter, c: Call, t: Tensor, args: list, kwargs: dict) -> Tensor:
    bound = bind(ip, c, args, kwargs, ("dim",), {"axis": "dim"})
    if "dim" not in bound:
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: cumsum needs the axis, e.g. .cumsum(dim=1).",
            kind=ErrorKind.TYPE,
        )
    d = axis_of(ip, c, bound["dim"], t.ndim)
    if t.dtype == torch.bool:
        raise ip.error(c.node, ".cumsum() does not work on bool tensors.", kind=ErrorKind.TYPE)
    ip.charge(c.node, t.numel())
    out = ip.torch_call(c.node, t.cumsum, d)
    shape = tuple(t.shape)
    return ip.record(
        c.node,
        ".cumsum",
        out,
        operands=(t,),
        note=f"{shape} -> {shape}: running totals along axis {d}; the last one is the sum",
    )


# ---- functions -------------------------------------------------------------------------------


def _tensors(ip: Interpreter, c: Call, args: list, what: str) -> list[Tensor]:
    for a, v in zip(c.arg_nodes, args, strict=True):
        if not isinstance(v, Tensor):
            raise ip.error(a, f"{what} takes tensors, not {describe(v)}.", kind=ErrorKind.TYPE)
    return args


def _einsum(ip: Interpreter, c: Call, args: list, kwargs: dict) -> Tensor:
    equation, operands = args[0], args[1:]
    eq_node = c.arg_nodes[0]
    for a, v in zip(c.arg_nodes[1:], operands, strict=True):
        if not isinstance(v, Tensor):
            raise ip.error(
                a,
                f"einsum takes tensors after the equation, not {describe(v)}.",
                kind=ErrorKind.TYPE,
            )
    dtypes = {str(o.dtype).replace("torch.", "") for o in operands}
    if len(dtypes) > 1 or "bool" in dtypes:
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: einsum needs tensors of one numeric dtype, got "
            f"{', '.join(sorted(dtypes))}. Turn them into floats first, e.g. x * 1.0.",
            kind=ErrorKind.TYPE,
        )
    try:
        space = einsum_check.check(equation, [tuple(o.shape) for o in operands])
    except einsum_check.EquationError as exc:
        raise ip.error(eq_node if exc.in_equation else c.node, exc.message, kind=exc.kind) from None
    ip.charge(c.node, space * max(len(operands) - 1, 1))  # one contraction per extra operand
    if len(operands) > 2:
        ip.check_size(c.node, (space,), "go through an intermediate")
    out = ip.torch_call(c.node, torch.einsum, equation, *operands)
    shapes = " , ".join(str(tuple(o.shape)) for o in operands)
    return ip.record(
        c.node,
        "einsum",
        out,
        operands=tuple(operands),
        note=f"{equation}: {shapes} -> {tuple(out.shape)}; letters missing from the output are "
        "summed",
    )


def _bmm(ip: Interpreter, c: Call, args: list, kwargs: dict) -> Tensor:
    if len(args) != 2:
        raise ip.error(c.node, "bmm multiplies two tensors: bmm(a, b).", kind=ErrorKind.TYPE)
    a, b = _tensors(ip, c, args, "bmm")
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise ip.error(
            c.node,
            f"`{ip.text(c.node)}`: bmm needs two 3-axis tensors with the same first (batch) "
            f"axis, (B, N, K) and (B, K, M); got {tuple(a.shape)} and {tuple(b.shape)}. "
            "For (B, T) weights write att_scores[:, None, :] -> (B, 1, T).",
            kind=ErrorKind.SHAPE,
        )
    return ip.matmul(c.node, c.arg_nodes[0], a, c.arg_nodes[1], b, op="bmm")


METHODS: dict[str, Method] = {
    "sum": Method(("dim", "axis", "keepdim"), _sum),
    "mean": Method(("dim", "axis", "keepdim"), _mean),
    "amax": Method(("dim", "axis", "keepdim"), _amax),
    "softmax": Method(("dim", "axis"), _softmax),
    "cumsum": Method(("dim", "axis"), _cumsum),
    "unsqueeze": Method(("dim",), _unsqueeze),
    "squeeze": Method(("dim",), _squeeze),
    "transpose": Method(("dim0", "dim1"), _transpose),
    "permute": Method(("dims",), _permute),
    "reshape": Method(("shape",), _reshape),
    "view": Method(("size",), _view, functional=False),
    "expand": Method(("size",), _expand, functional=False),
    "flatten": Method(("start_dim", "end_dim"), _flatten),
    "exp": Method((), _exp),
    "abs": Method((), _abs),
    "matmul": Method(("other",), _matmul),
    "size": Method(("dim",), run_size, functional=False),
    "double": Method((), run_double, functional=False),
    "float": Method((), run_float, functional=False),
    "round": Method(("decimals",), run_round),
    "repeat": Method(("repeats",), run_repeat, functional=False),
    "tile": Method(("dims",), run_tile),
}
"""Tensor methods that may be called, each with the keyword arguments it accepts."""

FUNCTIONS: dict[str, Function] = {
    "einsum": Function((), _einsum, equation=True),
    "bmm": Function((), _bmm),
}
"""Functions that may be called, bare or as torch.name; torch.name also reaches every
functional method (torch.sum, torch.softmax, torch.matmul...)."""


def call_names() -> str:
    """The callable functions, for a message: 'einsum, bmm and torch.<method>(x, ...)'."""
    return f"{', '.join(FUNCTIONS)} and torch.<method>(x, ...) such as torch.sum"
