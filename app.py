"""attnviz: the Streamlit app. Start it with `streamlit run app.py`; the pages live in attnviz.ui."""

import streamlit as st

from attnviz import native_op
from attnviz.ui import compat, longlived, settings
from attnviz.ui.navigation import chrome, pages


def main() -> None:
    """Page config, navigation, run."""
    settings.verify()  # the security and resource settings exist and took effect, or a plain stop
    compat.install()  # every change to Streamlit's internals, checked (attnviz/ui/compat.py)
    st.set_page_config(
        page_title="attnviz: attention-weighted aggregation, step by step",
        layout="wide",
    )
    chrome()
    st.navigation(pages(), position="top").run()
    longlived.after_first_run()  # what the first page run imported stays out of full collections
    native_op.start()  # the C kernel and its PyTorch operator, built in the background once a
    # machine (the bounded benchmark worker only loads them, attnviz.native_op)


# Streamlit runs this file as __main__; importing it (from a test, say) builds nothing.
if __name__ == "__main__":
    main()
