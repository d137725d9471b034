"""Build the lesson notebooks from their sources: one source, a student and a solution notebook.

    python lessons/build.py          # write every notebook
    python lessons/build.py --check  # exit 1, naming them, if any notebook is out of date

The sources of truth are ``lessons/source/NN_name.py`` in jupytext's ``py:percent`` format. In them:

- an exercise's answer sits between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` lines. The student
  notebook gets ``raise NotImplementedError(...)`` at the same indentation instead; the solution
  notebook gets the answer, without the marker lines;
- a markdown cell tagged ``solution`` (``# %% [markdown] tags=["solution"]``) holds the answer to a
  question asked in prose: the solution notebook shows it, the student notebook shows a prompt.

The generated notebooks are ``lessons/NN_name.ipynb`` (student) and
``lessons/solutions/NN_name.ipynb`` (solution), committed without outputs so that they open in
Jupyter and Colab as they are. Each gets a first code cell that installs attnviz on Colab and does
nothing where attnviz is already importable (after the README's set-up). The output is
deterministic: building twice gives the same bytes, which is what ``--check`` and the tests rely on.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import nbformat


HERE = Path(__file__).resolve().parent
SOURCES = HERE / "source"
SOLUTIONS = HERE / "solutions"

# Where Colab installs attnviz from: the project's public Git repository.
REPO_URL = "https://github.com/attnviz/attnviz"

SETUP_CELL = f'''\
# Setup: on Colab this installs attnviz (Colab already has torch, numpy and plotly).
# Locally, after the README's set-up, attnviz is importable and this cell does nothing.
import importlib.util

if importlib.util.find_spec("attnviz") is None:
    %pip install --quiet --no-deps "attnviz @ git+{REPO_URL}"'''

STUDENT_PROMPT = "*Your answer:* (write it here, then compare with the solution notebook)"

_BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION\s*$")
_END = re.compile(r"^\s*# END SOLUTION\s*$")

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


class LessonSourceError(ValueError):
    """A lesson source breaks the marker rules (unbalanced or nested markers)."""


def strip_solutions(code: str, *, student: bool, where: str = "") -> str:
    """Replace (student) or unwrap (solution) every BEGIN/END SOLUTION block in a code cell."""
    out: list[str] = []
    inside = False
    indent = ""
    for n, line in enumerate(code.split("\n"), start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin:
            if inside:
                raise LessonSourceError(f"{where}: nested BEGIN SOLUTION at line {n} of a cell")
            inside, indent = True, begin.group(1)
            if student:
                out.append(f'{indent}raise NotImplementedError("Your turn: replace this line.")')
            continue
        if end:
            if not inside:
                raise LessonSourceError(f"{where}: END SOLUTION without BEGIN at line {n}")
            inside = False
            continue
        if inside and student:
            continue
        out.append(line)
    if inside:
        raise LessonSourceError(f"{where}: BEGIN SOLUTION without END SOLUTION")
    return "\n".join(out)


def build(source: Path, *, student: bool) -> nbformat.NotebookNode:
    """The student or solution notebook for one lesson source, without outputs."""
    import jupytext  # here, not at the top: the tests import this file to collect (~3 s)
    import nbformat

    nb = jupytext.read(source, fmt="py:percent")
    cells = []
    for cell in nb.cells:
        tags = list(cell.metadata.get("tags", []))
        if cell.cell_type == "markdown" and "solution" in tags:
            text = STUDENT_PROMPT if student else "**Answer.** " + cell.source
            cells.append(nbformat.v4.new_markdown_cell(text))
        elif cell.cell_type == "markdown":
            cells.append(nbformat.v4.new_markdown_cell(cell.source))
        elif cell.cell_type == "code":
            code = strip_solutions(cell.source, student=student, where=source.name)
            cells.append(nbformat.v4.new_code_cell(code))
    title_end = 1 if cells and cells[0].cell_type == "markdown" else 0
    cells.insert(title_end, nbformat.v4.new_code_cell(SETUP_CELL))
    for i, cell in enumerate(cells):
        cell.id = f"cell-{i:03d}"
        cell.metadata = {}
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    nbformat.validate(out)
    return out


def targets() -> dict[Path, str]:
    """Every generated notebook path and its exact text."""
    import nbformat

    out: dict[Path, str] = {}
    for source in sorted(SOURCES.glob("[0-9][0-9]_*.py")):
        name = source.stem + ".ipynb"
        out[HERE / name] = nbformat.writes(build(source, student=True)) + "\n"
        out[SOLUTIONS / name] = nbformat.writes(build(source, student=False)) + "\n"
    return out


def stale() -> list[Path]:
    """Generated notebooks that are missing or differ from what their source builds."""
    return [p for p, text in targets().items() if not p.exists() or p.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a notebook is stale")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        for p in bad:
            print(f"out of date: {p.relative_to(HERE.parent)} (run python lessons/build.py)")
        return 1 if bad else 0
    SOLUTIONS.mkdir(exist_ok=True)
    for path, text in targets().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
