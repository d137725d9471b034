"""A hostile visitor against a real server (`streamlit run app.py`), over the websocket protocol
(scripts/stclient.py): forged control messages, tampered widgets and links. Then the same kinds of
input through AppTest, for what needs no server.

Each server test asserts what a visitor can observe (the page's elements, a second session's
cache as /_stcore/metrics reports it, the server log), never a time.
"""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.testing.v1 import AppTest

from attnviz.errors import AttnvizError
from attnviz.ui import link
from attnviz.ui.boundary import LOG_CHARS, short
from attnviz.ui.safe import inert, literal

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts import streamlit_server  # noqa: E402
from scripts.stclient import ProtocolError, Session  # noqa: E402

APP = str(ROOT / "app.py")
TRACEBACK = re.compile(r"Traceback|File \"|Error:|Exception")
BIG = "A" * 200_000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real server on loopback; yields (url, path of its log)."""
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    with streamlit_server.serve(log_path=log) as running:
        yield running.url, log


def _lookups(url: str, cache: str, result: str) -> int:
    """How often the cache_data function `cache` answered with `result` ("hit"/"miss")."""
    with urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=10) as r:
        text = r.read().decode()
    pattern = rf'cache_lookups_total\{{cache="{re.escape(cache)}",cache_type="st_cache_data",result="{result}"\}} (\d+)'
    match = re.search(pattern, text)
    return int(match[1]) if match else 0


def _plain(run) -> None:
    """The run finished, shows no exception box and no traceback text."""
    assert run.ok, run.status
    assert not TRACEBACK.search(run.text()), run.text()[:500]


@pytest.mark.slow
def test_forged_clear_cache_leaves_another_sessions_cache(server):
    url, _ = server
    cache = "attnviz.ui.cached.step_figure"
    with Session(url) as alice:
        _plain(alice.rerun())
        misses = _lookups(url, cache, "miss")
        with Session(url) as mallory:
            _plain(mallory.rerun())
            mallory.send(BackMsg(clear_cache=True))
            _plain(mallory.rerun())  # mallory's own page still works
        _plain(alice.rerun())
        assert _lookups(url, cache, "hit") > 0
        assert _lookups(url, cache, "miss") == misses  # nothing had to be computed again


# A forged load_git_info: tests/test_compat.py (a server here has no GitHub remote to leak, so
# Streamlit would send nothing even unpatched; that test gives it one).


TAMPERED_WIDGETS = [  # (key, value, the WidgetState field it is sent in; None: the widget's own)
    ("pg_preset", BIG, None),
    ("pg_preset", "random; DROP", None),
    ("pg_preset", 3, "int_value"),
    ("pg_tab", BIG, None),
    ("pg_b", 1e300, None),
    ("pg_h", -5.0, None),
    ("pg_seed", float("nan"), None),
    ("pg_seed", float("inf"), None),
    ("pg_b", "four", "string_value"),
    ("pg_softmax", "yes", "string_value"),
    ("pg_use_mask", 7, "int_value"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("key", "value", "field"), TAMPERED_WIDGETS, ids=lambda v: str(v)[:16])
def test_tampered_widget_gives_a_plain_page(server, key, value, field):
    url, _ = server
    with Session(url) as s:
        _plain(s.rerun())
        s.set_widget(key, value, field_name=field)
        run = s.rerun()
        _plain(run)
        assert BIG[:1000] not in run.text()
        _plain(s.rerun())  # and the next run is fine too


TAMPERED_EDITS = [
    "not json at all",
    json.dumps({"edited_rows": {"0": {"h0": BIG}}, "added_rows": [], "deleted_rows": []}),
    json.dumps({"edited_rows": {"99": {"h0": "1"}}, "added_rows": [], "deleted_rows": []}),
    json.dumps({"edited_rows": {"0": {"zz": "1"}}, "added_rows": [{}], "deleted_rows": [0]}),
    json.dumps([1, 2, 3]),
]


@pytest.mark.slow
@pytest.mark.parametrize("edit", TAMPERED_EDITS, ids=lambda v: v[:24])
def test_tampered_editor_state_gives_a_plain_page(server, edit):
    url, _ = server
    with Session(url) as s:
        _plain(s.rerun())
        key = next(k for k in s.known if k.startswith("pg_x") and k.endswith("_0"))
        s.set_widget(key, edit)
        run = s.rerun()
        _plain(run)
        assert BIG[:1000] not in run.text()
        _plain(s.rerun())


@pytest.mark.slow
def test_tampered_preset_in_a_callback_gives_a_plain_notice(server):
    url, _ = server
    with Session(url) as s:
        _plain(s.rerun())
        s.set_widget("pg_preset", BIG)
        s.set_widget("pg_b", 3.0)  # a resize: its callback reads the forged preset
        run = s.rerun()
        _plain(run)
        assert "preset does not exist" in run.text()
        assert BIG[:100] not in run.text()


@pytest.mark.slow
def test_tampered_values_reach_the_log_cut_short(server):
    url, log = server
    with Session(url) as s:
        _plain(s.rerun())
        s.set_widget("pg_preset", BIG)
        _plain(s.rerun())
        key = next(k for k in s.known if k.startswith("pg_w"))
        s.set_widget(key, json.dumps({"edited_rows": {"0": {"w0": BIG}}}))
        _plain(s.rerun())
    longest = max((len(m) for m in re.findall(r"A+", log.read_text())), default=0)
    assert longest <= LOG_CHARS


HOSTILE_LINKS = [
    "step=%C2%B2",  # ² passes str.isdigit() and fails int()
    "step=" + "9" * 5000,
    "seed=%D9%A3",  # an Arabic-Indic three: \d matches it, the link must not
    "s=2x3x5%0A",
    "p=" + "%60" * 3 + "**bold**%20:red[x]%20$%5CHuge%20x$%20mailto:a@b.example",
    "e=" + "x" * 5000,
    "x=" + "_".join(["1e30"] * 30),
]


@pytest.mark.slow
@pytest.mark.parametrize("query", HOSTILE_LINKS, ids=lambda v: v[:20])
def test_hostile_link_gives_the_notice_and_the_defaults(server, query):
    url, _ = server
    with Session(url, query_string=query) as s:
        run = s.rerun()
        _plain(run)
        assert "could not be read" in run.text()
        assert "Result" in run.text()  # the page is there, on the default example


# ---- AppTest: no server needed --------------------------------------------------------------


def _app(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


MARKDOWN = [
    "`code` **bold** _it_ ~~gone~~",
    ":red[red] :material/home: :smile:",
    "$\\Huge x$ and $$y$$",
    "[win](https://evil.example) ![img](x.png) <https://a.example>",
    "www.evil.example mail@evil.example https://evil.example",
    "<b>html</b> &amp; &lt;",
    "# heading",
    "1. list",
    "- item",
    "> quote",
    "[ref]: https://evil.example",
]


@pytest.mark.parametrize("text", MARKDOWN)
def test_inert_text_reads_back_exactly(text):
    assert literal(inert(text)) == text


@pytest.mark.parametrize("text", MARKDOWN)
def test_inert_text_holds_no_markdown_trigger(text):
    out = inert(text)
    for trigger in ("](", "://", "www.", "**", ":red[", "<b>"):
        assert trigger not in out
    assert not re.search(r"(?<!\\)[`$*~<>&]", out)


@pytest.mark.parametrize("value", ["²", "٣", "9" * 5000, "+1", "1 ", "0x1", ""])
def test_link_numbers_are_ascii_digits_of_bounded_length(value):
    with pytest.raises(AttnvizError):
        link.whole(value, "step", 0, 99)


@pytest.mark.parametrize(
    "params",
    [{"step": "²"}, {"seed": "٣"}, {"step": "9" * 5000}, {"s": "2x3x5\n"}, {"cell": "0_0\n"}],
    ids=str,
)
def test_link_with_non_ascii_digits_is_refused(params):
    with pytest.raises(AttnvizError):
        link.decode(params, tabs=("steps",))


def test_log_values_are_cut_short():
    assert len(short(BIG)) < LOG_CHARS + 40


def test_reload_defaults_recovers_from_a_link_that_breaks_the_page(monkeypatch):
    at = _app({"step": "3"})
    from attnviz.ui import playground

    def boom(*_: object) -> None:
        raise RuntimeError("broken")

    monkeypatch.setattr(playground, "_init_state", boom)
    at.run()
    assert "Something went wrong" in " ".join(e.value for e in at.error)
    monkeypatch.undo()
    at.button(key="pg_reload").click().run()
    assert not at.exception and not at.error
    assert "step" not in at.query_params


@pytest.mark.parametrize(
    "typed", ["**x** [a](https://e.example)", "`code` :red[r]", "$\\Huge x$ <b>", "www.e.example"]
)
def test_text_typed_in_a_cell_is_echoed_as_text(typed):
    from attnviz.ui.playground import editor_key

    at = _app()
    key = editor_key("x", at.session_state["pg_version"], 0)
    at.session_state[key] = {
        "edited_rows": {0: {"h0": typed}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    message = " ".join(e.value for e in at.error)
    assert typed in literal(message)  # what was typed is shown, and only as text:
    assert not re.search(r"\]\(|://|www\.|\*\*|:red\[|(?<!\\)[`$<]", message)


@pytest.mark.slow
def test_a_huge_message_is_refused_unread_and_costs_the_server_nothing(server):
    """A 3 MB "name" (over server.maxMessageSize): the connection is closed before the message is
    read; the server's memory does not grow by its size and it serves the next visitor."""
    import psutil

    url, _ = server
    port = int(url.rsplit(":", 1)[1])
    (proc,) = [
        p
        for p in psutil.process_iter(["cmdline"])
        if "--server.port" in (p.info["cmdline"] or []) and str(port) in (p.info["cmdline"] or [])
    ]
    with Session(url, path="walkthrough") as s:
        _plain(s.rerun())
        before = proc.memory_info().rss
        s.set_widget("wt_join_name", "a" * 3_000_000, field_name="string_value")
        # closed as it is sent or before an answer: a close frame (1009, too big) or none at all
        with pytest.raises(ProtocolError, match="connection lost"):
            s.rerun()
    assert proc.memory_info().rss - before < 40 * 2**20
    with Session(url) as other:
        _plain(other.rerun())
