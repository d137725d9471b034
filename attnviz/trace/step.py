"""The story of the one-liner, step by step: weighted = (net_output * att_scores[..., None]).sum(axis=1).

``broadcast_steps`` runs each step with torch and returns it as a ``Step`` (code, explanation,
shape, value, strides, what is a view); ``feeding_cells`` lists the cells of a step that feed one
result cell, to follow it through the story.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from attnviz.aggregation import METHODS, MethodCheck
from attnviz.examples import AXIS_NAMES
from attnviz.tolerance import close, max_abs_diff
from attnviz.trace.alignment import Alignment, align_shapes
from attnviz.trace.inputs import check_index, check_traceable
from attnviz.trace.layout import new_bytes, same_memory

__all__ = ["Step", "broadcast_steps", "feeding_cells"]


@dataclass(frozen=True)
class Step:
    """One step of the broadcast story.

    key: a stable id ("net_output", "att_scores", "unsqueeze", "align", "expand", "product", "sum",
    "result"). title: a short heading. code: the Python fragment of this step. explanation: one or
    two plain sentences with the actual shapes. shape: the shape of value. value: the tensor at this
    step, detached (None only for the "align" step, which compares shapes, not numbers; its shape is
    the broadcast result). strides: the strides of value where they matter, else None.
    axis_names: one name per axis of value (sentence / word / hidden). stretched: the axes of value
    that exist only by broadcasting (stride 0: every cell along them is the same memory).
    view_of: the input whose memory value shares (None for a fresh tensor). new_bytes: bytes this
    step allocates (0 for a view). alignment: the shape comparison (only for "align").
    checks: cross-checks against other methods (only for "result").
    """

    key: str
    title: str
    code: str
    explanation: str
    shape: tuple[int, ...]
    value: Tensor | None
    strides: tuple[int, ...] | None = None
    axis_names: tuple[str, ...] = ()
    stretched: tuple[int, ...] = ()
    view_of: str | None = None
    new_bytes: int | None = None
    alignment: Alignment | None = None
    checks: tuple[MethodCheck, ...] = ()


def _shape_str(t: Tensor | tuple[int, ...]) -> str:
    return str(tuple(t.shape) if isinstance(t, Tensor) else tuple(t))


def _tensor_step(*, value: Tensor, **fields: object) -> Step:
    """A Step whose value is a tensor: its shape and strides are read from the value."""
    return Step(shape=tuple(value.shape), value=value, strides=tuple(value.stride()), **fields)


def broadcast_steps(net_output: Tensor, att_scores: Tensor) -> list[Step]:
    """net_output (B, T, H), att_scores (B, T) -> the story of the one-liner as 8 ordered steps.

    inputs -> att_scores[..., None] (B, T, 1), a view -> right-aligned shape comparison -> the
    stretch to (B, T, H) as expand (stride 0, no bytes) -> the product (B, T, H) -> .sum(axis=1)
    (B, H) -> the result cross-checked with einsum and bmm. Raises AttnvizError on a shape mismatch.
    """
    check_traceable(net_output, att_scores)
    x = net_output.detach()  # (B,T,H)
    w = att_scores.detach()  # (B,T)
    b, t, h = x.shape
    steps: list[Step] = []

    steps.append(
        _tensor_step(
            key="net_output",
            title="Input: net_output",
            code="net_output",
            explanation=(
                f"net_output {_shape_str(x)} holds one hidden vector of H = {h} numbers for each of "
                f"the T = {t} words in each of the B = {b} sentences."
            ),
            value=x,
            axis_names=AXIS_NAMES,
            new_bytes=0,
        )
    )
    steps.append(
        _tensor_step(
            key="att_scores",
            title="Input: att_scores",
            code="att_scores",
            explanation=(
                f"att_scores {_shape_str(w)} holds one weight per word: T = {t} weights for each of "
                f"the B = {b} sentences. It has no hidden axis yet."
            ),
            value=w,
            axis_names=AXIS_NAMES[:2],
            new_bytes=0,
        )
    )

    w3 = w[..., None]  # (B,T,1)
    shared = same_memory(w3, w)
    steps.append(
        _tensor_step(
            key="unsqueeze",
            title="Add a trailing axis",
            code="att_scores[..., None]",
            explanation=(
                f"[..., None] adds an axis of size 1 at the end: {_shape_str(w)} -> {_shape_str(w3)}. "
                + (
                    f"No number moves: it is a view of the same memory, strides {tuple(w3.stride())}."
                    if shared
                    else "torch made a new tensor here."
                )
            ),
            value=w3,
            axis_names=AXIS_NAMES,
            view_of="att_scores" if shared else None,
            new_bytes=new_bytes(w3, w),
        )
    )

    alignment = align_shapes(
        tuple(x.shape), tuple(w3.shape), name_a="net_output", name_b="att_scores[..., None]"
    )
    assert alignment.result is not None  # check_inputs guarantees (B,T,H) vs (B,T,1) fit
    steps.append(
        Step(
            key="align",
            title="Line the shapes up from the right",
            code=f"torch.broadcast_shapes({tuple(x.shape)}, {tuple(w3.shape)})",
            explanation=(
                "Broadcasting compares shapes from the right, axis by axis: sizes must be equal, "
                f"or one of them must be 1. {alignment.explanation}"
            ),
            shape=alignment.result,
            value=None,
            axis_names=AXIS_NAMES,
            alignment=alignment,
        )
    )

    stretched_w = w3.expand(b, t, h)  # (B,T,H), stride 0 on the hidden axis
    stretched = tuple(
        i for i, (s0, s1) in enumerate(zip(w3.shape, stretched_w.shape, strict=True)) if s0 != s1
    )
    e_shared = same_memory(stretched_w, w)
    stride_note = ", ".join(
        f"{AXIS_NAMES[i]} axis has stride {stretched_w.stride(i)}" for i in stretched
    )
    steps.append(
        _tensor_step(
            key="expand",
            title="Stretch the size-1 axis (for free)"
            if stretched
            else "Nothing to stretch (H = 1)",
            code=f"att_scores[..., None].expand({b}, {t}, {h})",
            explanation=(
                (
                    f"The size-1 hidden axis is stretched to H = {h}: each word's weight is read "
                    f"{h} times from one memory cell ({stride_note}), {_shape_str(w3)} -> "
                    f"{_shape_str(stretched_w)}. "
                    if stretched
                    else f"H = {h}, so nothing needs stretching: {_shape_str(stretched_w)}. "
                )
                + (
                    "No bytes are copied: the same memory as att_scores. The product does this "
                    "implicitly; expand just makes it visible."
                    if e_shared
                    else "torch made a new tensor here."
                )
            ),
            value=stretched_w,
            axis_names=AXIS_NAMES,
            stretched=stretched,
            view_of="att_scores" if e_shared else None,
            new_bytes=new_bytes(stretched_w, w),
        )
    )

    product = x * w3  # (B,T,H) * (B,T,1) -> (B,T,H)
    steps.append(
        _tensor_step(
            key="product",
            title="Multiply cell by cell",
            code="net_output * att_scores[..., None]",
            explanation=(
                f"{_shape_str(x)} * {_shape_str(w3)} -> {_shape_str(product)}: every hidden number "
                f"of word t is multiplied by that word's weight. This tensor is new memory "
                f"({product.numel()} numbers)."
            ),
            value=product,
            axis_names=AXIS_NAMES,
            new_bytes=new_bytes(product, x, w),
        )
    )

    summed = product.sum(dim=1)  # (B,T,H) -> (B,H)
    steps.append(
        _tensor_step(
            key="sum",
            title="Add up over words",
            code="(net_output * att_scores[..., None]).sum(axis=1)",
            explanation=(
                f".sum(axis=1) adds along axis 1, the word axis: {_shape_str(product)} -> "
                f"{_shape_str(summed)}. The T = {t} weighted word vectors of each sentence become one."
            ),
            value=summed,
            axis_names=(AXIS_NAMES[0], AXIS_NAMES[2]),
            new_bytes=new_bytes(summed, product),
        )
    )

    checks = []
    for method, code in (
        ("einsum", 'torch.einsum("bth,bt->bh", net_output, att_scores)'),
        ("bmm", "torch.bmm(att_scores[:, None, :], net_output)[:, 0, :]"),
    ):
        other = METHODS[method](x, w)  # (B,H)
        checks.append(
            MethodCheck(method, code, other, max_abs_diff(summed, other), close(summed, other))
        )
    agree = all(c.ok for c in checks)
    diffs = ", ".join(f"{c.method} {c.max_abs_diff:.1e}" for c in checks)
    steps.append(
        _tensor_step(
            key="result",
            title="The result, cross-checked",
            code="weighted = (net_output * att_scores[..., None]).sum(axis=1)",
            explanation=(
                f"weighted {_shape_str(summed)}: one vector of H = {h} "
                + ("number" if h == 1 else "numbers")
                + " per sentence. "
                + (
                    "einsum and bmm give exactly the same numbers."
                    if all(c.max_abs_diff == 0 for c in checks)
                    else f"einsum and bmm give the same numbers (largest difference: {diffs})."
                    if agree
                    else f"einsum or bmm disagree (largest difference: {diffs})."
                )
            ),
            value=summed,
            axis_names=(AXIS_NAMES[0], AXIS_NAMES[2]),
            new_bytes=0,
            checks=tuple(checks),
        )
    )
    return steps


def feeding_cells(step: Step, b: int, h: int) -> tuple[tuple[int, ...], ...]:
    """The cells of step.value that feed the result cell weighted[b, h], one per word.

    net_output, expand, product: (b, t, h) for every t; att_scores: (b, t); att_scores[..., None]:
    (b, t, 0); sum and result: (b, h) itself; align: none (it has no values).
    """
    shape = step.shape
    if step.key == "align":
        return ()
    b = check_index("b (the sentence)", "B", b, shape[0], shape)
    if step.key in ("sum", "result"):
        h = check_index("h (the hidden feature)", "H", h, shape[1], shape)
        return ((b, h),)
    if step.key == "att_scores":
        return tuple((b, t) for t in range(shape[1]))
    if step.key == "unsqueeze":
        return tuple((b, t, 0) for t in range(shape[1]))
    h = check_index("h (the hidden feature)", "H", h, shape[2], shape)
    return tuple((b, t, h) for t in range(shape[1]))
