"""A class's worth of generated homework for ``attnviz.grade``, with the gradebook it must give.

``build(folder, outside)`` writes 40 submissions into folder, made from the released notebooks
(lessons/NN_name.ipynb): right answers (the solution notebooks' cells), known mistakes, broken
files, and hostile code (endless loops, memory bombs, files written or removed outside the
sandbox, frames and objects inspected to read the checker's cases, processes, sockets, a patched
checker). outside is a folder beyond the grader's reach: hostile notebooks try to write and delete
there. It returns the expected gradebook, {(student, exercise): (status, mistake)}, written by hand
from what each notebook does (the oracle), never from a run of the grader.

    python tests/grade_submissions.py FOLDER   # writes them, to try the CLI by hand
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

LESSONS = Path(__file__).resolve().parents[1] / "lessons"
STUB = 'raise NotImplementedError("Your turn: replace this line.")'
L01, L02, L03 = "01_broadcasting", "02_aggregation", "03_cpu_vs_gpu"

PASSED = ("passed", "")
STUB_ROW = ("not attempted", "")


def _not_run(problem: str) -> tuple[str, str]:
    return ("not run", problem)


# --------------------------------------------------------------------------------------------
# Function bodies: each is what a student wrote in place of the stub.

LEFT_ALIGNED = """
n = max(len(shape_a), len(shape_b))
a = tuple(shape_a) + (1,) * (n - len(shape_a))
b = tuple(shape_b) + (1,) * (n - len(shape_b))
out = []
for x, y in zip(a, b):
    if x != y and 1 not in (x, y):
        raise ValueError(f"{x} and {y} do not fit")
    out.append(max(x, y))
return tuple(out)
"""

BODIES = {
    # lesson 01
    "axis_in_front": "return att_scores[None]",
    "axis_in_middle": "return att_scores[:, None]",
    "two_axes": "return att_scores[..., None, None]",
    "copied": "return att_scores[..., None].repeat(1, 1, h)",
    "expand_without_axis": "return att_scores.expand(att_scores.shape[0], att_scores.shape[1], h)",
    "expanded_wrong_axis": (
        "return att_scores[:, None, :].expand(att_scores.shape[0], h, att_scores.shape[1])"
    ),
    "left_aligned": LEFT_ALIGNED,
    # lesson 02
    "forgot_new_axis": "return (net_output * att_scores).sum(dim=1)",
    "mean_not_sum": "return (net_output * att_scores[..., None]).mean(dim=1)",
    "wrong_axis": "return (net_output * att_scores[..., None]).sum(dim=2)",
    "forgot_softmax": "return (net_output * scores[..., None]).sum(dim=1)",
    "ignored_mask": "return (net_output * att_scores[..., None]).sum(dim=1)",
    "grad_ignored_upstream": "return net_output.sum(dim=2)",
    "answer_key": "return attnviz.weighted_sum(net_output, att_scores)",
    "python_loop": (
        "return torch.stack([(net_output[b] * att_scores[b][:, None]).sum(dim=0)"
        " for b in range(net_output.shape[0])])"
    ),
    # lesson 03
    "no_sync": """
op()
times = []
for _ in range(repeats):
    start = clock()
    op()
    times.append(clock() - start)
return times
""",
    "no_warmup": """
times = []
for _ in range(repeats):
    sync()
    start = clock()
    op()
    sync()
    times.append(clock() - start)
return times
""",
    "elements": "return b * t * h",
    "fixed_itemsize_4": "return b * t * h * 4",
}


def _hostile(outside: Path) -> dict[str, str]:
    """Bodies that attack the grader; outside is where they try to write."""
    target = str(outside / "written-by-a-notebook.txt")
    victim = str(outside / "victim.txt")
    return {
        "endless_loop": "while True:\n    pass",
        "sleep_forever": "import time\ntime.sleep(10**6)",
        "getframe": "import sys\nreturn sys._getframe(1).f_locals",
        "inspect_stack": "import inspect\nreturn inspect.stack()[1].frame.f_locals",
        "traceback_frame": (
            "try:\n    raise ValueError\nexcept ValueError as exc:\n"
            "    return exc.__traceback__.tb_frame.f_back.f_locals"
        ),
        "gc_objects": (
            "import gc\nreturn [o for o in gc.get_objects() if type(o).__name__ == 'Case']"
        ),
        "current_frames": "import sys\nreturn sys._current_frames()",
        "write_outside": f"open({target!r}, 'w').write('x')\nreturn att_scores[..., None]",
        "write_here": (
            "import os, tempfile\n"
            "with open('scratch.txt', 'w') as f:\n    f.write('allowed')\n"
            "os.rename('scratch.txt', 'kept.txt')\n"
            "with tempfile.TemporaryDirectory() as d:\n"
            "    open(os.path.join(d, 'x'), 'w').close()\n"
            "return att_scores[..., None].expand(*att_scores.shape, h)"
        ),
        "read_etc": "return tuple(open('/etc/hostname').read())",
        "remove_outside": f"import os\nos.remove({victim!r})\nreturn att_scores[..., None]",
        "plant_by_dir_fd": (
            f"import os\nfd = os.open({str(outside)!r}, os.O_RDONLY)\n"
            "os.close(os.open('planted.py', os.O_CREAT | os.O_WRONLY, dir_fd=fd))\n"
            "return att_scores[..., None].expand(*att_scores.shape, h)"
        ),
        "finalizer_patch": (
            "import attnviz.exercises.rules as rules\n"
            "class Bomb:\n"
            "    def __del__(self):\n"
            "        real = rules.find_loop\n"
            "        def fake(fn, outcomes):\n"
            "            rules.find_loop = real\n"
            "            return ''\n"
            "        rules.find_loop = fake\n"
            "bomb = Bomb()\nbomb.me = bomb\ndel bomb\n"
            "return torch.stack([(net_output[b] * att_scores[b][:, None]).sum(dim=0)"
            " for b in range(net_output.shape[0])])"
        ),
        "subprocess": "import subprocess\nsubprocess.run(['true'])\nreturn att_scores[..., None]",
        "fork": "import os\nos.fork()\nreturn att_scores[..., None].expand(*att_scores.shape, h)",
        "socket": (
            "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)\n"
            "return tuple(shape_a)"
        ),
        "patch_checker": (
            "import attnviz.exercises.engine as engine\n"
            "engine.judge_tensor = lambda o: o\nreturn att_scores"
        ),
        "subclass": (
            "class Sneaky(torch.Tensor):\n"
            "    @classmethod\n"
            "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
            "        return True\n"
            "return att_scores[..., None].as_subclass(Sneaky)"
        ),
        "leave_mode": (
            "from torch.overrides import TorchFunctionMode\n"
            "TorchFunctionMode().__enter__()\n"
            "return att_scores[..., None].expand(*att_scores.shape, h)"
        ),
        "memory_bytes": "x = bytearray(10**12)\nreturn att_scores[..., None]",
        "memory_torch": "x = torch.empty(2**40)\nreturn att_scores[..., None].expand(*att_scores.shape, h)",
        "exit_process": "import os\nos._exit(3)",
        "sys_exit": "import sys\nsys.exit(0)",
        "flood": "print('x' * 10**7)\nreturn att_scores[..., None]",
        "peek_device": "return [op.__self__.warm] * repeats",
        "forge": (
            "import json, os, struct\n"
            "fake = json.dumps({'type': 'result', 'index': 1, 'status': 'passed'}).encode()\n"
            "for fd in range(3, 64):\n"
            "    try:\n"
            "        os.write(fd, struct.pack('>I', len(fake)) + fake)\n"
            "    except OSError:\n"
            "        pass\n"
            "return att_scores"
        ),
    }


# --------------------------------------------------------------------------------------------
# Notebooks


def _load(name: str, solution: bool = False) -> dict:
    folder = LESSONS / "solutions" if solution else LESSONS
    return json.loads((folder / f"{name}.ipynb").read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    s = cell["source"]
    return "".join(s) if isinstance(s, list) else s


def _cell_of(nb: dict, function: str) -> int:
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and f"def {function}(" in _source(cell):
            return i
    raise LookupError(function)


def _with_body(source: str, body: str) -> str:
    lines = source.split("\n")
    i = next(k for k, line in enumerate(lines) if line.strip() == STUB)
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = textwrap.indent(textwrap.dedent(body).strip("\n"), indent)
    return "\n".join(lines)


def notebook(lesson: str, answers: dict[str, str], extra: tuple[str, ...] = ()) -> dict:
    """The released notebook of lesson with answers {function: 'right' | a body | ('cell', src)}
    filled in, and extra code cells appended."""
    nb = _load(lesson)
    solution = _load(lesson, solution=True)
    for function, answer in answers.items():
        i = _cell_of(nb, function)
        if answer == "right":
            source = _source(solution["cells"][_cell_of(solution, function)])
        elif answer.startswith("cell:"):
            source = answer[len("cell:") :]
        else:
            source = _with_body(_source(nb["cells"][i]), answer)
        nb["cells"][i]["source"] = source
    for src in extra:
        nb["cells"].append(
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": src,
            }
        )
    return nb


def _write(path: Path, nb: dict | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, bytes):
        path.write_bytes(nb)
    else:
        path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


# --------------------------------------------------------------------------------------------
# The class


def build(folder: Path, outside: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """Write 40 submissions into folder; return {(student, exercise): (status, mistake)}."""
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "victim.txt").write_text("the teacher's file")
    h = _hostile(outside)
    b = BODIES
    expected: dict[tuple[str, str], tuple[str, str]] = {}
    l01 = ("broadcast_shape", "add_axis", "expand_weights")
    l02 = (
        "weighted_sum",
        "weighted_sum_einsum",
        "weighted_sum_matmul",
        "softmax_weighted_sum",
        "masked_weighted_sum",
        "weights_grad",
    )
    l03 = ("time_it", "intermediate_bytes")

    def add(
        student: str,
        lesson: str,
        answers: dict,
        rows: dict,
        *,
        file: str = "",
        extra: tuple[str, ...] = (),
    ) -> None:
        _write(folder / (file or f"{student}_{lesson}.ipynb"), notebook(lesson, answers, extra))
        functions = {L01: l01, L02: l02, L03: l03}[lesson]
        for fn in functions:
            expected[(student, fn)] = rows.get(fn, STUB_ROW)

    right01 = dict.fromkeys(l01, "right")
    all_passed01 = dict.fromkeys(l01, PASSED)
    forbidden, tampered = _not_run("forbidden"), _not_run("tampered")
    timeout = _not_run("time_limit")

    # lesson 01: right, untouched, known mistakes
    add("s01", L01, right01, all_passed01)
    add("s02", L01, {}, {})
    add(
        "s03",
        L01,
        {
            "broadcast_shape": b["left_aligned"],
            "add_axis": b["axis_in_front"],
            "expand_weights": b["copied"],
        },
        {
            "broadcast_shape": ("failed", "left_aligned"),
            "add_axis": ("failed", "axis_in_front"),
            "expand_weights": ("failed", "copied"),
        },
    )
    add(
        "s04",
        L01,
        {
            "broadcast_shape": "right",
            "add_axis": b["axis_in_middle"],
            "expand_weights": b["expand_without_axis"],
        },
        {
            "broadcast_shape": PASSED,
            "add_axis": ("failed", "axis_in_middle"),
            "expand_weights": ("error", "expand_without_axis"),
        },
    )
    add(
        "s05",
        L01,
        {"add_axis": b["two_axes"], "expand_weights": b["expanded_wrong_axis"]},
        {"add_axis": ("failed", "two_axes"), "expand_weights": ("failed", "expanded_wrong_axis")},
    )
    # broken notebooks
    renamed = "cell:def add_axis_v2(att_scores):\n    return att_scores[..., None]\n"
    add(
        "s06",
        L01,
        {**right01, "add_axis": renamed},
        {**all_passed01, "add_axis": _not_run("missing_function")},
    )
    broken = "cell:def broadcast_shape(shape_a, shape_b):\n    return tuple(shape_a\n"
    add(
        "s07",
        L01,
        {**right01, "broadcast_shape": broken},
        {**all_passed01, "broadcast_shape": _not_run("syntax_error")},
    )
    add(
        "s08",
        L01,
        {**right01, "add_axis": h["endless_loop"]},
        {**all_passed01, "add_axis": timeout},
    )
    add(
        "s09",
        L01,
        {**right01, "broadcast_shape": h["sleep_forever"]},
        {**all_passed01, "broadcast_shape": timeout},
    )
    # hostile notebooks: the checker's cases, files, processes, the checker itself
    add(
        "s10",
        L01,
        {
            "broadcast_shape": h["inspect_stack"],
            "add_axis": h["getframe"],
            "expand_weights": h["traceback_frame"],
        },
        dict.fromkeys(l01, forbidden),
    )
    add(
        "s11",
        L01,
        {**right01, "add_axis": h["gc_objects"]},
        {**all_passed01, "add_axis": forbidden},
    )
    add(
        "s12",
        L01,
        {
            "broadcast_shape": h["read_etc"],
            "add_axis": h["write_outside"],
            "expand_weights": h["write_here"],
        },
        {"broadcast_shape": forbidden, "add_axis": forbidden, "expand_weights": PASSED},
    )
    add(
        "s13",
        L01,
        {"broadcast_shape": h["socket"], "add_axis": h["subprocess"], "expand_weights": h["fork"]},
        dict.fromkeys(l01, forbidden),
    )
    add(
        "s14",
        L01,
        {**right01, "add_axis": h["remove_outside"], "expand_weights": h["plant_by_dir_fd"]},
        {**all_passed01, "add_axis": forbidden, "expand_weights": forbidden},
    )
    add(
        "s15",
        L01,
        {**right01, "add_axis": h["patch_checker"]},
        {**all_passed01, "add_axis": tampered},
    )
    patch_at_definition = (
        "cell:import attnviz.exercises.engine\n"
        "def add_axis(att_scores, _=setattr(attnviz.exercises.engine, 'run', None)):\n"
        "    return att_scores[..., None]\n"
    )
    add("s16", L01, {**right01, "add_axis": patch_at_definition}, dict.fromkeys(l01, tampered))
    add(
        "s17",
        L01,
        {"broadcast_shape": "right", "add_axis": h["subclass"], "expand_weights": h["leave_mode"]},
        {
            "broadcast_shape": PASSED,
            "add_axis": ("failed", "not_a_tensor"),
            "expand_weights": tampered,
        },
    )
    add(
        "s18",
        L01,
        {
            "broadcast_shape": "right",
            "add_axis": h["memory_bytes"],
            "expand_weights": h["memory_torch"],
        },
        {
            "broadcast_shape": PASSED,
            "add_axis": _not_run("memory_limit"),
            "expand_weights": _not_run("memory_limit"),
        },
    )
    add(
        "s19",
        L01,
        {
            "broadcast_shape": "right",
            "add_axis": h["exit_process"],
            "expand_weights": h["sys_exit"],
        },
        {
            "broadcast_shape": PASSED,
            "add_axis": _not_run("crashed"),
            "expand_weights": ("error", ""),
        },
    )
    hang = "class Hang:\n    while True:\n        pass\n"
    add("s20", L01, right01, dict.fromkeys(l01, timeout), extra=(hang,))
    # top-level code that is never run, a lambda, a %%time cell, a byte-order mark
    top_level = "while True:\n    pass\nopen('/etc/hostname').read()\n"
    lam = "cell:add_axis = lambda att_scores: att_scores[..., None]\n"
    add("s21", L01, {**right01, "add_axis": lam}, all_passed01, extra=(top_level,))
    nb = _load(L01, solution=True)
    i = _cell_of(nb, "expand_weights")
    nb["cells"][i]["source"] = "%%time\n" + _source(nb["cells"][i])
    path = folder / f"s21_{L01}.ipynb"
    mixed = json.loads(path.read_text(encoding="utf-8"))
    mixed["cells"][i] = nb["cells"][i]
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(mixed).encode())
    add("s22", L01, {**right01, "add_axis": h["flood"]}, all_passed01)
    # files that are not (good) notebooks
    _write(
        folder / f"s23_{L01}.ipynb",
        {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
    )
    expected.update({("s23", fn): _not_run("missing_function") for fn in l01})
    _write(folder / f"s24_{L01}.ipynb", bytes(range(256)) * 4)
    _write(folder / f"s25_{L01}.ipynb", b'{"cells": 5}')
    _write(folder / f"s26_{L01}.ipynb", b"\xff\xfe not utf-8 " + b"[" * 100_000)
    for s in ("s24", "s25", "s26"):
        expected.update({(s, fn): _not_run("unreadable_notebook") for fn in l01})
    _write(
        folder / "s27.ipynb",
        {
            "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1"}],
            "metadata": {},
        },
    )
    expected[("s27", "")] = _not_run("unknown_lesson")

    # lesson 02
    right02 = dict.fromkeys(l02, "right")
    add("s28", L02, right02, dict.fromkeys(l02, PASSED))
    add("s29", L02, {}, {})
    add(
        "s30",
        L02,
        {
            "weighted_sum": b["forgot_new_axis"],
            "weighted_sum_einsum": b["wrong_axis"],
            "softmax_weighted_sum": b["forgot_softmax"],
            "masked_weighted_sum": b["ignored_mask"],
            "weights_grad": b["grad_ignored_upstream"],
        },
        {
            "weighted_sum": ("error", "forgot_new_axis"),
            "weighted_sum_einsum": ("failed", "wrong_axis"),
            "softmax_weighted_sum": ("failed", "forgot_softmax"),
            "masked_weighted_sum": ("failed", "ignored_mask"),
            "weights_grad": ("failed", "grad_ignored_upstream"),
        },
    )
    add(
        "s31",
        L02,
        {
            "weighted_sum": b["mean_not_sum"],
            "weighted_sum_matmul": b["answer_key"],
            "weighted_sum_einsum": h["finalizer_patch"],
        },
        {
            "weighted_sum": ("failed", "mean_not_sum"),
            "weighted_sum_matmul": ("failed", "answer_key"),
            "weighted_sum_einsum": tampered,
        },
    )
    add(
        "s32",
        L02,
        {"weighted_sum": "right", "weighted_sum_einsum": b["python_loop"]},
        {"weighted_sum": PASSED, "weighted_sum_einsum": ("failed", "python_loop")},
    )
    # a notebook that writes fake results into every file descriptor it can
    add(
        "s33",
        L01,
        {**right01, "add_axis": h["forge"]},
        {**all_passed01, "add_axis": _not_run("crashed")},
    )

    # lesson 03
    add("s34", L03, dict.fromkeys(l03, "right"), dict.fromkeys(l03, PASSED))
    add("s35", L03, {}, {})
    add(
        "s36",
        L03,
        {"time_it": b["no_sync"], "intermediate_bytes": b["elements"]},
        {"time_it": ("failed", "no_sync"), "intermediate_bytes": ("failed", "elements")},
    )
    add(
        "s37",
        L03,
        {"time_it": b["no_warmup"], "intermediate_bytes": b["fixed_itemsize_4"]},
        {"time_it": ("failed", "no_warmup"), "intermediate_bytes": ("failed", "fixed_itemsize_4")},
    )
    add(
        "s38",
        L03,
        {"time_it": h["peek_device"], "intermediate_bytes": h["current_frames"]},
        {"time_it": ("error", ""), "intermediate_bytes": forbidden},
    )

    # other layouts: nbgrader's (a folder per student), and a folder per lesson
    add("carol", L01, right01, all_passed01, file=f"carol/{L01}.ipynb")
    add(
        "dave",
        L02,
        {"weighted_sum": b["forgot_new_axis"]},
        {"weighted_sum": ("error", "forgot_new_axis")},
        file=f"{L02}/dave.ipynb",
    )
    return expected


if __name__ == "__main__":
    out = Path(sys.argv[1])
    rows = build(out / "submissions", out / "outside")
    print(f"{len({s for s, _ in rows})} submissions in {out / 'submissions'}")
