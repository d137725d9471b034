"""Subscripts: x[...] with ints, slices, None and ..., and indexing a shape tuple.

A mixin of ``Interpreter``; every index is checked against the shape before PyTorch sees it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from torch import Tensor

from attnviz.sandbox.language import ErrorKind
from attnviz.sandbox.messages import (
    describe,
    is_int,
    plural,
)

if TYPE_CHECKING:
    pass

__all__ = ["Indexing"]


class Indexing:
    """eval_Subscript and its checks, for Interpreter."""

    # ---- subscripts and attributes ----------------------------------------------------------
    def eval_Subscript(self, node: ast.Subscript) -> Any:
        value = self.run(node.value)
        index = self.run(node.slice)
        if isinstance(value, tuple):
            return self.record(node, "index", self.index_tuple(node, value, index))
        if not isinstance(value, Tensor):
            raise self.error(
                node,
                f"only tensors and shapes can be indexed, not {describe(value)}.",
                kind=ErrorKind.TYPE,
            )
        self.begin(node)
        items = index if isinstance(index, tuple) else (index,)
        shape = tuple(value.shape)
        if sum(item is Ellipsis for item in items) > 1:
            self.check_items(node, items)
            items = self.without_ellipses(node, shape, items)
            index = items
        self.check_index(node, shape, items)
        out = self.torch_call(node, value.__getitem__, index)
        return self.record(
            node,
            "index",
            out,
            operands=(value,),
            note=self.index_note(node, shape, items, tuple(out.shape)),
        )

    def without_ellipses(self, node: ast.Subscript, shape: tuple[int, ...], items: tuple) -> tuple:
        """An index with several ... as PyTorch reads it, written without any.

        PyTorch lets every ... stand for as many axes as the index does not name (ndim minus the
        ints and slices), moving along the tensor as it is being indexed; a full slice that falls
        past the last axis changes nothing, anything else past it is an error.
        x (2, 3, 5): x[..., ..., :, :] -> x[:, :, :]; x[..., 0, ...] -> x[:, :, 0].
        """
        named = sum(1 for i in items if i is not None and i is not Ellipsis)
        skip = len(shape) - named
        if skip < 0:
            raise self.error(
                node,
                f"`{self.text(node)}` indexes {plural(named, 'axis')} but "
                f"{self.name_of(node.value, 'the tensor')} {shape} has only {len(shape)}.",
                kind=ErrorKind.SHAPE,
            )
        out: list = []
        pos, ndim = 0, len(shape)
        for item in items:
            if item is Ellipsis:
                out.extend([slice(None)] * max(min(skip, ndim - pos), 0))
                pos += skip
                continue
            past = pos > ndim if item is None else pos >= ndim
            if past and item != slice(None):
                what = "None" if item is None else f"index {item}" if is_int(item) else "a slice"
                raise self.error(
                    node.slice,
                    f"`{self.text(node)}`: with several ..., each stands for {plural(skip, 'axis')} "
                    f"of {self.name_of(node.value, 'the tensor')} {shape} (the axes the index "
                    f"does not name), so {what} falls past the last axis. Write one ... instead.",
                    kind=ErrorKind.SHAPE,
                )
            if not past:
                out.append(item)
            ndim += 1 if item is None else -1 if is_int(item) else 0
            pos += 0 if is_int(item) else 1
        return tuple(out)

    def check_items(self, node: ast.Subscript, items: tuple) -> None:
        """Every item is an int, a slice with a positive step, None or ...."""
        for item in items:
            if not (is_int(item) or isinstance(item, slice) or item is None or item is Ellipsis):
                raise self.error(
                    node.slice,
                    f"an index may be a whole number, a slice, None or ..., not {describe(item)}.",
                    kind=ErrorKind.TYPE,
                )
            if isinstance(item, slice) and item.step is not None and item.step <= 0:
                raise self.error(
                    node.slice,
                    f"a slice step must be positive in PyTorch, got {item.step}.",
                    kind=ErrorKind.VALUE,
                )

    def check_index(self, node: ast.Subscript, shape: tuple[int, ...], items: tuple) -> None:
        """items (at most one ...) fit shape: not too many axes, every int in range."""
        name = self.name_of(node.value, "the tensor")
        self.check_items(node, items)
        used = [item for item in items if item is not None and item is not Ellipsis]
        if len(used) > len(shape):
            raise self.error(
                node,
                f"`{self.text(node)}` indexes {plural(len(used), 'axis')}"
                + f" but {name} {shape} has only {len(shape)}.",
                kind=ErrorKind.SHAPE,
            )
        # Which axis does each int index hit? Left of ... from the left, right of it from the right.
        if Ellipsis in items:
            cut = items.index(Ellipsis)
            before, after = items[:cut], items[cut + 1 :]
        else:
            before, after = items, ()
        axis = 0
        hits = []
        for item in before:
            if item is not None:
                hits.append((axis, item))
                axis += 1
        axis = len(shape) - sum(1 for it in after if it is not None)
        for item in after:
            if item is not None:
                hits.append((axis, item))
                axis += 1
        for ax, item in hits:
            if is_int(item) and not -shape[ax] <= item < shape[ax]:
                raise self.error(
                    node.slice,
                    f"index {item} is out of range for axis {ax} of {name} {shape}, which has "
                    f"size {shape[ax]} (valid: {-shape[ax]} to {shape[ax] - 1}).",
                    kind=ErrorKind.SHAPE,
                )
        new_ndim = len(shape) - sum(is_int(i) for i in items) + sum(i is None for i in items)
        if new_ndim > self.limits.max_ndim:
            raise self.error(
                node,
                f"`{self.text(node)}` would have {new_ndim} axes; the limit is {self.limits.max_ndim}.",
                kind=ErrorKind.LIMIT,
            )

    def index_note(
        self, node: ast.Subscript, shape: tuple, items: tuple, out: tuple[int, ...]
    ) -> str:
        nones = sum(i is None for i in items)
        ints = sum(is_int(i) for i in items)
        parts = []
        if nones:
            parts.append(f"None inserts {plural(nones, 'new axis')} of size 1")
        if ints:
            parts.append(f"each whole-number index removes its axis ({ints})")
        if any(isinstance(i, slice) for i in items):
            parts.append("slices keep their axes")
        words = "; ".join(parts) if parts else "a view of the same data"
        return f"{shape} -> {out}: {words}"

    def index_tuple(self, node: ast.Subscript, value: tuple, index: Any) -> Any:
        if is_int(index):
            if not -len(value) <= index < len(value):
                raise self.error(
                    node.slice,
                    f"`{self.text(node.value)}` is {value} with {len(value)} entries; index "
                    f"{index} is out of range.",
                    kind=ErrorKind.VALUE,
                )
            return value[index]
        if isinstance(index, slice):
            if index.step == 0:
                raise self.error(node.slice, "a slice step cannot be zero.", kind=ErrorKind.VALUE)
            return value[index]
        raise self.error(
            node.slice,
            f"a shape is indexed with a whole number or a slice, not {describe(index)}.",
            kind=ErrorKind.TYPE,
        )
