"""The shareable link: the Playground's example, options and step <-> compact URL query parameters.

No streamlit here. ``encode`` gives a dict of short strings for ``st.query_params``; ``decode`` reads
one back strictly and raises AttnvizError with a plain message for anything tampered or truncated,
so the page can keep its defaults.

    ?p=classic&s=2x3x5                      the classic example, as built
    &x=0.7718_0.3856_..&w=0.2425_..         values, only when they differ from the preset
    &m=110_100                              the mask, one 0/1 per word, sentences split by _
    &sm=1&mk=1                              softmax the scores / use the mask
    &tab=steps&step=3&all=1&cell=1_4        what is on screen
    &e=net_output%20*%20att_scores           the expression box (only evaluated by attnviz.sandbox)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

import numpy as np
import torch

import attnviz
from attnviz import examples
from attnviz.errors import AttnvizError
from attnviz.ui.edit import MAX_ABS

MAX_EXPR_CHARS = 400
MAX_PARAM_CHARS = 12_000  # 4 x 8 x 16 values at full float32 precision fit comfortably
MAX_NUMBER_CHARS = 24  # -0.123456789e-10 and the like; a float32 needs at most 16
# Patterns are ASCII-only and matched in full: "²", "٣" or a trailing newline never pass.
_NUMBER = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)(e[-+]?[0-9]{1,3})?", re.ASCII)
_SHAPE = re.compile(r"([0-9]{1,2})x([0-9]{1,2})x([0-9]{1,2})", re.ASCII)
_CELL = re.compile(r"([0-9]{1,2})_([0-9]{1,2})", re.ASCII)


@dataclass(frozen=True)
class Link:
    """What a link restores. x: (B, T, H) float32 or None (use the preset's), w: (B, T) or None,
    mask: (B, T) bool or None."""

    preset: str = "classic"
    shape: tuple[int, int, int] = (2, 3, 5)
    seed: int = 0
    softmax: bool = False
    use_mask: bool = False
    x: np.ndarray | None = field(default=None, compare=False)
    w: np.ndarray | None = field(default=None, compare=False)
    mask: np.ndarray | None = field(default=None, compare=False)
    tab: str = ""
    step: int = 0
    all_steps: bool = False
    cell: tuple[int, int] = (0, 0)
    expr: str = ""


def _numbers(a: np.ndarray) -> str:
    return "_".join(
        np.format_float_positional(v, unique=True, trim="-") for v in a.astype(np.float32).ravel()
    )


def encode(link: Link) -> dict[str, str]:
    """Link -> query parameters (only what differs from the defaults)."""
    b, t, h = link.shape
    out = {"p": link.preset, "s": f"{b}x{t}x{h}"}
    if link.seed:
        out["seed"] = str(link.seed)
    # the options only where they differ from how the preset opens (examples.opens_with)
    softmax, use_mask = examples.opens_with(link.preset)
    if link.softmax != softmax:
        out["sm"] = "1" if link.softmax else "0"
    if link.use_mask != use_mask:
        out["mk"] = "1" if link.use_mask else "0"
    if link.x is not None:
        out["x"] = _numbers(link.x)
    if link.w is not None:
        out["w"] = _numbers(link.w)
    if link.mask is not None:
        out["m"] = "_".join("".join("1" if v else "0" for v in row) for row in link.mask)
    if link.tab:
        out["tab"] = link.tab
    if link.step:
        out["step"] = str(link.step)
    if link.all_steps:
        out["all"] = "1"
    if link.cell != (0, 0):
        out["cell"] = f"{link.cell[0]}_{link.cell[1]}"
    if link.expr:
        out["e"] = link.expr
    return out


def whole(text: str, key: str, lo: int, hi: int) -> int:
    """A link's whole number: ASCII digits only, at most as many as ``hi`` has, within [lo, hi].
    Raises AttnvizError naming ``key`` otherwise (``"²"``, ``"٣"``, 5,000 digits, ``"+1"``...)."""
    digits = len(str(hi))
    if not re.fullmatch(f"[0-9]{{1,{digits}}}", str(text), re.ASCII) or not lo <= int(text) <= hi:
        raise AttnvizError(
            f"'{key}' should be a whole number from {lo} to {hi}, got {str(text)[:20]!r}"
        )
    return int(text)


def _int(params: Mapping[str, str], key: str, lo: int, hi: int, default: int = 0) -> int:
    text = params.get(key)
    return default if text is None else whole(text, key, lo, hi)


def _flag(params: Mapping[str, str], key: str, default: bool = False) -> bool:
    text = params.get(key)
    if text is None:
        return default
    if text in ("0", "1"):
        return text == "1"
    raise AttnvizError(f"'{key}' should be 0 or 1, got {text[:20]!r}")


def _array(text: str, key: str, shape: tuple[int, ...]) -> np.ndarray:
    parts = text.split("_")
    if len(parts) != math.prod(shape):
        raise AttnvizError(
            f"'{key}' holds {len(parts)} numbers but shape {shape} needs {math.prod(shape)} "
            f"(the link may have been cut short)"
        )
    values = []
    for part in parts:
        if len(part) > MAX_NUMBER_CHARS or not _NUMBER.fullmatch(part.lower()):
            raise AttnvizError(f"'{key}' holds {part[:20]!r}, which is not a number")
        v = float(part)
        if not math.isfinite(v) or abs(v) > MAX_ABS:
            raise AttnvizError(f"'{key}' holds {part[:20]}, which is not a finite number up to 1e6")
        values.append(v)
    return np.array(values, dtype=np.float32).reshape(shape)


def decode(params: Mapping[str, str], *, tabs: tuple[str, ...] = ()) -> Link:
    """Query parameters -> Link. Raises AttnvizError naming the first parameter that is wrong."""
    if not params:
        return Link()
    total = sum(len(str(k)) + len(str(v)) for k, v in params.items())
    if total > MAX_PARAM_CHARS:
        raise AttnvizError(f"the link is {total} characters long, more than {MAX_PARAM_CHARS}")
    preset = params.get("p", "classic")
    if preset not in examples.PRESETS:
        raise AttnvizError(
            f"'p' names no preset: {preset[:20]!r} (try {', '.join(examples.PRESETS)})"
        )
    match = _SHAPE.fullmatch(params.get("s", "2x3x5"))
    if not match:
        raise AttnvizError(f"'s' should look like 2x3x5, got {params.get('s', '')[:20]!r}")
    shape = tuple(int(g) for g in match.groups())
    limits = (examples.MAX_B, examples.MAX_T, examples.MAX_H)
    if any(not 1 <= n <= m for n, m in zip(shape, limits, strict=True)):
        raise AttnvizError(f"'s' asks for shape {shape}; the most is {limits}")
    b, t, h = shape
    opens = examples.opens_with(preset)  # what sm= and mk= mean when the link leaves them out
    x = _array(params["x"], "x", (b, t, h)) if "x" in params else None
    w = _array(params["w"], "w", (b, t)) if "w" in params else None
    mask = None
    if "m" in params:
        rows = params["m"].split("_")
        if len(rows) != b or any(len(r) != t or set(r) - {"0", "1"} for r in rows):
            raise AttnvizError(f"'m' should be {b} groups of {t} zeros and ones, split by _")
        mask = np.array([[c == "1" for c in r] for r in rows], dtype=bool)
    tab = params.get("tab", "")
    if tab and tab not in tabs:
        raise AttnvizError(f"'tab' names no section: {tab[:20]!r}")
    cell_text = params.get("cell", "0_0")
    cell_match = _CELL.fullmatch(cell_text)
    if not cell_match or int(cell_match[1]) >= b or int(cell_match[2]) >= h:
        raise AttnvizError(
            f"'cell' should be sentence_hidden inside {(b, h)}, got {cell_text[:20]!r}"
        )
    expr = params.get("e", "")
    if len(expr) > MAX_EXPR_CHARS or any(ord(c) < 32 for c in expr):
        raise AttnvizError(f"'e' should be one line of at most {MAX_EXPR_CHARS} characters")
    return Link(
        expr=expr,
        preset=preset,
        shape=(b, t, h),
        seed=_int(params, "seed", 0, 999_999),
        softmax=_flag(params, "sm", opens[0]),
        use_mask=_flag(params, "mk", opens[1]),
        x=x,
        w=w,
        mask=mask,
        tab=tab,
        step=_int(params, "step", 0, 99),
        all_steps=_flag(params, "all"),
        cell=(int(cell_match[1]), int(cell_match[2])),
    )


EXAMPLE_KEYS = ("p", "s", "seed", "sm", "mk", "x", "w", "m")  # what the example is (no view state)


def example_query(params: Mapping[str, str]) -> str:
    """The example part of a link -> its canonical query string ('' for the classic example).

    Raises AttnvizError (from ``decode``) when those parameters are tampered with."""
    lk = decode({k: str(params[k]) for k in EXAMPLE_KEYS if k in params})
    canonical = encode(
        Link(
            preset=lk.preset,
            shape=lk.shape,
            seed=lk.seed,
            softmax=lk.softmax,
            use_mask=lk.use_mask,
            x=lk.x,
            w=lk.w,
            mask=lk.mask,
        )
    )
    return "" if canonical == encode(Link()) else urlencode(canonical)


def example_tensors(query: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A canonical example query -> net_output (B, T, H) and the weights actually applied (B, T)."""
    lk = decode(dict(parse_qsl(query)))
    b, t, h = lk.shape
    ex = examples.preset(lk.preset, b, t, h, seed=lk.seed)
    x = ex.net_output if lk.x is None else torch.from_numpy(lk.x)
    w = ex.att_scores if lk.w is None else torch.from_numpy(lk.w)
    mask = ex.mask if lk.mask is None else torch.from_numpy(lk.mask)
    applied = attnviz.attention_weights(
        w,
        mask=mask if lk.use_mask else None,
        normalize="softmax" if lk.softmax else None,
    )  # (B, T)
    return x, applied


def walkthrough_params(params: Mapping[str, str]) -> dict[str, str]:
    """The example's parameters only (preset, shape, seed, options, values), for another page."""
    return {k: v for k, v in params.items() if k in EXAMPLE_KEYS}


def sibling(url: str, page: str, current: str = "playground") -> str:
    """The address of another page of the same app: ``http://h/playground`` (or the app's root,
    where the default page is served, ``http://h/``) -> ``http://h/page``."""
    base = url.split("?")[0].rstrip("/")
    if base.endswith(f"/{current}"):
        base = base[: -len(current) - 1]
    return f"{base}/{page}"
