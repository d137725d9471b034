"""What the sandbox tests share: the right form, shapes with B, T, H all different, fresh random
inputs, and a helper that returns the SandboxError an expression raises."""

import pytest
import torch

from attnviz.sandbox import SandboxError, evaluate

RIGHT = "(net_output * att_scores[..., None]).sum(axis=1)"
SHAPES = [(2, 3, 5), (3, 4, 2), (4, 2, 3), (1, 5, 1)]  # B, T, H all different (or 1)


def random_inputs(b, t, h, *, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)  # (B,T,H)
    w = torch.rand(b, t, generator=g, dtype=torch.float64)  # (B,T)
    return x.to(dtype), w.to(dtype)


def variables(shape=(2, 3, 5), seed=0, dtype=torch.float64):
    x, w = random_inputs(*shape, seed=seed, dtype=dtype)
    return {"net_output": x, "att_scores": w}


def refusal(expr, vs=None, **kwargs) -> SandboxError:
    with pytest.raises(SandboxError) as info:
        evaluate(expr, vs if vs is not None else variables(), **kwargs)
    return info.value
