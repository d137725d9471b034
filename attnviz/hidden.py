"""Inputs the student never sees, for judging an expression beyond the example on screen.

    hidden.cases((2, 4, 4), x_dtype, s_dtype, masked=False, normalize=None)
        # three Cases: the same shape with other numbers, a shape with T == H, one with B = 1
    hidden.probes(net_output, att_scores, mask, normalize)
        # the example itself with one of its special properties broken, and that property in words

An answer can match the example by accident of its numbers: a mean matches when every weight is
1/T, renormalising changes nothing when the weights already sum to 1, ``[:, None]`` runs and can
match when T == H. The cases are drawn like the lesson checkers' (``attnviz.exercises.cases``):
fresh sizes, signed ``net_output``, weights that are neither uniform nor 0/1 and do not sum to 1,
and, when the example has a mask, a mask with padding whose words still carry numbers. A probe
changes one property of the example and nothing else, so when the expression goes wrong on it,
that property is why it matched. Sizes stay small: at most the example's own and 6 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.exercises.cases import distinct_sizes, rng_and_generator

__all__ = ["Case", "Probe", "cases", "probes"]

SEED = 20261202  # fixed: the same example and expression always get the same verdict
SUM_TOL = 1e-3  # weights "sum to 1" within this (the classic rows sum to 0.9999 and 1.0001)


@dataclass(frozen=True)
class Case:
    """label: the case in words. net_output (B, T, H), att_scores (B, T), mask (B, T) or None."""

    label: str
    net_output: Tensor
    att_scores: Tensor
    mask: Tensor | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(B, T, H)."""
        b, t, h = (int(n) for n in self.net_output.shape)
        return (b, t, h)

    def variables(self) -> dict[str, Tensor]:
        """The names an expression may use: net_output, att_scores (and mask)."""
        out = {"net_output": self.net_output, "att_scores": self.att_scores}
        if self.mask is not None:
            out["mask"] = self.mask
        return out


@dataclass(frozen=True)
class Probe:
    """key: which property. because: what the example has that the case does not ("every
    weight ... is 1/T"). case: the example with only that changed. implies: keys of the
    properties this one includes (weights of 1/T sum to 1), not worth naming beside it."""

    key: str
    because: str
    case: Case
    implies: tuple[str, ...] = ()


def _weights(b: int, t: int, gen: torch.Generator, normalize: str | None) -> Tensor:
    """(B, T) float64: raw scores of both signs for a softmax, else positive weights that are
    neither equal nor 0/1 and whose rows do not sum to 1."""
    if normalize == "softmax":
        return 2 * torch.randn(b, t, generator=gen, dtype=torch.float64)
    w = 0.2 + 0.9 * torch.rand(b, t, generator=gen, dtype=torch.float64)  # (B,T) in [0.2, 1.1)
    near_one = (w.sum(dim=1, keepdim=True) - 1).abs() < 0.1  # (B,1)
    return torch.where(near_one, 1.5 * w, w)


def _mask(b: int, t: int, gen: torch.Generator) -> Tensor:
    """(B, T) bool: the first word always real, at least one padded word when T > 1."""
    m = torch.rand(b, t, generator=gen) < 0.7  # (B,T)
    m[:, 0] = True
    if t > 1:
        m[0, -1] = False
    return m


def _case(label: str, shape: tuple[int, int, int], gen, dtypes, masked, normalize) -> Case:
    b, t, h = shape
    x = torch.randn(b, t, h, generator=gen, dtype=torch.float64)  # (B,T,H), both signs
    s = _weights(b, t, gen, normalize)  # (B,T)
    m = _mask(b, t, gen) if masked else None
    return Case(label, x.to(dtypes[0]), s.to(dtypes[1]), m)


def cases(
    shape: tuple[int, int, int],
    dtypes: tuple[torch.dtype, torch.dtype] = (torch.float32, torch.float32),
    *,
    masked: bool = False,
    normalize: str | None = None,
    seed: int = SEED,
) -> tuple[Case, ...]:
    """Three hidden cases for an example of shape (B, T, H): the same shape with other numbers,
    (B', n, n) with T == H and B' != n, and (1, T', H') with T' != H'. dtypes: of net_output and
    att_scores; masked: give each a mask (with padding); normalize: as the example's."""
    rng, gen = rng_and_generator(seed)
    n, b2 = distinct_sizes(rng, 2, 2, 5)
    t3, h3 = distinct_sizes(rng, 2, 2, 6)
    shapes = (
        ("the same shape, other numbers", tuple(shape)),
        ("T == H", (b2, n, n)),
        ("one sentence (B = 1)", (1, t3, h3)),
    )
    return tuple(_case(label, s, gen, dtypes, masked, normalize) for label, s in shapes)


# ---- probes: the example with one property broken ----------------------------------------------


def _same_sums(s: Tensor, live: Tensor, gen: torch.Generator) -> Tensor:
    """Unequal positive weights on the live words, with each row's sum over them kept."""
    r = (0.2 + torch.rand(s.shape, generator=gen, dtype=torch.float64)) * live  # (B,T)
    total = (s * live).sum(dim=1, keepdim=True)  # (B,1)
    return r / r.sum(dim=1, keepdim=True).clamp_min(1e-12) * total


def probes(
    net_output: Tensor, att_scores: Tensor, mask: Tensor | None, normalize: str | None
) -> tuple[Probe, ...]:
    """Every special property the example has, each with the example where only it is broken.

    net_output (B, T, H), att_scores (B, T) as given (raw scores when normalize == "softmax"),
    mask (B, T) bool or None. Properties: all weights of a sentence equal (1/T), rows that sum to
    1, weights of 0 and 1 only, no negative net_output, masked words already weighted (or valued)
    0. Each probe keeps the dtypes and the shape of the example.
    """
    x = net_output.detach().to("cpu", torch.float64)  # (B,T,H)
    s = att_scores.detach().to("cpu", torch.float64)  # (B,T)
    live = torch.ones_like(s, dtype=torch.bool) if mask is None else mask.detach().cpu().bool()
    _, gen = rng_and_generator(SEED + 1)
    b, t, _ = (int(n) for n in x.shape)
    found: list[tuple[str, str, Callable[[], tuple[Tensor, Tensor]]]] = []
    top = torch.where(live, s, float("-inf")).amax(dim=1)  # (B,)
    low = torch.where(live, s, float("inf")).amin(dim=1)  # (B,)
    equal = bool(((top - low) <= 1e-6 * top.abs().clamp_min(1)).all())  # within each sentence
    if equal and t > 1:
        if normalize == "softmax":
            because = (
                "every word of a sentence has the same score here, so the softmax gives each 1/T"
            )
            swap = lambda: (x, 2 * torch.randn(b, t, generator=gen, dtype=torch.float64))  # noqa: E731
            key = "equal"
        else:
            ones = (
                f"1/T = 1/{t}" if mask is None and bool(((s - 1 / t).abs() < 1e-6).all()) else None
            )
            because = (
                f"every weight in this example is {ones}" if ones
                else "every word of a sentence has the same weight here"
            )  # fmt: skip
            swap = lambda: (x, _same_sums(s, live, gen))  # noqa: E731
            key = "one_over_t" if ones else "equal"
        found.append((key, because, swap))
    if normalize is None:
        sums = (s * live).sum(dim=1)  # (B,)
        if bool(((sums - 1).abs() < SUM_TOL).all()):
            scale = 1.5 + torch.rand(b, 1, generator=gen, dtype=torch.float64)  # (B,1)
            found.append(
                ("sum1", "each sentence's weights already sum to 1 here", lambda: (x, s * scale))
            )
        if bool(((s == 0) | (s == 1)).all()):
            found.append(
                ("binary", "every weight here is 0 or 1", lambda: (x, _same_sums(s, live, gen)))
            )
    gone = ~live  # (B,T): the masked words
    if bool(gone.any()):
        zero_s, zero_x = bool((s[gone] == 0).all()), bool((x[gone] == 0).all())
        if (zero_s and normalize is None) or zero_x:
            what = {
                (True, True): "the masked words already have weight 0 and net_output 0 here",
                (True, False): "the masked words' weights are already 0 here",
                (False, True): "net_output is already 0 on the masked words here",
            }[(zero_s and normalize is None, zero_x)]
            noise = torch.randn(x.shape, generator=gen, dtype=torch.float64)  # (B,T,H)
            extra = 0.5 + torch.rand(b, t, generator=gen, dtype=torch.float64)  # (B,T)
            found.append(
                (
                    "masked",
                    what,
                    lambda: (torch.where(live[..., None], x, noise), torch.where(live, s, extra)),
                )
            )
    if bool((x >= 0).all()):
        mid = (x.amax() + x.amin()) / 2 + 1e-3
        found.append(("nonneg", "net_output has no negative numbers here", lambda: (x - mid, s)))
    m = None if mask is None else live
    out = []
    for key, because, make in found:
        nx, ns = make()
        case = Case(because, nx.to(net_output.dtype), ns.to(att_scores.dtype), m)
        out.append(Probe(key, because, case, ("sum1",) if key == "one_over_t" else ()))
    return tuple(out)
