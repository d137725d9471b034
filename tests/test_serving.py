"""The class server for real (slow): `scripts/serve.py` starts 2 replicas behind HAProxy under
supervisord on free loopback ports; simulated students (benchmarks/bench_class.py over
scripts/stclient.py) go through the proxy. Correctness only: zero errors, session affinity, a killed
replica restarted and its student's view rebuilt from the link. No timing assertions. (A live class
on two replicas sharing Redis, and a stop that ends every process: tests/test_serving_live.py.)

Needs Debian's haproxy and supervisor (.ci/run installs them); it fails, never skips, without them.
"""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest
import requests

from benchmarks.bench_class import run_class
from scripts import serve
from scripts.stclient import ProtocolError, ServerTimeout, Session

pytestmark = pytest.mark.slow
WAIT_S = 180  # generous: a busy 2-core machine starts Streamlit slowly; nothing here measures speed


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _until(check, what: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout} s")


def _until_closed(s: Session) -> None:
    while True:
        try:
            s.recv(timeout=WAIT_S)
        except ServerTimeout:
            raise AssertionError("the websocket stayed open after its replica was killed") from None
        except ProtocolError:
            return


def _reconnect(s: Session) -> None:
    """What a browser does when its websocket dies: connect again through the proxy, retrying
    while the proxy has no live replica to give it yet (a 503, or a closed connection, until its
    health checks mark the dead one down)."""

    def attempt() -> bool:
        try:
            s.connect(existing_session_id=s.session_id)
        except requests.HTTPError as e:
            if e.response is None or e.response.status_code not in (502, 503, 504):
                raise
            return False
        except requests.ConnectionError:  # the proxy closed a request to the dead replica
            return False
        return True

    _until(attempt, "the browser reconnects through the proxy")


@pytest.fixture
def server(class_server):
    """The class server of this test process (tests/conftest.py): 2 replicas behind HAProxy."""
    return class_server


def test_the_configs_give_every_replica_the_same_secret_and_store(tmp_path):
    s = serve.Settings(
        replicas=3, replica_ports=[1, 2, 3], run_dir=tmp_path, class_store="redis://h:1/0"
    )
    serve.write_configs(s)
    conf = (tmp_path / "supervisord.conf").read_text()
    secret = serve.cookie_secret(tmp_path)
    assert f'STREAMLIT_SERVER_COOKIE_SECRET="{secret}"' in conf
    assert 'ATTNVIZ_CLASS_STORE="redis://h:1/0"' in conf
    assert conf.count("[program:replica-") == 3


def test_the_run_folder_keeps_its_secrets_private(tmp_path):
    s = serve.Settings(replicas=1, replica_ports=[1], run_dir=tmp_path)
    serve.write_configs(s)
    for name in ("cookie_secret", "supervisord.conf", "haproxy.cfg"):
        assert (tmp_path / name).stat().st_mode & 0o077 == 0, name


def test_twenty_students_through_the_proxy_see_no_error(server):
    rep = run_class(
        server.url,
        students=20,
        pattern="burst",
        actions=["next", "tab", "tab", "edit", "next"],
        rounds=5,
        replica_ports=server.ports,
        proxied=True,
    )
    assert rep["errors"] == 0, rep["error_samples"]
    assert rep["stats"]["first_load"]["n"] == 20
    assert rep["stats"]["interaction"]["n"] >= 20 * 5
    # affinity: every request of a session (page, websocket, health pings) reached one replica
    assert rep["sessions_split_across_replicas"] == 0
    assert sorted(rep["students_per_replica"]) == ["replica-1", "replica-2"]


def test_the_affinity_cookie_names_the_replica_that_answers(server):
    with Session(server.url) as s:
        s.rerun()
        cookie = s.cookies[serve.COOKIE_NAME]
        again = s.http.get(f"{server.url}/_stcore/health").headers[serve.REPLICA_HEADER]
    assert cookie == s.replica == s.replica_http == again


def _answers(port: int) -> bool:
    """The replica on ``port`` answers its health check itself (it is warm and serving)."""
    try:
        return requests.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).ok
    except requests.RequestException:
        return False


def _all_up(server, gone: int | None = None) -> bool:
    """Both replicas running (not the killed one), each answering on its own port, and HAProxy
    sending students to each. (Right after a kill HAProxy still says UP until its checks fail:
    the replica's own answer is what shows it is back.)"""
    pids = serve.replica_pids(server)
    states = serve.haproxy_servers(server.run_dir)
    if len(pids) != 2 or gone in pids.values() or set(states.values()) != {"UP"}:
        return False
    return all(_answers(port) for port in server.ports)


def _on_the_same_replica(first: Session) -> Session:
    """Another visitor whose browser holds the proxy's affinity cookie for ``first``'s replica."""
    http = requests.Session()
    http.cookies.set(serve.COOKIE_NAME, first.cookies[serve.COOKIE_NAME])
    return Session(first.url, http=http)


def test_a_killed_replicas_students_keep_their_view_and_their_next_click(server):
    """Two students on one replica, both on step 3, when it is killed. Each reconnects through
    the proxy to the live replica, which rebuilds the view from the link: the one whose browser
    asks for the page again sees step 3; the one who clicks Next first (a browser sends no rerun
    of its own on reconnecting) gets step 4, the click counted, then step 5. supervisord brings
    the killed replica back and HAProxy sends students to it again."""
    _until(lambda: _all_up(server), "both replicas UP before one is killed")
    viewer = Session(server.url)
    clicker: Session | None = None
    old = None
    try:
        viewer.rerun()
        clicker = _on_the_same_replica(viewer)
        clicker.rerun()
        assert clicker.replica == viewer.replica
        for s in (viewer, clicker):
            for _ in range(2):
                s.click("pg_next")
                run = s.rerun()
            assert "**Step 3 of" in run.text()
        old = serve.replica_pids(server)[viewer.replica]
        os.kill(old, signal.SIGKILL)
        for s in (viewer, clicker):
            _until_closed(s)  # the websocket dies with its replica
            s.close()
            _reconnect(s)  # what the browser does: through the proxy again
        run = viewer.rerun()  # the new replica rebuilds the view from the link (query string)
        assert run.ok and "**Step 3 of" in run.text()

        clicker.click("pg_next")  # the click is the first thing the new replica hears
        # attnviz.ui.resume runs it as the whole page: the click counted
        run = clicker.rerun(timeout=15)
        assert run.ok and "**Step 4 of" in run.text()
        assert "could not use" not in run.text()  # the callback found the state rebuilt first
        clicker.click("pg_next")  # and the next click moves on from there: Next now says step 5
        run = clicker.rerun(timeout=15)
        assert run.ok and "**Step 5 of" in run.text()
    finally:
        viewer.close()
        if clicker is not None:
            clicker.close()
        _until(
            lambda: _all_up(server, old),
            "supervisord restarts the killed replica, HAProxy sees it UP",
        )
