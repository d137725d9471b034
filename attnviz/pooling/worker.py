"""Training for a public server: one bounded worker process, one job at a time.

    from attnviz.pooling.worker import submit
    run = submit(TrainConfig(pooling="mean"), owner=session_id)  # a TrainRun

The child process, its limits and its kill are ``attnviz.worker_process`` (as for the benchmarks):

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

import threading
from dataclasses import asdict

from attnviz import worker_process
from attnviz.errors import AttnvizError
from attnviz.pooling.train import TrainConfig, TrainRun
from attnviz.worker_process import Lost, Status, WorkerLost, WorkerProcess

NICE = worker_process.NICE
#: CPU seconds an epoch may take in the worker (measured: ~0.15 s on a quiet core), and a fixed
#: part for building the model and the last evaluation, with room for a busy machine
EPOCH_CPU_S = 1.0
JOB_FIXED_CPU_S = 5.0
WALL_SLACK = 4.0
AS_SLACK_BYTES = 512 * 2**20
_NAME = "attnviz.pooling.worker"


def cpu_budget_s(config: TrainConfig) -> float:
    """CPU seconds one job of ``config`` may use: more epochs, more time, never the reverse."""
    return JOB_FIXED_CPU_S + EPOCH_CPU_S * config.epochs


def _bound_process() -> None:
    """In the worker: one torch thread, lower priority, first for the OOM killer, RLIMIT_AS."""
    import torch

    torch.set_num_threads(1)
    worker_process.lower_priority()
    worker_process.limit_address_space(lambda baseline: baseline + AS_SLACK_BYTES, _NAME)


def answer(job_id: int, config_dict: dict, data) -> tuple[int, Status, object]:
    """One job in the worker: (job id, Status, a TrainRun or a plain message)."""
    from attnviz.pooling.train import train

    try:
        config = TrainConfig(**config_dict)
        config.check()
        worker_process.limit_cpu(cpu_budget_s(config), _NAME)
        return (job_id, Status.OK, train(config, data))
    except AttnvizError as e:
        return (job_id, Status.REFUSED, str(e))
    except MemoryError as e:
        worker_process.log(_NAME, f"job {job_id} ran out of memory: {e}")
        return (job_id, Status.ERROR, "training ran out of memory")
    except Exception as e:  # report plainly, log the details, stay alive for the next job
        worker_process.log(_NAME, f"job {job_id} failed: {type(e).__name__}: {e}")
        return (job_id, Status.ERROR, "training failed inside the worker")


class TrainWorker:
    """A training worker process and a queue in front of it. Thread-safe; ``submit`` blocks."""

    def __init__(self, *, max_waiting: int = 64) -> None:
        self.max_waiting = max_waiting
        self._process = WorkerProcess(_NAME)
        self._job_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._waiting = 0
        self._owners: set[str] = set()
        self.jobs_run = 0  # how many jobs reached the worker (the class bench reads it)

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def start(self) -> None:
        """Start the worker now, without waiting for it to load torch and the corpus (the first
        job otherwise starts it and waits); idempotent. Never waits: while a job holds the
        worker, it is running already."""
        if self._job_lock.acquire(blocking=False):
            try:
                self._process.start()
            finally:
                self._job_lock.release()

    def close(self) -> None:
        with self._job_lock:
            self._process.stop()

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
        self.jobs_run += 1
        limit = WALL_SLACK * cpu_budget_s(config) + 30.0  # + the worker's start (torch, corpus)
        try:
            status, payload = self._process.ask(asdict(config), limit)
        except WorkerLost as e:
            if e.how is Lost.NOT_RUNNING:
                raise AttnvizError(
                    f"The trainer was not running (exit code {e.code}); try again."
                ) from None
            if e.how is Lost.TIMED_OUT:
                raise AttnvizError(
                    f"Training did not finish within {limit:.0f} s and was stopped; the server "
                    f"is busy, try again in a moment."
                ) from None
            why = "it used up its CPU time" if e.how is Lost.OUT_OF_CPU else "e.g. out of memory"
            raise AttnvizError(
                f"The trainer stopped while training {config.pooling} ({why}). Nothing else was "
                f"affected; the next run starts a fresh trainer."
            ) from None
        if status is Status.OK:
            return payload
        if status is Status.REFUSED:
            raise AttnvizError(payload)
        raise AttnvizError(f"Training {config.pooling} failed: {payload}. Try again.")


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
    from attnviz.pooling.train import prepare

    requests, replies = worker_process.channels()
    data = prepare()
    _bound_process()
    worker_process.serve(requests, replies, lambda job_id, config: answer(job_id, config, data))


if __name__ == "__main__":
    _serve()
