"""The Playground's "Your expression" tab: type any expression, see every sub-expression's shape,
and a verdict: is it the example's ``weighted``, and if not, what went wrong.

Evaluated by ``attnviz.sandbox`` (never eval) and judged by ``attnviz.verdict.judge_expression``:
on the example and on hidden random inputs, so an answer right only by the example's accident is
not called right. A mistake (a wrong shape, wrong numbers, right here only, an expression that
does not fit) is shown as an error; what the box does not run is shown neutrally ("Not supported
here"). Messages are plain text (``sandbox.plain``: no backtick shown). The cache holds
only what the page shows (texts, shapes, a small preview, the wrong cells), never a tensor, with
bounded entries, a bounded size per entry and a time to live. Visitor text is shown only through
st.code / st.text, never as Markdown.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attnviz import figures, sandbox, verdict
from attnviz.ui import _controls, figure, link

EXPRESSIONS = (
    "(net_output * att_scores[..., None]).sum(axis=1)",
    'torch.einsum("bth,bt->bh", net_output, att_scores)',
    "torch.bmm(att_scores[:, None, :], net_output)[:, 0, :]",
    "net_output * att_scores",
    "att_scores[..., None]",
    "att_scores[:, None]",
    "(net_output * att_scores[:, None, :]).sum(1)",
    "(net_output * att_scores[..., None]).mean(1)",
    "(net_output * att_scores[..., None]).sum(axis=0)",
    "att_scores[:, None, :] @ net_output",
)
MAX_EXPR_CHARS = link.MAX_EXPR_CHARS
MAX_ROWS = 80  # steps shown (and cached) per expression
MAX_TEXT = 160  # characters of a step's source or note kept in the cache
MAX_PREVIEW = 600  # elements of a result drawn (and cached) as a figure
HELP = (
    "Indexing with ints, slices, None and ... (several, as torch reads them), + - * / @, "
    ".sum/.mean/.amax/.softmax/.unsqueeze/.view/.expand/.size/.double/.round and other pure "
    "tensor methods, * unpacking (x.view(*x.shape, 1)), einsum(...) with any number of operands, "
    "torch.einsum/torch.bmm/torch.sum(...). Anything else is not supported here."
)  # what the box runs; tests/test_sandbox_claims.py checks it against the registry
_SAID = "not supported here: "
CACHE_ENTRIES = 32
CACHE_TTL = 600  # seconds


def _clip(text: str, n: int = MAX_TEXT) -> str:
    return text if len(text) <= n else text[: n - 4] + " ..."


def _rows(steps: tuple) -> list[dict[str, str]]:
    rows = [
        {
            "sub-expression": _clip(s.source),
            "shape": "" if s.shape is None else str(s.shape),
            "dtype": "" if s.dtype is None else str(s.dtype).replace("torch.", ""),
            "what happens": _clip(s.note),
        }
        for s in steps[:MAX_ROWS]
    ]
    if len(steps) > MAX_ROWS:
        rows.append({"sub-expression": f"... and {len(steps) - MAX_ROWS} more", "shape": "",
                     "dtype": "", "what happens": ""})  # fmt: skip
    return rows


def summarise(
    expr: str, x: np.ndarray, w: np.ndarray, mask: np.ndarray | None, normalize: str | None
) -> dict:
    """Evaluate and judge expr on the example -> what the page shows, as plain small values.

    x (B, T, H), w raw scores (B, T), mask (B, T) bool or None, normalize None or "softmax".
    Keys: expr; error (None, or {message, kind, span}); rows (the steps table); result (None,
    or {shape, dtype, text}); preview (None, or the result as nested lists, at most MAX_PREVIEW
    numbers); verdict (None, or {outcome, message, mistake, wrong, expected_shape, reasons}:
    wrong lists (b, h) cells, reasons why it is right on this example only).
    """
    variables = {"net_output": torch.from_numpy(x), "att_scores": torch.from_numpy(w)}
    if mask is not None:
        variables["mask"] = torch.from_numpy(mask)
    out: dict = {"expr": expr, "error": None, "rows": [], "result": None, "preview": None,
                 "verdict": None}  # fmt: skip
    try:
        tr = sandbox.evaluate(expr, variables)
    except sandbox.SandboxError as e:
        out["error"] = {"message": e.message, "kind": e.kind.value, "span": e.span}
        out["rows"] = _rows(e.trace.steps)
        return out
    out["rows"] = _rows(tr.steps)
    result = tr.result
    if isinstance(result, torch.Tensor):
        out["result"] = {
            "shape": tuple(result.shape),
            "dtype": str(result.dtype).replace("torch.", ""),
            "text": "",
        }
        if 1 <= result.ndim <= 3 and result.numel() <= MAX_PREVIEW:
            out["preview"] = result.detach().to(torch.float64).tolist()
    else:
        out["result"] = {"shape": None, "dtype": None, "text": _clip(repr(result))}
    m = None if mask is None else variables["mask"]
    v = verdict.judge_expression(
        expr, tr, variables["net_output"], variables["att_scores"], mask=m, normalize=normalize
    )
    wrong = [] if v.wrong is None else [tuple(ix) for ix in v.wrong.nonzero().tolist()]
    out["verdict"] = {
        "outcome": v.outcome.value,
        "message": v.message,
        "mistake": None if v.mistake is None else v.mistake.title,
        "wrong": wrong,
        "expected_shape": v.expected_shape,
        "reasons": [_clip(r) for r in v.reasons],
    }
    return out


@st.cache_data(max_entries=CACHE_ENTRIES, ttl=CACHE_TTL, show_spinner=False)
def _summary(
    expr: str, x: np.ndarray, w: np.ndarray, mask: np.ndarray | None, normalize: str | None
) -> dict:
    return summarise(expr, x, w, mask, normalize)


def _pick_expression() -> None:
    """The pick list's value is used only if it is one of the options (a tampered value is not)."""
    picked = st.session_state.get("pg_expr_pick")
    if isinstance(picked, str) and picked in EXPRESSIONS:
        st.session_state["pg_expr"] = picked


def _headline(v: dict) -> str:
    """The verdict's first line, from its outcome (plain text: no Markdown in it)."""
    outcome = verdict.Outcome(v["outcome"])
    shape = v["expected_shape"]
    if outcome is verdict.Outcome.RIGHT:
        return "Right: this is weighted, on this example and on hidden random inputs."
    if outcome is verdict.Outcome.EXAMPLE_ONLY:
        return "Right on this example only: not weighted on other inputs."
    if outcome is verdict.Outcome.WRONG_NUMBERS:
        title = "Right shape, wrong numbers"
        return f"{title}: {v['mistake']}." if v["mistake"] else f"{title}."
    if outcome is verdict.Outcome.OTHER_SHAPE:
        return f"Wrong shape: weighted has shape {shape}."
    return f"This is not a tensor; weighted is a tensor of shape {shape}."


def _show_verdict(s: dict, expr: str) -> None:
    """Right: success. Every mistake (right here only, wrong numbers, wrong shape): one error
    colour. Not a tensor (a shape or a number, while exploring): neutral."""
    v = s["verdict"]
    outcome = verdict.Outcome(v["outcome"])
    head = _headline(v)
    if outcome is verdict.Outcome.RIGHT:
        st.success(head, icon=":material/check_circle:")
    elif outcome is verdict.Outcome.NOT_A_TENSOR:
        st.info(head, icon=":material/info:")
    else:
        st.error(head, icon=":material/cancel:")
    st.text(sandbox.plain(v["message"]))


def _error_head(err: dict) -> str:
    """The heading of an expression that did not run: a mistake, or what the box does not run."""
    kind = sandbox.ErrorKind(err["kind"])
    if kind in sandbox.NOT_SUPPORTED:
        return {
            sandbox.ErrorKind.LIMIT: "Too large to run here:",
            sandbox.ErrorKind.TIME: "Too slow to run here:",
        }.get(kind, "Not supported here:")
    return "This expression has a mistake:"


def _error_message(err: dict) -> str:
    """Why it did not run, plain (without the heading's words again)."""
    message = err["message"]
    if sandbox.ErrorKind(err["kind"]) in sandbox.NOT_SUPPORTED and message.startswith(_SAID):
        message = message[len(_SAID) :]  # the heading says it already
    return sandbox.plain(message)


def _say(expr: str, text: str, *, asked: bool) -> None:
    """The verdict in the page's live region: once per expression and verdict (a rerun says
    nothing), not the one already there when the tab opened. asked: the visitor has just asked
    for this expression (it differs from the one this section showed before), so its verdict is
    said even where the page never had the chance to note the one before it (two runs that
    followed each other too closely on a busy server: the script notes a verdict only between
    runs, and a verdict it meets first is taken as the one the tab opened on)."""
    key = f"{expr}\n{text}"
    figure.announce(text, "verdict", rank=figure.RESULT, key=key, first=asked)


def _show_error(err: dict) -> None:
    """A mistake in the expression (shapes that do not fit, a typo...): an error. What the box
    does not run (outside its language, too big, too slow): neutral, "Not supported here"."""
    head = _error_head(err)
    if sandbox.ErrorKind(err["kind"]) in sandbox.NOT_SUPPORTED:
        st.info(head, icon=":material/info:")
    else:
        st.error(head, icon=":material/cancel:")
    st.code(_error_message(err), language=None, wrap_lines=True)


def section(
    x: torch.Tensor, w: torch.Tensor, mask: torch.Tensor | None, normalize: str | None
) -> None:
    """Type any expression over net_output and att_scores (and mask): every sub-expression's
    shape, where and why shapes clash, and whether the result is the example's weighted."""
    ss = st.session_state
    typed = ss.get("pg_expr")  # as the session holds it (a forged one too)
    if "pg_expr" in ss and (not isinstance(typed, str) or len(typed) > MAX_EXPR_CHARS):
        ss["pg_expr"] = str(typed or "")[:MAX_EXPR_CHARS]
    start = _controls.held(
        "pg_expr", EXPRESSIONS[0], lambda v: isinstance(v, str) and len(v) <= MAX_EXPR_CHARS
    )
    if "pg_expr_pick" in ss and ss["pg_expr_pick"] not in (None, *EXPRESSIONS):
        ss["pg_expr_pick"] = None  # a tampered pick never reaches the widget
    picked = st.selectbox(
        "Start from a right or a wrong form",
        EXPRESSIONS,
        index=None,
        placeholder="Pick one, or type below",
        key="pg_expr_pick",
        on_change=_pick_expression,
    )
    if picked is not None and "pg_expr_pick" not in ss.get("drawn_once", ()):
        # its callback (Streamlit runs none for a widget not drawn yet), its verdict then said
        # as a change from the expression before it (see _say)
        ss["pg_expr_shown"] = start
        _pick_expression()
    _controls.drawn("pg_expr_pick", None)
    names = f"net_output {tuple(x.shape)} and att_scores {tuple(w.shape)}"
    if mask is not None:
        names += f" and mask {tuple(mask.shape)}"
    expr = st.text_input(
        f"Expression over {names}",
        value=start,  # a link's expression, even on a busy machine (see _controls.held)
        key="pg_expr",
        max_chars=MAX_EXPR_CHARS,
        help=HELP,
    )
    expr = str(expr or "")[:MAX_EXPR_CHARS]
    # (sent changed as the first drawing's value, it is said as a change in the run drawn() makes)
    first = "pg_expr" not in ss.get("drawn_once", ())
    shown, ss["pg_expr_shown"] = ss.get("pg_expr_shown"), start if first else expr
    _controls.drawn("pg_expr", start)
    asked = shown is not None and shown != expr  # not the tab's first drawing in this session
    what = "weighted_sum(net_output, att_scores"
    what += ", mask=mask" if mask is not None else ""
    what += ', normalize="softmax"' if normalize == "softmax" else ""
    st.caption(
        f"Judged against {what}) -> (B, H), in float64, on this example and on hidden random "
        "inputs (the same shape, one with T == H, one with B = 1)."
    )
    if not expr.strip():
        st.info("Type an expression, for example the first one in the pick list above.")
        _say(expr, "", asked=asked)
        return
    xn = x.detach().numpy()
    wn = w.detach().numpy()
    mn = None if mask is None else mask.detach().numpy()
    s = _summary(expr, xn, wn, mn, normalize)
    err = s["error"]
    if err is not None:
        if err["span"] is not None and "\n" not in expr:
            st.code(sandbox.pointer(expr, tuple(err["span"])), language=None)
        _show_error(err)
        _say(expr, f"{_error_head(err)} {_error_message(err)}", asked=asked)
        if s["rows"]:
            st.caption("What was evaluated before that:")
            st.dataframe(pd.DataFrame(s["rows"]), width="stretch", hide_index=True)
        return
    res = s["result"]
    if res["shape"] is not None:
        st.code(f"Result: shape {res['shape']}, {res['dtype']}", language=None)
    else:
        st.code(f"Result: {res['text']}", language=None)
    _show_verdict(s, expr)
    shape = f"shape {res['shape']}" if res["shape"] is not None else res["text"]
    reasons = s["verdict"]["reasons"]  # why it is right on this example only
    said = f"Result: {shape}. {_headline(s['verdict'])}" + (f" {reasons[0]}" if reasons else "")
    _say(expr, said, asked=asked)
    st.dataframe(pd.DataFrame(s["rows"]), width="stretch", hide_index=True)
    if s["preview"] is not None:
        value = np.asarray(s["preview"], dtype=np.float64)
        wrong = s["verdict"]["wrong"]
        phone = st.session_state.get("pg_style") == figures.PHONE.name  # the page's screen
        fig = figures.tensor_figure(
            value,
            title=figures.short_title(expr),  # cut between tokens, never inside one
            axis_names=tuple(f"axis {i}" for i in range(value.ndim)),
            name="expression",
            highlight=wrong,
            highlight_note="outlined: the cells that differ from weighted" if wrong else None,
            style=figures.PHONE if phone else None,
        )
        # the summary quotes the expression: figure.show escapes it, never Markdown
        figure.show(fig, "pg_fig_expr", style=figures.PHONE.name if phone else "screen")
