"""Example inputs a teacher reaches for: the classic 2x3x5 example and a few presets.

Every example is a pair ``net_output`` (B, T, H) and ``att_scores`` (B, T), float32 on the CPU:
B sentences, T words per sentence, H hidden features per word.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.errors import AttnvizError

AXIS_NAMES = ("sentence", "word", "hidden")
AXIS_LETTERS = ("B", "T", "H")

# Bounds on the size of a preset: small enough to read every number on screen.
MAX_B, MAX_T, MAX_H = 4, 8, 16

_CLASSIC_NET_OUTPUT = [
    [
        [0.7718, 0.3856, 0.2545, 0.7502, 0.5844],
        [0.4400, 0.3753, 0.4840, 0.2483, 0.4751],
        [0.4927, 0.7380, 0.1502, 0.5222, 0.0093],
    ],
    [
        [0.5859, 0.0010, 0.2261, 0.6318, 0.5636],
        [0.0996, 0.2178, 0.9003, 0.4708, 0.7501],
        [0.4244, 0.7947, 0.5711, 0.0720, 0.1106],
    ],
]
_CLASSIC_ATT_SCORES = [
    [0.2425, 0.5279, 0.2295],
    [0.2461, 0.4789, 0.2751],
]


@dataclass(frozen=True)
class Example:
    """An example ready to aggregate.

    net_output: (B, T, H); att_scores: (B, T); mask: (B, T) bool or None (False marks padding);
    normalize: None, or "softmax" when att_scores are raw scores to be softmaxed over words.
    """

    name: str
    description: str
    net_output: Tensor
    att_scores: Tensor
    mask: Tensor | None = None
    normalize: str | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(B, T, H)."""
        b, t, h = self.net_output.shape
        return (b, t, h)


def classic() -> tuple[Tensor, Tensor]:
    """The classic example: net_output (2, 3, 5) and att_scores (2, 3), each row of weights sums to 1."""
    net_output = torch.tensor(_CLASSIC_NET_OUTPUT, dtype=torch.float32)  # (2, 3, 5)
    att_scores = torch.tensor(_CLASSIC_ATT_SCORES, dtype=torch.float32)  # (2, 3)
    return net_output, att_scores


def _check_size(b: int, t: int, h: int) -> None:
    for letter, name, size in zip(AXIS_LETTERS, AXIS_NAMES, (b, t, h), strict=True):
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise AttnvizError(
                f"{letter} ({name}s) must be a whole number of at least 1, got {size!r}; "
                f"the shape asked for was {(b, t, h)}."
            )


def random_example(b: int = 2, t: int = 3, h: int = 5, *, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Seeded random net_output (b, t, h) in [0, 1) and att_scores (b, t) whose rows sum to 1."""
    _check_size(b, t, h)
    g = torch.Generator().manual_seed(int(seed))
    net_output = torch.rand(b, t, h, generator=g)  # (B, T, H)
    raw = torch.randn(b, t, generator=g)  # (B, T)
    att_scores = raw.softmax(dim=1)  # (B, T), each row sums to 1
    return net_output, att_scores


def _words(b: int, t: int, h: int, seed: int) -> Tensor:
    """The classic net_output at 2x3x5, seeded random values at any other shape: (B, T, H)."""
    return classic()[0] if (b, t, h) == (2, 3, 5) else random_example(b, t, h, seed=seed)[0]


def uniform(b: int = 2, t: int = 3, h: int = 5, *, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Equal weights 1/T: the weighted sum becomes mean pooling over words."""
    net_output = _words(b, t, h, seed)  # (B, T, H)
    att_scores = torch.full((b, t), 1.0 / t)  # (B, T)
    return net_output, att_scores


def one_hot(
    b: int = 2, t: int = 3, h: int = 5, *, word: int | None = None, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """All the weight on one word (default: word 1, or 0 when T == 1): selects its hidden vector."""
    _check_size(b, t, h)
    word = min(1, t - 1) if word is None else word
    if not 0 <= word < t:
        raise AttnvizError(f"word must be between 0 and T-1 = {t - 1} for shape {(b, t, h)}.")
    net_output = _words(b, t, h, seed)  # (B, T, H)
    att_scores = torch.zeros(b, t)  # (B, T)
    att_scores[:, word] = 1.0
    return net_output, att_scores


def raw_scores(b: int = 2, t: int = 3, h: int = 5, *, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Unnormalised scores (any real numbers) to be softmaxed over words before weighting."""
    _check_size(b, t, h)
    if (b, t, h) == (2, 3, 5):
        net_output, _ = classic()
        scores = torch.tensor([[0.5, 1.2, -0.3], [2.0, -1.0, 0.1]])  # (2, 3)
        return net_output, scores
    g = torch.Generator().manual_seed(int(seed) + 1)
    net_output = torch.rand(b, t, h, generator=g)  # (B, T, H)
    scores = (2 * torch.randn(b, t, generator=g)).round(decimals=1)  # (B, T)
    return net_output, scores


def padded(b: int = 2, t: int = 3, h: int = 5, *, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """A padded batch: sentence i has T - i real words (at least 1); mask is False on padding.

    Returns net_output (B, T, H) with zeros on padded words, att_scores (B, T) that sum to 1 over
    the real words, and mask (B, T) bool.
    """
    _check_size(b, t, h)
    net_output = _words(b, t, h, seed)  # (B, T, H)
    lengths = torch.tensor([max(t - i, 1) for i in range(b)])  # (B,)
    mask = torch.arange(t)[None, :] < lengths[:, None]  # (B, T)
    net_output = net_output * mask[..., None]  # (B, T, H), padded words zeroed
    att_scores = mask / lengths[:, None]  # (B, T), uniform over the real words
    return net_output, att_scores.to(torch.float32), mask


def square(b: int = 2, t: int = 4, h: int = 4, *, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Seeded random values whose weights are far from uniform, meant for T == H (it opens at
    SQUARE_SHAPE): the shape where a wrong axis, ``att_scores[:, None]``, raises no error."""
    _check_size(b, t, h)
    g = torch.Generator().manual_seed(int(seed) + 2)
    net_output = torch.rand(b, t, h, generator=g)  # (B, T, H)
    att_scores = (2 * torch.randn(b, t, generator=g)).softmax(dim=1)  # (B, T), rows sum to 1
    return net_output, att_scores


SQUARE_SHAPE = (2, 4, 4)  # (B, T, H): T == H


def _classic_example(b: int, t: int, h: int, seed: int) -> Example:
    if (b, t, h) == (2, 3, 5):
        x, w = classic()
        return Example("classic", "The classic example: 2 sentences x 3 words x 5 hidden.", x, w)
    x, w = random_example(b, t, h, seed=seed)
    return Example(
        "classic", f"Seeded random values of shape {(b, t, h)} (the classic one is 2x3x5).", x, w
    )


def _preset(name: str, description: str, fn: Callable[..., tuple]) -> Callable[..., Example]:
    def build(b: int, t: int, h: int, seed: int) -> Example:
        out = fn(b, t, h, seed=seed)
        mask = out[2] if len(out) == 3 else None
        normalize = "softmax" if name == "softmax" else None
        return Example(name, description, out[0], out[1], mask=mask, normalize=normalize)

    return build


PRESETS: dict[str, Callable[[int, int, int, int], Example]] = {
    "classic": _classic_example,
    "uniform": _preset(
        "uniform", "Uniform weights 1/T: the result is the mean over words.", uniform
    ),
    "one-hot": _preset(
        "one-hot", "One-hot weights: the result selects one word of each sentence.", one_hot
    ),
    "softmax": _preset("softmax", "Raw scores, softmaxed over words before weighting.", raw_scores),
    "padded": _preset(
        "padded",
        "A padded batch: sentence i has T - i real words; the mask leaves padding out.",
        padded,
    ),
    "random": _preset(
        "random", "Seeded random values; each row of weights sums to 1.", random_example
    ),
    "square": _preset(
        "square",
        "T == H (4 words, 4 hidden): att_scores[:, None] runs without an error here, and is wrong.",
        square,
    ),
}

#: The shape a preset opens at when picked from the menu, where it has one of its own.
OPENS_AT: dict[str, tuple[int, int, int]] = {"square": SQUARE_SHAPE}


@functools.cache  # a property of the preset: built once, at the smallest shape
def opens_with(name: str) -> tuple[bool, bool]:
    """(softmax the scores?, mask the padding?) as preset ``name`` opens: the softmax preset's
    scores are raw, the padded preset has padding. What the preset menu sets, and what a link
    that names the preset without saying otherwise means."""
    ex = PRESETS[name](1, 1, 1, 0)
    return ex.normalize == "softmax", ex.mask is not None


def preset(name: str, b: int = 2, t: int = 3, h: int = 5, *, seed: int = 0) -> Example:
    """Build a preset by name (see PRESETS) at shape (b, t, h)."""
    if name not in PRESETS:
        raise AttnvizError(f"Unknown preset {name!r}; choose one of {', '.join(PRESETS)}.")
    _check_size(b, t, h)
    return PRESETS[name](b, t, h, seed)
