"""The Learn the scores page through streamlit.testing.v1 AppTest: Train trains once per
configuration (cached), the numbers shown are the run's own, a visitor's sentence is shown as
text and a too-long one gets a plain message, forged widget values are refused plainly."""

from __future__ import annotations

import functools
import html
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from attnviz.errors import AttnvizError
from attnviz.pooling import worker
from attnviz.pooling.train import TrainConfig, prepare, train
from attnviz.ui import learn

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 180

pytestmark = pytest.mark.slow  # trains in a worker process


@functools.cache
def _data():
    """The corpus as tensors, prepared once for the module (its split is fixed:
    test_pooling_train's test_split_is_fixed_and_disjoint)."""
    return prepare()


@functools.cache
def _trained_here(config: TrainConfig):
    """The run the stand-in worker hands the page for config: trained once for the module (the
    same config gives the same run: test_pooling_train's test_same_config_same_run)."""
    return train(config, _data())


@functools.cache
def _expected(config: TrainConfig):
    """The run a test compares the page with: trained on its own, not the object the page got,
    once per config for the module."""
    return train(config, _data())


class _Counting:
    """Stands in for the worker in this process: trains here and counts the runs (each test's
    fixture counts its own; the run itself is trained once per config for the module)."""

    def __init__(self) -> None:
        self.calls: list[TrainConfig] = []
        self.data = _data()

    def __call__(self, config: TrainConfig, *, owner: str | None = None):
        self.calls.append(config)
        return _trained_here(config)


class _Idle:
    def start(self) -> None:  # the page readies the trainer on a first visit: nothing to start here
        pass


@pytest.fixture
def trainer(monkeypatch):
    fake = _Counting()
    monkeypatch.setattr(worker, "submit", fake)
    monkeypatch.setattr(worker, "get_worker", lambda: _Idle())
    monkeypatch.setattr(learn, "FRAME_S", 0.0)
    learn.trained.clear()
    yield fake
    learn.trained.clear()


def _app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at._page_hash = calc_hash("learn")
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    parts = [e.value for e in (*at.error, *at.warning, *at.info, *at.success)]
    parts += [m.value for m in (*at.markdown, *at.caption, *at.code)]
    return "\n".join(str(p) for p in parts)


def _trained(at: AppTest, epochs: int = 2) -> AppTest:
    at.selectbox(key="lt_epochs").set_value(epochs).run()
    at.button(key="lt_train").click().run()
    assert not at.exception, at.exception
    return at


def test_page_opens_with_a_train_button(trainer):
    at = _app()
    assert "Press **Train**" in _texts(at)
    assert trainer.calls == []


def test_train_shows_the_runs_own_numbers(trainer):
    at = _trained(_app())
    (config,) = trainer.calls
    run = _expected(config)
    assert f"{100 * run.accuracies[-1]:.1f} %" in _texts(at)
    assert f"{100 * run.key_hit:.0f} %" in _texts(at)
    assert at.slider(key="lt_epoch_2").value == 2


def test_same_configuration_trains_once(trainer):
    _trained(_app())
    _trained(_app())  # another session, the same configuration
    assert len(trainer.calls) == 1


def test_epoch_slider_picks_the_row(trainer):
    at = _trained(_app())
    at.slider(key="lt_epoch_2").set_value(1).run()
    assert not at.exception
    # figure.show: each figure's summary as escaped HTML text beside its table
    summaries = [h.proto.body for h in at.get("html") if "attnviz-summary" in h.proto.body]
    descriptions = [html.unescape(b) for b in summaries if "The largest weight by epoch" in b]
    assert descriptions and all("1: '" in d and "2: '" not in d for d in descriptions)


def test_your_sentence_is_shown_as_text(trainer):
    at = _trained(_app())
    at.text_input(key="lt_text").set_value("**bold** [link](http://x) it was a dull film").run()
    assert not at.exception
    assert "bold link http x it was a dull film" in [c.value for c in at.code]
    assert "Prediction:" in _texts(at)


def test_too_long_sentence_gets_a_plain_message(trainer):
    at = _trained(_app())
    at.text_input(key="lt_text").set_value("good " * 30).run()
    assert not at.exception
    assert any("the model reads at most" in w.value for w in at.warning)


def test_compare_states_the_traps_cost(trainer):
    at = _trained(_app())
    at.button(key="lt_compare").click().run()
    assert not at.exception
    runs = {c.pooling: _expected(c) for c in trainer.calls}
    lost = 100 * (runs["attention"].accuracies[-1] - runs["trap"].accuracies[-1])
    assert f"lost **{lost:.1f} points**" in _texts(at)
    table = next(d.value for d in at.dataframe if "held-out accuracy" in d.value.columns)
    assert len(table) == 4
    assert sorted(c.pooling for c in trainer.calls) == ["attention", "last", "mean", "trap"]


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        (("attention", 0, 7), "epochs"),
        (("attention", 99, 2), "seed"),
        (("attention", True, 2), "seed"),
        (("<b>max</b>", 0, 2), "pooling"),
    ],
)
def test_forged_widget_values_are_refused_plainly(values, needle):
    with pytest.raises(AttnvizError, match=needle):
        learn._parse(*values)


def test_cached_run_holds_no_tensor(trainer):
    run = learn.trained("attention", 0, 2)
    assert all(isinstance(v, np.ndarray) for v in run.state.values())


def test_weights_table_holds_the_epochs_numbers(trainer):
    at = _trained(_app())
    at.slider(key="lt_epoch_2").set_value(1).run()
    (config,) = trainer.calls
    run = _expected(config)
    table = next(d.value for d in at.dataframe if "weight" in d.value.columns)
    first = table[table["sentence"] == 1]
    assert list(first["word"]) == list(run.watched[0])
    np.testing.assert_allclose(first["weight"], run.weights[1, 0, : len(run.watched[0])], atol=1e-4)
