"""The PyTorch operator's build and load (attnviz.native_op), each in a fresh process: turned off,
built in the background and then used, a process that exits while it compiles or loads, the build
without the Python builtin, and a worker that only loads what the server built."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from attnviz import native, native_op
from tests.test_native_build import assert_stopped
from tests.test_native_op import needs_op, op  # noqa: F401  (op: a fixture, by its name)


def _python(script: str, *args: str, timeout: int = 300, **env: str) -> str:
    """Run ``script`` in a fresh interpreter with these environment variables; its stdout, after
    checking that it exited cleanly."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


OFF_SCRIPT = textwrap.dedent(
    """
    import json, torch
    from attnviz import fused, native_op
    x, w = torch.randn(2, 64, 1024), torch.rand(2, 64)
    got = fused.weighted_sum_fused(x, w)
    built = native_op.build(timeout=600)
    ok = torch.allclose(got, (x.double() * w.double()[..., None]).sum(1).float(), atol=1e-4)
    print(json.dumps({"ok": built.ok, "detail": built.detail, "loaded": native_op.loaded is not None,
                      "correct": ok}))
    """
)


@pytest.mark.slow
def test_turned_off_fused_stays_on_ctypes_and_says_why():
    out = _python(OFF_SCRIPT, ATTNVIZ_NATIVE_OP="0")
    assert '"ok": false' in out and "turned off by ATTNVIZ_NATIVE_OP=0" in out
    assert '"loaded": false' in out and '"correct": true' in out


@pytest.mark.slow
@needs_op
def test_a_fresh_process_builds_the_operator_in_the_background_and_uses_it(tmp_path):
    # the C library is there, as a replica's or a run's before finds it (its own build:
    # test_native_build); the operator is not
    shutil.copy(native.build().path, tmp_path)
    out = _python(OFF_SCRIPT, timeout=600, ATTNVIZ_CACHE_DIR=str(tmp_path))
    assert '"ok": true' in out and '"loaded": true' in out
    assert '"correct": true' in out
    built = sorted(p.name.split("-")[0] for p in tmp_path.iterdir() if p.suffix == ".so")
    assert built == ["weighted_rows", "weighted_rows_op"]  # no temporary left behind


@pytest.mark.slow
@needs_op
def test_a_process_that_exits_while_the_operator_builds_leaves_no_half_file(tmp_path):
    script = "import torch\nfrom attnviz import fused\n"
    script += "fused.weighted_sum_fused(torch.randn(2, 64, 1024), torch.rand(2, 64))\n"
    shutil.copy(native.build().path, tmp_path)  # the C library built, the operator not
    _python(script, ATTNVIZ_CACHE_DIR=str(tmp_path))
    left = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock"))
    assert len(left) == 1 and left[0].startswith("weighted_rows-"), left  # the C library only


EXIT_MID_COMPILE = textwrap.dedent(
    """
    import pathlib, sys, time
    from attnviz import native_op
    native_op.start()
    cache = pathlib.Path(sys.argv[1])
    while not list(cache.glob("*.tmp")):  # the compiler has started
        time.sleep(0.05)
    """
)


@pytest.mark.slow
@needs_op
def test_an_exit_mid_compile_stops_the_compilers_children_too(tmp_path):
    """The compiler driver runs programs of its own (cc1plus, as, ld) that hold its pipes: the exit
    stops them all, so the build thread returns and removes its temporary at once. Killing the
    driver alone left the child holding the pipes, the exit gave up waiting after 10 s, and the
    temporary stayed (a Streamlit server stopped during the build)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(native.build().path, cache)  # the C library built, the operator not
    child = tmp_path / "child.pid"
    cxx = tmp_path / "c++"  # answers --version; a compile is a child that holds the pipes
    cxx.write_text(
        "#!/bin/sh\n"
        'case "$1" in --version) echo "slow c++ 1.0"; exit 0;; esac\n'
        f"sleep 120 & echo $! > {child}\nwait\n"
    )
    cxx.chmod(0o755)
    _python(EXIT_MID_COMPILE, str(cache), timeout=180, ATTNVIZ_CACHE_DIR=str(cache), CXX=str(cxx))
    assert not list(cache.glob("*.tmp")), sorted(p.name for p in cache.iterdir())
    assert_stopped(int(child.read_text()))  # the child is gone too


def test_the_temporary_is_made_with_the_compiler_under_the_exits_lock(tmp_path, monkeypatch):
    # made before the lock the exit takes (_stop_compiling), an exit in between found no compiler
    # to wait for, the build thread (a daemon) was cut off and its temporary stayed behind
    held = []
    mkstemp = native_op.tempfile.mkstemp

    def watched(*args, **kwargs):
        held.append(native_op._lock.locked())
        return mkstemp(*args, **kwargs)

    monkeypatch.setattr(native_op.tempfile, "mkstemp", watched)
    assert native_op._compile(["true"], tmp_path / "op.so") == ""  # `true` "writes" it
    assert held == [True]
    assert [p.name for p in tmp_path.iterdir()] == ["op.so"]
    monkeypatch.setattr(native_op, "_closing", True)  # once the exit began: nothing is made
    assert native_op._compile(["true"], tmp_path / "again.so") == "the process is exiting"
    assert held == [True] and [p.name for p in tmp_path.iterdir()] == ["op.so"]


EXIT_WHILE_LOADING = textwrap.dedent(
    """
    import threading, time, torch
    from attnviz import native, native_op
    loading, real = threading.Event(), torch.ops.load_library
    def slow_load(path):
        loading.set()
        time.sleep(1.0)  # the process exits meanwhile
        real(path)
        print("loaded", flush=True)
    torch.ops.load_library = slow_load
    native_op.start()
    assert loading.wait(120)
    """
)


@pytest.mark.slow
@needs_op
def test_a_process_that_exits_while_the_operator_loads_lets_the_load_finish():
    """A library cut off mid-load by the exit's C++ destructors ended the process with
    std::terminate now and then; the exit now waits for the load (the run's cache has the
    operator, so the build thread only loads it)."""
    assert native_op.build(timeout=600).ok
    assert _python(EXIT_WHILE_LOADING).splitlines() == ["loaded"]


NO_ENTRY_SCRIPT = textwrap.dedent(
    """
    import json, torch
    from attnviz import fused, native_op
    # a compiler that refuses the builtin's flags: its compile fails (at once, unlike broken
    # headers, which fail only after torch's headers are read)
    native_op.python_entry = lambda include, lib: ["-DATTNVIZ_PYTHON_ENTRY", "--no-such-flag"]
    built = native_op.build(timeout=600)
    x, w = torch.randn(2, 64, 1024), torch.rand(2, 64)
    fused.weighted_sum_fused(x, w)  # the ctypes path, which hands the plan over
    got = fused.weighted_sum_fused(x, w)
    ok = torch.allclose(got, (x.double() * w.double()[..., None]).sum(1).float(), atol=1e-4)
    print(json.dumps({"ok": built.ok, "detail": built.detail, "correct": ok,
                      "loaded": type(native_op.loaded).__name__, "read": native_op.read_floats,
                      "planned": native_op.plan_count()}))
    """
)


@pytest.mark.slow
@needs_op
def test_where_the_builtin_does_not_build_fused_calls_the_operator(tmp_path):
    shutil.copy(native.build().path, tmp_path)  # the C library built, the operator not
    out = _last_json(_python(NO_ENTRY_SCRIPT, timeout=600, ATTNVIZ_CACHE_DIR=str(tmp_path)))
    assert out["ok"] and out["detail"].endswith("a torch operator"), out
    assert out["loaded"] == "OpOverload" and out["read"] is None and out["correct"]
    assert out["planned"] == 1  # fused handed the plan to the operator


CACHED_SCRIPT = textwrap.dedent(
    """
    import json, os, shutil, sys, torch
    from attnviz import fused, native, native_op
    native_op.RETRY_S = 0.0  # look again at once
    x, w = torch.randn(2, 64, 1024), torch.rand(2, 64)
    fused.weighted_sum_fused(x, w)
    first = native_op.build(timeout=60)
    if len(sys.argv) > 1:  # the server builds it meanwhile: here, a copy of a built one
        shutil.copy(sys.argv[1], native.build().path.parent)
    fused.weighted_sum_fused(x, w)  # looks again
    second = native_op.build(timeout=60)
    got = fused.weighted_sum_fused(x, w)
    ok = torch.allclose(got, (x.double() * w.double()[..., None]).sum(1).float(), atol=1e-4)
    print(json.dumps({"first": first.detail, "second": second.ok, "correct": ok,
                      "files": sorted(os.listdir(native.build().path.parent))}))
    """
)


@pytest.mark.slow
@needs_op
@pytest.mark.parametrize("built", [False, True], ids=["never built", "built meanwhile"])
@pytest.mark.usefixtures("op")  # the builtin and the operator, each built in this process
def test_a_worker_only_loads_the_operator_the_server_built(tmp_path, built):
    server_op = native_op.build().path  # this process's, in the run's cache
    shutil.copy(native.build().path, tmp_path)  # the server's C library, in the cache it shares
    args = [str(server_op)] if built else []
    env = {"ATTNVIZ_CACHE_DIR": str(tmp_path), "ATTNVIZ_NATIVE_OP": "cached"}
    out = _last_json(_python(CACHED_SCRIPT, *args, **env))
    assert out["first"].startswith("not built yet") and out["correct"]
    assert out["second"] is built
    compiled = [f for f in out["files"] if f.startswith("weighted_rows_op") and f != server_op.name]
    assert compiled == []  # nothing compiled here, no temporary, no lock
