"""The checks every trace function runs on its inputs before tracing anything.

``check_traceable`` is ``attnviz.check_inputs`` plus "no empty axis"; ``check_index`` checks one
index into a shape (a sentence b, a hidden feature h). Both raise ``AttnvizError`` naming the shapes;
``shape_or_type`` is what such a message says a wrong argument was.
"""

from __future__ import annotations

from torch import Tensor

from attnviz.aggregation import check_inputs
from attnviz.errors import AttnvizError

__all__ = ["check_index", "check_traceable", "shape_or_type"]


def check_traceable(net_output: object, att_scores: object) -> None:
    """check_inputs, and every size at least 1: there is nothing to trace in an empty axis."""
    check_inputs(net_output, att_scores)
    shape = tuple(net_output.shape)
    if min(shape) < 1:
        raise AttnvizError(
            f"net_output {shape} and att_scores {tuple(att_scores.shape)} have an empty axis: "
            "B, T and H must each be at least 1 to trace the broadcast."
        )


def check_index(name: str, letter: str, value: object, size: int, shape: tuple) -> int:
    """value as an index 0 <= value < size into axis letter of shape (booleans refused)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < size:
        raise AttnvizError(
            f"{name} must be a whole number from 0 to {letter}-1 = {size - 1} for shape "
            f"{shape}; got {value!r}."
        )
    return value


def shape_or_type(value: object) -> tuple[int, ...] | str:
    """A tensor's shape as a tuple, or the type name of anything else (for an error message)."""
    return tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
