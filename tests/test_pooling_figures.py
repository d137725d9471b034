"""The training figures as data: words on the axis (escaped), one colour range, every number in
the description, and plotly accepts them."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.errors import AttnvizError
from attnviz.figures.training import curves_draft, weights_draft


def test_weights_figure_puts_the_words_on_the_axis():
    fig = weights_draft(["not", "<b>good</b>"], np.array([[0.5, 0.5], [0.1, 0.9]]), title="w")
    assert fig.layout["xaxis"]["ticktext"] == ["not", "&lt;b&gt;good&lt;/b&gt;"]
    np.testing.assert_allclose(np.asarray(fig.data[0]["z"], dtype=float), [[0.5, 0.5], [0.1, 0.9]])
    assert (fig.data[0]["zmin"], fig.data[0]["zmax"]) == (-1.0, 1.0)
    assert "1: '<b>good</b>' (0.90)" in fig.description
    go.Figure(fig.figure().to_dict())  # validates


def test_weights_figure_of_one_sentence():
    fig = weights_draft(["a", "dull", "film"], np.array([0.1, 0.8, 0.1]), title="one")
    assert "'dull' (0.80)" in fig.description
    go.Figure(fig.figure().to_dict())


def test_weights_figure_outlines_the_epoch_shown():
    fig = weights_draft(["a", "b"], np.eye(2), title="t", highlight_row=1)
    assert "(1, 0), (1, 1)" in fig.description


def test_weights_figure_refuses_a_shape_mismatch():
    with pytest.raises(AttnvizError, match=r"\(3,\) do not match 2 words"):
        weights_draft(["a", "b"], np.ones(3), title="t")


def test_curves_figure_gives_every_number():
    fig = curves_draft(np.array([1.0, 0.5]), np.array([0.3, 0.6, 0.95]), title="run")
    assert fig.data[0]["x"] == [1, 2] and fig.data[1]["y"] == [30.0, 60.0, 95.0]
    assert "30.0%, 60.0%, 95.0%" in fig.description and "0.500" in fig.description
    go.Figure(fig.figure().to_dict())


def test_curves_figure_refuses_mismatched_lengths():
    with pytest.raises(AttnvizError, match="one more entry"):
        curves_draft(np.ones(3), np.ones(3), title="run")
