"""The class server for real (slow): `scripts/serve.py` starts 2 replicas behind HAProxy under
supervisord on free loopback ports; simulated students (benchmarks/bench_class.py over
scripts/stclient.py) go through the proxy. Correctness only: zero errors, session affinity, a killed
replica restarted and its student's view rebuilt from the link; the proxy on 127.0.0.2 (`--bind`):
a teacher there hands out a join link and a QR code (decoded for real) that carry 127.0.0.2, a
teacher on localhost is warned, and after a class's end neither the logs nor the store's files hold
its code, student ids or teacher token. No timing assertions. (A live class on two replicas sharing
Redis, and a stop that ends every process: tests/test_serving_live.py.)

Needs Debian's haproxy and supervisor (.ci/run installs them); it fails, never skips, without them.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
import requests
import zxingcpp
from PIL import Image

from attnviz.classroom import Classroom, format_code, open_store
from attnviz.classroom import secret as sec
from attnviz.ui.join_link import WARNING
from benchmarks.bench_class import run_class
from scripts import serve
from scripts.stclient import ProtocolError, ServerTimeout, Session
from tests.test_serving_proxy import METRICS_PATHS, raw_get

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
        # compat.py's fragment_resume runs it as the whole page: the click counted
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


# ---- a class on the school network: the join link, the warning, nothing left after the end ------


def test_the_configs_carry_the_bind_address_and_the_public_url(tmp_path):
    s = serve.Settings(replicas=1, replica_ports=[1], run_dir=tmp_path, bind="0.0.0.0")
    s.public_url = "https://class.example.org"
    serve.write_configs(s)
    assert f"bind 0.0.0.0:{s.proxy_port}" in (tmp_path / "haproxy.cfg").read_text()
    conf = (tmp_path / "supervisord.conf").read_text()
    assert 'ATTNVIZ_LISTEN="0.0.0.0"' in conf
    assert 'ATTNVIZ_PUBLIC_URL="https://class.example.org"' in conf
    again = serve.Settings.load(tmp_path)
    assert (again.bind, again.public_url) == ("0.0.0.0", "https://class.example.org")
    assert again.url == f"http://127.0.0.1:{s.proxy_port}"  # where this machine reaches it


def test_status_lists_every_program_and_what_the_proxy_sees(server, capsys):
    assert serve.main(["status", "--run-dir", str(server.run_dir)]) == 0
    rows = capsys.readouterr().out.splitlines()
    for program in ("haproxy:haproxy", "log-sink:log-sink", "replicas:replica-1"):
        assert any(r.split()[:2] == [program, "RUNNING"] for r in rows), rows
    assert {f"haproxy sees {name}: UP" for name in server.names} <= set(rows)
    assert not any("dropped" in r for r in rows)  # HAProxy's DroppedLogs is 0: said only if not


@pytest.mark.parametrize(
    ("option", "named"),
    [("--bind=school-wifi", "--bind takes an address"), ("--public-url=ftp://x", "--public-url")],
)
def test_a_bad_bind_address_or_public_url_is_refused_by_name(tmp_path, capsys, option, named):
    with pytest.raises(SystemExit) as stop:
        serve.main(["config", "--run-dir", str(tmp_path), option])
    assert stop.value.code == 2 and named in capsys.readouterr().err
    assert not (tmp_path / "haproxy.cfg").exists()


@pytest.mark.parametrize(
    ("bind", "public_url", "told"),
    [
        ("127.0.0.1", "", "--bind 0.0.0.0"),
        ("192.168.1.20", "", "students open http://192.168.1.20:8740/walkthrough"),
        ("fd00::5", "", "students open http://[fd00::5]:8740/walkthrough"),
        ("127.0.0.1", "https://class.example.org", "students open https://class.example.org/walk"),
    ],
)
def test_start_tells_where_students_join(tmp_path, bind, public_url, told):
    s = serve.Settings(run_dir=tmp_path, bind=bind, public_url=public_url)
    assert told in "\n".join(serve.where_students_join(s))


def _teacher_starts(url: str) -> tuple[Session, object]:
    """A teacher who opened the Walkthrough at url and started a class: the session and the
    run that drew the join section."""
    teacher = Session(url, path="walkthrough")
    assert teacher.rerun().ok
    teacher.click("wt_start")
    run = teacher.rerun()
    assert run.ok, (run.status, run.exceptions)
    return teacher, run


def _join_link(teacher: Session) -> str:
    return next(e.text for e in teacher.tree.values() if "/walkthrough?class=" in e.text)


def _qr_code(teacher: Session, run) -> str:
    """The join section's QR code, fetched as the browser would and decoded."""
    urls = [
        m.delta.new_element.imgs.imgs[0].url
        for m in run.messages
        if m.delta.new_element.WhichOneof("type") == "imgs"
    ]
    assert len(urls) == 1, urls
    png = teacher.http.get(f"{teacher.url}{urls[0]}", timeout=30)  # the cookie: its replica
    png.raise_for_status()
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(png.content)))
    assert len(found) == 1 and found[0].format == zxingcpp.BarcodeFormat.QRCode, found
    return found[0].text


def test_a_teacher_on_the_bound_address_hands_out_a_link_and_qr_code_to_it(server):
    assert server.url == f"http://127.0.0.2:{server.proxy_port}"
    teacher, run = _teacher_starts(server.url)
    try:
        code = teacher.query_string.split("class=")[1][:9]
        link = _join_link(teacher)
        assert link == f"http://127.0.0.2:{server.proxy_port}/walkthrough?class={code}"
        assert _qr_code(teacher, run) == link
        assert not [e.text for e in run.elements if e.text and e.text.startswith(WARNING)]
        # and the link works: a student who opens it through the proxy is in the class
        room = Classroom(open_store(server.class_store, None))
        with Session(server.url, path="walkthrough", query_string=f"class={code}") as student:
            assert student.rerun().ok
        assert room.members(code) == 1
    finally:
        teacher.close()


def test_a_teacher_on_localhost_is_warned_before_the_join_code(server):
    """On a replica's own port at localhost (HAProxy listens on 127.0.0.2 only): the warning,
    then the join code, which carries the address the teacher used."""
    teacher, run = _teacher_starts(f"http://localhost:{server.ports[0]}")
    try:
        texts = [e.text for e in run.elements if e.text]
        warned = next(i for i, t in enumerate(texts) if t.startswith(WARNING))
        joined = next(i for i, t in enumerate(texts) if "/walkthrough?class=" in t)
        assert warned < joined
        assert "listens only on this machine" in texts[warned]  # ATTNVIZ_LISTEN=127.0.0.2
        assert urlsplit(texts[joined]).hostname == "localhost"
        assert urlsplit(_qr_code(teacher, run)).hostname == "localhost"
    finally:
        teacher.close()


def _rewritten(r: redis.Redis) -> bool:
    info = r.info("persistence")
    return not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]


def _held(folders: list[Path], needles: list[str]) -> set[str]:
    """The needles found, byte for byte, in any file under the folders (logs rotated or not)."""
    blobs = [p.read_bytes() for f in folders for p in f.rglob("*") if p.is_file()]
    return {n for n in needles if any(n.encode() in b for b in blobs)}


def test_after_the_end_no_log_and_no_store_file_holds_the_class(server):
    """A class whose private teacher link and student links were opened through the proxy, whose
    students joined and reloaded: once it ends, the run folder (HAProxy's and the replicas' logs,
    supervisord's, the data folder) and Redis's folder hold no class code, student id, teacher
    token or its hash."""
    r = redis.Redis.from_url(server.class_store)
    folders = [server.run_dir, Path(r.config_get("dir")["dir"])]
    log = server.run_dir / "log" / "haproxy.log"
    streams = log.read_bytes().count(b"GET /_stcore/stream ")
    room = Classroom(open_store(server.class_store, None))
    started = room.start()
    code, token = started.code, started.token
    private = f"walkthrough?class={code}&teacher={token}"
    assert requests.get(f"{server.url}/{private}", timeout=30).ok  # the private link, opened
    sessions = [Session(server.url, path="walkthrough", query_string=f"class={code}")]
    sessions += [Session(server.url, path="walkthrough", query_string=f"class={code}")]
    try:
        for s in sessions:
            assert s.rerun().ok
        students = list(room.store.members(code))
        assert len(students) == 2
        for student in students:  # a student's own link (a reload), through the proxy
            page = f"{server.url}/walkthrough?class={code}&me={student}"
            assert requests.get(page, timeout=30).ok
    finally:
        for s in sessions:
            s.close()
    try:
        _until(
            lambda: log.read_bytes().count(b"GET /_stcore/stream ") >= streams + 2,
            "HAProxy logs the closed websockets",
        )
    except AssertionError as e:  # say whether HAProxy dropped them or never sent them
        info = serve.haproxy_info(server.run_dir)
        raise AssertionError(f"{e} (HAProxy's DroppedLogs: {info.get('DroppedLogs')})") from None
    needles = [code, format_code(code), token, sec.token_hash(token), *students]
    assert code in _held(folders, [code])  # the class is in Redis's append-only file
    room.end(code, token)
    _until(lambda: _rewritten(r), "Redis rewrites its append-only file")
    deadline = time.monotonic() + WAIT_S  # Redis deletes the old file once the new one is in
    while (left := _held(folders, needles)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == set()


# ---- the proxy in front of real replicas: no metrics however written, never framed elsewhere ----


def _is_metrics(body: bytes) -> bool:
    return b"# TYPE " in body and b"# EOF" in body  # OpenMetrics text


def test_a_replica_answers_written_forms_of_the_metrics_path_that_the_proxy_refuses(server):
    """The oracle for the test below: on its own port a replica decodes the path before routing, so
    a rule on the raw path would let these through."""
    port = f"http://127.0.0.1:{server.ports[0]}"
    answered = [p for p in METRICS_PATHS if _is_metrics(raw_get(port, p).body)]
    assert {"/_stcore/metrics", "/_stcore/%6detrics", "/_stcore%2fmetrics"} <= set(answered)


@pytest.mark.parametrize("path", METRICS_PATHS)
def test_no_written_form_of_the_metrics_path_reaches_a_replica_through_the_proxy(server, path):
    r = raw_get(server.url, path, source="127.0.0.3")
    assert r.status == 404 and not _is_metrics(r.body)


@pytest.mark.browser
def test_the_app_is_not_framed_by_another_site_and_its_component_still_loads(server):
    """In chromium: the Walkthrough through the proxy loads its component (an iframe of the app's
    own origin); the same page inside another page's iframe is refused by the browser."""
    from scripts.chromium import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"{server.url}/walkthrough", timeout=WAIT_S * 1000)
            _in_browser(page, lambda: _component(page), "the page's own component loads")
            framer = browser.new_page()  # another origin (about:blank) framing the app
            framer.set_content(f'<iframe src="{server.url}/walkthrough" width=800 height=600>')
            _in_browser(framer, lambda: _refused_frame(framer), "the browser refuses the frame")
            assert not framer.main_frame.child_frames[0].query_selector('[data-testid="stApp"]')
        finally:
            browser.close()


def _in_browser(page, check, what: str) -> None:
    """Wait for check, letting the browser's events in between (Playwright's sync API)."""
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {WAIT_S} s"
        page.wait_for_timeout(250)


def _refused_frame(page) -> bool:
    """Whether the page's first iframe shows the browser's error page (a refused frame)."""
    frames = page.main_frame.child_frames
    return bool(frames) and frames[0].url.startswith("chrome-error:")


def _component(page) -> bool:
    """Whether the page holds its live_screen component's frame, loaded from the app."""
    frames = [f for f in page.frames if "/component/" in f.url]
    return bool(frames) and frames[0].evaluate("() => document.readyState") == "complete"


# ---- the soak (scripts/soak_class.py), one attack small: the report and the per-source limit ----


def test_the_soak_holds_a_class_while_one_address_opens_2000_websockets(server):
    """scripts/soak_class.py's phase, small: 4 students follow a class while the idle-websockets
    attack opens 2,000 from one address. The proxy holds 900 (its limit per address) and answers
    the rest 429; the students are not refused; the report carries what the soak prints."""
    from attnviz.classroom import Classroom, open_store
    from scripts.soak_class import Sampler, run_phase

    room = Classroom(open_store(server.class_store, None))
    with Sampler(server.ports) as sampler:
        rep = run_phase("idle_websockets", server, sampler, room, students=4, phase_s=6)
    limit = server.connection_limits.source_streams
    assert rep["attack"]["held_after_opening"] == limit
    assert rep["attack"]["outcomes"]["http 429"] == 2000 - limit
    assert rep["refusals"] == 0, rep["refusal_samples"]
    assert rep["members_at_end"] == 4
    assert rep["poll"]["n"] > 0 and set(rep["rss_peak_mib"]) == {str(p) for p in server.ports}
