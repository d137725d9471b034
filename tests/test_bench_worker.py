"""attnviz.bench's worker: jobs run in another process, one at a time, niced under an address
space and CPU limit; a timeout, a crash or a refused spec is answered plainly and the next job runs.
Correctness only: no timing assertions."""

import os
import signal
import threading

import pytest
import torch

from attnviz import AttnvizError
from attnviz.bench import worker as worker_module
from attnviz.bench.worker import BenchSpec, BenchWorker, check_spec

# --- the worker ---

LONG = BenchSpec(shape=(8, 64, 128), methods=("broadcast", "bmm"), rounds=1000, memory=False)


def test_check_spec_refuses_oversize_with_a_plain_message():
    with pytest.raises(AttnvizError, match=r"\(10000, 10000, 10000\).*MiB.*smaller"):
        check_spec(BenchSpec(shape=(10_000, 10_000, 10_000)))


def test_worker_refuses_oversize_before_starting():
    worker = BenchWorker(max_input_bytes=2**20)
    with pytest.raises(AttnvizError, match=r"\(64, 64, 128\).*cap"):
        worker.submit(BenchSpec(shape=(64, 64, 128)))
    assert worker.pid is None  # nothing was started, nothing allocated


def test_busy_runner_refuses_with_a_plain_message():
    worker = BenchWorker(max_waiting=0)
    with pytest.raises(AttnvizError, match="busy"):
        worker.submit(BenchSpec(shape=(2, 3, 5)))


@pytest.fixture(scope="module", autouse=True)
def wall_limit_for_a_busy_machine():
    """A job's wall limit is WALL_SLACK x its CPU budget; the worker runs niced, and beside two
    CPU-bound processes it gets so small a share that a tiny job passed 3x its budget. Here the
    slack is 20x (the CPU budget, RLIMIT_CPU, is unchanged; the timeout tests pass their own)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(worker_module, "WALL_SLACK", 20.0)
        yield


@pytest.fixture(scope="module")
def worker():
    w = BenchWorker(timeout_s=600)
    w.start()
    yield w
    w.close()


@pytest.mark.slow
def test_worker_runs_a_job_in_another_process(worker):
    recs = worker.submit(BenchSpec(shape=(2, 3, 5), methods=("bmm",), rounds=2, min_block_s=0.0005))
    assert worker.pid not in (None, os.getpid())
    assert [r["method"] for r in recs] == ["floor", "bmm"] and recs[0]["shape"] == [2, 3, 5]


@pytest.mark.slow
def test_worker_refuses_a_missing_device_with_a_plain_message(worker):
    with pytest.raises(AttnvizError, match=r"'cuda:7' is not available.*'cpu'"):
        worker.submit(BenchSpec(shape=(2, 3, 5), device="cuda:7"))


@pytest.mark.slow
def test_worker_timeout_stops_the_job_and_the_next_job_runs(worker):
    with pytest.raises(AttnvizError, match="did not finish within 0.5 s"):
        worker.submit(LONG, timeout_s=0.5)
    recs = worker.submit(BenchSpec(shape=(2, 3, 5), methods=("bmm",), rounds=2, min_block_s=0.0005))
    assert recs[1]["method"] == "bmm"


@pytest.mark.slow
def test_worker_crash_leaves_the_caller_alive(worker):
    worker.start()
    pid = worker.pid
    errors = []

    def job():
        try:
            worker.submit(LONG, timeout_s=60)
        except AttnvizError as e:
            errors.append(str(e))

    sent, connection = threading.Event(), worker._process.requests
    send = connection.send
    connection.send = lambda job: (send(job), sent.set())  # the job is on its way to the worker
    thread = threading.Thread(target=job)
    thread.start()
    assert sent.wait(120)
    os.kill(pid, signal.SIGKILL)  # what the kernel's OOM killer does
    thread.join(timeout=120)
    assert errors and "stopped while timing (8, 64, 128)" in errors[0]
    recs = worker.submit(BenchSpec(shape=(2, 3, 5), methods=("bmm",), rounds=2, min_block_s=0.0005))
    assert worker.pid != pid and recs[0]["method"] == "floor"


@pytest.mark.slow
def test_concurrent_callers_run_one_at_a_time(worker):
    spec = BenchSpec(shape=(2, 3, 5), methods=("bmm",), rounds=2, min_block_s=0.0005)
    results, inside, peak = [], [0], [0]
    lock = threading.Lock()
    original = worker._run

    def tracked(s, t):
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        try:
            return original(s, t)
        finally:
            with lock:
                inside[0] -= 1

    worker._run = tracked
    try:
        threads = [
            threading.Thread(target=lambda: results.append(worker.submit(spec))) for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)  # generous: jobs queue one after another on a busy machine
    finally:
        worker._run = original
    assert len(results) == 3 and peak[0] == 1


# --- the worker as a bounded guest ---


def _proc_limits(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/limits", encoding="ascii") as f:
        rows = {line[:26].strip(): line[26:].split() for line in f if line.startswith("Max ")}
    return {"as": rows["Max address space"][0], "cpu": rows["Max cpu time"][0]}


def _proc_nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


@pytest.mark.slow
def test_worker_runs_niced_under_an_address_space_and_cpu_limit(worker):
    recs = worker.submit(BenchSpec(shape=(2, 3, 5), methods=("bmm",), rounds=2, min_block_s=0.0005))
    assert recs[0]["method"] == "floor"
    limits = _proc_limits(worker.pid)
    assert _proc_nice(worker.pid) == min(19, _proc_nice(os.getpid()) + worker_module.NICE)
    assert limits["cpu"] != "unlimited"  # set for the job just run
    if not torch.cuda.is_available():
        assert limits["as"] != "unlimited"


def test_address_space_limit_leaves_room_for_the_largest_allowed_job():
    limits = {"memory_fraction": 0.5, "max_input_bytes": 2**28}
    limit = worker_module.address_space_limit(limits, baseline_bytes=2**29)
    assert limit == 2**29 + worker_module.MEMORY_FACTOR * 2**28 + worker_module.AS_SLACK_BYTES


@pytest.mark.parametrize(
    ("methods", "says"),
    [
        (("einsum",) * 200, "at most once"),
        (("bmm", "bmm"), "at most once"),
        (("bmm", "rm -rf /"), "must be one of"),
        ((), "at least one method"),
    ],
)
def test_check_spec_refuses_forged_methods_with_a_plain_message(methods, says):
    with pytest.raises(AttnvizError, match=says):
        check_spec(BenchSpec(shape=(2, 3, 5), methods=methods))


@pytest.mark.parametrize(
    ("change", "says"), [({"rounds": 0}, "rounds"), ({"min_block_s": 60.0}, "min_block_s")]
)
def test_check_spec_bounds_rounds_and_block_length(change, says):
    with pytest.raises(AttnvizError, match=says):
        check_spec(BenchSpec(shape=(2, 3, 5), **change))


@pytest.mark.parametrize(
    ("small", "large"),
    [
        (BenchSpec(shape=(64, 1024, 1024), methods=("einsum",)), BenchSpec(shape=(64, 1024, 1024))),
        (BenchSpec(shape=(2, 3, 5)), BenchSpec(shape=(64, 1024, 1024))),
        (BenchSpec(shape=(2, 3, 5), rounds=5), BenchSpec(shape=(2, 3, 5), rounds=50)),
    ],
    ids=["fewer-methods", "smaller-size", "fewer-rounds"],
)
def test_job_budget_grows_with_the_request(small, large):
    assert 0 < worker_module.job_budget_s(small) < worker_module.job_budget_s(large)


@pytest.mark.slow
def test_a_second_job_of_one_owner_is_refused_while_the_first_runs(worker):
    started, release = threading.Event(), threading.Event()
    original = worker._run

    def slow_run(spec, limit):
        started.set()
        assert release.wait(120)  # held until the second job has been answered
        return original(spec, limit)

    worker._run = slow_run
    errors, spec = [], BenchSpec(shape=(2, 3, 5), methods=("bmm",), rounds=2, min_block_s=0.0005)
    try:
        first = threading.Thread(target=lambda: worker.submit(spec, owner="session-a"))
        first.start()
        assert started.wait(30)
        try:
            worker.submit(spec, owner="session-a")
        except AttnvizError as e:
            errors.append(str(e))
        release.set()
        first.join(timeout=600)  # generous: jobs queue one after another on a busy machine
    finally:
        worker._run = original
    assert errors and "previous benchmark is still waiting or running" in errors[0]
    assert worker.submit(spec, owner="session-a")[0]["method"] == "floor"  # free again


def test_an_exception_inside_the_worker_is_answered_plainly(monkeypatch):
    def broken(spec, **limits):
        raise ValueError("zip() argument 2 is shorter than argument 1")

    monkeypatch.setattr(worker_module, "run_spec", broken)
    spec = BenchSpec(shape=(2, 3, 5), methods=("bmm",)).as_dict()
    job_id, status, message = worker_module.answer(7, spec, {}, before_run=lambda s: None)
    assert (job_id, status) == (7, "error")
    assert "zip" not in message and "ValueError" not in message and "failed" in message


def test_a_refused_spec_inside_the_worker_is_answered_with_its_reason():
    spec = BenchSpec(shape=(2, 3, 5), methods=("bmm",)).as_dict() | {"methods": ["bmm", "bmm"]}
    _id, status, message = worker_module.answer(1, spec, {}, before_run=lambda s: None)
    assert status == "refused" and "at most once" in message
