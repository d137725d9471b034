"""Isolation for the app: benchmark jobs run in a separate worker process, one at a time.

    from attnviz.bench.worker import BenchSpec, submit
    records = submit(BenchSpec(shape=(48, 512, 1024), device="cpu"), timeout_s=60)  # list[dict]

- One worker process (a fresh ``python -m attnviz.bench.worker``: no forked torch thread pools, and
  the caller's ``__main__``, a Streamlit script or pytest, is never re-imported) serves every caller of the process-wide
  runner in turn; a lock makes jobs run one at a time, so two visitors never time side by side and
  corrupt each other's numbers. At most ``max_waiting`` callers queue; one more is told "busy".
- Before anything is allocated, the size is checked against a cap computed from the free memory of
  the target device (and an absolute cap set by the app); a refused size raises AttnvizError with a
  plain message. The check runs in the caller for the CPU and again inside the worker (which alone
  touches CUDA) before allocating.
- A job that runs past its timeout is stopped by killing the worker; an out-of-memory or a crash
  kills only the worker (it raises its own ``oom_score_adj`` so the kernel's OOM killer picks it
  before the web server). Either way the caller gets an AttnvizError and the next job starts a fresh
  worker: the web server stays alive and serving.

Core layer: no streamlit here. A page wraps ``submit`` in its own spinner and error display.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection

from attnviz.bench.harness import DEFAULT_METHODS, LOOP_MAX_WORDS, input_bytes, parse_dtype
from attnviz.errors import AttnvizError

DEFAULT_TIMEOUT_S = 120.0
# the inputs, the one-liner's (B, T, H) temporary, the copy's destination and rotating input sets
# (at most 2x the cache): what one job may hold at once, as a multiple of x
MEMORY_FACTOR = 4


@dataclass(frozen=True)
class BenchSpec:
    """One benchmark job: time ``methods`` and the floor on x of ``shape`` (B, T, H)."""

    shape: tuple[int, int, int]
    device: str = "cpu"
    dtype: str = "float32"
    methods: tuple[str, ...] = DEFAULT_METHODS
    rounds: int = 9
    min_block_s: float = 0.01
    memory: bool = True

    def as_dict(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["methods"] = list(self.methods)
        return d


def required_bytes(spec: BenchSpec) -> int:
    """Bytes one job may hold at once: MEMORY_FACTOR x the inputs, plus 64 MiB of slack."""
    return MEMORY_FACTOR * input_bytes(tuple(spec.shape), parse_dtype(spec.dtype)) + 64 * 2**20


def size_cap(
    device: str, *, memory_fraction: float = 0.5, max_input_bytes: int | None = None
) -> int:
    """Largest input (x and w) in bytes a job may use on ``device`` now, from its free memory."""
    from attnviz.bench.devices import free_memory_bytes

    cap = int(free_memory_bytes(device) * memory_fraction / MEMORY_FACTOR)
    return cap if max_input_bytes is None else min(cap, int(max_input_bytes))


def check_spec(
    spec: BenchSpec, *, memory_fraction: float = 0.5, max_input_bytes: int | None = None
) -> None:
    """Raise AttnvizError with a plain message when ``spec`` is malformed or too big to run now."""
    from attnviz.bench.devices import resolve_devices

    resolve_devices(spec.device)  # AttnvizError naming the devices that exist
    shape = tuple(int(s) for s in spec.shape)
    if len(shape) != 3 or min(shape) < 1:
        raise AttnvizError(f"shape must be (B, T, H) of positive integers, got {shape}.")
    dtype = parse_dtype(spec.dtype)
    if spec.rounds < 1 or spec.rounds > 1000:
        raise AttnvizError(f"rounds must be between 1 and 1000, got {spec.rounds}.")
    if "loop" in spec.methods and shape[0] * shape[1] > LOOP_MAX_WORDS:
        raise AttnvizError(
            f"'loop' runs B*T = {shape[0] * shape[1]} Python steps for {shape}; it is allowed up "
            f"to B*T = {LOOP_MAX_WORDS}. Drop it or use a smaller B or T."
        )
    need = input_bytes(shape, dtype)
    cap = size_cap(spec.device, memory_fraction=memory_fraction, max_input_bytes=max_input_bytes)
    if need > cap:
        raise AttnvizError(
            f"Size {shape} in {spec.dtype} needs {need / 2**20:.1f} MiB of inputs on {spec.device}, "
            f"but the cap right now is {cap / 2**20:.1f} MiB (computed from free memory, leaving "
            f"room for the one-liner's (B, T, H) temporary). Try a smaller B, T or H."
        )


def run_spec(spec: BenchSpec, **limits) -> list[dict]:
    """Check ``spec`` (before allocating), then measure it in this process: JSON-safe records."""
    from attnviz.bench.harness import measure

    check_spec(spec, **limits)
    recs = measure(
        tuple(spec.shape),
        device=spec.device,
        dtype=spec.dtype,
        methods=list(spec.methods),
        rounds=spec.rounds,
        min_block_s=spec.min_block_s,
        memory=spec.memory,
    )
    return [r.as_dict() for r in recs]


def _worker_main(requests: Connection, replies: Connection, limits: dict) -> None:
    """The worker process: receive (job id, spec dict), reply (job id, status, payload)."""
    import torch

    try:  # if memory runs out, the kernel's OOM killer should pick this process, not the server
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as f:
            f.write("1000")
    except OSError:
        pass

    while True:
        try:
            msg = requests.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        job_id, spec_dict = msg
        try:
            spec_dict["shape"] = tuple(spec_dict["shape"])
            spec_dict["methods"] = tuple(spec_dict["methods"])
            payload = run_spec(BenchSpec(**spec_dict), **limits)
            reply = (job_id, "ok", payload)
        except AttnvizError as e:
            reply = (job_id, "refused", str(e))
        except (getattr(torch, "OutOfMemoryError", MemoryError), MemoryError):
            reply = (job_id, "error", "the device ran out of memory during the benchmark")
        except Exception as e:  # report, stay alive for the next job
            reply = (job_id, "error", f"{type(e).__name__}: {e}")
        try:
            replies.send(reply)
        except (EOFError, OSError, BrokenPipeError):
            return


class BenchWorker:
    """A worker process and a queue in front of it. Thread-safe; ``submit`` blocks.

    memory_fraction: share of free memory a job may plan to use; max_input_bytes: absolute cap on
    x and w (the public app sets one); max_waiting: callers allowed to wait for their turn.
    """

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        memory_fraction: float = 0.5,
        max_input_bytes: int | None = None,
        max_waiting: int = 4,
    ) -> None:
        self.timeout_s = timeout_s
        self.limits = {"memory_fraction": memory_fraction, "max_input_bytes": max_input_bytes}
        self.max_waiting = max_waiting
        self._proc: subprocess.Popen | None = None
        self._requests: Connection | None = None  # to the worker's stdin
        self._replies: Connection | None = None  # from the worker's stdout
        self._job_lock = threading.Lock()  # one job at a time
        self._count_lock = threading.Lock()
        self._waiting = 0
        self._next_id = 0

    @property
    def pid(self) -> int | None:
        """The worker's process id while it runs (None before the first job or after a crash)."""
        return self._proc.pid if self._alive() else None

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the worker now (else the first job starts it); idempotent."""
        with self._job_lock:
            self._ensure_started()

    def _ensure_started(self) -> None:
        if self._alive():
            return
        self._stop()
        proc = subprocess.Popen(
            [sys.executable, "-m", "attnviz.bench.worker", json.dumps(self.limits)],
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
        """Stop the worker (a later job starts a new one)."""
        with self._job_lock:
            if self._requests is not None and self._alive():
                try:
                    self._requests.send(None)
                    self._proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self._stop()

    def submit(self, spec: BenchSpec, *, timeout_s: float | None = None) -> list[dict]:
        """Run ``spec`` in the worker and return its records (dicts, as ``Measurement.as_dict``).

        Raises AttnvizError with a plain message for a refused size, a busy queue, a timeout or a
        crashed worker. ``timeout_s`` counts from when the job starts running (not its wait).
        """
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        if spec.device == "cpu":  # CUDA is only ever touched inside the worker
            check_spec(spec, **self.limits)
        with self._count_lock:
            if self._waiting >= self.max_waiting:
                raise AttnvizError(
                    f"The benchmark runner is busy ({self._waiting} jobs waiting); try again in "
                    f"a moment."
                )
            self._waiting += 1
        try:
            with self._job_lock:
                return self._run(spec, timeout_s)
        finally:
            with self._count_lock:
                self._waiting -= 1

    def _run(self, spec: BenchSpec, timeout_s: float) -> list[dict]:
        self._ensure_started()
        self._next_id += 1
        job_id = self._next_id
        shape = tuple(spec.shape)
        try:
            self._requests.send((job_id, spec.as_dict()))
        except (OSError, BrokenPipeError):
            code = self._stop()
            raise AttnvizError(
                f"The benchmark worker was not running (exit code {code}); it restarts with the "
                f"next job, so try again."
            ) from None
        deadline = time.monotonic() + timeout_s
        while True:
            if self._replies.poll(0.05):
                try:
                    got_id, status, payload = self._replies.recv()
                except (EOFError, OSError):
                    break  # the worker died while answering
                if got_id != job_id:
                    continue  # a stale answer cannot happen (we kill on timeout), but be safe
                if status == "ok":
                    return payload
                if status == "refused":
                    raise AttnvizError(payload)
                raise AttnvizError(f"The benchmark of {shape} on {spec.device} failed: {payload}.")
            if not self._alive():
                break
            if time.monotonic() > deadline:
                self._stop()
                raise AttnvizError(
                    f"The benchmark of {shape} on {spec.device} did not finish within "
                    f"{timeout_s:g} s and was stopped. Try a smaller size or fewer methods."
                )
        code = self._stop()
        raise AttnvizError(
            f"The benchmark worker stopped while timing {shape} on {spec.device} (exit code "
            f"{code}, e.g. killed for using too much memory). Nothing else was affected; the next "
            f"job starts a fresh worker."
        )


_RUNNER: BenchWorker | None = None
_RUNNER_LOCK = threading.Lock()


def get_worker(**options) -> BenchWorker:
    """The process-wide runner (created on first use with ``options``; later options are ignored)."""
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = BenchWorker(**options)
        return _RUNNER


def submit(spec: BenchSpec, *, timeout_s: float | None = None) -> list[dict]:
    """Run ``spec`` on the process-wide runner; see ``BenchWorker.submit``."""
    return get_worker().submit(spec, timeout_s=timeout_s)


def _serve() -> None:
    """Entry point of ``python -m attnviz.bench.worker LIMITS_JSON``: jobs on stdin, replies on stdout."""
    limits = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    replies_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed (by torch, say) goes to stderr, never into the reply channel
    _worker_main(Connection(0, writable=False), Connection(replies_fd, readable=False), limits)


if __name__ == "__main__":
    _serve()
