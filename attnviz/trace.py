"""The broadcast, step by step: weighted = (net_output * att_scores[..., None]).sum(axis=1).

Every function here runs torch on the inputs it is given and reports what happened, as data:

- ``broadcast_steps`` -> the story as a list of ``Step`` (code, explanation, shape, value, strides).
- ``align_shapes`` -> the right-aligned comparison of two shapes, axis by axis (``Alignment``).
- ``feeding_cells`` -> the cells of a step that feed one result cell (to follow it through).
- ``provenance`` -> one result cell written out as a sum of products with the actual numbers.
- ``mistakes`` -> the gallery of wrong forms, each run live: torch's error, or the wrong answer.
- ``gradients`` -> the backward pass: the broadcast becomes a sum, checked against autograd.
- ``view_vs_copy`` -> ``expand`` (a stride-0 view, 0 bytes) beside ``repeat`` (a real copy).

Letters are fixed: B sentences, T words, H hidden features. Nothing is hard-coded for 2x3x5: any
small shape works, including the T == H case where a wrong axis goes unnoticed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.aggregation import METHODS, MethodCheck, check_inputs
from attnviz.errors import AttnvizError
from attnviz.examples import AXIS_NAMES
from attnviz.tolerance import close as _close
from attnviz.tolerance import max_abs_diff as _max_abs_diff

#: Outcomes of one axis in ``align_shapes``.
EQUAL, STRETCHED, CLASH = "equal", "stretched", "clash"


def _num(v: float) -> str:
    """A number for a formula: 4 significant digits, negatives in parentheses."""
    s = f"{v:.4g}"
    return f"({s})" if v < 0 else s


def _same_memory(a: Tensor, b: Tensor) -> bool:
    """True when a and b live in the same storage (one is a view of the other)."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _new_bytes(t: Tensor, *sources: Tensor) -> int:
    """Bytes allocated for t: 0 when it shares storage with one of sources (a view)."""
    if any(_same_memory(t, s) for s in sources):
        return 0
    return t.untyped_storage().nbytes()


# --------------------------------------------------------------------------------------------
# Right-aligned shape comparison
# --------------------------------------------------------------------------------------------


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
    n = max(len(a), len(b))
    axes: list[AxisMatch] = []
    for axis in range(-n, 0):
        sa = a[axis] if -axis <= len(a) else None
        sb = b[axis] if -axis <= len(b) else None
        ea, eb = 1 if sa is None else sa, 1 if sb is None else sb
        where = f"axis {axis}"
        if sa is not None and sb is not None and sa == sb:
            axes.append(AxisMatch(axis, sa, sb, EQUAL, None, sa, f"{where}: {sa} = {sb}, kept."))
        elif sa is None or (ea == 1 and sb is not None):
            was = "missing (counts as 1)" if sa is None else "1"
            axes.append(
                AxisMatch(
                    axis,
                    sa,
                    sb,
                    STRETCHED,
                    "a",
                    eb,
                    f"{where}: {name_a} is {was}, stretched to {eb} to meet {name_b}.",
                )
            )
        elif sb is None or eb == 1:
            was = "missing (counts as 1)" if sb is None else "1"
            axes.append(
                AxisMatch(
                    axis,
                    sa,
                    sb,
                    STRETCHED,
                    "b",
                    ea,
                    f"{where}: {name_b} is {was}, stretched to {ea} to meet {name_a}.",
                )
            )
        else:
            axes.append(
                AxisMatch(
                    axis,
                    sa,
                    sb,
                    CLASH,
                    None,
                    None,
                    f"{where}: {sa} meets {sb}; neither is 1, so they clash.",
                )
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
    return Alignment(a, b, name_a, name_b, tuple(axes), result, ok, explanation)


# --------------------------------------------------------------------------------------------
# The story, step by step
# --------------------------------------------------------------------------------------------


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


def _check(net_output: object, att_scores: object) -> None:
    """check_inputs, and every size at least 1: there is nothing to trace in an empty axis."""
    check_inputs(net_output, att_scores)
    shape = tuple(net_output.shape)
    if min(shape) < 1:
        raise AttnvizError(
            f"net_output {shape} and att_scores {tuple(att_scores.shape)} have an empty axis: "
            "B, T and H must each be at least 1 to trace the broadcast."
        )


def _shape_str(t: Tensor | tuple[int, ...]) -> str:
    return str(tuple(t.shape) if isinstance(t, Tensor) else tuple(t))


def broadcast_steps(net_output: Tensor, att_scores: Tensor) -> list[Step]:
    """net_output (B, T, H), att_scores (B, T) -> the story of the one-liner as 8 ordered steps.

    inputs -> att_scores[..., None] (B, T, 1), a view -> right-aligned shape comparison -> the
    stretch to (B, T, H) as expand (stride 0, no bytes) -> the product (B, T, H) -> .sum(axis=1)
    (B, H) -> the result cross-checked with einsum and bmm. Raises AttnvizError on a shape mismatch.
    """
    _check(net_output, att_scores)
    x = net_output.detach()  # (B,T,H)
    w = att_scores.detach()  # (B,T)
    b, t, h = x.shape
    steps: list[Step] = []

    steps.append(
        Step(
            key="net_output",
            title="Input: net_output",
            code="net_output",
            explanation=(
                f"net_output {_shape_str(x)} holds one hidden vector of H = {h} numbers for each of "
                f"the T = {t} words in each of the B = {b} sentences."
            ),
            shape=tuple(x.shape),
            value=x,
            strides=tuple(x.stride()),
            axis_names=AXIS_NAMES,
            new_bytes=0,
        )
    )
    steps.append(
        Step(
            key="att_scores",
            title="Input: att_scores",
            code="att_scores",
            explanation=(
                f"att_scores {_shape_str(w)} holds one weight per word: T = {t} weights for each of "
                f"the B = {b} sentences. It has no hidden axis yet."
            ),
            shape=tuple(w.shape),
            value=w,
            strides=tuple(w.stride()),
            axis_names=AXIS_NAMES[:2],
            new_bytes=0,
        )
    )

    w3 = w[..., None]  # (B,T,1)
    shared = _same_memory(w3, w)
    steps.append(
        Step(
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
            shape=tuple(w3.shape),
            value=w3,
            strides=tuple(w3.stride()),
            axis_names=AXIS_NAMES,
            view_of="att_scores" if shared else None,
            new_bytes=_new_bytes(w3, w),
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
    e_shared = _same_memory(stretched_w, w)
    stride_note = ", ".join(
        f"{AXIS_NAMES[i]} axis has stride {stretched_w.stride(i)}" for i in stretched
    )
    steps.append(
        Step(
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
            shape=tuple(stretched_w.shape),
            value=stretched_w,
            strides=tuple(stretched_w.stride()),
            axis_names=AXIS_NAMES,
            stretched=stretched,
            view_of="att_scores" if e_shared else None,
            new_bytes=_new_bytes(stretched_w, w),
        )
    )

    product = x * w3  # (B,T,H) * (B,T,1) -> (B,T,H)
    steps.append(
        Step(
            key="product",
            title="Multiply cell by cell",
            code="net_output * att_scores[..., None]",
            explanation=(
                f"{_shape_str(x)} * {_shape_str(w3)} -> {_shape_str(product)}: every hidden number "
                f"of word t is multiplied by that word's weight. This tensor is new memory "
                f"({product.numel()} numbers)."
            ),
            shape=tuple(product.shape),
            value=product,
            strides=tuple(product.stride()),
            axis_names=AXIS_NAMES,
            new_bytes=_new_bytes(product, x, w),
        )
    )

    summed = product.sum(dim=1)  # (B,T,H) -> (B,H)
    steps.append(
        Step(
            key="sum",
            title="Add up over words",
            code="(net_output * att_scores[..., None]).sum(axis=1)",
            explanation=(
                f".sum(axis=1) adds along axis 1, the word axis: {_shape_str(product)} -> "
                f"{_shape_str(summed)}. The T = {t} weighted word vectors of each sentence become one."
            ),
            shape=tuple(summed.shape),
            value=summed,
            strides=tuple(summed.stride()),
            axis_names=(AXIS_NAMES[0], AXIS_NAMES[2]),
            new_bytes=_new_bytes(summed, product),
        )
    )

    checks = []
    for method, code in (
        ("einsum", 'torch.einsum("bth,bt->bh", net_output, att_scores)'),
        ("bmm", "torch.bmm(att_scores[:, None, :], net_output)[:, 0, :]"),
    ):
        other = METHODS[method](x, w)  # (B,H)
        checks.append(
            MethodCheck(method, code, other, _max_abs_diff(summed, other), _close(summed, other))
        )
    agree = all(c.ok for c in checks)
    diffs = ", ".join(f"{c.method} {c.max_abs_diff:.1e}" for c in checks)
    steps.append(
        Step(
            key="result",
            title="The result, cross-checked",
            code="weighted = (net_output * att_scores[..., None]).sum(axis=1)",
            explanation=(
                f"weighted {_shape_str(summed)}: one vector of H = {h} numbers per sentence. "
                + (
                    f"einsum and bmm give the same numbers (largest difference: {diffs})."
                    if agree
                    else f"einsum or bmm disagree (largest difference: {diffs})."
                )
            ),
            shape=tuple(summed.shape),
            value=summed,
            strides=tuple(summed.stride()),
            axis_names=(AXIS_NAMES[0], AXIS_NAMES[2]),
            new_bytes=0,
            checks=tuple(checks),
        )
    )
    return steps


# --------------------------------------------------------------------------------------------
# Provenance of one result cell
# --------------------------------------------------------------------------------------------


def feeding_cells(step: Step, b: int, h: int) -> tuple[tuple[int, ...], ...]:
    """The cells of step.value that feed the result cell weighted[b, h], one per word.

    net_output, expand, product: (b, t, h) for every t; att_scores: (b, t); att_scores[..., None]:
    (b, t, 0); sum and result: (b, h) itself; align: none (it has no values).
    """
    shape = step.shape
    if step.key == "align":
        return ()
    b = _check_index("b (the sentence)", "B", b, shape[0], shape)
    if step.key in ("sum", "result"):
        h = _check_index("h (the hidden feature)", "H", h, shape[1], shape)
        return ((b, h),)
    if step.key == "att_scores":
        return tuple((b, t) for t in range(shape[1]))
    if step.key == "unsqueeze":
        return tuple((b, t, 0) for t in range(shape[1]))
    h = _check_index("h (the hidden feature)", "H", h, shape[2], shape)
    return tuple((b, t, h) for t in range(shape[1]))


# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One term att_scores[b, t] * net_output[b, t, h] of a result cell."""

    t: int
    weight: float
    value: float
    product: float


@dataclass(frozen=True)
class Provenance:
    """weighted[b, h] = sum_t att_scores[b, t] * net_output[b, t, h], with the actual numbers.

    terms: one per word t. total: the sum of the products (float64). result: the cell as the
    one-liner computes it (in the input dtype). formula: the symbolic form; equation: the same with
    the numbers written out.
    """

    b: int
    h: int
    terms: tuple[Term, ...]
    total: float
    result: float
    formula: str
    equation: str


def _check_index(name: str, letter: str, value: object, size: int, shape: tuple) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < size:
        raise AttnvizError(
            f"{name} must be a whole number from 0 to {letter}-1 = {size - 1} for shape "
            f"{shape}; got {value!r}."
        )
    return value


def provenance(net_output: Tensor, att_scores: Tensor, b: int, h: int) -> Provenance:
    """net_output (B, T, H), att_scores (B, T), a cell (b, h) of weighted (B, H) -> its Provenance."""
    _check(net_output, att_scores)
    shape = tuple(net_output.shape)
    b = _check_index("b (the sentence)", "B", b, shape[0], shape)
    h = _check_index("h (the hidden feature)", "H", h, shape[2], shape)
    w = att_scores.detach()[b].to("cpu", torch.float64)  # (T,)
    x = net_output.detach()[b, :, h].to("cpu", torch.float64)  # (T,)
    products = w * x  # (T,)
    terms = tuple(Term(t, float(w[t]), float(x[t]), float(products[t])) for t in range(shape[1]))
    total = float(products.sum())
    result = float((net_output.detach() * att_scores.detach()[..., None]).sum(dim=1)[b, h])
    formula = f"weighted[{b}, {h}] = Σ_t att_scores[{b}, t] · net_output[{b}, t, {h}]"
    sum_text = " + ".join(f"{_num(term.weight)} · {_num(term.value)}" for term in terms)
    equation = f"weighted[{b}, {h}] = {sum_text} = {_num(total)}"
    return Provenance(b, h, terms, total, result, formula, equation)


# --------------------------------------------------------------------------------------------
# Mistakes gallery
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mistake:
    """One form of the one-liner, run live on some inputs.

    code: the form. error: torch's message when it raised, None when it ran. correct: it ran and
    gave the right shape and numbers. silent: it ran without any error, gave the right shape, but
    wrong numbers -- the dangerous case. value: what it gave (None on an error); expected: the right
    answer on the same inputs, from expected_code. input_shape: (B, T, H) of the inputs it ran on.
    axis_names: the names of value's axes (e.g. sentence, hidden) when it runs.
    variant: True for the T == H variant built from the current inputs (see ``mistakes``), with
    variant_note saying how it was built.
    """

    key: str
    title: str
    code: str
    explanation: str
    error: str | None
    correct: bool
    silent: bool
    shape: tuple[int, ...] | None
    expected_shape: tuple[int, ...]
    value: Tensor | None
    expected: Tensor
    expected_code: str
    input_shape: tuple[int, int, int]
    axis_names: tuple[str, ...] = ()
    variant: bool = False
    variant_note: str | None = None

    @property
    def outcome(self) -> str:
        """'right', 'error', 'wrong shape' or 'silently wrong'."""
        if self.error is not None:
            return "error"
        if self.correct:
            return "right"
        return "silently wrong" if self.silent else "wrong shape"


_RIGHT = "(net_output * att_scores[..., None]).sum(axis=1)"
_RIGHT_SOFTMAX = "(net_output * att_scores.softmax(dim=1)[..., None]).sum(axis=1)"


@dataclass(frozen=True)
class _Form:
    key: str
    title: str
    code: str
    run: Callable[[Tensor, Tensor], Tensor]
    expected_code: str
    expected: Callable[[Tensor, Tensor], Tensor]
    why: Callable[[tuple[int, int, int]], str]  # explanation of what goes wrong, from (B,T,H)
    axis_names: tuple[str, ...] = ("sentence", "hidden")  # of the result, when it runs


def _right(x: Tensor, w: Tensor) -> Tensor:
    return (x * w[..., None]).sum(dim=1)  # (B,H)


def _right_softmax(x: Tensor, w: Tensor) -> Tensor:
    return (x * w.softmax(dim=1)[..., None]).sum(dim=1)  # (B,H)


def _align_text(x_shape: tuple, w_shape: tuple, w_name: str) -> str:
    return align_shapes(x_shape, w_shape, name_a="net_output", name_b=w_name).explanation


def _why_no_axis(s: tuple[int, int, int]) -> str:
    b, t, h = s
    text = _align_text(s, (b, t), "att_scores")
    return (
        f"{text} Without [..., None] the T = {t} weights line up with the last axis, the H = {h} "
        "hidden features, instead of the words. Add a trailing axis: att_scores[..., None]."
    )


def _why_middle_axis(s: tuple[int, int, int]) -> str:
    b, t, h = s
    text = _align_text(s, (b, 1, t), "att_scores[:, None]")
    return (
        f"{text} [:, None] puts the new axis in the middle, (B, 1, T): the T weights face the "
        f"hidden axis. When T == H it runs anyway and weights hidden feature k by word k's "
        "weight -- wrong numbers, no error. The new axis belongs at the end: [..., None]."
    )


def _why_unsqueeze0(s: tuple[int, int, int]) -> str:
    b, t, h = s
    text = _align_text(s, (1, b, t), "att_scores.unsqueeze(0)")
    return (
        f"{text} unsqueeze(0) adds the axis at the front, (1, B, T), so the weights face the "
        "wrong axes. Use unsqueeze(-1) (the same as [..., None])."
    )


def _why_sum0(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"axis 0 is the sentence axis: this adds the B = {b} sentences together and gives "
        f"(T, H) = {(t, h)} instead of (B, H) = {(b, h)}. Sum over the words: axis=1."
    )


def _why_sum2(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"axis 2 is the hidden axis: this adds up each word's features and gives (B, T) = "
        f"{(b, t)} instead of (B, H) = {(b, h)}. When T == H the shape looks right but the "
        "numbers are not. Sum over the words: axis=1."
    )


def _why_softmax0(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"softmax(dim=0) normalises each word across the B = {b} sentences, so a sentence's "
        f"weights no longer sum to 1. The shape is right, so nothing complains. Softmax over "
        "the words: dim=1."
    )


def _why_keepdim(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"keepdim=True leaves the summed word axis in place as size 1: (B, 1, H) = {(b, 1, h)} "
        f"instead of (B, H) = {(b, h)}. The numbers are right, the shape is not; drop keepdim."
    )


def _why_right(s: tuple[int, int, int]) -> str:
    b, t, h = s
    return (
        f"(B, T, H) {s} * (B, T, 1) {(b, t, 1)} broadcasts to {s}; .sum(axis=1) adds over the "
        f"words and gives (B, H) = {(b, h)}."
    )


_FORMS = (
    _Form("right", "The right form", _RIGHT, _right, _RIGHT, _right, _why_right),
    _Form(
        "no_new_axis",
        "Forgot the new axis",
        "(net_output * att_scores).sum(axis=1)",
        lambda x, w: (x * w).sum(dim=1),
        _RIGHT,
        _right,
        _why_no_axis,
    ),
    _Form(
        "middle_axis",
        "New axis in the wrong place",
        "(net_output * att_scores[:, None]).sum(axis=1)",
        lambda x, w: (x * w[:, None]).sum(dim=1),
        _RIGHT,
        _right,
        _why_middle_axis,
    ),
    _Form(
        "unsqueeze_front",
        "unsqueeze at the front",
        "(net_output * att_scores.unsqueeze(0)).sum(axis=1)",
        lambda x, w: (x * w.unsqueeze(0)).sum(dim=1),
        _RIGHT,
        _right,
        _why_unsqueeze0,
    ),
    _Form(
        "sum_sentences",
        "Summed over sentences",
        "(net_output * att_scores[..., None]).sum(axis=0)",
        lambda x, w: (x * w[..., None]).sum(dim=0),
        _RIGHT,
        _right,
        _why_sum0,
        ("word", "hidden"),
    ),
    _Form(
        "sum_hidden",
        "Summed over hidden features",
        "(net_output * att_scores[..., None]).sum(axis=2)",
        lambda x, w: (x * w[..., None]).sum(dim=2),
        _RIGHT,
        _right,
        _why_sum2,
        ("sentence", "word"),
    ),
    _Form(
        "softmax_wrong_axis",
        "Softmax over the wrong axis",
        "(net_output * att_scores.softmax(dim=0)[..., None]).sum(axis=1)",
        lambda x, w: (x * w.softmax(dim=0)[..., None]).sum(dim=1),
        _RIGHT_SOFTMAX,
        _right_softmax,
        _why_softmax0,
    ),
    _Form(
        "keepdim",
        "keepdim left on",
        "(net_output * att_scores[..., None]).sum(axis=1, keepdim=True)",
        lambda x, w: (x * w[..., None]).sum(dim=1, keepdim=True),
        _RIGHT,
        _right,
        _why_keepdim,
        ("sentence", "word", "hidden"),
    ),
)


def variant_words(shape: tuple[int, int, int]) -> str:
    """How the T == H variant of inputs with T != H is made (see ``square_variant``), in plain
    words: shape is the original (B, T, H)."""
    b, t, h = shape
    if h > t:
        how = f"keeps only the first {t} of its {h} hidden features"
    else:
        how = f"reuses its {h} hidden features, from the first one again, until there are {t}"
    return (
        f"This trap needs T == H, and this example has T = {t} words but H = {h} hidden features, "
        f"so the form ran on a copy of net_output that {how}: {(b, t, t)}; att_scores stays as it is."
    )


def square_variant(net_output: Tensor, att_scores: Tensor) -> tuple[Tensor, Tensor]:
    """net_output (B, T, H), att_scores (B, T) -> (B, T, T), (B, T): the same numbers with H = T.

    Hidden feature k of the variant is feature k mod H of net_output: the first T features when
    H >= T, cycled when H < T. att_scores is returned unchanged.
    """
    _check(net_output, att_scores)
    t, h = net_output.shape[1], net_output.shape[2]
    idx = torch.arange(t, device=net_output.device) % h  # (T,)
    return net_output[..., idx], att_scores  # (B,T,T), (B,T)


def _run(form: _Form, x: Tensor, w: Tensor, *, variant_of: tuple[int, int, int] | None) -> Mistake:
    """Run one form on x (B, T, H), w (B, T); variant_of: the original shape when x is the T == H
    variant of it."""
    variant = variant_of is not None
    b, t, h = (int(s) for s in x.shape)
    expected = form.expected(x, w)  # (B,H)
    try:
        value: Tensor | None = form.run(x, w)
        error = None
    except RuntimeError as exc:  # torch's own message is the point
        value, error = None, str(exc).strip()
    shape = None if value is None else tuple(value.shape)
    correct = value is not None and _close(value, expected)
    silent = value is not None and not correct and shape == tuple(expected.shape)
    return Mistake(
        key=form.key,
        title=form.title + (" (T == H)" if variant else ""),
        code=form.code,
        explanation=(
            "With these sizes it happens to give the right answer, by luck: " + form.why((b, t, h))
            if correct and form.key != "right"
            else form.why((b, t, h))
        ),
        error=error,
        correct=correct,
        silent=silent,
        shape=shape,
        expected_shape=tuple(expected.shape),
        value=value,
        expected=expected,
        expected_code=form.expected_code,
        input_shape=(b, t, h),
        axis_names=form.axis_names,
        variant=variant,
        variant_note=variant_words(variant_of) if variant_of is not None else None,
    )


def mistakes(net_output: Tensor, att_scores: Tensor) -> list[Mistake]:
    """net_output (B, T, H), att_scores (B, T) -> the gallery of forms, each run live by torch.

    The right form comes first, then each wrong one. When T != H, a wrong form that is not already
    silently wrong here but would be with T == H is followed by its T == H variant (``variant=True``), run on
    ``square_variant(net_output, att_scores)``: so the silent trap is always in the gallery, beside
    the current inputs' own outcome and the right answer (``expected``).
    """
    _check(net_output, att_scores)
    x, w = net_output.detach(), att_scores.detach()
    t, h = x.shape[1], x.shape[2]
    square = square_variant(x, w) if t != h else None
    out: list[Mistake] = []
    for form in _FORMS:
        own = _run(form, x, w, variant_of=None)
        out.append(own)
        if square is not None and form.key != "right" and not own.silent:
            v = _run(form, *square, variant_of=tuple(x.shape))
            if v.silent:
                out.append(v)
    return out


# --------------------------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gradients:
    """The backward pass through weighted = (net_output * att_scores[..., None]).sum(axis=1).

    upstream (B, H): d(loss)/d(weighted) (all ones: loss = weighted.sum(), unless given).
    att_scores (B, T) autograd's gradient; att_scores_formula (B, T) = Σ_h net_output · upstream:
    the stretch of the forward pass becomes a sum over the hidden axis.
    net_output (B, T, H) autograd's gradient; net_output_formula (B, T, H) =
    att_scores[..., None] · upstream[:, None, :]: the sum over words becomes a stretch over words.
    *_max_abs_diff / *_ok compare autograd with the formula.
    """

    weighted: Tensor
    upstream: Tensor
    att_scores: Tensor
    att_scores_formula: Tensor
    att_scores_code: str
    att_scores_max_abs_diff: float
    att_scores_ok: bool
    net_output: Tensor
    net_output_formula: Tensor
    net_output_code: str
    net_output_max_abs_diff: float
    net_output_ok: bool
    explanation: str


def gradients(net_output: Tensor, att_scores: Tensor, upstream: Tensor | None = None) -> Gradients:
    """net_output (B, T, H), att_scores (B, T), upstream (B, H) or None -> Gradients.

    Runs autograd on copies of the inputs (they are not modified) and checks it against the
    formulas. upstream defaults to ones, i.e. loss = weighted.sum().
    """
    _check(net_output, att_scores)
    b, t, h = net_output.shape
    x = net_output.detach().clone().requires_grad_(True)  # (B,T,H)
    w = att_scores.detach().clone().requires_grad_(True)  # (B,T)
    weighted = (x * w[..., None]).sum(dim=1)  # (B,H)
    if upstream is None:
        g = torch.ones_like(weighted)  # (B,H)
    else:
        if not isinstance(upstream, Tensor) or tuple(upstream.shape) != (b, h):
            got = tuple(upstream.shape) if isinstance(upstream, Tensor) else type(upstream).__name__
            raise AttnvizError(
                f"upstream must have the shape of weighted, (B, H) = {(b, h)} for net_output "
                f"{tuple(net_output.shape)}; got {got}."
            )
        g = upstream.detach().to(weighted.device, weighted.dtype)  # (B,H)
    grad_x, grad_w = torch.autograd.grad(weighted, (x, w), grad_outputs=g)
    xd, wd = net_output.detach(), att_scores.detach()
    formula_w = (xd * g[:, None, :]).sum(dim=2)  # (B,T,H) * (B,1,H) -> sum over H -> (B,T)
    formula_x = wd[..., None] * g[:, None, :]  # (B,T,1) * (B,1,H) -> (B,T,H)
    explanation = (
        "Backward swaps the roles: the forward pass stretched each weight across the H = "
        f"{h} hidden features, so its gradient adds the H contributions back up, Σ_h net_output · "
        f"upstream -> (B, T) = {(b, t)}. The forward sum over the T = {t} words becomes a "
        "stretch: every word of a sentence receives the same upstream vector, scaled by its weight "
        f"-> (B, T, H) = {(b, t, h)}."
    )
    return Gradients(
        weighted=weighted.detach(),
        upstream=g,
        att_scores=grad_w,
        att_scores_formula=formula_w,
        att_scores_code="(net_output * upstream[:, None, :]).sum(axis=2)",
        att_scores_max_abs_diff=_max_abs_diff(grad_w, formula_w),
        att_scores_ok=_close(grad_w, formula_w),
        net_output=grad_x,
        net_output_formula=formula_x,
        net_output_code="att_scores[..., None] * upstream[:, None, :]",
        net_output_max_abs_diff=_max_abs_diff(grad_x, formula_x),
        net_output_ok=_close(grad_x, formula_x),
        explanation=explanation,
    )


# --------------------------------------------------------------------------------------------
# View vs copy
# --------------------------------------------------------------------------------------------


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
    same = _same_memory(t, source)
    storage = t.untyped_storage()
    return Layout(
        code=code,
        shape=tuple(t.shape),
        strides=tuple(t.stride()),
        data_ptr=t.data_ptr(),
        same_memory=same,
        new_bytes=0 if same else storage.nbytes(),
        storage_numbers=storage.nbytes() // t.element_size(),
        value=t,
    )


def view_vs_copy(att_scores: Tensor, h: int) -> ViewCopy:
    """att_scores (B, T), h = H -> ViewCopy of expand(B, T, H) (stride 0) vs repeat(1, 1, H)."""
    if not isinstance(att_scores, Tensor) or att_scores.ndim != 2:
        got = (
            tuple(att_scores.shape) if isinstance(att_scores, Tensor) else type(att_scores).__name__
        )
        raise AttnvizError(
            f"att_scores must be a (B, T) tensor, one weight per word; got {got}. "
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
