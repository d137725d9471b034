"""Explaining an exception the student's code raised: what kind of error it is, on which line, and
(when torch's own operation failed) which operation it was and on which shapes."""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Mapping

import numpy as np
import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_SKIP = (
    _HERE,
    os.path.dirname(os.path.abspath(torch.__file__)),
    os.path.dirname(os.path.abspath(np.__file__)),
)

# torch function name -> the operation in words (for "the failing operation was ...")
_OP_WORDS = {
    "mul": "a multiplication (`*`)",
    "__mul__": "a multiplication (`*`)",
    "__rmul__": "a multiplication (`*`)",
    "sub": "a subtraction (`-`)",
    "__sub__": "a subtraction (`-`)",
    "__rsub__": "a subtraction (`-`)",
    "rsub": "a subtraction (`-`)",
    "add": "an addition (`+`)",
    "__add__": "an addition (`+`)",
    "__radd__": "an addition (`+`)",
    "div": "a division (`/`)",
    "__truediv__": "a division (`/`)",
    "__rtruediv__": "a division (`/`)",
    "true_divide": "a division (`/`)",
    "__floordiv__": "a division (`//`)",
    "__and__": "an `&`",
    "__or__": "an `|`",
    "__eq__": "a comparison (`==`)",
    "where": "`torch.where`",
    "masked_fill": "`masked_fill`",
    "matmul": "a matrix product (`@` / `matmul`)",
    "__matmul__": "a matrix product (`@`)",
    "bmm": "`bmm`",
    "einsum": "`einsum`",
    "expand": "`expand`",
    "view": "`view`",
    "reshape": "`reshape`",
    "sum": "`sum`",
    "softmax": "`softmax`",
    "__getitem__": "an index (`[...]`)",
}


def op_words(name: str) -> str:
    """'sub' -> 'a subtraction (`-`)'; unknown names as `name`."""
    return _OP_WORDS.get(name, f"`{name}`")


def student_line(exc: BaseException) -> str:
    """The last line of the student's own code in the traceback (not torch's, not ours)."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if not os.path.abspath(f.filename).startswith(_SKIP)]
    if not mine or not (mine[-1].line or "").strip():
        return ""
    return f"It happened on this line of your code: `{mine[-1].line.strip()}`"


def alignment_table(shapes: list[tuple[str, tuple[int, ...]]]) -> str:
    """Shapes right-aligned under each other, as a code block (lines indented by 4 spaces)."""
    if not shapes:
        return ""
    width = max(len(s) for _, s in shapes)
    name_w = max(len(n) for n, _ in shapes)
    rows = []
    for name, shape in shapes:
        cells = ["   "] * (width - len(shape)) + [f"{s:>3}" for s in shape]
        rows.append(f"    {name:<{name_w}}  " + " ".join(cells))
    return "\n".join(rows)


def letters_for(sizes: Mapping[str, int], size: int) -> str:
    letters = [k for k, v in sizes.items() if v == size]
    return f"{size} ({' or '.join(letters)})" if letters else f"{size}"


_BROADCAST = re.compile(
    r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
    r"dimension (\d+)"
)


def explain(
    exc: BaseException,
    where: str,
    sizes: Mapping[str, int],
    arg_names: str,
    failed_op: tuple[str, tuple[tuple[int, ...], ...]] | None = None,
    inputs: tuple[tuple[str, tuple[int, ...]], ...] = (),
) -> str:
    """A kind explanation of exc, raised on the case described by `where` ("the classic example
    (net_output (2, 3, 5), ...)"). failed_op: (torch function name, operand shapes) when the
    exception came out of a torch operation; inputs: (name, shape) of the function's tensor
    inputs, to name an operand that is one of them."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > 300:
        text = text[:300] + "…"
    name = type(exc).__name__
    head = f"Your code raised `{name}: {text}`" if text else f"Your code raised `{name}`"
    lines = [f"{head} on {where}."]
    line = student_line(exc)
    if line:
        lines.append(line)
    op = None
    if failed_op is not None:
        op_name, shapes = failed_op
        op = op_words(op_name)
        if shapes:
            shown = " and ".join(str(s) for s in shapes)
            lines.append(f"The operation that failed was {op}, on shapes {shown}.")
    m = _BROADCAST.search(text)
    m2 = re.search(
        r"expanded size of the tensor \((-?\d+)\) must match the existing size \((\d+)\)", text
    )
    if isinstance(exc, NameError):
        missing = getattr(exc, "name", None) or (re.findall(r"'([^']+)'", text) or ["?"])[0]
        lines.append(
            f"\n`{missing}` is not defined where your function runs. Check the spelling; a name "
            f"your function uses must be one of its arguments ({arg_names}), defined inside it, "
            f"or imported / defined in a cell you have run (e.g. `import torch`)."
        )
    elif m:
        a, b = int(m.group(1)), int(m.group(2))
        table, ndims = "", set()
        if failed_op is not None and len(failed_op[1]) >= 2:
            table = alignment_table(_operands(failed_op[1], inputs))
            ndims = {len(s) for s in failed_op[1]}
        lines.append(
            "\nThis is a broadcasting error. PyTorch lines shapes up from the RIGHT and compares "
            "them axis by axis; two sizes fit when they are equal or one of them is 1 (a size-1 "
            "axis stretches)."
            + (f" The operands of {op}, right-aligned:\n\n{table}\n" if table else "")
        )
        what = op if op else "the operation on that line"
        met = (
            f"In {what} a size {letters_for(sizes, a)} met a size {letters_for(sizes, b)}: "
            f"neither is 1, so they cannot broadcast."
        )
        if len(ndims) == 1:  # as many axes on both sides: none is missing, one is misplaced
            n = ndims.pop()
            lines.append(
                f"{met} Both operands have {n} axes, so no axis is missing: one sits in the wrong "
                f"place. Read the table column by column: each axis must meet the same kind of "
                f"axis (words with words), or a size-1 axis that stretches to it."
            )
        else:
            lines.append(
                f"{met} Print the shapes of its operands, right-align them, and give the one with "
                f"fewer axes a size-1 axis where the other has an axis it should not meet."
            )
    elif m2:
        lines.append(
            "\n`expand` lines shapes up from the RIGHT, like broadcasting: it can only stretch "
            "axes of size 1 (or add new axes on the left). An axis that should stretch must "
            "exist with size 1 first."
        )
    elif re.search(r"shape '\[[-\d, ]*\]' is invalid for input of size", text):
        lines.append(
            "\n`view` and `reshape` keep every number: the sizes you ask for must multiply to the "
            "number of elements the tensor holds."
        )
    elif "Dimension out of range" in text or "dimension out of range" in text:
        lines.append(
            "\nYou asked for an axis the tensor does not have. A tensor with n axes has axes "
            "0 … n-1 (or -n … -1 counted from the right); check which tensor you were indexing "
            "and print its `.shape`."
        )
    elif "cannot be multiplied" in text or "batch1" in text or "batch2" in text:
        lines.append(
            "\nA matrix product `(…, n, k) @ (…, k, m)` needs the last axis of the left operand "
            "to match the second-to-last axis of the right one, and `bmm` needs two 3-axis "
            "tensors with the same first size. Print both shapes and check which axes meet."
        )
    elif "einsum" in text:
        lines.append(
            "\nIn an einsum spec each letter names one axis, in order: each operand needs exactly "
            "as many letters as it has axes, a repeated letter must have the same size everywhere, "
            "and letters missing after `->` are summed over."
        )
    elif isinstance(exc, TypeError) and "argument" in text:
        lines.append(f"\nYour function should take exactly these arguments: ({arg_names}).")
    elif isinstance(exc, IndexError):
        lines.append(
            "\nAn index went past the end of an axis. If you loop over an axis, take its length "
            "from the tensor's `.shape` rather than a fixed number."
        )
    elif isinstance(exc, AttributeError):
        lines.append(
            "\nThat object has no attribute of that name: check the spelling, and print "
            "`type(...)` of the object to see what it is."
        )
    else:
        lines.append("\nRead the last line of the error first, then the line of code it names.")
    return "\n".join(lines)


_ORDINALS = ("1st", "2nd", "3rd")


def _operands(
    shapes: tuple[tuple[int, ...], ...], inputs: tuple[tuple[str, tuple[int, ...]], ...]
) -> list[tuple[str, tuple[int, ...]]]:
    """Name each operand: the input it has the shape of (when only one has); else the input it
    is with size-1 axes added ("att_scores, new axis", when only one is); else its position."""
    out = []
    for i, shape in enumerate(shapes):
        names = [n for n, s in inputs if tuple(s) == tuple(shape)]
        grown = [
            n for n, s in inputs if len(shape) > len(s) and _without_ones(shape) == _without_ones(s)
        ]
        if len(names) == 1:
            out.append((names[0], shape))
        elif not names and len(grown) == 1:
            out.append((f"{grown[0]}, new axis", shape))
        else:
            place = _ORDINALS[i] if i < len(_ORDINALS) else f"{i + 1}th"
            out.append((f"{place} operand", shape))
    return out


def _without_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(s for s in shape if s != 1)
