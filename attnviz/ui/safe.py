"""Visitor text inside a message: Streamlit shows ``st.error``/``st.warning``/``st.info`` text as
Markdown, so a message that may hold what a visitor typed (a cell, a link, an expression, a name)
goes through ``inert`` first. No streamlit here.

``inert`` makes every character display as itself, and changes no more than it must (so that
``net_output[0, 1, 2] 'abc' is not a number`` stays as it is):

- line breaks become spaces: a message is one paragraph (no heading, list, table, code block or
  link definition can start on a second line);
- always backslash-escaped: ``\\`` ````` ``*`` ``~`` ``$`` ``<`` ``>`` ``&`` (code spans,
  emphasis, strike-through, math, HTML and entities);
- ``_`` is escaped unless it sits inside a word (``att_scores`` cannot emphasise);
- a zero-width space separates ``]`` from a ``(`` or ``[`` after it (no ``[..](..)`` link or
  image, no reference link);
  a leading ``[``, ``#``, ``-``, ``+``, ``=``, ``|`` or ``1.`` / ``1)`` is escaped (no block at
  the start of the paragraph);
- a zero-width space follows every ``:`` and ``@`` and splits ``www.``, which Streamlit's directives
  (``:red[...]``, ``:material/...:``, ``:smile:``) and GitHub-style autolinks (``https://``,
  ``www.``, ``a@b.example``) look for in the text after escapes are undone.

Where a whole value is shown on its own, prefer ``st.code``/``st.text``.
"""

from __future__ import annotations

import re

_ZWSP = "\u200b"  # zero-width space: invisible on screen, breaks every pattern above
_ALWAYS = {c: "\\" + c for c in "\\`*~$<>&"}
_AFTER = {":": ":" + _ZWSP, "@": "@" + _ZWSP}
_BREAKS = re.compile(r"[\r\n\t\v\f\u2028\u2029\x85]+")
_LEADING = re.compile(r"^([#\-+=|\[>]|[0-9]+[.)])")


def inert(text: object) -> str:
    """Any text -> Markdown that renders as exactly that text (one paragraph)."""
    flat = _BREAKS.sub(" ", str(text)).strip()
    out = []
    for i, c in enumerate(flat):
        before = flat[i - 1] if i else " "
        after = flat[i + 1] if i + 1 < len(flat) else " "
        if c in _ALWAYS:
            out.append(_ALWAYS[c])
        elif c in _AFTER:
            out.append(_AFTER[c])
        elif c == "_" and not (before.isalnum() and after.isalnum()):
            out.append("\\_")
        elif c == "]" and after in "([":
            out.append("]" + _ZWSP)
        else:
            out.append(c)
    text = "".join(out)
    text = re.sub(r"(?i)(www)\.", lambda m: m.group(1) + _ZWSP + ".", text)
    lead = _LEADING.match(text)
    if lead:
        text = text[: lead.end() - 1] + "\\" + text[lead.end() - 1 :]
    return text


def literal(markdown: object) -> str:
    """What a reader sees of ``inert``'s output (for tests): escapes undone, no zero-width space."""
    return re.sub(r"\\(.)", r"\1", str(markdown)).replace(_ZWSP, "")
