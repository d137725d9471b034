"""Reading the class's notebooks: which exercises each lesson has, who submitted what, and the code
cells of each submission. Nothing here runs a student's code; a notebook is only parsed as JSON.

- The exercises come from the released student notebooks (``lessons/NN_name.ipynb``): every line
  ``check_<checker>(<function>)`` names an exercise, e.g. ``check_weighted_sum(weighted_sum_einsum)``.
- A submission is one ``.ipynb`` file. Its lesson is the lesson whose name is in the file's name or
  in the name of a folder above it (``alice_02_aggregation.ipynb``,
  ``02_aggregation/alice.ipynb``), else the lesson whose exercise functions the notebook defines
  most of. Its student is the file's name without the lesson's name (``alice``), or, where nothing
  is left (``alice/02_aggregation.ipynb``, nbgrader's layout), the folder's name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnviz.errors import AttnvizError

#: A notebook larger than this is not read (a class's notebooks are well under a megabyte each
#: without outputs; outputs can make them a few).
MAX_BYTES = 32 << 20

_CHECK = re.compile(r"^check_(\w+)\((\w+)\)\s*$", re.MULTILINE)
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)", re.MULTILINE)
_FROM = re.compile(r"^from\s+(attnviz[\w.]*)\s+import\s+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_IMPORT = re.compile(r"^import\s+(attnviz[\w.]*)", re.MULTILINE)


@dataclass(frozen=True)
class Exercise:
    """One exercise: its lesson ("02_aggregation"), the function the student writes, and the
    checker that grades it (a key of ``attnviz.exercises.CHECKERS``)."""

    lesson: str
    function: str
    checker: str


@dataclass(frozen=True)
class Submission:
    """One notebook: who, which lesson ('' if none is recognised), its code cells, and why it
    cannot be graded ('' when it can)."""

    path: Path
    student: str
    lesson: str
    cells: tuple[str, ...] = ()
    problem: str = ""


def default_lessons() -> Path:
    """The released notebooks of this checkout: lessons/ next to the attnviz package."""
    return Path(__file__).resolve().parents[2] / "lessons"


def catalogue(folder: Path) -> dict[str, tuple[Exercise, ...]]:
    """{lesson: its exercises, in notebook order}, from the released notebooks in folder."""
    if not folder.is_dir():
        raise AttnvizError(
            f"No folder of released notebooks at {folder}. Pass --lessons with the folder that "
            f"holds the notebooks you gave the students (e.g. lessons/)."
        )
    lessons: dict[str, tuple[Exercise, ...]] = {}
    for path in sorted(folder.glob("*.ipynb")):
        cells, problem = read_cells(path)
        if problem:
            raise AttnvizError(f"The released notebook {path} cannot be read: {problem}")
        found = [
            Exercise(path.stem, function, checker)
            for cell in cells
            for checker, function in _CHECK.findall(cell)
        ]
        if found:
            lessons[path.stem] = tuple(found)
    if not lessons:
        raise AttnvizError(f"No notebook in {folder} has an exercise (a `check_...(...)` line).")
    return lessons


def imports(folder: Path) -> list[str]:
    """The attnviz modules the released notebooks import (and the names they import from them,
    which may be modules too): the grading server imports them before any student's code runs."""
    found: dict[str, None] = {}
    for path in sorted(folder.glob("*.ipynb")):
        for cell in read_cells(path)[0]:
            found.update(dict.fromkeys(_IMPORT.findall(cell)))
            for module, names in _FROM.findall(cell):
                found[module] = None
                found.update({f"{module}.{n}": None for n in re.findall(r"\w+", names)})
    return list(found)


def read_cells(path: Path) -> tuple[tuple[str, ...], str]:
    """The sources of a notebook's code cells, and '' or what is wrong with the file."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            return (), f"the file has {size} bytes, more than the {MAX_BYTES} a notebook may have"
        raw = path.read_bytes()
    except OSError as exc:
        return (), f"the file cannot be read ({exc.strerror or type(exc).__name__})"
    try:
        notebook = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return (), f"the file is not a notebook (not JSON: {type(exc).__name__})"
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    key = "source"
    if cells is None and isinstance(notebook, dict):  # nbformat 3: cells in worksheets, "input"
        sheets = notebook.get("worksheets")
        if isinstance(sheets, list) and all(isinstance(w, dict) for w in sheets):
            cells = [c for w in sheets for c in (w.get("cells") or [])]
            key = "input"
    if not isinstance(cells, list):
        return (), "the file is JSON but not a notebook (no list of cells)"
    sources = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get(key, "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            return (), "a code cell's source is neither text nor a list of lines"
        sources.append(source)
    return tuple(sources), ""


def notebooks(paths: Iterable[Path]) -> list[Path]:
    """Every notebook named or inside a named folder (hidden folders such as
    .ipynb_checkpoints left out), in a stable order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p
                for p in path.rglob("*.ipynb")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.is_file():
            found.append(path)
        else:
            raise AttnvizError(f"{path}: no such file or folder.")
    return list(dict.fromkeys(found))


def _lesson_named(path: Path, lessons: Sequence[str]) -> str:
    for part in (path.stem, *(p.name for p in path.parents)):
        for lesson in sorted(lessons, key=len, reverse=True):
            if lesson in part:
                return lesson
    return ""


def _lesson_defined(cells: Sequence[str], lessons: dict[str, tuple[Exercise, ...]]) -> str:
    defined = {name for cell in cells for name in _DEF.findall(cell)}
    scores = {
        lesson: sum(ex.function in defined for ex in exercises)
        for lesson, exercises in lessons.items()
    }
    best = max(scores, key=lambda k: scores[k], default="")
    return best if best and scores[best] else ""


def student_of(path: Path, lesson: str) -> str:
    """The student's name: the file's name without the lesson's, or the folder's name."""
    name = path.stem.replace(lesson, "") if lesson else path.stem
    name = name.strip(" _-.")
    if not name:
        name = path.parent.name
    return name or path.stem


def read_submissions(
    paths: Iterable[Path], lessons: dict[str, tuple[Exercise, ...]], lesson: str = ""
) -> list[Submission]:
    """Every submission under paths, read (not run). lesson: grade every notebook as this one."""
    if lesson and lesson not in lessons:
        raise AttnvizError(f"No lesson {lesson!r}: the lessons are {', '.join(lessons)}.")
    out = []
    for path in notebooks(paths):
        cells, problem = read_cells(path)
        which = lesson or _lesson_named(path, list(lessons))
        if not which and not problem:
            which = _lesson_defined(cells, lessons)
        out.append(Submission(path, student_of(path, which), which, cells, problem))
    return out
