"""Building the C library behind "fused" and the read limit (``attnviz.native``), once per machine.

- Build: ``cc -O3 -march=native -std=c99 -fopenmp -shared -fPIC`` (``$CC`` if set, else cc, gcc
  or clang), ~16 s with GCC 12 on a core of a Zen 4 EPYC (a copy of each loop for each width of
  row kept in registers), once per machine: the library is cached under
  ``$ATTNVIZ_CACHE_DIR`` or ``~/.cache/attnviz``, named by a hash of the source, the flags, the
  compiler's version and the CPU, so a changed source or a different CPU builds afresh. Processes
  that ask at once take turns on a lock file beside it: one compiles, the others then load its
  library. It is written to a temporary name and renamed, so no process ever loads half a file.
  The compiler runs in a process group of its own; a process that exits while it compiles (a
  build in a background thread: ``attnviz.native_op.start``) stops the group and removes the
  temporary, and lets a load in progress finish (``_stop_compiling``).
  Where the cache folder cannot be written, the build goes to a private temporary folder for the
  process instead.
- Fallback: no compiler, no OpenMP (Apple's clang), a failed build, Windows or
  ``ATTNVIZ_NATIVE=0`` -> ``build()`` reports why and "fused" takes the embedding-bag path
  instead (``attnviz.fused``).
- Loading checks the library's interface version (``ABI``) and declares its functions' C types.

No user text is ever compiled: the sources are this package's own files.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("csrc") / "weighted_rows.c"
SOURCES = (SOURCE, SOURCE.with_name("read_floats.c"))  # one library: the kernel, the read limit
# what the cached library's name hashes: the sources and the headers they include
BUILT_FROM = (
    *SOURCES,
    *(
        SOURCE.with_name(n)
        for n in (
            "vectors.h",
            "threads.h",
            "rows_off_lines.h",
            "short_rows.h",
            "long_sentences.h",
            "stripes.h",
        )
    ),
)
ABI = 10  # weighted_rows_abi() in the source
FLAGS = ("-O3", "-std=c99", "-ffp-contract=fast", "-fopenmp", "-shared", "-fPIC")
# tried first; dropped where the compiler refuses them (portable code, cached under a name of its
# own, never in the place of a native build). GCC's unroll-and-jam would multiply the kernel's rows
# per step, more streams than the registers and prefetchers keep up with (measured with eight:
# about half the speed in cache); compilers without it ignore the flag
NATIVE_FLAGS = ("-march=native", "-fno-loop-unroll-and-jam")
# ~25 CPU-s with NATIVE_FLAGS; on two cores busy with other work it took 62-85 s of wall time
COMPILE_TIMEOUT_S = 180


@dataclass(frozen=True)
class Build:
    """The outcome of building the kernel: ``ok`` and, either way, a sentence for people."""

    ok: bool
    detail: str  # the compiler's version, its path and the flags, or why there is no kernel
    path: Path | None = None
    compile_s: float | None = None  # None when the cached library was loaded


def cache_dir() -> Path:
    """``$ATTNVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/attnviz``, else ``~/.cache/attnviz``."""
    if os.environ.get("ATTNVIZ_CACHE_DIR"):
        return Path(os.environ["ATTNVIZ_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnviz"


def _writable_cache() -> Path:
    """``cache_dir()`` when it can be created and written; otherwise (a server running as a user
    without a home, say) a fresh private folder for this process: built anew each time, but never
    a shared /tmp path that another user could fill first."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK | os.X_OK):
            return folder
    except OSError:
        pass
    private = tempfile.mkdtemp(prefix="attnviz-kernel-")
    atexit.register(shutil.rmtree, private, ignore_errors=True)  # a loaded library stays mapped
    return Path(private)


def find_compiler(
    variable: str = "CC", names: tuple[str, ...] = ("cc", "gcc", "clang")
) -> list[str] | None:
    """The compiler command: ``$CC`` (split like a shell would), else cc, gcc or clang on PATH
    (``variable`` and ``names``: another language's, as ``native_op`` asks for C++'s)."""
    if os.environ.get(variable):
        return shlex.split(os.environ[variable])
    for name in names:
        if path := shutil.which(name):
            return [path]
    return None


def _cpu_signature() -> str:
    """What -march=native depends on: the CPU model and its instruction-set flags."""
    sig = [platform.machine(), platform.processor()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    sig.append(line.strip())
                if line.strip() == "":  # the first processor is enough
                    break
    except OSError:
        pass
    return "\n".join(sig)


def _first_line(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"{shlex.join(cmd)} failed: {e}") from None
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited with {done.returncode}")
    return (done.stdout.strip().splitlines() or ["unknown compiler"])[0]


_exit_lock = threading.Lock()  # the compilers running, the load in progress, the exit's flag
_compilers: set[subprocess.Popen] = set()
_loading = 0  # libraries being loaded now
_closing = False  # the process is exiting: no compile starts


def kill_group(proc: subprocess.Popen) -> None:
    """Stop a compiler started in a group of its own, and every program it started: the driver's
    children (cc1, as, ld) share its pipes, and a driver killed alone left them holding the pipes
    and the thread that waits on them waiting."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _compile(cc: list[str], flags: tuple[str, ...], dest: Path) -> tuple[str, bool]:
    """Compile SOURCES to ``dest`` atomically -> ('' on success, else why; whether the compiler
    refused the work: it ran to its end and failed, as it does again with the same flags, unlike
    a compile cut off by the time limit, the exit or the system)."""
    tmp, proc = "", None
    try:
        with _exit_lock:  # the temporary and the compiler start together, never once exiting
            if _closing:
                return "the process is exiting", False
            try:
                fd, tmp = tempfile.mkstemp(prefix=dest.stem + ".", suffix=".tmp", dir=dest.parent)
            except OSError as e:
                return f"cannot write to {dest.parent}: {e}", False
            os.close(fd)
            proc = subprocess.Popen(
                [*cc, *flags, *map(str, SOURCES), "-o", tmp],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            _compilers.add(proc)
        try:
            out, err = proc.communicate(timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.communicate()
            return f"the compiler took over {COMPILE_TIMEOUT_S} s", False
        if proc.returncode < 0:  # killed by a signal: at the exit, or by the system
            return f"the compiler was stopped (signal {-proc.returncode})", False
        if proc.returncode != 0:
            return (err or out).strip()[-400:] or f"exit {proc.returncode}", True
        os.replace(tmp, dest)
        return "", False
    except (OSError, subprocess.SubprocessError) as e:
        return str(e), False
    finally:  # the temporary goes before the compiler is forgotten (see _stop_compiling)
        if tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        with _exit_lock:
            _compilers.discard(proc)


def _stop_compiling() -> None:
    """At exit: stop the compilers still running (a build thread is a daemon, cut off at the end
    with its temporary behind), wait for their threads to remove the temporaries, and for a load
    in progress (a library cut off mid-load by the exit can end the process badly)."""
    global _closing
    with _exit_lock:
        _closing = True
        running = list(_compilers)
    for proc in running:
        kill_group(proc)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with _exit_lock:
            if not _compilers and not _loading:
                return
        time.sleep(0.01)


atexit.register(_stop_compiling)


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.weighted_rows_abi.restype = ctypes.c_int
    lib.weighted_rows_abi.argtypes = []
    if lib.weighted_rows_abi() != ABI:
        raise RuntimeError(f"{path} has interface {lib.weighted_rows_abi()}, expected {ABI}")
    fn = lib.weighted_rows_f32
    fn.restype = None
    # x, w, out, partial, shape: {B, T, H, group, split, threads, mode} (``native._call_shape``)
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.POINTER(ctypes.c_long)]
    read = lib.read_floats
    read.restype = ctypes.c_double
    read.argtypes = [
        ctypes.c_void_p,
        ctypes.c_long,
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_int,
    ]  # x, n, unit, threads, mode
    lib.weighted_rows_tile.restype = ctypes.c_long
    lib.weighted_rows_tile.argtypes = []
    lib.weighted_rows_realigns.restype = ctypes.c_int
    lib.weighted_rows_realigns.argtypes = []
    lib.weighted_rows_lanes.restype = ctypes.c_int
    lib.weighted_rows_lanes.argtypes = []
    return lib


@contextlib.contextmanager
def _one_builder(path: Path) -> Iterator[None]:
    """Hold the lock file beside ``path`` (``NAME.lock``, kept) while building it: replicas of a
    server that start at once would each compile the same library (~16 CPU-s each) while the
    students wait. Where the lock cannot be had (no fcntl, a folder that refuses it) each process
    builds for itself, as before: a whole file is renamed into place either way."""
    try:
        import fcntl  # POSIX, as the kernel is (no kernel on Windows)

        lock = open(path.parent / f"{path.name}.lock", "w")  # noqa: SIM115 (closed below)
    except (ImportError, OSError):
        yield
        return
    with lock:
        with contextlib.suppress(OSError):
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build_once() -> tuple[Build, ctypes.CDLL | None]:
    global _loading
    if os.environ.get("ATTNVIZ_NATIVE", "1").strip() == "0":
        return Build(False, "turned off by ATTNVIZ_NATIVE=0"), None
    if sys.platform == "win32":
        return Build(False, "no C kernel on Windows"), None
    cc = find_compiler()
    if cc is None:
        return Build(False, "no C compiler found (set CC, or install cc, gcc or clang)"), None
    try:
        version = _first_line([*cc, "--version"])
        key = hashlib.sha256(
            b"\0".join(
                s.encode()
                for s in (
                    *(path.read_text(encoding="utf-8") for path in BUILT_FROM),
                    shlex.join(cc),
                    version,
                    " ".join(FLAGS + NATIVE_FLAGS),
                    _cpu_signature(),
                )
            )
        ).hexdigest()[:16]
    except (OSError, RuntimeError) as e:
        return Build(False, f"the C compiler does not answer: {e}"), None
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    folder = _writable_cache()
    builds = (  # the native build, else portable code where the compiler refused NATIVE_FLAGS
        (folder / f"weighted_rows-{key}{suffix}", FLAGS + NATIVE_FLAGS),
        (folder / f"weighted_rows-{key}-portable{suffix}", FLAGS),
    )
    compile_s, found = None, next((b for b in builds if b[0].exists()), None)
    if found is None:
        # processes that start at once: one compiles, the rest wait
        with _one_builder(builds[0][0]):
            found = next((b for b in builds if b[0].exists()), None)  # built while it waited
            t0 = time.perf_counter()
            for build in builds if found is None else ():
                error, refused = _compile(cc, build[1], build[0])
                if not error:
                    found, compile_s = build, time.perf_counter() - t0
                    break
                if not refused:  # cut off (time, exit): tried again by the next process
                    break
            if found is None:
                return Build(False, f"compiling {SOURCE.name} failed: {error}"), None
    path, used = found
    with _exit_lock:
        if _closing:
            return Build(False, "the process is exiting"), None
        _loading += 1
    try:
        lib = _load(path)
    except (OSError, AttributeError, RuntimeError) as e:
        return Build(False, f"loading {path.name} failed: {e}"), None
    finally:
        with _exit_lock:
            _loading -= 1
    flags = " ".join(f for f in used if f in ("-O3", "-fopenmp", *NATIVE_FLAGS))
    detail = f"{version} ({shlex.join(cc)}), {flags}"
    return Build(True, detail, path, compile_s), lib


_build_lock = threading.Lock()


_built: tuple[Build, ctypes.CDLL | None] | None = None  # set once, then read without the lock


def _build() -> tuple[Build, ctypes.CDLL | None]:
    global _built
    if _built is None:
        with _build_lock:  # one build per process, even when two threads ask at once
            _built = _build_once()
    return _built


def build() -> Build:
    """Build (or load the cached) kernel once per process and say how it went; never raises."""
    return _build()[0]
