"""The gradebook: one row per student and exercise, written as CSV, and the class summary.

A row's ``status`` is the checker's ("passed", "failed", "not attempted", "error") or "not run"
when the checker could not run on the student's function; ``mistake`` is then a ``Problem``, and
otherwise the checker's key for the mistake it recognised ("forgot_new_axis"), or empty.
"""

from __future__ import annotations

import csv
import enum
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

NOT_RUN = "not run"
STATUSES = ("passed", "failed", "not attempted", "error", NOT_RUN)


class Problem(str, enum.Enum):
    """Why the checker could not judge an exercise, or why its verdict does not count."""

    UNREADABLE = "unreadable_notebook"
    UNKNOWN_LESSON = "unknown_lesson"
    SYNTAX = "syntax_error"
    MISSING = "missing_function"
    DEFINITION = "definition_error"
    TIME = "time_limit"
    MEMORY = "memory_limit"
    CRASHED = "crashed"
    FORBIDDEN = "forbidden"
    TAMPERED = "tampered"


#: How the summary names each problem.
PROBLEM_TITLES: dict[Problem, str] = {
    Problem.UNREADABLE: "the file is not a notebook that can be read",
    Problem.UNKNOWN_LESSON: "no lesson recognised in the file's name or its functions",
    Problem.SYNTAX: "a syntax error in the exercise's cell",
    Problem.MISSING: "the exercise's function is not in the notebook (renamed or deleted?)",
    Problem.DEFINITION: "defining the function raised an error",
    Problem.TIME: "ran out of time (an endless loop?)",
    Problem.MEMORY: "needed more memory than the limit",
    Problem.CRASHED: "stopped the grading process",
    Problem.FORBIDDEN: "tried something the grader forbids (files, frames, processes, network)",
    Problem.TAMPERED: "changed the checker or torch while it ran",
}

GRADEBOOK_COLUMNS = ("student", "lesson", "exercise", "passed", "status", "mistake", "detail")
SUMMARY_COLUMNS = ("lesson", "exercise", "students", "passed", "percent_passed") + tuple(
    f"mistake_{i}" for i in (1, 2, 3)
)


@dataclass(frozen=True)
class Row:
    """One student's result on one exercise. title: how the checker names the mistake."""

    student: str
    lesson: str
    exercise: str
    status: str
    mistake: str = ""
    detail: str = ""
    title: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def mistake_name(self) -> str:
        """The mistake as the checker (or the grader) names it: 'key: title', or the key."""
        if not self.mistake:
            return ""
        try:
            title = PROBLEM_TITLES[Problem(self.mistake)]
        except ValueError:
            title = self.title
        return f"{self.mistake}: {title}" if title else self.mistake


def _cell(value: str) -> str:
    """A spreadsheet never runs a cell as a formula: one that starts like one gets a quote."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(str(v)) for v in row])
    return out.getvalue()


def gradebook_csv(rows: Sequence[Row]) -> str:
    """student, lesson, exercise, passed (yes/no), status, mistake (key), detail (a line)."""
    return _csv(
        GRADEBOOK_COLUMNS,
        (
            (
                r.student,
                r.lesson,
                r.exercise,
                "yes" if r.passed else "no",
                r.status,
                r.mistake,
                r.detail,
            )
            for r in rows
        ),
    )


@dataclass(frozen=True)
class ExerciseSummary:
    """One exercise across the class: how many passed, the three most common mistakes."""

    lesson: str
    exercise: str
    students: int
    passed: int
    mistakes: tuple[tuple[str, int], ...]  # (name, how many), most common first

    @property
    def percent(self) -> float:
        return 100.0 * self.passed / self.students if self.students else 0.0


def summarise(rows: Sequence[Row]) -> list[ExerciseSummary]:
    """Per exercise, in the order the rows first name them: students, passed, top 3 mistakes
    (ties by key). Rows without an exercise (an unreadable file of no known lesson) are left
    out: the gradebook lists them."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        if r.exercise:
            groups.setdefault((r.lesson, r.exercise), []).append(r)
    out = []
    for (lesson, exercise), group in groups.items():
        failed = [r for r in group if r.mistake and not r.passed]
        counts = Counter(r.mistake for r in failed)
        names = {r.mistake: r.mistake_name for r in failed}
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        passed = sum(r.passed for r in group)
        mistakes = tuple((names[key], n) for key, n in top)
        out.append(ExerciseSummary(lesson, exercise, len(group), passed, mistakes))
    return out


def summary_csv(summary: Sequence[ExerciseSummary]) -> str:
    return _csv(
        SUMMARY_COLUMNS,
        (
            (s.lesson, s.exercise, s.students, s.passed, f"{s.percent:.0f}")
            + tuple(f"{name} ({n})" for name, n in s.mistakes)
            + ("",) * (3 - len(s.mistakes))
            for s in summary
        ),
    )


def summary_text(summary: Sequence[ExerciseSummary]) -> str:
    """The summary as plain text for a terminal."""
    lines = []
    for s in summary:
        lines.append(
            f"{s.lesson} / {s.exercise}: {s.passed} of {s.students} passed ({s.percent:.0f} %)"
        )
        lines += [f"    {n} × {name}" for name, n in s.mistakes]
    return "\n".join(lines)


def write(rows: Sequence[Row], folder: Path) -> tuple[Path, Path]:
    """gradebook.csv and summary.csv in folder (created if needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    book, summary = folder / "gradebook.csv", folder / "summary.csv"
    book.write_text(gradebook_csv(rows), encoding="utf-8")
    summary.write_text(summary_csv(summarise(rows)), encoding="utf-8")
    return book, summary
