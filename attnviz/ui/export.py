"""What the Playground hands out: a plain-PyTorch snippet that rebuilds the example, and the
tensors as JSON or .npy bytes. numpy only (no streamlit, no torch arithmetic)."""

from __future__ import annotations

import io
import json

import numpy as np


def _literal(a: np.ndarray, indent: int) -> str:
    """A nested Python list literal of float32 values, one innermost row per line."""
    if a.ndim == 1:
        return "[" + ", ".join(np.format_float_positional(v, unique=True) for v in a) + "]"
    pad = " " * (indent + 4)
    inner = f",\n{pad}".join(_literal(row, indent + 4) for row in a)
    return f"[\n{pad}{inner},\n{' ' * indent}]"


def _bools(a: np.ndarray) -> str:
    return "[" + ", ".join("[" + ", ".join(str(bool(v)) for v in row) + "]" for row in a) + "]"


def pytorch_snippet(
    net_output: np.ndarray, att_scores: np.ndarray, mask: np.ndarray | None, softmax: bool
) -> str:
    """net_output (B, T, H), att_scores (B, T), mask (B, T) bool or None -> runnable PyTorch code
    that rebuilds the example and prints weighted (B, H), with the same weighting as
    ``attnviz.weighted_sum(..., mask=mask, normalize="softmax" if softmax else None)``."""
    b, t, h = net_output.shape
    lines = [
        "import torch",
        "",
        f"# {b} sentences x {t} words x {h} hidden features",
        f"net_output = torch.tensor({_literal(net_output, 0)})  # (B, T, H) = {(b, t, h)}",
        f"att_scores = torch.tensor({_literal(att_scores, 0)})  # (B, T) = {(b, t)}",
    ]
    weights = "att_scores"
    if mask is not None:
        lines.append(f"mask = torch.tensor({_bools(mask)})  # (B, T), False = padding")
    if softmax and mask is not None:
        lines += [
            "# softmax over the real words only; a fully padded sentence gets zero weights",
            "scores = att_scores.masked_fill(~mask, float('-inf'))  # (B, T)",
            "weights = torch.where(mask, scores.softmax(dim=1), 0.0)  # (B, T)",
        ]
        weights = "weights"
    elif softmax:
        lines.append("weights = att_scores.softmax(dim=1)  # (B, T), each row sums to 1")
        weights = "weights"
    elif mask is not None:
        lines.append("weights = torch.where(mask, att_scores, 0.0)  # (B, T), padding weighs 0")
        weights = "weights"
    lines += [
        "",
        f"weighted = (net_output * {weights}[..., None]).sum(axis=1)  # (B,T,H) * (B,T,1) -> (B,H)",
        "print(weighted)",
    ]
    return "\n".join(lines) + "\n"


def tensors_json(tensors: dict[str, np.ndarray | None], **extra: object) -> bytes:
    """{name: array} -> UTF-8 JSON bytes with nested lists, shapes and any extra fields."""
    out: dict[str, object] = dict(extra)
    for name, a in tensors.items():
        if a is None:
            continue
        values = a.tolist() if a.dtype == np.bool_ else a.astype(np.float64).round(7).tolist()
        out[name] = {"shape": list(a.shape), "dtype": str(a.dtype), "values": values}
    return json.dumps(out, indent=1).encode()


def npy_bytes(a: np.ndarray) -> bytes:
    """One array -> the bytes of a .npy file (``np.load`` reads it back)."""
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()
