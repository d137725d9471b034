"""The Playground's example through AppTest: its presets, seed and size boxes, and sizes that are
out of bounds, not numbers, or not there at all (tests/test_app.py has the page's other controls)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import examples
from attnviz.ui.playground import editor_key
from tests.test_app import _app, _edit, _result, _version


@pytest.mark.parametrize("name", list(examples.PRESETS))
def test_each_preset_shows_its_own_result(name):
    at = _app()
    at.selectbox(key="pg_preset").set_value(name).run()
    assert not at.exception
    shape = examples.OPENS_AT.get(name, (2, 3, 5))  # the square preset opens at T == H
    assert at.session_state["pg_x"].shape == shape
    ex = examples.preset(name, *shape)
    expected = attnviz.weighted_sum(
        ex.net_output, ex.att_scores, mask=ex.mask, normalize=ex.normalize
    )
    torch.testing.assert_close(
        _result(at), expected.numpy().astype(np.float64), rtol=1e-4, atol=1e-4
    )
    assert at.toggle(key="pg_softmax").value == (ex.normalize == "softmax")
    assert at.toggle(key="pg_use_mask").value == (ex.mask is not None)


def test_seed_changes_a_random_preset():
    at = _app()
    at.selectbox(key="pg_preset").set_value("random").run()
    first = _result(at)
    at.number_input(key="pg_seed").set_value(7).run()
    ex = examples.preset("random", 2, 3, 5, seed=7)
    torch.testing.assert_close(
        _result(at),
        attnviz.weighted_sum(ex.net_output, ex.att_scores).numpy().astype(np.float64),
        rtol=1e-4,
        atol=1e-4,
    )
    assert not np.allclose(first, _result(at))


@pytest.mark.parametrize(
    ("letter", "size", "shape"), [("t", 5, (2, 5, 5)), ("h", 3, (2, 3, 3)), ("b", 1, (1, 3, 5))]
)
def test_resizing_keeps_the_values_that_still_fit(letter, size, shape):
    at = _app()
    _edit(at, editor_key("x", _version(at), 0), {"edited_rows": {0: {"h0": 9.0}}})
    at.number_input(key=f"pg_{letter}").set_value(size).run()
    assert not at.exception
    x = at.session_state["pg_x"]
    assert x.shape == shape
    x0, _ = examples.classic()
    kb, kt, kh = (min(a, b) for a, b in zip(shape, (2, 3, 5), strict=True))
    assert x[0, 0, 0] == 9.0
    np.testing.assert_array_equal(
        x[:kb, :kt, :kh].ravel()[1:], x0.numpy()[:kb, :kt, :kh].ravel()[1:]
    )
    assert _result(at).shape == (shape[0], shape[2])


def test_a_size_beyond_the_bounds_is_clamped():
    at = _app()
    at.number_input(key="pg_h").set_value(10**6).run()  # what a tampered client could send
    assert not at.exception and not at.error
    b, t, h = at.session_state["pg_x"].shape
    assert b <= examples.MAX_B and t <= examples.MAX_T and h <= examples.MAX_H


def test_largest_size_renders():
    at = _app()
    for letter, size in zip("bth", (examples.MAX_B, examples.MAX_T, examples.MAX_H), strict=True):
        at.number_input(key=f"pg_{letter}").set_value(size).run()
    assert not at.exception and not at.error
    assert _result(at).shape == (examples.MAX_B, examples.MAX_H)


def test_the_square_preset_opens_at_t_equal_to_h_and_a_seed_keeps_the_shape():
    at = _app()
    at.selectbox(key="pg_preset").set_value("square").run()
    at.number_input(key="pg_t").set_value(6).run()
    at.number_input(key="pg_seed").set_value(3).run()
    assert at.session_state["pg_x"].shape == (2, 6, 4)  # a seed keeps the shape on screen


def _sizes_read() -> None:
    import numpy as np
    import streamlit as st

    from attnviz.ui import playground

    st.session_state.setdefault("pg_x", np.zeros((2, 3, 5), np.float32))
    st.session_state["read"] = playground._size()


def test_a_size_it_cannot_read_is_the_size_on_screen():
    """A size that is not in the session, or not a number, is the size on screen, never 1: once,
    on a busy machine, a cell edit's run found all three gone and the example fell to 1 x 1 x 1."""
    at = AppTest.from_function(_sizes_read)
    at.session_state["pg_t"] = 4.0
    at.run()
    assert at.session_state["read"] == (2, 4, 5, 0)  # B and H are not there: those on screen
    at.session_state["pg_b"], at.session_state["pg_h"] = float("nan"), float("inf")
    at.run()
    assert at.session_state["read"] == (2, 4, 5, 0)
    at.session_state["pg_b"], at.session_state["pg_h"] = 1e300, -5.0  # out of range: clamped
    at.run()
    assert at.session_state["read"] == (examples.MAX_B, 4, 1, 0)
    assert not at.exception


def _resize_with_no_sizes() -> None:
    import numpy as np
    import streamlit as st

    from attnviz.ui import playground

    ss = st.session_state
    if "pg_x" not in ss:
        ss["pg_x"] = np.full((2, 3, 5), 0.5, np.float32)  # an edited example
        ss["pg_preset"] = "classic"
    playground._on_resize()  # the size boxes' callback, with none of them in the session


def test_a_resize_that_finds_no_sizes_keeps_the_example_and_says_nothing():
    """What the Playground's keyboard walk met on a busy machine: a cell edit's run called the
    size callback with B, T and H all gone. The example stays as it is, every edit in it."""
    at = AppTest.from_function(_resize_with_no_sizes).run()
    assert not at.exception
    assert np.array_equal(at.session_state["pg_x"], np.full((2, 3, 5), 0.5, np.float32))
    assert "pg_why" not in at.session_state  # nothing changed: nothing to say
