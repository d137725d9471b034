"""The lessons: generated notebooks are up to date and stored without outputs; every lesson runs top
to bottom in both versions; the student's checks say "not attempted", the solution's all pass."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import nbformat


@functools.cache
def _nb():
    """nbformat, imported with the first test that reads a notebook: with jupytext it costs ~3.5 s,
    which every worker paid while collecting, before any test could start."""
    import nbformat

    return nbformat


ROOT = Path(__file__).resolve().parents[1]
LESSONS = ROOT / "lessons"


def _load_build():
    spec = importlib.util.spec_from_file_location("lessons_build", LESSONS / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build()
SOURCES = sorted(build.SOURCES.glob("[0-9][0-9]_*.py"))
NOTEBOOKS = [LESSONS / f"{s.stem}.ipynb" for s in SOURCES]
SOLUTIONS = [LESSONS / "solutions" / f"{s.stem}.ipynb" for s in SOURCES]
CHECK_CALL = re.compile(r"^check_\w+\(", re.MULTILINE)
STATUS = re.compile(r'class="attnviz-check attnviz-([a-z-]+)"')


def test_there_are_four_lessons():
    assert [s.stem[:2] for s in SOURCES] == ["01", "02", "03", "04"]


def test_generated_notebooks_are_up_to_date():
    assert build.stale() == [], "run: python lessons/build.py"


@pytest.mark.parametrize("path", NOTEBOOKS + SOLUTIONS, ids=lambda p: str(p.relative_to(LESSONS)))
def test_notebooks_are_stored_without_outputs(path):
    nb = _nb().read(path, as_version=4)
    _nb().validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_notebooks_hold_no_solution(path):
    text = path.read_text()
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "**Answer.**" not in text


def test_student_stub_replaces_the_solution_lines():
    code = "def f(x):\n    '''doc'''\n    # BEGIN SOLUTION\n    y = x + 1\n    return y\n    # END SOLUTION\n"
    student = build.strip_solutions(code, student=True)
    solution = build.strip_solutions(code, student=False)
    assert student == (
        "def f(x):\n    '''doc'''\n"
        '    raise NotImplementedError("Your turn: replace this line.")\n'
    )
    assert solution == "def f(x):\n    '''doc'''\n    y = x + 1\n    return y\n"


@pytest.mark.parametrize(
    "code",
    [
        "# BEGIN SOLUTION\nx = 1\n",
        "x = 1\n# END SOLUTION\n",
        "# BEGIN SOLUTION\n# BEGIN SOLUTION\n",
    ],
)
def test_unbalanced_markers_are_refused(code):
    with pytest.raises(build.LessonSourceError):
        build.strip_solutions(code, student=True)


def test_lesson_2_states_exercise_1_without_giving_its_answer():
    """The student notebook's text (every cell but the stubs' bodies) never writes out the weighted
    sum or its einsum spec: the walk-through and the gallery that show them wait for the check."""
    nb = _nb().read(LESSONS / "02_aggregation.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    for answer in ("att_scores[..., None]).sum", "w[..., None]).sum", "bth,bt->bh"):
        assert answer not in text, answer
    gated = [c.source for c in nb.cells if "trace.broadcast_steps" in c.source]
    assert gated and all("if exercise_1_passed:" in c for c in gated)


def test_every_exercise_has_a_check_in_both_versions():
    for source in SOURCES:
        student = _nb().read(LESSONS / f"{source.stem}.ipynb", as_version=4)
        solution = _nb().read(LESSONS / "solutions" / f"{source.stem}.ipynb", as_version=4)
        n_stubs = sum(c.source.count("raise NotImplementedError") for c in student.cells)
        n_checks = sum(len(CHECK_CALL.findall(c.source)) for c in student.cells)
        assert n_stubs >= 1 and n_checks >= n_stubs, source.name
        assert sum(len(CHECK_CALL.findall(c.source)) for c in solution.cells) == n_checks


def test_setup_cell_installs_only_where_attnviz_is_missing():
    nb = build.build(SOURCES[0], student=True)
    setup = nb.cells[1].source
    assert 'find_spec("attnviz") is None' in setup
    assert "%pip install" in setup and "--no-deps" in setup


def _client(nb: nbformat.NotebookNode, folder: Path, km=None):
    """A notebook runner (nbclient is imported here: the inner loop runs no notebook); with km, it
    runs in that kernel and leaves it running."""
    from nbclient import NotebookClient

    return NotebookClient(
        nb,
        km=km,
        timeout=180,
        kernel_name="python3",
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(folder)}},
    )


class _Kernels:
    """One kernel per lesson for all of that lesson's runs (the student version, the solution,
    each set of wrong answers). Most of a run's time is the kernel's start and its first imports
    (torch, plotly, attnviz), so each run after the first reuses them; it starts as Restart & Run
    All would, in an empty namespace (%reset -f) and in its notebook's folder. A run that raises
    takes its kernel with it: the next run of that lesson starts a fresh one."""

    def __init__(self) -> None:
        self._owners: dict[str, object] = {}  # lesson -> the client that started its kernel

    def run(self, lesson: str, nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
        """Run every cell of nb (in place; raises CellExecutionError if a cell fails)."""
        owner = self._owners.get(lesson)
        if owner is None:
            owner = _client(_nb().v4.new_notebook(), folder)
            owner.create_kernel_manager()
            owner.start_new_kernel()
            self._owners[lesson] = owner
        fresh = _nb().v4.new_notebook(
            cells=[_nb().v4.new_code_cell(f"%reset -f\n%cd -q {json.dumps(str(folder))}")]
        )
        try:
            for notebook in (fresh, nb):
                client = _client(notebook, folder, km=owner.km)
                try:
                    client.execute()
                finally:
                    if client.kc is not None:
                        client.kc.stop_channels()
        except BaseException:
            self.close(lesson)
            raise
        return nb

    def close(self, lesson: str) -> None:
        owner = self._owners.pop(lesson, None)
        if owner is not None and owner.km is not None:
            owner._cleanup_kernel()


@pytest.fixture(scope="module")
def kernels():
    # lesson 03 times fused, whose benchmark first waits for the kernel's PyTorch operator to be
    # built (~20 s of compiling, once a run, into the run's cache folder, which the notebooks'
    # kernels inherit): built here, where nothing times out, so that no cell spends its 180 s on
    # a compile (on a machine busier than its two cores, one did)
    from attnviz import native_op

    native_op.build()
    kept = _Kernels()
    yield kept
    for lesson in list(kept._owners):
        kept.close(lesson)


def _run(kernels: _Kernels, path: Path) -> nbformat.NotebookNode:
    return kernels.run(path.stem, _nb().read(path, as_version=4), path.parent)


def _statuses(nb: nbformat.NotebookNode) -> list[str]:
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html", "")
            found += STATUS.findall(html if isinstance(html, str) else "".join(html))
    return found


def _n_checks(nb: nbformat.NotebookNode) -> int:
    return sum(len(CHECK_CALL.findall(c.source)) for c in nb.cells if c.cell_type == "code")


# what each lesson's exercises ask the student to work out: no output of a student notebook whose
# exercises have not passed may show it
ANSWERS = {
    "01_broadcasting": ["expand(-1, -1, h)", "].expand(B, T, H)"],
    "02_aggregation": [
        "att_scores[..., None]).sum",
        "bth,bt->bh",
        "bth,bh->bt",
        "upstream[:, None, :]).sum",
        "grad_weighted[:, None",
        "bmm(att_scores[:, None",
        "(att_scores * mask)",
    ],
    "03_cpu_vs_gpu": ["* element_size()", "element_size() *", "* itemsize"],
    "04_learned_scores": ["keys @ v", 'masked_fill(~mask, float("-inf"))', "[..., None]).sum"],
}


def _outputs_text(nb: nbformat.NotebookNode) -> str:
    """What the outputs show as text (streams, plain text, figure specs), less the student's own
    lines that a check quotes back."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            parts.append("".join(out.get("text", "")))
            parts.append("".join(data.get("text/plain", "")))
            parts.append(json.dumps(data.get("application/vnd.plotly.v1+json", "")))
    return re.sub(r"this line of your code: `[^`\n]*`", "", "\n".join(parts))


def _same_kernel(lesson: str):
    """A lesson's notebook runs stay on one pytest-xdist worker, where its kernel is."""
    return pytest.mark.xdist_group(f"test_lessons.py-{lesson}")


def _by_lesson(paths: list[Path]) -> list:
    return [pytest.param(p, marks=_same_kernel(p.stem), id=p.name) for p in paths]


@pytest.mark.slow
@pytest.mark.parametrize("path", _by_lesson(NOTEBOOKS))
def test_student_version_runs_and_reports_not_attempted(kernels, path):
    nb = _run(kernels, path)
    statuses = _statuses(nb)
    assert len(statuses) == _n_checks(nb)
    assert set(statuses) == {"not-attempted"}, statuses
    shown = _outputs_text(nb)
    for answer in ANSWERS[path.stem]:
        assert answer not in shown, answer


@pytest.mark.slow
@pytest.mark.parametrize("path", _by_lesson(SOLUTIONS))
def test_solution_version_passes_every_check(kernels, path):
    nb = _run(kernels, path)
    statuses = _statuses(nb)
    assert len(statuses) == _n_checks(nb)
    assert set(statuses) == {"passed"}, json.dumps(statuses)


# --------------------------------------------------------------------------------------------
# Wrong answers pasted into the student notebooks: Run All still completes, and every check says
# "failed" or "error" (issue 12: lesson 02 runs top to bottom with any wrong answer in any exercise)

STUB = re.compile(r'^(\s*)raise NotImplementedError\("Your turn: replace this line\."\)$', re.M)
DEF = re.compile(r"^def (\w+)\(", re.M)

WRONG_ANSWERS = {
    "02_aggregation": {
        "shape errors": {
            "weighted_sum": "return (net_output * att_scores).sum(dim=1)",
            "weighted_sum_einsum": 'return torch.einsum("bht,bt->bh", net_output, att_scores)',
            "weighted_sum_matmul": "return torch.bmm(att_scores, net_output)",
            "softmax_weighted_sum": "e = (scores - scores.max(dim=1).values).exp()\n"
            "return (net_output * (e / e.sum(1, keepdim=True))[..., None]).sum(1)",
            "masked_weighted_sum": "return (net_output * (att_scores * mask)).sum(dim=1)",
            "weights_grad": "return (net_output * grad_weighted[..., None]).sum(dim=2)",
        },
        "wrong shapes and numbers": {
            "weighted_sum": "return (net_output * att_scores[..., None]).mean(dim=1)",
            "weighted_sum_einsum": 'return torch.einsum("bth,bt->hb", net_output, att_scores)',
            "weighted_sum_matmul": "return torch.bmm(att_scores[:, None, :], net_output).squeeze()",
            "softmax_weighted_sum": "return (net_output * scores[..., None].softmax(-1)).sum(1)",
            "masked_weighted_sum": "return (net_output[mask] * att_scores[mask][:, None]).sum(0)",
            "weights_grad": "return (net_output * grad_weighted[:, None, :]).sum(dim=1)",
        },
        "not even a tensor": {
            "weighted_sum": "return undefined_name",
            "weighted_sum_einsum": "return None",
            "weighted_sum_matmul": "return (att_scores[:, None, :] @ net_output)[:, 0].detach()",
            "softmax_weighted_sum": "return [1, 2]",
            "masked_weighted_sum": "return torch.stack([(a[m] * w[m][:, None]).sum(0) "
            "for a, w, m in zip(net_output, att_scores, mask)])",
            "weights_grad": 'raise ValueError("oops")',
        },
    },
    "01_broadcasting": {
        "wrong": {
            "broadcast_shape": "return shape_a",
            "add_axis": "return att_scores[None]",
            "expand_weights": "return att_scores[..., None].repeat(1, 1, h)",
        },
    },
    "03_cpu_vs_gpu": {
        "wrong": {
            "time_it": "return [clock()] * repeats",
            "intermediate_bytes": "return b * t * h",
        },
        "raises": {"time_it": "return 1 / 0", "intermediate_bytes": 'raise KeyError("dtype")'},
    },
    "04_learned_scores": {
        "silent at T == H": {
            "scores": "return (keys * v).sum(dim=1)",
            "masked_softmax": "return scores.softmax(dim=1) * mask",
            "attention_pool": "return (net_output * att_scores[:, None]).sum(dim=1)",
        },
        "raises": {
            "scores": "return keys @ v[:, None]",
            "masked_softmax": "return (scores * mask).softmax(dim=2)",
            "attention_pool": 'raise ValueError("oops")',
        },
    },
}


def _paste(nb: nbformat.NotebookNode, answers: dict[str, str]) -> int:
    """Replace each stub's raise line with the wrong answer for its function; how many pasted."""
    pasted = 0
    for cell in nb.cells:
        names = DEF.findall(cell.source) if cell.cell_type == "code" else []
        stub = STUB.search(cell.source)
        if not names or stub is None or names[0] not in answers:
            continue
        indent = stub.group(1)
        body = "\n".join(indent + line for line in answers[names[0]].split("\n"))
        cell.source = cell.source[: stub.start()] + body + cell.source[stub.end() :]
        pasted += 1
    return pasted


WRONG_RUNS = [
    pytest.param(lesson, name, marks=_same_kernel(lesson), id=f"{lesson}-{name}")
    for lesson, sets in WRONG_ANSWERS.items()
    for name in sets
]


@pytest.mark.slow
@pytest.mark.parametrize(("lesson", "name"), WRONG_RUNS)
def test_student_notebook_runs_to_the_end_with_wrong_answers(kernels, lesson, name):
    answers = WRONG_ANSWERS[lesson][name]
    nb = _nb().read(LESSONS / f"{lesson}.ipynb", as_version=4)
    assert _paste(nb, answers) == len(answers)
    kernels.run(lesson, nb, LESSONS)  # raises CellExecutionError if any cell fails
    statuses = _statuses(nb)
    assert len(statuses) == _n_checks(nb)
    assert set(statuses) <= {"failed", "error"}, statuses
    shown = _outputs_text(nb)
    for answer in ANSWERS[lesson]:
        assert answer not in shown, answer


def test_wrong_answer_tables_cover_every_stub():
    for lesson, sets in WRONG_ANSWERS.items():
        nb = _nb().read(LESSONS / f"{lesson}.ipynb", as_version=4)
        stubbed = {
            DEF.findall(c.source)[0]
            for c in nb.cells
            if c.cell_type == "code" and STUB.search(c.source)
        }
        for name, answers in sets.items():
            assert set(answers) == stubbed, (lesson, name)
