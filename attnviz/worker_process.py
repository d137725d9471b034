"""A worker process: a fresh ``python -m MODULE`` that runs a visitor's jobs one at a time, bounded
so that a job cannot take the web server with it. Used by ``attnviz.bench.worker`` (benchmarks)
and ``attnviz.pooling.worker`` (training); each says what a job is and what it may use.

In the server (``WorkerProcess``): start the child (requests go down its stdin, replies come up
its stdout, as ``multiprocessing`` connections), send a job and wait for its reply until a wall
deadline, kill the child past it, and say how it ended when no reply came (``Lost``). The next
job starts a fresh child.

In the child: ``channels`` (stdout kept for replies; anything printed goes to stderr, the server's
log), ``lower_priority`` (``os.nice``, first in line for the OOM killer), ``limit_address_space``
(``RLIMIT_AS``, not on a GPU machine), ``limit_cpu`` (``RLIMIT_CPU`` for one job: the kernel ends
the child with SIGXCPU past it), ``serve`` (the job loop) and ``log`` (one line, cut short).

A request is ``(job id, payload)`` (``None`` asks the child to exit); a reply is ``(job id,
Status, payload)``: the result, or a plain message for the visitor.
"""

from __future__ import annotations

import contextlib
import enum
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

NICE = 10  # the child's priority increment: visitors' page runs come first
LOG_CHARS = 300
POLL_S = 0.05  # how often the server looks for a reply, or the child's end


class Status(enum.StrEnum):
    """How the child answered a job."""

    OK = "ok"  # the payload is the result
    REFUSED = "refused"  # the job broke a rule: the payload says which, plainly
    ERROR = "error"  # the job failed inside the child: the payload is a plain message


class Lost(enum.Enum):
    """How a job ended without a reply."""

    NOT_RUNNING = "the worker was not running"  # the request could not be sent
    TIMED_OUT = "the job ran past its wall time and the worker was killed"
    OUT_OF_CPU = "the worker used up its CPU time"  # RLIMIT_CPU: SIGXCPU
    DIED = "the worker died"  # killed (e.g. for memory), or crashed


class WorkerLost(Exception):
    """A job got no reply: how (``Lost``) and the child's exit code (None if unknown)."""

    def __init__(self, how: Lost, code: int | None) -> None:
        super().__init__(f"{how.value} (exit code {code})")
        self.how, self.code = how, code


# ---- in the server ---------------------------------------------------------------------------------


class WorkerProcess:
    """One child ``python -m module *args`` and its two pipes. Not thread-safe: the caller runs
    one job at a time (its own lock)."""

    def __init__(self, module: str, *args: str) -> None:
        self.argv = [sys.executable, "-m", module, *args]
        self.proc: subprocess.Popen | None = None
        self.requests: Connection | None = None  # to the child's stdin
        self.replies: Connection | None = None  # from the child's stdout
        self._next_id = 0

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs (None before the first job or after it ended)."""
        return self.proc.pid if self.alive() else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the child unless it runs; returns at once (it loads its libraries meanwhile)."""
        if self.alive():
            return
        self.stop()
        env = dict(os.environ)
        if env.get("ATTNVIZ_NATIVE_OP", "1").strip() != "0":
            # the child loads the C kernel's PyTorch operator once the server has built it, and
            # never compiles it: ~10 s of compiling would count against a visitor's job
            env["ATTNVIZ_NATIVE_OP"] = "cached"
        proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, env=env
        )
        self.proc = proc
        self.requests = Connection(os.dup(proc.stdin.fileno()), readable=False)
        self.replies = Connection(os.dup(proc.stdout.fileno()), writable=False)
        proc.stdin.close()
        proc.stdout.close()

    def stop(self) -> int | None:
        """Kill the child (if it runs) and close the pipes; its exit code (None if unknown)."""
        proc, conns = self.proc, (self.requests, self.replies)
        self.proc = self.requests = self.replies = None
        code = None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        for conn in conns:
            if conn is not None:
                conn.close()
        return code

    def close(self) -> None:
        """Ask the child to exit (2 s), then stop it."""
        if self.requests is not None and self.alive():
            try:
                self.requests.send(None)
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.stop()

    def ask(self, payload: object, timeout_s: float) -> tuple[Status, object]:
        """Run one job in the child (started if need be): its (Status, payload). Raises
        WorkerLost when no reply came within timeout_s seconds of wall time (the child is then
        killed), or the child was not running or died; the next job starts a fresh one."""
        self.start()
        self._next_id += 1
        job_id = self._next_id
        try:
            self.requests.send((job_id, payload))
        except (OSError, BrokenPipeError):
            raise WorkerLost(Lost.NOT_RUNNING, self.stop()) from None
        deadline = time.monotonic() + timeout_s
        while True:
            if self.replies.poll(POLL_S):
                try:
                    got_id, status, result = self.replies.recv()
                except (EOFError, OSError):
                    break  # the child died while answering
                if got_id == job_id:  # a stale reply cannot come (a late job is killed): be safe
                    return Status(status), result
                continue
            if not self.alive():
                break
            if time.monotonic() > deadline:
                raise WorkerLost(Lost.TIMED_OUT, self.stop())
        code = self.stop()
        raise WorkerLost(Lost.OUT_OF_CPU if code == -signal.SIGXCPU else Lost.DIED, code)


# ---- in the child ----------------------------------------------------------------------------------


def log(name: str, text: object) -> None:
    """One line for the server's log (the child's stderr), cut to LOG_CHARS characters."""
    line = " ".join(str(text).split())
    print(f"{name}: {line[:LOG_CHARS]}", file=sys.stderr, flush=True)


def channels() -> tuple[Connection, Connection]:
    """The child's (requests, replies): stdin, and stdout kept for replies only (anything printed
    afterwards, by torch say, goes to stderr, never into the reply channel). Call it before
    anything can print: until then stdout is the replies' pipe (unbuffered under
    PYTHONUNBUFFERED), and a stray line there would read as a reply's length."""
    replies_fd = os.dup(1)
    os.dup2(2, 1)
    return Connection(0, writable=False), Connection(replies_fd, readable=False)


def serve(
    requests: Connection, replies: Connection, answer: Callable[[int, object], tuple]
) -> None:
    """The child's loop: each request (job id, payload) -> replies answer(job id, payload), until
    None or the server closes the pipe."""
    while True:
        try:
            msg = requests.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        job_id, payload = msg
        reply = answer(job_id, payload)
        try:
            replies.send(reply)
        except (EOFError, OSError, BrokenPipeError):
            return


def cpu_seconds() -> float:
    """CPU seconds this process has used (user and system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def vm_size_bytes() -> int | None:
    """This process's address space in bytes (None where /proc does not say)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def lower_priority() -> None:
    """NICE steps lower priority, and first in line for the kernel's OOM killer (if memory runs
    out, it should pick this process, not the web server)."""
    with contextlib.suppress(OSError):
        os.nice(NICE)
    try:
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as f:
            f.write("1000")
    except OSError:
        pass


def limit_address_space(limit_of: Callable[[int], int], name: str) -> None:
    """RLIMIT_AS = limit_of(the address space now), except with a GPU (whose driver maps far more
    address space than it uses) or where /proc does not say."""
    import resource

    import torch

    baseline = vm_size_bytes()
    if baseline is None or torch.cuda.is_available():
        return
    limit = limit_of(baseline)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        log(name, "could not set RLIMIT_AS")


def limit_cpu(seconds: float, name: str) -> None:
    """A soft RLIMIT_CPU seconds from now (never above the hard one): SIGXCPU ends the child
    past it."""
    import resource

    soft = math.ceil(cpu_seconds() + seconds)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        log(name, "could not set RLIMIT_CPU")
