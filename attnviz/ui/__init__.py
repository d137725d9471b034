"""The Streamlit layer: the only part of attnviz that imports streamlit.

- ``navigation.pages()``: the app's pages (Playground, Walkthrough, Performance) for ``st.navigation``.
- ``playground``, ``walkthrough``, ``performance``: one page each, wrapped by ``boundary.guarded``.
- ``_controls``: widget groups that return their values.
- ``edit`` (editor cells -> arrays), ``link`` (the shareable URL), ``export`` (snippet, JSON, .npy):
  pure helpers without streamlit, tested on their own.
"""
