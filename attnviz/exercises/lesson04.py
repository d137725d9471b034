"""Lesson 04's checkers: where the scores come from. The score of each word (``keys @ v``) and the
masked softmax that turns scores into ``att_scores``; the pooling itself is lesson 02's
``check_weighted_sum``. Each exercise is a registry of known mistakes computed on the same inputs
as the student's function; the engine (``attnviz.exercises.engine``) does the rest."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnviz.exercises.answer_key import reference
from attnviz.exercises.cases import distinct_sizes, rng_and_generator
from attnviz.exercises.engine import COMMON, Case, Entry, Exercise, judge_tensor, run
from attnviz.exercises.result import CheckResult

# --------------------------------------------------------------------------------------------
# Exercise 1: the score of every word


@reference
def _scores(keys: Tensor, v: Tensor) -> Tensor:
    return keys @ v  # (B, T, H) @ (H,) -> (B, T)


SCORES: dict[str, Entry] = {
    "kept_axis": Entry(
        "kept a trailing axis of size 1 (B, T, 1)",
        "Against the column `v[:, None]` (H, 1) the product is (B, T, 1): one score per word, but "
        "in a column. The scores are (B, T): use v as the vector it is, or drop the last axis.",
        lambda k, v: k @ v[:, None],
        flat=True,
    ),
    "no_sum": Entry(
        "multiplied without adding up (B, T, H)",
        "`keys * v` scales every hidden feature; a score adds those products up over the hidden "
        "axis, so each word gets one number.",
        lambda k, v: k * v,
    ),
    "summed_words": Entry(
        "added up over the words instead of the hidden features",
        "The sum of a score runs over H, the last axis of keys (the one v lines up with). Summing "
        "over the words gives one number per hidden feature: (B, H), which looks right when T == H.",
        lambda k, v: (k * v).sum(dim=1),
    ),
    "v_on_words": Entry(
        "lined v up with the word axis (v[:, None])",
        "`v[:, None]` is (H, 1): against (B, T, H) it meets the word axis, which only runs when "
        "T == H, and then multiplies word t by v[t]. v belongs to the hidden axis, the last one.",
        lambda k, v: (k * v[:, None]).sum(dim=-1),
    ),
}

_SCORES = Exercise("scores", "keys, v", COMMON | SCORES, judge_tensor, no_loop=True)


def _kv(gen: torch.Generator, b: int, t: int, h: int, dtype=torch.float32):
    keys = torch.randn(b, t, h, generator=gen, dtype=torch.float64).to(dtype)  # (B, T, H)
    v = torch.randn(h, generator=gen, dtype=torch.float64).to(dtype)  # (H,)
    return keys, v


def _score_case(label: str, keys: Tensor, v: Tensor) -> Case:
    b, t, h = keys.shape
    sizes = {"B": b, "T": t, "H": h}
    return Case(label, (keys, v), ("keys", "v"), sizes=sizes, answer=_scores)


def check_scores(fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None) -> CheckResult:
    """Check fn(keys (B, T, H), v (H,)) -> scores (B, T): scores[b, t] = sum over h of
    keys[b, t, h] * v[h]. No Python loop; dtype, device and gradient kept. Fresh inputs on every
    call (seed= repeats one): B, T, H all different, T == H, B = 1, T = 1, float64, and grad."""
    rng, gen = rng_and_generator(seed)
    b, t, h = distinct_sizes(rng, 3, 2, 7)
    cases = [_score_case("B, T, H all different", *_kv(gen, b, t, h))]
    t = rng.choice([3, 4, 5])
    cases.append(_score_case("the T == H trap", *_kv(gen, 2, t, t)))
    cases.append(_score_case("B = 1", *_kv(gen, 1, rng.choice([3, 4]), rng.choice([5, 6]))))
    cases.append(_score_case("T = 1", *_kv(gen, 3, 1, 4)))
    b, t, h = distinct_sizes(rng, 3, 2, 7)
    cases.append(_score_case("float64 inputs", *_kv(gen, b, t, h, torch.float64)))
    b, t, h = distinct_sizes(rng, 3, 2, 7)
    keys, v = _kv(gen, b, t, h)
    cases.append(_score_case("inputs that require grad", keys.requires_grad_(), v.requires_grad_()))
    return run(_SCORES, fn, cases)


# --------------------------------------------------------------------------------------------
# Exercise 2: the masked softmax


@reference
def _masked_softmax(s: Tensor, m: Tensor) -> Tensor:
    return s.masked_fill(~m, float("-inf")).softmax(dim=1).nan_to_num(0.0)  # (B, T)


MASKED_SOFTMAX: dict[str, Entry] = {
    "no_mask": Entry(
        "left the mask out",
        "Padding is not a word: it must get weight 0, and the real words share all of the weight.",
        lambda s, m: s.softmax(dim=1),
    ),
    "zero_scores": Entry(
        "gave the padded words a score of 0",
        "A score of 0 is not 'no weight': exp(0) = 1, so padding still takes a share. What gives "
        "weight 0 after a softmax is a score of -inf (exp(-inf) = 0).",
        (lambda s, m: (s * m).softmax(dim=1), lambda s, m: s.masked_fill(~m, 0).softmax(dim=1)),
    ),
    "masked_after": Entry(
        "zeroed the padding after the softmax",
        "Zeroing afterwards leaves the real words' weights summing to less than 1: mask the "
        "scores before the softmax, so the real words share all of it.",
        lambda s, m: s.softmax(dim=1) * m,
    ),
    "wrong_axis": Entry(
        "took the softmax over the sentences (dim=0)",
        "The weights of one sentence share out over its words: the softmax runs along the word "
        "axis, the last one here.",
        lambda s, m: s.masked_fill(~m, float("-inf")).softmax(dim=0).nan_to_num(0.0),
    ),
    "nan_for_padding_only": Entry(
        "gave NaN for a sentence that is all padding",
        "A softmax over nothing but -inf is 0/0 = NaN. A sentence with no real word should get "
        "all zeros: replace the NaN (e.g. `torch.nan_to_num`) or guard that case.",
        lambda s, m: s.masked_fill(~m, float("-inf")).softmax(dim=1),
    ),
}

_MASKED_SOFTMAX = Exercise(
    "masked_softmax", "scores, mask", COMMON | MASKED_SOFTMAX, judge_tensor, no_loop=True
)


def _sm_case(label: str, gen: torch.Generator, b: int, t: int, *, dtype=torch.float32, **kw):
    s = torch.randn(b, t, generator=gen, dtype=torch.float64).mul(2).to(dtype)  # (B, T)
    m = torch.rand(b, t, generator=gen) < 0.7  # (B, T)
    m[:, 0] = True  # every sentence has a real word ...
    if t > 1:
        m[0, -1] = False  # ... and sentence 0 some padding
    if kw.get("empty") and b > 1:
        m[-1] = False  # a sentence that is all padding
    if kw.get("grad"):
        s.requires_grad_()
    return Case(label, (s, m), ("scores", "mask"), sizes={"B": b, "T": t}, answer=_masked_softmax)


def check_masked_softmax(
    fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(scores (B, T), mask (B, T) bool) -> att_scores (B, T): a softmax over the real
    words of each sentence (mask True), 0 on padding, all zeros for a sentence with no real word.
    No Python loop; dtype, device and gradient kept. Fresh inputs on every call."""
    rng, gen = rng_and_generator(seed)
    b, t = distinct_sizes(rng, 2, 3, 7)
    cases = [_sm_case("B and T different", gen, b, t)]
    cases.append(_sm_case("a sentence that is all padding", gen, 3, rng.choice([4, 5]), empty=True))
    cases.append(_sm_case("B = 1", gen, 1, rng.choice([3, 5])))
    cases.append(_sm_case("T = 1", gen, 4, 1))
    b, t = distinct_sizes(rng, 2, 2, 6)
    cases.append(_sm_case("float64 scores", gen, b, t, dtype=torch.float64))
    b, t = distinct_sizes(rng, 2, 2, 6)
    cases.append(_sm_case("scores that require grad", gen, b, t, grad=True))
    return run(_MASKED_SOFTMAX, fn, cases)
