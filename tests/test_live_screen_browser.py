"""The Walkthrough's component in a real browser acts only on its own page's messages (issue 28):
a message from another origin, or one of the wrong shape, changes nothing the browser keeps (the
teacher's token); a well-formed one from the page itself does (the control that shows the
messages were delivered). Debian's chromium through Playwright, on a plain `streamlit run`."""

from __future__ import annotations

import json

import pytest

from attnviz.classroom import Classroom
from attnviz.classroom import secret as sec
from tests.test_live_browser import LAPTOP, WAIT_MS, _open, _store, chromium, plain_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]
_fixtures = (chromium, plain_server)

# args as the server sends them, every field present and well-formed ("" for none)
_ARGS = {
    "code": "",
    "remember_code": "",
    "remember": "",
    "forget": "",
    "forget_token": "",
    "student_code": "",
    "student": "",
    "student_s": 0,
    "forget_student": "",
    "copy": "",
}
_FRAME = "[...document.querySelectorAll('iframe')].find(f => f.src.includes('live_screen'))"


def _render(**args) -> dict:
    return {"type": "streamlit:render", "args": {**_ARGS, **args}}


def test_the_component_ignores_messages_from_elsewhere_and_of_the_wrong_shape(
    chromium, plain_server
):
    env = {"ATTNVIZ_DATA_DIR": plain_server.env["ATTNVIZ_DATA_DIR"]}
    started = Classroom(_store(env)).start(client="teacher")
    code, token = started.code, started.token
    context = chromium.new_context(viewport=LAPTOP)
    try:
        page, _ = _open(context, f"{plain_server.url}/walkthrough?class={code}&teacher={token}")
        kept = f"() => localStorage.getItem('attnviz.teacher.{code}') === '{token}'"
        page.wait_for_function(kept, timeout=WAIT_MS)
        forget = json.dumps(_render(forget=code))
        # another origin (an opaque one: a data: frame) posts a well-formed "forget" to every frame
        page.evaluate(
            """forget => new Promise(done => {
              window.addEventListener('message', e => { if (e.data === 'sent') done(); });
              const f = document.createElement('iframe');
              f.src = 'data:text/html,' + encodeURIComponent('<script>const top_ = parent;' +
                'for (let i = 0; i < top_.frames.length; i++) top_.frames[i].postMessage(' +
                forget + ', "*"); top_.postMessage("sent", "*")<' + '/script>');
              document.body.appendChild(f);
            })""",
            forget,
        )
        # the page itself: a "forget" of the wrong shape, then a well-formed "remember"
        other, other_token = sec.new_code(), sec.new_token()
        page.evaluate(
            f"""([bad, good]) => {{
              const frame = {_FRAME}.contentWindow;
              frame.postMessage(bad, '*');
              frame.postMessage(good, '*');
            }}""",
            [
                {**_render(forget=code), "args": {**_render(forget=code)["args"], "copy": 5}},
                _render(remember_code=other, remember=other_token),
            ],
        )
        page.wait_for_function(
            f"() => localStorage.getItem('attnviz.teacher.{other}') === '{other_token}'",
            timeout=WAIT_MS,
        )
        assert page.evaluate(kept)  # neither the other origin's message nor the malformed one
    finally:
        context.close()
