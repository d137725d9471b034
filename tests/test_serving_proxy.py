"""The serve command's HAProxy config on its own (slow: starts haproxy): two stand-in replicas that
echo what reaches them, so the test sees the headers a Streamlit replica would get, and HAProxy's
log written to its file by scripts/log_sink.py, as the class server's is, so the test reads what it
keeps. A
second HAProxy from the same template with small per-source limits shows each limit act, each test
from its own loopback address (127.0.0.x); /_stcore/metrics written 17 ways is refused, and every
answer forbids framing by another site.

Needs Debian's haproxy (.ci/run installs it); it fails, never skips, without it.
"""

from __future__ import annotations

import base64
import configparser
import contextlib
import hashlib
import http.client
import json
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from scripts import serve

pytestmark = pytest.mark.slow
SPOOF = "203.0.113.7"
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455's
SMALL = serve.Limits(
    source_streams=4,
    source_connections=8,
    source_connection_rate=1000,
    source_request_rate=30,
    replica_maxconn=50,
    maxconn=200,
    tunnel_s=120,
)


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.headers.get("Upgrade", "").lower() == "websocket":  # held until the client leaves
            key = self.headers.get("Sec-WebSocket-Key", "") + WS_GUID
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
            self.send_header("Sec-WebSocket-Accept", accept)
            self.end_headers()
            self.close_connection = True
            while self.rfile.read(1):
                pass
            return
        body = json.dumps(
            {"port": self.server.server_port, "xff": self.headers.get_all("X-Forwarded-For")}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _EchoServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """HAProxy's health check hangs up once it has read the status line: the body's write
        then meets a reset connection, which is no error of the test's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_SINKS: dict[Path, subprocess.Popen] = {}  # each proxy's log sink, by run folder


@contextlib.contextmanager
def _serving(run_dir, limits: serve.Limits | None = None):
    """HAProxy from serve.write_configs in front of two echo servers."""
    echoes = [_EchoServer(("127.0.0.1", 0), _Echo) for _ in range(2)]
    for e in echoes:
        threading.Thread(target=e.serve_forever, daemon=True).start()
    s = serve.Settings(
        replicas=2,
        proxy_port=_free_port(),
        replica_ports=[e.server_port for e in echoes],
        run_dir=run_dir,
        limits=limits,
    )
    serve.write_configs(s)
    sink = _SINKS[s.run_dir] = subprocess.Popen(serve.log_sink_command(s))
    cmd = [s.haproxy, "-db", "-f", str(s.run_dir / "haproxy.cfg")]
    proc = subprocess.Popen(cmd)
    try:
        deadline = time.monotonic() + 60
        while set(serve.haproxy_servers(s.run_dir).values()) != {"UP"}:
            assert proc.poll() is None and time.monotonic() < deadline, "haproxy did not come up"
            assert sink.poll() is None, "the log sink exited"
            time.sleep(0.2)
        yield s
    finally:
        for p in (proc, sink):
            p.terminate()
            p.wait(timeout=30)
        for e in echoes:
            e.shutdown()


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """The serve command's HAProxy, its limits from the capacity model."""
    with _serving(tmp_path_factory.mktemp("proxy")) as s:
        yield s


@pytest.fixture(scope="module")
def small_proxy(tmp_path_factory):
    """The same config with small per-source limits, so that a test reaches them cheaply."""
    with _serving(tmp_path_factory.mktemp("small"), SMALL) as s:
        yield s


def test_a_replica_sees_the_address_the_proxy_saw_not_a_spoofed_one(proxy):
    seen = requests.get(proxy.url, headers={"X-Forwarded-For": SPOOF}, timeout=10).json()
    assert seen["xff"] == ["127.0.0.1"]


def test_the_first_answer_sets_the_affinity_cookie(proxy):
    r = requests.get(proxy.url, timeout=10)
    assert r.cookies.get(serve.COOKIE_NAME) == r.headers[serve.REPLICA_HEADER]


def test_every_request_with_the_cookie_reaches_the_same_replica(proxy):
    with requests.Session() as http:
        close = {"Connection": "close"}  # a new connection each time: only the cookie can pin it
        ports = {http.get(proxy.url, headers=close, timeout=10).json()["port"] for _ in range(10)}
    assert len(ports) == 1


def test_new_visitors_are_spread_over_the_replicas(proxy):
    ports = {requests.get(proxy.url, timeout=10).json()["port"] for _ in range(10)}
    assert ports == set(proxy.ports)


# How a visitor might write /_stcore/metrics so that a rule on the raw path misses it while the
# replica (uvicorn decodes the path before Streamlit routes it) still answers it.
METRICS_PATHS = [
    "/_stcore/metrics",
    "/_stcore/metrics/",
    "/_stcore/%6detrics",
    "/%5fstcore/metrics",
    "/%5Fstcore/metrics",
    "/_stcore/metric%73",
    "/_stcore%2fmetrics",
    "/_stcore%2Fmetrics",
    "/%5f%73%74%63%6f%72%65%2f%6d%65%74%72%69%63%73",
    "/_stcore/%256detrics",
    "//_stcore//metrics",
    "/_STCORE/METRICS",
    "/_stcore/Metrics",
    "/_stcore/./metrics",
    "/x/../_stcore/metrics",
    "/_stcore/metrics;x=1",
    "/_stcore/metrics?families=cache_memory_bytes",
]


def raw_get(url: str, path: str, source: str = "127.0.0.1") -> http.client.HTTPResponse:
    """GET path exactly as written (no client normalises it), from a chosen loopback address."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(
        parts.hostname, parts.port, timeout=10, source_address=(source, 0)
    )
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.body = resp.read()
    conn.close()
    return resp


@pytest.mark.parametrize("path", METRICS_PATHS)
def test_the_metrics_endpoint_is_not_public_however_its_path_is_written(proxy, path):
    assert raw_get(proxy.url, path).status == 404


def test_a_path_that_does_not_decode_is_refused(proxy):
    assert raw_get(proxy.url, "/_stcore/metric%7").status == 400


def test_the_replicas_still_answer_their_operator_on_their_own_port(proxy):
    port = proxy.ports[0]
    assert requests.get(f"http://127.0.0.1:{port}/_stcore/metrics", timeout=10).status_code == 200


@pytest.mark.parametrize(
    "path", ["/", "/walkthrough?class=ACDEFGHJK", "/_stcore/health", "/static/js/index.js"]
)
def test_no_page_may_be_framed_by_another_site(proxy, path):
    r = raw_get(proxy.url, path)
    assert r.status == 200
    assert r.getheader("X-Frame-Options") == "DENY"
    assert r.getheader("Content-Security-Policy") == "frame-ancestors 'none'"


@pytest.mark.parametrize("path", ["/_stcore/%6detrics", "/%zz"])
def test_the_proxys_own_answers_may_not_be_framed_either(proxy, path):
    r = raw_get(proxy.url, path)
    assert r.status in (400, 404)
    assert r.getheader("X-Frame-Options") == "DENY"
    assert r.getheader("Content-Security-Policy") == "frame-ancestors 'none'"


def test_the_apps_component_may_be_framed_by_the_app_only(proxy):
    r = raw_get(proxy.url, "/component/attnviz.ui.live_screen.attnviz_live_screen/index.html")
    assert r.getheader("X-Frame-Options") == "SAMEORIGIN"
    assert r.getheader("Content-Security-Policy") == "frame-ancestors 'self'"


# ---- per source address: the small proxy's limits, each test from its own loopback address ----
def _websocket(url: str, source: str) -> tuple[socket.socket, bytes]:
    """Open a websocket handshake from source; the socket (held open) and the answer's head."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), 10, (source, 0))
    sock.sendall(
        b"GET /_stcore/stream HTTP/1.1\r\nHost: x\r\n"
        b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return sock, head


def _status(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])


def test_one_address_holds_only_so_many_websockets_and_is_told_why(small_proxy):
    held = []
    try:
        for _ in range(SMALL.source_streams):
            sock, head = _websocket(small_proxy.url, "127.0.0.3")
            held.append(sock)
            assert _status(head) == 101, head
        sock, head = _websocket(small_proxy.url, "127.0.0.3")
        held.append(sock)
        assert _status(head) == 429, head
        refused = raw_get(small_proxy.url, "/walkthrough", source="127.0.0.3")
        assert refused.status == 429 and b"Close a few tabs" in refused.body
        # another address is not held up by it
        sock, head = _websocket(small_proxy.url, "127.0.0.4")
        held.append(sock)
        assert _status(head) == 101, head
    finally:
        for sock in held:
            sock.close()


def _close_through(sock: socket.socket) -> None:
    """Close a tab as a browser does, and wait for the proxy's end of it: the proxy passes the
    close on to the replica, which hangs up, and the proxy then closes its side (an EOF here)."""
    sock.shutdown(socket.SHUT_WR)
    while sock.recv(4096):
        pass
    sock.close()


def test_a_closed_tab_gives_its_place_back(small_proxy):
    # opened and closed one after another, three times the limit: each place comes back. The
    # proxy counts a close when it has handled it, a moment after the tab's own end, so an open
    # refused in that moment is tried again; one place never given back fails after the deadline
    for _ in range(3 * SMALL.source_streams):
        deadline = time.monotonic() + 30  # a bound for a busy machine: it comes back at once
        while True:
            sock, head = _websocket(small_proxy.url, "127.0.0.5")
            _close_through(sock)
            if _status(head) == 101 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert _status(head) == 101, head


def _refused(where: tuple[str, int], source: str) -> bool:
    """Whether the proxy hangs up on a new connection from source without answering (a reject:
    the reset can reach the client while it is still connecting)."""
    try:
        with socket.create_connection(where, 10, (source, 0)) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            return sock.recv(4096) == b""
    except ConnectionError:
        return True


def test_one_address_holds_only_so_many_connections(small_proxy):
    parts = urlsplit(small_proxy.url)
    where = (parts.hostname, parts.port)
    held = [socket.create_connection(where, 10, ("127.0.0.6", 0)) for _ in range(8)]
    try:
        time.sleep(0.5)  # the proxy has accepted (and counted) them all
        assert _refused(where, "127.0.0.6")
        assert not _refused(where, "127.0.0.7")
    finally:
        for sock in held:
            sock.close()


def test_one_address_sends_only_so_many_requests_in_ten_seconds(small_proxy):
    codes = [
        raw_get(small_proxy.url, "/", "127.0.0.8").status
        for _ in range(SMALL.source_request_rate + 1)
    ]
    assert codes[:-1] == [200] * SMALL.source_request_rate and codes[-1] == 429
    assert raw_get(small_proxy.url, "/", "127.0.0.9").status == 200


def _logged(proxy, path: str) -> bytes:
    """HAProxy's log once it has a line for a request to path (it writes one when the response
    is done)."""
    log = proxy.run_dir / "log" / "haproxy.log"
    deadline = time.monotonic() + 30
    while f"GET {path} ".encode() not in (text := log.read_bytes()):
        assert time.monotonic() < deadline, f"no log line for {path}: {text[-2000:]!r}"
        time.sleep(0.1)
    return text


def test_the_log_keeps_the_path_and_never_the_query_string(proxy):
    code, token, student = "ACDEFGHJK", "Tq3_" + "x" * 28, "s1-" + "y" * 13
    query = f"class={code}&teacher={token}&me={student}&slide=3"
    assert requests.get(f"{proxy.url}/walkthrough?{query}", timeout=10).ok
    text = _logged(proxy, "/walkthrough")
    line = next(li for li in text.splitlines() if b"GET /walkthrough " in li)
    assert line.endswith(b'"GET /walkthrough HTTP/1.1"'), line
    for secret in (code, token, student, "class=", "slide="):
        assert secret.encode() not in text, secret


def _burst(url: str, paths: list[str], clients: int = 8) -> None:
    """GET every path, from `clients` keep-alive connections at once."""
    netloc = urlsplit(url).netloc

    def client(mine: list[str]) -> None:
        conn = http.client.HTTPConnection(netloc, timeout=30)
        try:
            for path in mine:
                conn.request("GET", path)
                assert conn.getresponse().read()
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(paths[i::clients],)) for i in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def test_a_burst_while_the_log_writer_is_stalled_loses_no_line(proxy):
    """Requests at once while the log sink cannot run (stopped): HAProxy hands each line over at
    once or drops it, and the sink's socket holds them until it runs again. Every request has its
    line and HAProxy dropped none. Stdout's pipe held ~600 such lines (64 KiB) and lost the rest;
    the burst is larger than that where the kernel grants the buffer (here: net.core.rmem_max 4 MiB),
    and sized to what it grants (~830 bytes a line held, counted twice over)."""
    from scripts import log_sink

    with log_sink.bind(0) as sock:
        granted = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    n = min(2000, granted // 2048)
    tag = f"/burst-{time.monotonic_ns()}/"
    sink = _SINKS[proxy.run_dir]
    before = int(serve.haproxy_info(proxy.run_dir)["DroppedLogs"])
    sink.send_signal(signal.SIGSTOP)
    try:
        _burst(proxy.url, [f"{tag}{i}" for i in range(n)])
    finally:
        sink.send_signal(signal.SIGCONT)
    log = proxy.run_dir / "log" / "haproxy.log"
    deadline = time.monotonic() + 60
    while (logged := log.read_bytes().count(f"GET {tag}".encode())) < n:
        dropped = int(serve.haproxy_info(proxy.run_dir)["DroppedLogs"]) - before
        assert dropped == 0, f"HAProxy dropped {dropped} log lines ({logged} of {n} logged)"
        assert time.monotonic() < deadline, f"{logged} of {n} requests logged"
        time.sleep(0.2)
    assert logged == n
    assert int(serve.haproxy_info(proxy.run_dir)["DroppedLogs"]) == before == 0


def test_every_log_in_the_run_folder_is_rotated_by_size(proxy):
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(proxy.conf)
    bounded = {"supervisord": (conf["supervisord"], "logfile")}
    for name in conf.sections():
        if name.startswith("program:"):
            bounded[name] = (conf[name], "stdout_logfile")
    assert {"program:haproxy", "program:log-sink", "program:replica-1"} <= set(bounded)
    for name, (section, key) in bounded.items():
        assert section[key].startswith(str(proxy.run_dir / "log")), name
        assert section.get("redirect_stderr", "true") == "true", name  # no second, unbounded log
        assert 0 < int(section[f"{key}_maxbytes"]) <= 10 * 1024 * 1024, name
        assert 0 <= int(section[f"{key}_backups"]) <= 3, name
    # HAProxy's access log: written and rotated by the sink (tests/test_log_sink.py: it rotates)
    sink = dict(a.split("=", 1) for a in shlex.split(conf["program:log-sink"]["command"])[2:])
    assert sink["--file"] == str(proxy.run_dir / "log" / "haproxy.log")
    assert 0 < int(sink["--max-bytes"]) <= 10 * 1024 * 1024
    assert 0 <= int(sink["--backups"]) <= 3
