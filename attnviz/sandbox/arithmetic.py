"""Operators between tensors and numbers: + - * / ** @, with broadcasting explained.

A mixin of ``Interpreter`` (it uses the interpreter's run/record/check helpers); kept apart so
each module holds one concept.
"""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from attnviz.sandbox.language import BINOPS, VERBS, ErrorKind
from attnviz.sandbox.messages import (
    SandboxError,
    axis_words,
    describe,
    is_number,
    numel,
)
from attnviz.trace import STRETCHED, Alignment, align_shapes

if TYPE_CHECKING:
    pass

__all__ = ["Arithmetic"]


class Arithmetic:
    """eval_BinOp and the matrix product, for Interpreter."""

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        op = BINOPS[type(node.op)]
        left = self.run(node.left)
        right = self.run(node.right)
        for side, v in ((node.left, left), (node.right, right)):
            if isinstance(v, bool):
                raise self.error(
                    side,
                    "True/False are only allowed as keepdim=; write 1 or 0 for numbers.",
                    kind=ErrorKind.TYPE,
                )
        if is_number(left) and is_number(right):
            value = self.scalar(node, self.scalar_binop(node, op, left, right))
            return self.record(node, op, value)
        if isinstance(left, tuple) and isinstance(right, tuple) and op == "+":
            if len(left) + len(right) > 64:
                raise self.error(node, "the tuple is too long.", kind=ErrorKind.LIMIT)
            return self.record(node, op, left + right, note="tuples joined")
        if op == "**":
            return self.power(node, left, right)
        if op == "@":
            return self.matmul(node, node.left, left, node.right, right)
        lt, rt = isinstance(left, Tensor), isinstance(right, Tensor)
        if not (lt or rt) or not (lt or is_number(left)) or not (rt or is_number(right)):
            raise self.error(
                node,
                f"`{self.text(node)}`: {describe(left)} and {describe(right)} cannot be "
                f"{VERBS[op]} with {op}; {op} works on tensors and numbers.",
                kind=ErrorKind.TYPE,
            )
        self.begin(node)
        operands = tuple(v for v in (left, right) if isinstance(v, Tensor))
        bc = None
        if lt and rt:
            bc = align_shapes(
                tuple(left.shape),
                tuple(right.shape),
                name_a=self.name_of(node.left, "the left side").strip("`"),
                name_b=self.name_of(node.right, "the right side").strip("`"),
            )
            if bc.result is None:
                raise self.clash(node, op, bc)
            out_shape = bc.result
        else:
            out_shape = tuple((left if lt else right).shape)
        self.check_size(node, out_shape)
        self.charge(node, numel(out_shape))
        fn = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}[op]
        if op == "-" and any(t.dtype == torch.bool for t in operands):
            raise self.error(
                node,
                f"`{self.text(node)}`: PyTorch does not subtract bool tensors; turn the bools "
                f"into numbers first, e.g. mask * 1.0.",
                kind=ErrorKind.TYPE,
            )
        out = self.torch_call(node, fn, left, right)
        return self.record(
            node, op, out, operands=operands, broadcast=bc, note=self.broadcast_note(op, bc, out)
        )

    def broadcast_note(self, op: str, bc: Alignment | None, out: Tensor) -> str:
        if bc is None:
            return f"elementwise {op} with a number -> {tuple(out.shape)}"
        a, b = bc.shape_a, bc.shape_b
        parts = []
        for ax in bc.axes:
            if ax.outcome == STRETCHED:
                side = bc.name_a if ax.stretched == "a" else bc.name_b
                was = ax.size_a if ax.stretched == "a" else ax.size_b
                how = "lacks the axis: it is added and" if was is None else "has size 1: it is"
                parts.append(f"on {axis_words(ax.axis)} {side} {how} stretched to {ax.result}")
        how = "; ".join(parts) if parts else "same shapes, element by element"
        return f"{a} {op} {b} -> {tuple(out.shape)}: {how}"

    def clash(self, node: ast.BinOp, op: str, bc: Alignment) -> SandboxError:
        ax = bc.clashes[-1]  # the rightmost clash, the one PyTorch reports
        a_shape, b_shape = bc.shape_a, bc.shape_b
        a_name = self.name_of(node.left, "the left side")
        b_name = self.name_of(node.right, "the right side")
        a_size, b_size = ax.size_a, ax.size_b
        where = (
            f"axis {len(a_shape) + ax.axis} of {a_name}, axis {len(b_shape) + ax.axis} of {b_name}"
        )
        message = (
            f"`{self.text(node)}`: {a_name} {a_shape} and {b_name} {b_shape} cannot be "
            f"{VERBS[op]}: shapes line up from the right, and {a_size} meets {b_size} on "
            f"{axis_words(ax.axis)} ({where}). Two sizes on the same axis must be equal, or one "
            f"of them must be 1 (a size-1 axis is stretched to match; a missing axis is added in "
            f"front)."
        )
        hint = self.trailing_axis_hint(node.left, a_shape, node.right, b_shape)
        return self.error(node, message + hint, kind=ErrorKind.SHAPE)

    def trailing_axis_hint(
        self, a_node: ast.AST, a_shape: tuple, b_node: ast.AST, b_shape: tuple
    ) -> str:
        """The classic mistake: (B, T, H) * (B, T) needs (B, T, 1): suggest name[..., None]."""
        for big_node, big, small_node, small in (
            (a_node, a_shape, b_node, b_shape),
            (b_node, b_shape, a_node, a_shape),
        ):
            core = tuple(s for s in small if s != 1)
            for k in range(len(big), 0, -1):
                if big[:k] == core and len(core) == k and k < len(big):
                    target = big[:k] + (1,) * (len(big) - k)
                    base = small_node
                    while isinstance(base, ast.Subscript) or (
                        isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute)
                    ):
                        base = base.value if isinstance(base, ast.Subscript) else base.func.value
                    small_name = self.name_of(small_node, "the other side")
                    big_name = self.name_of(big_node, "the other side")
                    if (
                        isinstance(base, ast.Name)
                        and base.id in self.variables  # not the module name torch
                        and tuple(self.variables[base.id].shape) == core
                    ):
                        fix = f"{base.id}[..., {', '.join(['None'] * (len(big) - k))}]"
                        return (
                            f" To weight each of the first {k} axes of {big_name} by "
                            f"{small_name}, it needs shape {target}: write {fix} "
                            f"-> {target}, which lines up with {big}."
                        )
                    return (
                        f" To line up with the first {k} axes of {big_name} {big}, "
                        f"{small_name} needs shape {target}: add trailing axes with [..., None]."
                    )
        return ""

    def scalar_binop(self, node: ast.AST, op: str, a: Any, b: Any) -> Any:
        if op == "**":
            if abs(b) > self.limits.max_power:
                raise self.error(
                    node,
                    f"the exponent {b} is too large; exponents may be at most "
                    f"{self.limits.max_power:g} in size.",
                    kind=ErrorKind.LIMIT,
                )
            if abs(a) > 1 and abs(b) * math.log2(abs(a)) > 62:
                raise self.error(
                    node, f"`{self.text(node)}` is too large a number.", kind=ErrorKind.LIMIT
                )
        try:
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "/":
                return a / b
            if op == "**":
                return a**b
        except ZeroDivisionError:
            raise self.error(node, f"`{self.text(node)}` divides by zero.") from None
        except OverflowError:
            raise self.error(
                node, f"`{self.text(node)}` is too large a number.", kind=ErrorKind.LIMIT
            ) from None
        raise self.error(
            node, f"`{self.text(node)}`: {op} needs tensors, not two numbers.", kind=ErrorKind.TYPE
        )

    def power(self, node: ast.BinOp, base: Any, exponent: Any) -> Any:
        if isinstance(exponent, Tensor) or not is_number(exponent):
            raise self.error(
                node.right,
                f"the exponent of ** must be a number (at most {self.limits.max_power:g}), "
                f"not {describe(exponent)}.",
                kind=ErrorKind.TYPE,
            )
        if abs(exponent) > self.limits.max_power:
            raise self.error(
                node.right,
                f"the exponent {exponent} is too large; exponents may be at most "
                f"{self.limits.max_power:g} in size.",
                kind=ErrorKind.LIMIT,
            )
        if not isinstance(base, Tensor):
            raise self.error(
                node.left,
                f"** needs a tensor or a number as base, not {describe(base)}.",
                kind=ErrorKind.TYPE,
            )
        self.begin(node)
        self.charge(node, base.numel())
        if not base.is_floating_point() and (exponent < 0 or isinstance(exponent, float)):
            raise self.error(
                node,
                f"`{self.text(node)}`: {base.dtype} numbers cannot be raised to {exponent}; "
                f"make them floats first, e.g. x * 1.0.",
                kind=ErrorKind.TYPE,
            )
        out = self.torch_call(node, torch.pow, base, exponent)
        return self.record(
            node, "**", out, operands=(base,), note=f"each element to the power {exponent}"
        )

    def matmul(
        self, node: ast.AST, a_node: ast.AST, a: Any, b_node: ast.AST, b: Any, op: str = "@"
    ) -> Tensor:
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            raise self.error(
                node,
                f"`{self.text(node)}`: @ multiplies two tensors, not {describe(a)} and "
                f"{describe(b)}.",
                kind=ErrorKind.TYPE,
            )
        self.begin(node)
        a_name = self.name_of(a_node, "the left side")
        b_name = self.name_of(b_node, "the right side")
        sa, sb = tuple(a.shape), tuple(b.shape)
        if not sa or not sb:
            raise self.error(
                node,
                f"`{self.text(node)}`: @ needs tensors with at least one axis, got {a_name} "
                f"{sa} and {b_name} {sb}; use * to multiply by a number.",
                kind=ErrorKind.SHAPE,
            )
        if a.dtype != b.dtype or a.dtype == torch.bool:
            why = (
                "bool tensors cannot be matrix-multiplied"
                if a.dtype == b.dtype
                else f"both sides need the same dtype, but {a_name} is "
                f"{str(a.dtype).replace('torch.', '')} and {b_name} is "
                f"{str(b.dtype).replace('torch.', '')}"
            )
            raise self.error(
                node,
                f"`{self.text(node)}`: {why}. Turn them into floats first, e.g. x * 1.0.",
                kind=ErrorKind.TYPE,
            )
        k_a = sa[-1]
        k_b = sb[-2] if len(sb) >= 2 else sb[0]
        if k_a != k_b:
            which = "second-to-last" if len(sb) >= 2 else "only"
            raise self.error(
                node,
                f"`{self.text(node)}`: matrix multiplication pairs the last axis of {a_name} "
                f"{sa} (size {k_a}) with the {which} axis of {b_name} {sb} (size {k_b}); "
                f"{k_a} meets {k_b}, and they must be equal.",
                kind=ErrorKind.SHAPE,
            )
        batch_a, batch_b = sa[:-2], sb[:-2]
        bc = align_shapes(batch_a, batch_b) if (batch_a or batch_b) else None
        if bc is not None and bc.result is None:
            ax = bc.clashes[-1]
            raise self.error(
                node,
                f"`{self.text(node)}`: the batch axes (all but the last two) of {a_name} {sa} and "
                f"{b_name} {sb} must broadcast, but on {axis_words(ax.axis)} of the batch "
                f"{ax.size_a} meets {ax.size_b}. Batch sizes must be equal or 1.",
                kind=ErrorKind.SHAPE,
            )
        batch = numel(bc.result) if bc is not None and bc.result is not None else 1
        m = sa[-2] if len(sa) >= 2 else 1
        n = sb[-1] if len(sb) >= 2 else 1
        # PyTorch expands both operands to the full batch before multiplying: check those too.
        self.check_size(node, (batch, m, k_a), "expand the left side into")
        self.check_size(node, (batch, k_b, n), "expand the right side into")
        self.charge(node, batch * m * n * max(k_a, 1))
        out = self.torch_call(node, torch.matmul, a, b)
        return self.record(
            node,
            op,
            out,
            operands=(a, b),
            broadcast=bc,
            note=f"{sa} @ {sb} -> {tuple(out.shape)}: sums over the shared axis of size {k_a}",
        )
