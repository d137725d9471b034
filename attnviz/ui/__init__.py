"""The Streamlit layer: the only part of attnviz that imports streamlit.

- ``navigation.pages()``: the app's pages (Playground, Walkthrough, Performance) for ``st.navigation``.
- ``playground``, ``walkthrough``, ``performance``: one page each, wrapped by ``boundary.guarded``;
  ``sections`` (the Playground's tabs) and ``expression`` (the expression tab and its verdict).
- ``live_class`` (start, join, follow, check-in questions), ``live_members`` (the teacher's
  students: remove one, close the class to new students) and ``live_screen`` (the small local
  component that reports the window size, sends the keyboard's moves and keeps the teacher's token;
  it acts only on its own page's messages). ``client`` (the visitor's address, for every limit).
- ``cached`` (every cache: ``st.cache_data`` with a TTL and a byte budget) and ``current`` (the
  example on screen, as one typed value).
- ``boundary`` (the error boundary of pages and callbacks), ``compat`` (every change to Streamlit's
  internals, each checked at start-up), ``settings`` (the security and resource settings, verified
  at start-up), ``safe`` (visitor text as text), ``_controls`` (widget groups that return their
  values, every value checked).
- ``warm`` (a replica loads what a first visitor's clicks would, then runs Streamlit in that process)
  and ``transport`` (the server's sockets send at once).
- ``edit`` (editor cells -> arrays), ``link`` (the shareable URL), ``export`` (snippet, JSON, .npy):
  pure helpers without streamlit, tested on their own.
"""
