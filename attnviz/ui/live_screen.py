"""What the Walkthrough learns from the browser: the window's size (projector or phone layout), the
teacher token this browser keeps for a class, and the presentation keys.

One tiny component (``static/live_screen/index.html``, no CDN) reports ``{w, h, token}``; its
keyboard handler clicks the slide buttons: → / PageDown / Space next, ← / PageUp back, Home / End.
Every value it sends is parsed strictly here: a browser can send anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit.components.v1 as components

from attnviz import figures
from attnviz.classroom import secret
from attnviz.errors import AttnvizError

_COMPONENT = components.declare_component(
    "attnviz_live_screen", path=str(Path(__file__).parent / "static" / "live_screen")
)
#: Narrower than this (CSS px) is a phone: panels stack.
PHONE_MAX_W = 640
#: At least this wide (CSS px) is a projector-sized screen: figure text of 24 px and more.
PROJECTOR_MIN_W = 1600


@dataclass(frozen=True)
class Screen:
    """The browser window in CSS px (a laptop's until the browser reports), and the teacher token
    it keeps for the class in the link ('' for none)."""

    w: int = 1366
    h: int = 768
    token: str = ""
    reported: bool = False

    @property
    def phone(self) -> bool:
        return self.w < PHONE_MAX_W

    @property
    def style(self) -> figures.Style:
        if self.phone:
            return figures.PHONE
        return figures.PROJECTOR if self.w >= PROJECTOR_MIN_W else figures.SCREEN


def parse_screen(value: object) -> Screen:
    """The component's value -> Screen; anything malformed gives the default."""
    if not isinstance(value, dict):
        return Screen()
    w, h, token = value.get("w"), value.get("h"), value.get("token", "")
    if type(w) is not int or type(h) is not int or not (200 <= w <= 8000 and 200 <= h <= 8000):
        return Screen()
    try:
        token = secret.parse_token(token) if token else ""
    except AttnvizError:
        token = ""
    return Screen(w=w, h=h, token=token, reported=True)


def screen(code: str = "", remember: tuple[str, str] = ("", ""), forget: str = "") -> Screen:
    """Draw the (invisible) component and read what the browser reported.

    code: the class whose stored teacher token to report; remember: (class code, teacher token)
    to store in this browser; forget: a class code whose token to delete."""
    value = _COMPONENT(
        code=code,
        remember_code=remember[0],
        remember=remember[1],
        forget=forget,
        key="wt_screen",
        default=None,
    )
    return parse_screen(value)
