"""The Playground: edit the example, see `weighted` at once, then take the one-liner apart.

    weighted = (net_output * att_scores[..., None]).sum(axis=1)   # (B,T,H) * (B,T,1) -> (B,H)

State (set once behind the ``pg_ready`` guard): ``pg_x`` (B, T, H), ``pg_w`` (B, T) and ``pg_m``
(B, T) bool hold the last valid example as float32/bool numpy arrays; ``pg_base`` is what the
editors were built from and ``pg_version`` is bumped whenever that base is replaced, so that the
editors start afresh (their keys carry the version). Edits are parsed from each editor's edit dict
by ``attnviz.ui.edit``; a bad cell gives a message beside its table and the last valid example stays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

import attnviz
from attnviz import examples
from attnviz.errors import AttnvizError
from attnviz.ui import _controls, edit, link, sections
from attnviz.ui.safe import inert

TABS = sections.TABS  # (url key, label)


def editor_key(name: str, version: int, sentence: int | None = None) -> str:
    """The key of one editor: ``pg_x{version}_{sentence}``, ``pg_w{version}``, ``pg_m{version}``."""
    return f"pg_{name}{version}" + ("" if sentence is None else f"_{sentence}")


@st.cache_data(max_entries=64, show_spinner=False)
def _preset_arrays(
    name: str, b: int, t: int, h: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, bool]:
    """-> x (B, T, H) float32, w (B, T) float32, mask (B, T) bool, softmax?, uses a mask?"""
    ex = examples.preset(name, b, t, h, seed=seed)
    mask = ex.mask if ex.mask is not None else torch.ones(b, t, dtype=torch.bool)
    return (
        ex.net_output.numpy().astype(np.float32),
        ex.att_scores.numpy().astype(np.float32),
        mask.numpy(),
        ex.normalize == "softmax",
        ex.mask is not None,
    )


def _set_example(x: np.ndarray, w: np.ndarray, m: np.ndarray) -> None:
    ss = st.session_state
    ss["pg_x"], ss["pg_w"], ss["pg_m"] = x, w, m
    ss["pg_base"] = {"x": x, "w": w, "m": m}
    ss["pg_version"] = ss.get("pg_version", 0) + 1


def _size() -> tuple[int, int, int, int]:
    """(B, T, H, seed) from the widgets, clamped: a tampered client can send any number."""
    ss = st.session_state
    limits = (("pg_b", examples.MAX_B), ("pg_t", examples.MAX_T), ("pg_h", examples.MAX_H))
    b, t, h = (min(max(int(ss[k]), 1), most) for k, most in limits)
    return b, t, h, min(max(int(ss["pg_seed"]), 0), 999_999)


def _on_preset() -> None:
    ss = st.session_state
    b, t, h, seed = _size()
    x, w, m, softmax, use_mask = _preset_arrays(ss["pg_preset"], b, t, h, seed)
    ss["pg_softmax"], ss["pg_use_mask"] = softmax, use_mask
    _set_example(x, w, m)


def _on_resize() -> None:
    """New shape: start from the preset at that shape and keep every old value that still fits."""
    ss = st.session_state
    b, t, h, seed = _size()
    x, w, m, _, _ = _preset_arrays(ss["pg_preset"], b, t, h, seed)
    x, w, m = x.copy(), w.copy(), m.copy()
    ob, ot, oh = ss["pg_x"].shape
    kb, kt, kh = min(b, ob), min(t, ot), min(h, oh)
    x[:kb, :kt, :kh] = ss["pg_x"][:kb, :kt, :kh]
    w[:kb, :kt] = ss["pg_w"][:kb, :kt]
    m[:kb, :kt] = ss["pg_m"][:kb, :kt]
    _set_example(x, w, m)


def _init_state() -> None:
    """Once per session: the example, options and step from the link, or the defaults."""
    ss = st.session_state
    if ss.get("pg_ready"):
        return
    problem = None
    try:
        lk = link.decode(dict(st.query_params), tabs=tuple(k for k, _ in TABS))
    except AttnvizError as e:
        lk, problem = link.Link(), f"This link could not be read: {e}. Showing the defaults."
    b, t, h = lk.shape
    x, w, m, _, _ = _preset_arrays(lk.preset, b, t, h, lk.seed)
    ss["pg_preset"], ss["pg_seed"] = lk.preset, lk.seed
    ss["pg_b"], ss["pg_t"], ss["pg_h"] = b, t, h
    ss["pg_softmax"], ss["pg_use_mask"] = lk.softmax, lk.use_mask
    ss["pg_tab"] = dict(TABS).get(lk.tab, TABS[0][1])
    ss["pg_step"] = lk.step
    # widgets inside tabs: kept aside (see _controls.remembered), drawn when their tab opens
    ss["keep_pg_all"] = lk.all_steps
    ss["keep_pg_cell_b"], ss["keep_pg_cell_h"] = lk.cell
    if lk.expr:
        ss["keep_pg_expr"] = lk.expr
    _set_example(
        x if lk.x is None else lk.x,
        w if lk.w is None else lk.w,
        m if lk.mask is None else lk.mask,
    )
    ss["pg_notice"] = problem
    ss["pg_ready"] = True


def _frame(values: np.ndarray, rows: list[str], cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame(edit.display_values(values), index=rows, columns=cols)


def _reset_editors(message: str) -> None:
    """A tampered editor state: rebuild every editor from the last valid example and say why."""
    ss = st.session_state
    ss["pg_notice"] = message
    _set_example(ss["pg_x"], ss["pg_w"], ss["pg_m"])
    st.rerun()


def _editor(
    name: str,
    base: np.ndarray,
    key: str,
    rows: list[str],
    cols: list[str],
    *,
    label: str,
    prefix: tuple[int, ...],
    what: str,
) -> np.ndarray | None:
    """One table: draw it, parse its edits. -> the edited block, or None (message shown) if bad."""
    state = st.session_state.get(key)
    try:
        edit.check_structure(state, base.shape[0], cols, name=name, what=what)
    except AttnvizError as e:
        _reset_editors(f"{e} The tables have been reset to the last valid example.")
    flag = base.dtype == np.bool_
    column = st.column_config.CheckboxColumn if flag else st.column_config.NumberColumn
    config = {c: column(c, **({} if flag else {"format": "%.4f"})) for c in cols}
    frame = pd.DataFrame(base, index=rows, columns=cols) if flag else _frame(base, rows, cols)
    st.caption(label)
    try:
        st.data_editor(frame, key=key, column_config=config, num_rows="fixed", width="content")
    except Exception:  # a state the table itself cannot apply
        _reset_editors(f"The table {name} sent something unreadable; it has been reset.")
    try:
        return edit.apply_edits(base, state, name=name, prefix=prefix, columns=cols, what=what)
    except AttnvizError as e:
        st.error(inert(f"{e} The results below still show the last valid example."), icon="⚠️")
        return None


def _editors(choice: _controls.ExampleChoice) -> bool:
    """Draw every table, parse the edits; store them as the example if all are valid."""
    ss = st.session_state
    base, version = ss["pg_base"], ss["pg_version"]
    b, t, h = base["x"].shape
    left, right = st.columns([1.25, 1], gap="large")
    blocks: list[np.ndarray | None] = []
    with left:
        st.markdown(f"##### `net_output` {(b, t, h)}: {b} sentences × {t} words × {h} hidden")
        for i in range(b):
            blocks.append(
                _editor(
                    "net_output",
                    base["x"][i],
                    editor_key("x", version, i),
                    edit.row_labels("word", t),
                    edit.col_labels("h", h),
                    label=f"**Sentence {i}**: `net_output[{i}]` {(t, h)}, one row per word",
                    prefix=(i,),
                    what=f"net_output[{i}] must keep T = {t} words",
                )
            )
    with right:
        st.markdown(f"##### `att_scores` {(b, t)}: one weight per word")
        w = _editor(
            "att_scores",
            base["w"],
            editor_key("w", version),
            edit.row_labels("sentence", b),
            edit.col_labels("w", t),
            label="Raw scores, softmaxed over words" if choice.softmax else "Weights per word",
            prefix=(),
            what=f"att_scores must keep B = {b} sentences",
        )
        m = base["m"]
        if choice.use_mask:
            st.markdown(f"##### `mask` {(b, t)}: ticked = a real word")
            m = _editor(
                "mask",
                base["m"],
                editor_key("m", version),
                edit.row_labels("sentence", b),
                edit.col_labels("w", t),
                label="Unticked words are padding: they get weight 0",
                prefix=(),
                what=f"mask must keep B = {b} sentences",
            )
        result_box = st.container()
    if any(blk is None for blk in blocks) or w is None or m is None:
        ok = False
    else:
        ss["pg_x"] = np.stack(blocks).astype(np.float32)  # (B, T, H)
        ss["pg_w"], ss["pg_m"] = w.astype(np.float32), m.astype(bool)
        ok = True
    with result_box:
        _result(ok)
    return ok


def _tensors() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, str | None]:
    """The current example as tensors: x (B, T, H), w (B, T), mask (B, T) or None, normalize."""
    ss = st.session_state
    mask = torch.from_numpy(ss["pg_m"]) if ss["pg_use_mask"] else None
    normalize = "softmax" if ss["pg_softmax"] else None
    return torch.from_numpy(ss["pg_x"]), torch.from_numpy(ss["pg_w"]), mask, normalize


def _result(ok: bool) -> None:
    x, w, mask, normalize = _tensors()
    weighted = attnviz.weighted_sum(x, w, mask=mask, normalize=normalize)  # (B, H)
    b, h = weighted.shape
    st.markdown(f"##### Result `weighted` {(b, h)}: one vector per sentence")
    st.dataframe(
        _frame(weighted.numpy(), edit.row_labels("sentence", b), edit.col_labels("h", h)),
        column_config={
            c: st.column_config.NumberColumn(c, format="%.4f") for c in edit.col_labels("h", h)
        },
        width="content",
    )
    if mask is not None or normalize:
        applied = attnviz.attention_weights(w, mask=mask, normalize=normalize)  # (B, T)
        st.caption("Weights actually applied (after softmax and mask):")
        st.dataframe(
            _frame(
                applied.numpy(), edit.row_labels("sentence", b), edit.col_labels("w", w.shape[1])
            ),
            width="content",
        )
    if not ok:
        st.info("Showing the last valid example until the marked cells are fixed.")


def _share(choice: _controls.ExampleChoice) -> dict[str, str]:
    """The query parameters that restore what is on screen; written to the address bar."""
    ss = st.session_state
    px, pw, pm, _, _ = _preset_arrays(choice.preset, choice.b, choice.t, choice.h, choice.seed)
    same = ss["pg_x"].shape == px.shape
    tab = next((k for k, label in TABS if label == ss.get("pg_tab")), "")
    expr = str(_controls.current("pg_expr", "") or "")[: link.MAX_EXPR_CHARS]
    lk = link.Link(
        preset=choice.preset,
        shape=ss["pg_x"].shape,
        seed=choice.seed,
        softmax=choice.softmax,
        use_mask=choice.use_mask,
        x=None if same and np.array_equal(ss["pg_x"], px) else ss["pg_x"],
        w=None if same and np.array_equal(ss["pg_w"], pw) else ss["pg_w"],
        mask=None if same and np.array_equal(ss["pg_m"], pm) else ss["pg_m"],
        tab="" if tab == TABS[0][0] else tab,
        step=int(ss.get("pg_step", 0)),
        all_steps=bool(_controls.current("pg_all", False)),
        cell=(int(_controls.current("pg_cell_b", 0)), int(_controls.current("pg_cell_h", 0))),
        expr=expr if tab == "expr" and expr != sections.EXPRESSIONS[0] else "",
    )
    params = link.encode(lk)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
    return params


def page() -> None:
    """The Playground page."""
    _init_state()
    ss = st.session_state
    st.markdown("## Attention-weighted aggregation, through broadcasting")
    st.code(
        "weighted = (net_output * att_scores[..., None]).sum(axis=1)  # (B,T,H) * (B,T,1) -> (B,H)",
        language="python",
    )
    b, t, h = ss["pg_x"].shape
    st.markdown(
        f"Each of the **{b} sentences** has **{t} words**, each word a vector of **{h} hidden** "
        f"numbers (`net_output`); `att_scores` gives every word one weight. The result `weighted` "
        f"is, per sentence, the weighted sum of its word vectors: {(b, t, h)} and {(b, t)} "
        f"→ {(b, h)}. Edit any number and watch the result; then take the line apart below."
    )
    if ss.get("pg_notice"):
        st.warning(inert(ss["pg_notice"]), icon="⚠️")
        ss["pg_notice"] = None
    choice = _controls.example_controls(_on_preset, _on_resize)
    _editors(choice)
    x, w, mask, normalize = _tensors()
    tabs = st.tabs([label for _, label in TABS], key="pg_tab", on_change="rerun")
    for (key, _), tab in zip(TABS, tabs, strict=True):
        if tab.open:
            with tab:
                sections.render(key, x, w, mask, normalize)
    params = _share(choice)
    if ss.get("pg_tab") == dict(TABS)["share"]:
        with tabs[[k for k, _ in TABS].index("share")]:
            sections.share(x, w, mask, normalize, params)
