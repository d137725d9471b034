"""What a benchmark run times: a size and a dtype read from text, the random inputs of that size,
and the bytes a one-pass method moves (what every speed on the page is counted on)."""

from __future__ import annotations

import re

import torch
from torch import Tensor

from attnviz.errors import AttnvizError

DTYPES = {
    "float32": torch.float32,
    "float": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "half": torch.float16,
    "fp16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float64": torch.float64,
    "double": torch.float64,
    "fp64": torch.float64,
}


def parse_shape(text: str) -> tuple[int, int, int]:
    """``"48x512x1024"`` -> (48, 512, 1024); AttnvizError with the expected form otherwise."""
    parts = re.split(r"[x×,*]", text.strip().lower())
    try:
        b, t, h = (int(p) for p in parts)
    except ValueError:
        raise AttnvizError(
            f"Size {text!r} is not B x T x H: write three positive integers like '48x512x1024'."
        ) from None
    if min(b, t, h) < 1:
        raise AttnvizError(f"Size {text!r} gives {(b, t, h)}: every axis needs at least 1.")
    return b, t, h


def parse_dtype(text: str | torch.dtype) -> torch.dtype:
    if isinstance(text, torch.dtype):
        return text
    key = text.strip().lower().removeprefix("torch.")
    if key not in DTYPES:
        raise AttnvizError(
            f"dtype {text!r} is not supported; choose one of float32, float16, bfloat16, float64."
        )
    return DTYPES[key]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def input_bytes(shape: tuple[int, int, int], dtype: torch.dtype) -> int:
    """Bytes of x (B, T, H) plus w (B, T)."""
    b, t, h = shape
    return (b * t * h + b * t) * torch.empty((), dtype=dtype).element_size()


def moved_bytes(shape: tuple[int, int, int], dtype: torch.dtype) -> int:
    """Bytes a one-pass method moves: read x (B, T, H) and w (B, T), write out (B, H)."""
    b, _t, h = shape
    return input_bytes(shape, dtype) + b * h * torch.empty((), dtype=dtype).element_size()


def make_inputs(
    shape: tuple[int, int, int], dtype: torch.dtype = torch.float32, *, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """Random x (B, T, H) ~ N(0, 1) and softmaxed weights w (B, T), on the CPU."""
    b, t, h = shape
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g).to(dtype)  # (B,T,H)
    w = torch.randn(b, t, generator=g).softmax(dim=1).to(dtype)  # (B,T)
    return x, w
