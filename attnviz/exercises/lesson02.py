"""Lesson 02's checkers: the weighted sum (however written), with a softmax, with a mask, and the
gradient of the weights. Each exercise is a registry of known mistakes, computed on the same
inputs as the student's function; the engine does the rest. The wrong forms of the weighted sum
come from the one catalogue, ``attnviz.forms`` (read whenever a checker runs); each exercise adds
its own (a softmax's, a mask's)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import torch
from torch import Tensor

from attnviz import examples, forms, tolerance
from attnviz.exercises.answer_key import reference
from attnviz.exercises.cases import distinct_sizes, rng_and_generator
from attnviz.exercises.engine import (
    COMMON,
    Case,
    Entry,
    Exercise,
    Kind,
    Outcome,
    judge_tensor,
    lift,
    run,
)
from attnviz.exercises.result import CheckResult

# --------------------------------------------------------------------------------------------
# Cases


def _xw(gen: torch.Generator, b: int, t: int, h: int, *, dtype=torch.float32, raw: bool = False):
    x = torch.randn(b, t, h, generator=gen, dtype=torch.float64)  # (B,T,H)
    s = torch.randn(b, t, generator=gen, dtype=torch.float64)  # (B,T)
    e = (s - s.amax(dim=1, keepdim=True)).exp()  # (B,T), a softmax over words, by hand
    w = s * 2 if raw else e / e.sum(dim=1, keepdim=True)  # (B,T)
    return x.to(dtype), w.to(dtype)


def _weighted_inputs(seed: int | None, *, grad: bool = True):
    """(label, x, w) for the standard set of shapes, fresh values each call; the last case's
    inputs require grad (the result must keep its gradient)."""
    rng, gen = rng_and_generator(seed)
    out = [("the classic example", *examples.classic())]
    out.append(("the classic shape with fresh random values", *_xw(gen, 2, 3, 5)))
    b, t, h = distinct_sizes(rng, 3, 3, 7)
    while b == 2:
        b, t, h = distinct_sizes(rng, 3, 3, 7)
    out.append(("B, T, H all different", *_xw(gen, b, t, h)))
    # B = 2 also meets T != 3 and T = 3 also meets B != 2, so a hard-coded size is pinned down
    t = rng.choice([4, 6])
    out.append(("the T == H trap", *_xw(gen, 2, t, t)))
    out.append(("B = 1", *_xw(gen, 1, 3, rng.choice([2, 4, 5, 6]))))
    t = rng.choice([3, 4, 5])
    out.append(("B = 1 with T == H", *_xw(gen, 1, t, t)))
    b, h = distinct_sizes(rng, 2, 3, 6)
    out.append(("T = 1", *_xw(gen, b, 1, h)))
    b, t, h = distinct_sizes(rng, 3, 2, 7, avoid=(2,))
    out.append(
        (
            "float64 inputs with weights that do not sum to 1",
            *_xw(gen, b, t, h, dtype=torch.float64, raw=True),
        )
    )
    if torch.cuda.is_available():  # where there is a GPU, the device is checked too
        b, t, h = distinct_sizes(rng, 3, 2, 7)
        out.append(("inputs on the GPU", *(a.cuda() for a in _xw(gen, b, t, h))))
    if grad:  # sizes other than 2 (with the float64 case, this pins a hard-coded size down)
        b, t, h = distinct_sizes(rng, 3, 3, 8)
        x, w = _xw(gen, b, t, h)
        out.append(("inputs that require grad", x.requires_grad_(), w.requires_grad_()))
    return out, rng, gen


def _sizes_of(x: Tensor) -> dict[str, int]:
    b, t, h = x.shape
    return {"B": b, "T": t, "H": h}


def _case(label: str, args: tuple, names: tuple, oracle: Callable[..., Tensor]) -> Case:
    return Case(label, args, names, sizes=_sizes_of(args[0]), answer=oracle)


@reference
def _ws(x: Tensor, w: Tensor) -> Tensor:
    return (x * w[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


# --------------------------------------------------------------------------------------------
# The catalogue's forms (attnviz.forms), as each exercise's registry


def _on(run: forms.Run, make: Callable[..., forms.Inputs]) -> Callable[..., Tensor]:
    """run, called with an exercise's own arguments: make(*args) builds the Inputs it reads."""
    return lambda *args: run(make(*args))


def catalogue(setting: forms.Setting, make: Callable[..., forms.Inputs]) -> dict[str, Entry]:
    """The catalogue's forms that the lessons recognise in setting, as entries computed from an
    exercise's arguments (make(*args) -> Inputs), in the catalogue's order."""
    return {
        key: Entry(f.lesson.title, f.lesson.hint, tuple(_on(r, make) for r in f.runs))
        for key, f in forms.FORMS.items()
        if f.lesson is not None and f.lesson.setting is setting
    }


def weighted() -> dict[str, Entry]:
    """The weighted sum's known mistakes (net_output, att_scores), from the catalogue as it is now."""
    found = catalogue(forms.Setting.WEIGHTS, forms.Inputs.of_weights)
    return {k: e for k, e in found.items() if forms.FORMS[k].when(None, False)}


def lifted(normalize: str | None, masked: bool) -> dict[str, Entry]:
    """``weighted()``'s forms that are mistakes where the weights come from a softmax (normalize)
    or a mask (masked); the exercise lifts them onto the weights it applies."""
    return {k: e for k, e in weighted().items() if forms.FORMS[k].when(normalize, masked)}


class Mistakes(Mapping[str, Entry]):
    """An exercise's registry, built by build() from the catalogue whenever the catalogue changed:
    a form registered in ``attnviz.forms`` is recognised by the next check."""

    def __init__(self, build: Callable[[], dict[str, Entry]]) -> None:
        self._build = build
        self._seen: tuple[tuple[str, forms.Form], ...] = ()
        self._entries: dict[str, Entry] = {}

    def _now(self) -> dict[str, Entry]:
        seen = tuple(forms.FORMS.items())
        if seen != self._seen or not self._entries:
            self._seen, self._entries = seen, self._build()
        return self._entries

    def __getitem__(self, key: str) -> Entry:
        return self._now()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())


# --------------------------------------------------------------------------------------------
# Exercise 1-3: the weighted sum


def divided_by_a_sum(o: Outcome, sums: tuple[Tensor, ...], words: Tensor) -> bool:
    """The wrong result is the answer divided, sentence by sentence, by one of sums (B,), however
    the division was guarded against a zero (or negative) sum: checked on the sentences whose sum
    is clearly positive, at least one of them with two words or more (words (B,) counts them: one
    word divided by its own weight gets weight 1, as a softmax would give it) and a sum clearly
    not 1."""
    got = o.output.detach().to("cpu", torch.float64)  # (B,H)
    want = o.case.expected.detach().to("cpu")  # (B,H)
    for total in sums:  # (B,)
        rows = total > 0.1
        telling = rows & ((total - 1).abs() > 0.05) & (words.to("cpu") >= 2)
        if telling.any():
            scaled = (got[rows] * total[rows, None]).to(want.dtype)  # (rows,H)
            if tolerance.close(scaled, want[rows]):
                return True
    return False


def _judge_weighted(o: Outcome) -> Outcome:
    """judge_tensor, naming weights divided by their sum however the division was guarded."""
    o = judge_tensor(o)
    if o.kind is Kind.VALUES:
        w = o.case.args[1].detach().to("cpu", torch.float64)  # (B,T)
        words = torch.full(w.shape[:1], w.shape[1])  # (B,)
        if divided_by_a_sum(o, (w.sum(dim=1), w.abs().sum(dim=1)), words):
            o.keys = ("normalised_weights",)
    return o


_WEIGHTED = Exercise(
    "weighted_sum",
    "net_output, att_scores",
    Mistakes(lambda: COMMON | weighted()),
    _judge_weighted,
    no_loop=True,
)


def check_weighted_sum(
    fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), att_scores (B, T)) -> weighted (B, H).

    weighted[b, h] = sum over t of att_scores[b, t] * net_output[b, t, h]; no Python loop; the
    result keeps the inputs' dtype, device and gradient. Fresh random inputs on every call (pass
    seed= to repeat one).
    """
    raw, _, _ = _weighted_inputs(seed)
    cases = [_case(label, (x, w), ("net_output", "att_scores"), _ws) for label, x, w in raw]
    return run(_WEIGHTED, fn, cases)


# --------------------------------------------------------------------------------------------
# Exercise 5: the masked weighted sum


@reference
def _masked_ws(x: Tensor, w: Tensor, mask: Tensor) -> Tensor:
    return (x * (w * mask)[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,H)


MASKED: dict[str, Entry] = {
    "inverted_mask": Entry(
        "kept the padding and dropped the real words (the mask is inverted)",
        "In this mask True marks a real word and False marks padding.",
        lambda x, w, m: _masked_ws(x, w, ~m),
    ),
    "mask_on_hidden": Entry(
        "lined the mask up with the hidden axis",
        "mask (B, T) meets the last two axes of (B, T, H) when shapes align from the right. Like "
        "att_scores, it needs a trailing axis of size 1 before it meets net_output.",
        lambda x, w, m: (x * w[..., None] * m[:, None, :]).sum(dim=1),
    ),
    "boolean_index_flattens": Entry(
        "indexed with the mask (`net_output[mask]`), which flattens the batch",
        "`net_output[mask]` is (real words in the whole batch, H): it forgets which sentence each "
        "word came from, so the sum mixes sentences (right only when B = 1). Give the padding "
        "weight zero instead.",
        lambda x, w, m: (x[m] * w[m][:, None]).sum(dim=0),
        flat=True,
    ),
    "minus_inf": Entry(
        "put -inf on the padded words",
        "-inf is the trick for raw scores that go through a softmax afterwards (exp(-inf) = 0). "
        "Here the weights multiply the words directly, so padding needs weight 0.",
        lambda x, w, m: _ws(x, w.masked_fill(~m, float("-inf"))),
    ),
    "renormalised": Entry(
        "renormalised the weights: divided them by their sum (over the real words, or all words)",
        "The weights are given as they are and need not sum to 1: padding only takes their "
        "weight to zero, it does not share it out among the real words. Don't divide by a sum.",
        (
            lambda x, w, m: _masked_ws(x, w, m) / (w * m).sum(dim=1, keepdim=True),
            lambda x, w, m: _masked_ws(x, w, m) / w.sum(dim=1, keepdim=True),
        ),  # and however a zero sum is guarded: _judge_masked sees it
    ),
    "softmax_over_real_words": Entry(
        "took a softmax of att_scores over the real words",
        "Here att_scores are already the weights: use them as they are, and only give the padding "
        "weight zero. (-inf before a softmax is the trick for raw scores, not for weights.)",
        (
            lambda x, w, m: _ws(x, w.masked_fill(~m, float("-inf")).softmax(dim=1)),
            lambda x, w, m: _ws(x, w.masked_fill(~m, float("-inf")).softmax(dim=1).nan_to_num()),
        ),
    ),
    "masked_after_sum": Entry(
        "applied the mask after summing",
        "Once the words are added up the padding cannot be taken back out: zero the padded "
        "words' weights before the sum.",
        lambda x, w, m: _ws(x, w) * m.any(dim=1, keepdim=True),
    ),
}  # the mask's own mistakes; the catalogue's come first (see _masked)


def _masked() -> dict[str, Entry]:
    own = catalogue(forms.Setting.MASK, forms.Inputs.of_masked)
    lift_ = lift(lifted(None, True), lambda f: lambda x, w, mask: f(x, w * mask))
    return own | MASKED | lift_


def _judge_masked(o: Outcome) -> Outcome:
    """judge_tensor, naming a renormalisation of the weights however it was written."""
    o = judge_tensor(o)
    if o.kind is Kind.VALUES:
        _, w, m = (a.detach().to("cpu") for a in o.case.args)
        w = w.double()  # (B,T)
        if divided_by_a_sum(o, ((w * m).sum(dim=1), w.sum(dim=1)), m.sum(dim=1)):
            o.keys = ("renormalised",)
    return o


_MASKED = Exercise(
    "masked_weighted_sum",
    "net_output, att_scores, mask",
    Mistakes(lambda: COMMON | _masked()),
    _judge_masked,
    no_loop=True,
)


def check_masked_weighted_sum(
    fn: Callable[[Tensor, Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), att_scores (B, T), mask (B, T) bool) -> (B, H).

    Only the real words (mask True) count: weighted[b, h] = sum over t with mask[b, t] of
    att_scores[b, t] * net_output[b, t, h]. The padded words hold nonzero numbers and nonzero
    weights in every case, so ignoring the mask shows; one case has a sentence that is all padding
    (its result is zeros). No Python loop; the result keeps its gradient.
    """
    raw, _, gen = _weighted_inputs(seed)
    cases = []
    for i, (label, x, w) in enumerate(raw):
        b, t, _ = x.shape
        if i == 0:
            mask = examples.padded(2, 3, 5)[2]  # (2, 3): the classic padded mask
        else:
            mask = (torch.rand(b, t, generator=gen) < 0.6).to(x.device)  # (B,T)
            mask[0, 0] = True  # sentence 0 keeps a real word ...
            if t > 1:
                mask[0, -1] = False  # ... and some padding
            if b > 2:
                mask[-1] = False  # a sentence that is all padding
        cases.append(_case(label, (x, w, mask), ("net_output", "att_scores", "mask"), _masked_ws))
    return run(_MASKED, fn, cases)


# --------------------------------------------------------------------------------------------
# Exercise 4: softmax, then the weighted sum


@reference
def _softmax_ws(x: Tensor, s: Tensor) -> Tensor:
    return _ws(x, s.softmax(dim=1))  # softmax over words, then (B,T,H) * (B,T,1) -> (B,H)


def _normalise(e: Tensor, keepdim: bool) -> Tensor:
    return e / e.sum(dim=1, keepdim=keepdim)


SOFTMAX: dict[str, Entry] = {
    "softmax_over_size_one_axis": Entry(
        "took the softmax over an axis of size 1",
        "A softmax over a single number always gives 1, so every word got weight 1. Take the "
        "softmax over the words, before adding the new axis.",
        lambda x, s: x.sum(dim=1),
    ),
    "max_without_keepdim": Entry(
        "subtracted the maximum without `keepdim=True`",
        "`max(dim=1)` turns (B, T) into (B,); subtracting that from (B, T) lines B up with T "
        "from the right: it fails, or quietly subtracts the wrong numbers when B == T.",
        (
            lambda x, s: _ws(x, _normalise((s - s.max(dim=1).values).exp(), True)),
            lambda x, s: _ws(x, _normalise((s - s.max(dim=1).values).exp(), False)),
        ),
    ),
    "sum_without_keepdim": Entry(
        "divided by the sum without `keepdim=True`",
        "`e.sum(dim=1)` is (B,): dividing the (B, T) exponentials by it lines B up with T from the "
        "right, so the division fails (or divides by the wrong sums when B == T). Keep the axis "
        "with `keepdim=True`.",
        (
            lambda x, s: _ws(x, _normalise((s - s.amax(dim=1, keepdim=True)).exp(), False)),
            lambda x, s: _ws(x, _normalise(s.exp(), False)),
        ),
    ),
    "naive_exp_overflow": Entry(
        "computed the softmax as exp(s) / sum(exp(s)) without subtracting the maximum",
        "On large scores exp overflows to inf (float32 overflows above about 88) and inf / inf is "
        "NaN. Subtract each sentence's largest score first, or use `torch.softmax`.",
        lambda x, s: _ws(x, _normalise(s.exp(), True)),
    ),
    "softmax_after_sum": Entry(
        "applied the softmax to the result instead of the scores",
        "The softmax turns the scores (B, T) into weights; it goes before the weighted sum.",
        lambda x, s: _ws(x, s).softmax(dim=1),
    ),
}  # the softmax's own mistakes; the catalogue's come first (see _softmax)


def _softmax() -> dict[str, Entry]:
    own = catalogue(forms.Setting.SOFTMAX, forms.Inputs.of_scores)
    lift_ = lift(lifted("softmax", False), lambda f: lambda x, s: f(x, s.softmax(dim=1)))
    return own | SOFTMAX | lift_


_SOFTMAX = Exercise(
    "softmax_weighted_sum",
    "net_output, scores",
    Mistakes(lambda: COMMON | _softmax()),
    judge_tensor,
    no_loop=True,
)


def check_softmax_weighted_sum(
    fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), scores (B, T)) -> (B, H): softmax over words, then weight.

    scores are raw, any real numbers; one case has large scores (tens to a hundred), where a
    softmax written as exp(s) / sum(exp(s)) overflows. No Python loop; the result keeps its
    gradient.
    """
    raw, rng, gen = _weighted_inputs(seed)
    cases = []
    for label, x, w in raw:
        s = (w.detach().double().clamp_min(1e-6).log() * 1.5).to(x.dtype)  # raw scores
        s.requires_grad_(w.requires_grad)
        cases.append(_case(label, (x, s), ("net_output", "scores"), _softmax_ws))
    b, t, h = distinct_sizes(rng, 3, 2, 6)
    x, _ = _xw(gen, b, t, h)
    s = (60 + 60 * torch.rand(b, t, generator=gen)).to(torch.float32)  # (B,T), exp(s) overflows
    cases.insert(-1, _case("large scores", (x, s), ("net_output", "scores"), _softmax_ws))
    return run(_SOFTMAX, fn, cases)


# --------------------------------------------------------------------------------------------
# Exercise 6: the gradient of the weights


@reference
def _weights_grad(x: Tensor, g: Tensor) -> Tensor:
    return (x * g[:, None, :]).sum(dim=2)  # (B,T,H) * (B,1,H) -> sum over H -> (B,T)


GRADIENT: dict[str, Entry] = {
    "grad_on_words": Entry(
        "lined grad_weighted up with the word axis",
        "grad_weighted is (B, H). To meet net_output (B, T, H) it has to line up with B and H, so "
        "its missing axis is the word axis, in the middle. Aligned from the right without it, H "
        "meets H only by luck when T == H.",
        lambda x, g: (x * g[..., None]).sum(dim=2),
    ),
    "grad_wrong_axis": Entry(
        "summed over the words instead of the hidden axis",
        "Each weight att_scores[b, t] touched a whole word vector of H numbers; its gradient adds "
        "up over those H numbers and keeps one number per word: (B, T).",
        lambda x, g: (x * g[:, None, :]).sum(dim=1),
    ),
    "grad_ignored_upstream": Entry(
        "left grad_weighted out",
        "The chain rule multiplies by the gradient coming from above.",
        lambda x, g: x.sum(dim=2),
    ),
    "grad_kept_dim": Entry(
        "kept the hidden axis (a size-1 axis is left over)",
        "The gradient of att_scores has att_scores' own shape, (B, T).",
        lambda x, g: (x * g[:, None, :]).sum(dim=2, keepdim=True),
    ),
    "grad_no_sum": Entry(
        "multiplied but did not sum",
        "Broadcasting copied each weight along H in the forward pass, so the backward pass adds "
        "up the gradients of those copies.",
        lambda x, g: x * g[:, None, :],
    ),
    "grad_of_net_output": Entry(
        "returned the gradient of net_output instead of att_scores",
        "That one is (B, T, H); this exercise asks for the gradient of att_scores, (B, T).",
        lambda x, g: g[:, None, :].expand_as(x),
    ),
}

_GRADIENT = Exercise(
    "weights_grad", "net_output, grad_weighted", COMMON | GRADIENT, judge_tensor, no_loop=True
)


def check_weights_grad(
    fn: Callable[[Tensor, Tensor], Tensor], *, seed: int | None = None
) -> CheckResult:
    """Check fn(net_output (B, T, H), grad_weighted (B, H)) -> grad of att_scores (B, T).

    With weighted = (net_output * att_scores[..., None]).sum(dim=1) and grad_weighted the gradient
    of the loss with respect to weighted, the answer is what autograd puts in att_scores.grad.
    """
    raw, _, gen = _weighted_inputs(seed, grad=False)
    cases = []
    for label, x, _ in raw:
        b, _, h = x.shape
        g = torch.randn(b, h, generator=gen, dtype=torch.float64).to(x.device, x.dtype)  # (B,H)
        cases.append(_case(label, (x, g), ("net_output", "grad_weighted"), _weights_grad))
    return run(_GRADIENT, fn, cases)
