"""Editor cells -> arrays, strictly: every value a table cell can send is either a finite number or a
plain message naming the cell. No streamlit here, so the rules are testable on their own.

A table editor (``st.data_editor``) reports what the user changed as an edit dict
``{"edited_rows": {row: {column: value}}, "added_rows": [...], "deleted_rows": [...]}``, relative to
the table it was given. ``apply_edits`` applies that dict to the base block (R, C) and refuses
anything that is not a finite number within bounds, any added or deleted row, and any tampered key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from attnviz.errors import AttnvizError

# Cells beyond this size are refused: they would only flood every figure with one colour.
MAX_ABS = 1e6
_SHOW = 3  # problems listed per message; the rest are counted


def col_labels(letter: str, n: int) -> list[str]:
    """Column labels of an editor: ``["h0", "h1", ...]``."""
    return [f"{letter}{i}" for i in range(n)]


_SPELLING = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]{1,4})?", re.ASCII | re.I)
_THOUSANDS = re.compile(r"[+-]?[0-9]{1,3},[0-9]{3}", re.ASCII)
MAX_TEXT = 40  # characters a cell may hold


def _spelling(text: str) -> str:
    """Ordinary spellings of a number -> Python's: a decimal comma (0,5), a Unicode minus."""
    t = text.replace("\u2212", "-")
    if "," in t:
        if "." in t or t.count(",") > 1:
            raise AttnvizError(f"'{text}' mixes separators; type it with one decimal point")
        if _THOUSANDS.fullmatch(t):
            raise AttnvizError(
                f"'{text}' could mean {t.replace(',', '')} or {t.replace(',', '.')}; "
                "type it with a decimal point"
            )
        t = t.replace(",", ".")
    return t


def parse_number(value: object) -> float:
    """One cell's value -> a finite float within ``MAX_ABS``, or AttnvizError saying what was
    typed and why it was refused. Text is parsed strictly (ASCII digits, one decimal point or
    comma, an optional exponent: ``1e-3``, ``0,5``, ``-.5``, ``2.``), never by ``float()`` alone
    (which also takes ``1_0``, ``infinity`` and non-ASCII digits)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise AttnvizError("is empty; type a number")
    if isinstance(value, bool):
        raise AttnvizError(f"is {value}, not a number")
    if isinstance(value, (int, float)):
        text = repr(value)[:MAX_TEXT]
        try:
            number = float(value)
        except OverflowError:
            raise AttnvizError(f"{text} is too large for a float") from None
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_TEXT:
            raise AttnvizError(f"'{text[:12]}...' is too long to be a number")
        if text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
            number = float(text.lower())
        else:
            spelled = _spelling(text)
            if not _SPELLING.fullmatch(spelled):
                raise AttnvizError(f"'{text}' is not a number")
            number = float(spelled)
    else:
        raise AttnvizError(f"is a {type(value).__name__}, not a number")
    if math.isnan(number):
        raise AttnvizError("is NaN (not a number); type a finite number")
    if math.isinf(number):
        if "inf" in text.lower():
            raise AttnvizError(f"is {text} (infinite); type a finite number")
        raise AttnvizError(f"{text} is too large for a float (it overflows to infinity)")
    if abs(number) > MAX_ABS:
        raise AttnvizError(f"{text} is larger than {MAX_ABS:,.0f} in size; keep numbers readable")
    return number


def parse_flag(value: object) -> bool:
    """One checkbox cell -> bool, or AttnvizError."""
    if isinstance(value, bool):
        return value
    raise AttnvizError(f"{value!r} is not True or False")


def check_structure(
    edits: object, n_rows: int, columns: Sequence[str], *, name: str, what: str
) -> None:
    """Raise AttnvizError unless an edit dict only edits existing cells of an (n_rows, C) table:
    no added or deleted rows, no unknown row or column, nothing unreadable."""
    if edits is None:
        return
    unreadable = f"The table {name} sent something unreadable"
    if not isinstance(edits, Mapping):
        raise AttnvizError(f"{unreadable}.")
    if edits.get("added_rows"):
        raise AttnvizError(f"Rows can't be added: {what}. Change the size with B, T, H above.")
    if edits.get("deleted_rows"):
        raise AttnvizError(f"Rows can't be deleted: {what}. Change the size with B, T, H above.")
    rows = edits.get("edited_rows") or {}
    if not isinstance(rows, Mapping):
        raise AttnvizError(f"{unreadable}.")
    known = set(columns)
    for row_key, changes in rows.items():
        try:
            i = int(row_key)
        except (TypeError, ValueError):
            i = -1
        if not 0 <= i < n_rows:
            raise AttnvizError(f"{unreadable}: row {str(row_key)[:20]!r} does not exist.")
        if not isinstance(changes, Mapping):
            raise AttnvizError(f"{unreadable}.")
        for col in changes:
            if col not in known:
                raise AttnvizError(f"{unreadable}: column {str(col)[:20]!r} does not exist.")


def apply_edits(
    base: np.ndarray,
    edits: object,
    *,
    name: str,
    prefix: tuple[int, ...] = (),
    columns: Sequence[str],
    what: str,
) -> np.ndarray:
    """base (R, C) + an editor's edit dict -> a new (R, C) array of base's dtype.

    ``name`` and ``prefix`` name a cell in messages, e.g. ``net_output[0, 1, 2]`` for prefix (0,);
    ``columns`` are the editor's column labels; ``what`` says what the table must stay, e.g.
    "sentence 0 of net_output must keep 3 words (T)". Raises AttnvizError listing the bad cells.
    """
    check_structure(edits, base.shape[0], columns, name=name, what=what)
    out = base.copy()
    if edits is None:
        return out
    rows = edits.get("edited_rows") or {}
    flag = base.dtype == np.bool_
    col_index = {c: j for j, c in enumerate(columns)}
    problems: list[str] = []
    for row_key, changes in rows.items():
        i = int(row_key)
        for col, value in changes.items():
            j = col_index[col]
            cell = f"{name}[{', '.join(str(k) for k in (*prefix, i, j))}]"
            try:
                out[i, j] = parse_flag(value) if flag else parse_number(value)
            except AttnvizError as e:
                problems.append(f"{cell} {e}")
    if problems:
        more = f" (and {len(problems) - _SHOW} more)" if len(problems) > _SHOW else ""
        raise AttnvizError("; ".join(problems[:_SHOW]) + more + ".")
    return out


def cell_text(v: float) -> str:
    """How an editor cell shows a float32 value: rounded to four decimals, as every table of the
    page shows numbers (``0.7718``, ``1.0000``, ``0.3333`` for 1/3), or, for a value too small
    for four decimals to show (under 0.00005 in size, not 0), three significant digits
    (``1e-05``, ``-2.5e-05``). The value itself is kept as it is: only edited cells change it."""
    x = float(np.float32(v))
    if x != 0 and abs(x) < 5e-5:
        return f"{x:.3g}"
    return f"{x:.4f}" if x != 0 else "0.0000"


def cell_texts(a: np.ndarray) -> np.ndarray:
    """float32 (any shape) -> the same shape of ``cell_text`` strings."""
    return np.array([cell_text(v) for v in a.ravel()], dtype=object).reshape(a.shape)
