"""The class's plan in the Walkthrough: the teacher picks one when starting a class (the built-in
questions, a file from the folder the operator configures with ``ATTNVIZ_PLAN_DIR``, or an
upload), and every screen of the class shows the plan's slides in the plan's order (those it
leaves out are not shown) and asks the plan's questions.

A plan travels in the class record (``attnviz.classroom.plan.with_plan``), so every replica and
every student builds the same questions; an upload is bounded in size and parsed strictly before
anything is started with it.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl

import streamlit as st

from attnviz.classroom import ClassError, Question, plan
from attnviz.classroom.deck import Slide
from attnviz.classroom.service import MAX_EXAMPLE_CHARS
from attnviz.errors import AttnvizError
from attnviz.ui import link
from attnviz.ui.safe import inert

BUILTIN = "The built-in questions"
UPLOAD = "A plan file I upload"
MAX_FOLDER_FILES = 50


def folder_plans() -> dict[str, Path]:
    """name -> path of the .toml plans in the operator's folder (none when it is not set)."""
    folder = os.environ.get("ATTNVIZ_PLAN_DIR", "")
    if not folder or not Path(folder).is_dir():
        return {}
    found = sorted(p for p in Path(folder).glob("*.toml") if p.is_file())[:MAX_FOLDER_FILES]
    return {p.stem: p for p in found}


@st.cache_resource(max_entries=32, show_spinner=False)
def _built(example: str) -> tuple[Question, ...]:
    """A class's questions: its plan built on its example (computed once per server)."""
    from attnviz.ui.link import example_tensors

    query = link.example_query(dict(parse_qsl(example)))
    return plan.build_questions(plan.plan_of(example), *example_tensors(query))


def class_questions(default: tuple[Question, ...]) -> tuple[Question, ...]:
    """The questions of the class this session is in (its plan's), else default."""
    ss = st.session_state
    if not ss.get("wt_code"):
        return default
    from attnviz.ui.live_store import room

    try:
        return _built(room().state(ss["wt_code"]).example)
    except (ClassError, AttnvizError):
        return default  # the poll says when the class is gone


@st.cache_data(max_entries=64, show_spinner=False)
def _order(example: str) -> tuple[str, ...]:
    """A class's slide order: the keys its plan names (parsed once per server and example)."""
    return plan.plan_of(example).slides


def class_slides(default: tuple[Slide, ...]) -> tuple[Slide, ...]:
    """The slides of the class this session is in, in its plan's order; else default (the deck's
    order, outside a class or when the class cannot be read: the poll says why)."""
    ss = st.session_state
    if not ss.get("wt_code"):
        return default
    from attnviz.ui.live_store import room

    try:
        arranged = plan.arrange(default, _order(room().state(ss["wt_code"]).example))
    except (ClassError, AttnvizError):
        return default
    return arranged or default


def start_slide(example: str, slide: int) -> tuple[int, int]:
    """(where, how many) for a class starting with example's plan while the teacher shows the
    deck's slide (1-based, the deck's order): the same slide at its place in the plan, or the
    plan's first slide when the plan leaves it out."""
    order = _order(example)
    key = plan.SLIDE_KEYS[min(max(slide, 1), len(plan.SLIDE_KEYS)) - 1]
    return (order.index(key) + 1 if key in order else 1), len(order)


def class_plan_text() -> str:
    """The TOML of the plan of the class this session is in (what "Save as a plan" downloads)."""
    from attnviz.ui.live_store import room

    try:
        return plan.plan_of(room().state(st.session_state["wt_code"]).example).text
    except (ClassError, plan.PlanError, KeyError):
        return plan.default_plan_text()


def picker() -> None:
    """Which plan the next class starts with: the built-in one, the operator's, or an upload."""
    ss = st.session_state
    options = [BUILTIN, *folder_plans(), UPLOAD]
    pick = st.selectbox("Questions", options, key="wt_plan_pick")
    ss["wt_plan_text"], ss["wt_plan_error"], ss["wt_plan_missing"] = None, "", False
    text: str | bytes | None = None
    if pick == UPLOAD:
        up = st.file_uploader(
            f"Plan file (.toml, at most {plan.MAX_PLAN_BYTES // 1000} KB)",
            type=["toml"],
            key="wt_plan_upload",
            max_upload_size=1,  # MB: the browser refuses more; the parser, over MAX_PLAN_BYTES
        )
        ss["wt_plan_missing"] = up is None
        if up is not None:
            text = up.getvalue() if up.size <= plan.MAX_PLAN_BYTES else b"#" * (up.size or 1)
    elif pick != BUILTIN:
        path = folder_plans().get(pick)
        if path is not None and path.stat().st_size <= plan.MAX_PLAN_BYTES:
            text = path.read_bytes()
        elif path is not None:
            ss["wt_plan_error"] = f"{pick}.toml is larger than {plan.MAX_PLAN_BYTES:,} bytes."
    if text is not None:
        try:
            parsed = plan.parse_plan(text)
        except plan.PlanError as e:
            ss["wt_plan_error"] = str(e)
        else:
            ss["wt_plan_text"] = parsed.text
            st.caption(f"{len(parsed.questions)} questions, {len(parsed.slides)} slides.")
    if ss["wt_plan_error"]:
        st.error(inert(ss["wt_plan_error"]))


def with_picked(query: str) -> str | None:
    """The example string a new class starts with (the picked plan inside), or None (and a
    notice) when the picked plan is malformed or too large to share."""
    ss = st.session_state
    if ss.get("wt_plan_error"):
        ss["wt_notice"] = "The plan file has a mistake (see above the Start button)."
        return None
    if ss.get("wt_plan_missing"):
        ss["wt_notice"] = "Upload a plan file first, or pick the built-in questions."
        return None
    example = plan.with_plan(query, ss.get("wt_plan_text"))
    if len(example) > MAX_EXAMPLE_CHARS:
        ss["wt_notice"] = "This plan is too large to share with a class: split it in two."
        return None
    return example
