"""Building cases: fresh seeds, distinct sizes, the float64 oracle, and words for dtypes."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from random import Random

import torch
from torch import Tensor


def dtype_name(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


def fresh_seed(seed: int | None) -> int:
    return secrets.randbits(62) if seed is None else int(seed)


def rng_and_generator(seed: int | None) -> tuple[Random, torch.Generator]:
    s = fresh_seed(seed)
    return Random(s), torch.Generator().manual_seed(s % 2**63)


def distinct_sizes(rng: Random, n: int, lo: int, hi: int, *, avoid: Sequence[int] = ()) -> list:
    """n distinct sizes in [lo, hi], none in avoid."""
    return rng.sample([s for s in range(lo, hi + 1) if s not in avoid], n)


def expected_of(f: Callable[..., Tensor], *args: object, dtype: torch.dtype) -> Tensor:
    """The oracle in float64, returned in the dtype (and on the device) the result must have:
    the first argument's device; arguments that are not tensors are passed as they are."""
    device = next(a.device for a in args if isinstance(a, Tensor))
    return f(*_float64(args)).to(device, dtype)


def _float64(args: Sequence[object]) -> tuple[object, ...]:
    return tuple(
        (a.detach().to("cpu", torch.float64) if a.is_floating_point() else a.detach().cpu())
        if isinstance(a, Tensor)
        else a
        for a in args
    )


def join(values: Sequence[object]) -> str:
    v = [str(x) for x in values]
    return v[0] if len(v) == 1 else ", ".join(v[:-1]) + " or " + v[-1]
