"""Soak of the class server: the attacks of issue 28 against 2 replicas behind HAProxy while 60
simulated students join and follow a live class; what each attack costs and what the students see.

    python scripts/soak_class.py                       # a quiet class, then each attack (~10 min)
    python scripts/soak_class.py --attacks idle_websockets,big_name --phase-s 30
    python scripts/soak_class.py --json soak.json

Starts its own class server (scripts/serve.py: 2 replicas, HAProxy on 127.0.0.1, the SQLite store
in a temporary run folder) and stops it at the end. Each phase is one live class of
benchmarks/bench_class.py's `follow` pattern: the soak is the teacher through the class store,
moving a slide every 5 s; the students (from 127.0.0.1: one school behind one NAT address) open the
join link and poll the page's fragment for `--phase-s` seconds. In an attack's phase the attack
starts as soon as the class exists (it knows the code, as a visitor in the room would) and gets its
head start (scripts/soak_attacks.py) before the students join; it runs on while they follow.

Per phase: the students' refusals (a failed page load or poll, or a student not following the
class), first-load and poll p50/p95, the replicas' CPU seconds (with their children: the benchmark
worker) during the head start (the attack alone) and the class, each replica's peak and final RSS
(sampled every 0.25 s), and what the attack got. An idle tab opened at the start is used again at the
end, after more than HAProxy's idle timeout: it must still work. Targets: 0 refusals, poll p95 within
2x the quiet class's, every replica under 600 MB. Reports, asserts nothing.

Bounded: loopback only (the server it starts), at most MAX_PHASE_S a phase, each attack's counts
fixed in its class; stops by itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_class import Student, follow, listening_pids, summarise  # noqa: E402
from scripts import serve  # noqa: E402
from scripts.soak_attacks import ATTACKS, Target  # noqa: E402
from scripts.stclient import Session  # noqa: E402

MAX_PHASE_S = 120.0
MAX_STUDENTS = 300
TARGET_RATIO, TARGET_MIB = 2.0, 600.0
N_SLIDES = 12


class Sampler:
    """Each replica's RSS (its process and children: the benchmark worker) every 0.25 s, and
    CPU seconds on demand. ports: the replicas' ports."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.pids = listening_pids(ports)
        self.peak: dict[int, tuple[float, float]] = {}  # port -> (own, with children)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _procs(self, port: int) -> list[psutil.Process]:
        try:
            # supervisord restarts a replica that dies: find it again
            pid = self.pids.get(port) or listening_pids([port]).get(port)
            if pid is None:
                return []
            p = psutil.Process(pid)
            return [p, *p.children(recursive=True)]
        except psutil.Error:
            self.pids = listening_pids(self.ports)
            return []

    def rss(self) -> dict[int, tuple[float, float]]:
        """port -> (RSS MiB of the replica's own process, of it with its children)."""
        out = {}
        for port in self.ports:
            sizes = []
            for p in self._procs(port):
                with contextlib.suppress(psutil.Error):
                    sizes.append(p.memory_info().rss / 2**20)
            out[port] = (sizes[0] if sizes else 0.0, sum(sizes))
        return out

    def cpu(self) -> float:
        total = 0.0
        for port in self.ports:
            for p in self._procs(port):
                with contextlib.suppress(psutil.Error):
                    total += sum(p.cpu_times()[:2])
        return total

    def reset_peak(self) -> None:
        self.peak = self.rss()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            for port, (own, total) in self.rss().items():
                was = self.peak.get(port, (0.0, 0.0))
                self.peak[port] = (max(was[0], own), max(was[1], total))

    def __enter__(self) -> Sampler:
        self.reset_peak()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class _Room:
    """The class store as `follow` uses it (start, move, end): hands the new class's code to the
    attack, waits for its head start, and counts the class's members before it ends."""

    def __init__(self, room, attack, target: Target, sampler: Sampler) -> None:
        self.room, self.attack, self.target, self.sampler = room, attack, target, sampler
        self.head_cpu_s = self.head_s = 0.0
        self.members = -1

    def start(self):
        started = self.room.start()
        if self.attack is not None:
            self.target.code = started.code
            cpu0, t0 = self.sampler.cpu(), time.monotonic()
            self.attack.begin()
            while time.monotonic() - t0 < self.attack.head_start_s and not self.attack.ready():
                time.sleep(0.2)
            self.head_cpu_s, self.head_s = self.sampler.cpu() - cpu0, time.monotonic() - t0
        return started

    def move(self, *args):
        return self.room.move(*args)

    def end(self, code: str, token: str) -> None:
        self.members = self.room.members(code)
        self.room.end(code, token)


def _refusals(students: list[Student]) -> tuple[int, list[str]]:
    """Students who did not load, did not follow the class, or lost a poll."""
    bad, samples = 0, []
    for st in students:
        errors = [r for r in st.records if not r.ok]
        polls = [r for r in st.records if r.kind == "follow" and r.ok]
        if errors or not polls:
            bad += 1
            why = errors[0].error if errors else "never polled the class"
            samples.append(f"student {st.index}: {why[:160]}")
    return bad, samples[:5]


def run_phase(
    name: str, s: serve.Settings, sampler: Sampler, room, students: int, phase_s: float
) -> dict:
    """One live class of `students` for phase_s seconds, under attack `name` ('quiet': none)."""
    target = Target(s.url)
    attack = None if name == "quiet" else ATTACKS[name].make(target)
    wrapped = _Room(room, attack, target, sampler)
    crowd = [Student(i, s.url, random.Random(i), 120.0) for i in range(students)]
    sampler.reset_peak()
    cpu0, t0 = sampler.cpu(), time.monotonic()
    try:
        extra = follow(crowd, phase_s, 5.0, wrapped, N_SLIDES, {})
        wall, cpu = time.monotonic() - t0, sampler.cpu() - cpu0  # the class, its head start too
    finally:
        got = attack.end() if attack is not None else {}
        for st in crowd:
            st.close()
    rep = summarise(crowd, extra, {}, {}, proxied=True)
    refused, samples = _refusals(crowd)
    time.sleep(3)  # what stays after the attack
    return {
        "phase": name,
        "what": ATTACKS[name].what if attack else "no attack",
        "students": students,
        "refusals": refused,
        "refusal_samples": samples,
        "first_load": rep["stats"].get("first_load"),
        "poll": rep["stats"].get("follow"),
        "seen_after_move": rep["stats"].get("seen_after_move"),
        "members_at_end": wrapped.members,
        "wall_s": wall,
        "head_start_s": wrapped.head_s,
        "server_cpu_s": cpu,
        "server_cpu_head_start_s": wrapped.head_cpu_s,
        "rss_peak_mib": {str(p): v[0] for p, v in sampler.peak.items()},
        "rss_peak_with_worker_mib": {str(p): v[1] for p, v in sampler.peak.items()},
        "rss_after_mib": {str(p): v[0] for p, v in sampler.rss().items()},
        "attack": got,
    }


def _p(stats: dict | None, key: str) -> float | None:
    return None if not stats else stats.get(key)


def _fmt(x: float | None, spec: str = "6.3f") -> str:
    return "     -" if x is None else format(x, spec)


def print_report(phases: list[dict], idle: dict) -> None:
    quiet = next((p for p in phases if p["phase"] == "quiet"), None)
    q95 = _p(quiet["poll"], "p95_s") if quiet else None
    q_rate = quiet["server_cpu_s"] / quiet["wall_s"] if quiet else 0.0
    print(
        f"{'phase':16} {'refused':>7} {'load p95':>8} {'poll p50':>8} {'poll p95':>8} {'x quiet':>7}"
        f" {'members':>7} {'cpu s':>6} {'+cpu s':>6} {'head cpu':>8} {'peak MiB':>10}"
        f" {'after':>9} {'+worker':>9}"
    )
    for p in phases:
        p95 = _p(p["poll"], "p95_s")
        ratio = p95 / q95 if p95 and q95 else None
        extra = p["server_cpu_s"] - q_rate * p["wall_s"]
        peak = "/".join(f"{v:.0f}" for v in p["rss_peak_mib"].values())
        after = "/".join(f"{v:.0f}" for v in p["rss_after_mib"].values())
        worker = "/".join(f"{v:.0f}" for v in p["rss_peak_with_worker_mib"].values())
        print(
            f"{p['phase']:16} {p['refusals']:4d}/{p['students']:<3d}"
            f" {_fmt(_p(p['first_load'], 'p95_s'), '8.3f')} {_fmt(_p(p['poll'], 'p50_s'), '8.3f')}"
            f" {_fmt(p95, '8.3f')} {_fmt(ratio, '7.2f')} {p['members_at_end']:7d}"
            f" {p['server_cpu_s']:6.1f} {extra:6.1f} {p['server_cpu_head_start_s']:8.1f}"
            f" {peak:>10} {after:>9} {worker:>9}"
        )
    for p in phases:
        if p["attack"]:
            print(f"{p['phase']}: {p['what']}: {json.dumps(p['attack'])}")
        for sample in p["refusal_samples"]:
            print(f"  {p['phase']} refused {sample}")
    print(
        f"an idle tab after {idle['idle_s']:.0f} s (the proxy's idle timeout is "
        f"{idle['timeout_s']} s): {'works' if idle['ok'] else 'FAILED: ' + idle['error']}"
    )
    worst = max((max(p["rss_peak_mib"].values()) for p in phases), default=0.0)
    bad = sum(p["refusals"] for p in phases)
    ratios = [
        _p(p["poll"], "p95_s") / q95 for p in phases if q95 and _p(p["poll"], "p95_s") is not None
    ]
    with_worker = max((max(p["rss_peak_with_worker_mib"].values()) for p in phases), default=0)
    print(
        f"targets: refusals {bad} (0), worst poll p95 {max(ratios, default=0):.2f}x quiet "
        f"({TARGET_RATIO:.0f}x), worst replica peak {worst:.0f} MiB ({TARGET_MIB:.0f}; "
        f"{with_worker:.0f} MiB with its benchmark worker)"
    )
    print("peak/after MiB: each replica's own process; +worker: with its children")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attacks", default=",".join(ATTACKS), help="comma-separated, in order")
    ap.add_argument("--students", type=int, default=60)
    ap.add_argument("--phase-s", type=float, default=40.0, help="seconds each class follows")
    ap.add_argument("--class-store", default="", help="redis://... (default: SQLite)")
    ap.add_argument("--json", help="also write the report here")
    args = ap.parse_args(argv)
    names = [a.strip() for a in args.attacks.split(",") if a.strip()]
    unknown = [n for n in names if n not in ATTACKS]
    if unknown:
        ap.error(f"unknown attacks {unknown}: choose among {', '.join(ATTACKS)}")
    if not 1 <= args.students <= MAX_STUDENTS or not 5 <= args.phase_s <= MAX_PHASE_S:
        ap.error(f"1..{MAX_STUDENTS} students, 5..{MAX_PHASE_S:.0f} s a phase")
    from attnviz.classroom import Classroom, open_store

    run_dir = Path(tempfile.mkdtemp(prefix="attnviz-soak-"))
    ports = _free_ports(3)
    s = serve.Settings(
        replicas=2,
        proxy_port=ports[0],
        replica_ports=ports[1:],
        run_dir=run_dir,
        class_store=args.class_store,
    )
    serve.start(s)
    phases: list[dict] = []
    idle = {"idle_s": 0.0, "timeout_s": s.connection_limits.tunnel_s, "ok": False, "error": ""}
    try:
        room = Classroom(open_store(s.class_store, str(run_dir / "data")))
        tab = Session(s.url, timeout=120)  # a student's open tab, idle through every phase
        tab.rerun()
        opened = time.monotonic()
        with Sampler(s.ports) as sampler:
            # a first class that is not reported: each replica's first walkthrough pays imports
            run_phase("quiet", s, sampler, room, min(args.students, 10), 10.0)
            for name in ["quiet", *names]:
                print(f"-- {name} ({time.strftime('%H:%M:%S')})", flush=True)
                phases.append(run_phase(name, s, sampler, room, args.students, args.phase_s))
        while time.monotonic() - opened < idle["timeout_s"] + 30:
            time.sleep(1)
        idle["idle_s"] = time.monotonic() - opened
        try:
            idle["ok"] = tab.rerun().ok
        except Exception as exc:  # the report says how it failed
            idle["error"] = f"{type(exc).__name__}: {exc}"
        tab.close()
    finally:
        serve.stop(s)
    print_report(phases, idle)
    if args.json:
        Path(args.json).write_text(json.dumps({"phases": phases, "idle_tab": idle}, indent=1))
    return 0


def _free_ports(n: int) -> list[int]:
    import socket

    socks = [socket.socket() for _ in range(n)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


if __name__ == "__main__":
    raise SystemExit(main())
