"""Attention pooling as a sentence classifier: where ``att_scores`` come from.

    ids (B, T) -> embedding (B, T, H) -> encoder -> net_output (B, T, H)
    ids (B, T) -> embedding (B, T, H) @ v -> scores (B, T) -> masked softmax -> att_scores (B, T)
    (net_output * att_scores[..., None]).sum(axis=1) -> (B, H) -> linear head -> logits (B, 3)

The encoder is one causal convolution: word t's row of ``net_output`` reads word t and the
``width - 1`` words before it, so "not good" can differ from "good". Padding rows are zero. The
score of a word reads the word alone (its embedding): it says where to look, ``net_output`` says
what is there. The three classes are ``LABELS``: negative, positive, neutral.

Every pooling is the same one-liner with different weights (``POOLINGS``, one registry):

- ``attention``: att_scores = masked softmax of a learned score, ``embedding @ v``;
- ``mean``: every real word weighs 1 / (its sentence's length);
- ``last``: the last real word weighs 1;
- ``trap``: attention's weights, pooled with ``att_scores[:, None]`` instead of ``[..., None]``.
  At T == H it runs and trains without an error: the weights of the words scale the hidden
  features instead (the silent trap, here with its cost in accuracy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnviz.errors import AttnvizError
from attnviz.pooling.corpus import LABELS


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """scores (B, T), mask (B, T) bool -> weights (B, T): softmax over the real words, 0 on padding.

    A sentence with no real word gets all zeros (never NaN).
    """
    scores = scores.masked_fill(~mask, float("-inf"))  # (B, T)
    weights = torch.softmax(scores, dim=1)  # (B, T), NaN on an all-padding row
    return torch.nan_to_num(weights, nan=0.0)


def mean_weights(scores: Tensor, mask: Tensor) -> Tensor:
    """-> (B, T): 1 / length on each real word (``scores`` only gives the shape)."""
    m = mask.to(scores.dtype)  # (B, T)
    return m / m.sum(dim=1, keepdim=True).clamp(min=1)


def last_weights(scores: Tensor, mask: Tensor) -> Tensor:
    """-> (B, T): 1 on the last real word of each sentence, 0 elsewhere."""
    lengths = mask.sum(dim=1)  # (B,)
    t = torch.arange(mask.shape[1], device=mask.device)  # (T,)
    return (t[None, :] == (lengths - 1)[:, None]).to(scores.dtype)  # (B, T)


def pool(net_output: Tensor, att_scores: Tensor) -> Tensor:
    """net_output (B, T, H), att_scores (B, T) -> (B, H): the one-liner."""
    return (net_output * att_scores[..., None]).sum(axis=1)  # (B,T,H) * (B,T,1) -> sum over T


def pool_trap(net_output: Tensor, att_scores: Tensor) -> Tensor:
    """The trap: ``att_scores[:, None]`` is (B, 1, T), so at T == H it scales the hidden axis."""
    b, t, h = net_output.shape
    if t != h:
        raise AttnvizError(
            f"The trap att_scores[:, None] -> {(b, 1, t)} cannot multiply net_output {(b, t, h)}: "
            f"shapes align from the right, so T = {t} meets H = {h}. It only runs (silently "
            f"wrong) when T == H."
        )
    return (net_output * att_scores[:, None]).sum(axis=1)  # (B,T,H) * (B,1,T): T pairs with H


@dataclass(frozen=True)
class Pooling:
    """One way to pool: ``weights(scores, mask) -> (B, T)``, then ``pool(net_output, weights)``."""

    title: str
    weights: Callable[[Tensor, Tensor], Tensor]
    pool: Callable[[Tensor, Tensor], Tensor]
    learned: bool  # do the weights come from the learned score?


POOLINGS: dict[str, Pooling] = {
    "attention": Pooling("attention pooling", masked_softmax, pool, learned=True),
    "mean": Pooling("mean pooling", mean_weights, pool, learned=False),
    "last": Pooling("last word", last_weights, pool, learned=False),
    "trap": Pooling("attention with the trap att_scores[:, None]", masked_softmax, pool_trap, True),
}


def check_pooling(name: str) -> Pooling:
    """The registry's entry for ``name``, or AttnvizError naming the choices."""
    if name not in POOLINGS:
        raise AttnvizError(f"Unknown pooling {name!r}; choose one of {', '.join(POOLINGS)}.")
    return POOLINGS[name]


class PoolingClassifier(nn.Module):
    """Embedding -> causal convolution -> net_output (B, T, H) -> pooling -> 3 logits (B, 3).

    The score of a word reads the word itself (its embedding, the "key"); what is pooled reads
    the word in its context (``net_output``, the "value"): where to look and what is there.
    """

    def __init__(self, vocab_size: int, pooling: str, *, hidden: int = 20, width: int = 3) -> None:
        super().__init__()
        self.pooling = check_pooling(pooling)
        self.width = width
        self.embedding = nn.Embedding(vocab_size, hidden, padding_idx=0)
        self.encoder = nn.Conv1d(hidden, hidden, kernel_size=width)
        self.score = nn.Linear(hidden, 1, bias=False)  # v: one score per word
        self.head = nn.Linear(hidden, len(LABELS))

    def encode(self, ids: Tensor, mask: Tensor) -> Tensor:
        """ids (B, T), mask (B, T) -> net_output (B, T, H), zero on padding."""
        e = self.embedding(ids).transpose(1, 2)  # (B, H, T)
        e = nn.functional.pad(e, (self.width - 1, 0))  # (B, H, T + width - 1): words before t
        x = torch.tanh(self.encoder(e)).transpose(1, 2)  # (B, H, T) -> (B, T, H)
        return x * mask[..., None]  # (B, T, H)

    def scores(self, ids: Tensor) -> Tensor:
        """ids (B, T) -> raw scores (B, T): ``keys @ v``, keys = the words' embeddings (B, T, H)."""
        return self.score(self.embedding(ids))[..., 0]  # (B, T, H) @ (H, 1) -> (B, T)

    def forward(self, ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """ids (B, T), mask (B, T) -> logits (B, 3), att_scores (B, T)."""
        net_output = self.encode(ids, mask)  # (B, T, H)
        att_scores = self.pooling.weights(self.scores(ids), mask)  # (B, T)
        pooled = self.pooling.pool(net_output, att_scores)  # (B, H): the one-liner
        return self.head(pooled), att_scores  # (B, 3), (B, T)
