"""Bytes an evaluation touches, counted by distinct storage, before anything real is allocated.

Counting elements per intermediate misses views: ``x.view(-1)[:, None] * w.expand(1, N)`` makes
one large storage, and every later ``[:1, :1]`` or ``.T`` of it is a tiny shape over that same
storage. A ledger instead keeps every storage it has seen (by identity, holding a reference so
an address is never reused while it counts) and adds each one's bytes once. The shape-only pass
runs on ``meta`` tensors, whose storages have real sizes but no memory, so the budget is spent
there first; the real pass only repeats what was approved.
"""

from __future__ import annotations

from torch import Tensor

__all__ = ["Ledger", "storage_bytes"]


def storage_bytes(t: Tensor) -> int:
    """Bytes of the storage behind t (a view reports its whole base's storage)."""
    return int(t.untyped_storage().nbytes())


class Ledger:
    """Distinct storages seen so far and their total bytes."""

    def __init__(self) -> None:
        self._seen: dict[int, Tensor] = {}  # storage identity -> a tensor keeping it alive
        self.total = 0

    def add(self, t: Tensor) -> int:
        """Count t's storage if it is new; returns the running total in bytes."""
        key = t.untyped_storage()._cdata
        if key not in self._seen:
            self._seen[key] = t
            self.total += storage_bytes(t)
        return self.total
