"""The interpreter: walks a checked tree and evaluates it, on meta tensors or on real ones.

Every evaluation runs twice: first on ``meta`` tensors (shapes, dtypes and storage sizes, no
memory), where every limit is checked (elements, axes, work, distinct storage bytes, time), then
for real, executing only the operations the first pass approved. Calls go through the registry
(``attnviz.sandbox.registry``); everything else (operators, indexing, attributes) is here.
"""

from __future__ import annotations

import ast
import math
import re
import time
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from attnviz.sandbox.arithmetic import Arithmetic
from attnviz.sandbox.indexing import Indexing
from attnviz.sandbox.language import MAX_INT, TORCH, UNARY, ErrorKind, Limits
from attnviz.sandbox.memory import Ledger
from attnviz.sandbox.messages import (
    SandboxError,
    clip,
    describe,
    is_int,
    is_number,
    numel,
)
from attnviz.sandbox.parse import Checker, Source
from attnviz.sandbox.record import Node, compact
from attnviz.sandbox.registry import FUNCTIONS, METHODS, Call
from attnviz.trace import Alignment

__all__ = ["Interpreter", "Stop"]


class Stop(Exception):
    """Internal: the real pass reached the step the first pass failed on."""


class Interpreter(Arithmetic, Indexing):
    """One pass over the checked tree: on meta tensors (shapes only) or on the real ones."""

    def __init__(
        self,
        src: Source,
        checker: Checker,
        limits: Limits,
        variables: Mapping[str, Tensor],
        *,
        meta: bool,
        deadline: float,
        max_steps: int | None = None,
    ) -> None:
        self.src = src
        self.checker = checker
        self.limits = limits
        self.variables = variables
        self.meta = meta
        self.deadline = deadline
        self.max_steps = max_steps
        self.cache: dict[str, Tensor] = {}
        self.receiver_shape: tuple[int, ...] = ()  # of the tensor whose method is being called
        self.steps: list[Node] = []
        self.work = 0
        self.total_elements = 0
        self.ledger = Ledger()  # distinct storages touched, and their bytes
        self.kept_bytes = 0  # bytes of the compact copies the nodes keep
        self.root: ast.AST | None = None  # the whole expression's node: its value is always kept
        self.result: Tensor | None = None  # the root's compact copy, shared by trace and node

    # ---- helpers ----------------------------------------------------------------------------
    def error(self, node: ast.AST, message: str, kind: ErrorKind = ErrorKind.VALUE) -> SandboxError:
        return SandboxError(message, kind=kind, span=self.src.span(node))

    def text(self, node: ast.AST) -> str:
        """The node's text for a message (clipped; Step.source keeps it whole)."""
        return clip(self.src.text(node))

    def name_of(self, node: ast.AST, fallback: str) -> str:
        text = " ".join(self.text(node).split())
        return f"`{text}`" if len(text) <= 40 else fallback

    def begin(self, node: ast.AST) -> None:
        """Called before every operation on a variable's value: time and first-pass approval."""
        if self.max_steps is not None and len(self.steps) >= self.max_steps:
            raise Stop
        if time.perf_counter() > self.deadline:
            raise self.error(
                node,
                f"the evaluation took longer than {self.limits.time_budget:g} s and was stopped "
                f"at `{self.text(node)}`.",
                kind=ErrorKind.TIME,
            )

    def charge(self, node: ast.AST, work: int) -> None:
        self.work += int(work)
        if self.work > self.limits.max_work:
            raise self.error(
                node,
                f"`{self.text(node)}` needs too much computation (about {self.work:,} element "
                f"operations so far; the limit is {self.limits.max_work:,}). Use smaller tensors.",
                kind=ErrorKind.LIMIT,
            )

    def check_size(self, node: ast.AST, shape: tuple[int, ...], what: str = "") -> None:
        """Refuse a shape too big to allocate, before it is allocated."""
        if len(shape) > self.limits.max_ndim:
            raise self.error(
                node,
                f"`{self.text(node)}` would have {len(shape)} axes; the limit is "
                f"{self.limits.max_ndim}.",
                kind=ErrorKind.LIMIT,
            )
        n = numel(shape)
        if n > self.limits.max_elements:
            raise self.error(
                node,
                f"`{self.text(node)}` would {what or 'make'} a tensor of shape {shape} with "
                f"{n:,} elements; the limit is {self.limits.max_elements:,}.",
                kind=ErrorKind.LIMIT,
            )

    def record(
        self,
        node: ast.AST,
        op: str,
        value: Any,
        *,
        operands: tuple[Tensor, ...] = (),
        broadcast: Alignment | None = None,
        note: str = "",
    ) -> Any:
        if id(node) not in self.checker.dynamic:
            return value
        if isinstance(value, Tensor):
            shape = tuple(value.shape)
            self.check_size(node, shape)
            self.total_elements += numel(shape)
            if self.total_elements > self.limits.max_total_elements:
                raise self.error(
                    node,
                    f"the intermediates up to `{self.text(node)}` hold "
                    f"{self.total_elements:,} elements together; the limit is "
                    f"{self.limits.max_total_elements:,}.",
                    kind=ErrorKind.LIMIT,
                )
            dtype, stride = value.dtype, tuple(value.stride())
        else:
            shape = dtype = stride = None
        self.steps.append(
            Node(
                index=len(self.steps),
                source=self.src.text(node),
                span=self.src.span(node),
                op=op,
                shape=shape,
                dtype=dtype,
                stride=stride,
                value=self.kept(node, value),
                operands=tuple(tuple(t.shape) for t in operands),
                broadcast=broadcast,
                note=note,
            )
        )
        return value

    def kept(self, node: ast.AST, value: Any) -> Any:
        """What a Node keeps of its value: a compact copy of a small tensor, never a view."""
        if self.meta:
            return None
        if not isinstance(value, Tensor):
            return value
        if node is self.root:
            return self.result_copy(value)
        size = value.numel() * value.element_size()
        if value.numel() > self.limits.keep_elements or (
            self.kept_bytes + size > self.limits.keep_bytes
        ):
            return None
        self.kept_bytes += size
        return compact(value)

    def result_copy(self, value: Tensor) -> Tensor:
        """The result in its own storage (made once, shared by the trace and its last node)."""
        if self.result is None:
            self.result = compact(value)
        return self.result

    def torch_call(self, node: ast.AST, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            out = fn(*args, **kwargs)
        except Exception as exc:  # PyTorch's own refusal, translated
            raise self.translate(node, exc) from None
        if isinstance(out, Tensor):
            self.check_size(node, tuple(out.shape))
            self.count_bytes(node, out)
        return out

    def count_bytes(self, node: ast.AST, t: Tensor) -> None:
        """Add t's storage to the distinct storages touched; refuse past the byte budget."""
        total = self.ledger.add(t)
        if total > self.limits.max_bytes:
            raise self.error(
                node,
                f"`{self.text(node)}` would bring the memory this expression touches to "
                f"{total:,} bytes (every distinct tensor storage counted once, views included); "
                f"the limit is {self.limits.max_bytes:,}. Use smaller tensors.",
                kind=ErrorKind.LIMIT,
            )

    def translate(self, node: ast.AST, exc: Exception) -> SandboxError:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        first = re.sub(r"\s*\(Triggered internally at .*", "", first)[:300]
        return self.error(
            node, f"`{self.text(node)}`: PyTorch refused this: {first}", kind=ErrorKind.TORCH
        )

    def scalar(self, node: ast.AST, value: Any) -> Any:
        if isinstance(value, complex):
            raise self.error(
                node,
                f"`{self.text(node)}` gives a complex number (a negative number to a fractional "
                f"power); only real numbers are allowed.",
                kind=ErrorKind.VALUE,
            )
        if is_int(value) and abs(value) > MAX_INT:
            raise self.error(
                node, f"`{self.text(node)}` is too large a number.", kind=ErrorKind.LIMIT
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(
                node, f"`{self.text(node)}` is not a finite number ({value}).", kind=ErrorKind.VALUE
            )
        return value

    # ---- dispatch ---------------------------------------------------------------------------
    def run(self, node: ast.AST) -> Any:
        method = _EVAL.get(type(node))
        if method is None:  # pragma: no cover - the checker refused every other node type
            raise self.error(
                node, f"`{type(node).__name__}` is not allowed here.", kind=ErrorKind.REFUSED
            )
        return method(self, node)

    def eval_Expression(self, node: ast.Expression) -> Any:
        self.root = node.body
        value = self.run(node.body)
        ok = (
            isinstance(value, Tensor)
            or is_number(value)
            or (isinstance(value, tuple) and all(is_int(v) for v in value))
        )
        if not ok:
            raise self.error(
                node.body,
                f"the result must be a tensor, a shape or a number, not {describe(value)}.",
                kind=ErrorKind.TYPE,
            )
        return value

    def eval_Name(self, node: ast.Name) -> Tensor:
        self.begin(node)
        name = node.id
        if name not in self.cache:
            v = self.variables[name]
            # empty_like and clone lay memory out alike, so both passes see the same strides.
            if self.meta:
                t = self.torch_call(node, torch.empty_like, v, device="meta")
            else:
                t = self.torch_call(node, v.detach().clone)  # the caller's tensor stays untouched
            self.cache[name] = t
        t = self.cache[name]
        return self.record(node, "name", t, note=f"the variable {name}, shape {tuple(t.shape)}")

    def eval_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def unpack(self, nodes: list[ast.AST]) -> tuple[list, tuple[ast.AST, ...]]:
        """Evaluate items as Python does, `*shape` giving one value per entry: (values, the node
        of each value, a `*` item's node repeated for each of its entries)."""
        values: list = []
        where: list[ast.AST] = []
        for n in nodes:
            if not isinstance(n, ast.Starred):
                values.append(self.run(n))
                where.append(n)
                continue
            v = self.run(n.value)
            if isinstance(v, Tensor):
                raise self.error(
                    n,
                    f"not supported here: `*` unpacking of a tensor ({self.text(n.value)} is "
                    f"{describe(v)}); unpack a shape, e.g. *{self.text(n.value)}.shape.",
                    kind=ErrorKind.REFUSED,
                )
            if not isinstance(v, tuple):
                raise self.error(
                    n,
                    f"`*` unpacks a shape or a tuple, e.g. *att_scores.shape, not {describe(v)}.",
                    kind=ErrorKind.TYPE,
                )
            if len(values) + len(v) > self.limits.max_nodes:
                raise self.error(n, "the unpacked tuple is too long.", kind=ErrorKind.LIMIT)
            values.extend(v)
            where.extend([n] * len(v))
        return values, tuple(where)

    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        values, where = self.unpack(node.elts)
        items = tuple(values)
        for e, v in zip(where, items, strict=True):
            if isinstance(v, Tensor):
                raise self.error(
                    e,
                    f"a tuple may hold numbers, slices, None and ..., not a tensor "
                    f"(`{self.text(e)}`).",
                    kind=ErrorKind.TYPE,
                )
        return items

    def eval_List(self, node: ast.List) -> tuple:
        return self.eval_Tuple(node)  # type: ignore[arg-type]

    def eval_Slice(self, node: ast.Slice) -> slice:
        parts = []
        for part in (node.lower, node.upper, node.step):
            v = None if part is None else self.run(part)
            if v is not None and not is_int(v):
                raise self.error(
                    part,
                    f"slice bounds must be whole numbers, not {describe(v)}.",
                    kind=ErrorKind.TYPE,
                )
            parts.append(v)
        return slice(*parts)

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.run(node.operand)
        sign = UNARY[type(node.op)]
        if is_number(value):
            return self.scalar(node, -value if sign == "-" else value)
        if isinstance(value, Tensor):
            self.begin(node)
            if sign == "+":
                return self.record(
                    node, "+", value, operands=(value,), note="unary + changes nothing"
                )
            if value.dtype == torch.bool:
                raise self.error(node, "a bool tensor cannot be negated.", kind=ErrorKind.TYPE)
            self.charge(node, value.numel())
            out = self.torch_call(node, torch.neg, value)
            return self.record(node, "neg", out, operands=(value,), note="each element negated")
        raise self.error(
            node,
            f"unary {sign} needs a number or a tensor, not {describe(value)}.",
            kind=ErrorKind.TYPE,
        )

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        value = self.run(node.value)
        if not isinstance(value, Tensor):
            raise self.error(
                node,
                f"`.{node.attr}` needs a tensor, but `{self.text(node.value)}` is "
                f"{describe(value)}.",
                kind=ErrorKind.TYPE,
            )
        self.begin(node)
        shape = tuple(value.shape)
        if node.attr == "shape":
            return self.record(node, ".shape", shape, operands=(value,), note=f"the shape {shape}")
        if node.attr == "ndim":
            return self.record(
                node, ".ndim", value.ndim, operands=(value,), note=f"{shape} has {value.ndim} axes"
            )
        # .T reverses every axis (what x.T does; PyTorch deprecates it beyond 2 axes).
        dims = tuple(range(value.ndim - 1, -1, -1))
        out = self.torch_call(node, value.permute, dims)
        note = f"{shape} -> {tuple(out.shape)}: axes reversed (a view, no copy)"
        if value.ndim > 2:
            note += "; PyTorch deprecates .T beyond 2 axes: prefer .permute or .mT"
        return self.record(node, ".T", out, operands=(value,), note=note)

    # ---- calls ------------------------------------------------------------------------------
    def eval_Call(self, node: ast.Call) -> Any:
        """A function (einsum, bmm, torch.X) or a method (x.sum(), torch.sum(x)): the registry
        entry the checker approved runs it."""
        func = node.func
        if isinstance(func, ast.Name) or (
            isinstance(func.value, ast.Name) and id(func.value) in self.checker.functions
        ):
            name = func.id if isinstance(func, ast.Name) else func.attr
            spelt = name if isinstance(func, ast.Name) else f"{TORCH}.{name}"
            if name in FUNCTIONS:
                args, where = self.unpack(node.args)
                kwargs = {kw.arg: self.run(kw.value) for kw in node.keywords}
                self.begin(node)
                call = Call(node, f"{spelt}()", None, where)
                return FUNCTIONS[name].run(self, call, args, kwargs)
            receiver_node, arg_nodes = node.args[0], list(node.args[1:])
            spelt = f"{spelt}()"
        else:
            name = func.attr
            receiver_node, arg_nodes = func.value, list(node.args)
            spelt = f".{name}()"
        receiver = self.run(receiver_node)
        args, where = self.unpack(arg_nodes)
        call = Call(node, spelt, receiver_node, where)
        kwargs = {kw.arg: self.run(kw.value) for kw in node.keywords}
        if not isinstance(receiver, Tensor):
            raise self.error(
                node,
                f"`{call.name}` needs a tensor, but `{self.text(receiver_node)}` is "
                f"{describe(receiver)}.",
                kind=ErrorKind.TYPE,
            )
        self.begin(node)
        self.receiver_shape = tuple(receiver.shape)
        return METHODS[name].run(self, call, receiver, args, kwargs)


_EVAL = {
    ast.Expression: Interpreter.eval_Expression,
    ast.Name: Interpreter.eval_Name,
    ast.Constant: Interpreter.eval_Constant,
    ast.Tuple: Interpreter.eval_Tuple,
    ast.List: Interpreter.eval_List,
    ast.Slice: Interpreter.eval_Slice,
    ast.UnaryOp: Interpreter.eval_UnaryOp,
    ast.BinOp: Interpreter.eval_BinOp,
    ast.Subscript: Interpreter.eval_Subscript,
    ast.Attribute: Interpreter.eval_Attribute,
    ast.Call: Interpreter.eval_Call,
}
"""Node type -> how to evaluate it (the checker refused every other type)."""
