"""attnviz: the Streamlit app. Start it with `streamlit run app.py`; the pages live in attnviz.ui."""

import streamlit as st

from attnviz.ui.navigation import pages

st.set_page_config(
    page_title="attnviz: attention-weighted aggregation, step by step",
    page_icon=":material/grid_on:",
    layout="wide",
)
st.navigation(pages(), position="top").run()
