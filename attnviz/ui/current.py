"""The example on screen, as one typed value: the editors build it, every section reads it.

No torch arrays in session state and no numpy<->torch round trips per section: the arrays are
float32/bool numpy, the library's results for them come from ``attnviz.ui.cached`` (computed once
per distinct example, shared by every visitor who has it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.ui import cached


@dataclass(frozen=True, eq=False)
class Current:
    """x (B, T, H) float32, w (B, T) float32 raw scores, m (B, T) bool (used when use_mask),
    softmax the scores?; weighted (B, H) and applied (B, T), the weights actually used."""

    x: np.ndarray
    w: np.ndarray
    m: np.ndarray
    softmax: bool
    use_mask: bool
    weighted: np.ndarray
    applied: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, w: np.ndarray, m: np.ndarray, softmax: bool, use_mask: bool):
        weighted, applied = cached.outcome(x, w, m if use_mask else None, softmax)
        return cls(x, w, m, softmax, use_mask, weighted, applied)

    @property
    def mask(self) -> np.ndarray | None:
        return self.m if self.use_mask else None

    @property
    def normalize(self) -> str | None:
        return "softmax" if self.softmax else None

    @property
    def shape(self) -> tuple[int, int, int]:
        b, t, h = self.x.shape
        return int(b), int(t), int(h)

    @property
    def plain(self) -> bool:
        """No softmax and no mask: the weights applied are the scores as typed."""
        return not (self.softmax or self.use_mask)
