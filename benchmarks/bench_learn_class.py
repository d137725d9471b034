"""A class pressing Train at once on "Learn the scores": how many training runs, how long each waits.

    python benchmarks/bench_learn_class.py --serve 1 --students 60              # one configuration
    python benchmarks/bench_learn_class.py --serve 1 --students 60 --configs 5  # seeds 0-4
    python benchmarks/bench_learn_class.py --target http://127.0.0.1:8501 --students 60

A pattern of ``bench_class.py`` (its protocol client, server start and process accounting): each
student is a thread with its own ``scripts/stclient.Session`` on ``/learn``. All load the page,
then press **Train** at the same moment (with ``--warm``, after one press of a configuration
nobody in class uses has started the training worker) (a barrier), student i with seed i % configs. Reports the
wait from the press to the end of that student's run (p50/p95/max; it includes the page's replay
of the epochs, ``learn.FRAME_S`` per epoch), errors, how many training runs the server started
(the page's own counter: a configuration is trained once per server process, the others wait for
it), and the RSS and CPU seconds of the server and its children (the training worker among them).

Bounded: at most 200 students; loopback targets only.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_class import _free_ports, listening_pids, usage  # noqa: E402
from scripts import serve  # noqa: E402
from scripts.stclient import Session  # noqa: E402

MAX_STUDENTS = 200
RUNS = re.compile(r"Training runs on this server since it started: (\d+)")


def _student(target: str, i: int, configs: int, gate: threading.Barrier, out: list, timeout: float):
    try:
        s = Session(target, path="learn", timeout=timeout)
    except Exception as exc:
        gate.wait()
        out[i] = (None, f"connect: {type(exc).__name__}: {exc}", "")
        return
    with s:
        first = s.rerun()
        if not first.ok or "Press Train" not in first.text().replace("**", ""):
            gate.wait()
            out[i] = (None, f"first load: {first.status}", "")
            return
        if i % configs:
            s.set_widget("lt_seed", str(i % configs))
        s.click("lt_train")
        gate.wait()
        t0 = time.perf_counter()
        try:
            run = s.rerun()
        except Exception as exc:
            out[i] = (None, f"train: {type(exc).__name__}: {exc}", "")
            return
        wait = time.perf_counter() - t0
        text = run.text()
        ok = run.ok and "Held-out accuracy" in text
        out[i] = (wait, "" if ok else f"train: status {run.status}", text)


def run_class(
    target: str, students: int, configs: int, port: int, timeout: float, warm: bool = False
) -> dict:
    host = urlsplit(target).hostname or ""
    if not serve.is_loopback(host):
        raise SystemExit(f"loopback targets only, not {host}")
    if not 1 <= students <= MAX_STUDENTS or not 1 <= configs <= min(students, 10):
        raise SystemExit(f"1..{MAX_STUDENTS} students, 1..10 configurations")
    pids = listening_pids([port])
    with Session(target, path="learn", timeout=timeout) as s:  # the page's imports, before class
        s.rerun()
        if warm:  # the worker started (torch imported) by a configuration nobody in class uses
            s.set_widget("lt_seed", "9")
            s.click("lt_train")
            s.rerun()
    before = usage(pids)
    gate = threading.Barrier(students)
    out: list = [None] * students
    threads = [
        threading.Thread(target=_student, args=(target, i, configs, gate, out, timeout))
        for i in range(students)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = usage(pids)
    waits = np.array([o[0] for o in out if o and o[0] is not None])
    errors = [o[1] for o in out if o and o[1]]
    counts = [int(m.group(1)) for o in out if o and (m := RUNS.search(o[2]))]
    return {
        "students": students,
        "configs": configs,
        "ok": len(waits),
        "errors": errors[:5],
        "n_errors": len(errors),
        "wait_p50_s": float(np.percentile(waits, 50)) if len(waits) else None,
        "wait_p95_s": float(np.percentile(waits, 95)) if len(waits) else None,
        "wait_max_s": float(waits.max()) if len(waits) else None,
        "training_runs": (max(counts) - warm) if counts else None,
        "rss_mib": {p: (round(before[p][0]), round(after[p][0])) for p in before},
        "cpu_s": {p: round(after[p][1] - before[p][1], 1) for p in before},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", help="a running server's root URL (loopback)")
    ap.add_argument("--port", type=int, help="with --target: its port, whose RSS/CPU to read")
    ap.add_argument("--serve", type=int, help="start this many replicas (scripts/serve.py)")
    ap.add_argument("--students", type=int, default=60)
    ap.add_argument("--configs", type=int, default=1, help="seeds 0..configs-1 across students")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--warm", action="store_true", help="start the training worker before class")
    args = ap.parse_args()
    settings = None
    if args.serve:
        ports = _free_ports(args.serve + 1)
        settings = serve.Settings(
            replicas=args.serve,
            proxy_port=ports[0],
            replica_ports=ports[1:],
            run_dir=Path(tempfile.mkdtemp(prefix="attnviz-bench-learn-")),
        )
        serve.start(settings)
        target, port = settings.url, settings.ports[0]  # through HAProxy, as a class connects
    elif args.target:
        target, port = args.target.rstrip("/"), args.port or urlsplit(args.target).port
    else:
        raise SystemExit("--target URL or --serve N")
    try:
        rep = run_class(target, args.students, args.configs, port, args.timeout, args.warm)
    finally:
        if settings is not None:
            serve.stop(settings)
    for k, v in rep.items():
        print(f"{k:>14}: {v}")


if __name__ == "__main__":
    main()
