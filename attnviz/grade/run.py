"""Grading a class: the grader's side. It never runs a student's code itself.

``grade`` starts the grading server (``python -m attnviz.grade.pool``, a fresh interpreter that
imports torch and the checkers once and forks one confined process per notebook, see ``pool``,
``child`` and ``guard``), hands it every notebook's code cells and exercises, and turns the lines
it writes back into gradebook rows. A notebook the server could not finish (the server itself
stopped) gets "crashed" entries; a file that is not a notebook, or of no known lesson, gets its
entry without any process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from attnviz.grade.book import NOT_RUN, PROBLEM_TITLES, Problem, Row
from attnviz.grade.collect import Exercise, Submission


@dataclass(frozen=True)
class Limits:
    """seconds: CPU time per exercise (and for the definitions); wall: wall-clock time per
    exercise, for code that waits (sleep, input); memory_mb: address space beyond what a process
    holds after importing torch; file_mb: the largest file it may write (in its temporary
    directory only); landlock: confine the filesystem, TCP and signals where the kernel can."""

    seconds: float = 10.0
    wall: float = 60.0
    memory_mb: int = 1024
    file_mb: int = 16
    landlock: bool = True


def _unrunnable(sub: Submission, lessons: dict[str, tuple[Exercise, ...]]) -> list[Row]:
    """The rows of a submission no process needs to see ([] when it can be run)."""
    if sub.problem:
        exercises = [ex.function for ex in lessons.get(sub.lesson, ())] or [""]
        return [
            Row(sub.student, sub.lesson, fn, NOT_RUN, Problem.UNREADABLE.value, sub.problem)
            for fn in exercises
        ]
    if sub.lesson not in lessons:
        why = PROBLEM_TITLES[Problem.UNKNOWN_LESSON] + f" (pass --lesson: {', '.join(lessons)})"
        return [Row(sub.student, "", "", NOT_RUN, Problem.UNKNOWN_LESSON.value, why)]
    return []


def grade(
    submissions: Sequence[Submission],
    lessons: dict[str, tuple[Exercise, ...]],
    limits: Limits = Limits(),
    jobs: int = 0,
    progress: Callable[[Submission], None] | None = None,
    preload: Sequence[str] = (),
) -> tuple[list[Row], dict[str, int]]:
    """Every submission's rows, in submission order, and what confined them ({'landlock': the
    Landlock ABI every process applied, 0 if none}). jobs: notebooks at a time (default: CPUs).
    preload: the attnviz modules the notebooks import (``collect.imports``)."""
    rows: list[list[Row]] = [_unrunnable(sub, lessons) for sub in submissions]
    runnable = [i for i, r in enumerate(rows) if not r]
    if progress is not None:
        for i, r in enumerate(rows):
            if r:
                progress(submissions[i])
    spec = {
        "limits": asdict(limits),
        "parallel": jobs or os.cpu_count() or 1,
        "preload": list(preload),
        "jobs": [
            {
                "id": i,
                "cells": list(submissions[i].cells),
                "exercises": [
                    {"function": ex.function, "checker": ex.checker}
                    for ex in lessons[submissions[i].lesson]
                ],
            }
            for i in runnable
        ],
    }
    facts = {"landlock": 0}
    results: dict[int, list[dict]] = {}
    with tempfile.TemporaryFile() as errors:
        server = subprocess.Popen(
            [sys.executable, "-m", "attnviz.grade.pool"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(spec).encode())
        server.stdin.close()
        for line in server.stdout:
            done = json.loads(line)
            results[done["id"]] = done["results"]
            facts["landlock"] = done["landlock"]
            if progress is not None:
                progress(submissions[done["id"]])
        server.wait()
        errors.seek(0)
        why = errors.read().decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    for i in runnable:
        sub = submissions[i]
        found = results.get(i, [])
        rows[i] = [
            Row(
                sub.student,
                sub.lesson,
                ex.function,
                r["status"],
                r["mistake"],
                r["detail"],
                r["title"],
            )
            if k < len(found)
            else Row(
                sub.student,
                sub.lesson,
                ex.function,
                NOT_RUN,
                Problem.CRASHED.value,
                f"the grading server stopped (exit code {server.returncode}) {why[0]}"[:300],
            )
            for k, (ex, r) in enumerate(
                zip(lessons[sub.lesson], found + [{}] * len(lessons[sub.lesson]), strict=False)
            )
        ]
    return [row for group in rows for row in group], facts
