"""The Playground: edit the example, see `weighted` at once, then take the one-liner apart.

    weighted = (net_output * att_scores[..., None]).sum(axis=1)   # (B,T,H) * (B,T,1) -> (B,H)

State (set once behind the ``pg_ready`` guard): ``pg_x`` (B, T, H), ``pg_w`` (B, T) and ``pg_m``
(B, T) bool hold the last valid example as float32/bool numpy arrays; ``pg_base`` is what the
editors were built from and ``pg_version`` is bumped whenever that base is replaced, so that the
editors start afresh (their keys carry the version). Edits are parsed from each editor's edit dict
by ``attnviz.ui.edit``: cells are text, parsed strictly; a refused cell keeps what was typed and
gets a message under its table saying what and why, and the last valid example stays in use.

From the editors on, the example travels as one ``current.Current`` value; the sections show what
``attnviz.ui.cached`` returns for it. Every callback runs inside ``boundary.callback``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from attnviz import examples
from attnviz.errors import AttnvizError
from attnviz.ui import _controls, cached, edit, expression, figure, link, live_screen, sections
from attnviz.ui.boundary import before_callbacks, callback
from attnviz.ui.current import Current
from attnviz.ui.safe import inert

TABS = sections.TABS  # (url key, label)
# the example's controls whose change rebuilds the example (their callbacks): first_values
BOXES = ("pg_preset", "pg_b", "pg_t", "pg_h", "pg_seed")
# Our own read-only tables scroll sideways where a phone is narrower than they are (the editors'
# grids scroll on their own), and the page's title fits a phone.
_STYLE = """
<style>
[class*="st-key-pg_"] [data-testid="stMarkdownContainer"] table {
  display: block; overflow-x: auto; max-width: 100%;
}
@media (max-width: 640px) {
  .st-key-pg_title h1 { font-size: 1.5rem; }
  [class*="st-key-pg_"] [data-testid="stMarkdownContainer"] :is(th, td) {
    padding: 0.3rem 0.45rem; font-size: 0.9rem;
  }
  [data-testid="stMainBlockContainer"] { padding-left: 0.9rem; padding-right: 0.9rem; }
}
</style>
"""
numbers_markdown = sections.numbers_markdown
CELL_WIDTH = 92  # px: "-999999.9999" (the widest value the limits allow) fits


def editor_key(name: str, version: int, sentence: int | None = None) -> str:
    """The key of one editor: ``pg_x{version}_{sentence}``, ``pg_w{version}``, ``pg_m{version}``."""
    return f"pg_{name}{version}" + ("" if sentence is None else f"_{sentence}")


def _set_example(x: np.ndarray, w: np.ndarray, m: np.ndarray) -> None:
    ss = st.session_state
    ss["pg_x"], ss["pg_w"], ss["pg_m"] = x, w, m
    ss["pg_base"] = {"x": x, "w": w, "m": m}
    ss["pg_version"] = ss.get("pg_version", 0) + 1


def _size() -> tuple[int, int, int, int]:
    """(B, T, H, seed) from the widgets, clamped: a tampered client can send any number. A size
    that is not a number, or not there, is the one on screen: once, on a busy machine, a cell
    edit's run found all three gone, and the example fell to 1 x 1 x 1 (an edit lost)."""
    limits = (("pg_b", examples.MAX_B), ("pg_t", examples.MAX_T), ("pg_h", examples.MAX_H))
    x = st.session_state.get("pg_x")
    shown = x.shape if isinstance(x, np.ndarray) and x.ndim == 3 else (1, 1, 1)
    b, t, h = (
        _controls.whole(k, 1, most, int(n), stored=float)
        for (k, most), n in zip(limits, shown, strict=True)
    )
    return b, t, h, _controls.whole("pg_seed", 0, 999_999, 0, stored=float)


def _preset_name() -> str:
    name = st.session_state.get("pg_preset")
    if name not in examples.PRESETS:
        raise AttnvizError("That preset does not exist; showing the classic example.")
    return str(name)


def _on_preset() -> None:
    """A new seed: the preset again at the same shape (edits are replaced)."""
    ss = st.session_state
    b, t, h, seed = _size()
    name = _preset_name()
    x, w, m, softmax, use_mask = cached.preset(name, b, t, h, seed)
    ss["pg_softmax"], ss["pg_use_mask"] = softmax, use_mask
    _set_example(x, w, m)
    ss["pg_why"] = f"the {name} preset, seed {seed}"


def _on_pick_preset() -> None:
    """A preset picked from the menu: at its own shape where it has one (``examples.OPENS_AT``:
    the square preset opens at T == H), else at the shape on screen."""
    opens_at = examples.OPENS_AT.get(_preset_name())
    if opens_at is not None:
        ss = st.session_state
        ss["pg_b"], ss["pg_t"], ss["pg_h"] = (float(n) for n in opens_at)  # float widgets
    _on_preset()


def _on_resize() -> None:
    """New shape: start from the preset at that shape and keep every old value that still fits."""
    ss = st.session_state
    b, t, h, seed = _size()
    ob, ot, oh = ss["pg_x"].shape
    if (b, t, h) == (ob, ot, oh):  # the same shape (a box that held no number): nothing to do
        return
    x, w, m, _, _ = cached.preset(_preset_name(), b, t, h, seed)
    x, w, m = x.copy(), w.copy(), m.copy()
    kb, kt, kh = min(b, ob), min(t, ot), min(h, oh)
    x[:kb, :kt, :kh] = ss["pg_x"][:kb, :kt, :kh]
    w[:kb, :kt] = ss["pg_w"][:kb, :kt]
    m[:kb, :kt] = ss["pg_m"][:kb, :kt]
    _set_example(x, w, m)
    ss["pg_why"] = f"{b} sentences, {t} words, {h} hidden"


def _init_state() -> None:
    """Once per session: the example, options and step from the link, or the defaults."""
    ss = st.session_state
    if ss.get("pg_ready"):
        return
    problem = ss.get("pg_notice")  # a callback's message survives the reset it caused
    try:
        lk = link.decode(dict(st.query_params), tabs=tuple(k for k, _ in TABS))
    except AttnvizError as e:
        lk, problem = link.Link(), f"This link could not be read: {e}. Showing the defaults."
    b, t, h = lk.shape
    x, w, m, _, _ = cached.preset(lk.preset, b, t, h, lk.seed)
    # what the example's controls start at (float widgets: see whole()), given to them as they
    # are drawn, not set as their values: see first_values
    ss["pg_starts"] = dict(
        zip(BOXES, (lk.preset, float(b), float(t), float(h), float(lk.seed)), strict=True),
        pg_softmax=lk.softmax,
        pg_use_mask=lk.use_mask,
        pg_tab=dict(TABS).get(lk.tab, TABS[0][1]),  # the tabs' too (see _controls.held)
    )
    ss["pg_unseen"] = True
    ss["pg_step"] = lk.step
    # widgets inside tabs: kept aside (see _controls.held), drawn when their tab opens
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


def first_values(choice: _controls.ExampleChoice) -> None:
    """After the example's controls are drawn for the first time in a session: where they hold
    other values than the link's, adopt them, as their callbacks would have.

    A session rebuilt on another replica after a failover starts from the link, and its first
    message can be a box changed on the replica that died (a new preset, size or seed).
    Streamlit runs no callback for a widget the session has not drawn, nor shows its value before
    it is drawn; so the link's values are not set as the boxes' values (``_init_state``), only
    drawn as their start, and what the browser sent for a box is then its value. Such a value has
    passed none of the checks made before a box is drawn, so the page runs again at once
    (``pg_adopt``): the checks first, then the change, then the page."""
    ss = st.session_state
    if not ss.pop("pg_unseen", False):
        return
    starts = ss["pg_starts"]
    drawn = (choice.preset, *(ss.get(key) for key in BOXES[1:]))
    if any(a != b for a, b in zip(drawn, (starts[key] for key in BOXES), strict=True)):
        ss["pg_adopt"] = True
        st.rerun()


def _adopt(
    *, on_pick: Callable[[], None], on_seed: Callable[[], None], on_resize: Callable[[], None]
) -> None:
    """The run after ``first_values`` found a box changed: each box checked as in every run
    (a value checked away is no change), then the change applied by the box's callback."""
    ss = st.session_state
    if not ss.pop("pg_adopt", False):
        return
    starts = ss["pg_starts"]
    _controls.choose("pg_preset", list(examples.PRESETS), starts["pg_preset"])
    _controls.whole("pg_seed", 0, 999_999, int(starts["pg_seed"]), stored=float)
    b, t, h, seed = _size()
    if ss["pg_preset"] != starts["pg_preset"]:
        act = on_pick
    elif seed != starts["pg_seed"]:
        act = on_seed
    elif (b, t, h) != ss["pg_x"].shape:
        act = on_resize
    else:
        return
    # the change is said, as after a callback: no example was seen before it (_announce_result)
    ss.setdefault("pg_seen", (None,) * 6)
    act()


def _rows(axis: str, n: int) -> pd.RangeIndex:
    """An editor's rows: the tensor's own index 0..n-1 under the axis's name ("word"). A range
    index is not editable in the table (no pencil on that column), and Streamlit checks it in
    O(1) where it hashes a label index again on every run of every editor."""
    return pd.RangeIndex(n, name=axis)


def _text_frame(key: str, base: np.ndarray, rows: pd.RangeIndex, cols: list[str]) -> pd.DataFrame:
    """The table an editor starts from, as text cells: built once per editor (its key names one
    version of the example, and the editor shows its edits on top), then kept in the session for
    that version, so a cell edit does not rebuild every table (st.data_editor copies its data)."""
    kept = st.session_state["pg_frames"]
    if key not in kept:
        kept[key] = pd.DataFrame(edit.cell_texts(base), index=rows, columns=cols)
    return kept[key]


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
    rows: pd.RangeIndex,
    cols: list[str],
    *,
    label: str,
    prefix: tuple[int, ...],
    what: str,
) -> np.ndarray | None:
    """One table: draw it, parse its edits. -> the edited block, or None (message shown) if bad.

    Number cells are text columns: what a visitor types reaches the server as typed (a number
    column would coerce ``1e30`` or ``0,5`` in the browser) and is parsed by ``edit.parse_number``."""
    state = st.session_state.get(key)
    try:
        edit.check_structure(state, base.shape[0], cols, name=name, what=what)
    except AttnvizError as e:
        _reset_editors(f"{e} The tables have been reset to the last valid example.")
    flag = base.dtype == np.bool_
    if flag:
        config = {c: st.column_config.CheckboxColumn(c) for c in cols}
        frame = pd.DataFrame(base, index=rows, columns=cols)
    else:
        config = {
            c: st.column_config.TextColumn(c, width=CELL_WIDTH, max_chars=edit.MAX_TEXT)
            for c in cols
        }
        frame = _text_frame(key, base, rows, cols)
    st.caption(label)
    try:
        st.data_editor(frame, key=key, column_config=config, num_rows="fixed", width="content")
    except Exception:  # a state the table itself cannot apply
        _reset_editors(f"The table {name} sent something unreadable; it has been reset.")
    try:
        return edit.apply_edits(base, state, name=name, prefix=prefix, columns=cols, what=what)
    except AttnvizError as e:
        refused = f"{e} The results below still show the last valid example."
        st.error(inert(refused), icon="⚠️")
        figure.announce(f"Refused: {refused}", "refused", rank=figure.RESULT)
        return None


def _editors(choice: _controls.ExampleChoice) -> Current:
    """Draw every table, parse the edits; store them as the example if all are valid.
    -> the example in use (the edited one, or the last valid one while a cell is refused)."""
    ss = st.session_state
    base, version = ss["pg_base"], ss["pg_version"]
    if ss.get("pg_frames_version") != version:  # a new base: the old version's tables go
        ss["pg_frames"], ss["pg_frames_version"] = {}, version
    b, t, h = base["x"].shape
    left, right = st.columns([1.25, 1], gap="large")
    blocks: list[np.ndarray | None] = []
    with left:
        st.markdown(f"## `net_output` {(b, t, h)}: {b} sentences × {t} words × {h} hidden")
        for i in range(b):
            blocks.append(
                _editor(
                    "net_output",
                    base["x"][i],
                    editor_key("x", version, i),
                    _rows("word", t),
                    edit.col_labels("h", h),
                    label=f"**Sentence {i}**: `net_output[{i}]` {(t, h)}, one row per word",
                    prefix=(i,),
                    what=f"net_output[{i}] must keep T = {t} words",
                )
            )
    with right:
        st.markdown(f"## `att_scores` {(b, t)}: one weight per word")
        w = _editor(
            "att_scores",
            base["w"],
            editor_key("w", version),
            _rows("sentence", b),
            edit.col_labels("w", t),
            label="Raw scores, softmaxed over words" if choice.softmax else "Weights per word",
            prefix=(),
            what=f"att_scores must keep B = {b} sentences",
        )
        m = base["m"]
        if choice.use_mask:
            st.markdown(f"## `mask` {(b, t)}: ticked = a real word")
            m = _editor(
                "mask",
                base["m"],
                editor_key("m", version),
                _rows("sentence", b),
                edit.col_labels("w", t),
                label="Unticked words are padding: they get weight 0",
                prefix=(),
                what=f"mask must keep B = {b} sentences",
            )
        result_box = st.container(key="pg_result")
    ok = not (any(blk is None for blk in blocks) or w is None or m is None)
    if ok:
        x_new = np.stack(blocks).astype(np.float32)  # (B, T, H)
        edited = _edited(x_new, w, m)
        if edited is not None:
            ss["pg_why"] = edited
        if not np.array_equal(x_new, ss["pg_x"]):
            ss["pg_x"] = x_new
        if not np.array_equal(w, ss["pg_w"]):
            ss["pg_w"] = w.astype(np.float32)
        if not np.array_equal(m, ss["pg_m"]):
            ss["pg_m"] = m.astype(bool)
    ex = Current.of(ss["pg_x"], ss["pg_w"], ss["pg_m"], choice.softmax, choice.use_mask)
    with result_box:
        _result(ex, ok)
    return ex


def _edited(x: np.ndarray, w: np.ndarray, m: np.ndarray) -> tuple[str, int, int] | None:
    """What an edit of the tables changed, against the example in use: (what, b, h) of the one
    cell edited (h -1 where a whole sentence's result moves), else None (no change, or several)."""
    ss = st.session_state
    for name, old, new in (("net_output", ss["pg_x"], x), ("att_scores", ss["pg_w"], w),
                           ("mask", ss["pg_m"], m)):  # fmt: skip
        if old.shape != new.shape:
            return None
        cells = np.argwhere(old != new)
        if len(cells) == 1:
            at = tuple(int(i) for i in cells[0])
            value = new[at]
            if new.dtype == np.bool_:
                said = "a real word" if value else "padding"
            else:
                said = f"{float(value):.6g}"
            return f"{name}{list(at)} is now {said}", at[0], at[2] if len(at) == 3 else -1
        if len(cells) > 1:
            return f"{len(cells)} numbers of {name} changed", -1, -1
    return None


def _announce_result(ex: Current) -> None:
    """Say "Result updated: ..." once after each change of the example (an edit, a preset, a
    shape, an option), with what changed; a rerun that changes nothing says nothing."""
    ss = st.session_state
    b, t, h = ex.shape
    seen = (ex.shape, ex.softmax, ex.use_mask, ex.x.tobytes(), ex.w.tobytes(), ex.m.tobytes())
    why = ss.pop("pg_why", None)
    if ss.get("pg_seen") is not None and ss["pg_seen"] != seen:
        last = ss["pg_seen"]
        if isinstance(why, tuple):
            what, row, col = why
            if row >= 0 and col >= 0:
                what += f", so weighted[{row}, {col}] is {float(ex.weighted[row, col]):.4f}"
        elif why is None and (last[1], last[2]) != (ex.softmax, ex.use_mask):
            what = f"softmax {'on' if ex.softmax else 'off'}, mask {'on' if ex.use_mask else 'off'}"
        else:
            what = why or "the example changed"
        ss["pg_said_n"] = ss.get("pg_said_n", 0) + 1
        ss["pg_said"] = f"Result updated: weighted {(b, h)}; {what}."
    ss["pg_seen"] = seen
    if ss.get("pg_said"):
        figure.announce(ss["pg_said"], "result", rank=figure.RESULT, key=str(ss["pg_said_n"]))


def _result(ex: Current, ok: bool) -> None:
    b, t, h = ex.shape
    _announce_result(ex)
    # a heading and its table in one element: an edit redraws them for every student of a class
    # (a plain table costs the server and the browser far less than a data grid)
    head = f"## Result `weighted` {(b, h)}: one vector per sentence"
    st.markdown(head + "\n\n" + numbers_markdown(ex.weighted, "sentence", edit.col_labels("h", h)))
    if not ex.plain:
        st.caption("Weights actually applied (after softmax and mask):")
        st.markdown(numbers_markdown(ex.applied, "sentence", edit.col_labels("w", t)))
    if not ok:
        st.info("Showing the last valid example until the marked cells are fixed.")


def _params(ex: Current) -> dict[str, str]:
    """The query parameters that restore what is on screen."""
    ss = st.session_state
    b, t, h = ex.shape
    preset = ss["pg_preset"] if ss.get("pg_preset") in examples.PRESETS else "classic"
    seed = _controls.whole("pg_seed", 0, 999_999, 0, stored=float)
    px, pw, pm, _, _ = cached.preset(preset, b, t, h, seed)
    tab = next((k for k, label in TABS if label == ss.get("pg_tab")), "")
    expr = str(_controls.current("pg_expr", "") or "")[: link.MAX_EXPR_CHARS]
    cell = (_controls.current("pg_cell_b", 0), _controls.current("pg_cell_h", 0))
    lk = link.Link(
        preset=preset,
        shape=(b, t, h),
        seed=seed,
        softmax=ex.softmax,
        use_mask=ex.use_mask,
        x=None if np.array_equal(ex.x, px) else ex.x,
        w=None if np.array_equal(ex.w, pw) else ex.w,
        mask=None if np.array_equal(ex.m, pm) else ex.m,
        tab="" if tab == TABS[0][0] else tab,
        step=int(ss.get("pg_step", 0)),
        all_steps=_controls.current("pg_all", False) is True,
        cell=tuple(int(c) if type(c) is int else 0 for c in cell),
        expr=expr if tab == "expr" and expr != expression.EXPRESSIONS[0] else "",
    )
    return link.encode(lk)


def sync_link(ex: Current) -> dict[str, str]:
    """Write the link of what is on screen to the address bar (when it changed). -> the params."""
    params = _params(ex)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
    return params


def page() -> None:
    """The Playground page."""
    _init_state()
    ss = st.session_state
    acts = {
        "on_pick": callback(_on_pick_preset, "pg_"),
        "on_seed": callback(_on_preset, "pg_"),
        "on_resize": callback(_on_resize, "pg_"),
    }
    _adopt(**acts)  # before anything drawn from the example
    ss["pg_page_done"] = False  # set again at the end: later runs of a section alone are fragments
    st.html(_STYLE)
    st.container(key="pg_title").markdown("# Attention-weighted aggregation, through broadcasting")
    # the browser's screen, as the Walkthrough learns it: figures stacked and sized for a phone
    screen = live_screen.screen()
    ss["pg_style"] = screen.style.name
    st.code(
        "weighted = (net_output * att_scores[..., None]).sum(axis=1)  # (B,T,H) * (B,T,1) -> (B,H)",
        language="python",
        wrap_lines=True,  # a phone shows the whole line
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
        if screen.reported:  # not before: the browser's report reruns the page on its own
            ss["pg_notice"] = None
    choice = _controls.example_controls(
        acts["on_pick"], acts["on_resize"], on_seed=acts["on_seed"], starts=ss["pg_starts"]
    )
    first_values(choice)
    _workspace(choice)
    ss["pg_page_done"] = True


@st.fragment
def _workspace(choice: _controls.ExampleChoice) -> None:
    """The editors, the result and the tabs. A fragment: a cell edit reruns this part of the
    page, not the title and the example's controls above it (a new preset, size or option
    reruns the page)."""
    ss = st.session_state
    page_run = not ss.get("pg_page_done")
    ss["pg_page_done"] = False
    _tabs(_editors(choice))
    ss["pg_page_done"] = not page_run


@st.fragment
def _tabs(ex: Current) -> None:
    """The sections, one tab each, only the open one drawn. A fragment: switching tabs reruns
    this part of the page, not the editors above it."""
    labels = [label for _, label in TABS]
    _controls.choose("pg_tab", labels, TABS[0][1])
    start = _controls.held("pg_tab", st.session_state["pg_starts"]["pg_tab"], labels.__contains__)
    tabs = st.tabs(labels, default=start, key="pg_tab", on_change="rerun")  # see held
    _controls.drawn("pg_tab", start)
    for (key, _), tab in zip(TABS, tabs, strict=True):
        if tab.open:
            with tab:
                sections.render(key, ex)
    params = sync_link(ex)
    if st.session_state.get("pg_tab") == dict(TABS)["share"]:
        with tabs[[k for k, _ in TABS].index("share")]:
            sections.share(ex, params)


def sync_view(ex: Current) -> None:
    """After a section reran on its own: only the view parameters (step, all, cell) can have
    changed; bring those up to date in the address bar."""
    ss, qp = st.session_state, st.query_params
    step = ss.get("pg_step", 0)
    cell = (_controls.current("pg_cell_b", 0), _controls.current("pg_cell_h", 0))
    want = {
        "step": str(step) if type(step) is int and step > 0 else None,
        "all": "1" if _controls.current("pg_all", False) is True else None,
        "cell": f"{cell[0]}_{cell[1]}"
        if all(type(c) is int for c in cell) and cell != (0, 0)
        else None,
    }
    for key, value in want.items():
        if value is None:
            if key in qp:
                del qp[key]
        elif qp.get(key) != value:
            qp[key] = value


sections.after_fragment(sync_view)  # Next, a picked cell...: the address bar follows
before_callbacks("pg_", _init_state)  # a session rebuilt elsewhere: its first click's callback
