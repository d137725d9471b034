"""Lesson 01's checkers: the broadcasting rule itself, a new axis, and expand (a view)."""

from __future__ import annotations

from collections.abc import Callable
from random import Random

import torch
from torch import Tensor

from attnviz import examples
from attnviz.exercises.answer_key import reference
from attnviz.exercises.cases import distinct_sizes, fresh_seed, rng_and_generator
from attnviz.exercises.engine import COMMON, Case, Entry, Exercise, Kind, Outcome, judge_tensor, run
from attnviz.exercises.explain import student_line
from attnviz.exercises.result import CheckResult

# --------------------------------------------------------------------------------------------
# Exercises 2 and 3: a new axis, and expand


def _bt_inputs(seed: int | None) -> tuple[list[tuple[str, Tensor]], Random]:
    rng, gen = rng_and_generator(seed)
    out = [("the classic att_scores", examples.classic()[1])]
    b, t = distinct_sizes(rng, 2, 3, 7)
    out.append(("B and T different", torch.rand(b, t, generator=gen)))
    n = rng.choice([3, 4, 5])
    out.append(
        ("B == T (a square, where a transpose goes unnoticed)", torch.rand(n, n, generator=gen))
    )
    out.append(("B = 1", torch.rand(1, rng.randint(2, 6), generator=gen)))
    out.append(("T = 1", torch.rand(rng.randint(2, 6), 1, generator=gen)))
    b, t = distinct_sizes(rng, 2, 2, 6)
    out.append(("float64", torch.rand(b, t, generator=gen, dtype=torch.float64)))
    return out, rng


ADD_AXIS: dict[str, Entry] = {
    "axis_in_front": Entry(
        "added the new axis in front",
        "`None` (or `unsqueeze`) puts the new size-1 axis exactly where you write it; it should "
        "come last, after B and T.",
        lambda w: w[None],
    ),
    "axis_in_middle": Entry(
        "added the new axis in the middle",
        "Your shape is (B, 1, T): the new size-1 axis sits between B and T. It should come last.",
        lambda w: w[:, None],
    ),
    "two_axes": Entry(
        "added two axes",
        "One new axis of size 1 is enough: (B, T) → (B, T, 1).",
        lambda w: w[..., None, None],
    ),
    "unchanged": Entry(
        "returned att_scores unchanged",
        "The result should have one more axis than the input, of size 1, at the end.",
        lambda w: w,
    ),
    "flattened": Entry(
        "flattened the weights into one column",
        "reshape(-1, 1) mixes B and T into one axis of B·T numbers; keep B and T as they are.",
        lambda w: w.reshape(-1, 1),
    ),
    "transposed": Entry(
        "transposed the weights",
        "The shape fits only because B == T here: B and T swapped places. Keep their order.",
        lambda w: w.T[..., None],
    ),
}


@reference
def _add_axis(w: Tensor) -> Tensor:
    return w[..., None]  # (B,T) -> (B,T,1)


@reference
def _expand(w: Tensor, h: int) -> Tensor:
    return w[..., None].expand(*w.shape, h)  # (B,T) -> (B,T,1) -> (B,T,H), a view


def _note_copy(o: Outcome) -> Outcome:
    o = judge_tensor(o)
    w, out = o.case.args[0], o.output
    if o.ok and out.untyped_storage().data_ptr() != w.untyped_storage().data_ptr():
        o.note = (
            "Note: your result is a copy. Adding an axis with `None` or `unsqueeze` gives a view "
            "that shares att_scores' memory and costs nothing."
        )
    return o


_ADD_AXIS = Exercise("add_axis", "att_scores", COMMON | ADD_AXIS, _note_copy)


def check_add_axis(fn: Callable[[Tensor], Tensor], *, seed: int | None = None) -> CheckResult:
    """Check fn(att_scores (B, T)) -> (B, T, 1), the same numbers with a trailing axis of size 1."""
    raw, _ = _bt_inputs(seed)
    cases = [
        Case(
            label, (w,), ("att_scores",), sizes={"B": w.shape[0], "T": w.shape[1]}, answer=_add_axis
        )
        for label, w in raw
    ]
    return run(_ADD_AXIS, fn, cases)


def _judge_expand(o: Outcome) -> Outcome:
    o = judge_tensor(o)
    if not o.ok:
        return o
    w, h = o.case.args
    out = o.output
    shares = out.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
    if not shares or (h > 1 and out.stride(-1) != 0):
        o.ok, o.kind = False, Kind.COPY
        o.detail = (
            f"the numbers are right, but your result is a copy: it stores {out.numel()} numbers "
            f"where a view would store {w.numel()}."
        )
    return o


EXPAND: dict[str, Entry] = {
    "copied": Entry(
        "made a copy (with `repeat`, `.contiguous()`, `torch.cat` or a multiplication)",
        "`repeat` writes every number H times into new memory; a view gives the new axis stride "
        "0 and copies nothing. Check with `.stride()` and `.untyped_storage().data_ptr()`.",
    ),
    "expanded_wrong_axis": Entry(
        "stretched the weights along the wrong axis",
        "Your result is (B, H, T): the new axis went in the middle. The words must stay on the "
        "word axis, repeated along a new, last axis of size H.",
        lambda w, h: w[:, None, :].expand(w.shape[0], h, w.shape[1]),
    ),
    "expand_without_axis": Entry(
        "asked `expand` to stretch an axis that is not of size 1",
        "`expand` aligns shapes from the right and only stretches axes of size 1. Give "
        "att_scores its trailing size-1 axis first.",
        lambda w, h: w.expand(w.shape[0], w.shape[1], h),
    ),
}

_EXPAND = Exercise("expand_weights", "att_scores, h", COMMON | EXPAND, _judge_expand)


def check_expand_weights(
    fn: Callable[[Tensor, int], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(att_scores (B, T), h) -> (B, T, H): each weight repeated along hidden, as a VIEW.

    The result must share att_scores' memory with stride 0 along the new axis (what `expand`
    gives); a copy (what `repeat` gives) has the right numbers but fails, with the reason.
    """
    raw, rng = _bt_inputs(seed)
    cases = []
    for label, w in raw:
        b, t = w.shape
        h = rng.choice([s for s in range(2, 8) if s not in (b, t)])
        if label.startswith("B == T"):
            h = t  # the trap: (B, H, T) has the same shape as (B, T, H)
        sizes = {"B": b, "T": t, "H": h}
        cases.append(Case(label, (w, h), ("att_scores", "h"), sizes=sizes, answer=_expand))
    return run(_EXPAND, fn, cases)


# --------------------------------------------------------------------------------------------
# Exercise 1: the broadcasting rule


@reference
def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The oracle: torch's own rule; None when the shapes do not broadcast."""
    try:
        return tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        return None


def _left_aligned(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    n = max(len(a), len(b))
    a2, b2 = a + (1,) * (n - len(a)), b + (1,) * (n - len(b))
    if any(x != y and 1 not in (x, y) for x, y in zip(a2, b2, strict=True)):
        return None
    return tuple(max(x, y) for x, y in zip(a2, b2, strict=True))


def _astuple(x: object) -> tuple | None:
    try:
        return tuple(x)
    except TypeError:
        return None


def _shape_keys(a: tuple, b: tuple, got: tuple, want: tuple) -> tuple[str, ...]:
    """Which known mistake gives `got` for shapes a and b."""
    padded_a = (1,) * (len(want) - len(a)) + a
    padded_b = (1,) * (len(want) - len(b)) + b
    if got == _left_aligned(a, b):
        return ("left_aligned",)
    if got == tuple(reversed(want)):
        return ("reversed",)
    if len(got) == min(len(a), len(b)):
        return ("dropped_axes",)
    if len(got) == len(want) and all(
        x == min(p, q) for x, p, q in zip(got, padded_a, padded_b, strict=True)
    ):
        return ("took_min",)
    if got == want:
        return ("not_ints",)
    return ()


def _judge_broadcast(o: Outcome) -> Outcome:
    a, b = o.case.args
    want, got, exc = o.case.expected, o.output, o.exc
    pair = f"for {a} and {b} your function"
    o.kind = Kind.WRONG
    if isinstance(exc, ValueError):
        if want is None:
            o.kind, o.ok = Kind.OK, True
        else:
            o.detail = f"{pair} raised ValueError, but these shapes do broadcast."
            o.keys = ("too_strict",) + (("left_aligned",) if _left_aligned(a, b) is None else ())
        return o
    if exc is not None:
        detail = f"{pair} raised `{type(exc).__name__}: {str(exc)[:200]}`."
        where = student_line(exc)
        if want is None:
            o.detail = detail + " These shapes indeed do not broadcast, but say so with "
            o.detail += "`raise ValueError(...)`." + (" " + where if where else "")
            o.keys = ("wrong_exception",)
        else:
            o.kind, o.keys = Kind.EXCEPTION, ("crashed",)
        return o
    if want is None:
        o.detail = (
            f"{pair} returned {got!r}, but these shapes cannot broadcast: it should raise "
            f"ValueError."
        )
        o.keys = ("no_check",) + (("left_aligned",) if _astuple(got) == _left_aligned(a, b) else ())
        return o
    if isinstance(got, list) and tuple(got) == want:
        o.detail = f"{pair} returned a list; return a tuple (e.g. `tuple(result)`)."
        o.keys = ("list",)
        return o
    if not isinstance(got, tuple) or got != want or any(type(v) is not int for v in got):
        o.detail = f"{pair} returned {got!r}, which is not their broadcast shape."
        o.keys = _shape_keys(a, b, tuple(got), want) if isinstance(got, tuple | list) else ()
        return o
    o.kind, o.ok = Kind.OK, True
    return o


BROADCAST: dict[str, Entry] = {
    "left_aligned": Entry(
        "aligned the shapes from the LEFT",
        "Broadcasting aligns them from the right: the last axes meet first, and a shorter shape "
        "gets 1s added on its left.",
    ),
    "reversed": Entry(
        "built the result from the right but forgot to turn it back around at the end", ""
    ),
    "dropped_axes": Entry(
        "stopped at the shorter shape (what `zip` does)",
        "The longer shape's extra axes on the left are kept: treat the missing sizes as 1.",
    ),
    "took_min": Entry(
        "took the smaller size where one of them is 1", "A size-1 axis stretches to the other size."
    ),
    "no_check": Entry(
        "never check whether two sizes fit",
        "They fit only when they are equal or one of them is 1; otherwise raise ValueError.",
    ),
    "too_strict": Entry(
        "made the check too strict",
        "Two sizes fit when they are equal OR one of them is 1, and a missing axis counts as 1.",
    ),
    "wrong_exception": Entry(
        "", "Raise ValueError (with a message naming the sizes) when the shapes do not fit."
    ),
    "list": Entry("", "The numbers are right; return them as a tuple, like `torch.Size`."),
    "not_ints": Entry("", "Return plain ints in the tuple."),
    "crashed": Entry(
        "", "Your function crashed on shapes that do broadcast; print the sizes it compares."
    ),
}

_BROADCAST = Exercise(
    "broadcast_shape", "shape_a, shape_b", BROADCAST, _judge_broadcast, judge_exceptions=True
)


def _broadcast_pairs(rng: Random) -> list[tuple[str, tuple, tuple]]:
    def dims(n: int) -> tuple[int, ...]:
        return tuple(rng.randint(2, 7) for _ in range(n))

    b, t, h = distinct_sizes(rng, 3, 2, 9)
    pairs = [
        ("net_output and att_scores[..., None]", (2, 3, 5), (2, 3, 1)),
        ("net_output and att_scores, no new axis", (2, 3, 5), (2, 3)),
        ("fresh (B, T, H) and (B, T, 1)", (b, t, h), (b, t, 1)),
        ("fresh (B, T, H) and (B, T)", (b, t, h), (b, t)),
        ("a shorter shape on the left", (t, h), (b, t, h)),
        ("size-1 axes on both sides", (b, 1, h), (1, t, 1)),
        ("a scalar, shape ()", (), dims(2)),
        ("the T == H trap, (B, T, T) and (B, T)", (b, t, t), (b, t)),
    ]
    a = dims(3)
    pairs.append(("equal shapes", a, a))
    a = dims(4)
    pairs.append(("a 4-axis shape and its last two axes", a, a[2:]))
    pairs.append(("sizes that differ and are not 1", (b, t), (b, t + 1)))
    return pairs


def check_broadcast_shape(
    fn: Callable[[tuple[int, ...], tuple[int, ...]], tuple[int, ...]], *, seed: int | None = None
) -> CheckResult:
    """Check fn(shape_a, shape_b) -> the broadcast shape (a tuple), raising ValueError if none.

    The rule: align the shapes from the right; two sizes fit when they are equal or one is 1; a
    missing axis counts as 1; the result takes the larger size.
    """
    pairs = _broadcast_pairs(Random(fresh_seed(seed)))
    names = ("shape_a", "shape_b")
    cases = [Case(label, (a, b), names, answer=_broadcast) for label, a, b in pairs]
    return run(_BROADCAST, fn, cases)
