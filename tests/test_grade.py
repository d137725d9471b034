"""attnviz.grade without running any notebook: the exercises read from the released notebooks, who
submitted which lesson, files that are not notebooks, the gradebook and the summary, the command's
refusals. (The notebooks' runs, hostile ones included, are in test_grade_class.py.)"""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest

from attnviz.errors import AttnvizError
from attnviz.exercises import CHECKERS
from attnviz.grade import NOT_RUN, Problem, Row, catalogue, default_lessons, read_submissions
from attnviz.grade import collect as collect_module
from attnviz.grade.__main__ import main
from attnviz.grade.book import gradebook_csv, summarise, summary_csv
from attnviz.grade.run import _unrunnable

LESSONS = default_lessons()


def _notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "source": s} for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _solution_functions(lesson: str) -> set[str]:
    """The functions each solution notebook defines and passes to a check (read with ast)."""
    nb = json.loads((LESSONS / "solutions" / f"{lesson}.ipynb").read_text())
    checked = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if "%" in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id.startswith("check_")
                and node.args
                and isinstance(node.args[0], ast.Name)
            ):
                checked.add((node.args[0].id, node.func.id.removeprefix("check_")))
    return checked


def test_catalogue_names_every_checked_function_of_every_lesson():
    lessons = catalogue(LESSONS)
    assert set(lessons) == {p.stem for p in LESSONS.glob("*.ipynb")}
    for lesson, exercises in lessons.items():
        assert {(e.function, e.checker) for e in exercises} == _solution_functions(lesson)
        assert all(e.checker in CHECKERS for e in exercises)


def test_catalogue_refuses_a_folder_without_notebooks(tmp_path):
    with pytest.raises(AttnvizError, match="No notebook"):
        catalogue(tmp_path)
    with pytest.raises(AttnvizError, match="No folder"):
        catalogue(tmp_path / "missing")


@pytest.mark.parametrize(
    ("relative", "student", "lesson"),
    [
        ("alice_02_aggregation.ipynb", "alice", "02_aggregation"),
        ("02_aggregation-bob.ipynb", "bob", "02_aggregation"),
        ("carol/01_broadcasting.ipynb", "carol", "01_broadcasting"),
        ("03_cpu_vs_gpu/dave.ipynb", "dave", "03_cpu_vs_gpu"),
        ("eve.ipynb", "eve", "01_broadcasting"),  # told by the functions it defines
    ],
)
def test_student_and_lesson_come_from_the_names_or_the_functions(
    tmp_path, relative, student, lesson
):
    path = tmp_path / "class" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_notebook("def add_axis(att_scores):\n    return att_scores[..., None]\n"))
    (sub,) = read_submissions([tmp_path / "class"], catalogue(LESSONS))
    assert (sub.student, sub.lesson, sub.problem) == (student, lesson, "")


def test_a_folder_is_searched_without_its_checkpoints(tmp_path):
    for name in ("a_01_broadcasting.ipynb", ".ipynb_checkpoints/a_01_broadcasting.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(_notebook("x = 1"))
    (tmp_path / "notes.txt").write_text("not a notebook")
    subs = read_submissions([tmp_path], catalogue(LESSONS))
    assert [s.path.name for s in subs] == ["a_01_broadcasting.ipynb"]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\x00\xff garbage", "not JSON"),
        (b"[1, 2, 3]", "no list of cells"),
        (b'{"cells": 5}', "no list of cells"),
        (b'{"cells": [{"cell_type": "code", "source": 7}]}', "neither text"),
        (b"[" * 200_000, "not JSON"),
    ],
)
def test_a_file_that_is_not_a_notebook_is_named_so(tmp_path, content, words):
    path = tmp_path / "zoe_01_broadcasting.ipynb"
    path.write_bytes(content)
    (sub,) = read_submissions([path], catalogue(LESSONS))
    assert words in sub.problem
    rows = _unrunnable(sub, catalogue(LESSONS))
    assert [(r.exercise, r.status, r.mistake) for r in rows] == [
        (e.function, NOT_RUN, "unreadable_notebook") for e in catalogue(LESSONS)[sub.lesson]
    ]


def test_an_nbformat_3_notebook_is_read(tmp_path):
    cell = {"cell_type": "code", "input": ["def add_axis(w):\n", "    return w[..., None]\n"]}
    path = tmp_path / "old_01_broadcasting.ipynb"
    path.write_text(json.dumps({"nbformat": 3, "worksheets": [{"cells": [cell]}]}))
    (sub,) = read_submissions([path], catalogue(LESSONS))
    assert sub.cells == ("def add_axis(w):\n    return w[..., None]\n",) and not sub.problem


def test_a_notebook_larger_than_the_limit_is_not_read(tmp_path, monkeypatch):
    lessons = catalogue(LESSONS)
    monkeypatch.setattr(collect_module, "MAX_BYTES", 100)
    path = tmp_path / "big_01_broadcasting.ipynb"
    path.write_text(_notebook("x = 1" * 100))
    (sub,) = read_submissions([path], lessons)
    assert "more than the 100" in sub.problem


def test_a_notebook_of_no_lesson_gets_one_row_saying_so(tmp_path):
    path = tmp_path / "mystery.ipynb"
    path.write_text(_notebook("x = 1"))
    (sub,) = read_submissions([path], catalogue(LESSONS))
    (row,) = _unrunnable(sub, catalogue(LESSONS))
    assert (row.student, row.exercise, row.mistake) == ("mystery", "", "unknown_lesson")


def test_an_unknown_lesson_or_path_is_refused_with_a_message(tmp_path):
    with pytest.raises(AttnvizError, match="No lesson 'lesson9'"):
        read_submissions([tmp_path], catalogue(LESSONS), "lesson9")
    with pytest.raises(AttnvizError, match="no such file"):
        read_submissions([tmp_path / "nope.ipynb"], catalogue(LESSONS))


# --------------------------------------------------------------------------------------------
# The gradebook and the summary

ROWS = [
    Row("ann", "L", "f", "passed"),
    Row("bob", "L", "f", "failed", "wrong_axis", "d", "summed the wrong axis"),
    Row("cy", "L", "f", "failed", "wrong_axis", "d", "summed the wrong axis"),
    Row("di", "L", "f", NOT_RUN, "time_limit", "no answer"),
    Row("ed", "L", "f", "error", "forgot_new_axis", "d", "forgot `[..., None]`"),
    Row("fay", "L", "f", "not attempted"),
    Row("ann", "L", "g", "failed", "", "no mistake named"),
    Row("bob", "L", "g", "passed"),
]


def test_the_summary_counts_passes_and_the_three_commonest_mistakes():
    f, g = summarise(ROWS)
    assert (f.exercise, f.students, f.passed, round(f.percent, 1)) == ("f", 6, 1, 16.7)
    assert f.mistakes == (
        ("wrong_axis: summed the wrong axis", 2),
        ("forgot_new_axis: forgot `[..., None]`", 1),
        ("time_limit: ran out of time (an endless loop?)", 1),
    )
    assert (g.students, g.passed, g.mistakes) == (2, 1, ())


def test_the_summary_csv_has_one_line_per_exercise():
    lines = list(csv.reader(io.StringIO(summary_csv(summarise(ROWS)))))
    assert lines[0][:5] == ["lesson", "exercise", "students", "passed", "percent_passed"]
    assert lines[1][:6] == ["L", "f", "6", "1", "17", "wrong_axis: summed the wrong axis (2)"]
    assert lines[2] == ["L", "g", "2", "1", "50", "", "", ""]


def test_the_gradebook_has_a_row_per_student_and_exercise():
    lines = list(csv.reader(io.StringIO(gradebook_csv(ROWS))))
    assert lines[0] == ["student", "lesson", "exercise", "passed", "status", "mistake", "detail"]
    assert lines[1] == ["ann", "L", "f", "yes", "passed", "", ""]
    assert lines[4] == ["di", "L", "f", "no", NOT_RUN, "time_limit", "no answer"]
    assert len(lines) == 1 + len(ROWS)


@pytest.mark.parametrize("start", ["=", "+", "-", "@"])
def test_a_cell_that_looks_like_a_formula_is_quoted(start):
    row = Row(f"{start}HYPERLINK(1)", "L", "f", "passed", detail=f"{start}1+1")
    line = list(csv.reader(io.StringIO(gradebook_csv([row]))))[1]
    assert line[0] == f"'{start}HYPERLINK(1)" and line[6] == f"'{start}1+1"


def test_every_problem_has_a_title():
    from attnviz.grade.book import PROBLEM_TITLES

    assert set(PROBLEM_TITLES) == set(Problem)


# --------------------------------------------------------------------------------------------
# The command


def test_the_command_refuses_a_missing_path_plainly(tmp_path, capsys):
    assert main([str(tmp_path / "nothing-here"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_command_refuses_a_folder_without_released_notebooks(tmp_path, capsys):
    (tmp_path / "a.ipynb").write_text(_notebook("x = 1"))
    assert main([str(tmp_path), "--lessons", str(tmp_path / "none")]) == 2
    assert "No folder of released notebooks" in capsys.readouterr().err


def test_the_command_refuses_bad_limits(tmp_path, capsys):
    assert main([str(tmp_path), "--seconds", "0"]) == 2
    assert "positive" in capsys.readouterr().err


def test_the_command_says_when_no_notebook_was_found(tmp_path, capsys):
    assert main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "No notebook" in capsys.readouterr().err


def test_released_notebooks_are_found_next_to_the_package():
    assert default_lessons() == Path(__file__).resolve().parents[1] / "lessons"
