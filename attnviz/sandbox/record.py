"""What an evaluation leaves behind: a Trace of Nodes, one per sub-expression.

A Node keeps its own compact copy of a small value, never a view: a view keeps its whole storage
alive and pickles it whole, so a trace of many views of one large tensor would hold (and a cache
would write out) that storage again for every step. Sizes are bounded by ``Limits.keep_*``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from attnviz.trace import Alignment

__all__ = ["Node", "Trace", "compact"]


@dataclass(frozen=True, eq=False)  # tensors inside: compare fields, not objects
class Node:
    """One evaluated sub-expression (``trace.Step`` is something else: a step of the one-liner).

    index: position in evaluation order. source: its text, ``expr[span[0]:span[1]]``. op: what it
    does ("name", "+", "-", "*", "/", "@", "**", "neg", "index", ".T", ".shape", ".ndim", ".sum",
    ..., "einsum"). shape/dtype/stride: of a tensor value (None for a tuple or a number); stride
    is the value's own, as evaluated (a view's strides). value: a compact copy of the tensor
    (its own storage, no gradient), the tuple or the number; None when the tensor was too large
    to keep (see ``Limits.keep_elements``) or in the partial trace of a time-out during the
    shape-only pass. operands: the shapes of the tensors it consumed. broadcast: for + - * /
    between tensors and for the batch axes of @, the operand shapes lined up from the right.
    note: what happened, in plain words.
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
    """An evaluation: its result and every node, in order.

    expr: the text. result: a Tensor with its own compact storage, or a tuple (``x.shape``) or a
    number (``x.ndim``); None in a partial trace. steps: one Node per sub-expression that
    involves a variable, children first. bytes_touched: bytes of the distinct storages the
    evaluation touched, as counted against ``Limits.max_bytes`` (views add nothing).
    """

    expr: str
    result: Any
    steps: tuple[Node, ...] = field(default_factory=tuple)
    bytes_touched: int = 0


def compact(value: Any) -> Any:
    """A tensor's values in a storage of exactly its own size (no view, no gradient); other
    values unchanged. (B, T) view of a (1000, 1000) storage -> a fresh (B, T) tensor."""
    if not isinstance(value, Tensor):
        return value
    return value.detach().contiguous().clone()
