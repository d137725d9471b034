"""The teacher's students in the live class: who joined (names as plain text), Remove one (a fake
member, or a vote that is not a student's: their answers go with them and their browser's id
cannot join again) and Close / Open the class to new students (members may always come back).
Drawn in the teacher's bar by the live class's poll (``attnviz.ui.live_class.live``).
"""

from __future__ import annotations

import streamlit as st

from attnviz.classroom import ClassError, ClassRecord, Classroom
from attnviz.ui.boundary import button, callback

PREFIX = "wt_"  # the Walkthrough's keys: what the error boundary resets


def panel(r: Classroom, record: ClassRecord, members: tuple[tuple[str, str], ...]) -> None:
    """The teacher's students: their names (plain text), Remove one (a fake member, a vote that
    is not a student's), and Close / Open the class to new students."""
    labels = _member_labels(members)
    with st.popover(f"Students ({len(members)})", key="wt_members"):
        names = [name for _, name in members if name]
        if names:
            st.text(", ".join(names))  # plain text, never markdown
        if record.joining:
            button(
                "Close the class to new students",
                key="wt_close_joining",
                on_click=callback(_set_joining, PREFIX, reset=False),
                args=(r, False),
                icon=":material/lock:",
            )
        else:
            st.caption("Closed to new students: those who joined can still come back.")
            button(
                "Open the class to new students",
                key="wt_open_joining",
                on_click=callback(_set_joining, PREFIX, reset=False),
                args=(r, True),
                icon=":material/lock_open:",
            )
        if labels:
            with st.container(horizontal=True, vertical_alignment="bottom"):
                st.selectbox(
                    "Remove a student (their answers go too)",
                    options=list(labels),
                    format_func=labels.get,
                    index=None,
                    key="wt_remove_pick",
                    placeholder="Pick a student",
                )
                button(
                    "Remove",
                    key="wt_remove",
                    on_click=callback(_remove, PREFIX, reset=False),
                    args=(r,),
                )


def _member_labels(members: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """student id -> what the teacher's list shows: the name (numbered when two share it), or
    "student N" (never the id: it is that browser's secret, and a projector may show the list)."""
    seen: dict[str, int] = {}
    labels = {}
    for i, (student, name) in enumerate(members, start=1):
        seen[name] = seen.get(name, 0) + 1
        if not name:
            labels[student] = f"student {i} (no name)"
        else:
            labels[student] = name if seen[name] == 1 else f"{name} ({seen[name]})"
    return labels


def _set_joining(r: Classroom, joining: bool) -> None:
    ss = st.session_state
    try:
        r.set_joining(ss.get("wt_code", ""), ss.get("wt_token", ""), joining)
    except ClassError as e:
        ss["wt_notice"] = str(e)


def _remove(r: Classroom) -> None:
    ss = st.session_state
    student = ss.get("wt_remove_pick")
    if student is None:
        return
    try:
        r.remove(ss.get("wt_code", ""), ss.get("wt_token", ""), student)
    except ClassError as e:
        ss["wt_notice"] = str(e)
        return
    ss["wt_remove_pick"] = None
