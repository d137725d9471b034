"""Checking an einsum equation against its operands' shapes, before PyTorch sees either.

Letters name axes; ``...`` stands for the axes a term does not name, and the ``...`` parts of
all operands broadcast together with ``torch.broadcast_shapes`` semantics. Any number of operands
(one, two, five...; the expression's own size bounds them). Returns the size of the iteration
space: the interpreter charges it as work once per pairwise contraction, and caps it like any
tensor, since no intermediate PyTorch makes can hold more elements than that space.
"""

from __future__ import annotations

import re

import torch

from attnviz.sandbox.language import EINSUM_MAX_LENGTH, ErrorKind
from attnviz.sandbox.messages import numel, plural

__all__ = ["EquationError", "check"]

_TERM = re.compile(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*")


class EquationError(Exception):
    """Internal: why an equation does not fit; in_equation says whether to point at the string."""

    def __init__(self, message: str, kind: ErrorKind, *, in_equation: bool = False) -> None:
        super().__init__(message)
        self.message, self.kind, self.in_equation = message, kind, in_equation


def _refuse(message: str, kind: ErrorKind = ErrorKind.VALUE, *, eq: bool = True) -> EquationError:
    return EquationError(message, kind, in_equation=eq)


def check(equation: str, shapes: list[tuple[int, ...]]) -> int:
    """equation "bth,bt->bh", shapes [(B, T, H), (B, T)] -> the iteration-space size B*T*H.

    Raises EquationError with a message naming the term, the letter or the shapes at fault.
    """
    if len(equation) > EINSUM_MAX_LENGTH or not re.fullmatch(r"[A-Za-z.,\->\s]*", equation):
        raise _refuse(
            "an einsum equation holds letters, commas, ... and one ->, e.g. 'bth,bt->bh'."
        )
    eq = re.sub(r"\s", "", equation)
    if not shapes:
        raise _refuse(
            "einsum takes at least one tensor after the equation, e.g. "
            "einsum('bth,bt->bh', net_output, att_scores).",
            ErrorKind.TYPE,
            eq=False,
        )
    if eq.count("->") > 1 or ("-" in eq.replace("->", "")) or (">" in eq.replace("->", "")):
        raise _refuse(f"einsum equation {equation!r}: use -> once.")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise _refuse(
            f"einsum equation {equation!r} describes {plural(len(terms), 'tensor')} "
            f"but {len(shapes)} were given.",
            eq=False,
        )
    sizes: dict[str, int] = {}
    ellipses: list[tuple[int, ...]] = []
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        if not _TERM.fullmatch(term):
            raise _refuse(f"einsum term {term!r} is not valid (letters and at most one ...).")
        letters = term.replace("...", "")
        if ("..." not in term and len(letters) != len(shape)) or len(letters) > len(shape):
            more = " (and ... for any others)" if "..." in term else ""
            raise _refuse(
                f"einsum term {term!r} names {plural(len(letters), 'axis')}{more}"
                f" but tensor {i + 1} has shape {shape}.",
                ErrorKind.SHAPE,
                eq=False,
            )
        if "..." in term:
            head = term.index("...")
            n_ell = len(shape) - len(letters)
            ellipses.append(shape[head : head + n_ell])
            named = list(shape[:head]) + list(shape[head + n_ell :])
        else:
            named = list(shape)
        own: dict[str, int] = {}
        for letter, size in zip(letters, named, strict=True):
            if own.setdefault(letter, size) != size:
                raise _refuse(
                    f"einsum {equation!r}: letter {letter} appears twice in term {term!r} "
                    f"with sizes {own[letter]} and {size} of tensor {i + 1} {shape}; a "
                    f"repeated letter (a diagonal) needs equal sizes.",
                    ErrorKind.SHAPE,
                    eq=False,
                )
            old = sizes.get(letter)
            if old is not None and old != size and 1 not in (old, size):
                raise _refuse(
                    f"einsum {equation!r}: letter {letter} has size {old} in one place and "
                    f"{size} in tensor {i + 1} {shape}; the same letter must have the same size.",
                    ErrorKind.SHAPE,
                    eq=False,
                )
            if old is None or old == 1:
                sizes[letter] = size
    if arrow:
        if not _TERM.fullmatch(rhs):
            raise _refuse(f"einsum output {rhs!r} is not valid.")
        out_letters = rhs.replace("...", "")
        if len(set(out_letters)) != len(out_letters):
            raise _refuse(f"einsum output {rhs!r} repeats a letter.")
        missing = [c for c in out_letters if c not in sizes]
        if missing:
            raise _refuse(f"einsum output letter {missing[0]} appears in no input.")
        if "..." in rhs and not ellipses:
            raise _refuse("einsum output has ... but no input does.")
    ell: tuple[int, ...] = ()
    if ellipses:
        try:
            ell = tuple(torch.broadcast_shapes(*ellipses))
        except RuntimeError:
            parts = ", ".join(str(s) for s in ellipses)
            raise _refuse(
                f"einsum {equation!r}: the axes that ... stands for ({parts}) do not "
                "broadcast: lined up from the right, sizes must be equal or 1.",
                ErrorKind.SHAPE,
                eq=False,
            ) from None
    return numel(tuple(sizes.values())) * numel(ell)
