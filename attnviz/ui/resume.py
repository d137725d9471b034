"""A session rebuilt on another replica: its first click inside a fragment still counts.

When a replica dies, HAProxy sends its students' browsers to a live replica, where each gets a
fresh session rebuilt from its link. A browser sends no rerun of its own on reconnecting, so its
first request there is usually a click inside a fragment ("Next" lives in the step-by-step
fragment, a cell edit in the editors' one). Streamlit 1.67 drops a rerun of a fragment the
session does not hold (``AppSession.request_rerun``: right for a fragment a full run has just
removed), and a fresh session holds none, so that click was absorbed.

``install()`` turns such a request into a full run with the same widget states, so the click
counts and the fragments are registered again. Timer reruns (``is_auto_rerun``, the live class's
follow mode) of a fragment the session does not hold are still dropped, as Streamlit does.
The page's callbacks rebuild the state from the link before they act (see
``boundary.before_callbacks``). Installed once per process, by the replica launcher
(``attnviz.ui.warm``) before the first request and by app.py on every run; idempotent.
"""

from __future__ import annotations

import logging

from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession

_LOG = logging.getLogger("attnviz.ui")
_original = AppSession.request_rerun


def _request_rerun(self: AppSession, client_state: ClientState | None) -> None:
    if (
        client_state is not None
        and client_state.fragment_id
        and not client_state.is_auto_rerun
        and not self.has_fragment(client_state.fragment_id)
    ):
        whole = ClientState()
        whole.CopyFrom(client_state)
        whole.fragment_id = ""
        _LOG.info("session %s: a fragment it does not hold was clicked; running the page", self.id)
        client_state = whole
    _original(self, client_state)


def install() -> None:
    """Make a click in a fragment the session does not hold run the whole page."""
    AppSession.request_rerun = _request_rerun


def installed() -> bool:
    return AppSession.request_rerun is _request_rerun
