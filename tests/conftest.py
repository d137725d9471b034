"""Shared test settings.

- hypothesis examples may be slow on a busy 2-core machine, so no deadline;
- the C kernel (attnviz.native) and the PyTorch operator around it (attnviz.native_op) are
  built into a fresh cache folder for the run, as a new user would build them, never in
  ~/.cache: the first test process (pytest-xdist's controller) makes it and its workers inherit
  it, so the operator (~20 s of compiling) is built once a run, not once a worker; builds that
  meet there wait for each other (a file lock) or rename whole files into place;
- Streamlit's AppTest scans the metadata of every installed package for v2 components on each
  fresh run (about 0.2 s of a 0.25 s run here); the packages do not change during a test session,
  so the scan's answer is remembered after the first run: AppTest still registers what it found;
- the suite runs on pytest-xdist workers (pyproject's addopts: `-n auto --dist loadgroup`): one
  per CPU for the inner loop `-m "not slow"`, one more than the CPUs for everything (the browser and
  server tests partly wait), at most 4; ATTNVIZ_TEST_WORKERS overrides it (0: one process).
  Each module runs on one worker, so its module-scoped server, browser or worker starts once; the
  modules whose tests share nothing expensive are spread test by test. xdist starts the groups
  with the most tests first (its default reorder), then the single tests in the order below, the
  slow modules first. (Keeping this order for the groups too, `--no-loadscope-reorder`, started
  both live-class stories beside the slides' group and was slower: 6:01 against 5:19. The suite
  keeps both cores ~99% busy, measured from /proc/stat, so the order matters less than the work.)
  `-n 0` runs everything in one process;
- the sandbox's default time budget (1 s of wall clock per evaluation) is a guard for a server, and
  on a machine this busy even the right form can exceed it: in the tests' own process it is 60 s
  (test_sandbox_language checks that the budget stops an evaluation, with its own Limits).
"""

import functools
import os
import shutil
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "attnviz", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("attnviz")

_CACHE = os.environ.get("ATTNVIZ_TEST_CACHE_DIR", "")
_OWN_CACHE = not _CACHE  # made here: removed here at the end, and by no worker
if _OWN_CACHE:
    _CACHE = tempfile.mkdtemp(prefix="attnviz-test-cache-")
    os.environ["ATTNVIZ_TEST_CACHE_DIR"] = _CACHE  # inherited by the workers
os.environ["ATTNVIZ_CACHE_DIR"] = _CACHE


def _time_budget_for_a_busy_machine() -> None:
    import dataclasses

    import attnviz.sandbox

    attnviz.sandbox.DEFAULT_LIMITS = dataclasses.replace(
        attnviz.sandbox.DEFAULT_LIMITS, time_budget=60.0
    )


_time_budget_for_a_busy_machine()


def _scan_installed_components_once() -> None:
    """Remember streamlit.components.v2's manifest scan (where this Streamlit has one)."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # an older Streamlit: no v2 components, nothing scanned
        return
    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "remembered", False):
        return

    @functools.wraps(scan)
    def remembered_scan(*args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        if key not in found:
            found[key] = scan(*args, **kwargs)
        return list(found[key])

    found: dict = {}
    remembered_scan.remembered = True
    manifest_scanner.scan_component_manifests = remembered_scan


def pytest_xdist_auto_num_workers(config):
    if os.environ.get("ATTNVIZ_TEST_WORKERS"):
        return int(os.environ["ATTNVIZ_TEST_WORKERS"])
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    inner_loop = "not slow" in (config.option.markexpr or "")
    return min(4, (cpus or 1) + (0 if inner_loop else 1))


# modules run test by test across the workers: their tests start what they need themselves
SPREAD = {"test_lessons.py", "test_live_browser.py"}
# modules that run in another module's group, on its worker, to share its session-scoped server:
# the class server (2 replicas behind HAProxy, ~20 CPU-s and ~30 s to start) of test_serving, and
# the plain app_server (~5 CPU-s to start and run a first page), in two groups of about a sixth
# of the suite's CPU time each: test_browser's, and test_live_browser's slide tests'
SHARED = {
    "test_serving_browser.py": "test_serving.py",
    "test_serving_live.py": "test_serving.py",
    "test_learn_browser.py": "test_browser.py",
    "test_expression_browser.py": "test_browser.py",
    "test_pages_browser.py": "test_browser.py",
    "test_live_screen_browser.py": "test_live_browser.py",
    "test_stclient.py": "test_live_browser.py",
    "test_lighthouse_browser.py": "test_live_browser.py",
}
# modules whose shared server and browser are worth starting twice, once on each of two workers
# (none now: test_browser's tests reuse one tab, so a second server's cold start and first
# session cost more than the half of the module it would take over)
HALVED: set[str] = set()
# the slowest modules first (about their share of the whole suite's time), then the rest in order
FIRST = [
    "test_live_browser.py",
    "test_browser.py",
    "test_a11y_browser.py",
    "test_reflow_browser.py",
    "test_keyboard_walk_browser.py",
    "test_lessons.py",
    "test_serving.py",
    "test_serving_browser.py",
    "test_serving_live.py",
    "test_hostile.py",
    "test_native.py",
    "test_native_build.py",
    "test_bench_worker.py",
    "test_grade_class.py",
    "test_live_class_browser.py",
    "test_learn_page.py",
    "test_every_widget.py",
]


def pytest_collection_modifyitems(session, config, items):
    import pytest

    first = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(FIRST)))  # stable: order kept within
    index: dict[str, int] = {}
    for item in items:
        name = item.path.name
        if name in SPREAD and "plain_server" not in getattr(item, "fixturenames", ()):
            continue  # no group: any worker
        group = SHARED.get(name, name)
        if name in HALVED:
            index[name] = index.get(name, -1) + 1
            group = f"{name}-{index[name] % 2}"
        item.add_marker(pytest.mark.xdist_group(group))
    _name_the_groups(config, items)


# the modules whose xdist groups are named on their tests' ids (see _name_the_groups): every
# module above whose tests share a module-scoped server, browser, kernel or process (a group not
# named here is not kept together: its module-scoped fixture starts again on each worker)
NAMED_GROUPS = {
    "test_bench_worker.py",  # the benchmark worker process (imports torch: ~4 CPU-s a start)
    "test_fused.py",  # kernel_results: one process that runs every kernel case (~5 CPU-s)
    "test_performance_page.py",  # the page's benchmark worker: one start, not one per xdist worker
    "test_browser.py",
    "test_lessons.py",
    "test_live_browser.py",  # the slide tests' plain_server only (the rest is in SPREAD)
    "test_serving.py",
    "test_serving_browser.py",  # in test_serving's group: see SHARED
    "test_serving_live.py",  # in test_serving's group: see SHARED
    "test_hostile.py",
    "test_stclient.py",
    "test_grade_class.py",  # one grading server and 40 notebooks (~15 CPU-s), graded once
    # each starts its own server and browser for its module (axe and Lighthouse walks, reflow at
    # 320 and 640 px, the keyboard walk on 127.0.0.2)
    "test_a11y_browser.py",
    "test_reflow_browser.py",
    "test_keyboard_walk_browser.py",
    # each starts one browser (or one worker, one training) for its module; the server is
    # conftest's app_server, in test_browser's or test_live_browser's group: see SHARED
    "test_pages_browser.py",
    "test_expression_browser.py",
    "test_learn_browser.py",
    "test_live_screen_browser.py",
    "test_lighthouse_browser.py",
    "test_learn_page.py",
    "test_pooling_worker.py",
    "test_pooling_train.py",
}


def _name_the_groups(config, items) -> None:
    """pytest-xdist's loadgroup schedules by a suffix on each grouped test's node id
    (`...::test_x[p]@group`). It writes that to item._nodeid in its own modifyitems hook, which
    runs before this one (it misses the groups set above) and, from pytest 9 on, where pytest no
    longer reads it (the id lives in item._id): without this, every test is scheduled alone and
    a module's server, browser or kernel starts again on each worker it lands on."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers only
        return
    for item in items:
        if item.path.name not in NAMED_GROUPS:
            continue
        names = {
            m.args[0] if m.args else m.kwargs.get("name", "default")
            for m in item.iter_markers("xdist_group")
        }
        if not names or item.nodeid.rfind("@") > item.nodeid.rfind("]"):
            continue
        nodeid = f"{item.nodeid}@{'_'.join(sorted(map(str, names)))}"
        if hasattr(item, "_id"):  # pytest >= 9
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(nodeid)
        else:
            item._nodeid = nodeid


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """A plain `streamlit run app.py` (scripts/streamlit_server.py) with its own class store folder,
    started once per test process for the modules that only open pages on it (test_browser and
    the modules that use its helpers, test_pages_browser, test_stclient, test_lighthouse_browser,
    test_live_browser's slide tests, test_live_screen_browser): each page opened is a new session,
    built from its link alone. Modules that restart their server, read its log or need another
    setting start their own. A server's start and first run cost ~5 CPU-s; SHARED puts the
    modules that use this one on one worker so it starts once there."""
    from scripts import streamlit_server

    folder = tmp_path_factory.mktemp("app_server")
    env = {"ATTNVIZ_DATA_DIR": str(folder / "data"), "ATTNVIZ_CLASS_STORE": ""}
    with streamlit_server.serve(env=env, log_path=folder / "streamlit.log") as server:
        yield server


@pytest.fixture(scope="session")
def class_server(tmp_path_factory):
    """The class server: 2 replicas behind HAProxy under supervisord, from scripts/serve.py's own
    start and stop, sharing a real redis-server as the class store (the many-machines layout of
    docs/deploy.md), the proxy on 127.0.0.2 (serve.py's --bind), once per test process for
    test_serving, test_serving_browser and test_serving_live (one group: SHARED). Their failover
    tests kill a replica and wait until it is back and UP; the live class stops the whole server
    mid-class and starts it again."""
    import socket

    from scripts import serve

    redis = _redis_server(tmp_path_factory.mktemp("redis"))
    socks = [socket.socket() for _ in range(3)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    s = serve.Settings(
        replicas=2,
        proxy_port=ports[0],
        replica_ports=ports[1:],
        run_dir=tmp_path_factory.mktemp("serve"),
        class_store=redis.url,
        bind="127.0.0.2",  # not 127.0.0.1: the join link must carry the address students used
    )
    try:
        serve.start(s, timeout=180)  # generous: a busy 2-core machine starts Streamlit slowly
        yield s
    finally:
        serve.stop(s)
        redis.stop()


def _redis_server(folder):
    """A started redis-server (scripts/redis_server.py) with its files in folder; a failure, not a
    skip, where Debian's redis-server is missing (CI installs it)."""
    from pathlib import Path

    from scripts.redis_server import REDIS, RedisServer

    if not Path(REDIS).exists():
        pytest.fail(f"redis-server is missing at {REDIS} (apt-get install -y redis-server)")
    server = RedisServer(folder)
    server.start()
    return server


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """A real redis-server for one test module (the class-store tests; one start a module)."""
    server = _redis_server(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, tmp_path):
    """The class store, for real, once on each backend: (kind, make), where make() opens one more
    store object on the same data (another replica). SQLite is a file in tmp_path; Redis is this
    module's redis_server, emptied first."""
    from attnviz.classroom.redis_store import RedisStore
    from attnviz.classroom.sqlite_store import SQLiteStore

    made = []
    if request.param == "sqlite":
        path = tmp_path / "data" / "classes.sqlite3"

        def make():
            made.append(SQLiteStore(path))
            return made[-1]
    else:
        server = request.getfixturevalue("redis_server")
        RedisStore(server.url)._r.flushdb()

        def make():
            made.append(RedisStore(server.url))
            return made[-1]

    yield request.param, make
    for store in made:
        store.close()


@pytest.fixture
def store(backend):
    """One store object on each backend (see backend)."""
    return backend[1]()


# ---- the C kernel's plan (attnviz.native): tests/test_native*.py ----
@pytest.fixture
def fine_grained(monkeypatch):
    """Cut even small inputs into many units, so every path of the plan runs on test sizes."""
    from attnviz import native

    monkeypatch.setattr(native, "MIN_NUMEL_PER_THREAD", 1)
    monkeypatch.setattr(native, "MAX_UNIT_NUMEL", 64)
    monkeypatch.setattr(native, "MIN_PIECE_ROWS", 2)


@pytest.fixture
def caches(monkeypatch):
    """Set the caches' sizes the plan reads (L2 a core, last level), in bytes; the plans made with
    them are forgotten afterwards (they are cached by shape, not by the caches' sizes)."""

    from attnviz import native

    def set_caches(l2: int, llc: int) -> None:
        monkeypatch.setattr(native, "_caches", lambda: (l2, llc))
        native._plan.cache_clear()
        native._call_shape.cache_clear()

    yield set_caches
    native._plan.cache_clear()
    native._call_shape.cache_clear()


def pytest_collection_finish(session):
    # only where a collected module loaded Streamlit's test harness: the import-boundary tests
    # (test_layers, test_setup) check sys.modules in fresh subprocesses, never here
    if "streamlit.testing.v1" in sys.modules:
        _scan_installed_components_once()


def pytest_unconfigure(config):
    if _OWN_CACHE:
        shutil.rmtree(_CACHE, ignore_errors=True)
