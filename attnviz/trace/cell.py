"""Where one result cell comes from: weighted[b, h] written out as a sum of products.

``provenance`` gives weighted[b, h] = Σ_t att_scores[b, t] · net_output[b, t, h] with the actual
numbers, one ``Term`` per word t (to follow a cell through the steps, see ``step.feeding_cells``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.aggregation import weighted_sum_broadcast
from attnviz.trace.inputs import check_index, check_traceable

__all__ = ["Provenance", "Term", "provenance"]


def _num(v: float) -> str:
    """A number for a formula: 4 significant digits, negatives in parentheses."""
    s = f"{v:.4g}"
    return f"({s})" if v < 0 else s


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


def provenance(net_output: Tensor, att_scores: Tensor, b: int, h: int) -> Provenance:
    """net_output (B, T, H), att_scores (B, T), a cell (b, h) of weighted (B, H) -> its Provenance."""
    check_traceable(net_output, att_scores)
    shape = tuple(net_output.shape)
    b = check_index("b (the sentence)", "B", b, shape[0], shape)
    h = check_index("h (the hidden feature)", "H", h, shape[2], shape)
    w = att_scores.detach()[b].to("cpu", torch.float64)  # (T,)
    x = net_output.detach()[b, :, h].to("cpu", torch.float64)  # (T,)
    products = w * x  # (T,)
    terms = tuple(Term(t, float(w[t]), float(x[t]), float(products[t])) for t in range(shape[1]))
    total = float(products.sum())
    result = float(weighted_sum_broadcast(net_output.detach(), att_scores.detach())[b, h])
    formula = f"weighted[{b}, {h}] = Σ_t att_scores[{b}, t] · net_output[{b}, t, {h}]"
    sum_text = " + ".join(f"{_num(term.weight)} · {_num(term.value)}" for term in terms)
    equation = f"weighted[{b}, {h}] = {sum_text} = {_num(total)}"
    return Provenance(b, h, terms, total, result, formula, equation)
