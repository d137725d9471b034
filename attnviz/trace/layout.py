"""How a tensor sits in memory: shape, strides, and whether it is a view or new bytes.

``view_vs_copy`` puts ``expand`` (a stride-0 view, 0 bytes) beside ``repeat`` (a real copy);
``same_memory`` and ``new_bytes`` are what the broadcast story uses to say which steps allocate.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from attnviz.errors import AttnvizError
from attnviz.trace.inputs import shape_or_type

__all__ = ["Layout", "ViewCopy", "new_bytes", "same_memory", "view_vs_copy"]


def same_memory(a: Tensor, b: Tensor) -> bool:
    """True when a and b live in the same storage (one is a view of the other)."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def new_bytes(t: Tensor, *sources: Tensor) -> int:
    """Bytes allocated for t: 0 when it shares storage with one of sources (a view)."""
    if any(same_memory(t, s) for s in sources):
        return 0
    return t.untyped_storage().nbytes()


@dataclass(frozen=True)
class Layout:
    """How one tensor sits in memory.

    same_memory: it shares storage with att_scores (a view). new_bytes: bytes allocated for it
    (0 for a view). storage_numbers: how many numbers its storage really holds.
    """

    code: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    data_ptr: int
    same_memory: bool
    new_bytes: int
    storage_numbers: int
    value: Tensor


@dataclass(frozen=True)
class ViewCopy:
    """att_scores[..., None] stretched to (B, T, H) twice: expand (a view) and repeat (a copy)."""

    source: Layout
    expand: Layout
    repeat: Layout
    explanation: str


def _layout(code: str, t: Tensor, source: Tensor) -> Layout:
    storage = t.untyped_storage()
    return Layout(
        code=code,
        shape=tuple(t.shape),
        strides=tuple(t.stride()),
        data_ptr=t.data_ptr(),
        same_memory=same_memory(t, source),
        new_bytes=new_bytes(t, source),
        storage_numbers=storage.nbytes() // t.element_size(),
        value=t,
    )


def view_vs_copy(att_scores: Tensor, h: int) -> ViewCopy:
    """att_scores (B, T), h = H -> ViewCopy of expand(B, T, H) (stride 0) vs repeat(1, 1, H)."""
    if not isinstance(att_scores, Tensor) or att_scores.ndim != 2:
        raise AttnvizError(
            f"att_scores must be a (B, T) tensor, one weight per word; got {shape_or_type(att_scores)}. "
            "Give it 2 axes (sentence B, word T)."
        )
    if not isinstance(h, int) or isinstance(h, bool) or h < 1:
        raise AttnvizError(
            f"h (the hidden size H) must be a whole number of at least 1, got {h!r} "
            f"(att_scores is {tuple(att_scores.shape)})."
        )
    w = att_scores.detach()  # (B,T)
    b, t = w.shape
    if b < 1 or t < 1:
        raise AttnvizError(f"att_scores {(b, t)} has an empty axis: B and T must be at least 1.")
    w3 = w[..., None]  # (B,T,1), a view
    expanded = w3.expand(b, t, h)  # (B,T,H), stride 0 on the hidden axis, no copy
    repeated = w3.repeat(1, 1, h)  # (B,T,H), a real copy
    source = _layout("att_scores[..., None]", w3, w)
    e = _layout(f"att_scores[..., None].expand({b}, {t}, {h})", expanded, w)
    r = _layout(f"att_scores[..., None].repeat(1, 1, {h})", repeated, w)
    explanation = (
        f"Both give shape {e.shape} and the same numbers. expand has strides {e.strides}: the "
        f"stride {e.strides[2]} on the hidden axis re-reads one number {h} times, from the same "
        f"memory as att_scores ({e.new_bytes} new bytes). repeat has strides {r.strides} and "
        f"copies every number: {r.storage_numbers} numbers, {r.new_bytes} new bytes."
    )
    return ViewCopy(source, e, r, explanation)
