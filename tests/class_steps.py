"""What the class-store tests make again and again: a class's record, a Classroom on a store with
its limits, a clock that stays inside one rate-limit window, one of the classic example's questions.
(The stores themselves, for real, are conftest's ``backend`` and ``store`` fixtures.)"""

from __future__ import annotations

import time

from attnviz import examples
from attnviz.classroom import ClassRecord, Classroom, Limits, questions
from attnviz.classroom import secret as sec


def make_record(code: str = "ACDEFGHJK", **kw) -> ClassRecord:
    now = time.time()
    base = {"token_hash": sec.token_hash("t" * 32), "created": now, "expires": now + 3600}
    return ClassRecord(code=code, **{**base, **kw})


def make_room(store, clock=time.time, **limits) -> Classroom:
    return Classroom(store, Limits(**limits), clock=clock)


def mid_window_clock():
    """A fixed moment a second into a minute five minutes ahead: the rate limits count in windows
    aligned to the minute, so calls made with the real clock across a minute's end (a busy machine
    makes that likelier) would start a fresh count; five minutes ahead, no key expires meanwhile."""
    moment = float((int(time.time()) // 60 + 5) * 60 + 1)
    return lambda: moment


def classic_question(qid: str):
    x, w = examples.classic()
    return next(q for q in questions(x, w) if q.id == qid)
