"""Control messages a browser may send but a visitor must not act on.

Streamlit (1.67) answers a websocket ``BackMsg`` with ``clear_cache=true`` by clearing
``st.cache_data`` and ``st.cache_resource`` for every session of the process
(``AppSession._handle_clear_cache_request``: "Because this cache is global, it will be cleared
for all users"). ``client.toolbarMode = "viewer"`` only hides the menu item; any client can still
send the message. Streamlit has no setting that turns the handler off (checked: config options,
``AppSession.handle_backmsg``), so ``protect()`` replaces that one handler, once per process, with
one that clears nothing shared and logs the attempt. ``load_git_info`` (the viewer toolbar hides
it too; it would read the deployment's git remote and branch) is answered the same way.

Widget values. Streamlit turns what a browser sends for a widget into its Python value
(``WStates.__getitem__`` calls the widget's deserializer) before any app code runs, outside every
error boundary: malformed data-editor JSON, or a NaN for an int number box, ends the run with
Streamlit's error box, on every rerun of that session. ``protect()`` wraps that one call: a value
the widget's own deserializer cannot read becomes the widget's default (its deserializer's answer
to "nothing sent"), and the log gets one short line. Values that do deserialize are checked by
the page (``_controls.choose``/``whole``, ``edit.check_structure``).

Everything else a browser sends (reruns, heartbeats) is untouched. The app calls ``protect()``
first thing on every run (app.py); it is idempotent. The caches can still be cleared by the
operator: restart the process, or ``st.cache_data.clear()`` from code.
"""

from __future__ import annotations

import logging
from typing import Any

from streamlit.runtime.app_session import AppSession
from streamlit.runtime.state.session_state import Value, WStates

_LOG = logging.getLogger("attnviz.ui")
_ORIGINAL = {
    "_handle_clear_cache_request": AppSession._handle_clear_cache_request,
    "_handle_git_information_request": AppSession._handle_git_information_request,
    "WStates.__getitem__": WStates.__getitem__,
}
_deserialize = _ORIGINAL["WStates.__getitem__"]


def _refuse_clear_cache(self: AppSession) -> None:
    _LOG.warning("refused a browser's clear_cache request (session %s)", self.id)


def _refuse_git_info(self: AppSession) -> None:
    _LOG.info("refused a browser's load_git_info request (session %s)", self.id)


def _read_widget(self: WStates, k: str) -> Any:
    try:
        return _deserialize(self, k)
    except KeyError:
        raise
    except Exception as e:  # the widget's own deserializer refused what the browser sent
        metadata = self.widget_metadata.get(k)
        name = k.rsplit("-", 1)[-1][:60]
        _LOG.warning("refused an unreadable value for widget %s (%s)", name, type(e).__name__)
        default = metadata.deserializer(None)
        self.states[k] = Value(default)
        return default


def protect() -> None:
    """Make a browser's ``clear_cache`` and ``load_git_info`` messages do nothing shared, and an
    unreadable widget value fall back to the widget's default."""
    AppSession._handle_clear_cache_request = _refuse_clear_cache
    AppSession._handle_git_information_request = _refuse_git_info
    WStates.__getitem__ = _read_widget


def protected() -> bool:
    """Whether ``protect()`` is in force in this process."""
    return AppSession._handle_clear_cache_request is _refuse_clear_cache
