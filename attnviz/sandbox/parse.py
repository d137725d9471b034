"""Reading the text: characters, syntax, and the static checker that refuses anything outside
the language before a single value is computed.

The text is parsed with ``ast.parse(mode="eval")``, never given to eval/exec/compile. The checker
walks the whole tree once, measures its size and depth, approves every call against the one
registry (``attnviz.sandbox.registry``), and marks which nodes depend on a variable.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
import unicodedata
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from attnviz.sandbox.language import (
    ATTRIBUTES,
    BINOPS,
    CONSTRUCTS,
    INSTEAD,
    LOOKALIKES,
    OPERATOR_NAMES,
    TORCH,
    UNARY,
    ErrorKind,
    Limits,
)
from attnviz.sandbox.messages import SandboxError, clip
from attnviz.sandbox.registry import FUNCTIONS, METHODS, call_names

__all__ = ["Checker", "Source", "parse"]


def _char_problem(expr: str) -> tuple[int, str] | None:
    """The first character outside printable ASCII (plus tab/newline), with a message."""
    for i, ch in enumerate(expr):
        if " " <= ch <= "~" or ch in "\t\n\r":
            continue
        name = unicodedata.name(ch, f"U+{ord(ch):04X}")
        if ch == "\0":
            return i, f"the expression contains a NUL character at position {i}; remove it."
        looks = LOOKALIKES.get(ch) or unicodedata.normalize("NFKC", ch)
        hint = (
            f" It looks like the ASCII letter {looks!r}: retype it."
            if looks.isascii() and looks.isprintable() and looks != ch
            else " Type plain ASCII."
        )
        return i, f"character {ch!r} ({name}) at position {i} is not allowed.{hint}"
    return None


_DTYPES = frozenset(k for k, v in vars(torch).items() if isinstance(v, torch.dtype))


def _torch_value(attr: str) -> str:
    """Why torch.<attr> used as a value (not called) is refused, and what to write instead."""
    shown = clip(attr, 30)
    if attr in _DTYPES:
        return (
            f"not supported here: the dtype `torch.{shown}` as a value (as in .to(...) or "
            f".view(...)). To turn the numbers into another type write .float() or .double()."
        )
    return (
        f"not supported here: `torch.{shown}`. torch is used here only to call a function, "
        f"e.g. torch.einsum(...) or torch.sum(x, dim=1)."
    )


class Source:
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


def parse(expr: str, limits: Limits) -> tuple[ast.Expression, Source]:
    if not isinstance(expr, str):
        raise SandboxError(
            f"the expression must be text (str), got {type(expr).__name__}.", kind=ErrorKind.TYPE
        )
    if len(expr) > limits.max_length:
        raise SandboxError(
            f"the expression is {len(expr):,} characters long; the limit is "
            f"{limits.max_length:,}. Write a shorter expression.",
            kind=ErrorKind.LIMIT,
        )
    if not expr.strip():
        raise SandboxError(
            "the expression is empty: type one, e.g. net_output * att_scores[..., None].",
            kind=ErrorKind.SYNTAX,
        )
    problem = _char_problem(expr)
    if problem is not None:
        pos, message = problem
        raise SandboxError(message, kind=ErrorKind.REFUSED, span=(pos, pos + 1))
    src = Source(expr)
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
            kind=ErrorKind.SYNTAX,
            span=span,
        ) from None
    except (RecursionError, MemoryError):
        raise SandboxError(
            f"the expression is nested too deeply to read (the limit is {limits.max_depth} levels).",
            kind=ErrorKind.LIMIT,
        ) from None
    except ValueError as exc:  # e.g. NUL bytes, already refused above
        raise SandboxError(
            f"this is not a valid expression: {exc}.", kind=ErrorKind.SYNTAX
        ) from None
    return tree, src


class Checker:
    """Walks the tree once, before anything is evaluated, and refuses whatever is outside the
    language. Also measures size and depth, and finds which nodes involve a variable."""

    def __init__(self, src: Source, limits: Limits, names: Mapping[str, Any]) -> None:
        self.src = src
        self.limits = limits
        self.names = names
        self.equations: set[int] = set()  # ids of str constants that are einsum equations
        self.lists: set[int] = set()  # ids of list literals passed straight to a method
        self.starred: set[int] = set()  # ids of `*x` in a call's arguments or a tuple's items
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
                        kind=ErrorKind.LIMIT,
                    )
            if depth > self.limits.max_depth:
                raise self.refuse(
                    node,
                    f"the expression is nested more than {self.limits.max_depth} levels deep; "
                    f"write a flatter one.",
                    kind=ErrorKind.LIMIT,
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
            if type(node.op) not in BINOPS:
                name = OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)
                raise self.refuse(
                    node,
                    f"the operator {name} is not allowed; use + - * / @ or ** "
                    f"(in `{clip(self.src.text(node))}`).",
                )
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in UNARY:
                name = OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)
                raise self.refuse(node, f"the operator {name} is not allowed; only unary - is.")
        elif isinstance(node, ast.Attribute):
            if id(node) not in self.methods and self.is_torch(node.value):
                self.functions.add(id(node.value))  # torch itself is fine: this use of it is not
                if not node.attr.startswith("_"):
                    raise self.refuse(node, _torch_value(node.attr))
            if id(node) not in self.methods:
                self.check_attribute(node, called=False)
        elif isinstance(node, ast.Call):
            self.check_call(node)
        elif isinstance(node, ast.List):
            self.starred.update(id(e) for e in node.elts if isinstance(e, ast.Starred))
            if id(node) not in self.lists:
                raise self.refuse(
                    node,
                    "a list is only allowed as a method argument, e.g. x.permute([0, 2, 1]); "
                    "to index, use ints, slices, None and ... .",
                )
        elif isinstance(node, ast.Starred):
            if id(node) not in self.starred:
                raise self.refuse(
                    node,
                    "not supported here: `*` unpacking outside a call or a tuple; it works in "
                    "both, e.g. x.view(*x.shape, 1) or (*x.shape, 1).",
                )
            if isinstance(node.value, ast.List):
                self.lists.add(id(node.value))  # *[1, 2] is as good as *(1, 2)
        elif isinstance(node, (ast.Subscript, ast.Slice, ast.Tuple, ast.keyword)):
            if isinstance(node, ast.keyword) and node.arg is None:
                raise self.refuse(
                    node, "not supported here: `**` unpacking; write the keyword out, e.g. dim=1."
                )
            if isinstance(node, ast.Tuple):
                self.starred.update(id(e) for e in node.elts if isinstance(e, ast.Starred))
        elif type(node) in CONSTRUCTS:
            raise self.refuse(node, f"{CONSTRUCTS[type(node)]} is not allowed here.")
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
        elif name == TORCH:
            hint = ' torch is only for calling a function, e.g. torch.einsum("bth,bt->bh", ...).'
        elif name in FUNCTIONS or name in METHODS:
            hint = f" {name} is a function: call it, e.g. {name}(...)."
        else:
            hint = ""
        raise self.refuse(
            node,
            f"name `{name}` is not defined here.{hint} The names you can use are: {known} "
            f"(and the functions {call_names()}).",
            kind=ErrorKind.NAME,
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
                    f"the number {clip(self.src.text(node))} is too large; numbers may be at most "
                    f"{self.limits.max_constant:g} in size.",
                    kind=ErrorKind.LIMIT,
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
                    node,
                    f"`.{attr}` is not a method: write it without parentheses, e.g. x.{attr}.",
                    kind=ErrorKind.TYPE,
                )
        else:
            if attr in ATTRIBUTES:
                return
            if attr in METHODS:
                raise self.refuse(
                    node,
                    f"method `{attr}` must be called: write .{attr}(...) with parentheses.",
                    kind=ErrorKind.TYPE,
                )
        if attr.endswith("_"):
            why = (
                f"method `{attr}` changes a tensor in place and is not allowed: write the "
                f"operation out, e.g. x + y instead of x.add_(y)."
            )
        else:
            why = f"attribute `{attr}` is not allowed."
            if attr in INSTEAD:
                why += f" Use {INSTEAD[attr]} instead."
            else:
                close = difflib.get_close_matches(attr, [*METHODS, *ATTRIBUTES], n=1, cutoff=0.75)
                if close:
                    why += f" Did you mean `.{close[0]}`?"
            why += (
                f" The allowed attributes are .T, .shape, .ndim and the methods "
                f"{', '.join(METHODS)}."
            )
        raise self.refuse(node, why)

    def is_torch(self, node: ast.AST) -> bool:
        """node is the module name ``torch`` (not a variable of that name)."""
        return isinstance(node, ast.Name) and node.id == TORCH and TORCH not in self.names

    def check_call(self, node: ast.Call) -> None:
        func = node.func
        # The callee is judged here, with the call: mark it so the walk does not judge it again.
        if isinstance(func, ast.Name):
            self.functions.add(id(func))
        elif isinstance(func, ast.Attribute):
            self.methods.add(id(func))
            if self.is_torch(func.value):
                self.functions.add(id(func.value))
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            if isinstance(arg, ast.List):
                self.lists.add(id(arg))
            if isinstance(arg, ast.Starred):
                self.starred.add(id(arg))
        seen: set[str] = set()
        for kw in node.keywords:
            if kw.arg is not None and kw.arg in seen:
                raise self.refuse(kw, f"keyword `{kw.arg}` is given twice.", kind=ErrorKind.SYNTAX)
            seen.add(kw.arg)
        if isinstance(func, ast.Attribute) and self.is_torch(func.value):
            self.check_function(node, func.attr, f"torch.{func.attr}")
            return
        if isinstance(func, ast.Name) and func.id in FUNCTIONS and FUNCTIONS[func.id].bare:
            self.check_function(node, func.id, func.id)
            return
        if isinstance(func, ast.Attribute):
            self.check_attribute(func, called=True)
            self.check_keywords(node, METHODS[func.attr].kwargs, f".{func.attr}()")
            return
        if isinstance(func, ast.Name):
            what = (
                "a tensor cannot be called"
                if func.id in self.names
                else f"calling {func.id}(...) is not allowed"
            )
            raise self.refuse(
                node,
                f"{what}: the functions are {call_names()}, and tensor methods are called as "
                f"x.sum(...).",
            )
        raise self.refuse(
            node,
            f"calling {clip(self.src.text(func), 40)} is not allowed: the functions are "
            f"{call_names()}, and tensor methods are called as x.sum(...).",
        )

    def check_keywords(self, node: ast.Call, allowed: tuple[str, ...], where: str) -> None:
        for kw in node.keywords:
            if kw.arg is not None and kw.arg not in allowed:
                ok = ", ".join(allowed) if allowed else "none"
                raise self.refuse(
                    kw, f"keyword `{kw.arg}` is not allowed for {where} (allowed: {ok})."
                )

    def check_function(self, node: ast.Call, name: str, spelt: str) -> None:
        """A call of a function (einsum, bmm...) or of a method's functional form (torch.sum(x))."""
        if name in FUNCTIONS:
            entry = FUNCTIONS[name]
            if entry.equation:
                self.check_equation(node, spelt)
            self.check_keywords(node, entry.kwargs, f"{spelt}()")
            return
        if name in METHODS and METHODS[name].functional:
            self.check_keywords(node, METHODS[name].kwargs, f"{spelt}()")
            if not node.args:
                raise self.refuse(
                    node, f"{spelt}() needs the tensor first, e.g. {spelt}(net_output, ...)."
                )
            if isinstance(node.args[0], ast.Starred):
                raise self.refuse(
                    node.args[0],
                    f"not supported here: `*` unpacking as the tensor of {spelt}(); name the "
                    f"tensor, e.g. {spelt}(net_output, ...).",
                )
            return
        why = f"calling {clip(spelt, 40)}(...) is not allowed."
        if name in METHODS:
            why += f" Write it as a method: x.{name}(...)."
        elif name in INSTEAD:
            why += f" Use {INSTEAD[name]} instead."
        else:
            close = difflib.get_close_matches(name, [*FUNCTIONS, *METHODS], n=1, cutoff=0.75)
            if close:
                why += f" Did you mean torch.{close[0]}?"
        raise self.refuse(node, why + f" The functions are {call_names()}.")

    def check_equation(self, node: ast.Call, spelt: str) -> None:
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            self.equations.add(id(first))
            return
        raise self.refuse(
            node,
            f'{spelt} needs its equation first, as a string: {spelt}("bth,bt->bh", '
            "net_output, att_scores).",
        )
