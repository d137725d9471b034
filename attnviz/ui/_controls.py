"""Widget groups: each draws its widgets (every one with a key) and returns their values."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from attnviz import examples
from attnviz.ui.boundary import callback


def held(key: str, default: object, fits: Callable[[object], bool] | None = None) -> object:
    """Before drawing the widget ``key``: what to draw it with (its value, index or default),
    never set as its value. The value the session holds (checked before, as every run does),
    else the one kept when it was last drawn (``remember``: Streamlit forgets the state of a
    widget that a run does not draw, one in a closed tab), else ``default``; ``default`` too
    where ``fits`` says the value no longer fits (a kept cell past a smaller example).

    Set as the widget's value, the kept one would replace what the browser sent: a session rebuilt
    on another replica after a failover holds no value for the widget, and its first message can
    carry one changed on the replica that died. ``drawn`` then runs the page again."""
    value = current(key, default)
    return value if fits is None or fits(value) else default


def drawn(key: str, start: object) -> None:
    """After drawing the widget ``key`` with ``start`` (``held``): keep its value
    (``remember``); and where the browser sent another value on the widget's first drawing in
    this session (a failover's first message, see ``held``), run the page again at once, so that
    the checks made before the widget is drawn, and all drawn from it, see that value."""
    ss = st.session_state
    remember(key)
    seen = ss.setdefault("drawn_once", set())
    if key not in seen:
        seen.add(key)
        if ss.get(key) != start:
            st.rerun()


def remember(key: str) -> None:
    """After drawing the widget `key`: keep its value for when it is drawn again."""
    st.session_state[f"keep_{key}"] = st.session_state.get(key)


def choose(key: str, options: Sequence[object], default: object) -> None:
    """Before drawing the choice widget ``key``: a value that is not one of ``options`` (a
    tampered client sends any string) becomes ``default``. Checked by value and type."""
    ss = st.session_state
    if key in ss and not any(type(ss[key]) is type(o) and ss[key] == o for o in options):
        ss[key] = default


def whole(key: str, lo: int, hi: int, default: int, *, stored: type = int) -> int:
    """Before drawing the number widget ``key``: its value as an int clamped to [lo, hi]
    (``default`` for anything that is not a finite number), kept in session state as ``stored``.

    The size and seed boxes are float widgets showing whole numbers (``stored=float``): Streamlit
    turns what the browser sends for an int widget into an int before any app code runs, and a
    forged NaN or infinity makes that fail; a float widget takes any double."""
    ss = st.session_state
    n = whole_of(ss.get(key, default), lo, hi, default)
    if ss.get(key) != n or type(ss.get(key)) is not stored:
        ss[key] = stored(n)
    return n


def whole_of(value: object, lo: int, hi: int, default: int) -> int:
    """``value`` as an int clamped to [lo, hi]; ``default`` for anything not a finite number."""
    n: int | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            n = int(value)
        except (OverflowError, ValueError):  # inf, nan
            n = None
    return default if n is None else min(max(n, lo), hi)


def flag(key: str) -> None:
    """Before drawing the toggle ``key``: anything but a bool becomes False."""
    ss = st.session_state
    if key in ss and not isinstance(ss[key], bool):
        ss[key] = False


def start_at(key: str, default: object) -> object:
    """The default to draw the widget ``key`` with: the value session state holds for it.

    A value set through session state reaches the browser only with the run that set it. When
    another run replaces that one before the browser draws the widget (the screen's report does,
    on a busy machine), the browser starts the widget at its default. With Streamlit's default
    (a size box's minimum, 1) the next cell edit's run carried B = T = H = 1, and the example
    fell to 1 x 1 x 1: the edit was lost. With this default, the browser starts where the
    session is. (Streamlit logs once that a widget had both; config.toml turns that off.)"""
    return st.session_state.get(key, default)


def current(key: str, default: object) -> object:
    """A widget's value, drawn this run or not."""
    ss = st.session_state
    return ss[key] if key in ss else ss.get(f"keep_{key}", default)


@dataclass(frozen=True)
class ExampleChoice:
    """What the example controls say: a preset at shape (b, t, h), its seed, and the options."""

    preset: str
    b: int
    t: int
    h: int
    seed: int
    softmax: bool
    use_mask: bool


def example_controls(
    on_preset: Callable[[], None],
    on_resize: Callable[[], None],
    *,
    on_seed: Callable[[], None] | None = None,
    starts: Mapping[str, object] | None = None,
) -> ExampleChoice:
    """Preset, B/T/H, seed, softmax and mask. on_preset rebuilds the example from the preset
    picked; on_resize keeps the values that still fit; on_seed (default on_preset) rebuilds it
    with a new seed. Every value held is checked before its widget is drawn; ``starts`` gives the
    values to draw them with where none is held yet (``first_values`` says why none can be)."""
    ss, starts = st.session_state, starts or {}
    choose("pg_preset", list(examples.PRESETS), "classic")
    for letter, most in zip(
        examples.AXIS_LETTERS, (examples.MAX_B, examples.MAX_T, examples.MAX_H), strict=True
    ):
        if f"pg_{letter.lower()}" in ss:
            whole(f"pg_{letter.lower()}", 1, most, 1, stored=float)
    if "pg_seed" in ss:
        whole("pg_seed", 0, 999_999, 0, stored=float)
    flag("pg_softmax")
    flag("pg_use_mask")
    cols = st.columns([2.2, 1, 1, 1, 1.2, 1.6, 1.6], vertical_alignment="bottom")
    preset = cols[0].selectbox(
        "Preset",
        list(examples.PRESETS),
        index=list(examples.PRESETS).index(
            start_at("pg_preset", starts.get("pg_preset", "classic"))
        ),
        key="pg_preset",
        on_change=on_preset,
        help="Start again from a prepared example; edits are replaced.",
    )
    sizes = []
    for col, letter, name, most in zip(
        cols[1:4],
        examples.AXIS_LETTERS,
        examples.AXIS_NAMES,
        (examples.MAX_B, examples.MAX_T, examples.MAX_H),
        strict=True,
    ):
        sizes.append(
            col.number_input(
                f"{letter} ({name if letter == 'H' else name + 's'})",
                min_value=1.0,
                max_value=float(most),
                value=start_at(f"pg_{letter.lower()}", starts.get(f"pg_{letter.lower()}", 1.0)),
                step=1.0,
                format="%.0f",
                key=f"pg_{letter.lower()}",
                on_change=on_resize,
                help=f"How many {name}s, 1 to {most}. Values that still fit are kept.",
            )
        )
    seed = cols[4].number_input(
        "Seed",
        min_value=0.0,
        max_value=999_999.0,
        value=start_at("pg_seed", starts.get("pg_seed", 0.0)),
        step=1.0,
        format="%.0f",
        key="pg_seed",
        on_change=on_preset if on_seed is None else on_seed,
        help="Seed of the random values (presets other than the 2x3x5 classic numbers).",
    )
    softmax = cols[5].toggle(
        "Softmax the scores",
        value=start_at("pg_softmax", starts.get("pg_softmax", False)),
        key="pg_softmax",
        help="Treat att_scores as raw scores and softmax them over words (dim=1) first.",
    )
    use_mask = cols[6].toggle(
        "Mask padding",
        value=start_at("pg_use_mask", starts.get("pg_use_mask", False)),
        key="pg_use_mask",
        help="Use the mask below: words marked off are padding and get weight 0.",
    )
    # drawn for the first time, a box holds what the browser sent, unchecked (first_values)
    b, t, h = (
        whole_of(s, 1, most, 1)
        for s, most in zip(sizes, (examples.MAX_B, examples.MAX_T, examples.MAX_H), strict=True)
    )
    return ExampleChoice(
        str(preset), b, t, h, whole_of(seed, 0, 999_999, 0), softmax is True, use_mask is True
    )


def step_controls(n_steps: int) -> tuple[int, bool]:
    """Back / Next through the steps, or all at once. Returns (step index, show all)."""
    whole("pg_step", 0, n_steps - 1, 0)
    step = int(st.session_state["pg_step"])

    def move(to: int) -> None:
        # the step the button was drawn for (Next on step i says i + 1), not a step from where
        # the page is now: a press whose callback Streamlit runs twice still moves once
        st.session_state["pg_step"] = min(max(to, 0), n_steps - 1)
        st.session_state["pg_step_moved"] = True

    # one row (a horizontal container: one block on the page, where columns are five)
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    flag("pg_all")
    show_all = held("pg_all", False) is True
    back = row.button(
        "Back",
        key="pg_back",
        on_click=callback(move, "pg_"),
        args=(step - 1,),
        disabled=show_all or step == 0,
        icon=":material/arrow_back:",
        width=110,
    )
    ahead = row.button(
        "Next",
        key="pg_next",
        on_click=callback(move, "pg_"),
        args=(step + 1,),
        disabled=show_all or step == n_steps - 1,
        icon=":material/arrow_forward:",
        width=110,
        type="primary",
    )
    if (back or ahead) and not st.session_state.pop("pg_step_moved", False):
        # A click whose callback could not run: the session was rebuilt on another replica
        # (compat.py, fragment_resume), where the buttons did not exist yet. The click still counts, and
        # the page runs again: the buttons above were drawn for the step before it, so the next
        # click on Next would have gone to the step it shows (a lost click). The move leaves
        # pg_step_moved set, so the rerun cannot count the click a second time.
        move(step - 1 if back else step + 1)
        st.rerun()
    st.session_state.pop("pg_step_moved", None)
    if not show_all:
        row.markdown(f"**Step {st.session_state['pg_step'] + 1} of {n_steps}**", width="content")
    row.space("stretch")
    row.toggle("All steps at once", value=show_all, key="pg_all")  # value: see held
    drawn("pg_all", show_all)
    return int(st.session_state["pg_step"]), bool(show_all)


def cell_controls(b: int, h: int) -> tuple[int, int]:
    """Pick one cell of the result weighted (B, H). Returns (sentence, hidden)."""
    starts = {}
    for key, n in (("pg_cell_b", b), ("pg_cell_h", h)):
        choose(key, range(n), 0)
        starts[key] = held(key, 0, lambda v, n=n: type(v) is int and 0 <= v < n)
    cols = st.columns(2)
    # index: see held (one of range(n))
    sb = cols[0].selectbox("Sentence b", range(b), index=starts["pg_cell_b"], key="pg_cell_b")
    sh = cols[1].selectbox("Hidden h", range(h), index=starts["pg_cell_h"], key="pg_cell_h")
    drawn("pg_cell_b", starts["pg_cell_b"])
    drawn("pg_cell_h", starts["pg_cell_h"])
    return int(sb), int(sh)
