"""Isolation for the app: benchmark jobs run in a separate worker process, a bounded guest.

    from attnviz.bench.worker import BenchSpec, submit
    records = submit(BenchSpec(shape=(48, 512, 1024), device="cpu"), owner=session_id)  # list[dict]

- One worker process (a fresh ``python -m attnviz.bench.worker``: no forked torch thread pools, and
  the caller's ``__main__``, a Streamlit script or pytest, is never re-imported) serves every caller
  of the process-wide runner in turn; a lock makes jobs run one at a time, so two visitors never
  time side by side and corrupt each other's numbers. Whose job runs next, and who may wait, is
  ``attnviz.bench.turns``: a bounded queue, one job per session, two per visitor, fair turns.
- A spec is checked before anything is allocated: methods must be known and given once, rounds and
  block length bounded, and the size under a cap computed from the free memory of the target
  device (and an absolute cap set by the app). The check runs in the caller for the CPU and again
  inside the worker (which alone touches CUDA).
- Each job gets a time budget derived from its request (``job_budget_s``: size, methods, rounds),
  enforced as a CPU-time limit (``RLIMIT_CPU``, budget x threads), and a wall-time limit of
  ``WALL_SLACK`` x the budget (``wall_limit_s``; the runner's timeout if that is shorter), past
  which the worker is killed: a request holds the worker no longer than its size, methods and
  rounds justify, and a forged one (repeats dropped, size clamped) no longer than the largest
  legitimate one. The worker runs at a lower priority (``os.nice``) and, on machines without a
  GPU (whose driver maps huge virtual ranges), under an address-space limit (``RLIMIT_AS``) a
  little above what the largest allowed size needs; it raises its own ``oom_score_adj`` so the
  kernel's OOM killer picks it before the web server.
- The child process, its limits and its kill are ``attnviz.worker_process`` (shared with the
  trainer, ``attnviz.pooling.worker``).
- Whatever goes wrong (a refused spec, a busy queue, a timeout, a crash, an exception inside the
  worker), the caller gets an AttnvizError with a plain message, never an exception's text; the
  details go to the worker's stderr (the server log), cut to a few hundred characters. The web
  server stays alive and the next job starts a fresh worker if needed.

Core layer: no streamlit here. A page wraps ``submit`` in its own spinner and error display.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass

from attnviz import native, worker_process
from attnviz.bench.floor import MAX_WAYS
from attnviz.bench.harness import (
    DEFAULT_METHODS,
    LOOP_MAX_WORDS,
    MEMORY_FACTOR,
    input_bytes,
    moved_bytes,
    parse_dtype,
)
from attnviz.bench.turns import Turns
from attnviz.errors import AttnvizError
from attnviz.worker_process import Lost, Status, WorkerLost, WorkerProcess

DEFAULT_TIMEOUT_S = 120.0
MAX_ROUNDS = 1000
MAX_BLOCK_S = 1.0
NICE = worker_process.NICE  # the worker's priority increment: visitors' page runs come first
# A job's time budget (job_budget_s) assumes each method is about half as fast as the slowest we
# measured it on a 2-core CPU at 256 MiB (benchmarks/RESULTS.md: einsum 1.4-2.3 GB/s, the one-liner
# 3-4 GB/s, the one-pass methods and the floor 25-55 GB/s), plus a fixed start-up (inputs, the C
# kernel's first build), times BUDGET_FACTOR for cores shared with other work.
SLOWEST_BYTES_PER_S = {"einsum": 1e9, "broadcast": 2e9, "loop": 2e9}
OTHER_BYTES_PER_S = 10e9  # floor, bmm, fused, auto
LOOP_STEP_S = 20e-6  # one Python step of "loop" (about 10 µs measured)
JOB_FIXED_S = 15.0
BUDGET_FACTOR = 2.0
# measured (benchmarks/RESULTS.md): the largest request the app offers took 9 s on a quiet 2-core
# machine and 49 s at a load average of 7, where the niced worker gets a small share of a core
WALL_SLACK = 3.0
# the worker's address space: its own after importing torch, plus MEMORY_FACTOR x the largest
# input allowed, plus this for libraries loaded later (the profiler, the C kernel), thread stacks
# and allocator arenas (measured: 629 MiB after import, 1045 MiB after a job, peak 1555 MiB at
# 64x1024x1024, the largest size the app offers)
AS_SLACK_BYTES = 768 * 2**20
_NAME = "attnviz.bench.worker"


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
    if not isinstance(spec.rounds, int) or not 1 <= spec.rounds <= MAX_ROUNDS:
        raise AttnvizError(f"rounds must be a whole number from 1 to {MAX_ROUNDS}.")
    if not isinstance(spec.min_block_s, int | float) or not 0 < spec.min_block_s <= MAX_BLOCK_S:
        raise AttnvizError(f"min_block_s must be above 0 and at most {MAX_BLOCK_S:g} s.")
    check_method_names(spec.methods)
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


def check_method_names(methods: tuple[str, ...]) -> None:
    """Raise AttnvizError unless ``methods`` names known methods, each once, at least one."""
    from attnviz.aggregation import METHODS

    known = ", ".join(METHODS)
    if not methods:
        raise AttnvizError(f"Pick at least one method to time ({known}).")
    if len(methods) > len(METHODS) or len(set(methods)) != len(methods):
        raise AttnvizError(f"Name each method at most once ({known}).")
    if any(not isinstance(m, str) or m not in METHODS for m in methods):
        raise AttnvizError(f"Every method must be one of {known}.")


def job_budget_s(spec: BenchSpec) -> float:
    """Seconds of wall time ``spec`` may take in the worker: from its size, methods and rounds.

    Each method (and each of the floor's ways, ``floor.MAX_WAYS``) is assumed as slow as
    SLOWEST_BYTES_PER_S says: each runs one first call, a few warm-up calls, ``rounds`` blocks of
    at least ``min_block_s`` (or one call, if slower), and with ``memory`` one profiled call; plus
    making the inputs and JOB_FIXED_S, all times BUDGET_FACTOR. The C kernel's first call of a
    shape from beyond L2 times its two ways to load (``native.AHEAD_TRIES`` calls each, after
    ``native.AHEAD_WARMUP``), so fused and auto count those calls too. More methods, rounds or
    bytes give a larger budget, never the reverse.
    """
    shape = tuple(spec.shape)
    dtype = parse_dtype(spec.dtype)
    nbytes = moved_bytes(shape, dtype)
    total = 0.0
    for name in ("floor",) * MAX_WAYS + tuple(spec.methods):  # each of the floor's ways is timed
        c = nbytes / SLOWEST_BYTES_PER_S.get(name, OTHER_BYTES_PER_S)
        c += shape[0] * shape[1] * LOOP_STEP_S if name == "loop" else 0.0
        block = max(spec.min_block_s, c) + 2 * c  # Timer runs 2 untimed calls per block
        timed = native.AHEAD_WARMUP + 2 * native.AHEAD_TRIES
        timed_ways = timed * c if name in ("fused", "auto") else 0.0
        total += 4 * c + timed_ways + 0.05 + spec.rounds * block + (3 * c if spec.memory else 0.0)
    total += 2 * input_bytes(shape, dtype) / SLOWEST_BYTES_PER_S["einsum"]  # randn, copies
    return JOB_FIXED_S + BUDGET_FACTOR * total


def wall_limit_s(spec: BenchSpec) -> float:
    """Wall seconds ``spec`` may hold the worker: WALL_SLACK x its budget. The budget itself is
    enforced in CPU seconds (RLIMIT_CPU), which do not pass while the niced worker waits for a
    core on a busy machine; the wall limit bounds that wait."""
    return WALL_SLACK * job_budget_s(spec)


def address_space_limit(limits: dict, baseline_bytes: int) -> int:
    """RLIMIT_AS for the worker: its address space now, plus room for the largest allowed job."""
    cap = size_cap("cpu", **limits)
    return baseline_bytes + MEMORY_FACTOR * cap + AS_SLACK_BYTES


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


def _bound_process(limits: dict) -> None:
    """In the worker: lower priority, first in line for the OOM killer, and (without a GPU) an
    address-space limit a little above what the largest allowed job needs."""
    import torch

    worker_process.lower_priority()
    torch.ones(1 << 16).sum()  # start torch's thread pool: its stacks count in the baseline
    worker_process.limit_address_space(
        lambda baseline: address_space_limit(limits, baseline), _NAME
    )


def _limit_cpu(spec: BenchSpec) -> None:
    """In the worker: a soft RLIMIT_CPU for this job (SIGXCPU ends the worker past it)."""
    import torch

    worker_process.limit_cpu(job_budget_s(spec) * max(1, torch.get_num_threads()) + 5, _NAME)


def answer(
    job_id: int, spec_dict: dict, limits: dict, *, before_run: Callable[[BenchSpec], None]
) -> tuple[int, Status, object]:
    """One job in the worker: (job id, Status, records or a plain message).

    ``before_run(spec)`` runs after the checks, before the timing (the worker sets its CPU-time
    limit there). Exceptions other than AttnvizError are logged, cut short, and answered with a
    plain message that never contains their text.
    """
    import torch

    try:
        spec_dict = dict(spec_dict, shape=tuple(spec_dict["shape"]))
        spec = BenchSpec(**dict(spec_dict, methods=tuple(spec_dict["methods"])))
        check_spec(spec, **limits)
        before_run(spec)
        return (job_id, Status.OK, run_spec(spec, **limits))
    except AttnvizError as e:
        return (job_id, Status.REFUSED, str(e))
    except (getattr(torch, "OutOfMemoryError", MemoryError), MemoryError) as e:
        worker_process.log(_NAME, f"job {job_id} ran out of memory: {e}")
        return (job_id, Status.ERROR, "the benchmark ran out of memory")
    except Exception as e:  # report plainly, log the details, stay alive for the next job
        worker_process.log(_NAME, f"job {job_id} failed: {type(e).__name__}: {e}")
        return (job_id, Status.ERROR, "the benchmark failed inside the worker")


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
        max_waiting: int = 3,
    ) -> None:
        self.timeout_s = timeout_s
        self.limits = {"memory_fraction": memory_fraction, "max_input_bytes": max_input_bytes}
        self.max_waiting = max_waiting
        self._process = WorkerProcess(_NAME, json.dumps(self.limits))
        self._job_lock = threading.Lock()  # one job at a time
        self._turns = Turns(max_waiting)  # whose job runs next

    @property
    def pid(self) -> int | None:
        """The worker's process id while it runs (None before the first job or after a crash)."""
        return self._process.pid

    def start(self) -> None:
        """Start the worker now (else the first job starts it); idempotent."""
        with self._job_lock:
            self._process.start()

    def close(self) -> None:
        """Stop the worker (a later job starts a new one)."""
        with self._job_lock:
            self._process.close()

    def submit(
        self,
        spec: BenchSpec,
        *,
        timeout_s: float | None = None,
        owner: str | None = None,
        source: str | None = None,
    ) -> list[dict]:
        """Run ``spec`` in the worker and return its records (dicts, as ``Measurement.as_dict``).

        Raises AttnvizError with a plain message for a refused spec, a busy queue, a second job
        of the same ``owner`` (a session id) while one waits or runs, a third of the same
        ``source`` (a visitor's address) while two wait or run, a job past its time (the
        smaller of ``timeout_s`` and ``wall_limit_s(spec)``, counted from when it starts, not its
        wait) or a crashed worker.
        """
        limit = self.timeout_s if timeout_s is None else timeout_s
        if spec.device == "cpu":  # CUDA is only ever touched inside the worker
            check_spec(spec, **self.limits)
        else:
            check_method_names(tuple(spec.methods))
        limit = min(limit, wall_limit_s(spec))
        ticket = self._turns.enter(owner, source, job_budget_s(spec) / BUDGET_FACTOR)
        try:
            with self._job_lock:
                return self._run(spec, limit)
        finally:
            self._turns.leave(ticket)

    def _run(self, spec: BenchSpec, timeout_s: float) -> list[dict]:
        shape = tuple(spec.shape)
        try:
            status, payload = self._process.ask(spec.as_dict(), timeout_s)
        except WorkerLost as e:
            if e.how is Lost.NOT_RUNNING:
                raise AttnvizError(
                    f"The benchmark worker was not running (exit code {e.code}); it restarts "
                    f"with the next job, so try again."
                ) from None
            if e.how is Lost.TIMED_OUT:
                raise AttnvizError(
                    f"The benchmark of {shape} on {spec.device} did not finish within "
                    f"{timeout_s:g} s and was stopped. Try a smaller size or fewer methods."
                ) from None
            why = (
                "it used up its CPU-time budget"
                if e.how is Lost.OUT_OF_CPU
                else "e.g. killed for using too much memory"
            )
            raise AttnvizError(
                f"The benchmark worker stopped while timing {shape} on {spec.device} ({why}). "
                f"Nothing else was affected; the next job starts a fresh worker."
            ) from None
        if status is Status.OK:
            return payload
        if status is Status.REFUSED:
            raise AttnvizError(payload)
        raise AttnvizError(
            f"The benchmark of {shape} on {spec.device} failed: {payload}. Nothing else "
            f"was affected; try a smaller size or fewer methods."
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


def submit(
    spec: BenchSpec,
    *,
    timeout_s: float | None = None,
    owner: str | None = None,
    source: str | None = None,
) -> list[dict]:
    """Run ``spec`` on the process-wide runner; see ``BenchWorker.submit``."""
    return get_worker().submit(spec, timeout_s=timeout_s, owner=owner, source=source)


def _serve() -> None:
    """Entry point of ``python -m attnviz.bench.worker LIMITS_JSON``: jobs on stdin, replies on stdout."""
    limits = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    requests, replies = worker_process.channels()
    _bound_process(limits)
    worker_process.serve(
        requests,
        replies,
        lambda job_id, spec_dict: answer(job_id, spec_dict, limits, before_run=_limit_cpu),
    )


if __name__ == "__main__":
    _serve()
