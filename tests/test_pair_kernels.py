"""benchmarks/pair_kernels.sh, the plain-C pairing of two kernel trees that RESULTS.md's "plain C,
paired in one process" numbers come from: it times both trees against the read limit, and refuses
to time a tree that sums wrongly. Correctness only: no timing assertions."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz import native, native_build

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "pair_kernels.sh"
CSRC = ROOT / "attnviz" / "csrc"
LINE = re.compile(
    r"^(\d+)x(\d+)x(\d+) threads (\d+) mode (\d+): read limit ([\d.]+) GB/s  A ([\d.]+)  B ([\d.]+)$"
)

pytestmark = [
    pytest.mark.slow,  # two builds of the kernel at -O3 per run
    pytest.mark.skipif(native_build.find_compiler() is None, reason="no C compiler"),
]


# the run's builds, kept by what they are built from (PAIR_CACHE): each tree compiles once a run,
# whichever worker pairs it first
CACHE = Path(os.environ["ATTNVIZ_CACHE_DIR"]) / "pair_kernels"


def pair(a: Path, b: Path, *shapes: str, **env: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "PAIR_CACHE": str(CACHE)} | env
    return subprocess.run(
        [str(SCRIPT), str(a), str(b), *shapes],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_one_tree_twice_reads_the_same_shapes_as_the_library_plans_them():
    # odd H off the 64-byte lines on one thread, and two threads sharing the sentence
    done = pair(CSRC, CSRC, "3x17x45", "1x200x777@2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    for line, (shape, threads) in zip(lines, [((3, 17, 45), 1), ((1, 200, 777), 2)], strict=True):
        m = LINE.match(line)
        assert m, line
        assert tuple(int(v) for v in m.groups()[:3]) == shape
        assert int(m.group(4)) == native.plan(*shape, threads)[0] == threads
        assert float(m.group(6)) > 0
        for ratio in (float(m.group(7)), float(m.group(8))):  # each against the read limit
            assert 0 < ratio < 5, line  # far above 1, the limit itself would be wrong


def test_a_tree_that_sums_wrongly_is_named_and_not_timed(tmp_path):
    broken = tmp_path / "csrc"
    shutil.copytree(CSRC, broken)
    source = broken / "weighted_rows.c"
    text = source.read_text()
    one_row_short = text.replace("t = shape[1],", "t = shape[1] - 1,", 1)
    assert one_row_short != text  # the mutation found its target
    source.write_text(one_row_short)
    done = pair(CSRC, broken, "3x17x45")
    assert done.returncode == 1
    assert re.match(r"3x17x45: B sums wrongly \(error [\d.e+-]+ of the largest sum", done.stdout)
    assert "read limit" not in done.stdout
    compiles = tmp_path / "compiles.log"
    cc = tmp_path / "cc"  # the compiler, each compile (-c) written down
    cc.write_text(
        f'#!/bin/sh\ncase " $* " in *" -c "*) echo "$*" >> {compiles};; esac\nexec cc "$@"\n'
    )
    cc.chmod(0o755)
    bound = pair(CSRC, broken, "3x17x45", TIME_WRONG="1", CC=str(cc))  # a bound: timed anyway
    assert bound.returncode == 0, bound.stderr
    said, timed = bound.stdout.splitlines()
    assert said.startswith("3x17x45: B sums wrongly") and LINE.match(timed), bound.stdout
    assert not compiles.exists()  # the second pairing compiled nothing: the first's builds


def test_a_changed_header_builds_both_afresh(tmp_path):
    changed = tmp_path / "csrc"
    shutil.copytree(CSRC, changed)
    done = pair(changed, changed, "3x17x45")  # the tree's own files: the run's builds
    assert done.returncode == 0, done.stderr
    cache = tmp_path / "cache"
    cache.mkdir()  # a copy of its own (other tests may add to the run's), finished builds only
    for built in CACHE.glob("*.o"):
        shutil.copy(built, cache)
    before = set(cache.glob("*.o"))
    vectors = changed / "vectors.h"  # a header the kernel and the read limit both include
    vectors.write_text(vectors.read_text() + "\n/* changed */\n")
    done = pair(changed, changed, "3x17x45", PAIR_CACHE=str(cache))
    assert done.returncode == 0, done.stderr
    # the kernel (B is A's object renamed) and the read limit, built again and kept beside
    assert len(set(cache.glob("*.o")) - before) == 2, sorted(cache.iterdir())
    assert not [p for p in cache.iterdir() if p.suffix != ".o"]  # no half-written copy


def test_without_shapes_it_says_how_to_use_it():
    done = pair(CSRC, CSRC)
    assert done.returncode == 2
    assert "A_DIR B_DIR SHAPE[@THREADS]" in done.stdout
    assert "PAIR_CACHE=DIR" in done.stdout  # the whole of the usage, the cache's line included


def test_two_plans_of_one_tree_are_paired_where_b_plan_says():
    # B called with four column chunks where the library plans two: the same x, the same sums
    done = pair(CSRC, CSRC, "3x61x777@2", B_PLAN="3 4 2 2")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    m = re.match(r"^(.*)  \(B: group 3 split 4 threads 2 mode 2\)$", line)
    assert m and LINE.match(m.group(1)), line
    assert all(0 < float(r) < 5 for r in LINE.match(m.group(1)).groups()[6:]), line
    bad = pair(CSRC, CSRC, "3x61x777@2", B_PLAN="3 four 2 2")
    assert bad.returncode == 2 and "B_PLAN must be four numbers" in bad.stderr
    assert "read limit" not in bad.stdout


def test_out_at_puts_the_output_where_asked_on_its_page():
    # out 256 bytes into a page: the kernel's sums are right there too, and the line says where
    done = pair(CSRC, CSRC, "2x64x512", OUT_AT="256")
    assert done.returncode == 0, done.stderr
    m = re.match(r"^(.*)  \(x at (\d+), out at 256 bytes into a page\)$", done.stdout.strip())
    assert m and LINE.match(m.group(1)), done.stdout
    assert int(m.group(2)) % 64 == 0
    bad = pair(CSRC, CSRC, "2x64x512", OUT_AT="100")
    assert bad.returncode == 2 and "OUT_AT must be a multiple of 64" in bad.stderr
