"""attnviz.worker_process, the child process the benchmark and training workers share, against a
small child of its own (tests/worker_process_child.py): a reply comes back as it was sent, a job
past its wall time or its CPU time or killed gets no reply and says how (``Lost``), and the next
job starts a fresh child."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from attnviz import worker_process
from attnviz.worker_process import Lost, Status, WorkerLost, WorkerProcess

CHILD = "tests.worker_process_child"


@pytest.fixture
def child():
    w = WorkerProcess(CHILD)
    yield w
    w.close()


def test_a_job_comes_back_as_sent(child):
    payload = {"shape": (2, 3, 5), "text": "x" * 10_000}
    assert child.ask(("echo", payload), 60) == (Status.OK, payload)
    assert child.ask(("what", None), 60) == (Status.REFUSED, "no job 'what'")
    assert child.pid not in (None, os.getpid())


def test_a_job_past_its_wall_time_is_killed_and_the_next_starts_a_fresh_child(child):
    child.start()
    first = child.pid
    with pytest.raises(WorkerLost) as e:
        child.ask(("sleep", 60), 0.5)
    assert e.value.how is Lost.TIMED_OUT and child.pid is None
    assert child.ask(("echo", 1), 60) == (Status.OK, 1)
    assert child.pid != first


def test_a_killed_child_is_lost_and_says_so(child):
    child.start()
    pid = child.pid
    threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(WorkerLost) as e:
        child.ask(("sleep", 60), 60)
    assert e.value.how is Lost.DIED and e.value.code == -signal.SIGKILL


@pytest.mark.slow
def test_a_job_past_its_cpu_time_is_ended_by_the_kernel(child):
    with pytest.raises(WorkerLost) as e:
        child.ask(("spin", 1), 120)
    assert e.value.how is Lost.OUT_OF_CPU and e.value.code == -signal.SIGXCPU


def test_the_child_lowers_its_priority(child):
    _, niceness = child.ask(("nice", None), 60)
    assert niceness == min(19, os.nice(0) + worker_process.NICE)


def test_close_lets_the_child_exit(child):
    assert child.ask(("echo", 1), 60) == (Status.OK, 1)  # up and serving (importing torch
    proc = child.proc  # can take longer than close's 2 s on a busy machine)
    child.close()
    assert proc.poll() == 0 and child.pid is None
