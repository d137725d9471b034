"""The join link in the teacher's view: a warning when students could not reach it, the link, its
QR code and the class code.

The link's address comes from ``attnviz.classroom.address.join_target``: the operator's public URL
(``ATTNVIZ_PUBLIC_URL``), else the address the teacher's browser used. When that address reaches
only this machine (``localhost``, 127.0.0.0/8, ::1) the teacher is warned above the join code, before
any student is told to join, with the same page at each of this machine's reachable addresses as
links (or, when the server listens on loopback only, how to restart it so students can reach it).
"""

from __future__ import annotations

import html
import io
import os

import segno
import streamlit as st

from attnviz.classroom import format_code
from attnviz.classroom.address import (
    LISTEN_ENV,
    JoinTarget,
    join_target,
    page_url,
    reachable_addresses,
)
from attnviz.errors import AttnvizError
from attnviz.ui.safe import inert

#: The warning's first words (the serving tests look for them).
WARNING = "Students cannot reach this address"


@st.cache_data(ttl=60, show_spinner=False)
def _addresses() -> tuple[str, ...]:
    """This machine's reachable addresses, looked up at most once a minute per process."""
    return reachable_addresses()


def _listen() -> str | None:
    """The address the server listens on: the front proxy's (``$ATTNVIZ_LISTEN``, set by
    scripts/serve.py: None lets join_target read it), else this Streamlit's ``server.address``
    ('' for every interface)."""
    if LISTEN_ENV in os.environ:
        return None
    return str(st.get_option("server.address") or "")


def target() -> tuple[JoinTarget, str]:
    """Where this class's links point, and the operator's configuration mistake ('' for none).
    This machine's addresses are looked up only for a teacher who needs them."""
    url, listen, mistake, public = st.context.url, _listen(), "", None
    try:
        t = join_target(url, listen=listen, addresses=())
    except AttnvizError as e:  # ATTNVIZ_PUBLIC_URL does not parse: use the browser's address
        mistake, public = str(e), ""
        t = join_target(url, public_url=public, listen=listen, addresses=())
    if t.loopback and t.listening and not t.public:
        t = join_target(url, public_url=public, listen=listen, addresses=_addresses())
    return t, mistake


def base_url() -> str:
    """The Walkthrough's address for every link the class hands out (join and private links)."""
    return page_url(target()[0].base)


@st.cache_data(max_entries=64, show_spinner=False)
def qr_png(url: str) -> bytes:
    """The join link as a QR code (PNG)."""
    out = io.BytesIO()
    segno.make(url, error="m").save(out, kind="png", scale=8, border=2)
    return out.getvalue()


def warning_text(t: JoinTarget) -> str:
    """The teacher's warning as Markdown ('' when students can reach the link). Every part is
    computed here; the host a browser reported goes through ``inert``."""
    if not t.loopback:
        return ""
    host = inert(t.base.split("//", 1)[-1].split("/", 1)[0])
    if t.public:
        return (
            f"{WARNING}: the public URL's host, {host}, reaches only this machine. "
            "Set `--public-url` to the name or address students use."
        )
    if not t.listening:
        return (
            f"{WARNING}: this server listens only on this machine, so a student's phone cannot "
            "reach it (on the phone, this page's address opens the phone itself). Restart it "
            "with `python scripts/serve.py start --bind 0.0.0.0` (or `streamlit run app.py "
            "--server.address 0.0.0.0`), then open this page at this machine's network address."
        )
    if not t.elsewhere:
        return (
            f"{WARNING}: this page's address, {host}, reaches only this machine, and this machine "
            "has no network address now. Connect it to the school's network, then reload."
        )
    return (
        f"{WARNING}: this page's address, {host}, reaches only this machine; on a student's "
        "phone the join link would open the phone itself. Open this page at one of this "
        "machine's addresses and start the class there:"
    )


def section(code: str) -> None:
    """The warning (when needed), then the join code toggle: QR code, link and class code."""
    t, mistake = target()
    if mistake:
        st.error(f"ATTNVIZ_PUBLIC_URL is not used: {inert(mistake)}")
    text = warning_text(t)
    if text:
        st.warning(text, icon=":material/wifi_off:")
        if t.elsewhere and t.listening and not t.public:
            links = "".join(
                f'<li><a href="{html.escape(u)}">{html.escape(u)}</a></li>' for u in t.elsewhere
            )
            st.html(f'<ul class="wt-elsewhere">{links}</ul>')
    url = t.join_url(code)
    if st.toggle("Show the join code", key="wt_show_join"):
        cols = st.columns([1, 2])
        cols[0].image(qr_png(url), width=220, alt=f"QR code of the join link {url}")
        with cols[1]:
            st.markdown("Join at")
            st.code(url, language=None)
            st.markdown("or type the class code")
            st.html(
                '<div style="font:700 3.2rem monospace;letter-spacing:.12em">'
                f"{html.escape(format_code(code))}</div>"
            )
