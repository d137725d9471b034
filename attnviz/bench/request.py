"""A benchmark request from a browser, parsed strictly into a ``BenchSpec`` before it reaches the worker.

    spec = parse_request(device, size, methods, devices=["cpu"], sizes=offered_sizes(cap))

Widget values are the visitor's: a forged multiselect can repeat a method 200 times or name one
that is not offered, a forged selectbox can carry any size or device. Here the device must be one
offered, each method one offered for the size (repeats are dropped, the order kept), and a size
that is not offered is clamped to the largest offered one that is no bigger. Anything malformed is
refused with a plain AttnvizError that never repeats the visitor's text. Core layer: torch only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnviz.bench.harness import LOOP_MAX_WORDS, input_bytes
from attnviz.bench.sweep import sizes_up_to
from attnviz.bench.worker import BenchSpec
from attnviz.errors import AttnvizError

MAX_LISTED = 64  # a multiselect longer than this is refused without reading it


def offered_sizes(max_input_bytes: int) -> list[tuple[int, int, int]]:
    """The ladder's sizes (B, T, H) whose float32 inputs fit in ``max_input_bytes``."""
    return [tuple(s) for s in sizes_up_to(max_input_bytes)]


def offered_methods(shape: tuple[int, int, int]) -> list[str]:
    """Every method, "loop" only where it stays short (B*T <= LOOP_MAX_WORDS)."""
    from attnviz.aggregation import METHODS

    return [m for m in METHODS if m != "loop" or shape[0] * shape[1] <= LOOP_MAX_WORDS]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_size(size: object, sizes: Sequence[tuple[int, int, int]]) -> tuple[int, int, int]:
    """An offered (B, T, H): ``size`` itself if offered, else the largest offered size whose
    inputs are no bigger (the smallest offered one below all of them)."""
    if not sizes:
        raise AttnvizError("No benchmark size is offered on this server.")
    if not isinstance(size, tuple | list) or len(size) != 3 or not all(map(_is_int, size)):
        raise AttnvizError("The size must be one of the offered B × T × H; pick one from the list.")
    shape = tuple(size)
    if shape in sizes:
        return shape
    if min(shape) < 1:
        raise AttnvizError("Every axis of the size needs at least 1; pick one from the list.")
    need = input_bytes(shape, torch.float32)
    fitting = [s for s in sizes if input_bytes(s, torch.float32) <= need]
    return max(fitting, key=lambda s: input_bytes(s, torch.float32)) if fitting else sizes[0]


def parse_methods(methods: object, offered: Sequence[str]) -> tuple[str, ...]:
    """The offered methods named in ``methods``, each once, in the order first given."""
    if not isinstance(methods, list | tuple) or len(methods) > MAX_LISTED:
        raise AttnvizError("The methods must be picked from the list.")
    out: list[str] = []
    for m in methods:
        if not isinstance(m, str) or m not in offered:
            raise AttnvizError(
                f"Every method must be one of {', '.join(offered)} at this size; pick them from "
                f"the list."
            )
        if m not in out:
            out.append(m)
    if not out:
        raise AttnvizError("Pick at least one method to time.")
    return tuple(out)


def parse_request(
    device: object,
    size: object,
    methods: object,
    *,
    devices: Sequence[str],
    sizes: Sequence[tuple[int, int, int]],
    rounds: int = 9,
) -> BenchSpec:
    """Widget values -> a BenchSpec the worker can run, or AttnvizError with a plain message."""
    if not isinstance(device, str) or device not in devices:
        raise AttnvizError(f"The device must be one of {', '.join(devices)}.")
    shape = parse_size(size, sizes)
    return BenchSpec(
        shape=shape,
        device=device,
        methods=parse_methods(methods, offered_methods(shape)),
        rounds=rounds,
    )
