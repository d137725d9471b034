"""Building the C kernel behind "fused" (attnviz.native): the cached library and what names it,
processes building at once, and, without a kernel (no compiler, a broken one, turned off, a failed
compile), a fallback that says why."""

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import attnviz
from attnviz import fused, native, native_build, native_op

needs_kernel = pytest.mark.skipif(
    not native.available(), reason=f"no C kernel here: {native.build().detail}"
)


# --- building: run in fresh processes, each with its own cache folder and environment ----------

BUILD_SCRIPT = textwrap.dedent(
    """
    import json, torch, attnviz
    from attnviz import native, fused
    b = native.build()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 128, 512, generator=g)
    w = torch.rand(4, 128, generator=g)
    got = attnviz.weighted_sum(x, w, method="fused")
    ok = torch.allclose(got.double(), attnviz.reference(x, w), rtol=1e-5, atol=1e-4)
    print(json.dumps({"ok": b.ok, "detail": b.detail, "compiled": b.compile_s is not None,
                      "path": fused.fused_path(x, w), "correct": ok}))
    """
)


def run_build(cache, script=BUILD_SCRIPT, *args, **env):
    # the C library alone: the operator around it (native_op) has tests of its own
    full = dict(os.environ, ATTNVIZ_CACHE_DIR=str(cache), ATTNVIZ_NATIVE_OP="0", **env)
    res = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=180, env=full
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def library_and_lock(cache) -> bool:
    """Whether the cache holds one library, its lock beside it, and nothing else."""
    names = sorted(p.name for p in cache.iterdir())
    return (
        len(names) == 2 and names[1] == f"{names[0]}.lock" and names[0].endswith((".so", ".dylib"))
    )


def test_the_cached_librarys_name_hashes_every_source_and_header_it_is_built_from():
    """A change to any file the kernel is compiled from names a new library: a header left out
    would let an old build be loaded for new code."""
    csrc = native_build.SOURCE.parent
    built = {csrc / n for n in ("weighted_rows.c", "read_floats.c")}
    built |= {csrc / n for s in built for n in _included(s.read_text(encoding="utf-8"))}
    assert (
        set(native_build.BUILT_FROM) == built == set(native_build.SOURCES) | set(csrc.glob("*.h"))
    )


def _included(source: str) -> set[str]:
    """The project's headers a C source includes (#include "name"), and theirs in turn."""
    names = set(re.findall(r'^#include "([^"]+)"', source, re.M))
    for name in list(names):
        names |= _included((native_build.SOURCE.parent / name).read_text(encoding="utf-8"))
    return names


@pytest.mark.slow
@needs_kernel
def test_processes_building_at_once_all_get_a_working_kernel_and_later_ones_load_it(tmp_path):
    full = dict(os.environ, ATTNVIZ_CACHE_DIR=str(tmp_path), ATTNVIZ_NATIVE_OP="0")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD_SCRIPT], stdout=subprocess.PIPE, text=True, env=full
        )
        for _ in range(3)
    ]
    outs = [json.loads(p.communicate(timeout=180)[0].strip().splitlines()[-1]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(o["ok"] and o["correct"] and o["path"] == "C row-sum kernel" for o in outs)
    # one compiled it, the others waited on its lock and loaded it: one library, renamed whole
    assert sorted(o["compiled"] for o in outs) == [False, False, True]
    assert library_and_lock(tmp_path)
    later = run_build(tmp_path)  # a process started afterwards loads it: nothing compiled
    assert later["ok"] and not later["compiled"] and later["correct"]
    assert library_and_lock(tmp_path)


# --- in this process: the same report as in a fresh process with this environment --------------


@pytest.fixture
def build_here(monkeypatch, tmp_path):
    """A build as a fresh process with this environment would make it: this process's own build
    is forgotten for the test (and given back after); -> a function of the environment that
    reports like BUILD_SCRIPT."""

    def run(**env) -> dict:
        monkeypatch.setattr(native_build, "_built", None)
        monkeypatch.setattr(native_op, "loaded", None)  # nor the operator around it
        monkeypatch.setattr(native_op, "learn", lambda x, threads: None)
        monkeypatch.setenv("ATTNVIZ_CACHE_DIR", str(tmp_path))
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        b = native.build()
        g = torch.Generator().manual_seed(0)
        x, w = torch.randn(4, 128, 512, generator=g), torch.rand(4, 128, generator=g)
        got = attnviz.weighted_sum(x, w, method="fused")
        return {
            "ok": b.ok,
            "detail": b.detail,
            "compiled": b.compile_s is not None,
            "path": fused.fused_path(x, w),
            "correct": torch.allclose(got.double(), attnviz.reference(x, w), rtol=1e-5, atol=1e-4),
        }

    return run


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"CC": "/nonexistent/cc"}, "the C compiler does not answer"),
        ({"CC": "false"}, "the C compiler does not answer"),
        ({"ATTNVIZ_NATIVE": "0"}, "turned off by ATTNVIZ_NATIVE=0"),
    ],
    ids=["missing compiler", "broken compiler", "turned off"],
)
def test_without_the_kernel_fused_falls_back_and_says_why(build_here, tmp_path, env, reason):
    out = build_here(**env)
    assert not out["ok"] and out["detail"].startswith(reason)
    assert out["path"] == "embedding-bag row sum" and out["correct"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # compiles the kernel
@needs_kernel
def test_an_unwritable_cache_builds_in_a_private_folder(build_here, tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    out = build_here(ATTNVIZ_CACHE_DIR=str(blocker / "cache"))  # its parent is a file
    assert out["ok"] and out["compiled"] and out["correct"]
    assert out["path"] == "C row-sum kernel"


def test_a_failed_compile_is_reported_with_the_compilers_words(build_here, tmp_path):
    # a "compiler" that answers --version but cannot compile
    fake = tmp_path / "fakecc"
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then echo fakecc 1.0; exit 0; fi\n'
        'echo "fakecc: error: no" >&2; exit 1\n'
    )
    fake.chmod(0o755)
    out = build_here(CC=str(fake))
    assert not out["ok"] and "compiling weighted_rows.c failed: fakecc: error: no" in out["detail"]
    assert out["path"] == "embedding-bag row sum" and out["correct"]


# --- a compiler that refuses NATIVE_FLAGS, and one cut off by the time limit -----------------------

NATIVE_ONLY = 'for a in "$@"; do [ "$a" = -march=native ] && {}; done\nexec cc "$@"'


@pytest.mark.slow  # compiles the kernel
@needs_kernel
def test_a_compiler_that_refuses_native_flags_gets_portable_code_under_a_name_of_its_own(
    build_here, tmp_path
):
    refuses = NATIVE_ONLY.format('{ echo "cc: error: unknown -march=native" >&2; exit 1; }')
    cc = _slow_cc(tmp_path, refuses)
    out = build_here(CC=cc)
    assert out["ok"] and out["compiled"] and out["correct"]
    assert out["path"] == "C row-sum kernel" and "-march=native" not in out["detail"]
    assert len(list(tmp_path.glob("weighted_rows-*-portable.so"))) == 1
    assert list(tmp_path.glob("*.so")) == list(tmp_path.glob("*-portable.so"))  # not as native
    again = build_here(CC=cc)  # a later process loads it: no compile tried
    assert again["ok"] and not again["compiled"] and again["detail"] == out["detail"]


@needs_kernel
def test_a_compile_cut_off_by_the_time_limit_leaves_no_library_for_later_processes(
    build_here, tmp_path, monkeypatch
):
    """A busy machine that outlasts the time limit is no answer of the compiler's: nothing is
    cached, so the next process compiles again (with portable code cached in its place, every
    later process would have loaded the slow kernel)."""
    built = native.build().path  # what the fake compiler "builds" without -march=native, at once
    monkeypatch.setattr(native_build, "COMPILE_TIMEOUT_S", 1)
    copies = f'while [ $# -gt 1 ]; do [ "$1" = -o ] && exec cp {built} "$2"; shift; done; exit 1'
    slow = NATIVE_ONLY.format("exec sleep 30").replace('exec cc "$@"', copies)
    out = build_here(CC=_slow_cc(tmp_path, slow))
    assert not out["ok"] and "the compiler took over 1 s" in out["detail"]
    assert out["path"] == "embedding-bag row sum" and out["correct"]
    assert not list(tmp_path.glob("*.so")), sorted(p.name for p in tmp_path.iterdir())


# --- built in the background (native_op.start): the app's first page run does not wait --------

START_SCRIPT = textwrap.dedent(
    """
    import json, sys, time, torch, attnviz
    from attnviz import native, native_build, native_op
    native_op.start()  # what app.py does at the end of its first page run
    waiting = native_build._built is None  # start returned while the C library compiles
    open(sys.argv[1], "w").close()  # the compiler may go on now
    x, w = torch.randn(3, 50, 700), torch.rand(3, 50)
    got = attnviz.weighted_sum(x, w, method="fused")  # waits for the library, then uses it
    ok = torch.allclose(got.double(), attnviz.reference(x, w), rtol=1e-5, atol=1e-4)
    print(json.dumps({"waiting": waiting, "ok": native.build().ok, "correct": ok}))
    """
)

EXIT_SCRIPT = textwrap.dedent(
    """
    import pathlib, sys, time
    from attnviz import native_op
    native_op.start()
    cache = pathlib.Path(sys.argv[1])
    while not list(cache.glob("*.tmp")):  # the C compiler has started, in the build thread
        time.sleep(0.05)
    """
)


def _slow_cc(tmp_path, body: str):
    """A C compiler that answers --version as cc does, and compiles as ``body`` says."""
    cc = tmp_path / "slow-cc"
    cc.write_text('#!/bin/sh\ncase "$1" in --version) exec cc --version;; esac\n' + body + "\n")
    cc.chmod(0o755)
    return str(cc)


@pytest.mark.slow  # compiles the kernel
@needs_kernel
def test_the_app_start_builds_the_c_library_in_the_background(tmp_path):
    go = tmp_path / "go"  # the compiler waits for it: a compile that outlasts start(), surely
    cc = _slow_cc(tmp_path, f'while [ ! -e {go} ]; do sleep 0.05; done\nexec cc "$@"')
    out = run_build(tmp_path / "cache", START_SCRIPT, str(go), CC=cc)
    assert out == {"waiting": True, "ok": True, "correct": True}


@pytest.mark.slow
@needs_kernel
def test_an_exit_while_the_c_library_compiles_leaves_no_half_file_nor_compiler(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    child = tmp_path / "child.pid"
    cc = _slow_cc(tmp_path, f"sleep 120 & echo $! > {child}\nwait")  # a child holds the pipes
    env = dict(os.environ, ATTNVIZ_CACHE_DIR=str(cache), CC=cc, ATTNVIZ_NATIVE_OP="0")
    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, str(cache)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,  # a bound, not a measure: the exit waits on no compile
    )
    assert done.returncode == 0, done.stderr
    assert not list(cache.glob("*.tmp")), sorted(p.name for p in cache.iterdir())
    assert_stopped(int(child.read_text()))


def assert_stopped(pid: int) -> None:
    """A compiler's child, stopped with its driver by the exit (a zombie until its parent reaps
    it); a few seconds' grace for the kernel to finish the kill, none for a compile."""
    for _ in range(50):
        if not os.path.exists(f"/proc/{pid}") or _zombie(pid):
            return
        time.sleep(0.1)
    raise AssertionError(f"the compiler's child {pid} still runs")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(") ", 1)[1].startswith("Z")
    except (FileNotFoundError, IndexError):
        return True
