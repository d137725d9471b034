"""``python -m attnviz.grade`` on a generated class of 40 notebooks (tests/grade_submissions.py):
right answers, each known mistake, broken files and hostile code. The gradebook must be the one
written by hand for them, the summary must count it, and nothing outside the grader's temporary
folders may change. One run of the command, in parallel processes, marked slow (about 13 s of CPU
on this machine, 4 of them the two endless loops at their 2 s limit)."""

from __future__ import annotations

import csv
import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from grade_submissions import build

from attnviz.grade import default_lessons
from attnviz.grade.__main__ import main

LESSONS_DIR = default_lessons()

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    expected = build(root / "submissions", root / "outside")
    temp = Path(tempfile.gettempdir())
    before = set(temp.glob("attnviz-grade-*"))
    code = main(
        [str(root / "submissions"), "--out", str(root / "grades"), "--seconds", "2", "--jobs", "2"]
        + ["--wall", "8", "--memory-mb", "1024"]
    )
    left = set(temp.glob("attnviz-grade-*")) - before
    return root, expected, code, left


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_command_grades_the_whole_class(graded):
    _, _, code, _ = graded
    assert code == 0


def test_the_gradebook_is_the_expected_one_row_for_row(graded):
    root, expected, _, _ = graded
    rows = _csv(root / "grades" / "gradebook.csv")
    got = {(r["student"], r["exercise"]): (r["status"], r["mistake"]) for r in rows}
    assert len(rows) == len(got)  # one row per student and exercise
    assert got == expected
    assert all(r["passed"] == ("yes" if r["status"] == "passed" else "no") for r in rows)
    assert len({s for s, _ in expected}) == 40


def test_the_summary_counts_the_gradebook(graded):
    root, expected, _, _ = graded
    summary = {r["exercise"]: r for r in _csv(root / "grades" / "summary.csv")}
    by_exercise: dict[str, list[tuple[str, str]]] = {}
    for (_, exercise), row in expected.items():
        if exercise:
            by_exercise.setdefault(exercise, []).append(row)
    assert set(summary) == set(by_exercise)
    for exercise, rows in by_exercise.items():
        line = summary[exercise]
        passed = sum(status == "passed" for status, _ in rows)
        assert (int(line["students"]), int(line["passed"])) == (len(rows), passed)
        assert int(line["percent_passed"]) == round(100 * passed / len(rows))
        counts = Counter(m for status, m in rows if m and status != "passed")
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        named = [line[f"mistake_{i}"] for i in (1, 2, 3) if line[f"mistake_{i}"]]
        assert [(re.match(r"\w+", n)[0], int(n.rsplit("(", 1)[1][:-1])) for n in named] == top


def test_hostile_notebooks_change_nothing_outside(graded):
    root, _, _, left = graded
    outside = root / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "the teacher's file"
    assert left == set()  # every notebook's temporary folder removed


def test_the_refusals_say_what_was_refused(graded):
    root, _, _, _ = graded
    rows = {
        (r["student"], r["exercise"]): r["detail"] for r in _csv(root / "grades" / "gradebook.csv")
    }
    assert "frame" in rows[("s10", "add_axis")]
    assert "gc" in rows[("s11", "add_axis")]
    assert "written-by-a-notebook.txt" in rows[("s12", "add_axis")]
    assert "network" in rows[("s13", "broadcast_shape")]
    assert "process" in rows[("s13", "add_axis")]
    assert "attnviz.exercises.engine.judge_tensor" in rows[("s15", "add_axis")]
    assert "while defining" in rows[("s20", "add_axis")]


HOSTILE = ("s10", "s11", "s12", "s13", "s14", "s15", "s17", "s33", "s38")


def test_without_landlock_the_audit_hooks_alone_refuse_the_same(tmp_path):
    """The hostile notebooks again, with Landlock off (another OS, an older kernel): the same
    gradebook, and the teacher's files untouched."""
    from attnviz import grade

    expected = build(tmp_path / "all", tmp_path / "outside")
    lessons = grade.catalogue(grade.default_lessons())
    paths = [p for p in (tmp_path / "all").glob("*.ipynb") if p.name.startswith(HOSTILE)]
    subs = grade.read_submissions(paths, lessons)
    limits = grade.Limits(seconds=2, wall=8, landlock=False)
    rows, facts = grade.grade(subs, lessons, limits, jobs=2, preload=grade.imports(LESSONS_DIR))
    assert facts["landlock"] == 0
    got = {(r.student, r.exercise): (r.status, r.mistake) for r in rows}
    assert got == {k: v for k, v in expected.items() if k[0] in HOSTILE}
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["victim.txt"]
    assert (tmp_path / "outside" / "victim.txt").read_text() == "the teacher's file"
