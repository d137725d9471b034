"""Training for a public server: one bounded worker process, one job at a time.

    from attnviz.pooling.worker import submit
    run = submit(TrainConfig(pooling="mean"), owner=session_id)  # a TrainRun

Modelled on ``attnviz.bench.worker``:

- one worker process (a fresh ``python -m attnviz.pooling.worker``, torch on one thread) serves
  every caller in turn; a lock runs jobs one at a time, at most ``max_waiting`` callers queue (one
  more is told "busy") and an ``owner`` (a session) has at most one job waiting or running;
- a config is checked (``TrainConfig.check``) before it is sent and again in the worker;
- each job may use ``cpu_budget_s(config)`` CPU seconds (``RLIMIT_CPU``: the kernel ends the
  worker past it) and ``WALL_SLACK`` times that in wall time (the caller kills it past that);
  the worker runs niced, under an address-space limit (``RLIMIT_AS``: its size after loading the
  corpus plus ``AS_SLACK_BYTES``), first in line for the OOM killer;
- whatever goes wrong, the caller gets an AttnvizError with a plain message; details go to the
  worker's stderr (the server log), cut short. The next job starts a fresh worker if needed.

Caching (60 students, one configuration, one run) belongs to the page: ``st.cache_data`` around
``submit`` computes each key once while the others wait for it.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from multiprocessing.connection import Connection

from attnviz.errors import AttnvizError
from attnviz.pooling.train import TrainConfig, TrainRun

NICE = 10
#: CPU seconds an epoch may take in the worker (measured: ~0.15 s on a quiet core), and a fixed
#: part for building the model and the last evaluation, with room for a busy machine
EPOCH_CPU_S = 1.0
JOB_FIXED_CPU_S = 5.0
WALL_SLACK = 4.0
AS_SLACK_BYTES = 512 * 2**20
LOG_CHARS = 300


def cpu_budget_s(config: TrainConfig) -> float:
    """CPU seconds one job of ``config`` may use: more epochs, more time, never the reverse."""
    return JOB_FIXED_CPU_S + EPOCH_CPU_S * config.epochs


def _log(text: str) -> None:
    line = " ".join(str(text).split())
    print(f"attnviz.pooling.worker: {line[:LOG_CHARS]}", file=sys.stderr, flush=True)


def _cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _vm_size_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _bound_process() -> None:
    """In the worker: one torch thread, lower priority, first for the OOM killer, RLIMIT_AS."""
    import resource

    import torch

    torch.set_num_threads(1)
    with contextlib.suppress(OSError):
        os.nice(NICE)
    try:
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as f:
            f.write("1000")
    except OSError:
        pass
    baseline = _vm_size_bytes()
    if baseline is None or torch.cuda.is_available():
        return
    limit = baseline + AS_SLACK_BYTES
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        _log("could not set RLIMIT_AS")


def _limit_cpu(config: TrainConfig) -> None:
    import resource

    soft = math.ceil(_cpu_seconds() + cpu_budget_s(config))
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        _log("could not set RLIMIT_CPU")


def answer(job_id: int, config_dict: dict, data) -> tuple[int, str, object]:
    """One job in the worker: (job id, "ok" | "refused" | "error", a TrainRun or a message)."""
    from attnviz.pooling.train import train

    try:
        config = TrainConfig(**config_dict)
        config.check()
        _limit_cpu(config)
        return (job_id, "ok", train(config, data))
    except AttnvizError as e:
        return (job_id, "refused", str(e))
    except MemoryError as e:
        _log(f"job {job_id} ran out of memory: {e}")
        return (job_id, "error", "training ran out of memory")
    except Exception as e:  # report plainly, log the details, stay alive for the next job
        _log(f"job {job_id} failed: {type(e).__name__}: {e}")
        return (job_id, "error", "training failed inside the worker")


def _worker_main(requests: Connection, replies: Connection) -> None:
    from attnviz.pooling.train import prepare

    data = prepare()
    _bound_process()
    while True:
        try:
            msg = requests.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        job_id, config_dict = msg
        try:
            replies.send(answer(job_id, config_dict, data))
        except (EOFError, OSError, BrokenPipeError):
            return


class TrainWorker:
    """A training worker process and a queue in front of it. Thread-safe; ``submit`` blocks."""

    def __init__(self, *, max_waiting: int = 64) -> None:
        self.max_waiting = max_waiting
        self._proc: subprocess.Popen | None = None
        self._requests: Connection | None = None
        self._replies: Connection | None = None
        self._job_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._waiting = 0
        self._owners: set[str] = set()
        self._next_id = 0
        self.jobs_run = 0  # how many jobs reached the worker (the class bench reads it)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._alive() else None

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the worker now, without waiting for it to load torch and the corpus (the first
        job otherwise starts it and waits); idempotent. Never waits: while a job holds the
        worker, it is running already."""
        if self._job_lock.acquire(blocking=False):
            try:
                self._ensure_started()
            finally:
                self._job_lock.release()

    def _ensure_started(self) -> None:
        if self._alive():
            return
        self._stop()
        proc = subprocess.Popen(
            [sys.executable, "-m", "attnviz.pooling.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        self._proc = proc
        self._requests = Connection(os.dup(proc.stdin.fileno()), readable=False)
        self._replies = Connection(os.dup(proc.stdout.fileno()), writable=False)
        proc.stdin.close()
        proc.stdout.close()

    def _stop(self) -> int | None:
        proc, conns = self._proc, (self._requests, self._replies)
        self._proc = self._requests = self._replies = None
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
        with self._job_lock:
            self._stop()

    def submit(self, config: TrainConfig, *, owner: str | None = None) -> TrainRun:
        """Train ``config`` in the worker. Raises AttnvizError with a plain message for a refused
        config, a full queue, a second job of one owner, a job past its time, or a crash."""
        config.check()
        with self._count_lock:
            if owner is not None and owner in self._owners:
                raise AttnvizError("Your previous training run is still going; wait for it.")
            if self._waiting >= self.max_waiting:
                raise AttnvizError(
                    f"The trainer is busy ({self._waiting} runs waiting); try again in a moment."
                )
            self._waiting += 1
            if owner is not None:
                self._owners.add(owner)
        try:
            with self._job_lock:
                return self._run(config)
        finally:
            with self._count_lock:
                self._waiting -= 1
                self._owners.discard(owner)

    def _run(self, config: TrainConfig) -> TrainRun:
        self._ensure_started()
        self._next_id += 1
        job_id = self._next_id
        self.jobs_run += 1
        try:
            self._requests.send((job_id, asdict(config)))
        except (OSError, BrokenPipeError):
            code = self._stop()
            raise AttnvizError(
                f"The trainer was not running (exit code {code}); try again."
            ) from None
        limit = WALL_SLACK * cpu_budget_s(config) + 30.0  # + the worker's start (torch, corpus)
        deadline = time.monotonic() + limit
        while True:
            if self._replies.poll(0.05):
                try:
                    got_id, status, payload = self._replies.recv()
                except (EOFError, OSError):
                    break
                if got_id != job_id:
                    continue
                if status == "ok":
                    return payload
                if status == "refused":
                    raise AttnvizError(payload)
                raise AttnvizError(f"Training {config.pooling} failed: {payload}. Try again.")
            if not self._alive():
                break
            if time.monotonic() > deadline:
                self._stop()
                raise AttnvizError(
                    f"Training did not finish within {limit:.0f} s and was stopped; the server "
                    f"is busy, try again in a moment."
                )
        code = self._stop()
        why = "it used up its CPU time" if code == -signal.SIGXCPU else "e.g. out of memory"
        raise AttnvizError(
            f"The trainer stopped while training {config.pooling} ({why}). Nothing else was "
            f"affected; the next run starts a fresh trainer."
        )


_RUNNER: TrainWorker | None = None
_RUNNER_LOCK = threading.Lock()


def get_worker() -> TrainWorker:
    """The process-wide trainer (started on its first job)."""
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = TrainWorker()
        return _RUNNER


def submit(config: TrainConfig, *, owner: str | None = None) -> TrainRun:
    """Train ``config`` on the process-wide trainer; see ``TrainWorker.submit``."""
    return get_worker().submit(config, owner=owner)


def _serve() -> None:
    """``python -m attnviz.pooling.worker``: jobs on stdin, replies on stdout."""
    replies_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed goes to stderr, never into the reply channel
    _worker_main(Connection(0, writable=False), Connection(replies_fd, readable=False))


if __name__ == "__main__":
    _serve()
