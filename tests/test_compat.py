"""Streamlit patched in one checked place (attnviz/ui/compat.py) and the settings verified at start-up
(attnviz/ui/settings.py): every target exists as written for, a renamed or changed one is caught
before anything is patched, optional patches can all be off and the pages still work."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
import streamlit as st
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.state.session_state import WStates
from streamlit.testing.v1 import AppTest

from attnviz.ui import compat, settings

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
REQUIRED = [n for n, p in compat.PATCHES.items() if not p.optional]
OPTIONAL = [n for n, p in compat.PATCHES.items() if p.optional]
TARGETS = [(n, t) for n, p in compat.PATCHES.items() for t in p.targets]


@pytest.fixture
def fresh(monkeypatch):
    """compat.install() as in a process that has not run it (every patched name put back after)."""
    saved = {
        (cls, name): cls.__dict__[name]
        for cls in (AppSession, WStates)
        for name in (
            "_handle_clear_cache_request",
            "_handle_git_information_request",
            "request_rerun",
            "_call_soon_on_event_loop",
            "__getitem__",
        )
        if name in cls.__dict__
    }
    for (cls, name), value in saved.items():  # the originals, whatever ran before
        original = compat._original.get(name if cls is AppSession else "WStates.__getitem__")
        monkeypatch.setattr(cls, name, original or value)
    monkeypatch.setattr(compat, "_state", {})
    monkeypatch.setattr(compat, "_original", {})
    monkeypatch.setattr(compat, "_nodelay_done", threading.Event())
    monkeypatch.delenv(compat.ENV, raising=False)
    yield
    for (cls, name), value in saved.items():
        setattr(cls, name, value)


@pytest.mark.parametrize(("patch", "target"), TARGETS, ids=lambda v: getattr(v, "path", v))
def test_every_target_is_as_written_for_on_the_installed_streamlit(patch, target):
    assert target.problem() is None, (patch, st.__version__)


def test_the_declared_streamlit_range_is_the_one_the_patches_were_written_for():
    text = (REPO / "requirements.txt").read_text()
    major, minor = (int(p) for p in compat.WRITTEN_FOR.split("."))
    assert f"streamlit>={major}.{minor},<{major}.{minor + 1}" in text
    assert st.__version__.startswith(f"{compat.WRITTEN_FOR}.")


@pytest.mark.parametrize("name", REQUIRED)
def test_a_required_patch_whose_target_is_renamed_stops_the_app_loudly(name, fresh, monkeypatch):
    target = compat.PATCHES[name].targets[0]
    owner_path, _, attr = target.path.rpartition(".")
    owner = compat.Target(owner_path).resolve()
    monkeypatch.delattr(owner, attr)
    with pytest.raises(compat.CompatError) as caught:
        compat.install()
    message = str(caught.value)
    assert name in message and st.__version__ in message and attr in message


@pytest.mark.parametrize("name", ["fragment_resume", "batched_hand_off"])
def test_an_optional_patch_whose_target_changed_is_left_off_with_a_notice(
    name, fresh, monkeypatch, caplog
):
    target = compat.PATCHES[name].targets[0]
    owner_path, _, attr = target.path.rpartition(".")
    monkeypatch.setattr(compat.Target(owner_path).resolve(), attr, lambda self, a, b: None)
    with caplog.at_level(logging.WARNING, logger="attnviz.ui"):
        state = compat.install()
    assert state[name] is False and not compat.in_force()[name]
    assert f"patch '{name}' left off" in caplog.text and "written for" in caplog.text
    assert all(state[n] for n in REQUIRED)


def test_patches_off_leaves_every_optional_patch_off_and_the_required_ones_on(fresh, monkeypatch):
    monkeypatch.setenv(compat.ENV, "off")
    state = compat.install()
    assert {n for n, on in state.items() if on} == set(REQUIRED)
    in_force = compat.in_force()
    assert not any(in_force[n] for n in OPTIONAL)
    assert all(in_force[n] for n in REQUIRED)


def test_install_applies_each_patch_once(fresh):
    first = compat.install()
    assert all(first.values())
    assert compat.install() == first
    assert AppSession._call_soon_on_event_loop is compat.hand_over
    assert compat.streamlit_hand_over() is not compat.hand_over  # no loop onto itself


class _Session(AppSession):
    """An AppSession without its constructor: just what the two handlers below read."""

    def __init__(self) -> None:  # no super().__init__: no server, no script runner
        self.sent: list = []
        self.id = "test-session"
        self._script_data = types.SimpleNamespace(main_script_path=APP)
        self._enqueue_forward_msg = self.sent.append
        self._session_state = types.SimpleNamespace(clear=lambda: self.sent.append("cleared"))

    def shutdown(self) -> None:
        pass


def _session() -> tuple[AppSession, list]:
    session = _Session()
    return session, session.sent


def test_a_browsers_git_info_request_sends_nothing(fresh, monkeypatch):
    class Repo:  # a deployment whose checkout has a remote: Streamlit would send its name
        def __init__(self, path):
            self.untracked_files, self.uncommitted_files = [], []
            self.is_head_detached, self.ahead_commits = False, []

        def get_repo_info(self):
            return ("someone/attnviz.git", "main", "app.py")

    monkeypatch.setattr("streamlit.git_util.GitRepo", Repo)
    session, sent = _session()
    AppSession.handle_backmsg(session, BackMsg(load_git_info=True))
    assert sent and sent[0].git_info_changed.repository == "someone/attnviz"  # unpatched: sent
    compat.install()
    session, sent = _session()
    AppSession.handle_backmsg(session, BackMsg(load_git_info=True))
    assert sent == []


def test_a_browsers_clear_cache_request_clears_nothing(fresh, monkeypatch):
    cleared = []
    monkeypatch.setattr(st.cache_data, "clear", lambda: cleared.append("data"))
    monkeypatch.setattr(st.cache_resource, "clear", lambda: cleared.append("resource"))
    compat.install()
    session, sent = _session()
    AppSession.handle_backmsg(session, BackMsg(clear_cache=True))
    assert cleared == [] and sent == []


def test_the_settings_of_this_repository_are_all_in_force():
    assert settings.problems() == []


def test_an_unsafe_setting_stops_every_page_with_a_plain_message(monkeypatch):
    monkeypatch.setattr(settings, "_checked", None)
    monkeypatch.setitem(
        settings.REQUIRED,
        "client.showErrorDetails",
        settings.Required("nothing-streamlit-allows", "a visitor must never see a traceback"),
    )
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    monkeypatch.setattr(settings, "_checked", None)
    assert not at.exception
    assert "not configured safely" in at.error[0].value
    assert not at.tabs and not at.button  # no page was drawn


def test_an_unknown_setting_is_named_in_the_log(monkeypatch):
    monkeypatch.setitem(settings.REQUIRED, "server.noSuchOption", settings.Required(1, "a test"))
    (found,) = settings.problems()
    assert "server.noSuchOption is unknown to Streamlit" in found


#: the page tests that need an optional patch: a click or a change in a fragment the session does
#: not hold (a failover's first message: here, a teacher's Reveal in the live class's polling
#: fragment, a widget in one of the Playground's tabs) runs the page only with fragment_resume
#: (docs/patches.md)
NEEDS_FRAGMENT_RESUME = (
    "a_click_in_a_fragment_the_session_does_not_hold",
    "teachers_question_button_pressed_first_on_a_rebuilt_session",
    "a_widget_in_a_tab_changed_first_on_a_rebuilt_session",
)


@pytest.mark.slow
def test_the_page_tests_pass_with_every_optional_patch_off(tmp_path):
    """The app is correct without its optional patches: page tests in a process where
    ATTNVIZ_PATCHES=off, over a real server (test_stclient: its server inherits the setting), where
    the patches act: they replace AppSession's rerun request and event-loop hand-off and set the
    sockets' options. (AppTest runs no AppSession and no socket, so test_app's page tests run the
    same code with the patches on or off: they stay in the main run.) test_compat_off checks the
    patches' state first, so it cannot pass with them on."""
    env = {**os.environ, compat.ENV: "off", "ATTNVIZ_TEST_WORKERS": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "-k", f"not ({' or '.join(NEEDS_FRAGMENT_RESUME)})",
         "tests/test_stclient.py", "tests/test_compat_off.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
    # only the tests that need fragment_resume (the tabs' one per widget change)
    from tests.test_stclient import TAB_CHANGES

    assert f"{len(NEEDS_FRAGMENT_RESUME) - 1 + len(TAB_CHANGES)} deselected" in done.stdout
