"""The backward pass of the one-liner: the broadcast becomes a sum, checked against autograd.

Forward, each weight is stretched across the H hidden features and the words are summed; backward
swaps the roles: att_scores' gradient sums over H, net_output's is stretched over the words.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.errors import AttnvizError
from attnviz.tolerance import close, max_abs_diff
from attnviz.trace.inputs import check_traceable, shape_or_type

__all__ = ["Gradients", "gradients"]


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
    check_traceable(net_output, att_scores)
    b, t, h = net_output.shape
    x = net_output.detach().clone().requires_grad_(True)  # (B,T,H)
    w = att_scores.detach().clone().requires_grad_(True)  # (B,T)
    weighted = (x * w[..., None]).sum(dim=1)  # (B,H)
    if upstream is None:
        g = torch.ones_like(weighted)  # (B,H)
    else:
        if not isinstance(upstream, Tensor) or tuple(upstream.shape) != (b, h):
            raise AttnvizError(
                f"upstream must have the shape of weighted, (B, H) = {(b, h)} for net_output "
                f"{tuple(net_output.shape)}; got {shape_or_type(upstream)}."
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
        att_scores_max_abs_diff=max_abs_diff(grad_w, formula_w),
        att_scores_ok=close(grad_w, formula_w),
        net_output=grad_x,
        net_output_formula=formula_x,
        net_output_code="att_scores[..., None] * upstream[:, None, :]",
        net_output_max_abs_diff=max_abs_diff(grad_x, formula_x),
        net_output_ok=close(grad_x, formula_x),
        explanation=explanation,
    )
