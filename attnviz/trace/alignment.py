"""Two shapes compared right-aligned, axis by axis, the way broadcasting does (``align_shapes``).

On each axis the sizes are equal (kept), or one is 1 or missing and is stretched to the other, or
they clash. The answer agrees with ``torch.broadcast_shapes``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch

from attnviz.errors import AttnvizError

__all__ = ["CLASH", "EQUAL", "STRETCHED", "Alignment", "AxisMatch", "align_shapes"]

#: Outcomes of one axis in ``align_shapes``.
EQUAL, STRETCHED, CLASH = "equal", "stretched", "clash"


@dataclass(frozen=True)
class AxisMatch:
    """One axis of a right-aligned comparison.

    axis: counted from the right (-1 is the last axis). size_a / size_b: the sizes there, None where
    that shape has no such axis (it counts as 1). outcome: "equal", "stretched" or "clash".
    stretched: which side ("a" or "b") is stretched from 1 (or from missing), None otherwise.
    result: the size of the result on this axis, None on a clash.
    """

    axis: int
    size_a: int | None
    size_b: int | None
    outcome: str
    stretched: str | None
    result: int | None
    explanation: str


@dataclass(frozen=True)
class Alignment:
    """Two shapes written right-aligned and compared axis by axis, as broadcasting does.

    axes are listed left to right (the leftmost axis of the longer shape first, axis -1 last).
    result is the broadcast shape, or None when some axis clashes (then ok is False).
    """

    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    name_a: str
    name_b: str
    axes: tuple[AxisMatch, ...]
    result: tuple[int, ...] | None
    ok: bool
    explanation: str

    @property
    def clashes(self) -> tuple[AxisMatch, ...]:
        """The axes that clash (empty when the shapes broadcast)."""
        return tuple(a for a in self.axes if a.outcome == CLASH)

    @property
    def stretched_axes(self) -> tuple[AxisMatch, ...]:
        """The axes where one side is stretched from 1 (or from a missing axis)."""
        return tuple(a for a in self.axes if a.outcome == STRETCHED)


def _shape_tuple(shape: object, name: str) -> tuple[int, ...]:
    """A tuple, list or torch.Size of whole numbers >= 0 -> a tuple of ints (floats refused)."""
    bad = AttnvizError(
        f"{name} must be a shape such as (2, 3, 5): a tuple of whole numbers of at least 0; "
        f"got {shape!r}."
    )
    if not isinstance(shape, (tuple, list, torch.Size)):
        raise bad
    out = []
    for s in shape:
        if isinstance(s, bool):
            raise bad
        try:
            size = operator.index(s)
        except TypeError:
            raise bad from None
        if size < 0:
            raise bad
        out.append(size)
    return tuple(out)


def _match_axis(axis: int, sa: int | None, sb: int | None, name_a: str, name_b: str) -> AxisMatch:
    """One axis of ``align_shapes``: sizes sa and sb there, None where that shape has no such axis."""
    where = f"axis {axis}"
    if sa is not None and sa == sb:
        return AxisMatch(axis, sa, sb, EQUAL, None, sa, f"{where}: {sa} = {sb}, kept.")
    if sa is None or (sa == 1 and sb is not None):
        side, small, big, name, other = "a", sa, sb, name_a, name_b
    elif sb is None or sb == 1:
        side, small, big, name, other = "b", sb, sa, name_b, name_a
    else:
        clash = f"{where}: {sa} meets {sb}; neither is 1, so they clash."
        return AxisMatch(axis, sa, sb, CLASH, None, None, clash)
    was = "missing (counts as 1)" if small is None else "1"
    size = 1 if big is None else big
    stretch = f"{where}: {name} is {was}, stretched to {size} to meet {other}."
    return AxisMatch(axis, sa, sb, STRETCHED, side, size, stretch)


def align_shapes(
    shape_a: tuple[int, ...] | torch.Size,
    shape_b: tuple[int, ...] | torch.Size,
    *,
    name_a: str = "a",
    name_b: str = "b",
) -> Alignment:
    """Compare two shapes right-aligned, axis by axis, the way broadcasting does.

    On each axis the sizes are equal, or one is 1 (or missing) and is stretched to the other, or
    they clash. Agrees with ``torch.broadcast_shapes``: ``result`` is its answer, None when it fails.
    """
    a, b = _shape_tuple(shape_a, name_a), _shape_tuple(shape_b, name_b)
    axes = tuple(
        _match_axis(
            axis,
            a[axis] if -axis <= len(a) else None,
            b[axis] if -axis <= len(b) else None,
            name_a,
            name_b,
        )
        for axis in range(-max(len(a), len(b)), 0)
    )
    clashes = [m for m in axes if m.outcome == CLASH]
    ok = not clashes
    result = tuple(m.result for m in axes) if ok else None
    if ok:
        stretched = [m for m in axes if m.outcome == STRETCHED]
        how = (
            "; ".join(m.explanation.rstrip(".") for m in stretched)
            if stretched
            else "every axis is equal, nothing is stretched"
        )
        explanation = f"{name_a} {a} and {name_b} {b} broadcast to {result}: {how}."
    else:
        first = clashes[-1]  # the rightmost clash, the one torch reports
        explanation = (
            f"{name_a} {a} and {name_b} {b} do not broadcast: shapes align from the right, so on "
            f"axis {first.axis} {first.size_a} meets {first.size_b}, and neither is 1."
        )
    return Alignment(a, b, name_a, name_b, axes, result, ok, explanation)
