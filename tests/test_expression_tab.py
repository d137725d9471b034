"""The Playground's "Your expression" tab through AppTest: it traces, explains, and judges."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import examples
from attnviz.ui import expression
from attnviz.ui.sections import TABS
from tests.test_app import _result

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 90


def _app(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _expr_tab() -> AppTest:
    at = _app()
    at.session_state["pg_tab"] = dict(TABS)["expr"]
    at.run()
    return at


def _texts(at: AppTest) -> str:
    parts = [e.value for e in (*at.error, *at.warning, *at.info, *at.success)]
    parts += [m.value for m in (*at.markdown, *at.caption, *at.code, *at.text)]
    return "\n".join(str(p) for p in parts)


def _type(at: AppTest, expr: str) -> AppTest:
    at.text_input(key="pg_expr").input(expr).run()
    assert not at.exception, at.exception
    return at


def test_link_restores_the_expression_box():
    at = _app({"tab": "expr", "e": "net_output * att_scores"})
    assert at.text_input(key="pg_expr").value == "net_output * att_scores"
    assert "5 meets 3" in _texts(at)
    assert at.query_params["e"] == "net_output * att_scores"


def test_a_tab_remembers_its_controls_while_closed():
    at = _app({"tab": "expr"})
    _type(at, "att_scores.T")
    for label in (dict(TABS)["steps"], dict(TABS)["forms"], dict(TABS)["expr"]):
        at.session_state["pg_tab"] = label
        at.run()
    assert at.text_input(key="pg_expr").value == "att_scores.T"
    assert "Result: shape (3, 2)" in _texts(at)


def test_picking_a_form_fills_the_expression_box():
    at = _app({"tab": "expr"})
    at.selectbox(key="pg_expr_pick").set_value("att_scores[:, None]").run()
    assert at.text_input(key="pg_expr").value == "att_scores[:, None]"
    assert "Result: shape (2, 1, 3)" in _texts(at)


def test_a_tampered_pick_never_reaches_the_box(monkeypatch):
    state = {"pg_expr": "att_scores", "pg_expr_pick": "net_output + " * 20_000 + "net_output"}
    monkeypatch.setattr(expression.st, "session_state", state)
    expression._pick_expression()
    assert state["pg_expr"] == "att_scores"


def test_a_listed_pick_fills_the_box(monkeypatch):
    state = {"pg_expr": "att_scores", "pg_expr_pick": expression.EXPRESSIONS[3]}
    monkeypatch.setattr(expression.st, "session_state", state)
    expression._pick_expression()
    assert state["pg_expr"] == expression.EXPRESSIONS[3]


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("(net_output * att_scores[..., None]).sum(axis=1)", "Result: shape (2, 5)"),
        ("att_scores[..., None]", "Result: shape (2, 3, 1)"),
        ("net_output * att_scores", "5 meets 3"),
        ("net_output.__class__", "not allowed"),
        ("open('/etc/passwd')", "open"),
        ("net_output ** 10**9", ""),
        ("(" * 200, ""),
    ],
)
def test_expression_box_traces_or_explains(expr, says):
    at = _type(_expr_tab(), expr)
    assert says in _texts(at)
    x, w = examples.classic()
    torch.testing.assert_close(
        _result(at), attnviz.weighted_sum(x, w).numpy().astype(np.float64), rtol=1e-4, atol=1e-4
    )


def test_expression_box_shows_every_sub_expression_shape():
    at = _expr_tab()
    table = next(d.value for d in at.dataframe if "sub-expression" in d.value.columns)
    assert list(table["shape"]) == ["(2, 3, 5)", "(2, 3)", "(2, 3, 1)", "(2, 3, 5)", "(2, 5)"]


@pytest.mark.parametrize(
    "expr",
    [
        "(net_output * att_scores[..., None]).sum(axis=1)",
        'torch.einsum("bth,bt->bh", net_output, att_scores)',
        "torch.bmm(att_scores[:, None, :], net_output)[:, 0, :]",
    ],
)
def test_a_right_answer_gets_a_success(expr):
    at = _type(_expr_tab(), expr)
    assert len(at.success) == 1 and "Right" in at.success[0].value
    assert not at.error


@pytest.mark.parametrize(
    ("expr", "outcome"),
    [
        ("(net_output * att_scores[..., None]).mean(1)", "a mean instead of a sum"),
        ("(net_output * att_scores[..., None]).sum(axis=0)", "Wrong shape"),
        ("net_output.sum(1)", "wrong numbers"),
    ],
)
def test_a_wrong_answer_never_gets_a_success(expr, outcome):
    at = _type(_expr_tab(), expr)
    assert not at.success
    assert outcome in _texts(at)


def test_wrong_cells_are_outlined_in_the_figure():
    at = _type(_expr_tab(), "(net_output * att_scores[..., None]).mean(1)")
    fig = at.get("plotly_chart")[0]
    assert "differ from weighted" in fig.proto.spec


def test_the_t_equals_h_trap_is_named_on_a_square_example():
    x, w = torch.rand(2, 3, 3), torch.rand(2, 3)
    s = expression.summarise(
        "(net_output * att_scores[:, None, :]).sum(1)", x.numpy(), w.numpy(), None, None
    )
    assert s["verdict"]["outcome"] == "right shape, wrong numbers"
    assert "T == H trap" in s["verdict"]["mistake"]
    assert len(s["verdict"]["wrong"]) > 0


def test_a_backtick_in_a_refusal_stays_text():
    at = _type(_expr_tab(), 'net_output["`**bold** :red[x]`"](1)')
    assert not at.exception
    assert not any("**bold**" in m.value for m in at.markdown)
    assert any("not allowed" in c.value for c in at.code)


def test_the_cached_summary_is_small_for_the_memory_attack():
    head = "(net_output.view(-1)[:,None]*att_scores[:1,:1].expand(1,33000))[:1,:1]"
    x, w = examples.classic()
    s = expression.summarise(head + ".T" * 28, x.numpy(), w.numpy(), None, None)
    assert s["error"] is None
    assert len(pickle.dumps(s)) < 64 * 1024  # the old cache entry pickled to about 119 MB


def test_the_box_offers_the_mask_and_judges_with_softmax_and_mask():
    x, w = torch.rand(2, 3, 5), torch.rand(2, 3)
    mask = np.array([[True, True, False], [True, False, True]])
    expr = (
        "(net_output * ((att_scores + (mask * 1.0 - 1) * 1e9).softmax(1) * mask)[..., None]).sum(1)"
    )
    s = expression.summarise(expr, x.numpy(), w.numpy(), mask, "softmax")
    assert s["error"] is None and s["verdict"]["outcome"] == "right"
    s = expression.summarise(
        "(net_output * att_scores.softmax(1)[..., None]).sum(1)", x.numpy(), w.numpy(), mask,
        "softmax",
    )  # fmt: skip
    assert s["verdict"]["mistake"] == "the mask is missing"


def test_a_cache_entry_stays_small_for_the_longest_expression():
    x, w = examples.classic()
    expr = " + ".join(["net_output.T.T"] * 26)[: expression.MAX_EXPR_CHARS]
    s = expression.summarise(expr, x.numpy(), w.numpy(), None, None)
    assert len(s["rows"]) <= expression.MAX_ROWS + 1
    assert len(pickle.dumps(s)) < 128 * 1024


def test_the_figure_description_quoting_the_expression_is_plain_text():
    at = _type(_expr_tab(), "(net_output * att_scores[..., None]).sum(1) * 1")
    # figure.show: the summary as escaped HTML text (never Markdown), beside its table
    summaries = [h.proto.body for h in at.get("html") if "attnviz-summary" in h.proto.body]
    assert any("Heatmap of shape (2, 5)" in b for b in summaries)
    assert any("att_scores[..., None]).sum(1) * 1" in b for b in summaries)
    assert not any("Heatmap" in c.value for c in at.caption)


# ---- judged beyond the example, in the page; the colours say mistake or not supported ------------


def _uniform_square(expr: str) -> AppTest:
    at = _app({"p": "uniform", "s": "2x4x4", "tab": "expr", "e": expr})
    assert at.text_input(key="pg_expr").value == expr
    return at


@pytest.mark.parametrize(
    ("expr", "because"),
    [
        ("net_output.mean(1)", "1/T = 1/4"),
        ("(net_output * att_scores[:, None]).sum(1)", "1/T = 1/4"),
        ("net_output.sum(1) / 4", "never uses att_scores"),
    ],
)
def test_an_answer_right_on_the_example_only_is_a_mistake_and_says_why(expr, because):
    at = _uniform_square(expr)
    assert not at.success
    assert len(at.error) == 1 and "Right on this example only" in at.error[0].value
    assert because in _texts(at)


def test_a_right_answer_on_the_uniform_square_example_is_right():
    at = _uniform_square("(net_output * att_scores.view(*att_scores.shape, 1)).sum(1)")
    assert len(at.success) == 1 and "hidden random inputs" in at.success[0].value
    assert not at.error


@pytest.mark.parametrize(
    "expr",
    [
        "(net_output * att_scores[..., None]).sum(axis=0)",  # a wrong shape
        "(net_output * att_scores[..., None]).sum(2)",  # the hidden axis summed: (2, 3)
        "net_output.sum(1)",  # wrong numbers
        "net_output * att_scores",  # shapes that clash
        "net_output.sum",  # a method not called
    ],
)
def test_every_mistake_has_the_same_colour(expr):
    at = _type(_expr_tab(), expr)
    assert len(at.error) == 1 and not at.warning and not at.success


@pytest.mark.parametrize(
    ("expr", "head"),
    [
        ("net_output.view(torch.int32)", "Not supported here"),
        ("net_output.sum(**{'dim': 1})", "Not supported here"),
        ("net_output.__class__", "Not supported here"),
        ("net_output[net_output > 0]", "Not supported here"),
        ("att_scores.repeat(1000, 1000)", "Too large to run here"),
    ],
)
def test_what_the_box_does_not_run_is_neutral(expr, head):
    at = _type(_expr_tab(), expr)
    assert not at.error and not at.warning and not at.success
    assert [i.value for i in at.info] == [head + ":"]
    assert "not defined" not in _texts(at)


@pytest.mark.parametrize(
    "expr",
    ["net_output * att_scores", "net_output.view(torch.int32)", "att_scores[..., 0, ..., 1]"],
)
def test_messages_show_no_raw_backticks(expr):
    at = _type(_expr_tab(), expr)
    shown = [c.value for c in at.code if c.value.splitlines()[0] != expr]  # not the pointer
    shown += [e.value for e in (*at.error, *at.info)] + [t.value for t in at.text]
    assert shown and not any("`" in v for v in shown), shown


@pytest.mark.parametrize(
    "expr",
    [
        "(net_output * att_scores.view(*att_scores.shape, 1)).sum(1)",
        "(net_output * att_scores.view(att_scores.size(0), att_scores.size(1), 1)).sum(1)",
        "(net_output.double() * att_scores.double()[..., None]).sum(1)",
        'torch.einsum("bth,bt,b,b,b->bh", net_output, att_scores, att_scores[:, 0] * 0 + 1, '
        "att_scores[:, 0] * 0 + 1, att_scores[:, 0] * 0 + 1)",
        "(net_output[..., ..., :] * att_scores[..., None, ...]).sum(1)",
    ],
)
def test_right_forms_written_as_students_write_them_get_a_success(expr):
    at = _type(_expr_tab(), expr)
    assert len(at.success) == 1 and not at.error and not at.info


def test_the_verdict_is_said_once_per_expression_not_on_opening_the_tab():
    from tests.test_a11y import said

    at = _expr_tab()
    text, key, first = said(at)["verdict"]
    assert text.startswith("Result: shape (2, 5). Right: this is weighted") and not first
    _type(at, "(net_output * att_scores[..., None]).mean(1)")
    text, key2, _ = said(at)["verdict"]
    assert text.startswith("Result: shape (2, 5). Right shape, wrong numbers"), text
    assert key2 != key
    at.run()  # a rerun with the same expression: the same key, nothing said again
    assert said(at)["verdict"][1] == key2
    _type(at, "net_output * att_scores")
    assert said(at)["verdict"][0].startswith("This expression has a mistake: "), said(at)
    _type(at, "net_output.cuda()")
    assert said(at)["verdict"][0].startswith("Not supported here: "), said(at)
    _type(at, "")
    assert said(at)["verdict"][0] == ""  # the slot stays: the next expression is news
