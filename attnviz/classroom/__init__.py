"""The live class, without streamlit: a teacher's walkthrough that students follow and answer.

- ``store``: the ``Store`` interface, ``ClassRecord``, ``Phase``; ``backend.open_store()`` (SQLite file
  under ``$ATTNVIZ_DATA_DIR`` by default, Redis with ``ATTNVIZ_CLASS_STORE=redis://host:port/db``);
- ``sqlite_store`` / ``redis_store``: the two backends, which pass one test module;
- ``service``: ``Classroom``, the rules (teacher token, rate limits, expiry), ``ClassError`` with
  its ``Problem`` kind;
- ``question``: the check-in questions as data and the strict parsing of answers;
- ``secret``: class codes, teacher tokens and student ids.

    room = Classroom(open_store())
    started = room.start()                          # code, token (keep it secret), record
    room.move(started.code, started.token, 4, 12)   # the teacher moves the class
    room.state(started.code).slide                  # what a student's poll reads: 4
"""

from attnviz.classroom.backend import open_store
from attnviz.classroom.plan import questions
from attnviz.classroom.question import Kind, Question, parse_answer, parse_shape
from attnviz.classroom.secret import format_code, parse_code
from attnviz.classroom.service import LIMITS, ClassError, Classroom, Limits, Problem, Started, Tally
from attnviz.classroom.store import ClassRecord, Phase, Store

__all__ = [
    "LIMITS",
    "ClassError",
    "ClassRecord",
    "Classroom",
    "Kind",
    "Limits",
    "Phase",
    "Problem",
    "Question",
    "Started",
    "Store",
    "Tally",
    "format_code",
    "open_store",
    "parse_answer",
    "parse_code",
    "parse_shape",
    "questions",
]
