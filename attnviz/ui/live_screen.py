"""What the Walkthrough learns from and keeps in the browser: the window's size (projector or phone
layout), this tab's id, the teacher token this browser keeps for a class (localStorage), a
student's id for a class (a cookie, so that the server reads it on any session's first run), the
private link's copy to the clipboard, and the presentation keys.

One tiny component (``static/live_screen/index.html``, no CDN) reports ``{w, h, token, tab,
copies, copied}``; its keyboard handler clicks the slide buttons: → / PageDown / Space next (also on
a focused slide button: never a press of Back), ← / PageUp back, Home / End; keys inside an
expander, a text box, a toggle or a radio act there. Every value it sends is parsed strictly here:
a browser can send anything.
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
#: This wide (CSS px) or narrower is a phone, or a laptop zoomed to 200 %: panels stack and the
#: figures take the phone's style (the laptop's heatmaps need a plot about 1100 px wide).
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
    tab: str = ""  # this tab's id ('' until reported)
    copies: int = 0  # how many copies of the private link this page has made ...
    copied: bool = False  # ... and whether the last one reached the clipboard
    asked: str = ""  # the class code the browser looked its token up for ('' for none)

    @property
    def phone(self) -> bool:
        return self.w <= PHONE_MAX_W

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
    try:
        tab = secret.parse_session(value.get("tab"))
    except AttnvizError:
        tab = ""
    copies, copied = value.get("copies", 0), value.get("copied", False)
    if type(copies) is not int or not 0 <= copies <= 10**6 or type(copied) is not bool:
        copies, copied = 0, False
    try:
        asked = secret.parse_code(value.get("asked")) if value.get("asked") else ""
    except AttnvizError:
        asked = ""
    return Screen(
        w=w, h=h, token=token, asked=asked, reported=True, tab=tab, copies=copies, copied=copied
    )


@dataclass(frozen=True)
class Keep:
    """What the browser should keep or drop, and copy. code: the class whose stored teacher token
    to report; remember: (class code, teacher token) to store; forget: (class code, token): drop
    the class's stored token, only if it is this one ('' for any); student: (class code, student
    id, seconds to keep it); forget_student: a class code whose student id to drop; copy: the text
    the "Copy my private link" button puts on the clipboard ('' for none)."""

    code: str = ""
    remember: tuple[str, str] = ("", "")
    forget: tuple[str, str] = ("", "")
    student: tuple[str, str, int] = ("", "", 0)
    forget_student: str = ""
    copy: str = ""


def screen(keep: Keep = Keep()) -> Screen:
    """Draw the (invisible) component, tell it what to keep, and read what the browser reported."""
    value = _COMPONENT(
        code=keep.code,
        remember_code=keep.remember[0],
        remember=keep.remember[1],
        forget=keep.forget[0],
        forget_token=keep.forget[1],
        student_code=keep.student[0],
        student=keep.student[1],
        student_s=keep.student[2],
        forget_student=keep.forget_student,
        copy=keep.copy,
        key="wt_screen",
        default=None,
    )
    return parse_screen(value)


#: The cookie that keeps a student's id for one class in their browser (set by the component).
STUDENT_COOKIE = "attnviz_s_{code}"
