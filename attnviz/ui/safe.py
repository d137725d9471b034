"""Messages that may hold what a visitor typed (a cell, a link, an expression) are shown as markdown;
``inert`` keeps such text readable but unable to become a link, an image or HTML. No streamlit."""

from __future__ import annotations

_ZWSP = "\u200b"  # zero-width space: breaks link detection, invisible on screen


def inert(text: str) -> str:
    """Markdown-safe text: no autolink (``https://``, ``www.``), no ``[..](..)`` link or image,
    no raw HTML tag."""
    return (
        str(text)
        .replace("://", f":{_ZWSP}//")
        .replace("www.", f"www{_ZWSP}.")
        .replace("](", f"]{_ZWSP}(")
        .replace("<", "\\<")
    )
