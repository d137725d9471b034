"""Type your own expression: a safe tensor-expression interpreter that traces every shape.

    trace = evaluate("(net_output * att_scores[..., None]).sum(axis=1)", {...})
    trace.result          # (B, H)
    trace.steps           # one Step per sub-expression, in evaluation order

The text may come from anyone, so it is never given to ``eval``/``exec``/``compile``. It is parsed
with ``ast.parse(mode="eval")`` and a small interpreter walks a whitelist of node types itself:

- the variables passed in; int, float, True/False/None and ``...`` constants (bounded);
- ``+ - * / @``, unary ``-``/``+``, ``**`` with a small constant exponent;
- subscripts with ints, slices, ``None`` and ``...`` (and tuples of those), ``x.shape[0]``;
- the attributes ``.T``, ``.shape``, ``.ndim``;
- the pure tensor methods in ``METHODS`` with the keyword arguments listed there;
- the function ``einsum("equation", a, b)``; a string is allowed only as that equation.

Anything else is refused with a message that names the construct. Every evaluation runs twice: first
on ``meta`` tensors (shapes and dtypes, no memory), where every limit in ``Limits`` is checked, then
for real, executing only the operations the first pass approved. The caller's tensors are never
modified: the real pass works on detached copies and every operation is pure. Every failure is a
``SandboxError`` (an ``AttnvizError``) carrying the partial trace and the span of the culprit.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
import threading
import time
import unicodedata
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from attnviz.errors import AttnvizError
from attnviz.trace import STRETCHED, Alignment, align_shapes

__all__ = [
    "ATTRIBUTES",
    "DEFAULT_LIMITS",
    "ERROR_KINDS",
    "FUNCTIONS",
    "METHODS",
    "Limits",
    "SandboxError",
    "Step",
    "Trace",
    "evaluate",
    "pointer",
]

# --------------------------------------------------------------------------------------------
# The language
# --------------------------------------------------------------------------------------------

ATTRIBUTES = ("T", "shape", "ndim")
"""Attributes that may be read (never called)."""

METHODS: dict[str, tuple[str, ...]] = {
    "sum": ("dim", "axis", "keepdim"),
    "mean": ("dim", "axis", "keepdim"),
    "amax": ("dim", "axis", "keepdim"),
    "softmax": ("dim", "axis"),
    "unsqueeze": ("dim",),
    "squeeze": ("dim",),
    "transpose": ("dim0", "dim1"),
    "permute": ("dims",),
    "reshape": ("shape",),
    "view": ("size",),
    "expand": ("size",),
    "flatten": ("start_dim", "end_dim"),
    "exp": (),
    "abs": (),
    "matmul": ("other",),
}
"""Tensor methods that may be called, each with the keyword arguments it accepts."""

FUNCTIONS = ("einsum",)
"""Functions that may be called: einsum("equation", a, b) only."""

ERROR_KINDS = ("syntax", "refused", "name", "limit", "shape", "type", "value", "torch", "internal")
"""Values of SandboxError.kind: what went wrong, for a UI to style or filter on."""

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@", ast.Pow: "**"}
_VERBS = {"+": "added", "-": "subtracted", "*": "multiplied", "/": "divided"}
_UNARY = {ast.USub: "-", ast.UAdd: "+"}

# Constructs outside the language, named in plain words for the refusal message.
_CONSTRUCTS: dict[type, str] = {
    ast.Lambda: "lambda",
    ast.IfExp: "a conditional expression (`a if c else b`)",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Await: "`await`",
    ast.Yield: "`yield`",
    ast.YieldFrom: "`yield from`",
    ast.Compare: "a comparison",
    ast.BoolOp: "`and`/`or`",
    ast.NamedExpr: "the walrus operator `:=`",
    ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string",
    ast.Starred: "`*` unpacking",
}
_OPERATOR_NAMES: dict[type, str] = {
    ast.FloorDiv: "`//`",
    ast.Mod: "`%`",
    ast.LShift: "`<<`",
    ast.RShift: "`>>`",
    ast.BitOr: "`|`",
    ast.BitXor: "`^`",
    ast.BitAnd: "`&`",
    ast.Not: "`not`",
    ast.Invert: "`~`",
}
_LOOKALIKES = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "х": "x", "у": "y", "і": "i", "ѕ": "s",
    "ј": "j", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "Х": "X", "ο": "o", "α": "a", "ν": "v", "ι": "i", "Ο": "O", "Α": "A",
    "Β": "B", "Ε": "E", "Τ": "T", "Η": "H",
}  # fmt: skip
# Common PyTorch/NumPy spellings outside the language, and what to write instead.
_INSTEAD = {
    "size": ".shape",
    "dim": ".ndim",
    "t": ".T",
    "mT": ".transpose(-2, -1)",
    "max": ".amax(dim)",
    "swapaxes": ".transpose(a, b)",
    "swapdims": ".transpose(a, b)",
    "movedim": ".permute(...)",
    "repeat": ".expand(...) (a view: nothing is copied)",
    "expand_as": ".expand(other.shape)",
    "reshape_as": ".reshape(other.shape)",
    "view_as": ".view(other.shape)",
    "mul": "*",
    "add": "+",
    "sub": "-",
    "div": "/",
    "pow": "** with a number",
    "bmm": "@",
    "mm": "@",
    "dot": "@",
    "contiguous": ".reshape(...) (it copies when it must)",
}
_PLAIN_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
_MAX_INT = 2**62  # scalar arithmetic stays well inside int64
_EINSUM_MAX_OPERANDS = 4
_EINSUM_MAX_LENGTH = 100


@dataclass(frozen=True)
class Limits:
    """Caps on one evaluation; all are checked before any real tensor is allocated.

    max_length: characters in the expression. max_nodes: syntax-tree nodes. max_depth: nesting
    depth of the syntax tree. max_constant: magnitude of a number written in the text.
    max_power: magnitude of an exponent in ``**``. max_elements: elements of any one intermediate
    tensor (views included). max_total_elements: elements of all intermediates together (the trace
    keeps them). max_ndim: axes of any intermediate. max_work: estimated element operations of the
    whole expression (a matrix product of (M, K) and (K, N) counts M * K * N). time_budget: seconds
    for one evaluation, both passes together.
    """

    max_length: int = 2000
    max_nodes: int = 300
    max_depth: int = 40
    max_constant: float = 1e9
    max_power: float = 8
    max_elements: int = 1_000_000
    max_total_elements: int = 2_000_000
    max_ndim: int = 16
    max_work: int = 50_000_000
    time_budget: float = 1.0


DEFAULT_LIMITS = Limits()


# --------------------------------------------------------------------------------------------
# Broadcasting explained
# --------------------------------------------------------------------------------------------


def _axis_words(axis: int) -> str:
    """-1 -> 'the last axis', -2 -> 'the second-to-last axis', -3 -> 'axis -3'."""
    if axis == -1:
        return "the last axis"
    if axis == -2:
        return "the second-to-last axis"
    if axis == -3:
        return "the third axis from the right"
    return f"axis {axis} (counted from the right)"


# --------------------------------------------------------------------------------------------
# Trace and errors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # tensors inside: compare fields, not objects
class Step:
    """One evaluated sub-expression.

    index: position in evaluation order. source: its text, ``expr[span[0]:span[1]]``. op: what it
    does ("name", "+", "-", "*", "/", "@", "**", "neg", "index", ".T", ".shape", ".ndim", ".sum",
    ..., "einsum"). shape/dtype/stride: of a tensor value (None for a tuple or a number).
    value: the tensor, tuple or number (None only in the partial trace of a time-out during the
    shape-only first pass). operands: the shapes
    of the tensors it consumed. broadcast: for + - * / between tensors and for the batch axes
    of @, the operand shapes lined up from the right. note: what happened, in plain words.
    """

    index: int
    source: str
    span: tuple[int, int]
    op: str
    shape: tuple[int, ...] | None
    dtype: torch.dtype | None
    stride: tuple[int, ...] | None
    value: Any
    operands: tuple[tuple[int, ...], ...] = ()
    broadcast: Alignment | None = None
    note: str = ""


@dataclass(frozen=True, eq=False)  # tensors inside: compare fields, not objects
class Trace:
    """An evaluation: its result and every step, in order.

    expr: the text. result: a Tensor, or a tuple (``x.shape``) or a number (``x.ndim``); None in a
    partial trace. steps: one Step per sub-expression that involves a variable, children first.
    """

    expr: str
    result: Any
    steps: tuple[Step, ...] = field(default_factory=tuple)


class SandboxError(AttnvizError):
    """An expression that cannot be evaluated.

    kind: one of ERROR_KINDS. span: (start, end) character offsets of the culprit in the expression
    (None when the whole text is at fault). trace: the steps evaluated before the failure.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "value",
        span: tuple[int, int] | None = None,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.span = span
        self.trace = trace if trace is not None else Trace(expr="", result=None)


def pointer(expr: str, span: tuple[int, int] | None) -> str:
    """The line of expr holding span, with carets under the span (for a notebook or a log).

    pointer("net_output * att_scores", (0, 23)) ->
        net_output * att_scores
        ^^^^^^^^^^^^^^^^^^^^^^^
    """
    if span is None:
        return expr
    start, end = span
    line_start = expr.rfind("\n", 0, start) + 1
    line_end = expr.find("\n", start)
    line_end = len(expr) if line_end == -1 else line_end
    line = expr[line_start:line_end].expandtabs(1)
    width = max(1, min(end, line_end) - start)
    return f"{line}\n{' ' * (start - line_start)}{'^' * width}"


class _Stop(Exception):
    """Internal: the real pass reached the step the first pass failed on."""


# --------------------------------------------------------------------------------------------
# Static checks: text, syntax, whitelist
# --------------------------------------------------------------------------------------------


def _clip(text: str, limit: int = 80) -> str:
    """Text for a message: one line, at most about limit characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _char_problem(expr: str) -> tuple[int, str] | None:
    """The first character outside printable ASCII (plus tab/newline), with a message."""
    for i, ch in enumerate(expr):
        if " " <= ch <= "~" or ch in "\t\n\r":
            continue
        name = unicodedata.name(ch, f"U+{ord(ch):04X}")
        if ch == "\0":
            return i, f"the expression contains a NUL character at position {i}; remove it."
        looks = _LOOKALIKES.get(ch) or unicodedata.normalize("NFKC", ch)
        hint = (
            f" It looks like the ASCII letter {looks!r}: retype it."
            if looks.isascii() and looks.isprintable() and looks != ch
            else " Type plain ASCII."
        )
        return i, f"character {ch!r} ({name}) at position {i} is not allowed.{hint}"
    return None


class _Source:
    """Maps ast positions (line, column) of the parsed text to offsets in the original text.

    The parsed text is the original without its leading whitespace (which Python would take for
    an indent), so every offset is shifted by ``lead``. The text is ASCII, so columns are chars.
    """

    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.lead = len(expr) - len(expr.lstrip())
        # Line breaks and tabs become spaces: a pasted multi-line expression reads as one line,
        # and every offset stays the same.
        self.body = re.sub(r"[\t\n\r]", " ", expr[self.lead :])
        self.starts = [0]
        for i, ch in enumerate(self.body):
            if ch == "\n":
                self.starts.append(i + 1)

    def offset(self, lineno: int, col: int) -> int:
        line = min(max(lineno, 1), len(self.starts))
        return min(self.lead + self.starts[line - 1] + max(col, 0), len(self.expr))

    def span(self, node: ast.AST) -> tuple[int, int]:
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return (self.lead, len(self.expr.rstrip()))
        start = self.offset(lineno, node.col_offset)
        end_line = getattr(node, "end_lineno", None) or lineno
        end_col = getattr(node, "end_col_offset", None)
        end = self.offset(end_line, end_col) if end_col is not None else len(self.expr)
        return (start, end)

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.expr[start:end]


def _parse(expr: str, limits: Limits) -> tuple[ast.Expression, _Source]:
    if not isinstance(expr, str):
        raise SandboxError(
            f"the expression must be text (str), got {type(expr).__name__}.", kind="type"
        )
    if len(expr) > limits.max_length:
        raise SandboxError(
            f"the expression is {len(expr):,} characters long; the limit is "
            f"{limits.max_length:,}. Write a shorter expression.",
            kind="limit",
        )
    if not expr.strip():
        raise SandboxError(
            "the expression is empty: type one, e.g. net_output * att_scores[..., None].",
            kind="syntax",
        )
    problem = _char_problem(expr)
    if problem is not None:
        pos, message = problem
        raise SandboxError(message, kind="refused", span=(pos, pos + 1))
    src = _Source(expr)
    try:
        with warnings.catch_warnings():  # e.g. "invalid decimal literal": the error says it
            warnings.simplefilter("ignore")
            tree = ast.parse(src.body, mode="eval")
    except SyntaxError as exc:
        span = None
        if exc.lineno is not None and exc.offset is not None:
            pos = src.offset(exc.lineno, exc.offset - 1)
            span = (pos, min(pos + 1, len(expr)))
        msg = (exc.msg or "invalid syntax").rstrip(".")
        where = f" at position {span[0]}" if span else ""
        raise SandboxError(
            f"this is not a valid expression{where}: {msg}. An expression looks like "
            f"(net_output * att_scores[..., None]).sum(axis=1).",
            kind="syntax",
            span=span,
        ) from None
    except (RecursionError, MemoryError):
        raise SandboxError(
            f"the expression is nested too deeply to read (the limit is {limits.max_depth} levels).",
            kind="limit",
        ) from None
    except ValueError as exc:  # e.g. NUL bytes, already refused above
        raise SandboxError(f"this is not a valid expression: {exc}.", kind="syntax") from None
    return tree, src


class _Checker:
    """Walks the tree once, before anything is evaluated, and refuses whatever is outside the
    language. Also measures size and depth, and finds which nodes involve a variable."""

    def __init__(self, src: _Source, limits: Limits, names: Mapping[str, Any]) -> None:
        self.src = src
        self.limits = limits
        self.names = names
        self.equations: set[int] = set()  # ids of str constants that are einsum equations
        self.lists: set[int] = set()  # ids of list literals passed straight to a method
        self.dynamic: set[int] = set()  # ids of nodes whose value depends on a variable
        self.methods: set[int] = set()  # ids of Attribute nodes approved as called methods
        self.functions: set[int] = set()  # ids of Name nodes approved as called functions

    def refuse(self, node: ast.AST, message: str, kind: str = "refused") -> SandboxError:
        return SandboxError(message, kind=kind, span=self.src.span(node))

    def check(self, tree: ast.Expression) -> None:
        nodes = 0
        stack: list[tuple[ast.AST, int]] = [(tree.body, 1)]
        order: list[ast.AST] = []
        problems: list[SandboxError] = []
        while stack:
            node, depth = stack.pop()
            if isinstance(node, (ast.expr, ast.keyword)):
                nodes += 1
                if nodes > self.limits.max_nodes:
                    raise SandboxError(
                        f"the expression has more than {self.limits.max_nodes} parts; "
                        f"write a shorter one.",
                        kind="limit",
                    )
            if depth > self.limits.max_depth:
                raise self.refuse(
                    node,
                    f"the expression is nested more than {self.limits.max_depth} levels deep; "
                    f"write a flatter one.",
                    kind="limit",
                )
            try:
                self.check_node(node)
            except SandboxError as exc:
                problems.append(exc)
                if not isinstance(node, (ast.Name, ast.Attribute, ast.Constant, ast.Call)):
                    continue  # a whole construct refused: what is inside does not matter
            order.append(node)
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.expr_context, ast.operator, ast.unaryop)):
                    continue
                stack.append((child, depth + 1))
        if problems:  # report the one evaluation would meet first: leftmost, innermost
            raise min(problems, key=lambda e: e.span or (0, 0))
        for node in reversed(order):  # children before parents
            if (isinstance(node, ast.Name) and id(node) not in self.functions) or any(
                id(c) in self.dynamic for c in ast.iter_child_nodes(node)
            ):
                self.dynamic.add(id(node))

    def check_node(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if id(node) not in self.functions:
                self.check_name(node)
        elif isinstance(node, ast.Constant):
            self.check_constant(node)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                name = _OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)
                raise self.refuse(
                    node,
                    f"the operator {name} is not allowed; use + - * / @ or ** "
                    f"(in `{_clip(self.src.text(node))}`).",
                )
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                name = _OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)
                raise self.refuse(node, f"the operator {name} is not allowed; only unary - is.")
        elif isinstance(node, ast.Attribute):
            if id(node) not in self.methods:
                self.check_attribute(node, called=False)
        elif isinstance(node, ast.Call):
            self.check_call(node)
        elif isinstance(node, ast.List):
            if id(node) not in self.lists:
                raise self.refuse(
                    node,
                    "a list is only allowed as a method argument, e.g. x.permute([0, 2, 1]); "
                    "to index, use ints, slices, None and ... .",
                )
        elif isinstance(node, (ast.Subscript, ast.Slice, ast.Tuple, ast.keyword)):
            if isinstance(node, ast.keyword) and node.arg is None:
                raise self.refuse(node, "`**` unpacking is not allowed.")
        elif type(node) in _CONSTRUCTS:
            raise self.refuse(node, f"{_CONSTRUCTS[type(node)]} is not allowed here.")
        else:
            raise self.refuse(node, f"`{type(node).__name__}` is not allowed here.")

    def check_name(self, node: ast.Name) -> None:
        name = node.id
        if name.startswith("_"):
            raise self.refuse(node, f"name `{name}` is not allowed (no name may start with _).")
        if name in self.names:
            return
        known = ", ".join(sorted(self.names)) or "none"
        close = difflib.get_close_matches(name, list(self.names), n=1, cutoff=0.6)
        lowered = [n for n in self.names if n.lower() == name.lower()]
        guess = (lowered or close or [None])[0]
        if guess:
            hint = f" Did you mean `{guess}`?"
        elif name in FUNCTIONS:
            hint = f' {name} is a function: call it, e.g. einsum("bth,bt->bh", net_output, att_scores).'
        else:
            hint = ""
        raise self.refuse(
            node,
            f"name `{name}` is not defined here.{hint} The names you can use are: {known} "
            f"(and the function einsum).",
            kind="name",
        )

    def check_constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, str):
            if id(node) not in self.equations:
                raise self.refuse(
                    node,
                    'a string is only allowed as the equation of einsum("...", a, b), e.g. '
                    'einsum("bth,bt->bh", net_output, att_scores).',
                )
            return
        if value is None or value is Ellipsis or isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            too_big = abs(value) > self.limits.max_constant  # exact for any int, no float cast
            if too_big or (isinstance(value, float) and not math.isfinite(value)):
                raise self.refuse(
                    node,
                    f"the number {_clip(self.src.text(node))} is too large; numbers may be at most "
                    f"{self.limits.max_constant:g} in size.",
                    kind="limit",
                )
            return
        kind = {bytes: "a bytes literal", complex: "a complex number"}.get(type(value), "this")
        raise self.refuse(node, f"{kind} is not allowed here.")

    def check_attribute(self, node: ast.Attribute, *, called: bool) -> None:
        attr = node.attr
        if attr.startswith("_"):
            raise self.refuse(
                node,
                f"attribute `{attr}` is not allowed (no name may start with _). The allowed "
                f"attributes are .T, .shape, .ndim and the methods {', '.join(METHODS)}.",
            )
        if called:
            if attr in METHODS:
                return
            if attr in ATTRIBUTES:
                raise self.refuse(
                    node, f"`.{attr}` is not a method: write it without parentheses, e.g. x.{attr}."
                )
        else:
            if attr in ATTRIBUTES:
                return
            if attr in METHODS:
                raise self.refuse(
                    node, f"method `{attr}` must be called: write .{attr}(...) with parentheses."
                )
        if attr.endswith("_"):
            why = (
                f"method `{attr}` changes a tensor in place and is not allowed: write the "
                f"operation out, e.g. x + y instead of x.add_(y)."
            )
        else:
            why = f"attribute `{attr}` is not allowed."
            if attr in _INSTEAD:
                why += f" Use {_INSTEAD[attr]} instead."
            else:
                close = difflib.get_close_matches(attr, [*METHODS, *ATTRIBUTES], n=1, cutoff=0.75)
                if close:
                    why += f" Did you mean `.{close[0]}`?"
            why += (
                f" The allowed attributes are .T, .shape, .ndim and the methods "
                f"{', '.join(METHODS)}."
            )
        raise self.refuse(node, why)

    def check_call(self, node: ast.Call) -> None:
        func = node.func
        # The callee is judged here, with the call: mark it so the walk does not judge it again.
        if isinstance(func, ast.Name):
            self.functions.add(id(func))
        elif isinstance(func, ast.Attribute):
            self.methods.add(id(func))
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            if isinstance(arg, ast.List):
                self.lists.add(id(arg))
        seen: set[str] = set()
        for kw in node.keywords:
            if kw.arg is not None and kw.arg in seen:
                raise self.refuse(kw, f"keyword `{kw.arg}` is given twice.", kind="syntax")
            seen.add(kw.arg)
        if isinstance(func, ast.Name) and func.id in FUNCTIONS:
            self.check_einsum(node)
            return
        if isinstance(func, ast.Attribute):
            self.check_attribute(func, called=True)
            allowed = METHODS[func.attr]
            for kw in node.keywords:
                if kw.arg is not None and kw.arg not in allowed:
                    ok = ", ".join(allowed) if allowed else "none"
                    raise self.refuse(
                        kw,
                        f"keyword `{kw.arg}` is not allowed for .{func.attr}() (allowed: {ok}).",
                    )
            return
        if isinstance(func, ast.Name):
            what = (
                "a tensor cannot be called"
                if func.id in self.names
                else f"calling `{func.id}(...)` is not allowed"
            )
            raise self.refuse(
                node,
                f"{what}: the only function is einsum, and tensor methods are called as "
                f"x.sum(...).",
            )
        raise self.refuse(
            node,
            f"calling `{_clip(self.src.text(func))}` is not allowed: the only function is einsum, "
            f"and tensor methods are called as x.sum(...).",
        )

    def check_einsum(self, node: ast.Call) -> None:
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            self.equations.add(id(first))
        if node.keywords:
            raise self.refuse(node.keywords[0], "einsum takes no keyword arguments here.")
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            raise self.refuse(
                node,
                'einsum needs its equation first, as a string: einsum("bth,bt->bh", '
                "net_output, att_scores).",
            )


# --------------------------------------------------------------------------------------------
# The interpreter
# --------------------------------------------------------------------------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _describe(v: object) -> str:
    if isinstance(v, Tensor):
        return f"a tensor {tuple(v.shape)}"
    if isinstance(v, tuple):
        return f"a tuple {v}"
    if isinstance(v, bool):
        return f"{v}"
    if _is_number(v):
        return f"the number {v}"
    if v is None:
        return "None"
    if v is Ellipsis:
        return "..."
    if isinstance(v, slice):
        return "a slice"
    if isinstance(v, str):
        return "a string"
    return type(v).__name__


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _plural(n: int, word: str) -> str:
    """_plural(1, "axis") -> "1 axis"; _plural(2, "axis") -> "2 axes"; _plural(2, "word") -> "2 words"."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-2]}es" if word.endswith("is") else f"{n} {word}s"


class _Interpreter:
    """One pass over the checked tree: on meta tensors (shapes only) or on the real ones."""

    def __init__(
        self,
        src: _Source,
        checker: _Checker,
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
        self.steps: list[Step] = []
        self.work = 0
        self.total_elements = 0

    # ---- helpers ----------------------------------------------------------------------------
    def error(self, node: ast.AST, message: str, kind: str = "value") -> SandboxError:
        return SandboxError(message, kind=kind, span=self.src.span(node))

    def text(self, node: ast.AST) -> str:
        """The node's text for a message (clipped; Step.source keeps it whole)."""
        return _clip(self.src.text(node))

    def name_of(self, node: ast.AST, fallback: str) -> str:
        text = " ".join(self.text(node).split())
        return f"`{text}`" if len(text) <= 40 else fallback

    def begin(self, node: ast.AST) -> None:
        """Called before every operation on a variable's value: time and first-pass approval."""
        if self.max_steps is not None and len(self.steps) >= self.max_steps:
            raise _Stop
        if time.perf_counter() > self.deadline:
            raise self.error(
                node,
                f"the evaluation took longer than {self.limits.time_budget:g} s and was stopped "
                f"at `{self.text(node)}`.",
                kind="limit",
            )

    def charge(self, node: ast.AST, work: int) -> None:
        self.work += int(work)
        if self.work > self.limits.max_work:
            raise self.error(
                node,
                f"`{self.text(node)}` needs too much computation (about {self.work:,} element "
                f"operations so far; the limit is {self.limits.max_work:,}). Use smaller tensors.",
                kind="limit",
            )

    def check_size(self, node: ast.AST, shape: tuple[int, ...], what: str = "") -> None:
        """Refuse a shape too big to allocate, before it is allocated."""
        if len(shape) > self.limits.max_ndim:
            raise self.error(
                node,
                f"`{self.text(node)}` would have {len(shape)} axes; the limit is "
                f"{self.limits.max_ndim}.",
                kind="limit",
            )
        n = _numel(shape)
        if n > self.limits.max_elements:
            raise self.error(
                node,
                f"`{self.text(node)}` would {what or 'make'} a tensor of shape {shape} with "
                f"{n:,} elements; the limit is {self.limits.max_elements:,}.",
                kind="limit",
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
            self.total_elements += _numel(shape)
            if self.total_elements > self.limits.max_total_elements:
                raise self.error(
                    node,
                    f"the intermediates up to `{self.text(node)}` hold "
                    f"{self.total_elements:,} elements together; the limit is "
                    f"{self.limits.max_total_elements:,}.",
                    kind="limit",
                )
            dtype, stride = value.dtype, tuple(value.stride())
        else:
            shape = dtype = stride = None
        self.steps.append(
            Step(
                index=len(self.steps),
                source=self.src.text(node),
                span=self.src.span(node),
                op=op,
                shape=shape,
                dtype=dtype,
                stride=stride,
                value=None if self.meta else value,
                operands=tuple(tuple(t.shape) for t in operands),
                broadcast=broadcast,
                note=note,
            )
        )
        return value

    def torch_call(self, node: ast.AST, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # PyTorch's own refusal, translated
            raise self.translate(node, exc) from None

    def translate(self, node: ast.AST, exc: Exception) -> SandboxError:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        first = re.sub(r"\s*\(Triggered internally at .*", "", first)[:300]
        return self.error(node, f"`{self.text(node)}`: PyTorch refused this: {first}", kind="torch")

    def scalar(self, node: ast.AST, value: Any) -> Any:
        if isinstance(value, complex):
            raise self.error(
                node,
                f"`{self.text(node)}` gives a complex number (a negative number to a fractional "
                f"power); only real numbers are allowed.",
                kind="value",
            )
        if _is_int(value) and abs(value) > _MAX_INT:
            raise self.error(node, f"`{self.text(node)}` is too large a number.", kind="limit")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(
                node, f"`{self.text(node)}` is not a finite number ({value}).", kind="value"
            )
        return value

    # ---- dispatch ---------------------------------------------------------------------------
    def run(self, node: ast.AST) -> Any:
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:  # pragma: no cover - the checker refused every other node type
            raise self.error(node, f"`{type(node).__name__}` is not allowed here.", kind="refused")
        return method(node)

    def eval_Expression(self, node: ast.Expression) -> Any:
        value = self.run(node.body)
        ok = (
            isinstance(value, Tensor)
            or _is_number(value)
            or (isinstance(value, tuple) and all(_is_int(v) for v in value))
        )
        if not ok:
            raise self.error(
                node.body,
                f"the result must be a tensor, a shape or a number, not {_describe(value)}.",
                kind="type",
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

    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        items = tuple(self.run(e) for e in node.elts)
        for e, v in zip(node.elts, items, strict=True):
            if isinstance(v, Tensor):
                raise self.error(
                    e,
                    f"a tuple may hold numbers, slices, None and ..., not a tensor "
                    f"(`{self.text(e)}`).",
                    kind="type",
                )
        return items

    def eval_List(self, node: ast.List) -> tuple:
        return self.eval_Tuple(node)  # type: ignore[arg-type]

    def eval_Slice(self, node: ast.Slice) -> slice:
        parts = []
        for part in (node.lower, node.upper, node.step):
            v = None if part is None else self.run(part)
            if v is not None and not _is_int(v):
                raise self.error(
                    part, f"slice bounds must be whole numbers, not {_describe(v)}.", kind="type"
                )
            parts.append(v)
        return slice(*parts)

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.run(node.operand)
        sign = _UNARY[type(node.op)]
        if _is_number(value):
            return self.scalar(node, -value if sign == "-" else value)
        if isinstance(value, Tensor):
            self.begin(node)
            if sign == "+":
                return self.record(
                    node, "+", value, operands=(value,), note="unary + changes nothing"
                )
            if value.dtype == torch.bool:
                raise self.error(node, "a bool tensor cannot be negated.", kind="type")
            self.charge(node, value.numel())
            out = self.torch_call(node, torch.neg, value)
            return self.record(node, "neg", out, operands=(value,), note="each element negated")
        raise self.error(
            node, f"unary {sign} needs a number or a tensor, not {_describe(value)}.", kind="type"
        )

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        op = _BINOPS[type(node.op)]
        left = self.run(node.left)
        right = self.run(node.right)
        for side, v in ((node.left, left), (node.right, right)):
            if isinstance(v, bool):
                raise self.error(
                    side,
                    "True/False are only allowed as keepdim=; write 1 or 0 for numbers.",
                    kind="type",
                )
        if _is_number(left) and _is_number(right):
            value = self.scalar(node, self.scalar_binop(node, op, left, right))
            return self.record(node, op, value)
        if isinstance(left, tuple) and isinstance(right, tuple) and op == "+":
            if len(left) + len(right) > 64:
                raise self.error(node, "the tuple is too long.", kind="limit")
            return self.record(node, op, left + right, note="tuples joined")
        if op == "**":
            return self.power(node, left, right)
        if op == "@":
            return self.matmul(node, node.left, left, node.right, right)
        lt, rt = isinstance(left, Tensor), isinstance(right, Tensor)
        if not (lt or rt) or not (lt or _is_number(left)) or not (rt or _is_number(right)):
            raise self.error(
                node,
                f"`{self.text(node)}`: {_describe(left)} and {_describe(right)} cannot be "
                f"{_VERBS[op]} with {op}; {op} works on tensors and numbers.",
                kind="type",
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
        self.charge(node, _numel(out_shape))
        fn = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}[op]
        if op == "-" and any(t.dtype == torch.bool for t in operands):
            raise self.error(
                node,
                f"`{self.text(node)}`: PyTorch does not subtract bool tensors; turn the bools "
                f"into numbers first, e.g. mask * 1.0.",
                kind="type",
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
                parts.append(f"on {_axis_words(ax.axis)} {side} {how} stretched to {ax.result}")
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
            f"{_VERBS[op]}: shapes line up from the right, and {a_size} meets {b_size} on "
            f"{_axis_words(ax.axis)} ({where}). Two sizes on the same axis must be equal, or one "
            f"of them must be 1 (a size-1 axis is stretched to match; a missing axis is added in "
            f"front)."
        )
        hint = self.trailing_axis_hint(node.left, a_shape, node.right, b_shape)
        return self.error(node, message + hint, kind="shape")

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
                    if isinstance(base, ast.Name) and tuple(self.variables[base.id].shape) == core:
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
                    kind="limit",
                )
            if abs(a) > 1 and abs(b) * math.log2(abs(a)) > 62:
                raise self.error(node, f"`{self.text(node)}` is too large a number.", kind="limit")
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
                node, f"`{self.text(node)}` is too large a number.", kind="limit"
            ) from None
        raise self.error(
            node, f"`{self.text(node)}`: {op} needs tensors, not two numbers.", kind="type"
        )

    def power(self, node: ast.BinOp, base: Any, exponent: Any) -> Any:
        if isinstance(exponent, Tensor) or not _is_number(exponent):
            raise self.error(
                node.right,
                f"the exponent of ** must be a number (at most {self.limits.max_power:g}), "
                f"not {_describe(exponent)}.",
                kind="type",
            )
        if abs(exponent) > self.limits.max_power:
            raise self.error(
                node.right,
                f"the exponent {exponent} is too large; exponents may be at most "
                f"{self.limits.max_power:g} in size.",
                kind="limit",
            )
        if not isinstance(base, Tensor):
            raise self.error(
                node.left,
                f"** needs a tensor or a number as base, not {_describe(base)}.",
                kind="type",
            )
        self.begin(node)
        self.charge(node, base.numel())
        if not base.is_floating_point() and (exponent < 0 or isinstance(exponent, float)):
            raise self.error(
                node,
                f"`{self.text(node)}`: {base.dtype} numbers cannot be raised to {exponent}; "
                f"make them floats first, e.g. x * 1.0.",
                kind="type",
            )
        out = self.torch_call(node, torch.pow, base, exponent)
        return self.record(
            node, "**", out, operands=(base,), note=f"each element to the power {exponent}"
        )

    def matmul(self, node: ast.AST, a_node: ast.AST, a: Any, b_node: ast.AST, b: Any) -> Tensor:
        if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
            raise self.error(
                node,
                f"`{self.text(node)}`: @ multiplies two tensors, not {_describe(a)} and "
                f"{_describe(b)}.",
                kind="type",
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
                kind="shape",
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
                kind="type",
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
                kind="shape",
            )
        batch_a, batch_b = sa[:-2], sb[:-2]
        bc = align_shapes(batch_a, batch_b) if (batch_a or batch_b) else None
        if bc is not None and bc.result is None:
            ax = bc.clashes[-1]
            raise self.error(
                node,
                f"`{self.text(node)}`: the batch axes (all but the last two) of {a_name} {sa} and "
                f"{b_name} {sb} must broadcast, but on {_axis_words(ax.axis)} of the batch "
                f"{ax.size_a} meets {ax.size_b}. Batch sizes must be equal or 1.",
                kind="shape",
            )
        batch = _numel(bc.result) if bc is not None and bc.result is not None else 1
        m = sa[-2] if len(sa) >= 2 else 1
        n = sb[-1] if len(sb) >= 2 else 1
        # PyTorch expands both operands to the full batch before multiplying: check those too.
        self.check_size(node, (batch, m, k_a), "expand the left side into")
        self.check_size(node, (batch, k_b, n), "expand the right side into")
        self.charge(node, batch * m * n * max(k_a, 1))
        out = self.torch_call(node, torch.matmul, a, b)
        return self.record(
            node,
            "@",
            out,
            operands=(a, b),
            broadcast=bc,
            note=f"{sa} @ {sb} -> {tuple(out.shape)}: sums over the shared axis of size {k_a}",
        )

    # ---- subscripts and attributes ----------------------------------------------------------
    def eval_Subscript(self, node: ast.Subscript) -> Any:
        value = self.run(node.value)
        index = self.run(node.slice)
        if isinstance(value, tuple):
            return self.record(node, "index", self.index_tuple(node, value, index))
        if not isinstance(value, Tensor):
            raise self.error(
                node,
                f"only tensors and shapes can be indexed, not {_describe(value)}.",
                kind="type",
            )
        self.begin(node)
        items = index if isinstance(index, tuple) else (index,)
        shape = tuple(value.shape)
        self.check_index(node, shape, items)
        out = self.torch_call(node, value.__getitem__, index)
        return self.record(
            node,
            "index",
            out,
            operands=(value,),
            note=self.index_note(node, shape, items, tuple(out.shape)),
        )

    def check_index(self, node: ast.Subscript, shape: tuple[int, ...], items: tuple) -> None:
        name = self.name_of(node.value, "the tensor")
        for item in items:
            if not (_is_int(item) or isinstance(item, slice) or item is None or item is Ellipsis):
                raise self.error(
                    node.slice,
                    f"an index may be a whole number, a slice, None or ..., not {_describe(item)}.",
                    kind="type",
                )
            if isinstance(item, slice) and item.step is not None and item.step <= 0:
                raise self.error(
                    node.slice,
                    f"a slice step must be positive in PyTorch, got {item.step}.",
                    kind="value",
                )
        if sum(item is Ellipsis for item in items) > 1:
            raise self.error(node.slice, "an index may contain ... only once.", kind="value")
        used = [item for item in items if item is not None and item is not Ellipsis]
        if len(used) > len(shape):
            raise self.error(
                node,
                f"`{self.text(node)}` indexes {_plural(len(used), 'axis')}"
                + f" but {name} {shape} has only {len(shape)}.",
                kind="shape",
            )
        # Which axis does each int index hit? Left of ... from the left, right of it from the right.
        if Ellipsis in items:
            cut = items.index(Ellipsis)
            before, after = items[:cut], items[cut + 1 :]
        else:
            before, after = items, ()
        axis = 0
        hits = []
        for item in before:
            if item is not None:
                hits.append((axis, item))
                axis += 1
        axis = len(shape) - sum(1 for it in after if it is not None)
        for item in after:
            if item is not None:
                hits.append((axis, item))
                axis += 1
        for ax, item in hits:
            if _is_int(item) and not -shape[ax] <= item < shape[ax]:
                raise self.error(
                    node.slice,
                    f"index {item} is out of range for axis {ax} of {name} {shape}, which has "
                    f"size {shape[ax]} (valid: {-shape[ax]} to {shape[ax] - 1}).",
                    kind="shape",
                )
        new_ndim = len(shape) - sum(_is_int(i) for i in items) + sum(i is None for i in items)
        if new_ndim > self.limits.max_ndim:
            raise self.error(
                node,
                f"`{self.text(node)}` would have {new_ndim} axes; the limit is {self.limits.max_ndim}.",
                kind="limit",
            )

    def index_note(
        self, node: ast.Subscript, shape: tuple, items: tuple, out: tuple[int, ...]
    ) -> str:
        nones = sum(i is None for i in items)
        ints = sum(_is_int(i) for i in items)
        parts = []
        if nones:
            parts.append(f"None inserts {_plural(nones, 'new axis')} of size 1")
        if ints:
            parts.append(f"each whole-number index removes its axis ({ints})")
        if any(isinstance(i, slice) for i in items):
            parts.append("slices keep their axes")
        words = "; ".join(parts) if parts else "a view of the same data"
        return f"{shape} -> {out}: {words}"

    def index_tuple(self, node: ast.Subscript, value: tuple, index: Any) -> Any:
        if _is_int(index):
            if not -len(value) <= index < len(value):
                raise self.error(
                    node.slice,
                    f"`{self.text(node.value)}` is {value} with {len(value)} entries; index "
                    f"{index} is out of range.",
                    kind="value",
                )
            return value[index]
        if isinstance(index, slice):
            if index.step == 0:
                raise self.error(node.slice, "a slice step cannot be zero.", kind="value")
            return value[index]
        raise self.error(
            node.slice,
            f"a shape is indexed with a whole number or a slice, not {_describe(index)}.",
            kind="type",
        )

    def eval_Attribute(self, node: ast.Attribute) -> Any:
        value = self.run(node.value)
        if not isinstance(value, Tensor):
            raise self.error(
                node,
                f"`.{node.attr}` needs a tensor, but `{self.text(node.value)}` is "
                f"{_describe(value)}.",
                kind="type",
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
        func = node.func
        if isinstance(func, ast.Name):
            return self.einsum(node)
        receiver = self.run(func.value)
        args = [self.run(a) for a in node.args]
        kwargs = {kw.arg: self.run(kw.value) for kw in node.keywords}
        if not isinstance(receiver, Tensor):
            raise self.error(
                node,
                f"`.{func.attr}()` needs a tensor, but `{self.text(func.value)}` is "
                f"{_describe(receiver)}.",
                kind="type",
            )
        self.begin(node)
        self.receiver_shape = tuple(receiver.shape)
        handler = getattr(self, "method_" + func.attr)
        return handler(node, receiver, args, kwargs)

    def bind(
        self, node: ast.Call, args: list, kwargs: dict, params: tuple[str, ...], aliases=None
    ) -> dict:
        """Match positional and keyword arguments to params (like Python), with dim=axis aliases."""
        method = node.func.attr
        aliases = aliases or {}
        if len(args) > len(params):
            raise self.error(
                node,
                f".{method}() takes at most {_plural(len(params), 'argument')}, got {len(args)}.",
                kind="type",
            )
        bound = dict(zip(params, args, strict=False))
        for key, value in kwargs.items():
            target = aliases.get(key, key)
            if target in bound:
                raise self.error(
                    node,
                    f".{method}() got `{key}` twice (axis and dim mean the same).",
                    kind="type",
                )
            bound[target] = value
        return bound

    def dim(
        self, node: ast.Call, value: Any, ndim: int, *, extra: int = 0, what: str = "axis"
    ) -> int:
        """A valid axis index for a tensor with ndim axes (+extra for unsqueeze), as non-negative."""
        name = self.name_of(node.func.value, "the tensor")
        if not _is_int(value):
            raise self.error(
                node,
                f"`{self.text(node)}`: {what} must be a whole number, not {_describe(value)}.",
                kind="type",
            )
        top = max(ndim + extra, 1)
        if not -top <= value < top:
            shape = tuple(self.receiver_shape)
            raise self.error(
                node,
                f"`{self.text(node)}`: {name} {shape} has {_plural(ndim, 'axis')}"
                + f", so {what} must be between {-top} and {top - 1}; {value} does not exist.",
                kind="shape",
            )
        return value % top

    def dims(self, node: ast.Call, value: Any, ndim: int) -> tuple[int, ...]:
        items = value if isinstance(value, tuple) else (value,)
        if not items:
            raise self.error(node, "give at least one axis.", kind="value")
        out = tuple(self.dim(node, v, ndim) for v in items)
        if len(set(out)) != len(out):
            raise self.error(node, f"`{self.text(node)}` names an axis twice.", kind="value")
        return out

    def sizes(self, node: ast.Call, args: list, bound: dict, key: str) -> tuple[int, ...]:
        """Shape arguments given as ints, or as one tuple/list (x.reshape(2, 15) or ((2, 15)))."""
        if key in bound and args:
            raise self.error(
                node, f"give the shape either as numbers or as {key}=, not both.", kind="type"
            )
        raw = bound[key] if key in bound else tuple(args)
        if len(args) == 1 and isinstance(args[0], tuple):
            raw = args[0]
        if _is_int(raw):
            raw = (raw,)
        if not isinstance(raw, tuple) or not all(_is_int(s) for s in raw):
            raise self.error(
                node, f"`{self.text(node)}`: a shape is a sequence of whole numbers.", kind="type"
            )
        return raw

    def method_sum(self, node, t, args, kwargs):
        return self.reduce(node, t, args, kwargs, "sum")

    def method_mean(self, node, t, args, kwargs):
        return self.reduce(node, t, args, kwargs, "mean")

    def method_amax(self, node, t, args, kwargs):
        return self.reduce(node, t, args, kwargs, "amax")

    def reduce(self, node, t: Tensor, args, kwargs, name: str) -> Tensor:
        bound = self.bind(node, args, kwargs, ("dim", "keepdim"), {"axis": "dim"})
        keepdim = bound.get("keepdim", False)
        if not isinstance(keepdim, bool):
            raise self.error(
                node, f"keepdim must be True or False, not {_describe(keepdim)}.", kind="type"
            )
        dim = bound.get("dim")
        shape = tuple(t.shape)
        dims = tuple(range(t.ndim)) if dim is None else self.dims(node, dim, t.ndim)
        if name == "mean" and not (t.is_floating_point() or t.is_complex()):
            raise self.error(
                node,
                f"`{self.text(node)}`: mean needs floating-point numbers, but this tensor is "
                f"{t.dtype}; multiply by 1.0 first.",
                kind="type",
            )
        if name == "amax" and any(shape[d] == 0 for d in dims if d < len(shape)):
            raise self.error(
                node,
                f"`{self.text(node)}`: the maximum of nothing is undefined, and an axis to "
                f"reduce over has size 0 in {shape}.",
                kind="value",
            )
        self.charge(node, t.numel())
        fn = getattr(t, name)
        if dim is None and not keepdim:
            out = self.torch_call(node, fn)  # every axis
        else:
            out = self.torch_call(node, fn, dim=dims, keepdim=keepdim)
        removed = ", ".join(f"{d} (size {shape[d] if d < len(shape) else 1})" for d in dims)
        verb = {"sum": "sums", "mean": "averages", "amax": "takes the max"}[name]
        fate = "kept as size 1 (keepdim=True)" if keepdim else "removed"
        note = f"{shape} -> {tuple(out.shape)}: {verb} over axis {removed}; " + (
            f"{'it is' if len(dims) == 1 else 'they are'} {fate}" if dims else "nothing to reduce"
        )
        return self.record(node, "." + name, out, operands=(t,), note=note)

    def method_softmax(self, node, t, args, kwargs):
        bound = self.bind(node, args, kwargs, ("dim",), {"axis": "dim"})
        if "dim" not in bound:
            raise self.error(
                node,
                f"`{self.text(node)}`: softmax needs the axis to normalise over, e.g. "
                f".softmax(dim=1) for the word axis of (B, T) scores.",
                kind="type",
            )
        d = self.dim(node, bound["dim"], t.ndim)
        if not t.is_floating_point():
            raise self.error(
                node,
                f"`{self.text(node)}`: softmax needs floating-point numbers, not {t.dtype}.",
                kind="type",
            )
        self.charge(node, 3 * t.numel())
        out = self.torch_call(node, t.softmax, d)
        shape = tuple(t.shape)
        return self.record(
            node,
            ".softmax",
            out,
            operands=(t,),
            note=f"{shape} -> {shape}: softmax over axis {d} (size {shape[d] if shape else 1}); "
            f"values along it now sum to 1",
        )

    def method_unsqueeze(self, node, t, args, kwargs):
        bound = self.bind(node, args, kwargs, ("dim",))
        if "dim" not in bound:
            raise self.error(node, ".unsqueeze() needs the position of the new axis.", kind="type")
        d = self.dim(node, bound["dim"], t.ndim, extra=1, what="the new axis position")
        self.check_size(node, tuple(t.shape) + (1,))
        out = self.torch_call(node, t.unsqueeze, d)
        return self.record(
            node,
            ".unsqueeze",
            out,
            operands=(t,),
            note=f"{tuple(t.shape)} -> {tuple(out.shape)}: a size-1 axis inserted at position {d}",
        )

    def method_squeeze(self, node, t, args, kwargs):
        bound = self.bind(node, args, kwargs, ("dim",))
        if bound.get("dim") is None:
            out = self.torch_call(node, t.squeeze)
        else:
            dims = self.dims(node, bound["dim"], t.ndim)
            out = self.torch_call(node, t.squeeze, dims)
        return self.record(
            node,
            ".squeeze",
            out,
            operands=(t,),
            note=f"{tuple(t.shape)} -> {tuple(out.shape)}: size-1 axes removed (others stay)",
        )

    def method_transpose(self, node, t, args, kwargs):
        bound = self.bind(node, args, kwargs, ("dim0", "dim1"))
        if len(bound) != 2:
            raise self.error(
                node, ".transpose() needs the two axes to swap, e.g. .transpose(0, 1).", kind="type"
            )
        d0 = self.dim(node, bound["dim0"], t.ndim)
        d1 = self.dim(node, bound["dim1"], t.ndim)
        out = self.torch_call(node, t.transpose, d0, d1)
        return self.record(
            node,
            ".transpose",
            out,
            operands=(t,),
            note=f"{tuple(t.shape)} -> {tuple(out.shape)}: axes {d0} and {d1} swapped (a view)",
        )

    def method_permute(self, node, t, args, kwargs):
        order = self.sizes(node, args, self.bind(node, [], kwargs, ("dims",)), "dims")
        ndim = t.ndim
        norm = tuple(self.dim(node, d, ndim) for d in order)
        if sorted(norm) != list(range(ndim)):
            raise self.error(
                node,
                f"`{self.text(node)}`: permute needs every axis of {tuple(t.shape)} exactly once "
                f"(a reordering of {tuple(range(ndim))}), got {order}.",
                kind="shape",
            )
        out = self.torch_call(node, t.permute, norm)
        return self.record(
            node,
            ".permute",
            out,
            operands=(t,),
            note=f"{tuple(t.shape)} -> {tuple(out.shape)}: axes reordered as {norm} (a view)",
        )

    def reshape_like(self, node, t, args, kwargs, name: str, key: str):
        bound = self.bind(node, [], kwargs, (key,))
        target = self.sizes(node, args, bound, key)
        shape = tuple(t.shape)
        if sum(s == -1 for s in target) > 1 or any(s < -1 for s in target):
            raise self.error(
                node,
                f"`{self.text(node)}`: a shape may hold one -1 (size to infer) and otherwise "
                f"sizes of 0 or more, got {target}.",
                kind="value",
            )
        known = _numel(tuple(s for s in target if s != -1))
        n = t.numel()
        if -1 in target:
            if known == 0 or n % known:
                raise self.error(
                    node,
                    f"`{self.text(node)}`: cannot {name} {shape} ({n:,} elements) into {target}: "
                    f"the other sizes multiply to {known:,}, which does not divide {n:,}.",
                    kind="shape",
                )
            full = tuple(n // known if s == -1 else s for s in target)
        else:
            full = target
            if known != n:
                raise self.error(
                    node,
                    f"`{self.text(node)}`: cannot {name} {shape} ({n:,} elements) into {target} "
                    f"({known:,} elements): the number of elements must stay the same.",
                    kind="shape",
                )
        self.check_size(node, full)
        self.charge(node, n)
        try:
            out = getattr(t, name)(full)
        except Exception as exc:
            if name == "view" and "stride" in str(exc):
                raise self.error(
                    node,
                    f"`{self.text(node)}`: .view() cannot reshape {shape} here, because its "
                    f"elements are not laid out in order in memory (strides {tuple(t.stride())}, "
                    f"e.g. after a transpose). Use .reshape(...), which copies when it must.",
                    kind="shape",
                ) from None
            raise self.translate(node, exc) from None
        return self.record(
            node,
            "." + name,
            out,
            operands=(t,),
            note=f"{shape} -> {tuple(out.shape)}: same {n:,} elements, read in order",
        )

    def method_reshape(self, node, t, args, kwargs):
        return self.reshape_like(node, t, args, kwargs, "reshape", "shape")

    def method_view(self, node, t, args, kwargs):
        return self.reshape_like(node, t, args, kwargs, "view", "size")

    def method_expand(self, node, t, args, kwargs):
        target = self.sizes(node, args, self.bind(node, [], kwargs, ("size",)), "size")
        shape = tuple(t.shape)
        if len(target) < len(shape):
            raise self.error(
                node,
                f"`{self.text(node)}`: expand needs at least {len(shape)} sizes for {shape}, "
                f"got {target}.",
                kind="shape",
            )
        lead = len(target) - len(shape)
        full = []
        for i, s in enumerate(target):
            old = shape[i - lead] if i >= lead else None
            if s == -1:
                if old is None:
                    raise self.error(
                        node,
                        f"`{self.text(node)}`: -1 cannot size a new leading axis.",
                        kind="value",
                    )
                full.append(old)
            elif s < 0:
                raise self.error(node, f"`{self.text(node)}`: size {s} is negative.", kind="value")
            elif old is not None and old not in (1, s):
                raise self.error(
                    node,
                    f"`{self.text(node)}`: expand can only stretch size-1 axes; axis {i - lead} "
                    f"of {shape} has size {old} and cannot become {s}.",
                    kind="shape",
                )
            else:
                full.append(s)
        self.check_size(node, tuple(full), "expand into")
        out = self.torch_call(node, t.expand, tuple(full))
        return self.record(
            node,
            ".expand",
            out,
            operands=(t,),
            note=f"{shape} -> {tuple(out.shape)}: size-1 axes stretched without copying (stride 0)",
        )

    def method_flatten(self, node, t, args, kwargs):
        bound = self.bind(node, args, kwargs, ("start_dim", "end_dim"))
        start = self.dim(node, bound.get("start_dim", 0), t.ndim)
        end = self.dim(node, bound.get("end_dim", -1), t.ndim)
        if t.ndim and start > end:
            raise self.error(
                node, f"`{self.text(node)}`: start_dim comes after end_dim.", kind="value"
            )
        self.charge(node, t.numel())
        out = self.torch_call(node, t.flatten, start, end)
        return self.record(
            node,
            ".flatten",
            out,
            operands=(t,),
            note=f"{tuple(t.shape)} -> {tuple(out.shape)}: axes {start} to {end} merged into one",
        )

    def elementwise(self, node, t, args, kwargs, name: str):
        if args or kwargs:
            raise self.error(node, f".{name}() takes no arguments.", kind="type")
        if t.dtype == torch.bool:
            raise self.error(node, f".{name}() does not work on bool tensors.", kind="type")
        self.charge(node, t.numel())
        out = self.torch_call(node, getattr(t, name))
        what = {"exp": "e to the power of each element", "abs": "the size of each element"}[name]
        return self.record(node, "." + name, out, operands=(t,), note=f"{tuple(t.shape)}: {what}")

    def method_exp(self, node, t, args, kwargs):
        return self.elementwise(node, t, args, kwargs, "exp")

    def method_abs(self, node, t, args, kwargs):
        return self.elementwise(node, t, args, kwargs, "abs")

    def method_matmul(self, node, t, args, kwargs):
        bound = self.bind(node, args, kwargs, ("other",))
        if "other" not in bound:
            raise self.error(node, ".matmul() needs the other tensor.", kind="type")
        other_node = node.args[0] if node.args else node.keywords[0].value
        return self.matmul(node, node.func.value, t, other_node, bound["other"])

    # ---- einsum -----------------------------------------------------------------------------
    def einsum(self, node: ast.Call) -> Tensor:
        equation = node.args[0].value
        operands = [self.run(a) for a in node.args[1:]]
        for a, v in zip(node.args[1:], operands, strict=True):
            if not isinstance(v, Tensor):
                raise self.error(
                    a, f"einsum takes tensors after the equation, not {_describe(v)}.", kind="type"
                )
        self.begin(node)
        dtypes = {str(o.dtype).replace("torch.", "") for o in operands}
        if len(dtypes) > 1 or "bool" in dtypes:
            raise self.error(
                node,
                f"`{self.text(node)}`: einsum needs tensors of one numeric dtype, got "
                f"{', '.join(sorted(dtypes))}. Turn them into floats first, e.g. x * 1.0.",
                kind="type",
            )
        space = self.check_einsum(node, equation, operands)
        self.charge(node, space)
        if len(operands) > 2:
            self.check_size(node, (space,), "go through an intermediate")
        out = self.torch_call(node, torch.einsum, equation, *operands)
        shapes = " , ".join(str(tuple(o.shape)) for o in operands)
        return self.record(
            node,
            "einsum",
            out,
            operands=tuple(operands),
            note=f"{equation}: {shapes} -> {tuple(out.shape)}; letters missing from the output are summed",
        )

    def check_einsum(self, node: ast.Call, equation: str, operands: list[Tensor]) -> int:
        """Validate the equation against the operands; returns the iteration-space size."""
        eq_node = node.args[0]
        if len(equation) > _EINSUM_MAX_LENGTH or not re.fullmatch(r"[A-Za-z.,\->\s]*", equation):
            raise self.error(
                eq_node,
                "an einsum equation holds letters, commas, ... and one ->, e.g. 'bth,bt->bh'.",
                kind="value",
            )
        eq = re.sub(r"\s", "", equation)
        if not 1 <= len(operands) <= _EINSUM_MAX_OPERANDS:
            raise self.error(
                node,
                f"einsum takes 1 to {_EINSUM_MAX_OPERANDS} tensors, got {len(operands)}.",
                kind="type",
            )
        if eq.count("->") > 1 or ("-" in eq.replace("->", "")) or (">" in eq.replace("->", "")):
            raise self.error(eq_node, f"einsum equation {equation!r}: use -> once.", kind="value")
        lhs, _, rhs = eq.partition("->")
        terms = lhs.split(",")
        term_re = r"[A-Za-z]*(\.\.\.)?[A-Za-z]*"
        if len(terms) != len(operands):
            raise self.error(
                node,
                f"einsum equation {equation!r} describes {_plural(len(terms), 'tensor')} "
                f"but {len(operands)} were given.",
                kind="value",
            )
        sizes: dict[str, int] = {}
        ellipsis_shapes = []
        for i, (term, t) in enumerate(zip(terms, operands, strict=True)):
            if not re.fullmatch(term_re, term):
                raise self.error(
                    eq_node,
                    f"einsum term {term!r} is not valid (letters and at most one ...).",
                    kind="value",
                )
            letters = term.replace("...", "")
            shape = tuple(t.shape)
            if ("..." not in term and len(letters) != len(shape)) or len(letters) > len(shape):
                raise self.error(
                    node,
                    f"einsum term {term!r} names {_plural(len(letters), 'axis')}"
                    + f" but tensor {i + 1} has shape {shape}.",
                    kind="shape",
                )
            if "..." in term:
                head = term.index("...")
                n_ell = len(shape) - len(letters)
                ellipsis_shapes.append(shape[head : head + n_ell])
                dims = list(shape[:head]) + list(shape[head + n_ell :])
            else:
                dims = list(shape)
            own: dict[str, int] = {}
            for letter, size in zip(letters, dims, strict=True):
                if own.setdefault(letter, size) != size:
                    raise self.error(
                        node,
                        f"einsum {equation!r}: letter {letter} appears twice in term {term!r} "
                        f"with sizes {own[letter]} and {size} of tensor {i + 1} {shape}; a "
                        f"repeated letter (a diagonal) needs equal sizes.",
                        kind="shape",
                    )
                old = sizes.get(letter)
                if old is not None and old != size and 1 not in (old, size):
                    raise self.error(
                        node,
                        f"einsum {equation!r}: letter {letter} has size {old} in one place and "
                        f"{size} in tensor {i + 1} {shape}; the same letter must have the same size.",
                        kind="shape",
                    )
                if old is None or old == 1:
                    sizes[letter] = size
        if rhs or "->" in eq:
            if not re.fullmatch(term_re, rhs):
                raise self.error(eq_node, f"einsum output {rhs!r} is not valid.", kind="value")
            out_letters = rhs.replace("...", "")
            if len(set(out_letters)) != len(out_letters):
                raise self.error(eq_node, f"einsum output {rhs!r} repeats a letter.", kind="value")
            missing = [c for c in out_letters if c not in sizes]
            if missing:
                raise self.error(
                    eq_node, f"einsum output letter {missing[0]} appears in no input.", kind="value"
                )
            if "..." in rhs and not ellipsis_shapes:
                raise self.error(eq_node, "einsum output has ... but no input does.", kind="value")
        ell = align_shapes(*ellipsis_shapes) if ellipsis_shapes else None
        if ell is not None and ell.result is None:
            raise self.error(
                node, f"einsum {equation!r}: the ... axes do not broadcast.", kind="shape"
            )
        space = _numel(tuple(sizes.values())) * (_numel(ell.result) if ell is not None else 1)
        return space


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------


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
            b.softmax(1).unsqueeze(0).squeeze((0,)).transpose(0, 1).permute(1, 0)
            c.reshape(-1).view(2, 12).flatten(0, 1).exp().abs()
            b.expand(2, 2, 3).matmul(a) @ a.transpose(1, 2)
            torch.einsum("bth,bt->bh", a, b)
            torch.neg(b)
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
            value.is_floating_point() or value.is_complex() or value.dtype in _PLAIN_DTYPES
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
    Returns a Trace whose result is a Tensor (or a tuple for .shape, a number for .ndim) and
    whose steps list every sub-expression. Raises SandboxError (an AttnvizError) with .kind, .span
    and the partial .trace, for anything it cannot or will not evaluate.
    """
    limits = limits or DEFAULT_LIMITS
    if not _warmed:
        _warm_up()
    start = time.perf_counter()
    try:
        return _evaluate(expr, variables, limits, start)
    except SandboxError as exc:
        if not exc.trace.expr and isinstance(expr, str):
            exc.trace = Trace(expr=expr, result=None, steps=exc.trace.steps)
        raise
    except RecursionError:
        raise SandboxError(
            f"the expression is nested too deeply (the limit is {limits.max_depth} levels).",
            kind="limit",
            trace=Trace(expr=expr if isinstance(expr, str) else "", result=None),
        ) from None
    except Exception as exc:  # a bug in the sandbox: still never let it escape as-is
        raise SandboxError(
            f"the expression could not be evaluated ({type(exc).__name__}); please report it.",
            kind="internal",
            trace=Trace(expr=expr if isinstance(expr, str) else "", result=None),
        ) from exc


def _evaluate(expr: str, variables: Mapping[str, Tensor], limits: Limits, start: float) -> Trace:
    _check_variables(variables)
    tree, src = _parse(expr, limits)
    checker = _Checker(src, limits, variables)
    checker.check(tree)
    deadline = start + limits.time_budget

    first = _Interpreter(src, checker, limits, variables, meta=True, deadline=deadline)
    try:
        first.run(tree)
        failure = None
    except SandboxError as exc:
        if exc.kind == "limit" and "took longer" in exc.message:
            exc.trace = Trace(expr=expr, result=None, steps=tuple(first.steps))
            raise
        failure = exc

    # The real pass runs only what the first pass approved: on a failure, up to that step.
    second = _Interpreter(
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
    except _Stop:
        failure.trace = Trace(expr=expr, result=None, steps=tuple(second.steps))
        raise failure from None
    except SandboxError as exc:
        exc.trace = Trace(expr=expr, result=None, steps=tuple(second.steps))
        raise
    if failure is not None:  # the real pass succeeded where the first failed: trust the refusal
        failure.trace = Trace(expr=expr, result=None, steps=tuple(second.steps))
        raise failure
    return Trace(expr=expr, result=result, steps=tuple(second.steps))
