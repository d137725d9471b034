"""The serve command's HAProxy config on its own (slow: starts haproxy): two stand-in replicas that
echo what reaches them, so the test sees the headers a Streamlit replica would get, and HAProxy's
log written to a file as supervisord writes it (its stdout), so the test reads what it keeps.

Needs Debian's haproxy (.ci/run installs it); it fails, never skips, without it.
"""

from __future__ import annotations

import configparser
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from scripts import serve

pytestmark = pytest.mark.slow
SPOOF = "203.0.113.7"


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
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


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """HAProxy from serve.write_configs in front of two echo servers."""
    echoes = [_EchoServer(("127.0.0.1", 0), _Echo) for _ in range(2)]
    for e in echoes:
        threading.Thread(target=e.serve_forever, daemon=True).start()
    s = serve.Settings(
        replicas=2,
        proxy_port=_free_port(),
        replica_ports=[e.server_port for e in echoes],
        run_dir=tmp_path_factory.mktemp("proxy"),
    )
    serve.write_configs(s)
    log = open(s.run_dir / "log" / "haproxy.log", "wb")  # noqa: SIM115 (closed below)
    cmd = [s.haproxy, "-db", "-f", str(s.run_dir / "haproxy.cfg")]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while set(serve.haproxy_servers(s.run_dir).values()) != {"UP"}:
            assert proc.poll() is None and time.monotonic() < deadline, "haproxy did not come up"
            time.sleep(0.2)
        yield s
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        for e in echoes:
            e.shutdown()


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


def test_the_metrics_endpoint_is_not_public(proxy):
    assert requests.get(f"{proxy.url}/_stcore/metrics", timeout=10).status_code == 404
    assert requests.get(f"{proxy.url}/_stcore/metrics/", timeout=10).status_code == 404
    # the replicas behind it still answer their operator on their own port
    port = proxy.ports[0]
    assert requests.get(f"http://127.0.0.1:{port}/_stcore/metrics", timeout=10).status_code == 200


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


def test_every_log_in_the_run_folder_is_rotated_by_size(proxy):
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(proxy.conf)
    bounded = {"supervisord": (conf["supervisord"], "logfile")}
    for name in conf.sections():
        if name.startswith("program:"):
            bounded[name] = (conf[name], "stdout_logfile")
    assert {"program:haproxy", "program:replica-1", "program:replica-2"} <= set(bounded)
    for name, (section, key) in bounded.items():
        assert section[key].startswith(str(proxy.run_dir / "log")), name
        assert section.get("redirect_stderr", "true") == "true", name  # no second, unbounded log
        assert 0 < int(section[f"{key}_maxbytes"]) <= 10 * 1024 * 1024, name
        assert 0 <= int(section[f"{key}_backups"]) <= 3, name
