"""The language the sandbox speaks: its operators, attributes, limits and kinds of error.

What may be *called* lives in one place, ``attnviz.sandbox.registry`` (both allow-list and
dispatch); this module holds everything else the static checker and the interpreter agree on.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass

import torch

__all__ = ["ATTRIBUTES", "DEFAULT_LIMITS", "ERROR_KINDS", "ErrorKind", "Limits"]


class ErrorKind(enum.StrEnum):
    """What went wrong in an evaluation, for a UI to style or filter on (compare as values)."""

    SYNTAX = "syntax"  # not an expression
    REFUSED = "refused"  # outside the language
    NAME = "name"  # an unknown name
    LIMIT = "limit"  # a size, depth, work or memory limit
    TIME = "time"  # the time budget ran out
    SHAPE = "shape"  # shapes that do not fit
    TYPE = "type"  # a value of the wrong type
    VALUE = "value"  # a value that is not allowed
    TORCH = "torch"  # PyTorch's own refusal, translated
    INTERNAL = "internal"  # a bug in the sandbox


ERROR_KINDS: tuple[str, ...] = tuple(k.value for k in ErrorKind)
"""Values of SandboxError.kind (an ErrorKind, a str enum)."""

NOT_SUPPORTED: frozenset[ErrorKind] = frozenset(
    {ErrorKind.REFUSED, ErrorKind.LIMIT, ErrorKind.TIME, ErrorKind.INTERNAL}
)
"""Kinds that say what the sandbox does not run (outside its language, too big, too slow, its
own bug), not that the expression is wrong: a page shows them neutrally, never as a mistake."""

ATTRIBUTES = ("T", "shape", "ndim")
"""Attributes that may be read (never called)."""

TORCH = "torch"
"""The one module name the text may use: ``torch.einsum(...)``, ``torch.sum(x, dim=1)``."""

BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@", ast.Pow: "**"}
VERBS = {"+": "added", "-": "subtracted", "*": "multiplied", "/": "divided"}
UNARY = {ast.USub: "-", ast.UAdd: "+"}

# Constructs outside the language, named in plain words for the refusal message.
CONSTRUCTS: dict[type, str] = {
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
}
OPERATOR_NAMES: dict[type, str] = {
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
LOOKALIKES = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "х": "x", "у": "y", "і": "i", "ѕ": "s",
    "ј": "j", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "Х": "X", "ο": "o", "α": "a", "ν": "v", "ι": "i", "Ο": "O", "Α": "A",
    "Β": "B", "Ε": "E", "Τ": "T", "Η": "H",
}  # fmt: skip
# Common PyTorch/NumPy spellings outside the language, and what to write instead.
INSTEAD = {
    "dim": ".ndim",
    "t": ".T",
    "mT": ".transpose(-2, -1)",
    "max": ".amax(dim)",
    "swapaxes": ".transpose(a, b)",
    "swapdims": ".transpose(a, b)",
    "movedim": ".permute(...)",
    "expand_as": ".expand(other.shape)",
    "reshape_as": ".reshape(other.shape)",
    "view_as": ".view(other.shape)",
    "mul": "*",
    "add": "+",
    "sub": "-",
    "div": "/",
    "pow": "** with a number",
    "mm": "@",
    "dot": "@",
    "contiguous": ".reshape(...) (it copies when it must)",
}
PLAIN_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
MAX_INT = 2**62  # scalar arithmetic stays well inside int64
EINSUM_MAX_LENGTH = 100


@dataclass(frozen=True)
class Limits:
    """Caps on one evaluation; all are checked before any real tensor is allocated.

    max_length: characters in the expression. max_nodes: syntax-tree nodes. max_depth: nesting
    depth of the syntax tree. max_constant: magnitude of a number written in the text.
    max_power: magnitude of an exponent in ``**``. max_elements: elements of any one intermediate
    tensor (views included). max_total_elements: elements of all intermediates together.
    max_bytes: bytes of every distinct storage the evaluation touches (inputs' copies, results,
    copies; a view adds nothing, its storage is counted once), counted on the shape-only pass.
    max_ndim: axes of any intermediate. max_work: estimated element operations of the whole
    expression (a matrix product of (M, K) and (K, N) counts M * K * N). time_budget: seconds for
    one evaluation, both passes together. keep_elements / keep_bytes: a step keeps its own compact
    copy of its value only up to keep_elements elements, and all steps together up to keep_bytes
    (the result is always kept), so a trace never holds a large storage through a view.
    """

    max_length: int = 2000
    max_nodes: int = 300
    max_depth: int = 40
    max_constant: float = 1e9
    max_power: float = 8
    max_elements: int = 1_000_000
    max_total_elements: int = 2_000_000
    max_bytes: int = 24 * 2**20
    max_ndim: int = 16
    max_work: int = 50_000_000
    time_budget: float = 1.0
    keep_elements: int = 4096
    keep_bytes: int = 256 * 2**10


DEFAULT_LIMITS = Limits()
