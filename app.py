"""attnviz: the Streamlit app. Start it with `streamlit run app.py`; the pages live in attnviz.ui."""

import streamlit as st

from attnviz.ui import longlived, resume, shield, transport
from attnviz.ui.navigation import chrome, pages


def main() -> None:
    """Page config, navigation, run."""
    shield.protect()  # a browser's clear_cache clears nothing shared (attnviz/ui/shield.py)
    resume.install()  # a session rebuilt on another replica: its first click counts
    transport.install()  # messages leave at once, handed over in batches (attnviz/ui/transport.py)
    st.set_page_config(
        page_title="attnviz: attention-weighted aggregation, step by step",
        layout="wide",
    )
    chrome()
    st.navigation(pages(), position="top").run()
    longlived.after_first_run()  # what the first page run imported stays out of full collections


# Streamlit runs this file as __main__; importing it (from a test, say) builds nothing.
if __name__ == "__main__":
    main()
