"""The app through streamlit.testing.v1.AppTest: every page and control, and every kind of bad input.

Editors can't be driven with set_value: a test puts the editor's edit dict
``{"edited_rows": {row: {column: value}}, "added_rows": [], "deleted_rows": []}`` into
``at.session_state[key]`` before ``run()`` (keys from ``playground.editor_key``). Pages other than
the default are opened by their url_path through the pages ``st.navigation`` registered.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

import attnviz
from attnviz import examples
from attnviz.ui import edit, link
from attnviz.ui.playground import editor_key
from attnviz.ui.sections import TABS

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 90


def _app(params: dict[str, str] | None = None, page: str | None = None) -> AppTest:
    """Run the app as a browser opening /<page>?<params> would (page: a url_path; None: default).

    AppTest has no URL path: it selects a page by its hash, which st.Page derives from url_path
    with streamlit.util.calc_hash (AppTest.switch_page only handles file-based pages).
    """
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    if page is not None:
        at._page_hash = calc_hash(page)
    at.run()
    assert not at.exception, at.exception
    return at


def _tables(at: AppTest) -> list[tuple[str, list[str], list[list[str]]]]:
    """The read-only tables of numbers as shown (Markdown, after any heading in the same element):
    (the rows' axis, columns, cells); the rows must be numbered 0, 1, ... as in the editors."""
    found = []
    for m in at.markdown:
        lines = str(m.value).splitlines()
        starts = [i for i, line in enumerate(lines[:-1]) if lines[i + 1].startswith("|--:|")]
        if not starts:
            continue
        head = [c.strip() for c in lines[starts[0]].strip("|").split("|")]
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[starts[0] + 2 :]]
        assert [r[0] for r in rows] == [str(i) for i in range(len(rows))], lines
        found.append((head[0], head[1:], [r[1:] for r in rows]))
    return found


def _result(at: AppTest) -> np.ndarray:
    """The numbers of the result table `weighted` (B, H) as shown."""
    cells = next(c for axis, cols, c in _tables(at) if axis == "sentence" and cols[0] == "h0")
    return np.array(cells, dtype=np.float64)


def _expected(**kw) -> np.ndarray:
    x, w = examples.classic()
    return attnviz.weighted_sum(x, w, **kw).numpy().astype(np.float64)


def _edit(at: AppTest, key: str, edits: dict) -> AppTest:
    at.session_state[key] = {"edited_rows": {}, "added_rows": [], "deleted_rows": []} | edits
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    parts = [e.value for e in (*at.error, *at.warning, *at.info, *at.success)]
    parts += [m.value for m in (*at.markdown, *at.caption, *at.code)]
    parts += [p.proto.text for p in at.get("progress")]
    return "\n".join(str(p) for p in parts)


def _version(at: AppTest) -> int:
    return at.session_state["pg_version"]


# ---- the Playground ------------------------------------------------------------------------------


def test_playground_opens_on_the_classic_result():
    at = _app()
    torch.testing.assert_close(_result(at), _expected(), rtol=1e-4, atol=1e-4)
    assert not at.error


def test_playground_shows_one_editor_per_sentence_and_one_for_att_scores():
    at = _app()
    editors = [d.value for d in at.dataframe if d.proto.editing_mode]
    assert [e.shape for e in editors] == [(3, 5), (3, 5), (2, 3)]
    # each table's rows are the tensor's own index, under the axis's name
    assert [(e.index.name, list(e.index)) for e in editors] == [
        ("word", [0, 1, 2]),
        ("word", [0, 1, 2]),
        ("sentence", [0, 1]),
    ]


def test_editing_a_cell_changes_the_result():
    at = _app()
    _edit(at, editor_key("x", _version(at), 1), {"edited_rows": {2: {"h4": 2.5}}})
    x, w = examples.classic()
    x[1, 2, 4] = 2.5
    torch.testing.assert_close(
        _result(at), attnviz.weighted_sum(x, w).numpy().astype(np.float64), rtol=1e-4, atol=1e-4
    )


def test_editing_att_scores_changes_the_result():
    at = _app()
    _edit(at, editor_key("w", _version(at)), {"edited_rows": {0: {"w0": "1", "w1": 0, "w2": 0.0}}})
    x, _ = examples.classic()
    torch.testing.assert_close(_result(at)[0], x[0, 0].double().numpy(), rtol=1e-4, atol=1e-4)


BAD_CELLS = [
    (None, "empty"),
    ("", "empty"),
    ("   ", "empty"),
    ("abc", "not a number"),
    ("nan", "NaN"),
    (float("nan"), "NaN"),
    ("inf", "infinite"),
    (float("-inf"), "infinite"),
    ("1e309", "overflows"),
    (10**400, "too large"),
    (1e7, "larger than"),
    (True, "not a number"),
    ([1, 2], "not a number"),
    ("x" * 100, "too long"),
]


@pytest.mark.parametrize(("value", "says"), BAD_CELLS)
def test_bad_cell_shows_a_message_and_keeps_the_last_valid_result(value, says):
    at = _app()
    _edit(at, editor_key("x", _version(at), 0), {"edited_rows": {1: {"h2": value}}})
    errors = " ".join(e.value for e in at.error)
    assert "net_output[0, 1, 2]" in errors and says in errors
    torch.testing.assert_close(_result(at), _expected(), rtol=1e-4, atol=1e-4)
    assert "last valid example" in _texts(at)


def test_bad_att_score_names_its_cell():
    at = _app()
    _edit(at, editor_key("w", _version(at)), {"edited_rows": {1: {"w2": "zero"}}})
    assert "att_scores[1, 2] 'zero' is not a number" in " ".join(e.value for e in at.error)
    torch.testing.assert_close(_result(at), _expected(), rtol=1e-4, atol=1e-4)


def test_fixing_a_bad_cell_clears_the_message():
    at = _app()
    key = editor_key("x", _version(at), 0)
    _edit(at, key, {"edited_rows": {0: {"h0": "oops"}}})
    assert at.error
    _edit(at, key, {"edited_rows": {0: {"h0": 0.5}}})
    assert not at.error


TAMPERED_EDITS = [
    ({"added_rows": [{"h0": 1.0}]}, "can't be added"),
    ({"deleted_rows": [0]}, "can't be deleted"),
    ({"deleted_rows": [9]}, "can't be deleted"),
    ({"edited_rows": {7: {"h0": 1.0}}}, "does not exist"),
    ({"edited_rows": {"x": {"h0": 1.0}}}, "does not exist"),
    ({"edited_rows": {0: {"zz": 1.0}}}, "does not exist"),
    ({"edited_rows": [1, 2]}, "unreadable"),
    ({"edited_rows": {0: "h0"}}, "unreadable"),
]


@pytest.mark.parametrize(("edits", "says"), TAMPERED_EDITS)
def test_added_deleted_or_tampered_rows_reset_the_tables_with_a_message(edits, says):
    at = _app()
    before = _version(at)
    _edit(at, editor_key("x", before, 0), edits)
    assert says in " ".join(w.value for w in at.warning)
    assert _version(at) > before  # fresh editors
    torch.testing.assert_close(_result(at), _expected(), rtol=1e-4, atol=1e-4)


def test_unreadable_editor_state_resets_the_tables():
    at = _app()
    _edit_state = editor_key("w", _version(at))
    at.session_state[_edit_state] = "garbage"
    at.run()
    assert not at.exception
    assert "unreadable" in " ".join(w.value for w in at.warning)


def test_softmax_toggle_softmaxes_the_scores():
    at = _app()
    at.toggle(key="pg_softmax").set_value(True).run()
    torch.testing.assert_close(_result(at), _expected(normalize="softmax"), rtol=1e-4, atol=1e-4)
    assert "Weights actually applied" in _texts(at)


def test_mask_editor_leaves_padded_words_out():
    at = _app()
    at.toggle(key="pg_use_mask").set_value(True).run()
    _edit(at, editor_key("m", _version(at)), {"edited_rows": {0: {"w2": False}}})
    x, w = examples.classic()
    mask = torch.ones(2, 3, dtype=torch.bool)
    mask[0, 2] = False
    expected = attnviz.weighted_sum(x, w, mask=mask).numpy().astype(np.float64)
    torch.testing.assert_close(_result(at), expected, rtol=1e-4, atol=1e-4)


def test_mask_cell_that_is_not_a_bool_is_refused():
    at = _app()
    at.toggle(key="pg_use_mask").set_value(True).run()
    _edit(at, editor_key("m", _version(at)), {"edited_rows": {0: {"w2": "no"}}})
    assert "mask[0, 2]" in " ".join(e.value for e in at.error)


# ---- the link ----------------------------------------------------------------------------------


def test_link_restores_example_options_and_step():
    x, w = examples.classic()
    x[0, 0, 0] = 3.25
    params = link.encode(
        link.Link(
            preset="classic",
            shape=(2, 3, 5),
            softmax=True,
            x=x.numpy(),
            w=w.numpy(),
            tab="steps",
            step=3,
        )
    )
    at = _app(params)
    assert at.toggle(key="pg_softmax").value is True
    assert at.session_state["pg_step"] == 3
    expected = attnviz.weighted_sum(x, w, normalize="softmax").numpy().astype(np.float64)
    torch.testing.assert_close(_result(at), expected, rtol=1e-4, atol=1e-4)
    assert "Step 4 of" in _texts(at)


def test_a_link_naming_a_preset_opens_it_with_its_options():
    at = _app({"p": "softmax"})  # raw scores: softmaxed, as the preset menu sets it
    assert at.toggle(key="pg_softmax").value is True
    x, w = examples.raw_scores()
    expected = attnviz.weighted_sum(x, w, normalize="softmax").numpy().astype(np.float64)
    torch.testing.assert_close(_result(at), expected, rtol=1e-4, atol=1e-4)
    at = _app({"p": "padded"})
    assert at.toggle(key="pg_use_mask").value is True
    editors = [d.value for d in at.dataframe if d.proto.editing_mode]
    assert all(dtype == np.bool_ for dtype in editors[-1].dtypes)  # the mask: checkboxes
    assert _app({"p": "softmax", "sm": "0"}).toggle(key="pg_softmax").value is False


def test_link_restores_the_open_tab_and_cell():
    at = _app({"tab": "cell", "cell": "1_4"})
    assert "weighted[1, 4]" in _texts(at)


def test_the_browser_starts_every_example_widget_where_the_session_is():
    """Each widget's default (what a browser shows when it has no value of its own) is the value
    the link set. With Streamlit's defaults, a run replaced before the browser drew it (on a
    busy machine) left the size boxes at 1, and the next cell edit resized the example to
    1 x 1 x 1. Sizes, seed, cell and preset differ from the defaults and from each other."""
    params = link.encode(
        link.Link(
            preset="random",
            shape=(3, 4, 6),
            seed=7,
            softmax=True,
            use_mask=True,
            tab="cell",
            cell=(1, 4),
        )
    )
    at = _app(params)
    for key, want in (("pg_b", 3.0), ("pg_t", 4.0), ("pg_h", 6.0), ("pg_seed", 7.0)):
        box = at.number_input(key=key)
        assert (box.value, box.proto.default) == (want, want), key
    for key in ("pg_softmax", "pg_use_mask"):
        assert at.toggle(key=key).proto.default is True, key
    presets = list(examples.PRESETS)
    for key, index in (("pg_preset", presets.index("random")), ("pg_cell_b", 1), ("pg_cell_h", 4)):
        assert at.selectbox(key=key).proto.default == index, key
    assert _app(link.encode(link.Link(all_steps=True))).toggle(key="pg_all").proto.default is True
    typed = "(net_output * att_scores[:, :, None]).sum(1)"
    box = _app(link.encode(link.Link(tab="expr", expr=typed))).text_input(key="pg_expr")
    assert (box.value, box.proto.default) == (typed, typed)


def test_address_bar_follows_an_edit():
    at = _app()
    _edit(at, editor_key("x", _version(at), 0), {"edited_rows": {0: {"h0": 0.125}}})
    restored = link.decode(dict(at.query_params), tabs=tuple(k for k, _ in TABS))
    assert restored.x is not None and restored.x[0, 0, 0] == 0.125


TAMPERED_LINKS = [
    {"p": "nope"},
    {"s": "2x3"},
    {"s": "9x9x99"},
    {"s": "0x3x5"},
    {"x": "1_2_3"},
    {"x": "_".join(["0.1"] * 29) + "_nan"},
    {"x": "_".join(["0.1"] * 29) + "_1e309"},
    {"w": "a_b_c_d_e_f"},
    {"m": "11_1"},
    {"sm": "yes"},
    {"step": "-1"},
    {"step": "1e9"},
    {"tab": "<script>"},
    {"cell": "7_7"},
    {"seed": "1.5"},
    {"x": "0.1_" * 5000},
    {"e": "x" * 500},
    {"e": "net_output\n+ 1"},
]


@pytest.mark.parametrize("params", TAMPERED_LINKS, ids=lambda p: str(p)[:30])
def test_tampered_or_truncated_link_keeps_the_defaults_with_a_message(params):
    at = _app(params)
    assert "This link could not be read" in " ".join(w.value for w in at.warning)
    torch.testing.assert_close(_result(at), _expected(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "params",
    [{"p": "[win](https://evil.example)"}, {"slide": "<img src=x>"}, {"tab": "www.evil.example"}],
)
def test_text_echoed_from_a_link_cannot_become_a_link(params):
    at = _app(params, page="walkthrough" if "slide" in params else None)
    message = " ".join(w.value for w in at.warning)
    assert message and "](" not in message and "://" not in message and "www." not in message
    assert re.search(r"(?<!\\)<", message) is None  # any < is escaped: shown, never HTML


def test_text_typed_in_a_cell_cannot_become_a_link():
    at = _app()
    _edit(at, editor_key("w", _version(at)), {"edited_rows": {0: {"w0": "[a](https://e.example)"}}})
    message = " ".join(e.value for e in at.error)
    assert "is not a number" in message and "](" not in message and "://" not in message


# ---- the sections ------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "label"), TABS)
def test_every_section_renders(key, label):
    at = _app()
    at.session_state["pg_tab"] = label
    at.run()
    assert not at.exception and not at.error
    assert dict(at.query_params).get("tab", "steps") == key


def test_next_and_back_step_through_the_broadcast():
    at = _app()
    at.button(key="pg_next").click().run()
    at.button(key="pg_next").click().run()
    assert at.session_state["pg_step"] == 2
    assert "Step 3 of 8" in _texts(at) and "att_scores[..., None]" in _texts(at)
    assert at.query_params["step"] == "2"
    at.button(key="pg_back").click().run()
    assert at.session_state["pg_step"] == 1


def test_every_step_shows_its_shape_and_strides():
    at = _app()
    table = next(m.value for m in at.markdown if "| strides |" in m.value)
    header, _, *rows = [
        [c.strip() for c in line.strip("|").split("|")] for line in table.split("\n")
    ]
    columns = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    assert len(rows) == 8
    assert "(2, 3, 1)" in columns["shape"] and "(15, 5, 1)" in columns["strides"]
    assert "(3, 1, 0)" in columns["strides"]  # the stretch: stride 0 on the hidden axis


def test_all_steps_at_once_draws_every_step():
    at = _app()
    at.toggle(key="pg_all").set_value(True).run()
    charts = [e for e in at.get("plotly_chart") if str(e.proto.id).find("pg_fig_step") >= 0]
    assert len(charts) == 8


def test_picking_a_result_cell_writes_out_its_sum():
    at = _app()
    at.session_state["pg_tab"] = dict(TABS)["cell"]
    at.run()
    at.selectbox(key="pg_cell_b").set_value(1).run()
    at.selectbox(key="pg_cell_h").set_value(3).run()
    x, w = examples.classic()
    text = _texts(at)
    assert "weighted[1, 3]" in text
    assert f"{float(attnviz.weighted_sum(x, w)[1, 3]):.4f}"[:5] in text


def test_equivalent_forms_all_agree():
    at = _app()
    at.session_state["pg_tab"] = dict(TABS)["forms"]
    at.run()
    table = next(d.value for d in at.dataframe if "agrees" in d.value.columns)
    assert set(table.index) == set(attnviz.METHODS)
    assert set(table["agrees"]) == {"✓"}


def test_mistakes_gallery_shows_the_silent_trap():
    at = _app()
    at.session_state["pg_tab"] = dict(TABS)["mistakes"]
    at.run()
    labels = at.selectbox(key="pg_mistake").options
    assert any("silently wrong" in o for o in labels) and any("error" in o for o in labels)


def test_picking_a_mistake_shows_torchs_message():
    at = _app({"tab": "mistakes"})
    labels = at.selectbox(key="pg_mistake").options
    failing = next(i for i, o in enumerate(labels) if "(error)" in o)
    at.selectbox(key="pg_mistake").set_value(failing).run()
    assert not at.exception
    assert "must match the size of tensor" in " ".join(c.value for c in at.code)


def test_gradient_view_switches_part():
    at = _app()
    at.session_state["pg_tab"] = dict(TABS)["grad"]
    at.run()
    assert "matches autograd" in _texts(at)
    at.session_state["pg_grad_part"] = "net_output"
    at.run()
    assert "att_scores[..., None] * upstream" in _texts(at)


def test_expand_vs_repeat_counts_bytes():
    at = _app()
    at.session_state["pg_tab"] = dict(TABS)["view"]
    at.run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    table = next(t for t in spec["data"] if t["type"] == "table")
    codes, new_bytes = table["cells"]["values"][0], table["cells"]["values"][4]
    by_code = dict(zip(codes, new_bytes, strict=True))
    assert any(v == "0" for k, v in by_code.items() if "expand" in k)
    assert any(v == str(2 * 3 * 5 * 4) for k, v in by_code.items() if "repeat" in k)
    # the table once, in the figure (it was also drawn as a dataframe): only the editors and
    # the result remain
    assert not [d for d in at.dataframe if "new bytes" in d.value.columns]


def test_share_section_gives_link_snippet_and_downloads():
    at = _app()
    at.session_state["pg_tab"] = dict(TABS)["share"]
    at.run()
    codes = [c.value for c in at.code]
    assert any("?p=classic" in c for c in codes)
    assert any(c.startswith("import torch") for c in codes)
    keys = {e.proto.id for e in at.get("download_button")}
    assert len(keys) == 5


def test_share_section_links_the_same_example_in_the_walkthrough():
    at = _app({"p": "random", "s": "3x4x5", "seed": "7", "step": "2"})
    at.session_state["pg_tab"] = dict(TABS)["share"]
    at.run()
    walk = next(c.value for c in at.code if "/walkthrough?" in c.value)
    query = dict(pair.split("=", 1) for pair in walk.split("?", 1)[1].split("&"))
    assert query == {"p": "random", "s": "3x4x5", "seed": "7"}  # the example, not the view
    assert [p.proto.label for p in at.get("page_link")] == ["Open in the Walkthrough"]


def test_weights_applied_are_shown_with_four_decimals():
    at = _app({"mk": "1", "m": "110_100"})
    applied = next(cells for _, cols, cells in _tables(at) if cols[0] == "w0")
    shown = [v for row in applied for v in row]
    assert shown and all(re.fullmatch(r"-?\d+\.\d{4}", v) for v in shown), shown  # never "0"
    assert "0.0000" in shown  # the masked word: 0 shown as 0.0000, beside 0.3038


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.44, "0.4400"),
        (0.7718, "0.7718"),
        (1.0, "1.0000"),
        (1 / 3, "0.3333"),  # not the float32 noise 0.33333334
        (0.082744725, "0.0827"),
        (-0.0, "0.0000"),
        (-999999.99, "-1000000.0000"),
        (1e-5, "1e-05"),  # too small for four decimals: its own digits, never 0.0000
        (-2.5e-5, "-2.5e-05"),
    ],
)
def test_editor_cells_show_four_decimals_unless_too_small(value, shown):
    assert edit.cell_text(value) == shown


@pytest.mark.parametrize(
    ("preset", "size"), [("uniform", None), ("padded", None), ("random", ("t", 7))]
)
def test_no_table_shows_float_noise(preset, size):
    """Editors and result tables show at most four decimals, on presets whose weights are 1/T
    and after a resize (where float32's shortest spelling has eight or nine)."""
    at = _app()
    at.selectbox(key="pg_preset").set_value(preset).run()
    if size:
        at.number_input(key=f"pg_{size[0]}").set_value(size[1]).run()
    assert not at.exception
    cells = [v for _, _, rows in _tables(at) for row in rows for v in row]
    cells += [str(v) for e in at.dataframe for v in e.value.to_numpy().ravel()]
    assert cells and all(re.fullmatch(r"-?\d+\.\d{4}|True|False", v) for v in cells), cells


def test_back_and_next_name_the_step_they_go_to():
    """A press whose callback Streamlit runs twice moves one step: the buttons carry their target."""
    at = _app()
    at.button(key="pg_next").click().run()
    meta = at.session_state._state._state._new_widget_state.widget_metadata
    bound = {k: meta[at.button(key=k).id].callback_args for k in ("pg_back", "pg_next")}
    assert at.session_state["pg_step"] == 1
    assert bound == {"pg_back": (0,), "pg_next": (2,)}


def test_the_first_page_run_freezes_what_it_loaded(monkeypatch):
    """A server process's modules and caches of code stay out of full collections (a ~210 ms
    pause each, every few dozen interactions of a class): frozen after the first page run."""
    import gc

    from attnviz.ui import longlived

    _app()
    assert longlived._after_first_run and gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    freezes = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(1))
    _app()  # a second run freezes nothing more
    # frozen objects that die leave the permanent generation, so the count may only fall
    assert not freezes and gc.get_freeze_count() <= frozen


def test_step_by_step_says_what_the_trap_computes_when_t_equals_h():
    at = _app({"p": "square", "s": "2x4x4"})
    assert "so `(net_output * att_scores[:, None]).sum(axis=1)` would not raise" in _texts(at)
    ex = examples.preset("square", 2, 4, 4)
    trap = (ex.net_output * ex.att_scores[:, None]).sum(dim=1)  # (B,T,H) * (B,1,T): no error
    right = attnviz.weighted_sum(ex.net_output, ex.att_scores)
    shown = [
        np.array(c, dtype=np.float64)
        for a, cols, c in _tables(at)
        if cols == ["h0", "h1", "h2", "h3"]
    ]
    # the result box, the trap's numbers, the right numbers for comparison
    torch.testing.assert_close(shown[1], trap.double().numpy(), rtol=0, atol=5.1e-5)
    torch.testing.assert_close(shown[2], right.double().numpy(), rtol=0, atol=5.1e-5)
    assert not np.allclose(shown[1], shown[2], atol=1e-3)


def test_the_trap_note_says_right_by_luck_on_uniform_weights():
    at = _app({"p": "uniform", "s": "2x4x4"})
    assert "even gives the right numbers" in _texts(at)


def test_no_trap_note_where_t_differs_from_h():
    assert "would not raise" not in _texts(_app())
