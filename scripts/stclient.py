"""A small protocol-level Streamlit client: one browser tab, without the browser.

It speaks what Streamlit's frontend speaks (streamlit 1.67): an HTTP GET of the page first (so a proxy's
affinity cookie and Streamlit's XSRF cookie land in a cookie jar), then the websocket at
``/_stcore/stream`` with ``BackMsg`` protobufs up and ``ForwardMsg`` protobufs down. Like the frontend it
keeps every widget value it has set and sends them all with each ``rerun_script``; a button press is a
trigger value sent once. A widget inside an ``st.fragment`` reruns only its fragment, as in a browser.

    from scripts.stclient import Session

    with Session("http://127.0.0.1:8501") as s:
        first = s.rerun()                        # the first load
        print(first.texts()[:3], first.elapsed_s)
        s.click("pg_next")                       # a button, by its user key
        run = s.rerun()
        assert run.ok and "Step 2" in run.text()
        s.send(BackMsg(clear_cache=True))        # any (forged) message
        for fid in s.auto_reruns:                # what a browser's fragment timers send
            s.rerun(fragment_id=fid, is_auto_rerun=True)

Run as a script for a quick look at a server: ``python scripts/stclient.py http://127.0.0.1:8501``.
Uses the ``websockets`` package (a dependency of streamlit itself) and ``requests``.
"""

from __future__ import annotations

import argparse
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

#: The header the serve command's HAProxy adds to every response: the name of the replica that answered.
REPLICA_HEADER = "X-Attnviz-Replica"
#: Streamlit's XSRF cookie, echoed in the websocket's subprotocol list as the frontend does.
XSRF_COOKIE = "_streamlit_xsrf"
STREAM_PATH = "_stcore/stream"

# Which WidgetState field each widget element reads (streamlit 1.67's register_widget value_type).
# A value set for a widget of another kind is typed from the Python value instead.
VALUE_FIELD = {
    "button": "trigger_value",
    "download_button": "trigger_value",
    "checkbox": "bool_value",  # st.checkbox and st.toggle
    "selectbox": "string_value",
    "radio": "string_value",
    "text_input": "string_value",
    "text_area": "string_value",
    "color_picker": "string_value",
    "dataframe": "string_value",  # st.data_editor: the edit dict as JSON
    "arrow_data_frame": "string_value",
    "number_input": "double_value",
    "multiselect": "string_array_value",
    "button_group": "string_array_value",
    "slider": "double_array_value",
    "tab_container": "string_value",  # st.tabs(key=..., on_change="rerun"): the active tab's label
    "expandable": "bool_value",
    "popover": "bool_value",
    "pagination": "int_value",
}
TRIGGER_FIELDS = frozenset({"trigger_value", "string_trigger_value", "json_trigger_value"})
# Element fields that carry what a reader sees, in the order they are tried.
_TEXT_FIELDS = ("body", "label", "code_text", "message", "text", "title", "default_tab_label")


class ProtocolError(RuntimeError):
    """The server closed the connection, timed out, or said something a browser would not expect."""


class ServerTimeout(ProtocolError):
    """Nothing arrived from the server in the time allowed."""


@dataclass(frozen=True)
class Elem:
    """One rendered element or block of a run, as the frontend would place it."""

    path: tuple[int, ...]  # delta_path: container (0 main, 1 sidebar, ...) then positions
    kind: (
        str  # Element/Block oneof name: "markdown", "button", "plotly_chart", "tab_container", ...
    )
    text: str  # body/label/code/message, "" when the element carries none
    widget_id: str  # "" for elements that are not widgets
    fragment_id: str  # "" outside a fragment
    size: int  # bytes of the ForwardMsg that carried it

    @property
    def user_key(self) -> str | None:
        """The key= the page gave the widget ("$$ID-<hash>-<key>"), None without one."""
        return user_key(self.widget_id)


@dataclass
class Run:
    """What one rerun (or the first load) returned, with its timings."""

    messages: list[ForwardMsg] = field(default_factory=list)
    elements: list[Elem] = field(default_factory=list)
    status: str = ""  # ScriptFinishedStatus name, "" if none arrived
    bytes: int = 0
    t_sent: float = 0.0
    t_first: float = 0.0
    t_finished: float = 0.0
    page_not_found: bool = False
    auto_reruns: list[tuple[str, float]] = field(default_factory=list)  # (fragment_id, interval_s)

    @property
    def elapsed_s(self) -> float:
        """Seconds from sending the request to script_finished."""
        return self.t_finished - self.t_sent

    @property
    def first_byte_s(self) -> float:
        """Seconds from sending the request to the first ForwardMsg."""
        return self.t_first - self.t_sent

    @property
    def deltas(self) -> int:
        return len(self.elements)

    @property
    def exceptions(self) -> list[Elem]:
        """st.exception elements: what a visitor would see as an error box with a traceback."""
        return [e for e in self.elements if e.kind == "exception"]

    @property
    def ok(self) -> bool:
        """Finished (whole script or fragment) with no exception element and a known page."""
        finished = self.status in ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY")
        return finished and not self.exceptions and not self.page_not_found

    def texts(self) -> list[str]:
        return [e.text for e in self.elements if e.text]

    def text(self) -> str:
        """Every visible text of the run, one per line (for `in` checks)."""
        return "\n".join(self.texts())

    def widgets(self) -> dict[str, Elem]:
        """Widgets of this run by user key (widgets without a key are left out)."""
        return {e.user_key: e for e in self.elements if e.widget_id and e.user_key}


def user_key(widget_id: str) -> str | None:
    """The user key in a Streamlit element id ("$$ID-<hash>-<key>"), None when there is none."""
    if not widget_id:
        return None
    key = widget_id.split("-", maxsplit=2)[-1]
    return None if key == "None" else key


def _oneof(msg: Any) -> tuple[str, Any]:
    kind = msg.WhichOneof("type") or ""
    return kind, (getattr(msg, kind) if kind else None)


def _elem(fm: ForwardMsg, size: int) -> Elem | None:
    delta = fm.delta
    part = delta.WhichOneof("type")
    if part == "new_element":
        kind, sub = _oneof(delta.new_element)
    elif part == "add_block":
        kind, sub = _oneof(delta.add_block)
    else:
        return None
    text, widget_id = "", ""
    if sub is not None:
        names = sub.DESCRIPTOR.fields_by_name
        for name in _TEXT_FIELDS:
            if name in names and names[name].type == names[name].TYPE_STRING:
                text = getattr(sub, name)
                if text:
                    break
        if "id" in names and names["id"].type == names["id"].TYPE_STRING:
            widget_id = sub.id
    return Elem(
        path=tuple(fm.metadata.delta_path),
        kind=kind,
        text=text,
        widget_id=widget_id,
        fragment_id=delta.fragment_id,
        size=size,
    )


def _ws_url(base: str) -> str:
    parts = urlsplit(base)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    path = parts.path.rstrip("/") + "/" + STREAM_PATH
    return urlunsplit((scheme, parts.netloc, path, "", ""))


class SourceAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter that connects from one local address."""

    def __init__(self, source: str) -> None:
        self._source = source
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self._source, 0)
        super().init_poolmanager(*args, **kwargs)


class Session:
    """One visitor's tab: a cookie jar, a websocket, the widget values set so far, the page's elements.

    ``url`` is the server's root (``http://127.0.0.1:8501`` or the proxy's); ``path`` the page path a
    browser would open (``walkthrough``) and ``query_string`` its link parameters (without ``?``);
    ``source`` the local address to connect from (``127.0.0.7``: another client on loopback), ''
    for the system's choice. Connects on construction unless ``connect=False``.
    """

    def __init__(
        self,
        url: str,
        *,
        path: str = "",
        query_string: str = "",
        timeout: float = 60.0,
        connect: bool = True,
        http: requests.Session | None = None,
        source: str = "",
    ) -> None:
        self.url = url.rstrip("/")
        self.source = source
        self.path = path.strip("/")
        self.query_string = query_string
        self.timeout = timeout
        self.http = http or requests.Session()
        if source:  # every request of this tab from that address (a shared jar: the same tab's)
            for scheme in ("http://", "https://"):
                self.http.mount(scheme, SourceAdapter(source))
        self.session_id = ""  # Streamlit's session id, from new_session
        self.page_script_hash = ""  # the page the server last ran
        self.pages: dict[str, str] = {}  # url_pathname -> page_script_hash, from navigation
        self.replica_http: str | None = None  # REPLICA_HEADER of the page GET
        self.replica: str | None = None  # REPLICA_HEADER of the websocket handshake
        self.widget_values: dict[str, WidgetState] = {}  # id -> value sent with every rerun
        self._triggers: dict[str, WidgetState] = {}  # id -> one-shot value for the next rerun
        self.known: dict[str, Elem] = {}  # user key -> last seen widget element
        self.tree: dict[tuple[int, ...], Elem] = {}  # delta_path -> element: the page as it stands
        self.auto_reruns: dict[
            str, float
        ] = {}  # fragment_id -> interval s (st.fragment(run_every=))
        self.bytes_received = 0
        self._ws: Any = None
        if connect:
            self.connect()

    # -- connection ---------------------------------------------------------------------------------
    def connect(self, existing_session_id: str = "") -> None:
        """GET the page (cookies), then open the websocket; ``existing_session_id`` resumes a session."""
        page = f"{self.url}/{self.path}" + (f"?{self.query_string}" if self.query_string else "")
        resp = self.http.get(page, timeout=self.timeout)
        resp.raise_for_status()
        self.replica_http = resp.headers.get(REPLICA_HEADER)
        xsrf = self.http.cookies.get(XSRF_COOKIE) or "none"
        protocols = ["streamlit", xsrf] + ([existing_session_id] if existing_session_id else [])
        host = urlsplit(self.url).netloc
        self._stack = ExitStack()  # connect() is a context manager; close() exits it
        self._ws = self._stack.enter_context(
            connect(
                _ws_url(self.url),
                subprotocols=protocols,
                origin=f"{urlsplit(self.url).scheme}://{host}",
                additional_headers={"Cookie": self.cookie_header()} if self.http.cookies else None,
                open_timeout=self.timeout,
                max_size=2**27,
                compression=None,
                **({"source_address": (self.source, 0)} if self.source else {}),
            )
        )
        self.replica = self._ws.response.headers.get(REPLICA_HEADER)

    def reconnect(self) -> None:
        """What a browser does after losing its websocket: reopen it, asking to resume the session."""
        self.close()
        self.connect(existing_session_id=self.session_id)

    def close(self) -> None:
        if self._ws is not None:
            try:
                self._stack.close()
            finally:
                self._ws = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cookies(self) -> dict[str, str]:
        """The cookie jar as a dict (the proxy's affinity cookie among them)."""
        return requests.utils.dict_from_cookiejar(self.http.cookies)

    def cookie_header(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    # -- messages -----------------------------------------------------------------------------------
    def send(self, msg: BackMsg) -> float:
        """Send any BackMsg (forged ones included); returns the perf_counter time it left."""
        if self._ws is None:
            raise ProtocolError("not connected")
        data = msg.SerializeToString()
        t = time.perf_counter()
        try:
            self._ws.send(data)
        except ConnectionClosed as exc:  # e.g. the server closed it under a message over its limit
            raise ProtocolError(f"connection lost: {exc!r}") from exc
        return t

    def recv(self, timeout: float | None = None) -> tuple[ForwardMsg, int]:
        """The next ForwardMsg and its size in bytes."""
        try:
            data = self._ws.recv(timeout=self.timeout if timeout is None else timeout)
        except TimeoutError as exc:
            raise ServerTimeout("no message from the server in time") from exc
        except Exception as exc:  # websockets' ConnectionClosed and friends
            raise ProtocolError(f"connection lost: {exc!r}") from exc
        if isinstance(data, str):
            raise ProtocolError("a text frame: Streamlit speaks binary protobufs")
        fm = ForwardMsg()
        fm.ParseFromString(data)
        self.bytes_received += len(data)
        return fm, len(data)

    def drain(self) -> list[ForwardMsg]:
        """Whatever the server has already sent and nobody read (so it is not counted in a run)."""
        left = []
        while True:
            try:
                left.append(self.recv(timeout=0)[0])
            except ServerTimeout:
                return left

    def client_state(
        self,
        *,
        query_string: str | None = None,
        page_script_hash: str | None = None,
        page_name: str | None = None,
        fragment_id: str = "",
        is_auto_rerun: bool = False,
        widget_states: dict[str, WidgetState] | None = None,
    ) -> ClientState:
        """The ClientState a browser would send now (all kept widget values plus pending triggers)."""
        cs = ClientState()
        cs.query_string = self.query_string if query_string is None else query_string
        cs.page_script_hash = (
            self.page_script_hash if page_script_hash is None else page_script_hash
        )
        cs.page_name = (
            (self.path if not cs.page_script_hash else "") if page_name is None else page_name
        )
        cs.fragment_id = fragment_id
        cs.is_auto_rerun = is_auto_rerun
        cs.context_info.timezone = "UTC"
        cs.context_info.timezone_offset = 0
        cs.context_info.locale = "en-US"
        cs.context_info.url = f"{self.url}/{self.path}"
        states = dict(self.widget_values)
        states.update(self._triggers)
        states.update(widget_states or {})
        cs.widget_states.widgets.extend(states.values())
        return cs

    def rerun(
        self,
        widget_states: dict[str, WidgetState] | None = None,
        *,
        query_string: str | None = None,
        page_script_hash: str | None = None,
        page_name: str | None = None,
        fragment_id: str | None = None,
        is_auto_rerun: bool = False,
        timeout: float | None = None,
    ) -> Run:
        """Send rerun_script and collect ForwardMsgs until the run finishes.

        ``fragment_id=None`` picks what a browser would: the fragment of the pending trigger or changed
        widget when it lives in one, else a full rerun. ``widget_states`` (id -> WidgetState) are sent
        once on top of the kept values. Pass ``page_script_hash`` (see ``pages``) or ``page_name`` (the
        url path) to switch page.
        """
        if fragment_id is None:
            fragment_id = self._pending_fragment
        if page_name is not None and page_script_hash is None:
            page_script_hash = self.pages.get(page_name, "")
        cs = self.client_state(
            query_string=query_string,
            page_script_hash=page_script_hash,
            page_name=page_name,
            fragment_id=fragment_id,
            is_auto_rerun=is_auto_rerun,
            widget_states=widget_states,
        )
        if query_string is not None:
            self.query_string = query_string
        self.drain()
        run = Run()
        run.t_sent = self.send(BackMsg(rerun_script=cs))
        self._triggers.clear()
        self._pending_fragment = ""
        if not fragment_id:
            self.tree = {}
            self.auto_reruns = {}  # a full run registers its fragments' timers again
        self._collect(run, timeout)
        return run

    _pending_fragment = ""

    def _collect(self, run: Run, timeout: float | None) -> None:
        deadline = time.perf_counter() + (self.timeout if timeout is None else timeout)
        while True:
            left = deadline - time.perf_counter()
            if run.status:  # finished; its closing status message is due at once
                left = min(left, run.t_finished + 5.0 - time.perf_counter())
                if left <= 0:
                    return
            elif left <= 0:
                raise ServerTimeout(f"no script_finished within {self.timeout:.0f} s")
            try:
                fm, size = self.recv(timeout=left)
            except ServerTimeout:
                if run.status:
                    return
                raise
            now = time.perf_counter()
            if not run.messages:
                run.t_first = now
            run.messages.append(fm)
            run.bytes += size
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                if not fm.metadata.run.fragment_ids and self.auto_reruns:
                    # a full run the server started itself (st.rerun in a fragment): as in a
                    # browser, it draws the page again and registers its fragments' timers again
                    self.tree, self.auto_reruns = {}, {}
                self.session_id = fm.new_session.initialize.session_id or self.session_id
                self.page_script_hash = fm.new_session.page_script_hash
                self._learn_pages(fm.new_session.app_pages)
            elif kind == "navigation":
                self.page_script_hash = fm.navigation.page_script_hash or self.page_script_hash
                self._learn_pages(fm.navigation.app_pages)
            elif kind == "page_info_changed":  # the page rewrote its link (st.query_params)
                self.query_string = fm.page_info_changed.query_string
            elif kind == "page_not_found":
                run.page_not_found = True
            elif kind == "auto_rerun":
                run.auto_reruns.append((fm.auto_rerun.fragment_id, fm.auto_rerun.interval))
                self.auto_reruns[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            elif kind == "stop_auto_rerun":
                for fid in fm.stop_auto_rerun.fragment_ids:
                    self.auto_reruns.pop(fid, None)
            elif kind == "delta":
                elem = _elem(fm, size)
                if elem is not None:
                    run.elements.append(elem)
                    self.tree[elem.path] = elem
                    if elem.user_key:
                        self.known[elem.user_key] = elem
            elif kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(fm.script_finished)
                if status != "FINISHED_EARLY_FOR_RERUN":
                    run.status = status
                    run.t_finished = now
            elif (
                kind == "session_status_changed"
                and run.status
                and not fm.session_status_changed.script_is_running
            ):
                return  # the server's last word on this run (it follows script_finished)

    def _learn_pages(self, app_pages: Any) -> None:
        for page in app_pages:
            self.pages[page.url_pathname] = page.page_script_hash

    # -- widgets ------------------------------------------------------------------------------------
    def widget_id(self, key: str) -> str:
        """The element id of the widget the page created with ``key=key`` (seen in an earlier run)."""
        if key not in self.known:
            seen = ", ".join(sorted(self.known)) or "none"
            raise KeyError(f"no widget with key {key!r} on the page so far (seen: {seen})")
        return self.known[key].widget_id

    def set_widget(self, key: str, value: Any, *, field_name: str | None = None) -> WidgetState:
        """Set a widget's value for the next rerun (and keep it, as a browser does; triggers once).

        ``key`` is the user key (or a full element id); the WidgetState field comes from the widget's
        element kind (``VALUE_FIELD``), else from ``field_name``, else from the Python type of ``value``:
        bool, int, float, str, a list of str (string_array_value) or of numbers (double_array_value).
        """
        elem = self.known.get(key)
        wid = elem.widget_id if elem else key if key.startswith("$$ID-") else self.widget_id(key)
        name = field_name or (VALUE_FIELD.get(elem.kind) if elem else None) or _field_for(value)
        ws = WidgetState(id=wid)
        _put(ws, name, value)
        if name in TRIGGER_FIELDS:
            self._triggers[wid] = ws
        else:
            self.widget_values[wid] = ws
        if elem is not None and elem.fragment_id:
            self._pending_fragment = elem.fragment_id
        return ws

    def click(self, key: str) -> WidgetState:
        """Press a button (a trigger_value sent with the next rerun only)."""
        return self.set_widget(key, True, field_name="trigger_value")


def _field_for(value: Any) -> str:
    if isinstance(value, bool):
        return "bool_value"
    if isinstance(value, int):
        return "int_value"
    if isinstance(value, float):
        return "double_value"
    if isinstance(value, str):
        return "string_value"
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            return "string_array_value"
        return "double_array_value"
    raise TypeError(f"cannot send a {type(value).__name__} as a widget value; pass field_name=")


def _put(ws: WidgetState, name: str, value: Any) -> None:
    if name in ("string_array_value", "double_array_value", "int_array_value"):
        getattr(ws, name).data.extend(value)
    elif name == "string_trigger_value":
        ws.string_trigger_value.data = str(value)
    else:
        setattr(ws, name, value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="server root, e.g. http://127.0.0.1:8501")
    ap.add_argument("--path", default="", help="page path, e.g. walkthrough")
    ap.add_argument("--query", default="", help="link parameters, without '?'")
    args = ap.parse_args()
    with Session(args.url, path=args.path, query_string=args.query) as s:
        run = s.rerun()
        print(f"status {run.status}, {run.deltas} deltas, {run.bytes} bytes, {run.elapsed_s:.3f} s")
        print(f"replica {s.replica} cookies {sorted(s.cookies)} pages {sorted(s.pages)}")
        for e in run.elements:
            label = f" key={e.user_key}" if e.user_key else ""
            print(f"  {e.path} {e.kind}{label} {e.text[:60]!r}")


if __name__ == "__main__":
    main()
