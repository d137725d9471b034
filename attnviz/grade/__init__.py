"""Homework, collected and graded: ``python -m attnviz.grade SUBMISSIONS...``.

Every exercise's checker runs against each student's notebook in a separate, confined process with
a time and memory limit (``run``, ``child``, ``guard``); the result is a gradebook (CSV: student,
lesson, exercise, passed, status, mistake, detail) and a class summary (for each exercise, % passed
and the three most common mistakes, named as the checker names them) (``book``). Which exercises a
lesson has, and who submitted which lesson, is read from the notebooks (``collect``).

A notebook that does not run, a missing exercise, a renamed function, an endless loop, or code that
tries to write files, read the checker's hidden cases or change the checker gets a plain entry in
the gradebook; the grader itself never runs a student's code. lessons/README.md ("Grade a class")
says how a teacher uses it, and what the confinement does and does not guarantee.
"""

from __future__ import annotations

from attnviz.grade.book import NOT_RUN, Problem, Row, summarise, write
from attnviz.grade.collect import (
    Exercise,
    Submission,
    catalogue,
    default_lessons,
    imports,
    read_submissions,
)
from attnviz.grade.run import Limits, grade

__all__ = [
    "NOT_RUN",
    "Exercise",
    "Limits",
    "Problem",
    "Row",
    "Submission",
    "catalogue",
    "read_submissions",
    "default_lessons",
    "grade",
    "imports",
    "summarise",
    "write",
]
