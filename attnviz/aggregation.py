"""Attention-weighted aggregation: weighted[b, h] = sum over t of att_scores[b, t] * net_output[b, t, h].

One entry point, ``weighted_sum``, over interchangeable implementations named in ``METHODS``. Every
check here looks at shapes, dtypes and devices only (O(1)): values are never scanned, so the fast
paths stay fast. Checking for NaN or inf belongs to the UI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz import tolerance
from attnviz.errors import AttnvizError
from attnviz.fused import weighted_sum_auto, weighted_sum_fused

NORMALIZE = (None, "softmax")


def _shape(t: object) -> str:
    return str(tuple(t.shape)) if isinstance(t, Tensor) else type(t).__name__


def weighted_sum_broadcast(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H). The one-liner."""
    return (x * w[..., None]).sum(dim=1)  # (B,T,H) * (B,T,1) -> (B,T,H) -> sum over T -> (B,H)


def weighted_sum_einsum(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H). Name the axes; the repeated t is summed."""
    return torch.einsum("bth,bt->bh", x, w)  # (B,H)


def weighted_sum_bmm(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H). Each sentence is a (1, T) @ (T, H) product."""
    return torch.bmm(w[:, None, :], x)[:, 0, :]  # (B,1,T) @ (B,T,H) -> (B,1,H) -> (B,H)


def weighted_sum_loop(x: Tensor, w: Tensor) -> Tensor:
    """x: (B, T, H), w: (B, T) -> (B, H). Plain Python loops: the readable reference."""
    b_size, t_size, h_size = x.shape
    out = torch.zeros(b_size, h_size, dtype=x.dtype, device=x.device)  # (B,H)
    for b in range(b_size):
        for t in range(t_size):
            out[b] += w[b, t] * x[b, t]  # (H,) += scalar * (H,)
    return out


METHODS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "broadcast": weighted_sum_broadcast,
    "einsum": weighted_sum_einsum,
    "bmm": weighted_sum_bmm,
    "loop": weighted_sum_loop,
    "fused": weighted_sum_fused,  # one pass over x: the C kernel on the CPU, bmm elsewhere (fused.py)
    "auto": weighted_sum_auto,  # the fastest of these for the device and size (fused.choose_method)
}


def check_inputs(net_output: object, att_scores: object, mask: object = None) -> None:
    """Raise AttnvizError unless net_output (B, T, H) and att_scores (B, T) fit together.

    O(1): looks at types, shapes, dtypes and devices, never at values.
    """
    both = f"net_output is {_shape(net_output)} and att_scores is {_shape(att_scores)}"
    for name, t in (("net_output", net_output), ("att_scores", att_scores)):
        if not isinstance(t, Tensor):
            raise AttnvizError(
                f"{name} must be a torch.Tensor, got {type(t).__name__} ({both}). "
                f"Convert it with torch.tensor(...) or torch.as_tensor(...)."
            )
    if net_output.ndim != 3:
        raise AttnvizError(
            f"net_output must have 3 axes (sentence B, word T, hidden H), but {both}. "
            f"Reshape it to (B, T, H); a single sentence needs a leading axis: net_output[None]."
        )
    if att_scores.ndim != 2:
        hint = (
            " It looks like the trailing axis is already there: pass att_scores[..., 0] and let "
            "weighted_sum add [..., None] itself."
            if att_scores.ndim == 3 and att_scores.shape[-1] == 1
            else " Give one weight per word: shape (B, T)."
        )
        raise AttnvizError(f"att_scores must have 2 axes (sentence B, word T), but {both}.{hint}")
    (b, t, _), (bw, tw) = net_output.shape, att_scores.shape
    if (b, t) != (bw, tw):
        if (bw, tw) == (t, b) and b != t:
            fix = "att_scores looks transposed: use att_scores.T."
        elif b != bw:
            fix = f"both need the same number of sentences B (here {b} vs {bw})."
        else:
            fix = f"both need the same number of words T (here {t} vs {tw})."
        raise AttnvizError(
            f"att_scores {tuple(att_scores.shape)} does not fit net_output {tuple(net_output.shape)}: "
            f"att_scores must be (B, T) = {(b, t)}; {fix}"
        )
    if net_output.device != att_scores.device:
        raise AttnvizError(
            f"net_output {tuple(net_output.shape)} is on {net_output.device} but att_scores "
            f"{tuple(att_scores.shape)} is on {att_scores.device}. Move both to one device, "
            f"e.g. att_scores.to(net_output.device)."
        )
    for name, tensor in (("net_output", net_output), ("att_scores", att_scores)):
        if not tensor.is_floating_point():
            raise AttnvizError(
                f"{name} must hold floating-point numbers, but it is {tensor.dtype} ({both}). "
                f"Convert it with {name}.float()."
            )
    if mask is None:
        return
    if not isinstance(mask, Tensor):
        raise AttnvizError(f"mask must be a torch.Tensor of bools, got {type(mask).__name__}.")
    if mask.dtype != torch.bool:
        raise AttnvizError(
            f"mask {tuple(mask.shape)} must be bool (True = a real word, False = padding), "
            f"got {mask.dtype}. Convert it with mask.bool()."
        )
    if tuple(mask.shape) != (b, t):
        raise AttnvizError(
            f"mask {tuple(mask.shape)} must have the shape of att_scores {(b, t)} "
            f"(net_output is {tuple(net_output.shape)}): one True/False per word."
        )
    if mask.device != net_output.device:
        raise AttnvizError(
            f"mask is on {mask.device} but net_output {tuple(net_output.shape)} is on "
            f"{net_output.device}. Move it: mask.to(net_output.device)."
        )


def attention_weights(
    att_scores: Tensor, *, mask: Tensor | None = None, normalize: str | None = None
) -> Tensor:
    """att_scores (B, T) -> the weights actually applied (B, T).

    normalize="softmax" softmaxes over words (dim=1); masked words (mask False) get weight 0, and a
    sentence whose words are all masked gets all-zero weights, never NaN.
    """
    if normalize not in NORMALIZE:
        raise AttnvizError(
            f"normalize must be None or 'softmax', got {normalize!r} "
            f"(att_scores is {tuple(att_scores.shape)})."
        )
    w = att_scores
    if normalize == "softmax":
        if mask is not None:
            w = w.masked_fill(~mask, float("-inf"))  # (B,T), padding can't take weight
        w = w.softmax(dim=1)  # (B,T), rows sum to 1 (NaN where a whole row is masked)
    if mask is not None:
        w = torch.where(mask, w, torch.zeros((), dtype=w.dtype, device=w.device))  # (B,T)
    return w


def _fast_fn(
    net_output: object, att_scores: object, method: object
) -> Callable[[Tensor, Tensor], Tensor] | None:
    """The method to call directly when the inputs are the common case, else None.

    The common case is exactly what ``check_inputs`` accepts without a mask, narrowed to one
    floating dtype (so there is nothing to promote): two tensors, (B, T, H) and (B, T) with the
    same B and T, on one device. Anything else (a mask, normalize, mixed dtypes, a mistake) takes
    the full path, which checks everything and names the problem. O(1), about 1 µs.
    """
    fn = METHODS.get(method) if type(method) is str else None
    if (
        fn is None
        or not isinstance(net_output, Tensor)
        or not isinstance(att_scores, Tensor)
        or net_output.ndim != 3
        or att_scores.ndim != 2
    ):
        return None
    dtype = net_output.dtype
    if dtype is not att_scores.dtype or not dtype.is_floating_point:
        return None
    b, t, _ = net_output.shape
    bw, tw = att_scores.shape
    if b != bw or t != tw or net_output.device != att_scores.device:
        return None
    return fn


def weighted_sum(
    net_output: Tensor,
    att_scores: Tensor,
    *,
    method: str = "broadcast",
    mask: Tensor | None = None,
    normalize: str | None = None,
) -> Tensor:
    """net_output (B, T, H), att_scores (B, T) -> weighted (B, H).

    weighted[b, h] = sum_t w[b, t] * net_output[b, t, h], where w is att_scores, softmaxed over words
    if normalize="softmax", and zero where mask (B, T) is False. The result has the promoted dtype
    of the inputs and lives on their device. method is one of METHODS.

    The common case (no mask, no normalize, one floating dtype, shapes that fit) calls the method
    straight after O(1) checks; see ``benchmarks/RESULTS.md`` ("The library's overhead").
    """
    if mask is None and normalize is None:
        fn = _fast_fn(net_output, att_scores, method)
        if fn is not None:
            return fn(net_output, att_scores)  # (B,H)
    if type(method) is not str or method not in METHODS:
        raise AttnvizError(
            f"Unknown method {method!r}; choose one of {', '.join(repr(m) for m in METHODS)} "
            f"(net_output is {_shape(net_output)}, att_scores is {_shape(att_scores)})."
        )
    check_inputs(net_output, att_scores, mask)
    w = attention_weights(att_scores, mask=mask, normalize=normalize)  # (B,T)
    dtype = torch.promote_types(net_output.dtype, w.dtype)
    return METHODS[method](net_output.to(dtype), w.to(dtype))  # (B,H)


def reference(
    net_output: Tensor,
    att_scores: Tensor,
    *,
    mask: Tensor | None = None,
    normalize: str | None = None,
) -> Tensor:
    """The float64 oracle every method is tested against: (B, T, H), (B, T) -> (B, H) float64."""
    check_inputs(net_output, att_scores, mask)
    x = net_output.detach().to("cpu", torch.float64)  # (B,T,H)
    s = att_scores.detach().to("cpu", torch.float64)  # (B,T)
    m = None if mask is None else mask.to("cpu")
    w = attention_weights(s, mask=m, normalize=normalize)  # (B,T)
    return (x * w[..., None]).sum(dim=1)  # (B,H)


@dataclass(frozen=True)
class MethodCheck:
    """One method's result on given inputs, against the float64 reference."""

    method: str
    summary: str  # the first line of the method's docstring
    result: Tensor  # (B, H)
    max_abs_diff: float  # largest |result - reference|
    ok: bool  # within attnviz.tolerance's tolerance for the result's dtype


def compare_methods(
    net_output: Tensor,
    att_scores: Tensor,
    *,
    mask: Tensor | None = None,
    normalize: str | None = None,
) -> list[MethodCheck]:
    """Run every method in METHODS on the same inputs and check each against ``reference``
    with ``attnviz.tolerance`` (the one tolerance table of the project)."""
    ref = reference(net_output, att_scores, mask=mask, normalize=normalize)  # (B,H) float64
    checks = []
    for name, fn in METHODS.items():
        out = weighted_sum(net_output, att_scores, method=name, mask=mask, normalize=normalize)
        doc = (fn.__doc__ or "").strip().splitlines()
        checks.append(
            MethodCheck(
                method=name,
                summary=doc[0].replace("``", "") if doc else "",
                result=out,
                max_abs_diff=tolerance.max_abs_diff(out, ref),
                ok=tolerance.close(out, ref),
            )
        )
    return checks
