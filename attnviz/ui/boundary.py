"""The error boundary around each page and each widget callback: a visitor sees a plain message,
never a traceback, and the server log never receives more than a few hundred characters of any
value a visitor sent.

- ``guarded(page, prefix)`` wraps a page function;
- ``callback(fn, prefix)`` wraps an ``on_change``/``on_click`` callback (Streamlit runs callbacks
  before the script, outside the page function, so they need their own boundary): the message is
  kept in ``st.session_state[prefix + "notice"]`` and shown by the page that follows;
- ``before_callbacks(prefix, prepare)``: what a page's callbacks need first. A session rebuilt on
  another replica runs a click's callback before the page has ever run there, so the Playground
  registers its state initialisation (from the link) here;
- ``button(...)``: a callback button whose press acts once even where Streamlit dropped the
  callback (a session rebuilt after a failover): the act runs at the start of the page's next run;
- ``short(value)`` is what may go into a log line.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable

import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.ui.safe import inert

_LOG = logging.getLogger("attnviz.ui")
LOG_CHARS = 300  # the most of any one value written to the log
APOLOGY = (
    "Something went wrong while drawing this page, so it has been reset to its defaults. "
    "Press **Reload defaults** below, or change any control to continue."
)


def short(value: object, most: int = LOG_CHARS) -> str:
    """A value as log text, cut to ``most`` characters (a visitor can send megabytes)."""
    text = str(value)
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def log_failure(what: str, error: BaseException) -> None:
    """The error's type, its message cut short and its frames (code lines, never values)."""
    frames = "".join(traceback.format_tb(error.__traceback__))
    _LOG.error("%s failed: %s: %s\n%s", what, type(error).__name__, short(error), frames)


def _reset(prefix: str) -> None:
    for key in [k for k in st.session_state if str(k).startswith(prefix)]:
        del st.session_state[key]


def _reload(prefix: str) -> None:
    """ "Reload defaults": forget this page's state and the link that may have caused it."""
    _reset(prefix)
    st.query_params.clear()


_PREPARE: dict[str, Callable[[], None]] = {}


def before_callbacks(prefix: str, prepare: Callable[[], None]) -> None:
    """Run ``prepare()`` before every callback of the page whose keys start with ``prefix``."""
    _PREPARE[prefix] = prepare


def callback(
    fn: Callable[..., None], prefix: str, *, reset: bool = True, notice: str = ""
) -> Callable[..., None]:
    """Wrap a widget callback: AttnvizError -> its message kept as the page's notice; any other
    error -> logged (cut short), the apology kept as the notice and, with ``reset``, this page's
    state reset. A page whose state lives elsewhere (the live class: in the class store, which a
    reset would make this browser leave) passes ``reset=False``. notice: the key the message is
    kept under (default ``prefix + "notice"``)."""
    key = notice or f"{prefix}notice"

    @functools.wraps(fn)
    def run(*args: object, **kwargs: object) -> None:
        try:
            if prefix in _PREPARE:
                _PREPARE[prefix]()
            fn(*args, **kwargs)
        except AttnvizError as e:
            st.session_state[key] = short(e, 600)
        except Exception as e:  # Streamlit's rerun/stop are BaseExceptions and pass through
            log_failure(f"callback {fn.__name__}", e)
            if reset:
                _reset(prefix)
                st.session_state[key] = (
                    "A control sent a value this page could not use, so the page has been reset "
                    "to its defaults."
                )
            else:
                st.session_state[key] = (
                    "A control sent a value this page could not use: it did nothing. Try again."
                )

    return run


_DROPPED = "_attnviz_dropped"  # a press whose callback Streamlit dropped: (act, args), run next
HEARD = "__heard"  # a button's key and this: its callback ran, before the run that sees it pressed


def button(
    label: str,
    *,
    key: str,
    on_click: Callable[..., None],
    args: tuple[object, ...] = (),
    form: bool = False,
    **options: object,
) -> bool:
    """``st.button`` (``st.form_submit_button`` with ``form``) whose press acts once, even where
    Streamlit dropped its callback; ``on_click`` is the act, already wrapped by ``callback``.

    A session rebuilt on another replica after a failover knows no callback for a button its runs
    have not drawn yet (the browser's first requests there can cut those runs short), so Streamlit
    runs none for the press, and the button still returns True. The act is then kept and the page
    runs again at once: ``guarded`` runs it first, before any widget is drawn, as Streamlit runs a
    callback, so it may set what a widget shows. A press whose callback ran marks itself heard
    (``key + HEARD``), and the run that sees the button pressed takes the mark: no press acts
    twice (a mark no button took, its button not drawn after its act, goes at the end of the
    page's run). The walkthrough's slide buttons and the teacher's question buttons have their
    own."""
    ss = st.session_state
    heard = key + HEARD

    def act(*given: object) -> None:
        ss[heard] = True
        on_click(*given)

    draw = st.form_submit_button if form else st.button
    pressed = draw(label, key=key, on_click=act, args=args, **options)
    if pressed and not ss.pop(heard, False):
        ss[_DROPPED] = (on_click, args)
        st.rerun()
    return pressed


def _run_dropped() -> None:
    """The act of a press whose callback Streamlit dropped (``button``), once."""
    dropped = st.session_state.pop(_DROPPED, None)
    if dropped is not None:
        act, args = dropped
        act(*args)


def _forget_heard() -> None:
    """Marks no button took this run (``button``): their buttons were not drawn after the act."""
    for key in [k for k in st.session_state if str(k).endswith(HEARD)]:
        del st.session_state[key]


def guarded(page: Callable[[], None], reset_prefix: str) -> Callable[[], None]:
    """Wrap a page function: AttnvizError -> its message; any other error -> a plain apology, the
    error in the server log only (cut short), and this page's session state (keys starting with
    reset_prefix) cleared so that the next run starts from the defaults. "Reload defaults" also
    drops the link's parameters, so a link that breaks the page cannot keep it broken."""

    @functools.wraps(page)
    def run() -> None:
        try:
            _run_dropped()
            page()
            _forget_heard()
        except AttnvizError as e:
            st.error(inert(short(e, 600)))
        except Exception as e:  # Streamlit's rerun/stop are BaseExceptions and pass through
            log_failure(f"page {page.__name__}", e)
            _reset(reset_prefix)
            st.error(APOLOGY)
            st.button(
                "Reload defaults",
                key=f"{reset_prefix}reload",
                on_click=_reload,
                args=(reset_prefix,),
            )

    return run
