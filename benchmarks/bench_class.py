"""A class of simulated students over Streamlit's websocket protocol: first load, then what students do.

Each student is one thread with its own `scripts/stclient.Session` (cookie jar, websocket), so through
HAProxy it gets an affinity cookie like a browser. Interactions (the Playground's widget keys):

    next    "Next" in the step-by-step (pg_next; pg_back once at the last step)
    edit    a cell of net_output's first table (the data editor's edit dict, cumulative as in a browser)
    tab     another tab (pg_tab), then back to "Step by step" on the next tab action
    follow  one poll of every auto-rerunning fragment the page announced (follow mode of a live
            class); counted only on pages that have one, skipped (and said so) elsewhere

A third pattern, `--pattern follow`, is a live class: the bench acts as the teacher through the class
store (attnviz.classroom, the same ATTNVIZ_CLASS_STORE / ATTNVIZ_DATA_DIR as the replicas), moving a
slide every `--move-every` s; students open the walkthrough's join link (`?class=CODE`) and poll its
auto-rerunning fragment at the announced interval; "seen_after_move" is the time from a move to the
student's first poll that shows it.

Two patterns for the Playground: `--pattern burst` (everyone loads at once, then `--rounds` rounds in which everyone does
the same interaction at once, cycling `--actions`: the teacher says "click Next"), and `--pattern think`
(students arrive over `--ramp` seconds, then each waits 2-8 s between random interactions for
`--duration` seconds). Reports first-load and interaction p50/p95/max, errors, the replica each student
landed on (and whether every request of a session reached the same one), each replica's RSS before and
after and its CPU seconds, hence server CPU per interaction.

    # against a running server (one process, or the proxy); --replica-ports: whose RSS/CPU to read
    python benchmarks/bench_class.py --target http://127.0.0.1:8700 --students 60
    # start N replicas behind HAProxy on free ports (scripts/serve.py), measure, stop them
    python benchmarks/bench_class.py --serve 2 --students 60 --pattern burst
    python benchmarks/bench_class.py --serve 1 --direct --students 60   # one process, no proxy
    python benchmarks/bench_class.py --serve 2 --students 100 --pattern follow --duration 40

Bounded: at most 1,000 students, 100 rounds, 600 s; loopback targets only.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts import serve  # noqa: E402
from scripts.stclient import ProtocolError, Run, Session  # noqa: E402

MAX_STUDENTS, MAX_ROUNDS, MAX_SECONDS = 1000, 100, 600
HOME_TAB = "Step by step"
_STEP = re.compile(r"Step (\d+) of (\d+)")
_EDITOR = re.compile(r"^pg_x\d+_0$")


@dataclass
class Record:
    kind: str  # "first_load" or an action
    seconds: float
    ok: bool
    error: str = ""
    bytes: int = 0


@dataclass
class Student:
    """One simulated student: a session and what it needs to act like a person at a browser."""

    index: int
    target: str
    rng: random.Random
    timeout: float
    session: Session | None = None
    records: list[Record] = field(default_factory=list)
    # every replica header any request came back with
    replicas: set[str] = field(default_factory=set)
    on_tab: str = HOME_TAB
    edits: dict[str, dict[str, float]] = field(default_factory=dict)
    skipped: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))

    def _note(self, kind: str, t0: float, run: Run | None, error: str = "") -> None:
        seconds = (run.t_finished - run.t_sent) if run is not None and run.t_finished else 0.0
        if run is not None and not error and not run.ok:
            shown = [e.text[:120] for e in run.exceptions]
            error = f"status {run.status or 'none'}" + (f", exception {shown}" if shown else "")
        if not seconds:
            seconds = time.perf_counter() - t0
        self.records.append(Record(kind, seconds, not error, error, run.bytes if run else 0))

    def _seen(self) -> None:
        s = self.session
        for name in (s.replica_http, s.replica):
            if name:
                self.replicas.add(name)

    def first_load(self) -> None:
        t0 = time.perf_counter()
        try:
            self.session = Session(self.target, timeout=self.timeout)
            self._seen()
            self._note("first_load", t0, self.session.rerun())
        except Exception as exc:  # any failure is this student's error, never a stuck class
            # (seen: a websocket refused with a 503 raised the client library's own error)
            self._note("first_load", t0, None, f"{type(exc).__name__}: {exc}")

    def act(self, kind: str) -> None:
        s = self.session
        if s is None or s._ws is None:
            self.records.append(Record(kind, 0.0, False, "no session (first load failed)"))
            return
        t0 = time.perf_counter()
        try:
            run = ACTIONS[kind](self)
            if run is None:
                self.skipped[kind] += 1
                return
            self._note(kind, t0, run)
        except Exception as exc:  # as in first_load
            self._note(kind, t0, None, f"{type(exc).__name__}: {exc}")

    def check_affinity(self) -> None:
        """A browser's other requests (a health ping on reconnecting, uploads, media) carry the
        session's cookie: after the class, one such request must reach the same replica. (Once,
        not after every action: a connected browser sends no HTTP request per click, and a ping
        per action added ~2 ms of server CPU to each.)"""
        if self.session is None or self.session._ws is None:
            return
        try:
            r = self.session.http.get(f"{self.target}/_stcore/health", timeout=self.timeout)
        except OSError as exc:
            self.records.append(Record("affinity", 0.0, False, f"{type(exc).__name__}: {exc}"))
            return
        if r.headers.get(serve.REPLICA_HEADER):
            self.replicas.add(r.headers[serve.REPLICA_HEADER])

    def _page_text(self) -> str:
        return "\n".join(e.text for e in self.session.tree.values() if e.text)

    def _next(self) -> Run:
        s = self.session
        if self.on_tab != HOME_TAB:  # "Next" lives on the first tab: a tab switch first
            t0 = time.perf_counter()
            s.set_widget("pg_tab", HOME_TAB)
            self._note("tab", t0, s.rerun())
            self.on_tab = HOME_TAB
        m = _STEP.search(self._page_text())
        at_end = m is not None and m.group(1) == m.group(2)
        s.click("pg_back" if at_end else "pg_next")
        return s.rerun()

    def _edit(self) -> Run:
        s = self.session
        keys = [k for k in s.known if _EDITOR.match(k)]
        if not keys:
            raise KeyError("no net_output editor (pg_x<version>_0) on the page")
        key = max(keys, key=lambda k: int(k[4:].split("_")[0]))  # the current version
        row, col = self.rng.randrange(2), self.rng.randrange(3)
        cells = self.edits.setdefault(key, {})
        cells[f"{row}:h{col}"] = round(self.rng.uniform(-1, 1), 4)
        edited: dict[str, dict[str, float]] = defaultdict(dict)
        for rc, v in cells.items():
            r, c = rc.split(":")
            edited[r][c] = v
        state = {"edited_rows": edited, "added_rows": [], "deleted_rows": []}
        s.set_widget(key, json.dumps(state))
        return s.rerun()

    def _tab(self) -> Run:
        s = self.session
        labels = [e.text for e in s.tree.values() if e.kind == "tab" and e.text]
        others = [t for t in labels if t != HOME_TAB] or ["Mistakes"]
        self.on_tab = self.rng.choice(others) if self.on_tab == HOME_TAB else HOME_TAB
        s.set_widget("pg_tab", self.on_tab)
        return s.rerun()

    def _follow(self) -> Run | None:
        s = self.session
        run = None
        for fid in sorted(s.auto_reruns):  # what the browser's fragment timers would send now
            run = s.rerun(fragment_id=fid, is_auto_rerun=True)
        return run

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


# The interactions: the allow-list of --actions and what each does, in one registry.
ACTIONS = {
    "next": Student._next,
    "edit": Student._edit,
    "tab": Student._tab,
    "follow": Student._follow,
}


# -- the server's processes ---------------------------------------------------------------------------
def listening_pids(ports: list[int]) -> dict[int, int]:
    """port -> pid of the process listening on it (loopback)."""
    found = {}
    for c in psutil.net_connections(kind="tcp"):
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in ports and c.pid:
            found[c.laddr.port] = c.pid
    return found


def usage(pids: dict[int, int]) -> dict[int, tuple[float, float]]:
    """port -> (RSS MiB of the process and its children, CPU seconds user+system so far)."""
    out = {}
    for port, pid in pids.items():
        try:
            procs = [psutil.Process(pid)]
            procs += procs[0].children(recursive=True)
            rss = sum(p.memory_info().rss for p in procs) / 2**20
            cpu = sum(sum(p.cpu_times()[:2]) for p in procs)
            out[port] = (rss, cpu)
        except psutil.Error:
            out[port] = (float("nan"), float("nan"))
    return out


def _cpu(before: dict, after: dict) -> float:
    return sum(after[p][1] - before[p][1] for p in before if p in after)


# -- patterns -----------------------------------------------------------------------------------------
def _start_all(students: list[Student], work) -> list[threading.Thread]:
    threads = [threading.Thread(target=work, args=(st,), daemon=True) for st in students]
    for t in threads:
        t.start()
    return threads


def burst(students: list[Student], actions: list[str], rounds: int, pids: dict) -> dict:
    """Everyone loads at once, then everyone does the same thing at once, `rounds` times."""
    gate = threading.Barrier(len(students) + 1)
    phases: list[tuple[str, float, int]] = []  # (kind, server CPU s, interactions)

    def work(st: Student) -> None:
        gate.wait()
        st.first_load()
        gate.wait()
        for r in range(rounds):
            gate.wait()
            st.act(actions[r % len(actions)])
            gate.wait()

    def done() -> int:  # every student waits at the gate: a consistent count
        return sum(len(st.records) for st in students)

    threads = _start_all(students, work)
    u0 = usage(pids)
    gate.wait()
    gate.wait()
    phases.append(("first_load", _cpu(u0, usage(pids)), done()))
    for r in range(rounds):
        u0, n0 = usage(pids), done()
        gate.wait()
        gate.wait()
        phases.append((actions[r % len(actions)], _cpu(u0, usage(pids)), done() - n0))
    for t in threads:
        t.join()
    return {"phases": phases}


def think(students: list[Student], actions: list[str], duration: float, ramp: float, pids) -> dict:
    """Students arrive over `ramp` s, then wait 2-8 s between random actions until `duration` ends."""
    t_end = time.monotonic() + ramp + duration

    def work(st: Student) -> None:
        time.sleep(st.rng.uniform(0, ramp))
        st.first_load()
        while True:
            pause = st.rng.uniform(2.0, 8.0)
            if time.monotonic() + pause > t_end:
                return
            time.sleep(pause)
            st.act(st.rng.choice(actions))

    u0 = usage(pids)
    threads = _start_all(students, work)
    for t in threads:
        t.join()
    n = sum(len(st.records) for st in students)
    return {"phases": [("all", _cpu(u0, usage(pids)), n)]}


_SLIDE = re.compile(r"Slide (\d+) of (\d+)")


def follow(
    students: list[Student], duration: float, move_every: float, room, n_slides: int, pids
) -> dict:
    """A live class: the bench is the teacher (through the class store, as the teacher's page would
    be), moving one slide every `move_every` s; students open the walkthrough's join link and poll
    its auto-rerunning fragment at the interval the page announced. Records each poll ("follow")
    and, per move, how long until each student's poll showed the new slide ("seen_after_move")."""
    started = room.start()
    room.move(started.code, started.token, 1, n_slides)
    moves: list[tuple[float, int]] = [(time.perf_counter(), 1)]
    t_end = time.monotonic() + duration
    lock = threading.Lock()

    def work(st: Student) -> None:
        t0 = time.perf_counter()
        try:
            st.session = Session(
                st.target,
                path="walkthrough",
                query_string=f"class={started.code}",
                timeout=st.timeout,
            )
            st._seen()
            st._note("first_load", t0, st.session.rerun())
        except (ProtocolError, OSError) as exc:
            st._note("first_load", t0, None, f"{type(exc).__name__}: {exc}")
            return
        s, shown = st.session, 0
        while time.monotonic() < t_end:
            if not s.auto_reruns:
                st.records.append(Record("follow", 0.0, False, "no auto-rerunning fragment"))
                return
            fid, interval = min(s.auto_reruns.items())
            time.sleep(interval)
            t0 = time.perf_counter()
            try:
                run = s.rerun(fragment_id=fid, is_auto_rerun=True)
            except ProtocolError as exc:
                st._note("follow", t0, None, f"{type(exc).__name__}: {exc}")
                return
            st._note("follow", t0, run)
            m = _SLIDE.search("\n".join(e.text for e in s.tree.values() if e.text))
            if m and int(m.group(1)) != shown:
                shown = int(m.group(1))
                with lock:
                    moved_at = next((t for t, k in reversed(moves) if k == shown), None)
                if moved_at is not None and shown != 1:
                    st.records.append(Record("seen_after_move", run.t_finished - moved_at, True))

    u0 = usage(pids)
    threads = _start_all(students, work)
    slide = 1
    while time.monotonic() + move_every < t_end:
        time.sleep(move_every)
        slide = slide % n_slides + 1
        room.move(started.code, started.token, slide, n_slides)
        with lock:
            moves.append((time.perf_counter(), slide))
    for t in threads:
        t.join()
    room.end(started.code, started.token)
    polls = sum(1 for st in students for r in st.records if r.kind == "follow")
    return {"phases": [("follow (with loads)", _cpu(u0, usage(pids)), polls + len(students))]}


# -- report -------------------------------------------------------------------------------------------
def summarise(
    students: list[Student], extra: dict, before: dict, after: dict, proxied: bool
) -> dict:
    by_kind: dict[str, list[Record]] = defaultdict(list)
    for st in students:
        for rec in st.records:
            by_kind[rec.kind].append(rec)
            if rec.kind not in ("first_load", "seen_after_move", "affinity"):
                by_kind["interaction"].append(rec)
    stats = {}
    for kind, recs in by_kind.items():
        good = np.array([r.seconds for r in recs if r.ok])
        stats[kind] = {
            "n": len(recs),
            "errors": sum(not r.ok for r in recs),
            "p50_s": float(np.percentile(good, 50)) if good.size else None,
            "p95_s": float(np.percentile(good, 95)) if good.size else None,
            "max_s": float(good.max()) if good.size else None,
            "kb_mean": float(np.mean([r.bytes for r in recs])) / 1024 if recs else 0.0,
        }
    errors = [
        f"student {st.index} {r.kind}: {r.error}" for st in students for r in st.records if not r.ok
    ]
    spread: dict[str, int] = defaultdict(int)
    split = 0
    for st in students:
        spread[",".join(sorted(st.replicas)) or "-"] += 1
        split += len(st.replicas) > 1
    skipped: dict[str, int] = defaultdict(int)
    for st in students:
        for k, v in st.skipped.items():
            skipped[k] += v
    cpu = [
        {"kind": k, "server_cpu_s": c, "n": n, "cpu_ms_each": 1000 * c / n if n else None}
        for k, c, n in extra["phases"]
    ]
    return {
        "stats": stats,
        "errors": len(errors),
        "error_samples": errors[:10],
        "students_per_replica": dict(spread),
        "sessions_split_across_replicas": split if proxied else None,
        "skipped": dict(skipped),
        "server_cpu": cpu,
        "replicas": {
            str(p): {"rss_mib_before": before[p][0], "rss_mib_after": after[p][0]} for p in before
        },
    }


def _fmt(x: float | None) -> str:
    return "   -  " if x is None else f"{x:6.3f}"


def print_report(cfg: dict, rep: dict) -> None:
    print(f"# {cfg}")
    print(f"{'kind':12} {'n':>5} {'err':>4} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'KB':>6}")
    for kind in ["first_load", *ACTIONS, "seen_after_move", "interaction"]:
        if kind in rep["stats"]:
            s = rep["stats"][kind]
            print(
                f"{kind:12} {s['n']:5d} {s['errors']:4d} {_fmt(s['p50_s'])}  {_fmt(s['p95_s'])}"
                f"  {_fmt(s['max_s'])} {s['kb_mean']:6.1f}"
            )
    for c in rep["server_cpu"]:
        each = "-" if c["cpu_ms_each"] is None else f"{c['cpu_ms_each']:.1f} ms"
        print(f"server CPU {c['kind']:10} {c['server_cpu_s']:7.2f} s for {c['n']:4d}: {each} each")
    for port, r in rep["replicas"].items():
        print(f"replica :{port} RSS {r['rss_mib_before']:.0f} -> {r['rss_mib_after']:.0f} MiB")
    print(f"students per replica {rep['students_per_replica']}")
    if rep["sessions_split_across_replicas"] is not None:
        print(
            f"sessions whose requests reached >1 replica: {rep['sessions_split_across_replicas']}"
        )
    if rep["skipped"]:
        print(f"skipped (the page has none): {rep['skipped']}")
    print(f"the simulated students' own CPU: {rep['client_cpu_s']:.1f} s (same machine)")
    print(f"errors {rep['errors']}")
    for e in rep["error_samples"]:
        print(f"  {e}")


def run_class(
    target: str,
    *,
    students: int,
    pattern: str,
    actions: list[str],
    rounds: int = 5,
    duration: float = 60.0,
    ramp: float = 10.0,
    replica_ports: list[int] | None = None,
    proxied: bool = False,
    seed: int = 0,
    timeout: float = 120.0,
    warmup_replicas: int = 1000,
    move_every: float = 5.0,
    class_store: str = "",
    data_dir: str = "",
) -> dict:
    """Run one class against `target` and return the report (see `summarise`)."""
    host = urlsplit(target).hostname
    if not serve.is_loopback(host or ""):
        raise SystemExit(f"loopback targets only, not {host}")
    if not 1 <= students <= MAX_STUDENTS or not 0 <= rounds <= MAX_ROUNDS:
        raise SystemExit(f"1..{MAX_STUDENTS} students and 0..{MAX_ROUNDS} rounds")
    if duration + ramp > MAX_SECONDS or any(a not in ACTIONS for a in actions):
        raise SystemExit(f"duration + ramp <= {MAX_SECONDS} s; actions among {ACTIONS}")
    pids = listening_pids(replica_ports or [urlsplit(target).port])
    for port in (replica_ports or [urlsplit(target).port])[:warmup_replicas]:  # warm before class
        with Session(f"http://127.0.0.1:{port}", timeout=timeout) as s:
            s.rerun()
    crowd = [
        Student(i, target, random.Random(seed * 100_003 + i), timeout) for i in range(students)
    ]
    before = usage(pids)
    client0 = time.process_time()
    try:
        if pattern == "burst":
            extra = burst(crowd, actions, rounds, pids)
        elif pattern == "follow":
            extra = follow(crowd, duration, move_every, _classroom(class_store, data_dir), 12, pids)
        else:
            extra = think(crowd, actions, duration, ramp, pids)
        after = usage(pids)  # before the affinity pings: they are not what students do
        for st in crowd:
            st.check_affinity()
    finally:
        for st in crowd:
            st.close()
    rep = summarise(crowd, extra, before, after, proxied)
    rep["client_cpu_s"] = time.process_time() - client0
    return rep


def _classroom(class_store: str, data_dir: str):
    """The live class's store, as the replicas open it (same ATTNVIZ_CLASS_STORE / ATTNVIZ_DATA_DIR)."""
    try:
        from attnviz.classroom import Classroom, open_store
    except ImportError:
        raise SystemExit("--pattern follow needs the live class (attnviz.classroom)") from None
    return Classroom(open_store(class_store, data_dir or None))


def _free_ports(n: int) -> list[int]:
    import socket

    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", help="server or proxy root URL (loopback)")
    ap.add_argument("--serve", type=int, help="start this many replicas behind HAProxy, then stop")
    ap.add_argument("--direct", action="store_true", help="with --serve 1: bypass the proxy")
    ap.add_argument("--replica-ports", help="comma-separated ports whose RSS/CPU to report")
    ap.add_argument("--students", type=int, default=20)
    ap.add_argument("--pattern", choices=["burst", "think", "follow"], default="burst")
    ap.add_argument("--actions", default="next,next,tab,tab,edit,next")
    ap.add_argument("--rounds", type=int, default=6, help="burst: rounds of everyone at once")
    ap.add_argument("--duration", type=float, default=60.0, help="think: seconds of class")
    ap.add_argument("--ramp", type=float, default=10.0, help="think: s over which they arrive")
    ap.add_argument("--move-every", type=float, default=5.0, help="follow: s between slide moves")
    ap.add_argument("--class-store", default="", help="the replicas' store (redis://...)")
    ap.add_argument("--data-dir", default="", help="follow with --target: their ATTNVIZ_DATA_DIR")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the report here")
    args = ap.parse_args()
    actions = [a.strip() for a in args.actions.split(",") if a.strip()]
    settings = None
    if args.serve:
        run_dir = Path(tempfile.mkdtemp(prefix="attnviz-bench-class-"))
        ports = _free_ports(args.serve + 1)
        settings = serve.Settings(
            replicas=args.serve,
            proxy_port=ports[0],
            replica_ports=ports[1:],
            run_dir=run_dir,
            class_store=args.class_store,
        )
        serve.start(settings)
        target = f"http://127.0.0.1:{settings.ports[0]}" if args.direct else settings.url
        replica_ports = settings.ports
    else:
        if not args.target:
            raise SystemExit("--target URL or --serve N")
        target = args.target.rstrip("/")
        replica_ports = (
            [int(p) for p in args.replica_ports.split(",")] if args.replica_ports else None
        )
    proxied = bool(args.serve and not args.direct) or bool(replica_ports and len(replica_ports) > 1)
    cfg = {
        "target": target,
        "replicas": len(replica_ports or [0]),
        "proxy": proxied,
        "students": args.students,
        "pattern": args.pattern,
        "actions": actions,
        "rounds": args.rounds if args.pattern == "burst" else None,
        "duration_s": args.duration if args.pattern in ("think", "follow") else None,
    }
    try:
        rep = run_class(
            target,
            students=args.students,
            pattern=args.pattern,
            actions=actions,
            rounds=args.rounds,
            duration=args.duration,
            ramp=args.ramp,
            replica_ports=replica_ports,
            proxied=proxied,
            seed=args.seed,
            move_every=args.move_every,
            class_store=args.class_store or (settings.class_store if settings else ""),
            data_dir=args.data_dir or (str(settings.run_dir / "data") if settings else ""),
        )
    finally:
        if settings is not None:
            serve.stop(settings)
    print_report(cfg, rep)
    if args.json:
        Path(args.json).write_text(json.dumps({"config": cfg, "report": rep}, indent=1) + "\n")


if __name__ == "__main__":
    main()
