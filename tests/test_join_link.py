"""The join link in the teacher's view (attnviz.ui.join_link) through AppTest: where AppTest's browser
reports no address (Streamlit's default, localhost) the teacher is warned, with this machine's
reachable addresses as links; a public URL is used as it is and warns nobody. The same on a real
class server bound to 127.0.0.2, with the QR code decoded: tests/test_serving.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from attnviz.classroom import address
from attnviz.ui.join_link import WARNING

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNVIZ_CLASS_STORE", raising=False)
    monkeypatch.delenv(address.PUBLIC_URL_ENV, raising=False)
    monkeypatch.delenv(address.LISTEN_ENV, raising=False)
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path / "data"))


def _teacher() -> AppTest:
    """A teacher who opened /walkthrough and started a class."""
    at = AppTest.from_file(APP, default_timeout=90)
    at._page_hash = calc_hash("walkthrough")
    at.run()
    at.button(key="wt_start").click().run()
    assert not at.exception, at.exception
    return at


def _join_link(at: AppTest) -> str:
    code = at.session_state["wt_code"]
    return next(c.value for c in at.code if c.value.endswith(f"?class={code}"))


def _warnings(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning)


def test_a_teacher_on_localhost_is_warned_with_the_machines_addresses():
    at = _teacher()
    assert _join_link(at).startswith("http://localhost:8501/walkthrough?class=")
    assert WARNING in _warnings(at)
    links = " ".join(h.proto.body for h in at.get("html"))
    for ip in address.reachable_addresses():
        host = f"[{ip}]" if ":" in ip else ip
        assert f'href="http://{host}:8501/walkthrough"' in links


def test_a_teacher_on_a_server_listening_on_loopback_only_is_told_to_restart_it(monkeypatch):
    monkeypatch.setenv(address.LISTEN_ENV, "127.0.0.1")
    at = _teacher()
    assert WARNING in _warnings(at) and "--bind 0.0.0.0" in _warnings(at)


def test_the_public_url_is_the_join_link_and_warns_nobody(monkeypatch):
    monkeypatch.setenv(address.PUBLIC_URL_ENV, "https://class.example.org/attn")
    monkeypatch.setenv(address.LISTEN_ENV, "127.0.0.1")  # behind a TLS proxy on this machine
    at = _teacher()
    assert _join_link(at).startswith("https://class.example.org/attn/walkthrough?class=")
    assert WARNING not in _warnings(at)


def test_a_bad_public_url_is_named_and_the_browsers_address_used(monkeypatch):
    monkeypatch.setenv(address.PUBLIC_URL_ENV, "class.example.org")
    at = _teacher()
    assert "ATTNVIZ_PUBLIC_URL is not used" in " ".join(e.value for e in at.error)
    assert _join_link(at).startswith("http://localhost:8501/walkthrough?class=")
