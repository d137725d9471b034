"""How close is close enough: one tolerance per dtype for every comparison the project makes.

The trace's cross-checks, ``compare_methods``, the exercise checkers and the expression box's verdict
all compare a result with the float64 reference through this module, so they can never disagree
about whether an answer is right. A wrong form (the T == H trap, a mean, a wrong axis) differs by
O(1) on the examples, far outside every tolerance here; rounding in a different order stays inside.
"""

from __future__ import annotations

import torch
from torch import Tensor

# dtype -> (rtol, atol); the coarser of two dtypes decides
TOLERANCE: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (5e-3, 1e-2),
    torch.bfloat16: (2e-2, 5e-2),
}
_OTHER = (1e-2, 1e-2)  # any other dtype (integers compare exactly once converted)


def tolerance(*dtypes: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing values of these dtypes: the loosest of them."""
    tols = [TOLERANCE.get(d, (0.0, 0.0) if not d.is_floating_point else _OTHER) for d in dtypes]
    return max(t[0] for t in tols), max(t[1] for t in tols)


def mismatch(got: Tensor, want: Tensor) -> Tensor:
    """Elementwise: True where got and want differ by more than the tolerance (same shape, compared
    in float64 on the CPU; NaN matches NaN). got, want: any equal shape -> bool of that shape."""
    if tuple(got.shape) != tuple(want.shape):
        raise ValueError(f"cannot compare shapes {tuple(got.shape)} and {tuple(want.shape)}")
    rtol, atol = tolerance(got.dtype, want.dtype)
    a = got.detach().to("cpu", torch.float64)
    b = want.detach().to("cpu", torch.float64)
    return ~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def close(got: Tensor, want: Tensor) -> bool:
    """Same shape and every value within the tolerance (dtype and device are not compared)."""
    return tuple(got.shape) == tuple(want.shape) and not bool(mismatch(got, want).any())


def max_abs_diff(got: Tensor, want: Tensor) -> float:
    """Largest |got - want| in float64 (0.0 for empty tensors)."""
    if got.numel() == 0:
        return 0.0
    a = got.detach().to("cpu", torch.float64)
    b = want.detach().to("cpu", torch.float64)
    return float((a - b).abs().max())
