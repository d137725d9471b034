"""The class's results in the teacher's menu, before "End the class": per question and round, how
many answered, % right and the most common mistake; the answers as CSV or JSON (anonymous unless
the teacher asks for names); and the class saved as a plan to start again next week.
Computed by ``attnviz.classroom.results``; shown as a table (data, never Markdown)."""

from __future__ import annotations

import streamlit as st

from attnviz.classroom import ClassError, results
from attnviz.ui import live_plan


def table(res: results.Results) -> list[dict[str, object]]:
    """One row per question and round answered: the summary the teacher sees."""
    return [
        {
            "question": q.id,
            "round": r.round,
            "answered": f"{r.answered} of {r.joined}",
            "% right": round(r.percent_right),
            "answers": ", ".join(f"{row.label}: {row.count}" for row in r.rows),
            "most common mistake": ""
            if r.mistake is None
            else f"{r.mistake.label} ({r.mistake.count}): {r.mistake.why or 'not a known mistake'}",
        }
        for q, rounds in res.questions
        for r in rounds
        if r.answered  # a question not asked yet has no row
    ]


def section(default_questions: tuple = ()) -> None:
    """The summary, the downloads and "Save as a plan" (inside the teacher's menu)."""
    from attnviz.ui.live_store import room

    ss = st.session_state
    code = ss.get("wt_code", "")
    st.markdown("**Results of this class**")
    names = st.checkbox("Put the names students typed in the download", key="wt_export_names")
    try:
        res = results.collect(
            room(), code, live_plan.class_questions(default_questions), names=names
        )
    except ClassError as e:
        st.caption(str(e))
        return
    st.dataframe(table(res), key="wt_results", hide_index=True)
    with st.container(horizontal=True):
        st.download_button(
            "Answers (CSV)",
            data=results.to_csv(res),
            file_name=f"attnviz-class-{code}.csv",
            mime="text/csv",
            key="wt_results_csv",
            on_click="ignore",
            icon=":material/download:",
        )
        st.download_button(
            "Summary and answers (JSON)",
            data=results.to_json(res),
            file_name=f"attnviz-class-{code}.json",
            mime="application/json",
            key="wt_results_json",
            on_click="ignore",
            icon=":material/download:",
        )
    st.download_button(
        "Save this class as a plan",
        data=live_plan.class_plan_text(),
        file_name="attnviz-class-plan.toml",
        mime="application/toml",
        key="wt_save_plan",
        on_click="ignore",
        icon=":material/save:",
    )
    st.caption("Start it again with a new code: Start a live class, then upload this plan.")
