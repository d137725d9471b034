"""Everything attnviz changes inside Streamlit, in one place, checked before it is changed.

Each patch in ``PATCHES`` names the Streamlit attributes it reads or replaces (``Target``: a dotted
path and the parameter names the code was written against) and whether the app stays correct
without it (``optional``). ``install()`` runs once per process:

- it checks every target of every patch against the Streamlit that is installed;
- a required patch whose target is missing or changed stops the app with ``CompatError``, whose
  message names the patch, the target and the Streamlit version;
- an optional patch whose target is missing or changed is left off, with one logged notice;
- ``ATTNVIZ_PATCHES=off`` leaves every optional patch off (the app is then only slower).

Required (a visitor could harm others without them):

- ``clear_cache``: a browser's ``clear_cache`` message would clear every session's caches
  (``AppSession._handle_clear_cache_request``); it is refused and logged instead.
- ``git_info``: a browser's ``load_git_info`` would read the deployment's git remote; refused.
- ``widget_values``: a widget value the widget's own deserializer cannot read (malformed
  data-editor JSON, a NaN for an int box) would end every rerun of that session with Streamlit's
  error box, outside every error boundary; it becomes the widget's default, with one log line.

Optional (speed and failover comfort; why and what they gain: docs/patches.md):

- ``fragment_resume``: a click inside a fragment the session does not hold (a session rebuilt on
  another replica after a failover) runs the whole page instead of being dropped.
- ``batched_hand_off``: a session hands its events to the event loop through one queue, with one
  wake-up for as many events as arrive before the loop gets to them.
- ``nodelay``: every TCP socket of the process sends at once (TCP_NODELAY), the listening socket
  included, which hands the setting on to every connection it accepts.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import inspect
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import streamlit

from attnviz.ui import transport

_LOG = logging.getLogger("attnviz.ui")
#: The Streamlit releases these patches were written and tested against (requirements.txt agrees).
WRITTEN_FOR = "1.67"
ENV = "ATTNVIZ_PATCHES"


class CompatError(RuntimeError):
    """A required patch cannot be applied to the installed Streamlit."""


def _is_map(obj: Any) -> bool:
    """A mapping (a dict, a dataclass's fields, a protobuf descriptor's fields by name)."""
    if isinstance(obj, type):
        return False
    return isinstance(obj, Mapping) or (hasattr(obj, "keys") and hasattr(obj, "__getitem__"))


@dataclasses.dataclass(frozen=True)
class Target:
    """A Streamlit attribute a patch reads or replaces: ``module:Qualified.name``, and the names of
    its parameters when it is a function (None: not a function, only its presence is checked)."""

    path: str
    params: tuple[str, ...] | None = None

    def resolve(self) -> Any:
        """The attribute itself. Raises AttributeError/ImportError when it is missing."""
        module_name, _, qualname = self.path.partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = obj[part] if _is_map(obj) else getattr(obj, part)
        return obj

    def problem(self) -> str | None:
        """What is wrong with this target on the installed Streamlit, or None (a target this
        module has replaced already is judged by Streamlit's own, kept in ``_original``)."""
        try:
            obj = self.resolve()
        except (ImportError, AttributeError, KeyError) as e:
            return f"{self.path} is missing ({type(e).__name__}: {e})"
        key = next((k for f, k in _REPLACEMENTS.items() if f is obj), None)
        if key is not None:
            obj = _original[key]
        if self.params is None:
            return None
        try:
            found = tuple(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            return f"{self.path} is no longer a function"
        if found != self.params:
            return f"{self.path} takes ({', '.join(found)}), written for ({', '.join(self.params)})"
        return None


@dataclasses.dataclass(frozen=True)
class Patch:
    """One change to Streamlit: what it needs, whether the app is correct without it, how to apply
    it and how to tell it is in force."""

    targets: tuple[Target, ...]
    optional: bool
    apply: Callable[[], None]
    applied: Callable[[], bool]

    def problems(self) -> list[str]:
        return [p for t in self.targets if (p := t.problem()) is not None]


_SESSION = "streamlit.runtime.app_session:AppSession"
_WSTATES = "streamlit.runtime.state.session_state:WStates"


def _session_attr(name: str) -> Any:
    from streamlit.runtime.app_session import AppSession

    return getattr(AppSession, name)


def _replace_session_attr(name: str, value: Any) -> None:
    """AppSession.name = value, keeping Streamlit's own in ``_original`` (for checks and tests)."""
    from streamlit.runtime.app_session import AppSession

    _original.setdefault(name, getattr(AppSession, name))
    setattr(AppSession, name, value)


# ---- clear_cache and git_info: refused ---------------------------------------------------------------


def _refuse_clear_cache(self) -> None:
    _LOG.warning("refused a browser's clear_cache request (session %s)", self.id)


def _refuse_git_info(self) -> None:
    _LOG.info("refused a browser's load_git_info request (session %s)", self.id)


# ---- widget values: an unreadable one becomes the widget's default ------------------------------------

_original: dict[str, Any] = {}


def _read_widget(self, k: str) -> Any:
    try:
        return _original["WStates.__getitem__"](self, k)
    except KeyError:
        raise
    except Exception as e:  # the widget's own deserializer refused what the browser sent
        from streamlit.runtime.state.session_state import Value

        metadata = self.widget_metadata.get(k)
        name = k.rsplit("-", 1)[-1][:60]
        _LOG.warning("refused an unreadable value for widget %s (%s)", name, type(e).__name__)
        default = metadata.deserializer(None)
        self.states[k] = Value(default)
        return default


def _apply_widget_values() -> None:
    from streamlit.runtime.state.session_state import WStates

    _original.setdefault("WStates.__getitem__", WStates.__getitem__)
    WStates.__getitem__ = _read_widget


def _widget_values_applied() -> bool:
    from streamlit.runtime.state.session_state import WStates

    return WStates.__getitem__ is _read_widget


# ---- fragment_resume: a click in a fragment the session does not hold runs the page ----------------


def _request_rerun(self, client_state) -> None:
    if (
        client_state is not None
        and client_state.fragment_id
        and not client_state.is_auto_rerun
        and not self.has_fragment(client_state.fragment_id)
    ):
        whole = type(client_state)()
        whole.CopyFrom(client_state)
        whole.fragment_id = ""
        _LOG.info("session %s: a fragment it does not hold was clicked; running the page", self.id)
        client_state = whole
    _original["request_rerun"](self, client_state)


def _apply_fragment_resume() -> None:
    _replace_session_attr("request_rerun", _request_rerun)


# ---- batched_hand_off: one wake-up of the event loop per batch of a session's events ----------------


class _Batch:
    """One session's events on their way to the event loop, in order."""

    __slots__ = ("lock", "events", "scheduled")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: collections.deque[Callable[[], None]] = collections.deque()
        self.scheduled = False  # a run of the queue is on the loop's list already

    def run(self) -> None:
        """On the event loop: every event queued so far, and those that arrive meanwhile."""
        while True:
            with self.lock:
                if not self.events:
                    self.scheduled = False
                    return
                event = self.events.popleft()
            try:
                event()
            except Exception:  # as the event loop would: say so, and go on with the rest
                _LOG.exception("a session's event failed")


_batch_lock = threading.Lock()


def _batch(session) -> _Batch:
    batch = getattr(session, "_attnviz_batch", None)
    if batch is None:
        with _batch_lock:
            batch = session.__dict__.setdefault("_attnviz_batch", _Batch())
    return batch


def hand_over(session, event: Callable[[], None]) -> None:
    """Queue ``event`` for ``session``'s event loop; wake the loop only if no run of the queue is
    pending. Events run in the order they were handed over, each once."""
    batch = _batch(session)
    with batch.lock:
        batch.events.append(event)
        if batch.scheduled:
            return
        batch.scheduled = True
    try:
        streamlit_hand_over()(session, batch.run)
    except BaseException:
        with batch.lock:
            batch.scheduled = False
        raise


def streamlit_hand_over() -> Callable:
    """Streamlit's own hand-off of one event (what ``hand_over`` batches)."""
    return _original.get("_call_soon_on_event_loop") or _session_attr("_call_soon_on_event_loop")


def _apply_batched_hand_off() -> None:
    _replace_session_attr("_call_soon_on_event_loop", hand_over)


# ---- nodelay ------------------------------------------------------------------------------------------

_nodelay_done = threading.Event()


def _apply_nodelay() -> None:
    transport.nodelay_all()
    _nodelay_done.set()


PATCHES: dict[str, Patch] = {
    "clear_cache": Patch(
        targets=(Target(f"{_SESSION}._handle_clear_cache_request", ("self",)),),
        optional=False,
        apply=lambda: _replace_session_attr("_handle_clear_cache_request", _refuse_clear_cache),
        applied=lambda: _session_attr("_handle_clear_cache_request") is _refuse_clear_cache,
    ),
    "git_info": Patch(
        targets=(Target(f"{_SESSION}._handle_git_information_request", ("self",)),),
        optional=False,
        apply=lambda: _replace_session_attr("_handle_git_information_request", _refuse_git_info),
        applied=lambda: _session_attr("_handle_git_information_request") is _refuse_git_info,
    ),
    "widget_values": Patch(
        targets=(
            Target(f"{_WSTATES}.__getitem__", ("self", "k")),
            Target(f"{_WSTATES}.__dataclass_fields__.states"),  # read via __dataclass_fields__
            Target(f"{_WSTATES}.__dataclass_fields__.widget_metadata"),
            Target("streamlit.runtime.state.session_state:Value", ("value",)),
        ),
        optional=False,
        apply=_apply_widget_values,
        applied=_widget_values_applied,
    ),
    "fragment_resume": Patch(
        targets=(
            Target(f"{_SESSION}.request_rerun", ("self", "client_state")),
            Target(f"{_SESSION}.has_fragment", ("self", "fragment_id")),
            Target(
                "streamlit.proto.ClientState_pb2:ClientState.DESCRIPTOR.fields_by_name.fragment_id"
            ),
            Target(
                "streamlit.proto.ClientState_pb2:ClientState.DESCRIPTOR.fields_by_name.is_auto_rerun"
            ),
        ),
        optional=True,
        apply=_apply_fragment_resume,
        applied=lambda: _session_attr("request_rerun") is _request_rerun,
    ),
    "batched_hand_off": Patch(
        targets=(Target(f"{_SESSION}._call_soon_on_event_loop", ("self", "callback")),),
        optional=True,
        apply=_apply_batched_hand_off,
        applied=lambda: _session_attr("_call_soon_on_event_loop") is hand_over,
    ),
    "nodelay": Patch(
        targets=(), optional=True, apply=_apply_nodelay, applied=lambda: _nodelay_done.is_set()
    ),
}

#: each function this module puts in Streamlit's place -> the key of Streamlit's own in _original
_REPLACEMENTS = {
    _refuse_clear_cache: "_handle_clear_cache_request",
    _refuse_git_info: "_handle_git_information_request",
    _read_widget: "WStates.__getitem__",
    _request_rerun: "request_rerun",
    hand_over: "_call_soon_on_event_loop",
}
_lock = threading.Lock()
_state: dict[str, bool] = {}  # name -> in force, once install() has run


def patches_wanted() -> bool:
    """Whether the optional patches are wanted (``ATTNVIZ_PATCHES`` is not ``off``)."""
    return os.environ.get(ENV, "on").strip().lower() not in ("off", "0", "no", "false")


def check(names: tuple[str, ...] | None = None) -> dict[str, list[str]]:
    """-> each patch's problems on the installed Streamlit (empty lists: all is as written for)."""
    return {n: PATCHES[n].problems() for n in names or tuple(PATCHES)}


def install(names: tuple[str, ...] | None = None) -> dict[str, bool]:
    """Check the patches named (default: all), apply the required ones (``CompatError`` if one
    cannot be) and, unless ``ATTNVIZ_PATCHES=off``, the optional ones whose targets are as written
    for. Each patch is decided once per process; later calls only report.
    -> each patch decided so far: whether it is in force."""
    with _lock:
        todo = [n for n in names or tuple(PATCHES) if n not in _state]
        wanted = patches_wanted()
        if not wanted and any(PATCHES[n].optional for n in todo):
            _LOG.warning("%s=off: Streamlit's optional patches are off (slower, as correct)", ENV)
        decided: dict[str, bool] = {}
        for name in todo:
            patch = PATCHES[name]
            problems = patch.problems()
            if problems and not patch.optional:
                raise CompatError(
                    f"attnviz cannot run on Streamlit {streamlit.__version__} (written for "
                    f"{WRITTEN_FOR}): its '{name}' protection needs {'; '.join(problems)}. "
                    "Install the Streamlit version requirements.txt names."
                )
            if problems:
                _LOG.warning(
                    "Streamlit %s: patch '%s' left off (%s)",
                    streamlit.__version__,
                    name,
                    "; ".join(problems),
                )
            if (patch.optional and not wanted) or problems:
                decided[name] = False
                continue
            patch.apply()
            decided[name] = True
        _state.update(decided)
        return dict(_state)


def in_force() -> dict[str, bool]:
    """Each patch's name: whether it is applied in this process now."""
    return {name: patch.applied() for name, patch in PATCHES.items()}
