"""Where a visitor connects from, for the limits that are counted per visitor.

The address is the one the server's own socket saw. Behind a proxy, that is the proxy; the web
server (uvicorn, under Streamlit) replaces it by the client's address from ``X-Forwarded-For``
only when the connection comes from an address in its ``FORWARDED_ALLOW_IPS`` setting
(``127.0.0.1`` unless set: a proxy on the same machine, as ``scripts/serve.py`` runs HAProxy).
The request's own ``X-Forwarded-For`` header is never read here: any client can write anything
there, and rotating it would give one visitor a fresh set of limits with every request.
"""

from __future__ import annotations

import streamlit as st

LOCAL = "local"  # Streamlit reports no address for 127.0.0.1 and ::1: one visitor, this machine


def address() -> str:
    """This session's visitor, as an address (``LOCAL`` for this machine's loopback)."""
    return (st.context.ip_address or LOCAL)[:64]
