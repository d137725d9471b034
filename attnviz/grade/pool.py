"""The grading server: ``python -m attnviz.grade.pool``, started by ``run.grade``.

It reads the jobs (JSON on stdin: each notebook's code cells and exercises, the limits, how many
at a time), imports torch and the checkers once, and forks one confined process per notebook
(``child``), several at a time. It writes one JSON line per notebook to stdout: a result per
exercise, in order. Only this server's own code writes there; a notebook's process talks to it
through a pipe of its own, and only with the nonce it was given.

For each process it:

- gives each exercise ``seconds`` of CPU time and ``wall`` seconds of wall time (the definitions
  get as much), and kills the process's whole session when either is spent: that exercise is
  "time_limit" and a fresh process grades the exercises after it; the kernel caps the process's
  CPU time as well (RLIMIT_CPU);
- marks the exercise a process was on when it died "crashed" (or "time_limit" when the kernel
  stopped it for CPU time) and carries on with a fresh process; a notebook whose definitions kill
  or stall its process gets that entry for every exercise;
- reads at most 64 KiB per message; anything else on the pipe (no nonce, not JSON, out of order)
  stops the process, and the exercise it was on is "crashed".
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import secrets
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field

from attnviz.grade.book import NOT_RUN, STATUSES, Problem

_MAX_MESSAGE = 64 << 10
_FIELD = 300
_TICK = 0.2  # seconds between looks at the processes' CPU time


@dataclass
class _Job:
    id: int
    cells: list[str]
    exercises: list[dict]  # {"function", "checker"}
    next: int = 0  # the first exercise without a result
    results: list[dict] = field(default_factory=list)


@dataclass
class _Running:
    job: _Job
    pid: int
    fd: int
    nonce: str
    workdir: str
    wall: float  # when the current step (definitions, an exercise) started
    cpu: float  # the process's CPU seconds then
    buffer: bytes = b""
    ready: bool = False
    landlock: int = 0
    status: int | None = None  # the wait status, once reaped


def _problem(problem: Problem, detail: str) -> dict:
    return {"status": NOT_RUN, "mistake": problem.value, "title": "", "detail": detail[:_FIELD]}


def _cpu_seconds(pid: int) -> float | None:
    """The process's user + system CPU time, from /proc (None where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def serve(spec: dict, out: object) -> None:
    """Grade every job in spec, writing one line per job to out (a binary stream)."""
    from attnviz.grade import child  # torch and the checkers, imported once before any fork

    child.warm_up(spec.get("preload", []))
    gc.freeze()  # what the server holds is never collected again: cheap collections in the forks

    limits = spec["limits"]
    todo: deque[_Job] = deque(
        _Job(j["id"], j["cells"], j["exercises"]) for j in spec["jobs"] if j["exercises"]
    )
    running: list[_Running] = []
    landlock = -1
    parallel = max(1, int(spec.get("parallel") or os.cpu_count() or 1))
    try:
        while todo or running:
            while todo and len(running) < parallel:
                running.append(_fork(child.main, todo.popleft(), limits, running))
            readable, _, _ = select.select([r.fd for r in running if r.fd >= 0], [], [], _TICK)
            still = []
            for r in running:
                if not _advance(r, r.fd in readable, limits):
                    still.append(r)
                    continue
                _stop(r)
                if r.ready:
                    landlock = r.landlock if landlock < 0 else min(landlock, r.landlock)
                if r.job.next < len(r.job.exercises):
                    todo.appendleft(r.job)  # a fresh process for the exercises left
                else:
                    line = {"id": r.job.id, "results": r.job.results, "landlock": max(landlock, 0)}
                    out.write(json.dumps(line).encode() + b"\n")
                    out.flush()
            running = still
    finally:
        for r in running:
            _stop(r)


def _fork(main: object, job: _Job, limits: dict, running: list[_Running]) -> _Running:
    read, write = os.pipe()
    nonce = secrets.token_hex(16)
    workdir = tempfile.mkdtemp(prefix="attnviz-grade-")
    spec = {
        "workdir": workdir,
        "cells": job.cells,
        "exercises": [{"index": k, **ex} for k, ex in enumerate(job.exercises) if k >= job.next],
        "limits": limits,
        "landlock": limits.get("landlock", True),
    }
    pid = os.fork()
    if pid == 0:  # the notebook's process: it never returns here
        try:
            os.close(read)
            for other in running:  # the other notebooks' pipes are none of its business
                if other.fd >= 0:
                    os.close(other.fd)
            main(spec, write, nonce)
        finally:
            os._exit(0)
    os.close(write)
    os.set_blocking(read, False)
    return _Running(job, pid, read, nonce, workdir, time.monotonic(), _cpu_seconds(pid) or 0.0)


def _advance(r: _Running, readable: bool, limits: dict) -> bool:
    """Read what the process sent; True once it is done, dead, late or misbehaving (stopped)."""
    closed = False
    if readable:
        try:
            chunk = os.read(r.fd, 1 << 16)
        except BlockingIOError:
            chunk = None
        except OSError:
            chunk = b""
        if chunk == b"":
            closed = True
        elif chunk:
            r.buffer += chunk
    try:
        while len(r.buffer) >= 4:
            (size,) = struct.unpack(">I", r.buffer[:4])
            if size > _MAX_MESSAGE:
                raise ValueError("a message too long")
            if len(r.buffer) < 4 + size:
                break
            message = json.loads(r.buffer[4 : 4 + size].decode("utf-8"))
            r.buffer = r.buffer[4 + size :]
            if _handle(r, message):
                return True
            r.wall, r.cpu = time.monotonic(), _cpu_seconds(r.pid) or r.cpu
    except (ValueError, UnicodeDecodeError, RecursionError):
        _stop(r)
        _fail(r, Problem.CRASHED, "its process wrote something other than the grader's messages")
        return True
    if not closed:
        cpu = _cpu_seconds(r.pid)
        over_cpu = cpu is not None and cpu - r.cpu > limits["seconds"]
        over_wall = time.monotonic() - r.wall > limits["wall"]
        if not (over_cpu or over_wall):
            return False
        _stop(r)
        why = f"{limits['seconds']:g} s of CPU" if over_cpu else f"{limits['wall']:g} s"
        _fail(r, Problem.TIME, f"no answer within {why}")
        return True
    _stop(r)
    status = r.status or 0
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        _fail(r, Problem.TIME, "its process used up its CPU time")
    else:
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        _fail(r, Problem.CRASHED, f"its process stopped (exit code {code})")
    return True


def _handle(r: _Running, message: object) -> bool:
    """Take one message; True when the process has finished (done, or asks for a fresh one)."""
    if not isinstance(message, dict) or message.get("nonce") != r.nonce:
        raise ValueError("a message without this process's nonce")
    kind = message.get("type")
    if kind == "ready" and not r.ready:
        r.ready = True
        abi = message.get("landlock")
        r.landlock = abi if type(abi) is int else 0
        return False
    if kind == "result" and r.ready and message.get("index") == r.job.next:
        status = message.get("status")
        if status not in STATUSES:
            raise ValueError("an unknown status")
        r.job.results.append(
            {k: _text(message.get(k)) for k in ("mistake", "title", "detail")} | {"status": status}
        )
        r.job.next += 1
        return False
    if kind in ("done", "restart") and r.ready:
        return True
    raise ValueError("a message out of order")


def _text(value: object) -> str:
    return value[:_FIELD] if isinstance(value, str) else ""


def _fail(r: _Running, problem: Problem, why: str) -> None:
    """The exercise the process was on gets the entry; all of them if it never got ready."""
    job = r.job
    if job.next >= len(job.exercises):
        return
    if not r.ready:
        why += " while defining the functions"
        job.results += [_problem(problem, why) for _ in range(job.next, len(job.exercises))]
        job.next = len(job.exercises)
    else:
        job.results.append(_problem(problem, why))
        job.next += 1


def _stop(r: _Running) -> None:
    """Kill the process's session (everything it started), reap it, remove its directory."""
    if r.status is None:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(r.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            r.status = os.waitpid(r.pid, 0)[1]
    if r.fd >= 0:  # closed once: the number may belong to another pipe afterwards
        with contextlib.suppress(OSError):
            os.close(r.fd)
        r.fd = -1
    shutil.rmtree(r.workdir, ignore_errors=True)


def main() -> None:
    spec = json.loads(sys.stdin.buffer.read())
    serve(spec, sys.stdout.buffer)


if __name__ == "__main__":
    main()
