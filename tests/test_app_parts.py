"""The Playground's pure helpers (the PyTorch snippet, the exports, the link) and the error boundary
every page runs inside, each on its own: no page is drawn here."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import examples
from attnviz.ui import export, link

TIMEOUT = 90


# ---- the pure helpers behind the Playground ----------------------------------------------------


@pytest.mark.slow  # runs the snippet in a fresh interpreter importing torch (~2 s)
def test_snippet_rebuilds_the_example_in_plain_pytorch(tmp_path):
    x, w, mask = examples.padded(2, 3, 5)
    code = export.pytorch_snippet(x.numpy(), w.numpy(), mask.numpy(), True)
    path = tmp_path / "snippet.py"
    path.write_text(code + "print(weighted.tolist())\n")
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True)
    printed = torch.tensor(eval(out.stdout.strip().splitlines()[-1]))  # noqa: S307 (our own output)
    expected = attnviz.weighted_sum(x, w, mask=mask, normalize="softmax")
    torch.testing.assert_close(printed, expected, rtol=1e-5, atol=1e-6)


def test_npy_and_json_exports_read_back():
    import io
    import json

    x, w = examples.classic()
    back = np.load(io.BytesIO(export.npy_bytes(x.numpy())))
    np.testing.assert_array_equal(back, x.numpy())
    data = json.loads(export.tensors_json({"att_scores": w.numpy(), "mask": None}))
    assert data["att_scores"]["shape"] == [2, 3] and "mask" not in data


def test_link_round_trips_exactly():
    x, w = examples.random_example(3, 4, 6, seed=3)
    lk = link.Link(
        preset="random", shape=(3, 4, 6), seed=3, x=x.numpy(), w=w.numpy(), step=2, cell=(2, 5)
    )
    back = link.decode(link.encode(lk))
    np.testing.assert_array_equal(back.x, x.numpy())
    np.testing.assert_array_equal(back.w, w.numpy())
    assert (back.step, back.cell, back.seed) == (2, (2, 5), 3)


@pytest.mark.parametrize("name", sorted(examples.PRESETS))
def test_a_link_naming_a_preset_opens_it_as_the_menu_does(name):
    """?p=softmax softmaxes the scores and ?p=padded masks the padding, as choosing the preset
    does; sm=/mk= are written only where the options differ from that, as 0 or 1."""
    opens = examples.opens_with(name)
    lk = link.decode({"p": name})
    assert (lk.softmax, lk.use_mask) == opens
    assert not {"sm", "mk"} & set(link.encode(lk))
    other = link.decode({"p": name, "sm": str(int(not opens[0])), "mk": str(int(not opens[1]))})
    assert (other.softmax, other.use_mask) == (not opens[0], not opens[1])
    assert link.decode(link.encode(other)) == other


# ---- the error boundary --------------------------------------------------------------------------


def test_error_boundary_shows_a_plain_message_not_a_traceback():
    def script():
        from attnviz.ui.boundary import guarded

        def broken_page():
            raise RuntimeError("internal detail /srv/secret.py line 3")

        guarded(broken_page, "zz_")()

    at = AppTest.from_function(script, default_timeout=TIMEOUT).run()
    assert not at.exception
    message = " ".join(e.value for e in at.error)
    assert "Something went wrong" in message and "secret" not in message


def test_error_boundary_shows_an_attnviz_error_as_is():
    def script():
        from attnviz.errors import AttnvizError
        from attnviz.ui.boundary import guarded

        def page():
            raise AttnvizError("att_scores (2, 4) does not fit net_output (2, 3, 5)")

        guarded(page, "zz_")()

    at = AppTest.from_function(script, default_timeout=TIMEOUT).run()
    assert "(2, 4) does not fit" in at.error[0].value


def _counting_page():
    """A page with a callback button and a form's, each press counted by its act (``button``)."""
    import streamlit as st

    from attnviz.ui.boundary import button, callback, guarded

    def count(name: str) -> None:
        st.session_state[name] = st.session_state.get(name, 0) + 1

    def page():
        button("Count", key="zz_count", on_click=callback(count, "zz_"), args=("zz_n",))
        with st.form("zz_form"):
            st.text_input("Name", key="zz_name")
            button(
                "Send", key="zz_send", on_click=callback(count, "zz_"), args=("zz_sent",), form=True
            )
        if not st.session_state.get("zz_g"):  # this button's act hides it
            button("Once", key="zz_gone", on_click=callback(count, "zz_"), args=("zz_g",))

    guarded(page, "zz_")()


def test_a_button_whose_callback_ran_acts_once_a_press():
    at = AppTest.from_function(_counting_page, default_timeout=TIMEOUT).run()
    for presses in (1, 2):
        at.button(key="zz_count").click().run()
        assert at.session_state["zz_n"] == presses and not at.exception
    at.run()  # a run with no press acts on nothing
    assert at.session_state["zz_n"] == 2
    at.text_input(key="zz_name").input("Ada")
    at.button(key="zz_send").click().run()
    assert at.session_state["zz_sent"] == 1 and at.session_state["zz_name"] == "Ada"


def test_a_mark_no_button_took_is_gone_at_the_end_of_the_run():
    at = AppTest.from_function(_counting_page, default_timeout=TIMEOUT).run()
    at.button(key="zz_gone").click().run()  # acted, and not drawn after it: its mark not taken
    assert at.session_state["zz_g"] == 1 and not at.exception
    assert "zz_gone__heard" not in at.session_state  # else a dropped press later would be lost
