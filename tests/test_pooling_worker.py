"""The training worker: a separate bounded process gives the same run as training here, refuses
bad configs with a plain message, and survives its own death."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import torch

from attnviz.errors import AttnvizError
from attnviz.pooling.train import TrainConfig, prepare, train
from attnviz.pooling.worker import TrainWorker, cpu_budget_s

pytestmark = pytest.mark.slow  # each test starts a python with torch


@pytest.fixture(scope="module")
def worker():
    w = TrainWorker(max_waiting=2)
    yield w
    w.close()


def test_worker_run_equals_a_run_here(worker):
    config = TrainConfig(epochs=2, seed=3)
    got = worker.submit(config)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the worker: the same floats need the same reduction order
    try:
        want = train(config, prepare())
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_array_equal(got.losses, want.losses)
    np.testing.assert_array_equal(got.weights, want.weights)


def test_bad_config_is_refused_before_the_worker(worker):
    before = worker.jobs_run
    with pytest.raises(AttnvizError, match="epochs"):
        worker.submit(TrainConfig(epochs=10_000))
    assert worker.jobs_run == before


def test_a_dead_worker_is_replaced(worker):
    worker.submit(TrainConfig(epochs=1))
    proc = worker._process.proc
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    run = worker.submit(TrainConfig(epochs=1))
    assert run.losses.shape == (1,)


def test_budget_grows_with_epochs():
    assert cpu_budget_s(TrainConfig(epochs=20)) > cpu_budget_s(TrainConfig(epochs=2))


def test_start_readies_the_worker_without_a_job():
    w = TrainWorker()
    try:
        w.start()
        w.start()  # idempotent
        assert w.pid is not None and w.jobs_run == 0
    finally:
        w.close()
