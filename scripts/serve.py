"""Serve a class: N `streamlit run app.py` replicas behind HAProxy, under supervisord, one command.

    python scripts/serve.py start                  # one replica per core, the proxy on 127.0.0.1:8740
    python scripts/serve.py start --bind 0.0.0.0   # a class on the school network: students reach it
    python scripts/serve.py start --public-url https://attnviz.example.edu   # behind a TLS proxy
    python scripts/serve.py start --replicas 2 --port 8741 --replica-port 8701
    python scripts/serve.py status                 # supervisord's and HAProxy's view of the replicas
    python scripts/serve.py stop                   # everything down, cleanly

Every setting comes from here and nowhere else: the configs are written from the templates in
``deploy/`` into a run folder (``--run-dir``, default ``$XDG_STATE_HOME/attnviz/serve``, never the
repo), and supervisord gives every replica the same environment: the cookie secret (made once, kept in
the run folder, mode 600), ``ATTNVIZ_DATA_DIR`` (the live-class SQLite file; default the run folder's
``data/``), ``ATTNVIZ_CLASS_STORE`` (e.g. ``redis://127.0.0.1:6379/0`` when several machines serve),
and the thread counts (cores / replicas each, so the replicas do not oversubscribe the cores).
supervisord restarts a replica that dies; HAProxy's health checks route around it meanwhile.

The replicas listen on loopback only; HAProxy listens on ``--bind`` (default 127.0.0.1: this machine
only; 0.0.0.0 for every network it is on). The replicas learn that address (``ATTNVIZ_LISTEN``) and
the operator's ``--public-url`` (``ATTNVIZ_PUBLIC_URL``): the class's join link and QR code use the
public URL when set, else the address the teacher's browser used, and a teacher on a loopback address
is warned (``attnviz.classroom.address``). HAProxy logs each request's path without its query string
(a class code, a student id or a teacher token never reaches a log), over UDP on loopback to
``scripts/log_sink.py``, which writes ``log/haproxy.log``; every log in the run folder is rotated by size (``LOG_MAX_BYTES``, ``LOG_BACKUPS``). HAProxy bounds what one client address may hold
and send (``Limits``, derived from the capacity model of docs/deploy.md), refuses to be framed by
another site and never serves ``/_stcore/metrics``, however its path is written. Runs as the invoking user. Needs Debian's
``haproxy`` and ``supervisor``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import http.client
import io
import ipaddress
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import xmlrpc.client
from dataclasses import asdict, dataclass, field
from pathlib import Path
from string import Template

REPO = Path(__file__).resolve().parents[1]
REPO_STR = str(REPO)
DEPLOY = REPO / "deploy"
COOKIE_NAME = "attnviz_replica"
REPLICA_HEADER = "X-Attnviz-Replica"
LOG_MAX_BYTES = 5 * 1024 * 1024  # each log in the run folder is rotated at this size ...
LOG_BACKUPS = 2  # ... keeping this many old files: at most 15 MB of a program's log on disk
_KEPT = ("replicas", "proxy_port", "replica_port", "threads", "class_store", "bind", "public_url")
#: The address HAProxy connects to the replicas from, and the only one whose X-Forwarded-For a
#: replica believes (uvicorn's FORWARDED_ALLOW_IPS): a visitor's own header is never read.
PROXY_SOURCE = "127.0.0.1"

# The capacity model of docs/deploy.md ("Connections per source"): the numbers HAProxy's limits are
# derived from. One source address may be a whole school behind one NAT address.
SCHOOL = 300  # students behind one address (the app's per-address join limits assume as many)
TABS = 2  # tabs each keeps open: each is one websocket, held for the whole visit
STUDENTS_PER_REPLICA = 150  # the CPU model: 300 students acting every 2-8 s on 2 cores at 60%
PAGE_CONNECTIONS = 7  # a browser's connections for one page load: 6 for its files + the websocket
PAGE_REQUESTS = 40  # HTTP requests of one first page load (page, scripts, styles, fonts, health)
WS_PING_S = 30  # each replica pings every websocket this often (Streamlit's default, made explicit)


@dataclass(frozen=True)
class Limits:
    """HAProxy's numbers for N replicas, from the capacity model (docs/deploy.md).

    ``source_streams`` requests in flight from one address, open websockets included (a school's
    tabs, plus one page load in progress per student); ``source_connections`` TCP connections held
    by one address at the proxy (idle keep-alive ones hold no replica); ``source_connection_rate``
    and ``source_request_rate`` per 10 s: a whole school loading the page in the same 10 s;
    ``replica_maxconn``: after one address holds all it may on one replica (its affinity cookie
    pins every request it sends to one), that replica still has room for the students it is sized
    for, with their tabs;
    ``maxconn``: the proxy's total; ``tunnel_s``: a websocket with no traffic either way for this
    long is closed (the replica's pings keep an open tab's alive)."""

    source_streams: int
    source_connections: int
    source_connection_rate: int
    source_request_rate: int
    replica_maxconn: int
    maxconn: int
    tunnel_s: int

    @classmethod
    def for_replicas(cls, replicas: int) -> Limits:
        streams = SCHOOL * (TABS + 1)
        replica = streams + STUDENTS_PER_REPLICA * TABS
        connections = 2 * streams
        return cls(
            source_streams=streams,
            source_connections=connections,
            source_connection_rate=SCHOOL * PAGE_CONNECTIONS,
            source_request_rate=SCHOOL * PAGE_REQUESTS,
            replica_maxconn=replica,
            maxconn=max(4096, replicas * replica + connections),
            tunnel_s=4 * WS_PING_S,
        )


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_run_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "attnviz" / "serve"


@dataclass
class Settings:
    """One class server. ``replica_ports`` default to consecutive ports from ``replica_port``."""

    replicas: int = field(default_factory=_cores)
    proxy_port: int = 8740
    bind: str = "127.0.0.1"  # the address HAProxy listens on: 0.0.0.0 (or ::) for every network
    public_url: str = ""  # the URL students use, when not http://BIND:PORT (a name, a TLS proxy)
    replica_port: int = 8700
    replica_ports: list[int] = field(default_factory=list)  # explicit ports (tests pick free ones)
    run_dir: Path = field(default_factory=default_run_dir)
    data_dir: Path | None = None  # default run_dir / "data"
    class_store: str = ""  # "" -> SQLite under data_dir; "redis://host:port/db" for many processes
    threads: int = 0  # torch/OpenMP threads per replica; 0 -> cores // replicas (at least 1)
    check_interval_ms: int = 2000
    log_port: int = 0  # HAProxy sends its log here (scripts/log_sink.py); 0 -> a free port
    limits: Limits | None = None  # None -> Limits.for_replicas(replicas) (tests pass small ones)
    python: str = sys.executable
    haproxy: str = field(default_factory=lambda: shutil.which("haproxy") or "/usr/sbin/haproxy")
    supervisord: str = field(default_factory=lambda: shutil.which("supervisord") or "supervisord")

    @property
    def url(self) -> str:
        """Where this machine reaches the proxy (loopback when it listens on every address)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.bind, self.bind)
        return f"http://{_host(host)}:{self.proxy_port}"

    @property
    def ports(self) -> list[int]:
        if self.replica_ports:
            return list(self.replica_ports)
        return [self.replica_port + i for i in range(self.replicas)]

    @property
    def connection_limits(self) -> Limits:
        return self.limits or Limits.for_replicas(self.replicas)

    @property
    def names(self) -> list[str]:
        return [f"replica-{i + 1}" for i in range(self.replicas)]

    @property
    def conf(self) -> Path:
        return self.run_dir / "supervisord.conf"

    def save(self) -> None:
        data = {k: getattr(self, k) for k in _KEPT} | {"replica_ports": self.ports}
        data["data_dir"] = str(self.data_dir) if self.data_dir else ""
        (self.run_dir / "settings.json").write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, run_dir: Path) -> Settings:
        """The settings a run folder was last started with (defaults where it has none)."""
        s = cls(run_dir=run_dir)
        path = run_dir / "settings.json"
        if path.exists():
            data = json.loads(path.read_text())
            for k in _KEPT:
                if k in data:  # a run folder from before a setting existed keeps its default
                    setattr(s, k, type(getattr(s, k))(data[k]))
            s.replica_ports = [int(p) for p in data["replica_ports"]]
            s.data_dir = Path(data["data_dir"]) if data["data_dir"] else None
        return s


def _host(address: str) -> str:
    """An address as it goes before ':port' (IPv6 in brackets)."""
    return f"[{address}]" if ":" in address else address


def is_loopback(host: str) -> bool:
    """Whether host reaches only this machine (127.0.0.0/8, ::1, localhost)."""
    if REPO_STR not in sys.path:
        sys.path.insert(0, REPO_STR)
    from attnviz.classroom.address import is_loopback

    return is_loopback(host)


def parse_bind(text: str) -> str:
    """--bind: an IPv4 or IPv6 address (0.0.0.0 or :: for every network), or ValueError."""
    try:
        return str(ipaddress.ip_address(text.strip().strip("[]")))
    except ValueError:
        raise ValueError(
            f"--bind takes an address such as 0.0.0.0 (every network), 192.168.1.20 or "
            f"127.0.0.1 (this machine only), not {text[:60]!r}"
        ) from None


def parse_public_url(text: str) -> str:
    """--public-url: a site's root such as https://attnviz.example.edu, or ValueError."""
    if REPO_STR not in sys.path:
        sys.path.insert(0, REPO_STR)
    from attnviz.classroom.address import parse_base_url
    from attnviz.errors import AttnvizError

    try:
        return parse_base_url(text)
    except AttnvizError as e:
        raise ValueError(f"--public-url: {e}") from None


def cookie_secret(run_dir: Path) -> str:
    """The cookie secret every replica shares, made once per run folder and kept there (mode 600)."""
    path = run_dir / "cookie_secret"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return path.read_text().strip()


def environment(s: Settings) -> dict[str, str]:
    """The environment of every replica: one place for what they must agree on."""
    threads = s.threads or max(1, _cores() // s.replicas)
    env = {
        "STREAMLIT_SERVER_COOKIE_SECRET": cookie_secret(s.run_dir),
        "ATTNVIZ_DATA_DIR": str(s.data_dir or s.run_dir / "data"),
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
        "ATTNVIZ_LISTEN": s.bind,
        # uvicorn takes a client's address from X-Forwarded-For only on connections from here:
        # HAProxy's (it drops what a visitor sent and sets the address it saw)
        "FORWARDED_ALLOW_IPS": PROXY_SOURCE,
        "STREAMLIT_SERVER_WEBSOCKET_PING_INTERVAL": str(WS_PING_S),
    }
    if s.class_store:
        env["ATTNVIZ_CLASS_STORE"] = s.class_store
    if s.public_url:
        env["ATTNVIZ_PUBLIC_URL"] = s.public_url
    return env


def _supervisor_env(env: dict[str, str]) -> str:
    for k, v in env.items():
        if any(c in v for c in '"%\n,'):
            raise ValueError(f"{k} contains a character supervisord cannot carry: {v!r}")
    return ",".join(f'{k}="{v}"' for k, v in env.items())


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_sink_command(s: Settings) -> list[str]:
    """The process that writes HAProxy's access log to log/haproxy.log (scripts/log_sink.py)."""
    return [
        s.python,
        str(REPO / "scripts" / "log_sink.py"),
        f"--port={s.log_port}",
        f"--file={s.run_dir / 'log' / 'haproxy.log'}",
        f"--max-bytes={LOG_MAX_BYTES}",
        f"--backups={LOG_BACKUPS}",
    ]


def write_configs(s: Settings) -> list[Path]:
    """Write haproxy.cfg and supervisord.conf (mode 600: it holds the cookie secret) into run_dir."""
    if s.replicas < 1 or len(set(s.ports)) != s.replicas:
        raise ValueError(f"{s.replicas} replicas need as many distinct ports, got {s.ports}")
    s.log_port = s.log_port or _free_udp_port()
    (s.run_dir / "log").mkdir(parents=True, exist_ok=True)
    s.run_dir.chmod(0o700)
    Path(environment(s)["ATTNVIZ_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
    common = {"run_dir": str(s.run_dir), "repo": str(REPO)}
    common |= {"log_max_bytes": LOG_MAX_BYTES, "log_backups": LOG_BACKUPS}
    servers = "\n".join(
        f"    server {name} 127.0.0.1:{port} cookie {name}"
        for name, port in zip(s.names, s.ports, strict=True)
    )
    limits = s.connection_limits
    haproxy = Template((DEPLOY / "haproxy.cfg.in").read_text()).substitute(
        common | asdict(limits),
        proxy_host=_host(parse_bind(s.bind)),
        proxy_port=s.proxy_port,
        proxy_source=PROXY_SOURCE,
        cookie_name=COOKIE_NAME,
        replica_header=REPLICA_HEADER,
        check_interval_ms=s.check_interval_ms,
        log_port=s.log_port,
        servers=servers,
    )
    replica = Template((DEPLOY / "replica.conf.in").read_text())
    blocks = "".join(
        replica.substitute(common, name=name, port=port, python=s.python)
        for name, port in zip(s.names, s.ports, strict=True)
    )
    supervisor = Template((DEPLOY / "supervisord.conf.in").read_text()).substitute(
        common,
        environment=_supervisor_env(environment(s)),
        minfds=2 * limits.maxconn + 256,  # HAProxy's two sockets a connection, and its own
        haproxy=s.haproxy,
        log_sink=shlex.join(log_sink_command(s)),
        replica_programs=",".join(s.names),
        replicas=blocks,
    )
    paths = [s.run_dir / "haproxy.cfg", s.conf]
    for path, text in zip(paths, (haproxy, supervisor), strict=True):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
    subprocess.run([s.haproxy, "-c", "-q", "-f", str(paths[0])], check=True)
    s.save()
    return paths


def _get(url: str, timeout: float = 2.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except OSError:
        return 0


def _ask_haproxy(run_dir: Path, command: str) -> str | None:
    """HAProxy's answer to one command on its stats socket; None if unreachable."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(str(run_dir / "haproxy.sock"))
            sock.sendall(command.encode() + b"\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
    except OSError:
        return None
    return data.decode()


def haproxy_servers(run_dir: Path) -> dict[str, str]:
    """HAProxy's view of each replica ('UP', 'DOWN', ...), from its stats socket; {} if unreachable."""
    if (data := _ask_haproxy(run_dir, "show stat")) is None:
        return {}
    rows = csv.DictReader(io.StringIO(data.lstrip("# ")))
    return {
        r["svname"]: r["status"].split()[0]
        for r in rows
        if r["pxname"] == "replicas" and r["svname"] not in ("FRONTEND", "BACKEND")
    }


def haproxy_info(run_dir: Path) -> dict[str, str]:
    """HAProxy's ``show info`` (its version, uptime, ``DroppedLogs``, ...); {} if unreachable."""
    pairs = (
        line.partition(":") for line in (_ask_haproxy(run_dir, "show info") or "").splitlines()
    )
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


def wait_ready(s: Settings, timeout: float = 180.0) -> None:
    """Until every replica answers its health check, HAProxy sees them all UP, the log sink runs and
    the proxy serves."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        healthy = all(_get(f"http://127.0.0.1:{p}/_stcore/health") == 200 for p in s.ports)
        states = haproxy_servers(s.run_dir)
        up = bool(states) and all(states.get(n) == "UP" for n in s.names)
        sink = any(p["name"] == "log-sink" and p["statename"] == "RUNNING" for p in _processes(s))
        if healthy and up and sink and _get(f"{s.url}/_stcore/health") == 200:
            return
        time.sleep(0.5)
    raise TimeoutError(f"the class server did not come up in {timeout:.0f} s: see {s.run_dir}/log")


def warm(s: Settings, timeout: float = 180.0) -> None:
    """One page load on each replica, straight to its port, so the first student pays no imports."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from scripts.stclient import Session

    for port in s.ports:
        with Session(f"http://127.0.0.1:{port}", timeout=timeout) as session:
            session.rerun()


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a unix socket: how supervisorctl reaches supervisord."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


class _UnixTransport(xmlrpc.client.Transport):
    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path

    def make_connection(self, host: object) -> http.client.HTTPConnection:
        return _UnixConnection(self._path, timeout=10)


def rpc(s: Settings) -> xmlrpc.client.ServerProxy:
    """supervisord's own XML-RPC interface (``rpc(s).supervisor.getAllProcessInfo()``, ...), over the
    unix socket supervisorctl uses: a call costs a request, not a Python process per call."""
    return xmlrpc.client.ServerProxy(
        "http://localhost", transport=_UnixTransport(str(s.run_dir / "supervisor.sock"))
    )


def _processes(s: Settings) -> list[dict]:
    """supervisord's view of every program; [] if it does not answer."""
    try:
        return rpc(s).supervisor.getAllProcessInfo()
    except (OSError, xmlrpc.client.Error, http.client.HTTPException):
        return []


def supervisord_pid(run_dir: Path) -> int | None:
    try:
        pid = int((run_dir / "supervisord.pid").read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def replica_pids(s: Settings) -> dict[str, int]:
    """Each running replica's process id, by name (from supervisord)."""
    names = set(s.names)
    return {
        p["name"]: int(p["pid"])
        for p in _processes(s)
        if p["group"] == "replicas" and p["name"] in names and p["pid"] > 0
    }


def start(s: Settings, timeout: float = 180.0) -> None:
    """Write the configs, start supervisord (it starts HAProxy and the replicas), wait, warm them up."""
    if supervisord_pid(s.run_dir):
        raise RuntimeError(f"already running from {s.run_dir}: stop it first")
    write_configs(s)
    subprocess.run([s.supervisord, "-c", str(s.conf)], check=True)
    try:
        wait_ready(s, timeout)
        warm(s, timeout)
    except BaseException:
        stop(s)
        raise


def stop(s: Settings, timeout: float = 60.0) -> None:
    """Stop the replicas and HAProxy, then supervisord itself; waits until it has exited."""
    pid = supervisord_pid(s.run_dir)
    if pid is None:
        return
    # already going, or it hangs up while it stops: the wait below tells
    with contextlib.suppress(OSError, xmlrpc.client.Error, http.client.HTTPException):
        rpc(s).supervisor.shutdown()
    deadline = time.monotonic() + timeout
    while supervisord_pid(s.run_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    if supervisord_pid(s.run_dir):
        os.kill(pid, signal.SIGTERM)


def _settings(args: argparse.Namespace) -> Settings:
    run_dir = Path(args.run_dir).expanduser().resolve()
    if args.command in ("stop", "status"):
        return Settings.load(run_dir)
    s = Settings(run_dir=run_dir)
    for name in ("replicas", "proxy_port", "replica_port", "threads"):
        if getattr(args, name, None) is not None:
            setattr(s, name, getattr(args, name))
    if getattr(args, "data_dir", None):
        s.data_dir = Path(args.data_dir).expanduser().resolve()
    s.class_store = getattr(args, "class_store", None) or os.environ.get("ATTNVIZ_CLASS_STORE", "")
    if getattr(args, "bind", None):
        s.bind = parse_bind(args.bind)
    if getattr(args, "public_url", None):
        s.public_url = parse_public_url(args.public_url)
    return s


def where_students_join(s: Settings) -> list[str]:
    """What `start` tells the operator: where students open the class, or why they cannot."""
    page = "/walkthrough"
    if s.public_url:
        return [
            f"students open {s.public_url}{page} (the public URL: its proxy must reach {s.url})"
        ]
    if REPO_STR not in sys.path:
        sys.path.insert(0, REPO_STR)
    from attnviz.classroom.address import reachable_addresses

    if is_loopback(s.bind):
        return [
            f"only this machine reaches {s.url}: for a class on the school network, start with",
            "  --bind 0.0.0.0 (every network this machine is on) or --bind THIS_MACHINES_ADDRESS",
        ]
    here = reachable_addresses() if s.bind in ("0.0.0.0", "::") else (s.bind,)
    if not here:
        return [f"this machine has no network address now: students cannot reach {s.url}"]
    lines = [f"students open http://{_host(a)}:{s.proxy_port}{page}" for a in here]
    lines.append(
        f"(a firewall on this machine must let TCP port {s.proxy_port} in; open the page at "
        "that address yourself, so the join link and QR code carry it)"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["start", "stop", "status", "config"])
    ap.add_argument("--run-dir", default=str(default_run_dir()), help="configs, logs, sockets")
    ap.add_argument("--replicas", type=int, help="Streamlit processes (default: one per core)")
    ap.add_argument("--port", dest="proxy_port", type=int, help="the proxy's port (default 8740)")
    ap.add_argument("--replica-port", type=int, help="the first replica's port (default 8700)")
    ap.add_argument(
        "--threads", type=int, help="torch threads per replica (default cores/replicas)"
    )
    ap.add_argument("--data-dir", help="ATTNVIZ_DATA_DIR for every replica (default RUN_DIR/data)")
    ap.add_argument("--class-store", help="ATTNVIZ_CLASS_STORE, e.g. redis://127.0.0.1:6379/0")
    ap.add_argument(
        "--bind",
        help="the proxy's address (default 127.0.0.1: this machine only; 0.0.0.0: every network)",
    )
    ap.add_argument(
        "--public-url",
        help="the URL students use, for a DNS name or a TLS proxy in front (the join link's)",
    )
    args = ap.parse_args(argv)
    try:
        s = _settings(args)
    except ValueError as e:
        ap.error(str(e))
    if args.command == "config":
        for path in write_configs(s):
            print(path)
    elif args.command == "start":
        start(s)
        print(f"serving {s.replicas} replicas at {s.url} (run folder {s.run_dir})")
        for line in where_students_join(s):
            print(line)
        print(f"stop with: python {Path(__file__).relative_to(REPO)} stop --run-dir {s.run_dir}")
    elif args.command == "stop":
        stop(s)
    else:
        if not supervisord_pid(s.run_dir):
            print(f"not running (run folder {s.run_dir})")
            return 1
        for p in _processes(s):
            print(f"{p['group'] + ':' + p['name']:<22} {p['statename']:<9} {p['description']}")
        for name, state in sorted(haproxy_servers(s.run_dir).items()):
            print(f"haproxy sees {name}: {state}")
        if (dropped := haproxy_info(s.run_dir).get("DroppedLogs", "0")) != "0":
            print(f"haproxy dropped {dropped} log lines (log/log-sink.log: is the sink running?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
