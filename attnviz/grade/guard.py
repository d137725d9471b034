"""What bounds a student's code inside the grading process (``child``), applied before it runs.

Two layers, both set up by ``confine`` in a fresh process forked for one notebook:

- the operating system's (they hold whatever the code does, C extensions included): resource
  limits (CPU seconds, address space, file size, open files, no core dump), a new session (so the
  grader can kill every process the notebook starts), an empty environment, a temporary working
  directory, and, where the kernel has Landlock (Linux 5.13+), no write anywhere but that directory,
  no read outside the code and system directories, no program executed, no TCP connection, and no
  signal to any process outside the sandbox;
- Python's audit hooks (PEP 578), for what needs to know who is asking: code whose innermost frame
  that is not the standard library or an installed package is the student's (not attnviz's) may
  not obtain a frame (``sys._getframe``, ``inspect.stack``, a traceback's ``tb_frame``, a
  generator's ``gi_frame``), list objects (``gc``), load C code (``ctypes``), start processes or
  threads, open sockets, open a file outside the temporary directory (reading the installed code is
  allowed), set a tracer, profiler or another hook, build code or functions by hand, or change a
  class or function it did not define. What was refused is kept in ``alerts``, where only the
  grading code can read it: a refusal fails the exercise, whatever the student's code did with the
  exception.

``seal`` hides a checker's callables (e.g. the pretend GPU's ``op`` and ``clock``) behind objects
that hold no reference to them, ``plain`` keeps only ordinary results (a ``torch.Tensor``, numbers,
tuples, lists), and ``fingerprint`` notes the identity of every global of attnviz, torch, numpy and
the builtins so that a patch of the checker is seen. See lessons/README.md ("Grade a class") for
what this guarantees and what it does not.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import operator
import os
import resource
import sys
import sysconfig
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

STUDENT_MODULE = "__student__"
PACKAGE = str(Path(__file__).resolve().parents[1])  # attnviz/

#: Audit events refused to the student's code, by their module (the part before the first dot).
_DENIED_MODULES = frozenset(
    {
        "os",
        "subprocess",
        "socket",
        "shutil",
        "ctypes",
        "gc",
        "pickle",
        "mmap",
        "pty",
        "resource",
        "signal",
        "fcntl",
        "urllib",
        "http",
        "ftplib",
        "smtplib",
        "poplib",
        "imaplib",
        "nntplib",
        "telnetlib",
        "webbrowser",
        "sqlite3",
        "_thread",
        "cpython",
        "winreg",
        "syslog",
        "code",
        "function",
    }
)
_DENIED_EVENTS = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "sys._current_exceptions",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "builtins.input",
        "open",
        "compile",
        "exec",
        "object.__getattr__",
        "object.__setattr__",
        "object.__delattr__",
    }
)
_FRAME_ATTRIBUTES = frozenset(
    {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_locals", "f_globals"}
)
_SEALED_CALL = "attnviz.grade.sealed"
#: os and shutil events on files: how many of their first arguments are paths, and which
#: argument is the directory descriptor they are relative to (None: the working directory)
_FILE_EVENTS: dict[str, tuple[int, int | None]] = {
    "os.mkdir": (1, 2),
    "os.remove": (1, 1),
    "os.rmdir": (1, 1),
    "os.rename": (2, 2),
    "os.chmod": (1, 2),
    "os.truncate": (1, None),
    "os.utime": (1, 3),
    "os.link": (2, 2),
    "os.symlink": (2, 2),
    "shutil.rmtree": (1, 1),
    "shutil.copyfile": (2, None),
    "shutil.copymode": (2, None),
    "shutil.copystat": (2, None),
    "shutil.move": (2, None),
}


def _roots(*paths: str | None) -> tuple[str, ...]:
    return tuple(sorted({os.path.realpath(p) + os.sep for p in paths if p}, key=len, reverse=True))


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return _roots(*(paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")))


def _fd_path(fd: int) -> str:
    """Where an open descriptor points ('' where that cannot be told)."""
    try:
        return os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))
    except (OSError, ValueError):
        return ""


def _resolved(path: object, dir_fd: object) -> str:
    """The real path an os call names: path relative to dir_fd (a descriptor) if given, else to
    the working directory; a descriptor alone names its own file. '' if it cannot be told."""
    if type(path) is int:
        return _fd_path(path)
    if type(path) not in (str, bytes):
        return ""
    name = os.fsdecode(path)
    if dir_fd is not None and dir_fd not in (-1, -100) and not os.path.isabs(name):
        if type(dir_fd) is not int:  # -1 and -100 (AT_FDCWD): no descriptor was given
            return ""
        base = _fd_path(dir_fd)
        return os.path.realpath(os.path.join(base, name)) if base else ""
    return os.path.realpath(name)


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path.startswith(r) or path + os.sep == r for r in roots)


class Guard:
    """The audit hook and what it found. One per process (a hook cannot be removed)."""

    def __init__(self, workdir: str) -> None:
        self.workdir = os.path.realpath(workdir) + os.sep
        self.trusted = _roots(PACKAGE)
        self.library = _library_roots()
        self.readable = _roots(
            PACKAGE, sys.prefix, sys.base_prefix, sys.exec_prefix, *self.library, workdir
        )
        self.alerts: list[str] = []
        self._origin: dict[str, str] = {}
        self._busy = False
        self._sealed: list[Callable[[], object]] = []

    # -- who is asking -------------------------------------------------------------------------

    def _kind(self, filename: str) -> str:
        kind = self._origin.get(filename)
        if kind is None:
            if filename.startswith("<frozen "):
                kind = "library"
            else:
                real = os.path.realpath(filename) if filename.startswith(os.sep) else ""
                if real and _under(real, self.trusted):
                    kind = "attnviz"
                elif real and _under(real, self.library):
                    kind = "library"
                else:
                    kind = "student"
            self._origin[filename] = kind
        return kind

    def _students(self) -> bool:
        """The innermost frame that is neither the hook nor a library's is the student's."""
        try:
            frame = sys._getframe(3)  # 0 this, 1 _refused, 2 hook, 3 who raised the event
        except ValueError:  # raised by the interpreter itself, with no Python frame above
            return False
        while frame is not None:
            kind = self._kind(frame.f_code.co_filename)
            if kind != "library":
                return kind == "student"
            frame = frame.f_back
        return False

    # -- the hook ------------------------------------------------------------------------------

    def hook(self, event: str, args: tuple) -> None:
        if event == _SEALED_CALL:
            self._call_sealed(args)
            return
        if event not in _DENIED_EVENTS and event.partition(".")[0] not in _DENIED_MODULES:
            return
        if self._busy:
            return
        self._busy = True
        try:
            refused = self._refused(event, args)
        finally:
            self._busy = False
        if refused:
            self.alerts.append(refused)
            raise PermissionError(f"The grader does not allow this: {refused}.")

    def _refused(self, event: str, args: tuple) -> str:
        """Why the event is refused ('' when it is allowed)."""
        if event == "sys.addaudithook":
            return "adding an audit hook"
        if event == "object.__getattr__":
            obj, name = args[0], args[1]
            if name not in _FRAME_ATTRIBUTES and type(obj) is not types.FrameType:
                return ""
        elif event in ("object.__setattr__", "object.__delattr__"):
            if module_of(args[0]) == STUDENT_MODULE:
                return ""
        elif event == "open":
            if self._may_open(args):
                return ""
        elif event == "compile":
            name = args[1] if len(args) > 1 else None
            if not (type(name) is str and _under(os.path.realpath(name), self.trusted)):
                return ""
        elif event == "exec":  # code claiming to be attnviz's would pass for the checker's frames
            code = args[0] if args else None
            name = code.co_filename if type(code) is types.CodeType else None
            if not (type(name) is str and _under(os.path.realpath(name), self.trusted)):
                return ""
        elif event in ("os.listdir", "os.scandir"):
            path = _resolved(args[0] if args else ".", None)
            if path and _under(path, self.readable):
                return ""
        elif event in _FILE_EVENTS:  # inside its own directory, a notebook may manage its files
            count, dir_fd = _FILE_EVENTS[event]
            base = args[dir_fd] if dir_fd is not None and len(args) > dir_fd else None
            paths = [_resolved(a, base) for a in args[:count] if a is not None]
            if paths and all(p and _under(p, (self.workdir,)) for p in paths):
                return ""
        if not self._students():
            return ""
        return _describe(event, args)

    def _may_open(self, args: tuple) -> bool:
        path, mode = args[0], args[1] if len(args) > 1 else "r"
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        if type(path) not in (str, bytes):
            return False  # an open file descriptor (the grader's channel?), or a str subclass
        real = os.path.realpath(os.fsdecode(path))
        if _under(real, (self.workdir,)):
            return True
        if os.path.isdir(real):
            return False  # a directory's descriptor would let a dir_fd call write inside it
        writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
        read_only = (mode is None and not flags & writes) or (
            type(mode) is str and not set(mode) & set("wax+")
        )
        return read_only and _under(real, self.readable)

    # -- sealed callables ----------------------------------------------------------------------

    def seal(self, fn: Callable[[], object]) -> Callable[[], object]:
        """A callable that calls fn and holds no reference to it: the call goes through this
        hook, which cannot be reached from Python code."""
        self._sealed.append(fn)
        return _Sealed(len(self._sealed) - 1, getattr(fn, "__name__", "function"))

    def _call_sealed(self, args: tuple) -> None:
        index, box = args
        if type(index) is int and type(box) is list and 0 <= index < len(self._sealed):
            box.append(self._sealed[index]())


class _Sealed:
    __slots__ = ("_index", "__name__")

    def __init__(self, index: int, name: str) -> None:
        self._index, self.__name__ = index, name

    def __call__(self) -> object:
        box: list = []
        sys.audit(_SEALED_CALL, self._index, box)
        return box[0] if box else None

    def __repr__(self) -> str:
        return f"<function {self.__name__}>"


def module_of(obj: object) -> str | None:
    """The module a class or function was defined in, read without running any of its code."""
    kind = type(obj)
    if issubclass(kind, type):
        module = type.__dict__["__module__"].__get__(obj)
    elif kind is types.FunctionType:
        module = types.FunctionType.__dict__["__module__"].__get__(obj)
    else:
        return None
    return module if type(module) is str else None


def _describe(event: str, args: tuple) -> str:
    if event in ("sys._getframe", "sys._current_frames", "object.__getattr__"):
        return "looking at the checker's frames (frame introspection)"
    if event.startswith("gc."):
        return "listing the interpreter's objects (gc)"
    if event == "open":
        path = args[0]
        return f"opening {os.fsdecode(path)!r}" if type(path) in (str, bytes) else "opening an fd"
    if event.startswith(("socket.", "urllib.", "http.")):
        return "using the network"
    if event.startswith(("subprocess.", "os.system", "os.exec", "os.fork", "os.posix_spawn")):
        return "starting another program or process"
    if event in ("object.__setattr__", "object.__delattr__"):
        return "changing a class or function it did not define"
    if event in ("compile", "exec"):
        return "running code that claims to be attnviz's"
    if event.startswith("os."):
        return f"{event} (files outside its folder, processes and signals are off limits)"
    return event


# --------------------------------------------------------------------------------------------
# Results the judge may see, and the checker's fingerprint

_PLAIN_SCALARS = (bool, int, float, str, type(None), torch.dtype, torch.device)


def plain(value: object, depth: int = 0) -> bool:
    """value is an ordinary result: no code of the student's can run when the judge uses it."""
    kind = type(value)
    if kind is torch.Tensor:
        return True
    if kind in _PLAIN_SCALARS:
        return True
    if kind is np.ndarray:
        return value.dtype != object
    if kind in (tuple, list, torch.Size) and depth < 3 and len(value) <= 10_000:
        return all(plain(v, depth + 1) for v in value)
    return False


def stand_in(value: object) -> object:
    """An object of a new, empty class with the same name as value's class, for the judge."""
    kind = type(value)
    name = type.__dict__["__name__"].__get__(kind)
    return type(name, (), {"__module__": STUDENT_MODULE})()


def _watched_modules() -> list[tuple[str, types.ModuleType]]:
    names = ("builtins", "math", "operator", "functools", "torch", "numpy", "torch.testing")
    mods = [(n, sys.modules[n]) for n in names if n in sys.modules]
    mods += [
        (n, m)
        for n, m in list(sys.modules.items())
        if (n == "attnviz" or n.startswith("attnviz.")) and isinstance(m, types.ModuleType)
    ]
    return mods


Fingerprint = list[tuple[dict, tuple, tuple]]


def fingerprint() -> Fingerprint:
    """Every global of the checker's modules (and one level inside the dicts and plain objects
    they hold), as (the dict, its keys, their values)."""
    out: Fingerprint = []

    def note(space: dict) -> None:
        items = list(space.items())[:5000]
        out.append((space, tuple(k for k, _ in items), tuple(v for _, v in items)))

    for name, mod in _watched_modules():
        space = vars(mod)
        note(space)
        if not name.startswith("attnviz"):
            continue
        for value in list(space.values()):
            if type(value) is dict:
                note(value)
            elif not isinstance(value, type | types.ModuleType | types.FunctionType):
                inner = getattr(value, "__dict__", None)
                if type(inner) is dict:
                    note(inner)
    return out


_GONE = object()


def changed(before: Fingerprint) -> str:
    """The first global of the checker that no longer is what it was ('' if none). Compares in
    C (map), so that a profiler watching the caller sees a handful of calls, not thousands."""
    for space, keys, values in before:
        now = map(space.get, keys, itertools.repeat(_GONE, len(keys)))
        if all(map(operator.is_, now, values)):
            continue
        for key, value in zip(keys, values, strict=True):
            if space.get(key, _GONE) is not value:
                module = space.get("__name__")
                where = f"{module}.{key}" if type(module) is str else f"{key}"
                return where[:120]
    return ""


# --------------------------------------------------------------------------------------------
# The operating system's limits


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def limit_resources(cpu_seconds: int, memory_bytes: int, file_bytes: int) -> None:
    """CPU time, address space (memory_bytes beyond what the process has now), file size, open
    files, no core dumps."""
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + memory_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, soft), min(256, hard)))


# Landlock (linux/landlock.h): the syscalls, the access rights, and the ABI that added them.
_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446
_FS_READ = 1 << 2 | 1 << 3  # READ_FILE, READ_DIR
_FS_WRITE = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
_FS_EXECUTE = 1 << 0
_FS_BY_ABI = {2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # REFER, TRUNCATE, IOCTL_DEV
_NET_TCP = 1 << 0 | 1 << 1  # BIND_TCP, CONNECT_TCP (ABI 4)
_SCOPE = 1 << 0 | 1 << 1  # abstract unix sockets, signals (ABI 6)
_PR_SET_NO_NEW_PRIVS = 38
_READABLE_SYSTEM = ("/usr", "/lib", "/lib64", "/proc", "/sys", "/dev")


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def landlock(workdir: str, readable: tuple[str, ...]) -> int:
    """Confine this process (and what it starts) with Landlock: write only in workdir, read only
    under readable and the system directories, execute nothing, no TCP, no signal or abstract
    socket outside. Returns the ABI version applied, 0 where the kernel has no Landlock."""
    if sys.platform != "linux" or not hasattr(os, "O_PATH"):
        return 0
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return 0
    fs = _FS_READ | _FS_WRITE | _FS_EXECUTE
    for since, right in _FS_BY_ABI.items():
        if abi >= since:
            fs |= right
    attr = (ctypes.c_uint64 * 3)(fs, _NET_TCP if abi >= 4 else 0, _SCOPE if abi >= 6 else 0)
    size = 8 * (3 if abi >= 6 else 2 if abi >= 4 else 1)
    ruleset = syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return 0
    try:
        rules = [(workdir, fs & ~_FS_EXECUTE)]
        rules += [(p, _FS_READ) for p in (*readable, *_READABLE_SYSTEM)]
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = _PathBeneath(access if os.path.isdir(path) else access & ~(1 << 3), fd)
                syscall(_ADD_RULE, ruleset, 1, ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return 0
        if syscall(_RESTRICT, ruleset, ctypes.c_uint32(0)) != 0:
            return 0
    finally:
        os.close(ruleset)
    return int(abi)


def disarm_torch() -> None:
    """Take away torch's ways to run Python code on every frame (dynamo's frame evaluation
    callbacks), which would hand the checker's frames to the student's code."""
    frames = getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None)
    if frames is None:
        return
    for name in list(vars(frames)):
        if name.startswith(("set_", "_get_frame", "_debug", "_load", "_reset", "register_")):

            def refused(*args: object, _name: str = name, **kwargs: object) -> None:
                raise PermissionError(f"The grader does not allow torch's {_name}.")

            setattr(frames, name, refused)
