"""attnviz: the Streamlit app. Start with `streamlit run app.py`."""

import streamlit as st

import attnviz

st.set_page_config(page_title="attnviz", layout="wide")
st.title("Attention-weighted aggregation, through broadcasting")
st.code("weighted = (net_output * att_scores[..., None]).sum(axis=1)  # (B,T,H) * (B,T,1) -> (B,H)")
net_output, att_scores = attnviz.examples.classic()
st.write("The classic example gives:")
st.dataframe(attnviz.weighted_sum(net_output, att_scores).numpy())
