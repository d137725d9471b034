"""The C kernel as a PyTorch operator, ``torch.ops.attnviz.weighted_rows``: fused's fast path.

``attnviz.native`` calls the kernel through ctypes. At 0.5-1 MiB in L2 the kernel reads x in
5-10 µs, and that call spent ~3.5 µs around it in Python: a dozen checks of the inputs, the
output tensor, the plan and the pointers, ~0.1 µs each. ``csrc/weighted_rows_op.cpp`` wraps the
same kernel (linked against the same library, not a copy) as a PyTorch operator, which makes
those checks in C++ and costs what any PyTorch call costs (~1.5 µs), so the kernel keeps its
speed at small sizes as well.

- Where Python's headers are here (Debian: python3-dev), the same library also holds the
  operator's function as a plain Python builtin (``python_entry``), and that is what fused calls:
  torch.ops boxes every call through the dispatcher (~1.2 µs before the function runs), the
  builtin unpacks two tensors. Measured in-process on two threads, paired per call: 1x250x777 in
  L2, 13.6 µs a call through torch.ops, 11.2 µs through the builtin, 11.3 µs for the bare kernel
  through ctypes into a reused buffer; 2x1024x1024 in L3, 69.8, 62.8 and 63.9 µs.
- Outputs come from blocks of memory kept for the next call (``kept_blocks``): a dropped output's
  block, given back by its storage when nothing reads it any more, is the next output of its size
  (at most 8 blocks of at most 256 KiB). A fresh one from the CPU allocator cost 0.26-0.33 µs more a
  call in L2 (benchmarks/RESULTS-cpu-history.md, sixth round).
- The builtin also keeps its 4 newest outputs (of at most 256 KiB) whole, with their Python
  objects: a dropped one that nothing else can see, unchanged since it was made, is the next
  output of its size (``reused_outputs``): no tensor is made or freed, ~0.2 µs less a call
  (0.45 against 0.25 µs at 1x4x16). A kept output lives on until it is taken again or pushed out.
- Plans stay in Python (``native.plan``, one source of truth): the operator answers None for a
  shape it has no plan for, fused then takes the ctypes path, and ``learn`` hands that shape's
  plan over (``set_plan``). It also answers None wherever the kernel does not apply (not
  float32 or not on the CPU, x not contiguous (B, T, H), w not (B, T), a gradient wanted).
- Build: ``c++ -O2 -std=c++20`` (``$CXX`` if set, else c++, g++ or clang++; C++17 where 20 is
  refused) against the headers and libraries of the installed torch, ~10 s (~20 s with the
  builtin), in a background thread started by the first ``learn`` (or the app's start), at the
  lowest priority (``nice``): until it is loaded, fused runs on ctypes. Cached next to the C
  library (``native_build.cache_dir``), named by a hash of the source, the compiler, torch's version,
  the C library (and, for the builtin, Python's version); one process compiles while the others
  wait on a file lock.
- Off: ``ATTNVIZ_NATIVE=0`` (no C kernel at all) or ``ATTNVIZ_NATIVE_OP=0`` (ctypes only); no C++
  compiler, no torch headers or a failed build: fused stays on ctypes, and ``build()`` says why.
- ``ATTNVIZ_NATIVE_OP=cached``: load the operator once it is in the cache, never compile it (and
  look again every RETRY_S seconds). The bounded workers run so (``worker_process``): a compile
  there would count against a visitor's job, and a job killed mid-compile would compile again.

No user text is ever compiled: the source is this package's own file.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

from attnviz import native, native_build, native_read
from attnviz.native_build import Build

SOURCE = Path(__file__).with_name("csrc") / "weighted_rows_op.cpp"
STANDARDS = ("-std=c++20", "-std=c++17")  # the first the compiler takes
FLAGS = ("-O2", "-fPIC", "-shared", "-w")  # -w: torch's headers warn under some standards
COMPILE_TIMEOUT_S = 180
NOT_YET = "not built yet"
CACHED_ONLY = "ATTNVIZ_NATIVE_OP=cached"
# the compiler runs at the lowest priority: it takes only what the process's own work leaves
# (a benchmark's first seconds, a page's run) and never competes with it for a core
_NICE = ("nice", "-n", "19") if shutil.which("nice") else ()
RETRY_S = 30.0  # with ATTNVIZ_NATIVE_OP=cached: how often fused looks for the built operator

# what fused calls on every call once built and loaded, else None: the operator's function as a
# plain Python builtin where the build found Python's headers (``python_entry``), else the
# operator itself, torch.ops.attnviz.weighted_rows
loaded = None
# the builtin read_floats(x, numel, unit, threads, mode) from the same module, else None: the
# floor's read, called as leanly as fused calls the kernel (``reader``)
read_floats = None
# how many outputs the builtin keeps whole for their next call (weighted_rows_op.cpp, REUSED)
reused_outputs = 0
ENTRY = "attnviz_weighted_rows_op"  # the builtin's module (weighted_rows_op.cpp, PyInit_...)
_outcome: Build | None = None
_lock = threading.Lock()
_started = threading.Event()
_done = threading.Event()
_compiling: subprocess.Popen | None = None  # the compiler while it runs
_retry_at: float | None = None  # ATTNVIZ_NATIVE_OP=cached and not built yet: look again then
_closing = False  # the process is exiting: no compile or load starts
# the build thread is loading the library: the process's exit waits for it (a library cut off
# mid-load by the exit's C++ destructors ended the process with std::terminate, "terminate
# called without an active exception", about once in 100 quick scripts)
_loading = False


def find_compiler() -> list[str] | None:
    """The C++ compiler command: ``$CXX`` (split like a shell would), else c++, g++ or clang++."""
    return native_build.find_compiler("CXX", ("c++", "g++", "clang++"))


def _torch_dirs() -> tuple[Path, Path]:
    """(include, lib) folders of the installed torch."""
    root = Path(torch.__file__).parent
    return root / "include", root / "lib"


def _compile(cmd: list[str], dest: Path) -> str:
    """Run ``cmd`` (which writes -o its last argument) into a temporary name renamed to ``dest``;
    '' on success, else the compiler's complaint. A process that exits meanwhile stops the
    compiler and removes the temporary (``_stop_compiling``): no half file is ever left."""
    global _compiling
    tmp = ""
    try:
        with _lock:  # the temporary and the compiler start together, never once the exit began
            if _closing:
                return "the process is exiting"
            fd, tmp = tempfile.mkstemp(prefix=dest.stem + ".", suffix=".tmp", dir=dest.parent)
            os.close(fd)
            proc = subprocess.Popen(
                [*_NICE, *cmd, tmp],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # a group of its own: the driver and what it runs
            )
            _compiling = proc
        try:
            out, err = proc.communicate(timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            native_build.kill_group(proc)
            proc.communicate()
            return f"the compiler took over {COMPILE_TIMEOUT_S} s"
        if proc.returncode != 0:
            return (err or out).strip()[-400:] or f"exit {proc.returncode}"
        os.replace(tmp, dest)
        return ""
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    finally:  # the temporary goes before the compiler is forgotten: an exit that finds no
        # compiler running (``_stop_compiling``) does not wait, and this thread is then cut off
        if tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        with _lock:
            _compiling = None


def _stop_compiling() -> None:
    """At exit: stop a compile still running (the build thread is a daemon and would be cut off
    with its temporary file left behind), and let a load in progress finish."""
    global _closing
    with _lock:
        _closing = True
        proc, loading = _compiling, _loading
    if proc is not None:
        native_build.kill_group(proc)
    if proc is not None or loading:
        _done.wait(10)  # the build thread removes its temporary, or finishes loading


def python_entry(include: Path, lib: Path) -> list[str]:
    """The flags that also build the operator's function as a Python builtin (``ENTRY``), which
    fused calls without the dispatcher's ~1.2 µs: [] where Python's headers (Debian: python3-dev)
    or torch's Python library are missing (the operator alone is built then)."""
    headers = Path(sysconfig.get_paths()["include"])
    if not (headers / "Python.h").exists() or not (lib / "libtorch_python.so").exists():
        return []
    api = include / "torch" / "csrc" / "api" / "include"
    return ["-DATTNVIZ_PYTHON_ENTRY", f"-I{headers}", f"-I{api}", "-ltorch_python"]


def _compile_locked(
    cxx: list[str], abi: str, include: Path, lib: Path, kernel: Path, path: Path, entry: list[str]
) -> float | None | str:
    """Compile SOURCE to ``path`` unless it is there, one process at a time (a file lock: the
    others wait, then load it): seconds spent, None when it was there, or the compiler's words.
    ``entry``: ``python_entry``'s flags (or none)."""
    import fcntl  # POSIX, as the C kernel is (it is off on Windows)

    with open(kernel.parent / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return None
        t0 = time.perf_counter()
        error = ""
        for std in STANDARDS:
            links = [f"-L{lib}", "-ltorch_cpu", "-lc10", *entry, str(kernel)]
            rpaths = [f"-Wl,-rpath,{lib}", f"-Wl,-rpath,{kernel.parent}"]
            cmd = [*cxx, std, *FLAGS, abi, f"-I{include}", str(SOURCE), *links, *rpaths, "-o"]
            error = _compile(cmd, path)
            if not error:
                return time.perf_counter() - t0
        return error


def _build_once(kernel: Build) -> Build:
    global loaded, read_floats, reused_outputs, _loading
    setting = os.environ.get("ATTNVIZ_NATIVE_OP", "1").strip()
    if setting == "0":
        return Build(False, "turned off by ATTNVIZ_NATIVE_OP=0")
    if not kernel.ok or kernel.path is None:
        return Build(False, f"no C kernel to wrap: {kernel.detail}")
    cxx = find_compiler()
    if cxx is None:
        return Build(False, "no C++ compiler found (set CXX, or install c++, g++, clang++)")
    include, lib = _torch_dirs()
    if not (include / "torch" / "library.h").exists():
        return Build(False, f"this torch has no C++ headers ({include})")
    try:
        version = native_build._first_line([*cxx, "--version"])
    except RuntimeError as e:
        return Build(False, f"the C++ compiler does not answer: {e}")
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}"
    parts = (SOURCE.read_text(encoding="utf-8"), shlex.join(cxx), version, torch.__version__, abi)

    def path_for(entry: list[str]) -> Path:  # the builtin is made for this Python only
        more = (*entry, sys.version) if entry else ()
        key = hashlib.sha256("\0".join((*parts, *more, kernel.path.name)).encode()).hexdigest()
        return kernel.path.parent / f"weighted_rows_op-{key[:16]}.so"

    entry = python_entry(include, lib)
    path, compile_s = path_for(entry), None
    if setting == "cached":  # a bounded worker: load what the server built, never compile
        if entry and not path.exists():  # the server built the operator alone
            entry, path = [], path_for([])
        if not path.exists():
            return Build(False, f"{NOT_YET}: this process only loads it ({CACHED_ONLY})")
    else:
        compile_s = _compile_locked(cxx, abi, include, lib, kernel.path, path, entry)
        if isinstance(compile_s, str) and entry:  # the operator alone, then
            entry, path = [], path_for([])
            compile_s = _compile_locked(cxx, abi, include, lib, kernel.path, path, entry)
        if isinstance(compile_s, str):
            return Build(False, f"compiling {SOURCE.name} failed: {compile_s}")
    with _lock:
        if _closing:
            return Build(False, "the process is exiting")
        _loading = True
    try:
        torch.ops.load_library(str(path))
        abi_seen = torch.ops.attnviz.kernel_abi()
        if abi_seen != native_build.ABI:
            return Build(False, f"{path.name} wraps interface {abi_seen}, not {native_build.ABI}")
        op = torch.ops.attnviz.weighted_rows.default
        if entry:  # the same library, loaded once more as a module: its builtin
            spec = importlib.util.spec_from_file_location(ENTRY, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            op, read_floats = module.weighted_rows, module.read_floats
            reused_outputs = module.REUSED
    except (OSError, RuntimeError, AttributeError, ImportError) as e:
        return Build(False, f"loading {path.name} failed: {e}")
    finally:
        _loading = False
    loaded = op
    how = "a Python builtin" if entry else "a torch operator"
    return Build(
        True, f"{version} ({shlex.join(cxx)}), torch {torch.__version__}, {how}", path, compile_s
    )


def _run_build() -> None:
    global _outcome, _retry_at
    try:
        _outcome = _build_once(native.build())  # the C library first (cached, or compiled here)
        if _outcome.detail.startswith(NOT_YET):  # the server may build it meanwhile
            _retry_at = time.monotonic() + RETRY_S
    except Exception as e:  # a background thread: say it, never lose it
        _outcome = Build(False, f"building the operator failed: {e!r}")
    finally:
        _done.set()


def start() -> None:
    """Start building (or loading the cached) operator in a background thread, once per process,
    around the C library this process loads (``native.build``, which compiles it if need be, in
    that thread too: the app's first page run does not wait ~16 s for it on a fresh machine)."""
    if _started.is_set():
        return
    with _lock:
        if not _started.is_set():
            name = "attnviz-op-build"
            if not _done.is_set():  # the first start, not a look again (_look_again)
                atexit.register(_stop_compiling)
            _done.clear()
            threading.Thread(target=_run_build, name=name, daemon=True).start()
            _started.set()


def build(timeout: float | None = None) -> Build:
    """Build (or load) the operator and wait for it: how it went, never raises. ``timeout``
    seconds at most; then the Build says it is still building."""
    start()
    if not _done.wait(timeout):
        return Build(False, "still building in the background")
    assert _outcome is not None
    return _outcome


def _look_again() -> None:
    """ATTNVIZ_NATIVE_OP=cached: look for the operator again (the server may have built it)."""
    global _retry_at
    with _lock:
        if _retry_at is None or not _done.is_set():
            return
        _retry_at = None
        _started.clear()
    start()


def reader(
    x: Tensor, *, threads: int | None = None, mode: int | None = None
) -> Callable[[Tensor], float]:
    """``native_read.reader(x)``: a read of tensors shaped like x, planned once, through the builtin
    ``read_floats`` where it is loaded, as fused calls the kernel through ``weighted_rows``: the
    floor's call then costs no more than fused's (through ctypes a read of 64 KiB took 2.7 µs,
    through the builtin 1.4 µs, and fused's leaner call would have beaten the floor). Raises as
    ``native_read.reader`` does."""
    checked = native_read.reader(x, threads=threads, mode=mode)  # the checks, plan and ctypes path
    entry = read_floats
    if entry is None:
        return checked
    numel = x.numel()
    used, unit = native_read.read_plan(numel, threads or torch.get_num_threads())
    how = native_read.call_mode(numel, used, native_read.read_mode(numel) if mode is None else mode)

    def read_one(y: Tensor) -> float:
        try:  # the builtin checks y itself; a y it refuses is checked again, for the message
            return entry(y, numel, unit, used, how)
        except (TypeError, ValueError):
            return checked(y)

    return read_one


def why_ctypes() -> str | None:
    """None where fused calls the kernel through the operator (``loaded``); else why it calls it
    through ctypes for now, in a few words (the Performance page and the benchmark's tables say
    it: through ctypes a call costs several µs more, more than bmm's at the smallest sizes)."""
    if loaded is not None:
        return None
    outcome = _outcome if _done.is_set() else None
    if outcome is None:
        return "while the operator that calls it with less fixed cost is built"
    if outcome.detail.startswith(NOT_YET):
        return "until the server has built the operator that calls it with less fixed cost"
    return f"without the operator that calls it with less fixed cost: {outcome.detail}"


def learn(x: Tensor, threads: int) -> None:
    """Hand the operator the plan for x's shape on ``threads`` threads (``native.plan``), which
    the ctypes path just ran; the first call starts the operator's build."""
    if loaded is None:
        if not _started.is_set():
            start()
        elif _retry_at is not None and time.monotonic() >= _retry_at:
            _look_again()
        return
    b, t, h = x.shape
    shape, split = native.call_plan(b, t, h, threads)
    torch.ops.attnviz.set_plan(threads, list(shape), split)


def clear_plans() -> None:
    """Forget the operator's plans (after the plan's limits or modes change)."""
    if loaded is not None:
        torch.ops.attnviz.clear_plans()


def plan_count() -> int:
    """How many shapes the operator has a plan for (0 before it is loaded)."""
    return int(torch.ops.attnviz.plan_count()) if loaded is not None else 0


def kept_blocks() -> tuple[int, int]:
    """The blocks of memory the operator keeps for its next outputs, and their bytes ((0, 0)
    before it is loaded): at most 8 blocks of at most 256 KiB (weighted_rows_op.cpp)."""
    if loaded is None:
        return 0, 0
    count, size = torch.ops.attnviz.kept_blocks()
    return int(count), int(size)
