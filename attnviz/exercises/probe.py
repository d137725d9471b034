"""What a call of the student's function did with torch, observed while it runs: how many torch
operations it ran, the one that raised (with its operands' shapes), and where a floating dtype
changed (a conversion such as ``.float()``, or a new tensor made in the default dtype), so that a
wrong dtype is blamed on what the code actually did."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

# tensor methods that change a tensor's dtype, as the student writes them
_CASTS = {
    "float": "`.float()`",
    "double": "`.double()`",
    "half": "`.half()`",
    "bfloat16": "`.bfloat16()`",
    "to": "`.to(...)`",
    "type": "`.type(...)`",
}
# functions that make a new tensor, in the default dtype unless told otherwise
_FACTORIES = {
    "zeros",
    "ones",
    "empty",
    "full",
    "tensor",
    "as_tensor",
    "arange",
    "linspace",
    "rand",
    "randn",
    "eye",
}


@dataclass(frozen=True)
class DtypeChange:
    """A floating tensor made or converted in a dtype: how (as the student writes it) and into
    which dtype; source is the dtype it was converted from (None for a new tensor)."""

    how: str
    dtype: torch.dtype
    source: torch.dtype | None = None


class Probe(TorchFunctionMode):
    """Counts the torch operations a call runs (nested ones excluded), remembers the last one that
    raised, with its operands' shapes, and every floating dtype change (``changes``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.failed: tuple[str, tuple[tuple[int, ...], ...]] | None = None
        self.failed_exc: BaseException | None = None
        self.changes: list[DtypeChange] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        kwargs = kwargs or {}
        try:
            result = func(*args, **kwargs)
        except Exception as exc:
            name = getattr(func, "__name__", str(func))
            shapes = tuple(tuple(a.shape) for a in flat(args) if isinstance(a, Tensor))
            self.failed, self.failed_exc = (name, shapes), exc
            raise
        if isinstance(result, Tensor) and result.is_floating_point():
            self._note(getattr(func, "__name__", ""), args, kwargs, result)
        return result

    def _note(self, name: str, args: Sequence[object], kwargs: dict, result: Tensor) -> None:
        source = args[0] if args and isinstance(args[0], Tensor) else None
        if name in _CASTS and source is not None and source.dtype != result.dtype:
            self.changes.append(DtypeChange(_CASTS[name], result.dtype, source.dtype))
        elif name in _FACTORIES and "dtype" not in kwargs:
            self.changes.append(DtypeChange(f"`torch.{name}(...)`", result.dtype))


def dtype_change(changes: Sequence[DtypeChange], got: object) -> DtypeChange | None:
    """The last of changes that made the dtype got (a result) has, if any."""
    made = [c for c in changes if isinstance(got, Tensor) and c.dtype == got.dtype]
    return made[-1] if made else None


def dtype_key(found: Sequence[DtypeChange | None]) -> str:
    """Which dtype mistake the changes found on the failed cases show: a conversion
    ("converted_dtype"), a new tensor in the default dtype ("wrong_dtype"), or neither seen."""
    if any(c is not None and c.source is not None for c in found):
        return "converted_dtype"
    return "wrong_dtype" if any(c is not None for c in found) else "dtype_changed"


def flat(args: Sequence[object]) -> list[object]:
    """Nested lists and tuples of arguments, flattened."""
    out: list[object] = []
    for a in args:
        if isinstance(a, list | tuple):
            out += flat(a)
        else:
            out.append(a)
    return out
