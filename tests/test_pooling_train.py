"""Training the pooling model: deterministic, checked configs, predictions, and (slow) the issue's
targets on the shipped corpus, with the default configuration the page trains."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.errors import AttnvizError
from attnviz.pooling import corpus
from attnviz.pooling.train import TrainConfig, predict, prepare, train


@pytest.fixture(scope="module")
def data():
    return prepare()


@pytest.fixture(scope="module")
def short_run(data):
    return train(TrainConfig(epochs=2), data)


@pytest.fixture(scope="module")
def reported_run(data):
    """The same config trained again, on its own, with on_epoch recording what it reports:
    (the run, the reports)."""
    seen = []
    run = train(TrainConfig(epochs=2), data, on_epoch=lambda *a: seen.append(a))
    return run, seen


def test_split_is_fixed_and_disjoint(data):
    again = prepare()
    assert torch.equal(data.test_ids, again.test_ids)
    train_rows = {tuple(r) for r in data.train_ids.tolist()}
    assert not any(tuple(r) in train_rows for r in data.test_ids.tolist())
    assert len(data.test_labels) == int(corpus.SIZE * 0.2)


def test_same_config_same_run(short_run, reported_run):
    again, _ = reported_run  # a second training of the same config (on_epoch only listens)
    np.testing.assert_array_equal(again.losses, short_run.losses)
    np.testing.assert_array_equal(again.weights, short_run.weights)
    for k, v in short_run.state.items():
        np.testing.assert_array_equal(again.state[k], v)


def test_another_seed_another_run(data, short_run):
    other = train(TrainConfig(epochs=2, seed=1), data)
    assert not np.array_equal(other.weights, short_run.weights)


def test_run_shapes(short_run):
    e, s, t = 2, len(short_run.watched), corpus.MAX_WORDS
    assert short_run.losses.shape == (e,)
    assert short_run.accuracies.shape == (e + 1,)
    assert short_run.weights.shape == (e + 1, s, t)
    np.testing.assert_allclose(short_run.weights.sum(axis=2), 1.0, rtol=1e-5)


def test_on_epoch_reports_each_epoch(reported_run):
    run, seen = reported_run
    assert [a[0] for a in seen] == [1, 2]
    assert seen[-1][2] == run.accuracies[-1]


def test_predict_gives_probabilities_and_weights(short_run):
    words, probs, weights = predict(short_run, "I found the film NOT good, zebra!")
    assert words == ["i", "found", "the", "film", "not", "good", "zebra"]
    assert probs.shape == (3,) and abs(probs.sum() - 1) < 1e-9
    assert weights.shape == (7,) and abs(weights.sum() - 1) < 1e-6


def test_predict_refuses_long_text(short_run):
    with pytest.raises(AttnvizError, match="characters"):
        predict(short_run, "good " * 100)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("pooling", "max", "Unknown pooling"),
        ("epochs", 0, "epochs"),
        ("epochs", 1000, "epochs"),
        ("seed", -1, "seed"),
        ("lr", 2.0, "lr"),
        ("lr", 1, "lr"),
        ("batch_size", True, "batch_size"),
        ("hidden", 8, "T == H"),
    ],
)
def test_bad_config_is_refused(field, value, needle):
    kwargs = {"pooling": "trap"} if field == "hidden" else {}
    with pytest.raises(AttnvizError, match=needle):
        TrainConfig(**{**kwargs, field: value}).check()


@pytest.fixture(scope="module")
def full_runs(data):
    torch.set_num_threads(1)
    return {p: train(TrainConfig(pooling=p), data) for p in ("attention", "mean", "trap")}


@pytest.mark.slow
def test_attention_reaches_the_target(full_runs):
    assert full_runs["attention"].accuracies[-1] >= 0.95


@pytest.mark.slow
def test_attention_weights_the_deciding_word(full_runs):
    assert full_runs["attention"].key_hit >= 0.9


@pytest.mark.slow
@pytest.mark.parametrize("other", ["mean", "trap"])
def test_other_poolings_stay_lower(full_runs, other):
    assert full_runs[other].accuracies[-1] < full_runs["attention"].accuracies[-1] - 0.03
