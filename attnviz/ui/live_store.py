"""The live class's store handle for this process: one ``Classroom`` per store address, shared by
every session (``st.cache_resource``), named by ATTNVIZ_CLASS_STORE / ATTNVIZ_DATA_DIR."""

from __future__ import annotations

import os

import streamlit as st

from attnviz.classroom import Classroom, open_store


@st.cache_resource(show_spinner=False)
def _room(url: str, data_dir: str) -> Classroom:
    """The shared store handle for this process (one per store address)."""
    return Classroom(open_store(url, data_dir or None))


def room() -> Classroom:
    """The class store named by ATTNVIZ_CLASS_STORE / ATTNVIZ_DATA_DIR."""
    return _room(os.environ.get("ATTNVIZ_CLASS_STORE", ""), os.environ.get("ATTNVIZ_DATA_DIR", ""))
