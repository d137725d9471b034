"""The server settings a public demo depends on, verified on the app's first run.

``.streamlit/config.toml`` sets them; a Streamlit that does not know one of them, or a server
started from another folder (which reads no config.toml) or with a flag that overrides one, would
otherwise run silently without it: tracebacks with server paths shown to every visitor, an
unbounded cache, a static-file server. ``verify()`` reads each back through ``st.get_option`` and
compares it with what the project requires. When one is missing or different, no page is served:
every visitor sees one plain sentence, and the log says which setting and why.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import streamlit as st

_LOG = logging.getLogger("attnviz.ui")


@dataclasses.dataclass(frozen=True)
class Required:
    """A config option, the value it must have (or a test of it), and why."""

    want: Any
    why: str
    ok: Callable[[Any], bool] | None = None

    def accepts(self, value: Any) -> bool:
        return self.ok(value) if self.ok is not None else value == self.want


def _mb(text: object) -> float:
    """'96mb' -> 96.0 (Streamlit's size strings); anything unreadable -> inf."""
    s = str(text).strip().lower()
    units = {"kb": 1 / 1024, "mb": 1.0, "gb": 1024.0}
    for unit, scale in units.items():
        if s.endswith(unit):
            try:
                return float(s[: -len(unit)]) * scale
            except ValueError:
                return float("inf")
    return float("inf")


REQUIRED: dict[str, Required] = {
    "client.showErrorDetails": Required("none", "a visitor must never see a traceback"),
    "client.toolbarMode": Required("viewer", "no developer menu for visitors"),
    "server.enableStaticServing": Required(False, "no static file server"),
    "server.maxUploadSize": Required(1, "no uploads to speak of (MB)", lambda v: v <= 1),
    "server.maxMessageSize": Required(
        2, "a websocket message bounded before it is read (MB)", lambda v: v <= 2
    ),
    "server.maxWidgetStateSize": Required(
        1, "a rerun's widget state bounded (MB)", lambda v: v <= 1
    ),
    "server.maxCacheDataSize": Required(
        "96mb", "every cache together bounded in bytes", lambda v: _mb(v) <= 256
    ),
    "server.enableXsrfProtection": Required(True, "forms cannot be posted from other sites"),
    "browser.gatherUsageStats": Required(False, "no visitor data sent anywhere"),
}


def problems() -> list[str]:
    """-> each required setting that is missing or different, in words (empty: all in force)."""
    found = []
    for name, rule in REQUIRED.items():
        try:
            value = st.get_option(name)
        except (RuntimeError, KeyError) as e:
            found.append(f"{name} is unknown to Streamlit {st.__version__} ({e}): {rule.why}")
            continue
        if not rule.accepts(value):
            found.append(f"{name} is {value!r}, must be {rule.want!r}: {rule.why}")
    return found


_checked: list[str] | None = None


def verify() -> None:
    """On every run (cheap after the first): stop the page with a plain message if a required
    setting is missing or different."""
    global _checked
    if _checked is None:
        _checked = problems()
        for p in _checked:
            _LOG.error("attnviz refuses to serve: %s", p)
    if _checked:
        st.error(
            "This attnviz server is not configured safely, so it serves no page. "
            "Its operator can read why in the server's log."
        )
        st.stop()
